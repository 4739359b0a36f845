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

/* A column bundle: n ranks, entry k (k * @p mul) % nranks, then n items of
 * @p item bytes.  @p flags say which: a rank's column stream (STREAM, a
 * column of destinations; @p rank is the header's source) or an agent's
 * source column toward a rank (SRCCOL, a column of sources; @p rank is the
 * header's destination). */
static size_t cols(seed_t *s, uint8_t flags, uint16_t item, unsigned n,
                   uint32_t nranks, uint32_t mul, uint32_t rank, uint32_t job)
{
    uint8_t pl[4096];
    uint8_t *col = s->p;
    int src_col = (flags & OC_WIRE_F_SRCCOL) != 0;
    for (unsigned k = 0; k < n; k++)
        oc__store_le32(col + 4 * k, (k * mul) % nranks);
    s->p += oc__wire_col_dst_bytes(n);
    for (unsigned k = 0; k < n; k++) {
        payload(pl, item, k);
        s->p = oc__wire_put_item(s->p, pl, item);
    }
    return finish(s, flags | OC_WIRE_F_FIXED, item, n,
                  src_col ? OC_WIRE_RANK_NONE : rank,
                  src_col ? rank : OC_WIRE_RANK_NONE, job);
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

/* Two items of one (source, destination) pair written by hand: one run of
 * 2 (valid), or, @p split, two runs of 1 (a second encoding: refused). */
static size_t runs_by_hand(seed_t *s, int split)
{
    uint8_t *q = s->p;
    for (unsigned k = 0; k < 2; k++) {
        if (k == 0 || split) {
            oc__store_le64(q, oc__wire_msg_hdr(1, 0, 8));
            oc__store_le32(q + 8, split ? 1 : 2);
            q += OC_WIRE_RUN_HDR_LEN;
        }
        payload(q, 8, k);
        q += 8;
    }
    s->p = q;
    size_t len = finish(s, 0, 0, 2, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 7);
    oc__wire_hdr_set_runs(s->b + P, (uint32_t)(len - P));
    return len;
}

enum seed_kind { MIXED, FIXED, RUNS, BY_HAND, STREAM, COLUMN, SRCCOL };
enum seed_edit { KEEP, SET, INC, OR, XOR };

/* One seed: the prefix, what builds the bundle, and a near miss's edit of
 * one byte (at @c at past the prefix). */
typedef struct {
    uint8_t pre[4]; /* nranks index, expected dst, job mode, skip (start) */
    uint8_t kind;
    const uint32_t *lens; /* MIXED, RUNS, STREAM: message lengths */
    unsigned n;           /* messages or items */
    uint16_t item;        /* FIXED, COLUMN, SRCCOL */
    uint32_t nranks;      /* all but FIXED and BY_HAND */
    /* MIXED, RUNS: a single destination or NONE; FIXED: src then dst;
     * STREAM, COLUMN: the source; SRCCOL: the destination; BY_HAND: split */
    uint32_t r1, r2;
    uint32_t job;
    uint8_t edit, val;
    uint16_t at;
    uint8_t valid;
} seed_spec_t;

#define NONE OC_WIRE_RANK_NONE
#define H    OC_WIRE_HDR_LEN
#define FJ   FUZZ_WIRE_JOB

static const uint32_t l1[] = {0};
static const uint32_t l3[] = {1, 8, 13};
static const uint32_t l10[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
static const uint32_t lbig[] = {300, 0, 1000};
static const uint32_t l5[] = {16, 24, 7, 0, 33};
static const uint32_t l8[24] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
                                8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
static const uint32_t lmix[12] = {8, 8, 8, 8, 8, 8, 0, 0, 5, 5, 16, 16};

static const seed_spec_t seeds[] = {
    /* mixed: 16 ranks (any dst, then dst 3), 8 ranks, UINT32_MAX ranks,
     * 1 rank with dst 0 and the fuzzer's fixed job */
    {{0, 0xff, 0, 0}, MIXED, l1, 1, 0, 16, NONE, 0, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 1}, MIXED, l3, 3, 0, 16, NONE, 0, 7, KEEP, 0, 0, 1},
    {{0, 3, 0, 5}, MIXED, l10, 10, 0, 16, 3, 0, 7, KEEP, 0, 0, 1},
    {{5, 0xff, 0, 2}, MIXED, lbig, 3, 0, 8, NONE, 0, 0xabcdef, KEEP, 0, 0, 1},
    {{13, 0xff, 0, 3}, MIXED, l5, 5, 0, 0xfffffe, NONE, 0, 1, KEEP, 0, 0, 1},
    {{1, 0, 1, 0}, MIXED, l3, 3, 0, 1, 0, 0, FJ, KEEP, 0, 0, 1},
    /* fixed (index 7: 256 ranks) */
    {{0, 0xff, 0, 2}, FIXED, NULL, 4, 8, 0, 1, 2, 7, KEEP, 0, 0, 1},
    {{0, 2, 0, 1}, FIXED, NULL, 3, 12, 0, 1, 2, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 9}, FIXED, NULL, 16, 1, 0, 0, 15, 7, KEEP, 0, 0, 1},
    {{7, 0xff, 0, 1}, FIXED, NULL, 2, 100, 0, 255, 0, 9, KEEP, 0, 0, 1},
    {{0, 0xff, 1, 0}, FIXED, NULL, 5, 3, 0, 4, 5, FJ, KEEP, 0, 0, 1},
    /* agent to agent: runs per (source, destination); one at rank 2 */
    {{0, 0xff, 0, 5}, RUNS, l8, 24, 0, 16, NONE, 0, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 7}, RUNS, lmix, 12, 0, 16, NONE, 0, 7, KEEP, 0, 0, 1},
    {{0, 2, 0, 3}, RUNS, l8, 24, 0, 16, 2, 0, 7, KEEP, 0, 0, 1},
    {{5, 0xff, 1, 1}, RUNS, l8, 16, 0, 8, NONE, 0, FJ, KEEP, 0, 0, 1},
    /* runs near misses: a run's n one past its items, its reserved word,
     * RUNS with FIXED, a run split in two */
    {{0, 0xff, 0, 0}, RUNS, l8, 24, 0, 16, NONE, 0, 7, INC, 0, H + 8, 0},
    {{0, 0xff, 0, 0}, RUNS, l8, 24, 0, 16, NONE, 0, 7, SET, 1, H + 12, 0},
    {{0, 0xff, 0, 0}, RUNS, l8, 24, 0, 16, NONE, 0, 7, OR, OC_WIRE_F_FIXED,
     5, 0},
    {{0, 0xff, 0, 1}, BY_HAND, NULL, 2, 0, 0, 0, 0, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 1}, BY_HAND, NULL, 2, 0, 0, 1, 0, 7, KEEP, 0, 0, 0},
    /* streams (agent placement, stream mode): at an agent (any dst) */
    {{0, 0xff, 0, 4}, STREAM, l10, 10, 0, 16, 3, 0, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 1}, STREAM, l5, 5, 0, 16, 0, 0, 7, KEEP, 0, 0, 1},
    {{5, 0xff, 1, 0}, STREAM, l3, 3, 0, 8, 7, 0, FJ, KEEP, 0, 0, 1},
    /* column streams (what oc_send_burst writes in stream mode); near
     * misses: a destination out of range, the column's pad */
    {{0, 0xff, 0, 3}, COLUMN, NULL, 9, 8, 16, 3, 0, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 1}, COLUMN, NULL, 4, 5, 16, 0, 0, 7, KEEP, 0, 0, 1},
    {{5, 0xff, 1, 2}, COLUMN, NULL, 3, 24, 8, 7, 0, FJ, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 0}, COLUMN, NULL, 3, 8, 16, 3, 0, 7, SET, 16, H + 4, 0},
    {{0, 0xff, 0, 0}, COLUMN, NULL, 3, 8, 16, 3, 0, 7, SET, 1, H + 12, 0},
    /* source columns (what an agent hands a rank): at the rank, at an
     * agent; near misses: a source out of range, the column's pad, a
     * header source */
    {{0, 3, 0, 3}, SRCCOL, NULL, 9, 8, 16, 3, 0, 7, KEEP, 0, 0, 1},
    {{0, 0xff, 0, 1}, SRCCOL, NULL, 4, 16, 16, 0, 0, 7, KEEP, 0, 0, 1},
    {{5, 7, 1, 2}, SRCCOL, NULL, 3, 5, 8, 7, 0, FJ, KEEP, 0, 0, 1},
    {{0, 3, 0, 0}, SRCCOL, NULL, 3, 8, 16, 3, 0, 7, SET, 16, H + 4, 0},
    {{0, 3, 0, 0}, SRCCOL, NULL, 3, 8, 16, 3, 0, 7, SET, 1, H + 12, 0},
    {{0, 3, 0, 0}, SRCCOL, NULL, 3, 8, 16, 3, 0, 7, SET, 1, 32, 0},
    /* stream near misses: at a rank (a destination check: 2, and 0xfe,
     * which also names the source 0), a message from another rank (the
     * first message's src, low bit), FIXED with STREAM (a column of item
     * size 0) */
    {{0, 2, 0, 0}, STREAM, l3, 3, 0, 16, 3, 0, 7, KEEP, 0, 0, 0},
    {{0, 0xfe, 0, 0}, STREAM, l3, 3, 0, 16, 3, 0, 7, KEEP, 0, 0, 0},
    {{0, 0xff, 0, 0}, STREAM, l3, 3, 0, 16, 3, 0, 7, XOR, 1, H + 3, 0},
    {{0, 0xff, 0, 0}, STREAM, l3, 3, 0, 16, 3, 0, 7, OR, OC_WIRE_F_FIXED, 5,
     0},
    /* near misses: a wrong count, a non-zero pad byte, a wrong destination */
    {{0, 0xff, 0, 0}, MIXED, l3, 3, 0, 16, NONE, 0, 7, SET, 2, 8, 0},
    {{0, 0xff, 0, 0}, MIXED, l3, 3, 0, 16, NONE, 0, 7, SET, 1, H + 8 + 7, 0},
    {{0, 4, 0, 0}, FIXED, NULL, 3, 12, 0, 1, 2, 7, KEEP, 0, 0, 0},
};
#undef NONE
#undef H
#undef FJ

