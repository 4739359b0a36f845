/*
 * wire_seeds.c — seed corpus for the wire fuzz target: valid bundles of
 * every mode (mixed, fixed, a rank's stream in row and column layout, an
 * agent's runs for a peer agent, an agent's source column for a rank) and
 * many shapes (so
 * that mutations start deep inside the validator rather than at the magic
 * check) and a few near misses.
 */
#include <string.h>

#include "fuzz_wire.h"
#include "wire/wire.h"

#define P FUZZ_WIRE_PREFIX

typedef struct {
    uint8_t b[P + 8192];
    uint8_t *p;
} seed_t;

/* prefix: nranks index (0 = 16 ranks), expected dst (0xff = any), job mode
 * (0 = the bundle's own job), skip selector */
static void start(seed_t *s, uint8_t nr, uint8_t dst, uint8_t jobmode,
                  uint8_t skip)
{
    memset(s->b, 0, sizeof(s->b));
    s->b[0] = nr;
    s->b[1] = dst;
    s->b[2] = jobmode;
    s->b[3] = skip;
    s->p = s->b + P + OC_WIRE_HDR_LEN;
}

static size_t finish(seed_t *s, uint8_t flags, uint16_t item, uint32_t count,
                     uint32_t src, uint32_t dst, uint32_t job)
{
    oc_wire_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.flags = flags;
    h.item_size = item;
    h.count = count;
    h.length = (uint32_t)(s->p - (s->b + P));
    h.src_hop = 1;
    h.job = job;
    h.seq = 42;
    h.src = src;
    h.dst = dst;
    oc__wire_hdr_write(s->b + P, &h);
    return (size_t)(s->p - s->b);
}

static void payload(uint8_t *out, size_t len, unsigned salt)
{
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)(i * 13 + salt);
}

static size_t mixed(seed_t *s, const uint32_t *lens, unsigned n,
                    uint32_t nranks, uint32_t dst_fixed, uint32_t job)
{
    uint8_t pl[4096];
    for (unsigned k = 0; k < n; k++) {
        uint32_t dst = dst_fixed != OC_WIRE_RANK_NONE
                           ? dst_fixed
                           : nranks - 1 - (k * 7) % nranks;
        payload(pl, lens[k], k);
        s->p = oc__wire_put_msg(s->p, dst, (k * 3) % nranks, pl, lens[k]);
    }
    return finish(s, 0, 0, n, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, job);
}

/* A rank's stream for its agent: messages from @p src to any ranks. */
static size_t stream(seed_t *s, const uint32_t *lens, unsigned n,
                     uint32_t nranks, uint32_t src, uint32_t job)
{
    uint8_t pl[4096];
    for (unsigned k = 0; k < n; k++) {
        payload(pl, lens[k], k);
        s->p = oc__wire_put_msg(s->p, (k * 5) % nranks, src, pl, lens[k]);
    }
    return finish(s, OC_WIRE_F_STREAM, 0, n, src, OC_WIRE_RANK_NONE, job);
}

/* A rank's column stream: n destinations, then n items of @p item bytes. */
static size_t column(seed_t *s, uint16_t item, unsigned n, uint32_t nranks,
                     uint32_t src, uint32_t job)
{
    uint8_t pl[4096];
    uint8_t *col = s->p;
    for (unsigned k = 0; k < n; k++)
        oc__store_le32(col + 4 * k, (k * 7) % nranks);
    s->p += oc__wire_col_dst_bytes(n);
    for (unsigned k = 0; k < n; k++) {
        payload(pl, item, k);
        s->p = oc__wire_put_item(s->p, pl, item);
    }
    return finish(s, OC_WIRE_F_STREAM | OC_WIRE_F_FIXED, item, n, src,
                  OC_WIRE_RANK_NONE, job);
}

/* An agent's source column toward rank @p dst: n sources, then n items
 * of @p item bytes. */
