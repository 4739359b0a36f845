/*
 * fuzz_prom_main.c — the Prometheus-text target's part of the replay
 * driver (replay_main.c): its seeds, and random texts made of the
 * exposition format's own pieces (or random bytes a quarter of the time).
 * Single-threaded test program.
 */
#include <string.h>

#include "fuzz_prom.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    static const char *const parts[] = {
        "x", "offcore_y_total", "{", "}", "a=", "\"", "\\", ",", " ", "\n",
        "# TYPE ", "# HELP ", "counter", "histogram", "_bucket", "le=",
        "1", "-2.5e3", "NaN", "+Inf", "\xc3\xa9", "\xff", "\x1b", "\0"};
    size_t size = 0, n = (size_t)(fuzz_replay_rnd() % 40);

    if (fuzz_replay_rnd() % 4 == 0) {
        size = (size_t)(fuzz_replay_rnd() % 300);
        for (size_t i = 0; i < size; i++)
            m[i] = (uint8_t)fuzz_replay_rnd();
        return size;
    }
    while (n-- > 0) {
        const char *p =
            parts[fuzz_replay_rnd() % (sizeof(parts) / sizeof(parts[0]))];
        size_t l = p[0] == '\0' ? 1 : strlen(p);
        memcpy(m + size, p, l);
        size += l;
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_prom_replay",
    .seeds = fuzz_prom_seeds,
    .accepted = &fuzz_prom_samples,
    .last_valid = &fuzz_prom_last_valid,
    .unit = "samples",
    .random_input = random_input,
};
