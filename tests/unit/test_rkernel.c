/*
 * test_rkernel.c — the routing kernel of one routing thread
 * (src/agent/router/route.c) with no UCX under it (rkernel_fake.h): a
 * rank's stream, column or row, scattered per next hop and per local rank
 * (every item at the right outlet, once, in order per source and
 * destination); the column fast path and the general path giving the same
 * bundles; a fixed bundle forwarded whole behind what was aggregated
 * before it; bundle boundaries; malformed bundles refused and counted,
 * never routed; a full next hop holding its sender back (a rank's
 * max_inflight, a peer's credit window) and letting it go when credit
 * returns; a peer held to the messages its link may carry; a rank on
 * shared memory, whose stream's destinations are checked as read; what
 * goes to a peer leaving in runs (rpeer.c), and a peer's runs routed or,
 * malformed, refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "rkernel_fake.h"

/* Message k of source @p src toward @p dst: its value says all three. */
static uint64_t val(uint32_t src, uint32_t dst, uint32_t k)
{
    return rk_val(src, dst << 16 | k);
}

/* Per (source, destination) the next value expected (what the router
 * sent, in order, must be each pair's values 0, 1, 2, ...). */
static uint32_t want[RK_RANKS][RK_RANKS];

/* Every message the router sent: at the outlet of its destination (a
 * local rank's own, or the peer node's), its value its own (source,
 * destination), and in order per pair.  Returns how many. */
static uint32_t check_sent(void)
{
    uint32_t next[RK_RANKS][RK_RANKS];
    memset(next, 0, sizeof(next));
    for (uint32_t i = 0; i < rk.nrecs; i++) {
        const rk_rec_t *x = &rk.recs[i];
        assert_true(x->dst < RK_RANKS && x->src < RK_RANKS);
        if (x->peer)
            assert_true(x->ep_id == 1 && x->dst >= RK_LOCAL);
        else
            assert_true(x->ep_id == x->dst && x->dst < RK_LOCAL);
        assert_int_equal(x->v, val(x->src, x->dst, next[x->src][x->dst]++));
    }
    for (uint32_t s = 0; s < RK_RANKS; s++)
        for (uint32_t d = 0; d < RK_RANKS; d++)
            assert_int_equal(next[s][d], want[s][d]);
    return rk.nrecs;
}

static uint32_t lcg(uint32_t *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 16;
}

/* @p n messages of @p src to random destinations (seeded), their values
 * counted in want[][]. */
static void gen(uint32_t src, uint32_t n, uint32_t *seed, uint32_t *dst,
                uint64_t *vals)
{
    for (uint32_t k = 0; k < n; k++) {
        dst[k] = lcg(seed) % RK_RANKS;
        vals[k] = val(src, dst[k], want[src][dst[k]]++);
    }
}

/* @p len: where the builder in the same call writes the length (read
 * here, after the arguments are evaluated) */
static void feed_free(rk_fix_t *f, uint64_t token, uint8_t *b,
                      const size_t *len)
{
    rk_feed(f, token, b, *len);
    free(b);
}

static int setup(void **state)
{
    memset(want, 0, sizeof(want));
    *state = rk_setup();
    return 0;
}

static int teardown(void **state)
{
    rk_teardown(*state);
    return 0;
}

/* Three ranks' streams at once (two in columns, one in rows): every item
 * reaches its destination's outlet, once, in order; each bundle is
 * counted and credited to its rank. */
static void test_scatter(void **state)
{
    rk_fix_t *f = *state;
    uint32_t dst[40], seed = 1, total = 0;
    uint64_t vals[40];
    size_t len;
    oc_router_job_counters_t jc;

    for (int round = 0; round < 3; round++)
        for (uint32_t src = 0; src < 3; src++) {
            gen(src, 40, &seed, dst, vals);
            feed_free(f, rk_tok(src),
                      src == 2 ? rk_row(src, 40, dst, vals, 8, &len)
                               : rk_col(src, 40, dst, vals, 8, &len), &len);
            total += 40;
        }
    assert_int_equal(rk_turn(f, 1), 9);
    assert_int_equal(check_sent(), total);
    assert_int_equal(f->r->c.msgs, total);
    assert_int_equal(f->r->c.bundles_in, 9);
    assert_int_equal(f->r->c.rejects, 0);
    assert_int_equal(f->r->c.undeliverable, 0);
    assert_int_equal(rk.released, 9);
    for (uint32_t src = 0; src < 3; src++)
        assert_int_equal(rk.credits_to_rank[src], 3);
    assert_int_equal(rk.credits_to_rank[3], 0);
    assert_true(rk.bundles_to_peer > 0);
    for (uint32_t d = 0; d < RK_LOCAL; d++)
        assert_true(rk.bundles_to_rank[d] > 0);
    assert_int_equal(oc__router_job_counters(f->r, &jc, 1), 1);
    assert_int_equal(jc.job, RK_JOB);
    assert_int_equal(jc.msgs_in, total);
    assert_int_equal(jc.bundles_in, 9);
}

/* What ranks' streams become at the router's outlets, bundle by bundle:
 * as column streams (route_col, the fixed-size fast path, where the item
 * size allows) or as row streams (route_msg, the general path).  Shape
 * 0: one rank, random destinations (its outlets fixed-size); shape 1:
 * the four local ranks in turn, an item to every rank each (the outlets
 * toward ranks turn mixed: a header per item). */
