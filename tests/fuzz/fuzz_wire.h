/*
 * fuzz_wire.h — what the wire fuzz target, its seed generator and its
 * replay driver share.
 *
 * A fuzz input is FUZZ_WIRE_PREFIX bytes that choose the receiver's check
 * parameters, then the bundle itself:
 *   [0] nranks: fuzz_wire_nranks[b & 15]
 *   [1] expected destination: 0xff = any (OC_WIRE_RANK_NONE), else the value
 *   [2] bit 0 clear: the receiver's job is the one in the bundle header (so
 *       mutations get past the job check); set: FUZZ_WIRE_JOB
 *   [3] how many messages to skip in the iter_skip cross-check (mod count+1)
 */
#ifndef OC_TESTS_FUZZ_WIRE_H
#define OC_TESTS_FUZZ_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_WIRE_PREFIX 4
#define FUZZ_WIRE_JOB 0x5eedu

extern const uint32_t fuzz_wire_nranks[16];

/** Bundles accepted by the target so far (for the replay driver's report). */
extern unsigned long fuzz_wire_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** Called once per seed; @p valid says whether the bundle must be accepted. */
typedef void (*fuzz_seed_fn)(void *arg, const uint8_t *data, size_t size,
                             int valid);

/** Generate the seed corpus: valid mixed and fixed bundles of many shapes
 *  (and streams) and a few near misses.  @return the number of seeds. */
unsigned fuzz_wire_seeds(fuzz_seed_fn fn, void *arg);

#endif
