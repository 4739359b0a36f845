/*
 * fuzz_esp_main.c — runs the ESP fuzz target (fuzz_esp.c) without
 * libFuzzer, so that every build exercises it as an ordinary test:
 *
 *   fuzz_esp_replay                    seeds (which must decapsulate),
 *                                       every truncation and single-byte
 *                                       mutation of each, random inputs
 *   fuzz_esp_replay FILE...            run the target on these inputs
 *   fuzz_esp_replay --write-seeds DIR  write the seed corpus into DIR
 *
 * FUZZ_ITERATIONS (default 20000) random inputs.  Exits 0, or aborts on a
 * broken invariant.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_esp.h"

#define NSEEDS 6
static uint8_t seeds[NSEEDS][1600];
static size_t seed_len[NSEEDS];

/* Seeds: an IPv4/UDP inner packet of a few sizes with a correct trailer,
 * both raw-sealed (mode 0) and as plaintext to seal (mode 1). */
static void make_seeds(void)
{
    static const size_t sizes[3] = {28, 61, 1400};
    for (int i = 0; i < 3; i++) {
        uint8_t pt[1600];
        size_t n = sizes[i], pad = (4 - (n + 2) % 4) % 4;
        memset(pt, 0, n);
        pt[0] = 0x45, pt[2] = (uint8_t)(n >> 8), pt[3] = (uint8_t)n;
        pt[8] = 64, pt[9] = 17;
        for (size_t k = 20; k < n; k++)
            pt[k] = (uint8_t)(k * 7);
        for (size_t k = 0; k < pad; k++)
            pt[n + k] = (uint8_t)(k + 1);
        pt[n + pad] = (uint8_t)pad;
        pt[n + pad + 1] = 4;
        seeds[2 * i][0] = 1;
        memcpy(seeds[2 * i] + 1, pt, n + pad + 2);
        seed_len[2 * i] = 1 + n + pad + 2;
        seeds[2 * i + 1][0] = 0;
        seed_len[2 * i + 1] = 1 + fuzz_esp_seal(pt, n + pad + 2, 7,
                                                seeds[2 * i + 1] + 1, 1599);
    }
}

static unsigned long runs;
static void run(const uint8_t *d, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (c == NULL)
        abort();
    memcpy(c, d, n);
    LLVMFuzzerTestOneInput(c, n);
    free(c);
    runs++;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return rs;
}

int main(int argc, char **argv)
{
    static uint8_t m[1700], buf[1 << 17];
    unsigned long iterations = 20000;
    const char *env;

    make_seeds();
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
        for (int s = 0; s < NSEEDS; s++) {
            char path[4096];
            FILE *f;
            snprintf(path, sizeof(path), "%s/seed-%02d", argv[2], s);
            f = fopen(path, "wb");
            if (f == NULL || fwrite(seeds[s], 1, seed_len[s], f) != seed_len[s] ||
                fclose(f) != 0) {
                fprintf(stderr, "fuzz_esp_replay: %s: %s\n", path, strerror(errno));
                return 1;
            }
        }
        printf("fuzz_esp_replay: wrote %d seeds to %s\n", NSEEDS, argv[2]);
        return 0;
    }
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            FILE *f = fopen(argv[i], "rb");
            size_t n;
            if (f == NULL) {
                fprintf(stderr, "fuzz_esp_replay: %s: %s\n", argv[i], strerror(errno));
                return 1;
            }
            n = fread(buf, 1, sizeof(buf), f);
            fclose(f);
            run(buf, n);
            printf("%s: %zu bytes, ok\n", argv[i], n);
        }
        return 0;
    }
    if ((env = getenv("FUZZ_ITERATIONS")) != NULL)
        iterations = strtoul(env, NULL, 10);
    for (int s = 0; s < NSEEDS; s++) {
        unsigned long before = fuzz_esp_accepted;
        run(seeds[s], seed_len[s]);
        if (fuzz_esp_accepted != before + 1) {
            fprintf(stderr, "fuzz_esp_replay: seed %d rejected\n", s);
            return 1;
        }
    }
    for (int s = 0; s < NSEEDS; s++) {
        size_t n = seed_len[s];
        for (size_t cut = 0; cut < n; cut++)
            run(seeds[s], cut);
        for (size_t i = 1; i < n; i++) {
            const uint8_t o = seeds[s][i];
            const uint8_t vals[] = {o ^ 1, o ^ 0x80, 0, 0xff, o + 1, o - 1};
            memcpy(m, seeds[s], n);
            for (size_t v = 0; v < sizeof(vals); v++) {
                m[i] = vals[v];
                run(m, n);
            }
        }
    }
    for (unsigned long k = 0; k < iterations; k++) {
        int s = (int)(rnd() % NSEEDS);
        size_t n = seed_len[s];
        memcpy(m, seeds[s], n);
        for (int f = 1 + (int)(rnd() % 4); f > 0; f--)
            m[1 + rnd() % (n - 1)] = (uint8_t)rnd();
        if (rnd() % 4 == 0)
            n = 1 + rnd() % n;
        run(m, n);
    }
    printf("fuzz_esp_replay: %d seeds, %lu inputs run, %lu decapsulated; all "
           "invariants held\n", NSEEDS, runs, fuzz_esp_accepted);
    return 0;
}
