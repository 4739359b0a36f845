/*
 * fuzz_main.c — the wire target's part of the replay driver (replay_main.c):
 * its seeds, and random bytes behind a valid-looking bundle header half of
 * the time.  Single-threaded test program.
 */
#include <string.h>

#include "fuzz_wire.h"
#include "replay.h"
#include "wire/wire.h"

static size_t random_input(uint8_t *m)
{
    size_t size = (size_t)(fuzz_replay_rnd() % 300);
    for (size_t i = 0; i < size; i++)
        m[i] = (uint8_t)fuzz_replay_rnd();
    if (size >= FUZZ_WIRE_PREFIX + 8 && (fuzz_replay_rnd() & 1)) {
        uint8_t *b = m + FUZZ_WIRE_PREFIX;
        memcpy(b, "OCB1", 4);
        b[4] = OC_WIRE_VERSION;
        b[5] &= OC_WIRE_F_KNOWN;
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_wire_replay",
    .seeds = fuzz_wire_seeds,
    .accepted = &fuzz_wire_accepted,
    .random_input = random_input,
};
