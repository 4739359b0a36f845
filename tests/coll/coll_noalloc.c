/*
 * coll_noalloc.c — a rank of coll-noalloc-test.sh: small allreduces and
 * all-to-alls through the agent (8 B and 1 KiB allreduces, a 1 KiB
 * all-to-all, inline in the descriptor) allocate nothing on the rank's
 * small-send path once warm.  White-box: it reads
 * its worker's small-send pool (oc__tr_worker_small_allocs) through the
 * runtime's extension accessor, so it links the static library.
 *
 *   coll_noalloc WARM STEADY GO   a 1.25 MiB allreduce (its buffers, over
 *                                 the agent's bound, are freed when it
 *                                 ends: the state must keep the next
 *                                 ones all the same), then
 *                                 WARM rounds (each an 8 B and a 1 KiB
 *                                 int64 sum and a 1 KiB int64
 *                                 all-to-all, verified), then prints
 *                                 "rank R: warm small_allocs N" and waits
 *                                 (up to 60 s) for the file GO to exist
 *                                 (the script reads the agent's counters
 *                                 meanwhile), then STEADY more rounds:
 *                                 the pool must allocate nothing, and
 *                                 over UCX (OC_AGENT_CHANNEL=ucx) every
 *                                 descriptor must take it (its gets up
 *                                 by 3 x STEADY at least: a copy
 *                                 allocated beside it would not count);
 *                                 on shared memory they go into the
 *                                 segment's descriptor ring (the script
 *                                 counts them at the agent)
 *
 * Rank and size from OC_RANK / OC_SIZE, the agent placement required.
 * Exit 0 PASS, 1 FAIL, 2 usage.
 */
#include <offcore/coll.h>

#include "runtime/ext.h"
#include "transport/transport.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WIDE 128         /* int64s: 1 KiB, under OC_COLLD_INLINE_MAX */
#define BIG (160 * 1024) /* int64s: 1.25 MiB, over OC__RC_BUF_KEEP */

static oc_status_t noop(void *arg, uint32_t src, const void *p, size_t n)
{
    (void)arg, (void)src, (void)p, (void)n;
    return OC_OK;
}

/* One allreduce of BIG int64s: 0 when verified. */
static int big(oc_context_t *ctx)
{
    const uint32_t rank = oc_rank(ctx), size = oc_size(ctx);
    int64_t *in = malloc(BIG * sizeof(*in)), *out = malloc(BIG * sizeof(*out));
    oc_status_t st = OC_ERR_NO_MEMORY;
    int bad = 1;

    if (in != NULL && out != NULL) {
        for (size_t i = 0; i < BIG; i++)
            in[i] = (int64_t)(rank + 1) * (int64_t)i;
        st = oc_allreduce(ctx, in, out, BIG, OC_INT64, OC_SUM);
    }
    if (st != OC_OK) {
        fprintf(stderr, "rank %u: the 1.25 MiB allreduce: %s\n", rank,
                oc_status_string(st));
    } else {
        bad = 0;
        for (size_t i = 0; i < BIG && !bad; i++)
            if (out[i] != (int64_t)size * (size + 1) / 2 * (int64_t)i) {
                fprintf(stderr,
                        "rank %u: the 1.25 MiB allreduce: [%zu] "
                        "%lld\n",
                        rank, i, (long long)out[i]);
                bad = 1;
            }
    }
    free(in);
    free(out);
    return bad;
}

/* Round @p k's all-to-all of WIDE int64s in all: 0 when verified. */
static int a2a(oc_context_t *ctx, uint32_t k)
{
    const uint32_t rank = oc_rank(ctx), size = oc_size(ctx);
    const size_t b = WIDE / size; /* int64s per block */
    int64_t in[WIDE], out[WIDE];
    oc_status_t st;

    for (uint32_t d = 0; d < size; d++)
        for (size_t i = 0; i < b; i++)
            in[d * b + i] = (int64_t)rank * 1000000 + d * 1000 + k + i;
    memset(out, 0xa5, sizeof(out));
    if ((st = oc_alltoall(ctx, in, out, b, OC_INT64)) != OC_OK) {
        fprintf(stderr, "rank %u: round %u, all-to-all: %s\n", rank, k,
                oc_status_string(st));
        return 1;
    }
    for (uint32_t s = 0; s < size; s++)
        for (size_t i = 0; i < b; i++) {
            int64_t want = (int64_t)s * 1000000 + rank * 1000 + k + i;
            if (out[s * b + i] != want) {
                fprintf(stderr,
                        "rank %u: round %u, all-to-all: block "
                        "from %u [%zu] %lld, not %lld\n",
                        rank, k, s, i, (long long)out[s * b + i],
                        (long long)want);
                return 1;
            }
        }
    return 0;
}

