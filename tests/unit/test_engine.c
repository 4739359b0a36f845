/*
 * test_engine.c — the aggregation engine (src/engine) without a transport:
 * a hand-off that keeps every bundle it is given, so each test can read
 * back exactly what the engine built (validated by src/wire, as a receiver
 * would), and the flush reasons, back-pressure, reserve and ring that
 * runtime and agent rely on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"

#define BSIZE 512
#define NR    16

typedef struct {
    oc_eng_buf_t *b[64];
    uint32_t      len[64];
    oc_eng_out_t *from[64];
    int           n;
    int           keep;   /* hold the buffers (else give them back) */
    oc_status_t   ret;
} sink_t;

static oc_status_t handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                           uint32_t len, uint32_t count)
{
    sink_t *s = arg;
    (void)count;
    assert_true(s->n < 64);
    s->len[s->n] = len;
    s->from[s->n] = o;
    if (s->keep) {
        s->b[s->n] = b; /* the pool drains */
    } else {
        /* keep a copy, give the buffer back as a completed send would */
        uint8_t *copy = malloc(len);
        assert_non_null(copy);
        memcpy(copy, b->data, len);
        oc__eng_buf_put(b->eng, b);
        s->b[s->n] = (oc_eng_buf_t *)(void *)copy;
    }
    s->n++;
    return s->ret;
}

static const uint8_t *bundle(sink_t *s, int k)
{
    return s->keep ? s->b[k]->data : (const uint8_t *)s->b[k];
}

static void sink_free(sink_t *s)
{
    if (!s->keep)
        for (int k = 0; k < s->n; k++)
            free(s->b[k]);
    s->n = 0;
}

static oc_eng_t *mk(sink_t *s, uint64_t nbufs, bool reserve)
{
    oc_eng_params_t p;
    oc_eng_t *e = NULL;
    memset(&p, 0, sizeof(p));
    p.bundle_size = BSIZE;
    p.nbufs = nbufs;
    p.flush_timeout_us = 1000000;
    p.src_hop = 7;
    p.dirty_cap = 1;
    p.reserve = reserve;
    p.handoff = handoff;
    p.arg = s;
    p.name = "test";
    assert_int_equal(oc__eng_create(&p, &e), OC_OK);
    return e;
}

static oc_wire_hdr_t check(const uint8_t *b, uint32_t len, uint32_t dst_chk)
{
    const oc_wire_check_t chk = {3, NR, dst_chk, OC_WIRE_RANK_NONE, 0};
    oc_wire_hdr_t h;
    assert_int_equal(oc__wire_validate(b, len, &chk, &h), OC_OK);
    return h;
}

static void test_params(void **state)
{
    oc_eng_params_t p;
    oc_eng_t *e = NULL;
    (void)state;
    memset(&p, 0, sizeof(p));
    p.bundle_size = BSIZE;
    p.nbufs = 1;
    assert_int_equal(oc__eng_create(&p, &e), OC_ERR_INVALID_PARAM); /* no handoff */
    p.handoff = handoff;
    p.bundle_size = 100;
    assert_int_equal(oc__eng_create(&p, &e), OC_ERR_INVALID_PARAM);
    assert_null(e);
    oc__eng_destroy(NULL);
}

/* Same length, source and destination: fixed mode, no message headers. */
static void test_fixed(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 4, false);
    oc_eng_out_t o;
    (void)state;
    oc__eng_out_init(&o);
    o.job = 3;
    for (uint64_t v = 0; v < 10; v++)
        assert_int_equal(oc__eng_put(e, &o, 5, 2, &v, 8), OC_OK);
    assert_int_equal(oc__eng_out_count(&o), 10);
    assert_int_equal(e->ndirty, 1);
    assert_int_equal(oc__eng_flush_dirty(e, OC_ENG_FLUSH_EXPLICIT, 0), OC_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(e->ndirty, 0);
    oc_wire_hdr_t h = check(bundle(&s, 0), s.len[0], 5);
    assert_int_equal(h.flags, OC_WIRE_F_FIXED);
    assert_int_equal(h.count, 10);
    assert_int_equal(h.src, 2);
    assert_int_equal(h.dst, 5);
    assert_int_equal(h.src_hop, 7);
    assert_int_equal(s.len[0], OC_WIRE_HDR_LEN + 80);
    for (uint64_t v = 0; v < 10; v++)
        assert_int_equal(oc__load_le64(bundle(&s, 0) + OC_WIRE_HDR_LEN + 8 * v), v);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_EXPLICIT], 1);
    assert_int_equal(e->c.bundles, 1);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* Another length: rewritten in place as mixed, every message kept. */