static uint32_t run_stream(int col, uint32_t len, int shape, rk_rec_t *out)
{
    rk_fix_t *f = rk_setup();
    uint32_t dst[120], seed = 7, n, total = 0;
    uint64_t vals[120];
    size_t blen;

    memset(want, 0, sizeof(want));
    for (uint32_t b = 0; b < (shape ? 48u : 3u); b++) {
        uint32_t src = shape ? b % RK_LOCAL : 1, cnt = shape ? 8 : 120;
        if (shape) {
            for (uint32_t k = 0; k < cnt; k++) {
                dst[k] = (k + b) % RK_RANKS;
                vals[k] = val(src, dst[k], want[src][dst[k]]++);
            }
        } else {
            gen(src, cnt, &seed, dst, vals);
        }
        feed_free(f, rk_tok(src),
                  col ? rk_col(src, cnt, dst, vals, len, &blen)
                      : rk_row(src, cnt, dst, vals, len, &blen), &blen);
        total += cnt;
        rk_turn(f, 0);
    }
    for (int t = 0; t < 100 && (t == 0 || f->r->rx.count > 0); t++)
        rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 0);
    assert_int_equal(f->r->c.rejects, 0);
    n = check_sent();
    assert_int_equal(n, total);
    if (shape && len <= 16) /* the mixed outlets were there (longer
                               items make the engine flush a fixed
                               buffer rather than mix it) */
        assert_true(rk.nbundles - rk.fixed_bundles > rk.nbundles / 2);
    memcpy(out, rk.recs, n * sizeof(*out));
    rk_teardown(f);
    return n;
}

static void test_fast_equals_general(void **state)
{
    static rk_rec_t a[RK_MAX_RECS], b[RK_MAX_RECS];
    static const uint32_t lens[] = {8, 16, 24, 12};
    (void)state;
    for (int shape = 0; shape < 2; shape++)
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            uint32_t na = run_stream(1, lens[i], shape, a);
            uint32_t nb = run_stream(0, lens[i], shape, b);
            assert_int_equal(na, nb);
            for (uint32_t k = 0; k < na; k++) {
                assert_int_equal(a[k].peer, b[k].peer);
                assert_int_equal(a[k].ep_id, b[k].ep_id);
                assert_int_equal(a[k].bundle, b[k].bundle); /* same bundles */
                assert_int_equal(a[k].dst, b[k].dst);
                assert_int_equal(a[k].src, b[k].src);
                assert_int_equal(a[k].len, lens[i]);
                assert_int_equal(a[k].len, b[k].len);
                assert_int_equal(a[k].v, b[k].v);
            }
        }
}

/* A fixed bundle for one rank goes on whole, behind the items already
 * aggregated toward the same rank; toward a remote rank, to the peer. */
static void test_forward_whole(void **state)
{
    rk_fix_t *f = *state;
    uint32_t dst[5] = {2, 2, 2, 2, 2};
    uint64_t vals[10];
    size_t len;

    for (uint32_t k = 0; k < 5; k++)
        vals[k] = val(0, 2, want[0][2]++);
    feed_free(f, rk_tok(0), rk_col(0, 5, dst, vals, 8, &len), &len);
    rk_turn(f, 0);
    assert_int_equal(rk.nbundles, 0); /* aggregated, not sent yet */
    for (uint32_t k = 0; k < 10; k++)
        vals[k] = val(0, 2, want[0][2]++);
    feed_free(f, rk_tok(0), rk_fixed(0, 2, 10, vals, 8, &len), &len);
    for (uint32_t k = 0; k < 3; k++)
        vals[k] = val(1, 6, want[1][6]++);
    feed_free(f, rk_tok(1), rk_fixed(1, 6, 3, vals, 8, &len), &len);
    rk_turn(f, 0);
    assert_int_equal(f->r->c.bundles_forwarded, 2);
    assert_int_equal(rk.bundles_to_rank[2], 2); /* the 5, then the 10 */
    assert_int_equal(rk.bundles_to_peer, 1);
    assert_int_equal(check_sent(), 18);
    assert_int_equal(rk.recs[4].bundle, 0);
    assert_int_equal(rk.recs[5].bundle, 1);
    assert_int_equal(f->r->c.msgs, 18);
}

/* The router's bundle exactly full, and one item over; a rank's fixed
 * bundle of exactly the router's bundle size forwarded whole, one item
 * longer routed item by item. */
