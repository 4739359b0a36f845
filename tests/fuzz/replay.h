/*
 * replay.h — the one replay driver (replay_main.c) that runs every fuzz
 * target without libFuzzer, so that each build (gcc, ASan) exercises it as
 * an ordinary test.  Each target's *_main.c defines fuzz_replay_target: its
 * name, its seeds, how to tell that an input was accepted, and optionally
 * how to make a random input shaped like its format.
 *
 * Threading: single-threaded test programs.  Trust: the inputs are the
 * fuzz inputs themselves; the driver only feeds them to the target.
 */
#ifndef OC_TESTS_FUZZ_REPLAY_H
#define OC_TESTS_FUZZ_REPLAY_H

#include <stddef.h>
#include <stdint.h>

/* 1 in an AddressSanitizer build (GCC says so with __SANITIZE_ADDRESS__,
 * clang through __has_feature): slow targets run fewer inputs there. */
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_REPLAY_ASAN 1
#endif
#endif

/** Called once per seed; @p valid says whether the target must accept it. */
typedef void (*fuzz_replay_seed_fn)(void *arg, const uint8_t *data,
                                    size_t size, int valid);

/** The largest input the driver builds (seeds and random inputs). */
#define FUZZ_REPLAY_MAXLEN (1u << 16)

typedef struct fuzz_replay_target {
    /** Program name in messages: "fuzz_wire_replay". */
    const char *name;
    /** Hands every seed to @p fn; @return the number of seeds. */
    unsigned (*seeds)(fuzz_replay_seed_fn fn, void *arg);
    /** Counter the target bumps per accepted unit (bundle, frame, line). */
    const unsigned long *accepted;
    /** If set: whether the last input was valid as a whole; if NULL, a seed
     *  counts as accepted when it moved *accepted. */
    const int *last_valid;
    /** What *accepted counts, for the summary ("frames"); NULL: inputs. */
    const char *unit;
    /** Optional: writes a random input shaped like the target's format
     *  (at most FUZZ_REPLAY_MAXLEN bytes) into @p m; @return its size.
     *  NULL: up to 300 random bytes. */
    size_t (*random_input)(uint8_t *m);
    /** Optional, for targets whose every run costs milliseconds: truncate
     *  and mutate the seeds at every stride-th offset only (0: every). */
    unsigned stride;
    /** Optional: at most this many random inputs, whatever
     *  FUZZ_ITERATIONS says (0: no cap). */
    unsigned long max_iterations;
} fuzz_replay_target_t;

/** Defined by each target's *_main.c. */
extern const fuzz_replay_target_t fuzz_replay_target;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** The driver's generator (xorshift64; FUZZ_SEED sets its seed). */
uint64_t fuzz_replay_rnd(void);
/** The seeds kept, for random_input hooks that mutate them. */
unsigned fuzz_replay_nseeds(void);
const uint8_t *fuzz_replay_seed(unsigned i, size_t *size);

#endif