static void test_to_mixed(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 4, false);
    oc_eng_out_t o;
    uint8_t big[12];
    (void)state;
    oc__eng_out_init(&o);
    o.job = 3;
    for (uint64_t v = 1; v <= 3; v++)
        assert_int_equal(oc__eng_put(e, &o, 4, 1, &v, 8), OC_OK);
    memset(big, 0xee, sizeof big);
    assert_int_equal(oc__eng_put(e, &o, 4, 1, big, sizeof big), OC_OK);
    assert_int_equal(o.item_len, OC_ENG_NO_ITEM);
    assert_int_equal(oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT), OC_OK);
    oc_wire_hdr_t h = check(bundle(&s, 0), s.len[0], 4);
    assert_int_equal(h.flags, 0);
    assert_int_equal(h.count, 4);
    oc_wire_iter_t it;
    oc_wire_msg_t m = {0, 0, 0, NULL};
    oc__wire_iter_init(&it, bundle(&s, 0), &h);
    for (uint64_t v = 1; v <= 3; v++) {
        assert_true(oc__wire_iter_next(&it, &m));
        assert_int_equal(m.len, 8);
        assert_int_equal(m.src, 1);
        assert_int_equal(oc__load_le64(m.payload), v);
    }
    assert_true(oc__wire_iter_next(&it, &m));
    assert_int_equal(m.len, 12);
    assert_memory_equal(m.payload, big, 12);
    assert_false(oc__wire_iter_next(&it, &m));
    sink_free(&s);
    oc__eng_destroy(e);
}

/* An agent's outlet: another source in a buffer a quarter full goes out
 * as it is (FULL), the next source starts a fixed buffer of its own;
 * below a quarter it turns mixed. */
static void test_source_change(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 4, false);
    oc_eng_out_t o;
    uint64_t v = 9;
    (void)state;
    oc__eng_out_init(&o);
    o.job = 3;
    for (int k = 0; k < 20; k++) /* 40 + 160 bytes >= 512 / 4 */
        assert_int_equal(oc__eng_put(e, &o, 6, 1, &v, 8), OC_OK);
    assert_int_equal(oc__eng_put(e, &o, 6, 2, &v, 8), OC_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_FULL], 1);
    assert_int_equal(check(bundle(&s, 0), s.len[0], 6).count, 20);
    assert_int_equal(o.item_len, 8);
    assert_int_equal(o.fsrc, 2);
    /* one item of source 2, then source 3: mixed now */
    assert_int_equal(oc__eng_put(e, &o, 6, 3, &v, 8), OC_OK);
    assert_int_equal(o.item_len, OC_ENG_NO_ITEM);
    assert_int_equal(oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT), OC_OK);
    oc_wire_hdr_t h = check(bundle(&s, 1), s.len[1], 6);
    assert_int_equal(h.count, 2);
    assert_int_equal(h.flags, 0);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* Full buffers flush FULL; an empty pool is back-pressure. */
