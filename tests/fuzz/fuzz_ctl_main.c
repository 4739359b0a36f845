/*
 * fuzz_ctl_main.c — the control-plane target's part of the replay driver
 * (replay_main.c): its seeds (decode-mode frames and stream/pre-auth-mode
 * byte streams, selected by the input's prefix, see fuzz_ctl.h), and random
 * bytes behind a valid-looking frame header half of the time.
 * Single-threaded test program.
 */
#include <string.h>

#include "ctl/ctl.h"
#include "fuzz_ctl.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    size_t size = (size_t)(fuzz_replay_rnd() % 300);
    for (size_t i = 0; i < size; i++)
        m[i] = (uint8_t)fuzz_replay_rnd();
    if (size >= FUZZ_CTL_PREFIX + OC_CTL_HDR_LEN && (fuzz_replay_rnd() & 1)) {
        uint8_t *h = m + FUZZ_CTL_PREFIX;
        size_t payload = size - FUZZ_CTL_PREFIX - OC_CTL_HDR_LEN;
        memcpy(h, "OCC1", 4);
        h[4] = OC_CTL_VERSION, h[5] = 0;
        h[6] = (uint8_t)(1 + fuzz_replay_rnd() % (OC_CTL_TYPE_END - 1));
        h[7] = 0;
        h[8] = (uint8_t)payload, h[9] = (uint8_t)(payload >> 8);
        memset(h + 10, 0, 6);
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_ctl_replay",
    .seeds = fuzz_ctl_seeds,
    .accepted = &fuzz_ctl_accepted,
    .last_valid = &fuzz_ctl_last_valid,
    .unit = "frames",
    .random_input = random_input,
};