static void test_boundaries(void **state)
{
    rk_fix_t *f = *state;
    const uint32_t fit = (RK_BUNDLE - OC_WIRE_HDR_LEN) / 8; /* 27 */
    uint32_t dst[64];
    uint64_t vals[64];
    size_t len;

    for (uint32_t k = 0; k < 64; k++)
        dst[k] = 1;
    for (uint32_t k = 0; k < fit; k++)
        vals[k] = val(0, 1, want[0][1]++);
    feed_free(f, rk_tok(0), rk_col(0, fit, dst, vals, 8, &len), &len);
    rk_turn(f, 0);
    assert_int_equal(rk.nbundles, 0); /* full, but nothing says so yet */
    rk_turn(f, 1);
    assert_int_equal(rk.nbundles, 1);
    assert_int_equal(rk.nrecs, fit);
    assert_int_equal(rk.fixed_bundles, 1);

    for (uint32_t k = 0; k < fit + 1; k++)
        vals[k] = val(0, 1, want[0][1]++);
    feed_free(f, rk_tok(0), rk_col(0, fit + 1, dst, vals, 8, &len), &len);
    rk_turn(f, 0);
    assert_int_equal(rk.nbundles, 2); /* the first 27: FULL */
    assert_int_equal(rk.nrecs, 2 * fit);
    rk_turn(f, 1);
    assert_int_equal(rk.nbundles, 3); /* the one over */
    assert_int_equal(rk.nrecs, 2 * fit + 1);
    assert_int_equal(f->r->eng->c.flush[OC_ENG_FLUSH_FULL], 1);

    for (uint32_t k = 0; k < fit; k++)
        vals[k] = val(2, 3, want[2][3]++);
    feed_free(f, rk_tok(2), rk_fixed(2, 3, fit, vals, 8, &len), &len);
    assert_int_equal(len, RK_BUNDLE);
    rk_turn(f, 0);
    assert_int_equal(f->r->c.bundles_forwarded, 1);
    assert_int_equal(rk.bundles_to_rank[3], 1);
    for (uint32_t k = 0; k < fit + 1; k++)
        vals[k] = val(2, 3, want[2][3]++);
    feed_free(f, rk_tok(2), rk_fixed(2, 3, fit + 1, vals, 8, &len), &len);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.bundles_forwarded, 1); /* not whole */
    assert_int_equal(rk.bundles_to_rank[3], 3);
    assert_int_equal(check_sent(), 4 * fit + 2);
}

/* A local rank's outlet made a source column takes every sender's items
 * of one length in one bundle (wire.h: no header per item); an item of another length
 * turns a buffer under a quarter full mixed, and sends a fuller one as
 * it is. */
static void test_srccol_outlet(void **state)
{
    rk_fix_t *f = *state;
    const uint32_t cap = oc__wire_col_cap(RK_BUNDLE, 8); /* 18 */
    static const uint32_t from[] = {0, 2, 3};
    rjob_t *j = oc__router_job_find(f->r, RK_JOB);
    uint32_t dst[16];
    uint64_t vals[16];
    size_t len;

    /* rank 1's outlet a source column (rcmd.c leaves them mixed: not yet
     * a gain, docs/router.md) */
    assert_non_null(j);
    j->local[1]->out.eo.column = 1;
    j->local[1]->out.eo.flags = OC_WIRE_F_SRCCOL;

    for (uint32_t k = 0; k < 16; k++)
        dst[k] = 1;
    for (uint32_t s = 0; s < 3; s++) {
        for (uint32_t k = 0; k < 3; k++)
            vals[k] = val(from[s], 1, want[from[s]][1]++);
        feed_free(f, rk_tok(from[s]), rk_col(from[s], 3, dst, vals, 8, &len),
                  &len);
        rk_turn(f, 0);
    }
    rk_turn(f, 1);
    assert_int_equal(rk.nbundles, 1);
    assert_int_equal(rk.srccol_bundles, 1);
    assert_int_equal(rk.nrecs, 9);
    for (uint32_t i = 0; i < 9; i++)
        assert_int_equal(rk.recs[i].src, from[i / 3]);
    assert_int_equal(check_sent(), 9);

    /* 2 items of 8 bytes (under a quarter of 18), then 2 of 16: one
     * mixed bundle */
    for (uint32_t k = 0; k < 2; k++)
        vals[k] = val(0, 1, want[0][1]++);
    feed_free(f, rk_tok(0), rk_col(0, 2, dst, vals, 8, &len), &len);
    rk_turn(f, 0);
    for (uint32_t k = 0; k < 2; k++)
        vals[k] = val(2, 1, want[2][1]++);
    feed_free(f, rk_tok(2), rk_col(2, 2, dst, vals, 16, &len), &len);
    rk_turn(f, 1);
    assert_int_equal(rk.nbundles, 2);
    assert_int_equal(rk.fixed_bundles, 1);
    assert_int_equal(rk.nrecs, 13);
    assert_int_equal(rk.recs[10].len, 8);
    assert_int_equal(rk.recs[11].len, 16);
    assert_int_equal(rk.recs[11].src, 2);
    assert_int_equal(check_sent(), 13);

    /* a quarter full (5 of 18), then one of 16: sent as it is, FULL */
    for (uint32_t k = 0; k < cap / 4 + 1; k++)
        vals[k] = val(3, 1, want[3][1]++);
    feed_free(f, rk_tok(3), rk_col(3, cap / 4 + 1, dst, vals, 8, &len), &len);
    rk_turn(f, 0);
    vals[0] = val(0, 1, want[0][1]++);
    feed_free(f, rk_tok(0), rk_col(0, 1, dst, vals, 16, &len), &len);
    rk_turn(f, 1);
    assert_int_equal(rk.nbundles, 4);
    assert_int_equal(rk.srccol_bundles, 3);
    assert_int_equal(f->r->eng->c.flush[OC_ENG_FLUSH_FULL], 1);
    assert_int_equal(check_sent(), 13 + cap / 4 + 2);
    assert_int_equal(f->r->c.rejects, 0);
}

