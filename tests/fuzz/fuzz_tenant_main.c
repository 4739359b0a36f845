/*
 * fuzz_tenant_main.c — the tenant target's part of the replay driver
 * (replay_main.c): its seeds, and random bytes that are half of the time
 * one record holding an IPv4 frame.  Single-threaded test program.
 */
#include "fuzz_tenant.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    size_t size = (size_t)(fuzz_replay_rnd() % 1600);
    for (size_t i = 0; i < size; i++)
        m[i] = (uint8_t)fuzz_replay_rnd();
    if (size >= 3 + 15 && (fuzz_replay_rnd() & 1)) {
        m[1] = (uint8_t)((size - 3) >> 8);
        m[2] = (uint8_t)(size - 3);
        m[3 + 12] = 0x08;
        m[3 + 13] = 0x00;
        m[3 + 14] = 0x45;
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_tenant_replay",
    .seeds = fuzz_tenant_seeds,
    .accepted = &fuzz_tenant_accepted,
    .random_input = random_input,
};