static void test_full_and_backpressure(void **state)
{
    sink_t s = {0};
    oc_eng_t *e;
    oc_eng_out_t o;
    uint64_t v = 1;
    int k;
    (void)state;
    s.keep = 1; /* nobody gives buffers back: the pool drains */
    e = mk(&s, 2, false);
    oc__eng_out_init(&o);
    o.job = 3;
    for (k = 0; k < 1000; k++) {
        oc_status_t st = oc__eng_put(e, &o, 1, 0, &v, 8);
        if (st != OC_OK) {
            assert_int_equal(st, OC_ERR_NO_RESOURCE);
            break;
        }
    }
    /* two buffers of (512 - 40) / 8 = 59 items */
    assert_int_equal(k, 118);
    assert_int_equal(s.n, 2);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_FULL], 2);
    assert_int_equal(check(bundle(&s, 0), s.len[0], 1).count, 59);
    /* a buffer back: the next put goes through */
    oc__eng_buf_put(e, s.b[0]);
    assert_int_equal(oc__eng_put(e, &o, 1, 0, &v, 8), OC_OK);
    oc__eng_destroy(e);
}

/* Inside a handler the reserve serves when the pool is empty. */
static void test_reserve(void **state)
{
    sink_t s = {0};
    oc_eng_t *e;
    oc_eng_buf_t *a, *b;
    (void)state;
    e = mk(&s, 1, true);
    a = oc__eng_buf_get(e);
    assert_non_null(a);
    assert_null(oc__eng_buf_get(e)); /* not in a handler */
    e->in_handler = 1;
    b = oc__eng_buf_get(e);
    assert_non_null(b);
    assert_true(b->reserve);
    assert_int_equal(e->c.reserve_buffers, 1);
    oc__eng_buf_put(e, b);
    oc__eng_buf_put(e, a);
    oc__eng_destroy(e); /* frees the reserve (ASan checks) */
}

/* TIMEOUT keeps young buffers, IDLE sends everything. */
static void test_policy(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 8, false);
    oc_eng_out_t o[3];
    uint64_t v = 5;
    (void)state;
    for (int k = 0; k < 3; k++) {
        oc__eng_out_init(&o[k]);
        o[k].job = 3;
        assert_int_equal(oc__eng_put(e, &o[k], (uint32_t)k, 0, &v, 8), OC_OK);
    }
    assert_int_equal(e->ndirty, 3); /* the list grew from 1 */
    assert_int_equal(oc__eng_policy(e, false), OC_OK);
    assert_int_equal(s.n, 0); /* 1 s timeout: nothing yet */
    o[1].t_first -= 2000000;   /* this one waited 2 s */
    assert_int_equal(oc__eng_policy(e, false), OC_OK);
    assert_int_equal(s.n, 1);
    assert_ptr_equal(s.from[0], &o[1]);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_TIMEOUT], 1);
    assert_int_equal(e->ndirty, 2);
    assert_int_equal(oc__eng_policy(e, true), OC_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_IDLE], 2);
    assert_int_equal(e->ndirty, 0);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* While the owner expects more (oc__eng_more), IDLE waits idle_turns idle
 * turns in a row (a busy turn starts the count again); without the hint it
 * flushes at the first idle turn, as before. */
static void test_policy_more(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 8, false);
    oc_eng_out_t o;
    uint64_t v = 5;
    (void)state;
    e->p.idle_turns = 4;
    oc__eng_out_init(&o);
    oc__eng_more(e, 1);
    assert_int_equal(oc__eng_put(e, &o, 1, 0, &v, 8), OC_OK);
    for (int k = 0; k < 3; k++)
        assert_int_equal(oc__eng_policy(e, true), OC_OK);
    assert_int_equal(s.n, 0); /* 3 idle turns: kept */
    assert_int_equal(oc__eng_policy(e, false), OC_OK); /* work: count again */
    for (int k = 0; k < 3; k++)
        assert_int_equal(oc__eng_policy(e, true), OC_OK);
    assert_int_equal(s.n, 0);
    assert_int_equal(oc__eng_policy(e, true), OC_OK); /* the 4th in a row */
    assert_int_equal(s.n, 1);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_IDLE], 1);
    /* a busy turn still flushes what timed out */
    assert_int_equal(oc__eng_put(e, &o, 1, 0, &v, 8), OC_OK);
    o.t_first -= 2000000;
    assert_int_equal(oc__eng_policy(e, false), OC_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_TIMEOUT], 1);
    /* no hint: the first idle turn */
    oc__eng_more(e, 0);
    assert_int_equal(oc__eng_put(e, &o, 1, 0, &v, 8), OC_OK);
    assert_int_equal(oc__eng_policy(e, true), OC_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_IDLE], 2);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* A hand-off error reaches the caller of the flush. */
