/*
 * fuzz_esp_main.c — the ESP target's part of the replay driver
 * (replay_main.c): its seeds, an IPv4/UDP inner packet of a few sizes with
 * a correct trailer, both raw-sealed (mode byte 0) and as plaintext for the
 * target to seal (mode byte 1), all of which must decapsulate; and, as its
 * random inputs, seeds with bytes past the mode byte changed and now and
 * then truncated.  Single-threaded test program.
 */
#include <string.h>

#include "fuzz_esp.h"
#include "replay.h"

static unsigned esp_seeds(fuzz_replay_seed_fn fn, void *arg)
{
    static const size_t sizes[3] = {28, 61, 1400};
    for (int i = 0; i < 3; i++) {
        uint8_t pt[1600], seed[1600];
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
        seed[0] = 1;
        memcpy(seed + 1, pt, n + pad + 2);
        fn(arg, seed, 1 + n + pad + 2, 1);
        seed[0] = 0;
        fn(arg, seed,
           1 + fuzz_esp_seal(pt, n + pad + 2, 7, seed + 1, sizeof(seed) - 1),
           1);
    }
    return 6;
}

static size_t random_input(uint8_t *m)
{
    size_t n;
    const uint8_t *s =
        fuzz_replay_seed((unsigned)(fuzz_replay_rnd() % fuzz_replay_nseeds()),
                         &n);
    memcpy(m, s, n);
    for (int f = 1 + (int)(fuzz_replay_rnd() % 4); f > 0; f--)
        m[1 + fuzz_replay_rnd() % (n - 1)] = (uint8_t)fuzz_replay_rnd();
    if (fuzz_replay_rnd() % 4 == 0)
        n = 1 + fuzz_replay_rnd() % n;
    return n;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_esp_replay",
    .seeds = esp_seeds,
    .accepted = &fuzz_esp_accepted,
    .unit = "packets",
    .random_input = random_input,
};