/* Malformed bundles: each refused, counted by its reason (router and
 * job), released, none of its messages routed; a good bundle between
 * them is routed. */
static void test_malformed(void **state)
{
    rk_fix_t *f = *state;
    uint32_t dst[4] = {1, 5, 2, 0}, sdst[4] = {1, 5, 2, 0};
    uint64_t vals[4] = {1, 2, 3, 4};
    uint8_t *b;
    size_t len;
    oc_router_job_counters_t jc;
    uint32_t n = 0;
    struct {
        oc_status_t why;
        uint32_t    count;
    } seen[16];
    memset(seen, 0, sizeof(seen));

#define BAD(tok, buf, blen, status)                                        \
    do {                                                                   \
        rk_feed(f, tok, buf, blen);                                        \
        rk_turn(f, 1);                                                     \
        n++;                                                               \
        seen[OC_ERR_WIRE_TRUNCATED - (status)].count++;                    \
        assert_int_equal(f->r->c.rejects, n);                              \
        assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -       \
                                             (status)],                    \
                         seen[OC_ERR_WIRE_TRUNCATED - (status)].count);    \
        assert_int_equal(rk.nbundles, 0);                                  \
        assert_int_equal(rk.released, rk.fed);                             \
    } while (0)

    /* a count the content does not have (rows; a column's count decides
     * its layout, so there it is a length) */
    b = rk_row(0, 4, dst, vals, 8, &len);
    oc__store_le32(b + 8, 5);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_COUNT);
    free(b);
    b = rk_col(0, 4, dst, vals, 8, &len);
    oc__store_le32(b + 8, 3);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_LENGTH);
    free(b);
    /* a header length that is not the bundle's */
    b = rk_row(0, 4, dst, vals, 8, &len);
    oc__store_le32(b + 12, (uint32_t)len + 8);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_LENGTH);
    BAD(rk_tok(0), b, len - 8, OC_ERR_WIRE_LENGTH);
    BAD(rk_tok(0), b, 16, OC_ERR_WIRE_TRUNCATED);
    free(b);
    /* a destination out of range, in columns and in rows */
    sdst[3] = RK_RANKS;
    b = rk_col(0, 4, sdst, vals, 8, &len);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_RANK);
    free(b);
    b = rk_row(0, 4, sdst, vals, 8, &len);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_RANK);
    free(b);
    /* rank 0's connection, rank 1's stream */
    b = rk_col(1, 4, dst, vals, 8, &len);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_RANK);
    free(b);
    /* a source column, valid, from a rank or the peer: an agent writes
     * those, for a rank only */
    {
        uint32_t zero[4] = {0, 0, 0, 0};
        b = rk_col(0, 4, zero, vals, 8, &len);
        b[5] = OC_WIRE_F_FIXED | OC_WIRE_F_SRCCOL;
        oc__store_le32(b + 32, OC_WIRE_RANK_NONE);
        oc__store_le32(b + 36, 1);
        BAD(rk_tok(0), b, len, OC_ERR_WIRE_FLAGS);
        for (uint32_t k = 0; k < 4; k++)
            oc__store_le32(b + OC_WIRE_HDR_LEN + 4 * k, 4 + k);
        BAD(RK_PEER_RECV, b, len, OC_ERR_WIRE_FLAGS);
        /* and malformed: a source not the connection's rank */
        oc__store_le32(b + OC_WIRE_HDR_LEN, 1);
        BAD(rk_tok(0), b, len, OC_ERR_WIRE_RANK);
        free(b);
    }
    /* another job */
    b = rk_col(0, 4, dst, vals, 8, &len);
    oc__store_le32(b + 20, RK_JOB + 1);
    BAD(rk_tok(0), b, len, OC_ERR_WIRE_JOB);
    free(b);
    assert_int_equal(rk.credits_to_rank[0], 0); /* none of it routed */

    /* the router goes on: a good bundle, then one from nobody */
    for (uint32_t k = 0; k < 4; k++)
        vals[k] = val(0, dst[k], want[0][dst[k]]++);
    b = rk_col(0, 4, dst, vals, 8, &len);
    rk_feed(f, rk_tok(0), b, len);
    rk_turn(f, 1);
    assert_int_equal(check_sent(), 4);
    assert_int_equal(rk.credits_to_rank[0], 1);
    rk_feed(f, 0x5eed, b, len);
    rk_turn(f, 1);
    free(b);
    assert_int_equal(f->r->c.rejects, n + 1);
    assert_int_equal(f->r->c.reject_unknown_sender, 1);
    assert_int_equal(check_sent(), 4);
    assert_int_equal(f->r->c.msgs, 4);
    assert_int_equal(oc__router_job_counters(f->r, &jc, 1), 1);
    assert_int_equal(jc.rejects, n); /* all on the rank's job */
#undef BAD
}

/* A rank's next hop with max_inflight bundles in flight holds its sender
 * back — the bundle stays on the ring, neither routed nor dropped — while
 * other senders go on; its completions let it go, in order. */
