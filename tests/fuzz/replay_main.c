/*
 * replay_main.c — the replay driver every fuzz target links instead of
 * libFuzzer (see replay.h; the target is fuzz_replay_target):
 *
 *   fuzz_X_replay                    seeds (valid ones must be accepted,
 *                                    invalid ones refused), every truncation
 *                                    and single-byte mutation of each, then
 *                                    random inputs and seed mutations
 *   fuzz_X_replay FILE...            run the target on these inputs (to
 *                                    reproduce a libFuzzer crash file)
 *   fuzz_X_replay --write-seeds DIR  write the seed corpus into DIR
 *                                    (scripts/fuzz.sh, scripts/asan-test.sh)
 *
 * FUZZ_ITERATIONS (default 20000; a slow target may cap it, and mutate
 * its seeds at every stride-th offset only: replay.h) sets the number of
 * random inputs and FUZZ_SEED the generator's seed.  Exits 0, 1 on a seed verdict or I/O
 * error, or aborts on a broken invariant.  Single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define MAXSEEDS 64

static struct {
    uint8_t *data;
    size_t size;
    int valid;
} seeds[MAXSEEDS];
static unsigned nseeds;
static unsigned long runs;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint64_t fuzz_replay_rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

unsigned fuzz_replay_nseeds(void)
{
    return nseeds;
}

const uint8_t *fuzz_replay_seed(unsigned i, size_t *size)
{
    *size = seeds[i].size;
    return seeds[i].data;
}

static void run(const uint8_t *data, size_t size)
{
    /* an exact-size heap copy, so reads past the end are caught */
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    runs++;
}

static void keep_seed(void *arg, const uint8_t *data, size_t size, int valid)
{
    (void)arg;
    /* room for the driver's length changes (up to 8 bytes) */
    if (nseeds == MAXSEEDS || size > FUZZ_REPLAY_MAXLEN - 8 ||
        (seeds[nseeds].data = malloc(size ? size : 1)) == NULL)
        abort();
    memcpy(seeds[nseeds].data, data, size);
    seeds[nseeds].size = size;
    seeds[nseeds].valid = valid;
    nseeds++;
}

static void write_seed(void *arg, const uint8_t *data, size_t size, int valid)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/seed-%02u-%s", (const char *)arg, nseeds++,
             valid ? "valid" : "invalid");
    f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "%s: %s: %s\n", fuzz_replay_target.name, path,
                strerror(errno));
        exit(1);
    }
}

static int run_files(int argc, char **argv)
{
    static uint8_t buf[1 << 20];
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        size_t n;
        if (f == NULL) {
            fprintf(stderr, "%s: %s: %s\n", fuzz_replay_target.name, argv[i],
                    strerror(errno));
            return 1;
        }
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        run(buf, n);
        printf("%s: %zu bytes, ok\n", argv[i], n);
    }
    return 0;
}

static size_t random_bytes(uint8_t *m)
{
    size_t size = (size_t)(fuzz_replay_rnd() % 300);
    for (size_t i = 0; i < size; i++)
        m[i] = (uint8_t)fuzz_replay_rnd();
    return size;
}

/* A random seed with 1..4 random bytes, and now and then 1..8 bytes added
 * at or cut from the end. */
static size_t mutate_seed(uint8_t *m)
{
    unsigned s = (unsigned)(fuzz_replay_rnd() % nseeds);
    int flips = 1 + (int)(fuzz_replay_rnd() % 4);
    size_t size = seeds[s].size;

    memcpy(m, seeds[s].data, size);
    if (fuzz_replay_rnd() % 8 == 0) {
        size_t d = 1 + fuzz_replay_rnd() % 8;
        if (fuzz_replay_rnd() & 1 && size > d)
            size -= d;
        else
            memset(m + size, 0, d), size += d;
    }
    while (size > 0 && flips--)
        m[fuzz_replay_rnd() % size] = (uint8_t)fuzz_replay_rnd();
    return size;
}

