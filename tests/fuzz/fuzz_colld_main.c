/*
 * fuzz_colld_main.c — the collective-descriptor target's part of the
 * replay driver (replay_main.c): seeds of every kind (allreduce,
 * all-to-allv on 3 ranks, bcast, barrier, an allreduce with the memory
 * block, an all-to-allv with it, small allreduces with their
 * contribution inline) and an agent's failure message, all of which must decode, and,
 * as random inputs, seeds with a few bytes changed and now and then
 * truncated.  Single-threaded test program.
 */
#include <string.h>

#include "fuzz_colld.h"
#include "replay.h"
#include "wire/colld.h"

static unsigned colld_seeds(fuzz_replay_seed_fn fn, void *arg)
{
    uint64_t vals[12] = {1, 2, 0, 0, 1, 3, 1, 0, 2, 0, 1, 1};
    static uint8_t inl[OC_COLLD_INLINE_MAX];
    oc_colld_t s[12] = {
        {.kind = OC_COLLD_ALLREDUCE, .dtype = 3, .op = 0, .seq = 1,
         .count = 1000},
        {.kind = OC_COLLD_ALLTOALLV, .dtype = 0, .seq = 2, .nv = 3},
        {.kind = OC_COLLD_BCAST, .dtype = 1, .seq = 3, .root = 2, .count = 5},
        {.kind = OC_COLLD_BARRIER, .seq = 4},
        /* the memory block (version 2): an allreduce the agent moves */
        {.kind = OC_COLLD_ALLREDUCE, .dtype = 4, .op = 0, .seq = 5,
         .count = 131072, .flags = OC_COLLD_F_CMA, .pid = 4242,
         .saddr = 0x7f0000001000, .slen = 1048576, .raddr = 0x7f0000201000,
         .rlen = 1048576},
        /* all-to-allv by memory on 3 ranks (extents from vals: send 3,
         * receive 3 elements of 4 bytes) */
        {.kind = OC_COLLD_ALLTOALLV, .dtype = 0, .seq = 8, .nv = 3,
         .flags = OC_COLLD_F_CMA | OC_COLLD_F_SELF, .pid = 4243,
         .saddr = 0x7f0000001000, .slen = 12, .raddr = 0x7f0000201000,
         .rlen = 12},
        /* inline: one double, and the largest (4 KiB of floats) */
        {.kind = OC_COLLD_ALLREDUCE, .dtype = 1, .op = 1, .seq = 6,
         .count = 1, .flags = OC_COLLD_F_INLINE, .data = inl},
        {.kind = OC_COLLD_ALLREDUCE, .dtype = 3, .op = 0, .seq = 7,
         .count = OC_COLLD_INLINE_MAX / 4, .flags = OC_COLLD_F_INLINE,
         .data = inl},
        /* inline all-to-allv on 3 ranks (vals: a send extent of 3
         * elements, 3 received): of 4-byte and of 8-byte elements */
        {.kind = OC_COLLD_ALLTOALLV, .dtype = 0, .seq = 9, .nv = 3,
         .flags = OC_COLLD_F_INLINE, .data = inl, .dlen = 12},
        {.kind = OC_COLLD_ALLTOALLV, .dtype = 1, .seq = 10, .nv = 3,
         .flags = OC_COLLD_F_INLINE, .data = inl, .dlen = 24},
        /* inline broadcast: the root's 5 doubles, another rank's none */
        {.kind = OC_COLLD_BCAST, .dtype = 1, .seq = 11, .root = 2,
         .count = 5, .flags = OC_COLLD_F_INLINE, .data = inl, .dlen = 40},
        {.kind = OC_COLLD_BCAST, .dtype = 1, .seq = 12, .root = 2,
         .count = 5, .flags = OC_COLLD_F_INLINE, .data = inl, .dlen = 0},
    };
    unsigned n = 0;
    for (size_t i = 0; i < sizeof(inl); i++)
        inl[i] = (uint8_t)(i * 13 + 5);
    for (int i = 0; i < 12; i++) {
        static uint8_t b[1 + OC_COLLD_HDR + OC_COLLD_INLINE_MAX];
        b[0] = 2; /* a job of 3 ranks */
        oc__colld_encode(&s[i], vals, b + 1);
        fn(arg, b, 1 + oc__colld_size(&s[i]), 1);
        n++;
    }
    {
        uint8_t b[1 + OC_COLLD_FAIL_LEN];
        b[0] = 2;
        oc__colld_fail_encode(OC_ERR_COLL_MISMATCH, b + 1);
        fn(arg, b, sizeof(b), 1);
        n++;
    }
    return n;
}

static size_t random_input(uint8_t *m)
{
    size_t n;
    const uint8_t *s =
        fuzz_replay_seed((unsigned)(fuzz_replay_rnd() % fuzz_replay_nseeds()),
                         &n);
    memcpy(m, s, n);
    for (int f = 1 + (int)(fuzz_replay_rnd() % 4); f > 0; f--)
        m[fuzz_replay_rnd() % n] = (uint8_t)fuzz_replay_rnd();
    if (fuzz_replay_rnd() % 4 == 0)
        n = 1 + fuzz_replay_rnd() % n;
    return n;
}

const fuzz_replay_target_t fuzz_replay_target = {
    .name = "fuzz_colld_replay",
    .seeds = colld_seeds,
    .accepted = &fuzz_colld_accepted,
    .unit = "descriptors",
    .random_input = random_input,
};