static void test_backpressure_rank(void **state)
{
    rk_fix_t *f = *state;
    uint64_t vals[4];
    size_t len;

    rk.async = 1;
    for (int b = 0; b < 4; b++) {
        for (uint32_t k = 0; k < 4; k++)
            vals[k] = val(0, 1, want[0][1]++);
        feed_free(f, rk_tok(0), rk_fixed(0, 1, 4, vals, 8, &len), &len);
    }
    vals[0] = val(2, 3, want[2][3]++);
    feed_free(f, rk_tok(2), rk_fixed(2, 3, 1, vals, 8, &len), &len);
    assert_int_equal(rk_turn(f, 1), 3);
    assert_int_equal(rk.bundles_to_rank[1], RK_INFLIGHT);
    assert_int_equal(rk.bundles_to_rank[3], 1); /* not held behind rank 1 */
    assert_int_equal(f->r->rx.count, 2);        /* held, not dropped */
    assert_int_equal(f->r->c.blocklist_depth, 1);
    assert_int_equal(rk.credits_to_rank[0], 2);  /* only what was routed */
    assert_int_equal(rk_turn(f, 1), 0);          /* still held */
    assert_int_equal(rk.bundles_to_rank[1], RK_INFLIGHT);
    rk_complete();
    assert_int_equal(f->r->c.blocklist_depth, 0);
    assert_int_equal(rk_turn(f, 1), 2);
    assert_int_equal(rk.bundles_to_rank[1], 4);
    assert_int_equal(rk.credits_to_rank[0], 4);
    assert_int_equal(f->r->rx.count, 0);
    assert_int_equal(check_sent(), 17);
    assert_int_equal(f->r->c.undeliverable, 0);
}

/* The same inside a stream: the kernel stops at the first item whose
 * next hop is held, keeps its place, and goes on from there. */
static void test_backpressure_stream(void **state)
{
    rk_fix_t *f = *state;
    const uint32_t fit = (RK_BUNDLE - OC_WIRE_HDR_LEN) / 8, n = 100;
    uint32_t dst[100];
    uint64_t vals[100];
    size_t len;

    rk.async = 1;
    for (uint32_t k = 0; k < n; k++) {
        dst[k] = k % 10 == 9 ? 2 : 1;
        vals[k] = val(0, dst[k], want[0][dst[k]]++);
    }
    feed_free(f, rk_tok(0), rk_col(0, n, dst, vals, 8, &len), &len);
    assert_int_equal(rk_turn(f, 0), 0);
    assert_int_equal(rk.bundles_to_rank[1], RK_INFLIGHT);
    assert_int_equal(f->r->rx.count, 1);
    /* held at the item that needed a third buffer toward rank 1: the
     * RK_INFLIGHT + 1 buffers' worth of rank 1's items (and rank 2's
     * between them) routed, no further */
    {
        uint32_t ones = 0, k = 0;
        for (; k < n && ones < (RK_INFLIGHT + 1) * fit; k++)
            ones += dst[k] == 1;
        while (dst[k] == 2)
            k++;
        assert_int_equal(oc__eng_ring_at(&f->r->rx, 0)->done, k);
    }
    assert_int_equal(rk.credits_to_rank[0], 0);
    rk_complete();
    assert_int_equal(rk_turn(f, 1), 1);
    rk_complete();
    rk_turn(f, 1);
    rk_complete();
    assert_int_equal(check_sent(), n);
    assert_int_equal(f->r->c.msgs, n);
    assert_int_equal(rk.credits_to_rank[0], 1);
}

/* A peer's credit window: past it, bundles toward the peer wait (in
 * order) and then the sender is held; credit from the peer — only from
 * the peer, and never past the window — lets them go. */
static void test_peer_credits(void **state)
{
    rk_fix_t *f = *state;
    peer_t *p = &f->r->peers[1];
    const uint32_t nb = OC_ROUTER_PEER_WINDOW + 2;
    oc_am_credit_t m = {OC_AM_CREDIT_MAGIC, 1};
    uint64_t v;
    size_t len;

    rk.peer_withholds = 1; /* the test returns the peer's credit */
    for (uint32_t b = 0; b < nb; b++) {
        v = val(0, 5, want[0][5]++);
        feed_free(f, rk_tok(0), rk_fixed(0, 5, 1, &v, 8, &len), &len);
    }
    assert_int_equal(rk_turn(f, 1), nb - 1);
    assert_int_equal(rk.bundles_to_peer, OC_ROUTER_PEER_WINDOW);
    assert_int_equal(p->credits, 0);
    assert_int_equal(p->waiting, 1);             /* built, waits for credit */
    assert_int_equal(f->r->rx.count, 1);         /* its sender held */
    assert_int_equal(rk.credits_to_rank[0], nb - 1);
    assert_int_equal(f->r->peers[1].c.bundles_out, OC_ROUTER_PEER_WINDOW + 1);

    /* credit from a rank's token, or without the magic: not credit */
    oc__router_credit_recv(f->r, rk_tok(0), &m, sizeof(m));
    m.magic = 0;
    oc__router_credit_recv(f->r, RK_PEER_RECV, &m, sizeof(m));
    m.magic = OC_AM_CREDIT_MAGIC;
    oc__router_credit_recv(f->r, RK_PEER_RECV, &m, sizeof(m) - 1);
    assert_int_equal(p->credits, 0);
    assert_int_equal(rk.bundles_to_peer, OC_ROUTER_PEER_WINDOW);

    oc__router_credit_recv(f->r, RK_PEER_RECV, &m, sizeof(m));
    assert_int_equal(rk.bundles_to_peer, OC_ROUTER_PEER_WINDOW + 1);
    assert_int_equal(p->waiting, 0);
    assert_int_equal(rk_turn(f, 1), 1); /* the sender goes on */
    assert_int_equal(p->waiting, 1);    /* (no credit for it yet) */
    m.credits = 1000;
    oc__router_credit_recv(f->r, RK_PEER_RECV, &m, sizeof(m));
    assert_int_equal(rk.bundles_to_peer, nb);
    assert_int_equal(p->credits, OC_ROUTER_PEER_WINDOW - 1); /* capped */
    assert_int_equal(check_sent(), nb);
    assert_int_equal(rk.credits_to_rank[0], nb);
}