static size_t srccol(seed_t *s, uint16_t item, unsigned n, uint32_t nranks,
                     uint32_t dst, uint32_t job)
{
    uint8_t pl[4096];
    uint8_t *col = s->p;
    for (unsigned k = 0; k < n; k++)
        oc__store_le32(col + 4 * k, (k * 5) % nranks);
    s->p += oc__wire_col_dst_bytes(n);
    for (unsigned k = 0; k < n; k++) {
        payload(pl, item, k);
        s->p = oc__wire_put_item(s->p, pl, item);
    }
    return finish(s, OC_WIRE_F_SRCCOL | OC_WIRE_F_FIXED, item, n,
                  OC_WIRE_RANK_NONE, dst, job);
}

static size_t fixed(seed_t *s, uint16_t item, unsigned n, uint32_t src,
                    uint32_t dst, uint32_t job)
{
    uint8_t pl[4096];
    for (unsigned k = 0; k < n; k++) {
        payload(pl, item, k);
        s->p = oc__wire_put_item(s->p, pl, item);
    }
    return finish(s, OC_WIRE_F_FIXED, item, n, src, dst, job);
}

/* An agent's bundle for a peer agent (RUNS): @p n messages of lengths
 * @p lens over a few (source, destination) pairs, mixed first, then
 * packed as an agent packs them (oc__wire_runs_pack). */
static size_t runs(seed_t *s, const uint32_t *lens, unsigned n,
                   uint32_t nranks, uint32_t dst_fixed, uint32_t job)
{
    static uint64_t scratch[8192];
    static uint8_t out[sizeof(s->b)];
    uint8_t pl[4096];
    uint8_t *body = s->b + P + OC_WIRE_HDR_LEN;
    size_t r;
    for (unsigned k = 0; k < n; k++) {
        uint32_t dst = dst_fixed != OC_WIRE_RANK_NONE ? dst_fixed
                                                      : (k % 3) % nranks;
        payload(pl, lens[k], k);
        s->p = oc__wire_put_msg(s->p, dst, (k % 2) % nranks, pl, lens[k]);
    }
    r = oc__wire_runs_pack(body, 0, (size_t)(s->p - body), out, sizeof(out),
                           scratch, sizeof(scratch));
    if (r != 0) { /* else it stays mixed: still a valid seed */
        memcpy(body, out, r);
        s->p = body + r;
    }
    finish(s, 0, 0, n, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, job);
    if (r != 0)
        oc__wire_hdr_set_runs(s->b + P, (uint32_t)(OC_WIRE_HDR_LEN + r));
    return (size_t)(s->p - s->b);
}