static size_t build(seed_t *s, const seed_spec_t *c)
{
    start(s, c->pre[0], c->pre[1], c->pre[2], c->pre[3]);
    switch (c->kind) {
    case MIXED:
        return mixed(s, c->lens, c->n, c->nranks, c->r1, c->job);
    case FIXED:
        return fixed(s, c->item, c->n, c->r1, c->r2, c->job);
    case RUNS:
        return runs(s, c->lens, c->n, c->nranks, c->r1, c->job);
    case BY_HAND:
        return runs_by_hand(s, c->r1 != 0);
    case STREAM:
        return stream(s, c->lens, c->n, c->nranks, c->r1, c->job);
    case COLUMN:
        return cols(s, OC_WIRE_F_STREAM, c->item, c->n, c->nranks, 7, c->r1,
                    c->job);
    default:
        return cols(s, OC_WIRE_F_SRCCOL, c->item, c->n, c->nranks, 5, c->r1,
                    c->job);
    }
}

unsigned fuzz_wire_seeds(fuzz_seed_fn fn, void *arg)
{
    static seed_t s;
    unsigned n = 0;

    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++, n++) {
        const seed_spec_t *c = &seeds[i];
        size_t len = build(&s, c);
        uint8_t *b = &s.b[P + c->at];
        switch (c->edit) {
        case SET:
            *b = c->val;
            break;
        case INC:
            (*b)++;
            break;
        case OR:
            *b |= c->val;
            break;
        case XOR:
            *b ^= c->val;
            break;
        default:
            break;
        }
        fn(arg, s.b, len, c->valid);
    }
    return n;
}