/* A peer's bundles: routed to the local ranks when the link from the
 * peer is on each message's path, and credited back to the peer; a
 * message it may not carry, a stream, or a job still unknown here after
 * the wait: refused, counted, credited back all the same. */
static void test_peer_bundles(void **state)
{
    rk_fix_t *f = *state;
    uint32_t src[3] = {5, 6, 4}, dst[3] = {2, 0, 2};
    uint64_t vals[3];
    uint8_t *b;
    size_t len;

    for (uint32_t k = 0; k < 3; k++)
        vals[k] = val(src[k], dst[k], want[src[k]][dst[k]]++);
    feed_free(f, RK_PEER_RECV, rk_mixed(RK_JOB, 3, src, dst, vals, &len), &len);
    rk_turn(f, 1);
    assert_int_equal(check_sent(), 3);
    assert_int_equal(rk.credits_to_peer, 1);
    assert_int_equal(f->r->peers[1].c.msgs_in, 3);

    src[1] = 1; /* a rank of this node, from the peer */
    feed_free(f, RK_PEER_RECV, rk_mixed(RK_JOB, 3, src, dst, vals, &len), &len);
    src[1] = 6;
    dst[1] = 7; /* a rank of the peer's own node */
    feed_free(f, RK_PEER_RECV, rk_mixed(RK_JOB, 3, src, dst, vals, &len), &len);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_RANK], 2);
    dst[1] = 0;
    b = rk_col(5, 3, dst, vals, 8, &len);
    feed_free(f, RK_PEER_RECV, b, &len);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_FLAGS], 1);
    assert_int_equal(rk.credits_to_peer, 4);

    /* a job this node has not heard of: held a while, then refused */
    feed_free(f, RK_PEER_RECV, rk_mixed(RK_JOB + 1, 3, src, dst, vals, &len),
              &len);
    assert_int_equal(rk_turn(f, 1), 0);
    assert_int_equal(f->r->rx.count, 1);
    oc__eng_ring_at(&f->r->rx, 0)->t_arrival -= OC_ROUTER_UNKNOWN_JOB_WAIT_US;
    assert_int_equal(rk_turn(f, 1), 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_JOB], 1);
    assert_int_equal(f->r->c.rejects, 4);
    assert_int_equal(rk.credits_to_peer, 5);
    assert_int_equal(check_sent(), 3); /* nothing of the refused */
}

/* Toward the peer, bundles leave in runs (rpeer.c): the local ranks'
 * 8-byte items for the peer's ranks, interleaved, cost 8 bytes each
 * between the nodes plus a run header per (source, destination) and
 * bundle, not 16; every item arrives once, in order per pair, also
 * across the compactions of a full buffer. */
static void test_peer_runs(void **state)
{
    rk_fix_t *f = *state;
    uint32_t dst[60], seed = 7, total = 0;
    uint64_t vals[60];
    size_t len;

    for (int round = 0; round < 8; round++)
        for (uint32_t src = 0; src < 2; src++) {
            for (uint32_t k = 0; k < 60; k++) {
                dst[k] = RK_LOCAL + lcg(&seed) % 2; /* ranks 4, 5 */
                vals[k] = val(src, dst[k], want[src][dst[k]]++);
            }
            feed_free(f, rk_tok(src), rk_col(src, 60, dst, vals, 8, &len),
                      &len);
            total += 60;
            rk_turn(f, 0);
        }
    rk_turn(f, 1);
    assert_int_equal(check_sent(), total);
    assert_true(rk.bundles_to_peer > 0);
    assert_int_equal(rk.runs_bundles, rk.bundles_to_peer);
    assert_int_equal(f->r->peers[1].c.msgs_out, total);
    /* 4 pairs: at most 4 run headers and the bundle header a bundle */
    assert_true(f->r->peers[1].c.bytes_out <=
                8ull * total + (uint64_t)rk.bundles_to_peer *
                                   (OC_WIRE_HDR_LEN + 4 * OC_WIRE_RUN_HDR_LEN));
    /* and the bundles are full, not cut short by the packing: each of
     * 256 bytes holds more items than a mixed one could (216 / 16) */
    assert_true(total / rk.bundles_to_peer > (RK_BUNDLE - OC_WIRE_HDR_LEN) / 16);
}

/* Empty messages toward a peer, among 8-byte ones, across compactions:
 * each a run of its own in a bundle the peer accepts (the fake transport
 * validates every bundle), none lost; the 8-byte ones in order per pair. */