unsigned fuzz_wire_seeds(fuzz_seed_fn fn, void *arg)
{
    static const uint32_t l1[] = {0};
    static const uint32_t l3[] = {1, 8, 13};
    static const uint32_t l10[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const uint32_t lbig[] = {300, 0, 1000};
    static const uint32_t l5[] = {16, 24, 7, 0, 33};
    static seed_t s;
    unsigned n = 0;
    size_t len;

#define EMIT(valid) (fn(arg, s.b, len, (valid)), n++)
    start(&s, 0, 0xff, 0, 0);
    len = mixed(&s, l1, 1, 16, OC_WIRE_RANK_NONE, 7);
    EMIT(1);
    start(&s, 0, 0xff, 0, 1);
    len = mixed(&s, l3, 3, 16, OC_WIRE_RANK_NONE, 7);
    EMIT(1);
    start(&s, 0, 3, 0, 5);
    len = mixed(&s, l10, 10, 16, 3, 7);
    EMIT(1);
    start(&s, 5, 0xff, 0, 2); /* 8 ranks */
    len = mixed(&s, lbig, 3, 8, OC_WIRE_RANK_NONE, 0xabcdef);
    EMIT(1);
    start(&s, 13, 0xff, 0, 3); /* UINT32_MAX ranks */
    len = mixed(&s, l5, 5, 0xfffffe, OC_WIRE_RANK_NONE, 1);
    EMIT(1);
    start(&s, 1, 0, 1, 0); /* 1 rank, dst 0, the fuzzer's fixed job */
    len = mixed(&s, l3, 3, 1, 0, FUZZ_WIRE_JOB);
    EMIT(1);

    start(&s, 0, 0xff, 0, 2);
    len = fixed(&s, 8, 4, 1, 2, 7);
    EMIT(1);
    start(&s, 0, 2, 0, 1);
    len = fixed(&s, 12, 3, 1, 2, 7);
    EMIT(1);
    start(&s, 0, 0xff, 0, 9);
    len = fixed(&s, 1, 16, 0, 15, 7);
    EMIT(1);
    start(&s, 7, 0xff, 0, 1); /* 256 ranks */
    len = fixed(&s, 100, 2, 255, 0, 9);
    EMIT(1);
    start(&s, 0, 0xff, 1, 0);
    len = fixed(&s, 3, 5, 4, 5, FUZZ_WIRE_JOB);
    EMIT(1);

    /* agent to agent: runs per (source, destination) */
    {
        static const uint32_t l8[24] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
                                        8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
        static const uint32_t lmix[12] = {8, 8, 8, 8, 8, 8, 0, 0, 5, 5, 16, 16};
        start(&s, 0, 0xff, 0, 5);
        len = runs(&s, l8, 24, 16, OC_WIRE_RANK_NONE, 7);
        EMIT(1);
        start(&s, 0, 0xff, 0, 7);
        len = runs(&s, lmix, 12, 16, OC_WIRE_RANK_NONE, 7);
        EMIT(1);
        start(&s, 0, 2, 0, 3); /* a receiver that is rank 2 */
        len = runs(&s, l8, 24, 16, 2, 7);
        EMIT(1);
        start(&s, 5, 0xff, 1, 1);
        len = runs(&s, l8, 16, 8, OC_WIRE_RANK_NONE, FUZZ_WIRE_JOB);
        EMIT(1);
        /* near misses: a run's n one past its items, its reserved word,
         * RUNS with FIXED, a run split in two */
        start(&s, 0, 0xff, 0, 0);
        len = runs(&s, l8, 24, 16, OC_WIRE_RANK_NONE, 7);
        s.b[P + OC_WIRE_HDR_LEN + 8]++;
        EMIT(0);
        start(&s, 0, 0xff, 0, 0);
        len = runs(&s, l8, 24, 16, OC_WIRE_RANK_NONE, 7);
        s.b[P + OC_WIRE_HDR_LEN + 12] = 1;
        EMIT(0);
        start(&s, 0, 0xff, 0, 0);
        len = runs(&s, l8, 24, 16, OC_WIRE_RANK_NONE, 7);
        s.b[P + 5] |= OC_WIRE_F_FIXED;
        EMIT(0);
        for (int split = 0; split < 2; split++) {
            /* two items of one pair: one run of 2 (valid), or split in
             * two runs of 1 (a second encoding: refused) */
            uint8_t *q;
            start(&s, 0, 0xff, 0, 1);
            q = s.p;
            for (unsigned k = 0; k < 2; k++) {
                if (k == 0 || split) {
                    oc__store_le64(q, oc__wire_msg_hdr(1, 0, 8));
                    oc__store_le32(q + 8, split ? 1 : 2);
                    q += OC_WIRE_RUN_HDR_LEN;
                }
                payload(q, 8, k);
                q += 8;
            }
            s.p = q;
            len = finish(&s, 0, 0, 2, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 7);
            oc__wire_hdr_set_runs(s.b + P, (uint32_t)(len - P));
            EMIT(!split);
        }
    }

    /* streams (agent placement, stream mode): at an agent (any dst) */
    start(&s, 0, 0xff, 0, 4);
    len = stream(&s, l10, 10, 16, 3, 7);
    EMIT(1);
    start(&s, 0, 0xff, 0, 1);
    len = stream(&s, l5, 5, 16, 0, 7);
    EMIT(1);
    start(&s, 5, 0xff, 1, 0);
    len = stream(&s, l3, 3, 8, 7, FUZZ_WIRE_JOB);
    EMIT(1);

    /* column streams (what oc_send_burst writes in stream mode) */
    start(&s, 0, 0xff, 0, 3);
    len = column(&s, 8, 9, 16, 3, 7);
    EMIT(1);
    start(&s, 0, 0xff, 0, 1);
    len = column(&s, 5, 4, 16, 0, 7);
    EMIT(1);
    start(&s, 5, 0xff, 1, 2);
    len = column(&s, 24, 3, 8, 7, FUZZ_WIRE_JOB);
    EMIT(1);
    /* column near misses: a destination out of range, the column's pad */
    start(&s, 0, 0xff, 0, 0);
    len = column(&s, 8, 3, 16, 3, 7);
    s.b[P + OC_WIRE_HDR_LEN + 4] = 16;
    EMIT(0);
    start(&s, 0, 0xff, 0, 0);
    len = column(&s, 8, 3, 16, 3, 7);
    s.b[P + OC_WIRE_HDR_LEN + 12] = 1;
    EMIT(0);

    /* source columns (what an agent hands a rank): at the rank, at an
     * agent; near misses: a source out of range, the column's pad, a
     * header source */
    start(&s, 0, 3, 0, 3);
    len = srccol(&s, 8, 9, 16, 3, 7);
    EMIT(1);
    start(&s, 0, 0xff, 0, 1);
    len = srccol(&s, 16, 4, 16, 0, 7);
    EMIT(1);
    start(&s, 5, 7, 1, 2);
    len = srccol(&s, 5, 3, 8, 7, FUZZ_WIRE_JOB);
    EMIT(1);
    start(&s, 0, 3, 0, 0);
    len = srccol(&s, 8, 3, 16, 3, 7);
    s.b[P + OC_WIRE_HDR_LEN + 4] = 16;
    EMIT(0);
    start(&s, 0, 3, 0, 0);
    len = srccol(&s, 8, 3, 16, 3, 7);
    s.b[P + OC_WIRE_HDR_LEN + 12] = 1;
    EMIT(0);
    start(&s, 0, 3, 0, 0);
    len = srccol(&s, 8, 3, 16, 3, 7);
    s.b[P + 32] = 1;
    EMIT(0);

    /* stream near misses: at a rank (a destination check: 2, and 0xfe,
     * which also names the source 0), a message from another rank, FIXED
     * with STREAM (a column of item size 0) */
    start(&s, 0, 2, 0, 0);
    len = stream(&s, l3, 3, 16, 3, 7);
    EMIT(0);
    start(&s, 0, 0xfe, 0, 0);
    len = stream(&s, l3, 3, 16, 3, 7);
    EMIT(0);
    start(&s, 0, 0xff, 0, 0);
    len = stream(&s, l3, 3, 16, 3, 7);
    s.b[P + OC_WIRE_HDR_LEN + 3] ^= 1; /* first message's src, low bit */
    EMIT(0);
    start(&s, 0, 0xff, 0, 0);
    len = stream(&s, l3, 3, 16, 3, 7);
    s.b[P + 5] |= OC_WIRE_F_FIXED;
    EMIT(0);

    /* near misses: a wrong count, a non-zero pad byte, a wrong destination */
    start(&s, 0, 0xff, 0, 0);
    len = mixed(&s, l3, 3, 16, OC_WIRE_RANK_NONE, 7);
    s.b[P + 8] = 2;
    EMIT(0);
    start(&s, 0, 0xff, 0, 0);
    len = mixed(&s, l3, 3, 16, OC_WIRE_RANK_NONE, 7);
    s.b[P + OC_WIRE_HDR_LEN + 8 + 7] = 1;
    EMIT(0);
    start(&s, 0, 4, 0, 0);
    len = fixed(&s, 12, 3, 1, 2, 7);
    EMIT(0);
#undef EMIT
    return n;
}
