/*
 * fuzz_nvmf_stream_main.c — the NVMe/TCP stream target's part of the
 * replay driver (replay_main.c): its seeds, and as random inputs several
 * plausible PDU headers back to back (with random bodies) behind a random
 * segmentation prefix.  Single-threaded test program.
 */
#include "fuzz_nvmf.h"
#include "nvmf/pdu.h"
#include "replay.h"

static size_t random_input(uint8_t *m)
{
    static const uint8_t types[] = {OC_NVMF_PDU_ICREQ, OC_NVMF_PDU_CMD,
                                    OC_NVMF_PDU_H2C_DATA, OC_NVMF_PDU_H2C_TERM};
    static const uint8_t hlens[] = {128, 72, 24, 24};
    size_t size = FUZZ_NVMF_STREAM_PREFIX;
    int npdu = 1 + (int)(fuzz_replay_rnd() % 6);

    m[0] = (uint8_t)fuzz_replay_rnd();
    m[1] = (uint8_t)fuzz_replay_rnd();
    for (int k = 0; k < npdu; k++) {
        unsigned t = k == 0 ? 0 : (unsigned)(fuzz_replay_rnd() % 4);
        size_t len = hlens[t] + (size_t)(fuzz_replay_rnd() % 3 == 0
                                             ? fuzz_replay_rnd() % 600 : 0);
        uint8_t *h = m + size;
        if (size + len > 4096)
            break;
        for (size_t i = 0; i < len; i++)
            h[i] = fuzz_replay_rnd() % 4 ? 0 : (uint8_t)fuzz_replay_rnd();
        h[0] = types[t];
        h[1] &= 0x07;
        h[2] = hlens[t];
        h[3] = len > hlens[t] ? hlens[t] : 0;
        oc__store_le32(h + 4, (uint32_t)len);
        if (t == 1) /* a capsule: an SGL the decoder takes */
            h[9] = 0x40, h[8 + 39] = len > hlens[t] ? 0x01 : 0x5a;
        size += len;
    }
    return size;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_nvmf_stream_replay",
    .seeds = fuzz_nvmf_stream_seeds,
    .accepted = &fuzz_nvmf_stream_accepted,
    .last_valid = &fuzz_nvmf_stream_last_valid,
    .unit = "responses",
    .random_input = random_input,
#if defined(FUZZ_REPLAY_ASAN)
    /* every input starts a fresh target, whose command slots (128 KiB of
     * in-capsule room each) ASan's allocator maps and unmaps run by run,
     * each allocation unwound in full (scripts/asan-test.sh): the
     * 122,000 systematic runs and 4,000 random ones took 213 s of the
     * CI's ASan phase (9 s in the normal build, which runs them all);
     * under ASan every fourth offset, rotating with the seed, and 1,000
     * random inputs */
    .stride = 4,
    .max_iterations = 1000,
#endif
};