int main(int argc, char **argv)
{
    static uint8_t m[FUZZ_REPLAY_MAXLEN];
    const fuzz_replay_target_t *t = &fuzz_replay_target;
    size_t (*random_input)(uint8_t *) =
        t->random_input ? t->random_input : random_bytes;
    unsigned long iterations = 20000, accepted_seeds;
    const char *env;

    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        unsigned n = t->seeds(write_seed, argv[2]);
        printf("%s: wrote %u seeds to %s\n", t->name, n, argv[2]);
        return 0;
    }
    if (argc > 1 && argv[1][0] == '-') {
        int help = strcmp(argv[1], "--help") == 0;
        fprintf(help ? stdout : stderr,
                "usage: %s                    seeds, their mutations, random "
                "inputs\n"
                "       %s FILE...            run the target on these inputs\n"
                "       %s --write-seeds DIR  write the seed corpus into DIR\n"
                "environment: FUZZ_ITERATIONS (default 20000), FUZZ_SEED\n",
                t->name, t->name, t->name);
        return help ? 0 : 2;
    }
    if (argc > 1)
        return run_files(argc, argv);
    if ((env = getenv("FUZZ_ITERATIONS")) != NULL)
        iterations = strtoul(env, NULL, 10);
    if ((env = getenv("FUZZ_SEED")) != NULL && strtoull(env, NULL, 0) != 0)
        rng_state = strtoull(env, NULL, 0);
    if (t->max_iterations != 0 && iterations > t->max_iterations)
        iterations = t->max_iterations;

    t->seeds(keep_seed, NULL);
    if (nseeds == 0) {
        fprintf(stderr, "%s: no seeds\n", t->name);
        return 1;
    }

    /* the seeds themselves: valid ones must be accepted, others refused */
    for (unsigned s = 0; s < nseeds; s++) {
        unsigned long before = *t->accepted;
        int ok;
        run(seeds[s].data, seeds[s].size);
        ok = t->last_valid ? *t->last_valid != 0 : *t->accepted != before;
        if (ok != seeds[s].valid) {
            fprintf(stderr, "%s: seed %u %s\n", t->name, s,
                    seeds[s].valid ? "rejected" : "accepted");
            return 1;
        }
    }
    accepted_seeds = *t->accepted;

    /* every truncation, and every byte of every seed set to a few values
     * (every stride-th, for the targets that ask; in a seed over 4 KiB,
     * scripts/fuzz.sh's usual -max_len, at about 512 offsets: a
     * large seed is mostly payload, and all of it would cost seconds) */
    for (unsigned s = 0; s < nseeds; s++) {
        size_t size = seeds[s].size, step = t->stride ? t->stride : 1;
        if (size > 4096 && step < size / 512)
            step = size / 512;
        for (size_t cut = s % step; cut < size; cut += step)
            run(seeds[s].data, cut);
        for (size_t i = s % step; i < size; i += step) {
            const uint8_t orig = seeds[s].data[i];
            const uint8_t vals[] = {orig ^ 1, orig ^ 0x80, 0,          0xff,
                                    orig + 1, orig - 1,    orig ^ 0x10};
            memcpy(m, seeds[s].data, size);
            for (size_t v = 0; v < sizeof(vals); v++) {
                m[i] = vals[v];
                run(m, size);
            }
        }
    }

    /* a quarter random inputs, the rest random mutations of seeds */
    for (unsigned long k = 0; k < iterations; k++) {
        size_t size = k % 4 == 0 ? random_input(m) : mutate_seed(m);
        run(m, size);
    }

    if (t->unit != NULL)
        printf("%s: %u seeds (%lu %s in the valid ones), %lu inputs run, %lu "
               "%s accepted; all invariants held\n",
               t->name, nseeds, accepted_seeds, t->unit, runs, *t->accepted,
               t->unit);
    else
        printf("%s: %u seeds (%lu valid), %lu inputs run, %lu accepted; all "
               "invariants held\n",
               t->name, nseeds, accepted_seeds, runs, *t->accepted);
    for (unsigned s = 0; s < nseeds; s++)
        free(seeds[s].data);
    return 0;
}