static void test_handoff_error(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 2, false);
    oc_eng_out_t o;
    uint64_t v = 5;
    (void)state;
    oc__eng_out_init(&o);
    s.ret = OC_ERR_TRANSPORT;
    assert_int_equal(oc__eng_put(e, &o, 1, 0, &v, 8), OC_OK);
    assert_int_equal(oc__eng_flush_dirty(e, OC_ENG_FLUSH_EXPLICIT, 0),
                     OC_ERR_TRANSPORT);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* A stream outlet: mixed, flagged, the rank as header source; only an
 * agent (no single destination) accepts it. */
static void test_stream_outlet(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 2, false);
    oc_eng_out_t o;
    (void)state;
    oc__eng_out_init(&o);
    o.job = 3;
    o.mixed_only = 1;
    o.flags = OC_WIRE_F_STREAM;
    o.src = 9;
    for (uint64_t v = 0; v < 6; v++)
        assert_int_equal(oc__eng_put(e, &o, (uint32_t)v, 9, &v, 8), OC_OK);
    assert_int_equal(oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT), OC_OK);
    oc_wire_hdr_t h = check(bundle(&s, 0), s.len[0], OC_WIRE_RANK_NONE);
    assert_int_equal(h.flags, OC_WIRE_F_STREAM);
    assert_int_equal(h.src, 9);
    assert_int_equal(h.count, 6);
    const oc_wire_check_t at_rank = {3, NR, 1, OC_WIRE_RANK_NONE, 0};
    assert_int_equal(oc__wire_validate(bundle(&s, 0), s.len[0], &at_rank, &h),
                     OC_ERR_WIRE_FLAGS);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* A column-stream outlet: destinations in a column, items after them;
 * a partial buffer is compacted (no gap), a full one fills the bundle, a
 * new length sends the buffer, a zero-length message goes in row layout. */
