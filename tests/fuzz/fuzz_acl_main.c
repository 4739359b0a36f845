/*
 * fuzz_acl_main.c — runs the classifier's fuzz target (fuzz_acl.c) without
 * libFuzzer, so that every build (gcc, ASan) exercises it as an ordinary
 * test; the same driver as fuzz_ctl_main.c, with random inputs made of the
 * rule and trace files' own tokens:
 *
 *   fuzz_acl_replay                    seeds, every truncation and
 *                                      single-byte mutation of each, then
 *                                      random inputs and seed mutations
 *   fuzz_acl_replay FILE...            run the target on these inputs
 *   fuzz_acl_replay --write-seeds DIR  write the seed corpus into DIR
 *
 * FUZZ_ITERATIONS (default 20000) sets the number of random inputs and
 * FUZZ_SEED the generator's seed.  Exits 0, or aborts on a broken invariant.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_acl.h"

#define MAXSEEDS 64
#define MAXLEN (FUZZ_ACL_PREFIX + 8192)

static struct {
    uint8_t *data;
    size_t size;
    int valid;
} seeds[MAXSEEDS];
static unsigned nseeds;
static unsigned long runs;

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
    if (nseeds == MAXSEEDS || (seeds[nseeds].data = malloc(size)) == NULL)
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
        fprintf(stderr, "fuzz_acl_replay: %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static int run_files(int argc, char **argv)
{
    static uint8_t buf[1 << 20];
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        size_t n;
        if (f == NULL) {
            fprintf(stderr, "fuzz_acl_replay: %s: %s\n", argv[i],
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

/* Random lines of the files' tokens: numbers, dots, slashes, ranges. */
static size_t random_input(uint8_t *m)
{
    static const char *tok[] = {"@", "0", "1", "255", "256", "32", "33", ".",
                                "/", " : ", "\t", " ", "\n", "0x", "06", "FF",
                                "65535", "65536", "-1", "4294967295", "\r",
                                "10.0.0.0/8", "0.0.0.0/0", "0 : 65535"};
    size_t size = FUZZ_ACL_PREFIX, ntok = (size_t)(rnd() % 60);
    m[0] = (uint8_t)rnd();
    for (size_t i = 0; i < ntok; i++) {
        const char *t = tok[rnd() % (sizeof(tok) / sizeof(tok[0]))];
        size_t l = strlen(t);
        memcpy(m + size, t, l);
        size += l;
    }
    return size;
}

int main(int argc, char **argv)
{
    static uint8_t m[MAXLEN + 64];
    unsigned long iterations = 20000, accepted_seeds;
    const char *env;

    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        unsigned n = fuzz_acl_seeds(write_seed, argv[2]);
        printf("fuzz_acl_replay: wrote %u seeds to %s\n", n, argv[2]);
        return 0;
    }
    if (argc > 1)
        return run_files(argc, argv);
    if ((env = getenv("FUZZ_ITERATIONS")) != NULL)
        iterations = strtoul(env, NULL, 10);
    if ((env = getenv("FUZZ_SEED")) != NULL && strtoull(env, NULL, 0) != 0)
        rng_state = strtoull(env, NULL, 0);

    fuzz_acl_seeds(keep_seed, NULL);

    /* the seeds themselves: valid ones must be accepted whole */
    for (unsigned s = 0; s < nseeds; s++) {
        run(seeds[s].data, seeds[s].size);
        if (fuzz_acl_last_valid != seeds[s].valid) {
            fprintf(stderr, "fuzz_acl_replay: seed %u %s\n", s,
                    seeds[s].valid ? "rejected" : "accepted");
            return 1;
        }
    }
    accepted_seeds = fuzz_acl_accepted;

    /* every truncation, and every byte of every seed set to a few values */
    for (unsigned s = 0; s < nseeds; s++) {
        size_t size = seeds[s].size;
        for (size_t cut = 0; cut < size; cut++)
            run(seeds[s].data, cut);
        for (size_t i = 0; i < size; i++) {
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

    /* random inputs, and random multi-byte mutations of seeds (with bytes
     * added or removed at the end now and then) */
    for (unsigned long k = 0; k < iterations; k++) {
        size_t size;
        if (k % 4 == 0) {
            size = random_input(m);
        } else {
            unsigned s = (unsigned)(rnd() % nseeds);
            int flips = 1 + (int)(rnd() % 4);
            size = seeds[s].size;
            memcpy(m, seeds[s].data, size);
            if (rnd() % 8 == 0) {
                size_t d = 1 + rnd() % 8;
                if (rnd() & 1 && size > d)
                    size -= d;
                else
                    memset(m + size, 0, d), size += d;
            }
            while (flips--)
                m[rnd() % size] = (uint8_t)rnd();
        }
        run(m, size);
    }

    printf("fuzz_acl_replay: %u seeds (%lu lines in the valid ones), %lu "
           "inputs run, %lu lines accepted; all invariants held\n",
           nseeds, accepted_seeds, runs, fuzz_acl_accepted);
    for (unsigned s = 0; s < nseeds; s++)
        free(seeds[s].data);
    return 0;
}