static void test_peer_runs_empty(void **state)
{
    rk_fix_t *f = *state;
    uint32_t dst[40], seed = 3, total = 0, zeros = 0, empties = 0, n8 = 0;
    uint32_t next[RK_RANKS] = {0};
    uint64_t vals[40];
    size_t len;

    for (int round = 0; round < 12; round++) {
        for (uint32_t k = 0; k < 40; k++) {
            dst[k] = RK_LOCAL + lcg(&seed) % 2;
            vals[k] = val(0, dst[k], want[0][dst[k]]++);
        }
        feed_free(f, rk_tok(0), rk_col(0, 40, dst, vals, 8, &len), &len);
        total += 40;
        {   /* rank 1's row stream of three empty messages */
            uint64_t b[(OC_WIRE_HDR_LEN + 3 * OC_WIRE_MSG_HDR_LEN) / 8];
            uint8_t *p = (uint8_t *)b + OC_WIRE_HDR_LEN;
            oc_wire_hdr_t h;
            for (uint32_t k = 0; k < 3; k++)
                p = oc__wire_put_msg(p, RK_LOCAL + k % 2, 1, NULL, 0);
            memset(&h, 0, sizeof(h));
            h.flags = OC_WIRE_F_STREAM;
            h.count = 3;
            h.length = sizeof(b);
            h.job = RK_JOB;
            h.src = 1;
            h.dst = OC_WIRE_RANK_NONE;
            oc__wire_hdr_write(b, &h);
            rk_feed(f, rk_tok(1), b, sizeof(b));
        }
        total += 3;
        zeros += 3;
        rk_turn(f, 0);
    }
    rk_turn(f, 1);
    assert_int_equal(f->r->peers[1].c.msgs_out, total);
    assert_int_equal(rk.nrecs, total);
    for (uint32_t i = 0; i < rk.nrecs; i++) {
        const rk_rec_t *x = &rk.recs[i];
        assert_true(x->peer);
        if (x->len == 0) {
            assert_int_equal(x->src, 1);
            empties++;
        } else {
            assert_int_equal(x->v, val(0, x->dst, next[x->dst]++));
            n8++;
        }
    }
    assert_int_equal(empties, zeros);
    assert_int_equal(n8, total - zeros);
    assert_true(rk.runs_bundles > 0);
}

/* A peer's RUNS bundle: validated, routed to the local ranks in order,
 * credited; one whose run claims more items than it carries, or a message
 * its link may not carry: refused, counted, credited all the same. */
static void test_peer_runs_in(void **state)
{
    enum { N = 8 };
    rk_fix_t *f = *state;
    uint32_t src[N] = {5, 5, 6, 5, 6, 5, 5, 5}, dst[N] = {2, 2, 0, 2, 0, 1, 2, 2};
    uint64_t vals[N];
    static uint64_t scratch[4096];
    const oc_wire_check_t chk = {RK_JOB, RK_RANKS, OC_WIRE_RANK_NONE,
                                 OC_WIRE_RANK_NONE, 0};
    uint8_t *b, *out;
    size_t len, n;
    oc_wire_hdr_t h;

    for (uint32_t k = 0; k < N; k++)
        vals[k] = val(src[k], dst[k], want[src[k]][dst[k]]++);
    b = rk_mixed(RK_JOB, N, src, dst, vals, &len);
    out = calloc(1, len);
    assert_non_null(out);
    n = oc__wire_runs_pack(b + OC_WIRE_HDR_LEN, 0, len - OC_WIRE_HDR_LEN,
                           out + OC_WIRE_HDR_LEN, len - OC_WIRE_HDR_LEN,
                           scratch, sizeof(scratch));
    /* 3 runs: 3 x 16 + 8 x 8 bytes, not 8 x 16 */
    assert_int_equal(n, 3 * OC_WIRE_RUN_HDR_LEN + N * 8);
    memcpy(out, b, OC_WIRE_HDR_LEN);
    oc__wire_hdr_set_runs(out, (uint32_t)(OC_WIRE_HDR_LEN + n));
    free(b);
    len = OC_WIRE_HDR_LEN + n;
    assert_int_equal(oc__wire_validate(out, len, &chk, &h), OC_OK);
    rk_feed(f, RK_PEER_RECV, out, len);
    rk_turn(f, 1);
    assert_int_equal(check_sent(), N);
    assert_int_equal(rk.credits_to_peer, 1);
    assert_int_equal(f->r->peers[1].c.msgs_in, N);

    /* the first run claims one item more than it has */
    oc__store_le32(out + OC_WIRE_HDR_LEN + 8,
                   oc__load_le32(out + OC_WIRE_HDR_LEN + 8) + 1);
    oc__store_le32(out + 8, N + 1);
    rk_feed(f, RK_PEER_RECV, out, len);
    oc__store_le32(out + OC_WIRE_HDR_LEN + 8,
                   oc__load_le32(out + OC_WIRE_HDR_LEN + 8) - 1);
    oc__store_le32(out + 8, N);
    /* a run from a rank of this node */
    oc__store_le64(out + OC_WIRE_HDR_LEN, oc__wire_msg_hdr(2, 1, 8));
    rk_feed(f, RK_PEER_RECV, out, len);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_LENGTH], 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_RANK], 1);
    assert_int_equal(rk.credits_to_peer, 3);
    assert_int_equal(check_sent(), N); /* nothing of the refused */
    free(out);
}

/* Credit the transport cannot send now is owed, not lost: sent whole at
 * a later turn — a rank's, and a peer's. */