/* @p rounds rounds from round @p from: 0 when every result verified. */
static int rounds(oc_context_t *ctx, uint32_t from, uint32_t n)
{
    const uint32_t rank = oc_rank(ctx), size = oc_size(ctx);
    int64_t in[WIDE], out[WIDE];

    for (uint32_t k = from; k < from + n; k++) {
        if (a2a(ctx, k) != 0)
            return 1;
        for (size_t len = 1; len <= WIDE; len += WIDE - 1) {
            oc_status_t st;
            for (size_t i = 0; i < len; i++)
                in[i] = (int64_t)(rank + 1) * (int64_t)(k + i);
            memset(out, 0xa5, sizeof(out));
            st = oc_allreduce(ctx, in, out, len, OC_INT64, OC_SUM);
            if (st != OC_OK) {
                fprintf(stderr, "rank %u: round %u, %zu B: %s\n", rank, k,
                        len * 8, oc_status_string(st));
                return 1;
            }
            for (size_t i = 0; i < len; i++) {
                int64_t want =
                    (int64_t)size * (size + 1) / 2 * (int64_t)(k + i);
                if (out[i] != want) {
                    fprintf(stderr,
                            "rank %u: round %u, %zu B: [%zu] %lld, "
                            "not %lld\n",
                            rank, k, len * 8, i, (long long)out[i],
                            (long long)want);
                    return 1;
                }
            }
        }
    }
    return 0;
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER, .handler = noop};
    oc_context_t *ctx;
    oc_status_t st;
    uint32_t warm, steady, rank;
    uint64_t a0, a1, g0, g1, deadline;
    int bad;

    if (argc != 4 || (warm = (uint32_t)atoi(argv[1])) == 0 ||
        (steady = (uint32_t)atoi(argv[2])) == 0) {
        fprintf(stderr, "usage: coll_noalloc WARM STEADY GO\n");
        return 2;
    }
    if ((st = oc_init(&p, &ctx)) != OC_OK) {
        fprintf(stderr, "oc_init: %s\n", oc_status_string(st));
        return 1;
    }
    rank = oc_rank(ctx);
    if (!oc__ext_agent(ctx)) {
        fprintf(stderr, "rank %u: %s placement, not the agent's\n", rank,
                oc_placement(ctx));
        oc_finalize(ctx);
        return 1;
    }
    if (big(ctx) != 0 || rounds(ctx, 0, warm) != 0) {
        oc_finalize(ctx);
        return 1;
    }
    a0 = oc__tr_worker_small_allocs(oc__ext_worker(ctx));
    g0 = oc__tr_worker_small_gets(oc__ext_worker(ctx));
    printf("rank %u: warm small_allocs %llu\n", rank, (unsigned long long)a0);
    fflush(stdout);
    /* the script's go: its snapshot of the agent's counters is taken */
    deadline = now_ms() + 60000;
    while (access(argv[3], F_OK) != 0) {
        struct timespec ms = {0, 1000000};
        if (now_ms() > deadline) {
            fprintf(stderr, "rank %u: no %s in 60 s\n", rank, argv[3]);
            oc_finalize(ctx);
            return 1;
        }
        nanosleep(&ms, NULL);
    }
    bad = rounds(ctx, warm, steady);
    a1 = oc__tr_worker_small_allocs(oc__ext_worker(ctx));
    g1 = oc__tr_worker_small_gets(oc__ext_worker(ctx));
    printf("rank %u: steady small_allocs %llu (+%llu in %u rounds), "
           "small_gets +%llu\n",
           rank, (unsigned long long)a1, (unsigned long long)(a1 - a0), steady,
           (unsigned long long)(g1 - g0));
    const char *ch = getenv("OC_AGENT_CHANNEL");
    if (ch != NULL && strcmp(ch, "ucx") == 0 && g1 - g0 < 3 * (uint64_t)steady) {
        fprintf(stderr,
                "rank %u: FAIL: %llu descriptors of %u through the "
                "small-send pool\n",
                rank, (unsigned long long)(g1 - g0), 3 * steady);
        bad = 1;
    }
    if (a1 != a0) {
        fprintf(stderr,
                "rank %u: FAIL: the small-send pool allocated %llu "
                "buffers in steady state\n",
                rank, (unsigned long long)(a1 - a0));
        bad = 1;
    }
    printf("%s: rank %u\n", bad ? "FAIL" : "PASS", rank);
    fflush(stdout);
    oc_finalize(ctx);
    return bad;
}
