/*
 * fuzz_nvmf_main.c — the NVMe/TCP PDU target's part of the replay driver
 * (replay_main.c): its seeds, and random bytes behind a plausible PDU
 * header half of the time.  Single-threaded test program.
 */
#include "fuzz_nvmf.h"
#include "nvmf/pdu.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    static const uint8_t types[] = {OC_NVMF_PDU_ICREQ, OC_NVMF_PDU_CMD,
                                    OC_NVMF_PDU_H2C_DATA, OC_NVMF_PDU_H2C_TERM};
    static const uint8_t hlens[] = {128, 72, 24, 24};
    size_t size = (size_t)(fuzz_replay_rnd() % 300);
    for (size_t i = 0; i < size; i++)
        m[i] = (uint8_t)fuzz_replay_rnd();
    if (size >= FUZZ_NVMF_PREFIX + 8 && (fuzz_replay_rnd() & 1)) {
        uint8_t *h = m + FUZZ_NVMF_PREFIX;
        unsigned t = (unsigned)(fuzz_replay_rnd() % 4);
        h[0] = types[t];
        h[1] &= 0x07;
        h[2] = hlens[t];
        h[3] = fuzz_replay_rnd() & 1 ? 0 : hlens[t];
        oc__store_le32(h + 4, (uint32_t)(size - FUZZ_NVMF_PREFIX));
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_nvmf_replay",
    .seeds = fuzz_nvmf_seeds,
    .accepted = &fuzz_nvmf_accepted,
    .last_valid = &fuzz_nvmf_last_valid,
    .unit = "PDUs",
    .random_input = random_input,
};