static void test_credit_retry(void **state)
{
    rk_fix_t *f = *state;
    uint32_t src[1] = {5}, dst[1] = {1};
    uint64_t v;
    size_t len;

    for (int peer = 0; peer < 2; peer++) {
        uint32_t *got = peer ? &rk.credits_to_peer : &rk.credits_to_rank[0];
        rk.fail_small = 1;
        if (peer) {
            v = val(5, 1, want[5][1]++);
            feed_free(f, RK_PEER_RECV, rk_mixed(RK_JOB, 1, src, dst, &v, &len),
                      &len);
        } else {
            v = val(0, 1, want[0][1]++);
            feed_free(f, rk_tok(0), rk_fixed(0, 1, 1, &v, 8, &len), &len);
        }
        assert_int_equal(rk_turn(f, 1), 1);
        assert_int_equal(*got, 0);
        assert_int_equal(f->r->credits_owed, 1);
        rk_turn(f, 1);
        assert_int_equal(*got, 0);
        rk.fail_small = 0;
        rk_turn(f, 1);
        assert_int_equal(*got, 1);
        assert_int_equal(f->r->credits_owed, 0);
        rk_turn(f, 1);
        assert_int_equal(*got, 1); /* once */
    }
    assert_int_equal(check_sent(), 2);
}

/* A rank on shared memory: its column stream is read in place, where the
 * rank can still rewrite it, so each destination is checked as it is
 * read — one out of range stops the bundle there, refused and counted,
 * the items before it routed, none after; its row stream is copied and
 * validated whole.  What is routed to it lands in its ring, not on UCX. */
static void test_shm_rank(void **state)
{
    rk_fix_t *f = *state;
    uint32_t dst[6] = {1, 5, 2, RK_RANKS, 0, 1};
    uint64_t vals[6];
    oc_rshm_t *s;
    oc_shmseg_t seg;
    oc_wire_check_t chk = {RK_JOB, RK_RANKS, 3, OC_WIRE_RANK_NONE, 0};
    oc_wire_hdr_t h;
    uint8_t a[8], *b, *slot;
    size_t len;
    uint32_t slen;
    int fd;

    assert_int_equal(oc__rshm_create(4, RK_BUNDLE, 1, &s, &fd), OC_OK);
    assert_int_equal(oc__shmseg_map(fd, &seg), OC_OK);
    close(fd);
    assert_int_equal(oc__router_del_rank(f->r, RK_JOB, 3), OC_OK);
    rk_addr(0, 3, a);
    assert_int_equal(oc__router_add_rank(f->r, rk_tok(3), RK_JOB, 3, a, 8, 0,
                                        s, 1), OC_OK);
    oc__rshm_put(s); /* the router's reference stays */
    oc__router_apply_commands(f->r);

    for (uint32_t k = 0; k < 6; k++)
        vals[k] = dst[k] < RK_RANKS ? val(3, dst[k], k < 3 ? want[3][dst[k]]++
                                                         : 99)
                                    : 0;
    b = rk_col(3, 6, dst, vals, 8, &len);
    assert_non_null(slot = oc__spsc_reserve(&seg.up));
    memcpy(slot, b, len);
    oc__spsc_publish(&seg.up, (uint32_t)len);
    free(b);
    assert_int_equal(oc__router_shm_poll(f->r), 1);
    assert_int_equal(rk_turn(f, 1), 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_RANK], 1);
    assert_int_equal(check_sent(), 3); /* 1, 5, 2: not 0 and 1 after */
    assert_int_equal(f->r->c.msgs, 3);
    assert_int_equal(oc__spsc_in_use(&seg.up), 0); /* the slot back */

    b = rk_row(3, 6, dst, vals, 8, &len);
    assert_non_null(slot = oc__spsc_reserve(&seg.up));
    memcpy(slot, b, len);
    oc__spsc_publish(&seg.up, (uint32_t)len);
    free(b);
    assert_int_equal(oc__router_shm_poll(f->r), 1);
    assert_int_equal(rk_turn(f, 1), 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_RANK], 2);
    assert_int_equal(check_sent(), 3); /* none of it */
    assert_int_equal(oc__spsc_in_use(&seg.up), 0);

    /* rank 0 to rank 3: into its ring */
    dst[0] = 3;
    vals[0] = 0x34;
    b = rk_col(0, 1, dst, vals, 8, &len);
    rk_feed(f, rk_tok(0), b, len);
    free(b);
    rk_turn(f, 1);
    assert_int_equal(rk.bundles_to_rank[3], 0);
    assert_non_null(slot = oc__spsc_peek(&seg.down[0], &slen));
    assert_int_equal(oc__wire_validate(slot, slen, &chk, &h), OC_OK);
    assert_int_equal(h.count, 1);
    assert_int_equal(oc__load_le64(slot + OC_WIRE_HDR_LEN), 0x34);
    oc__spsc_release(&seg.down[0]);
    assert_int_equal(f->r->c.shm_bundles_out, 1);
    oc__shmseg_unmap(&seg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scatter, setup, teardown),
        cmocka_unit_test(test_fast_equals_general),
        cmocka_unit_test_setup_teardown(test_forward_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srccol_outlet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backpressure_rank, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backpressure_stream, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_peer_credits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_bundles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_runs_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_runs_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_credit_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shm_rank, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