static void test_column_outlet(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 4, false);
    oc_eng_out_t o;
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t m;
    const uint32_t cap = oc__wire_col_cap(BSIZE, 8);
    uint32_t k = 0;
    (void)state;
    oc__eng_out_init(&o);
    o.job = 3;
    o.mixed_only = 1;
    o.column = 1;
    o.flags = OC_WIRE_F_STREAM;
    o.src = 9;
    /* 5 items: odd count, partial buffer */
    for (uint64_t v = 0; v < 5; v++)
        assert_int_equal(oc__eng_put(e, &o, (uint32_t)(v * 3 % NR), 9, &v, 8),
                         OC_OK);
    assert_int_equal(oc__eng_out_count(&o), 5);
    assert_int_equal(oc__eng_col_room(&o, 8), cap - 5);
    assert_int_equal(oc__eng_col_room(&o, 4), 0);
    assert_int_equal(oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT), OC_OK);
    assert_null(o.dcol);
    assert_int_equal(s.len[0], OC_WIRE_HDR_LEN + 24 + 5 * 8);
    h = check(bundle(&s, 0), s.len[0], OC_WIRE_RANK_NONE);
    assert_int_equal(h.flags, OC_WIRE_F_STREAM | OC_WIRE_F_FIXED);
    assert_int_equal(h.src, 9);
    assert_int_equal(h.item_size, 8);
    oc__wire_iter_init(&it, bundle(&s, 0), &h);
    while (oc__wire_iter_next(&it, &m)) {
        uint64_t v;
        memcpy(&v, m.payload, 8);
        assert_int_equal(v, k);
        assert_int_equal(m.dst, k * 3 % NR);
        k++;
    }
    assert_int_equal(k, 5);
    /* a full buffer: the next item sends it (FULL) with no gap left */
    for (uint64_t v = 0; v <= cap; v++)
        assert_int_equal(oc__eng_put(e, &o, 1, 9, &v, 8), OC_OK);
    assert_int_equal(s.n, 2);
    h = check(bundle(&s, 1), s.len[1], OC_WIRE_RANK_NONE);
    assert_int_equal(h.count, cap);
    assert_int_equal(e->c.flush[OC_ENG_FLUSH_FULL], 1);
    /* another length: the 1-item buffer goes, a 12-byte one opens */
    uint8_t twelve[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    assert_int_equal(oc__eng_put(e, &o, 2, 9, twelve, 12), OC_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(o.item_len, 12);
    /* zero length: the 12-byte buffer goes, a row-layout one takes it and
     * then anything */
    assert_int_equal(oc__eng_put(e, &o, 4, 9, NULL, 0), OC_OK);
    assert_int_equal(s.n, 4);
    assert_null(o.dcol);
    assert_int_equal(oc__eng_put(e, &o, 5, 9, twelve, 12), OC_OK);
    assert_int_equal(oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT), OC_OK);
    h = check(bundle(&s, 4), s.len[4], OC_WIRE_RANK_NONE);
    assert_int_equal(h.flags, OC_WIRE_F_STREAM);
    assert_int_equal(h.count, 2);
    h = check(bundle(&s, 3), s.len[3], OC_WIRE_RANK_NONE);
    assert_int_equal(h.item_size, 12);
    assert_int_equal(h.count, 1);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* Retiring an outlet flushes it and takes it off the dirty list. */
static void test_retire(void **state)
{
    sink_t s = {0};
    oc_eng_t *e = mk(&s, 2, false);
    oc_eng_out_t o;
    uint64_t v = 5;
    (void)state;
    oc__eng_out_init(&o);
    assert_int_equal(oc__eng_put(e, &o, 1, 0, &v, 8), OC_OK);
    oc__eng_out_retire(e, &o);
    assert_int_equal(s.n, 1);
    assert_int_equal(e->ndirty, 0);
    assert_int_equal(o.listed, 0);
    assert_null(o.buf);
    sink_free(&s);
    oc__eng_destroy(e);
}

/* The ring keeps order across growth and compaction. */
static void test_ring(void **state)
{
    oc_eng_ring_t r;
    (void)state;
    assert_int_equal(oc__eng_ring_init(&r, NULL, 3), OC_OK);
    assert_int_equal(r.cap, 16);
    for (uint32_t k = 0; k < 10; k++) /* wrap the head around first */
        oc__eng_ring_push(&r)->len = k;
    for (uint32_t k = 0; k < 10; k++) {
        assert_int_equal(oc__eng_ring_at(&r, 0)->len, k);
        oc__eng_ring_pop(&r);
    }
    for (uint32_t k = 0; k < 100; k++) {
        oc_eng_rx_t *x = oc__eng_ring_push(&r);
        assert_non_null(x);
        assert_int_equal(x->done, 0);
        x->len = k;
    }
    assert_int_equal(r.count, 100);
    assert_int_equal(r.cap, 128);
    for (uint32_t k = 0; k < 100; k++)
        assert_int_equal(oc__eng_ring_at(&r, k)->len, k);
    /* a scan of the first 50 kept the even ones; 50..99 arrived later */
    uint32_t kept = 0;
    for (uint32_t k = 0; k < 50; k++)
        if (k % 2 == 0)
            *oc__eng_ring_at(&r, kept++) = *oc__eng_ring_at(&r, k);
    oc__eng_ring_compact(&r, 50, kept);
    assert_int_equal(r.count, 75);
    for (uint32_t k = 0; k < 25; k++)
        assert_int_equal(oc__eng_ring_at(&r, k)->len, 2 * k);
    for (uint32_t k = 25; k < 75; k++)
        assert_int_equal(oc__eng_ring_at(&r, k)->len, k + 25);
    oc__eng_ring_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_to_mixed),
        cmocka_unit_test(test_source_change),
        cmocka_unit_test(test_full_and_backpressure),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_policy_more),
        cmocka_unit_test(test_handoff_error),
        cmocka_unit_test(test_stream_outlet),
        cmocka_unit_test(test_column_outlet),
        cmocka_unit_test(test_retire),
        cmocka_unit_test(test_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
