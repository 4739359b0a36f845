/*
 * fuzz_nvmf_conf_main.c — runs the configuration fuzz target without
 * libFuzzer in every build:
 *   fuzz_nvmf_conf_replay                    seeds, their truncations and
 *                                            line shuffles, random mutations
 *   fuzz_nvmf_conf_replay FILE...            these inputs
 *   fuzz_nvmf_conf_replay --write-seeds DIR  the seed corpus
 * FUZZ_ITERATIONS (default 20000), FUZZ_SEED.  Exits 0 or aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern unsigned long fuzz_nvmf_conf_accepted;

static const char *const seeds[] = {
    "listen 0.0.0.0:4420\nmetrics 127.0.0.1:9465\n"
    "subsystem nqn.2026-11.io.offcore:a\n  allow-any-host\n"
    "  namespace 1 /x size=1G\n",
    "# two subsystems\nlisten 127.0.0.1:4420\nadvertise 10.0.0.1\n"
    "kato-grace-ms 100\nsend-timeout-ms 1000\n"
    "subsystem nqn.2026-11.io.offcore:a\n"
    "  allow-host nqn.2014-08.org.nvmexpress:uuid:1\n"
    "  allow-host nqn.2014-08.org.nvmexpress:uuid:2\n"
    "  namespace 1 /a size=64M block=512 integrity=on\n"
    "  namespace 2 /b size=16M integrity=on integrity-file=/b.crc key=/k "
    "direct=off\n"
    "subsystem nqn.2026-11.io.offcore:b\n  allow-any-host\n"
    "  namespace 7 /dev/sdz\n",
    "subsystem nqn.2026-11.io.offcore:a\n  namespace 1 /x size=1000\n",
    "listen nowhere\nbogus\nnamespace 1 /x\n",
};
#define NSEEDS (sizeof(seeds) / sizeof(seeds[0]))

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    static uint8_t m[8192];
    unsigned long iters = 20000, runs = 0;
    const char *env;

    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
        for (size_t i = 0; i < NSEEDS; i++) {
            char p[4096];
            FILE *f;
            snprintf(p, sizeof(p), "%s/seed-%02zu", argv[2], i);
            f = fopen(p, "wb");
            if (!f || fwrite(seeds[i], 1, strlen(seeds[i]), f) !=
                          strlen(seeds[i]) || fclose(f)) {
                fprintf(stderr, "%s: %s\n", p, strerror(errno));
                return 1;
            }
        }
        printf("fuzz_nvmf_conf_replay: wrote %zu seeds\n", NSEEDS);
        return 0;
    }
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            FILE *f = fopen(argv[i], "rb");
            size_t n;
            if (!f)
                return 1;
            n = fread(m, 1, sizeof(m), f);
            fclose(f);
            LLVMFuzzerTestOneInput(m, n);
        }
        return 0;
    }
    if ((env = getenv("FUZZ_ITERATIONS")))
        iters = strtoul(env, NULL, 10);
    if ((env = getenv("FUZZ_SEED")) && strtoull(env, NULL, 0))
        rng = strtoull(env, NULL, 0);
    for (size_t s = 0; s < NSEEDS; s++) {
        size_t n = strlen(seeds[s]);
        for (size_t cut = 0; cut <= n; cut += 3, runs++)
            LLVMFuzzerTestOneInput((const uint8_t *)seeds[s], cut);
    }
    if (fuzz_nvmf_conf_accepted < 2) {
        fprintf(stderr, "fuzz_nvmf_conf_replay: the valid seeds were refused\n");
        return 1;
    }
    for (unsigned long k = 0; k < iters; k++, runs++) {
        const char *sd = seeds[rnd() % NSEEDS];
        size_t n = strlen(sd);
        memcpy(m, sd, n);
        for (int f = 1 + (int)(rnd() % 4); f--;) {
            size_t at = rnd() % n;
            switch (rnd() % 4) {
            case 0: m[at] = (uint8_t)rnd(); break;
            case 1: m[at] = " \n#=:.0123456789"[rnd() % 16]; break;
            case 2: if (n + 16 < sizeof(m)) { memmove(m + at + 8, m + at, n - at); memset(m + at, 'x', 8); n += 8; } break;
            default: if (n > 8) { memmove(m + at, m + at + 1, n - at - 1); n--; } break;
            }
        }
        LLVMFuzzerTestOneInput(m, n);
    }
    printf("fuzz_nvmf_conf_replay: %lu inputs, %lu accepted; all invariants "
           "held\n", runs, fuzz_nvmf_conf_accepted);
    return 0;
}
