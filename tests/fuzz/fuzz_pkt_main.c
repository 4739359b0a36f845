/*
 * fuzz_pkt_main.c — the packet target's part of the replay driver
 * (replay_main.c): its seeds (frames, rules, configs, see fuzz_pkt.h), and
 * random bytes that are half of the time an Ethernet frame with an IP
 * ethertype.  Single-threaded test program.
 */
#include "fuzz_pkt.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    size_t size = (size_t)(fuzz_replay_rnd() % 1600);
    for (size_t i = 0; i < size; i++)
        m[i] = (uint8_t)fuzz_replay_rnd();
    if (size >= 1 + 14 && (fuzz_replay_rnd() & 1)) {
        m[0] = FUZZ_PKT_FRAME;
        m[13] = (fuzz_replay_rnd() & 1) ? 0x08 : 0x86;
        m[14] = m[13] == 0x08 ? 0x00 : 0xdd;
        m[15] = m[13] == 0x08 ? 0x45 : 0x60;
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_pkt_replay",
    .seeds = fuzz_pkt_seeds,
    .accepted = &fuzz_pkt_accepted,
    .random_input = random_input,
};
