/*
 * test_transport.c — the UCX wrapper (src/transport) between two workers
 * of one process over UCX_TLS=self,sm (set by the meson test): bundles and
 * small messages with their tokens and the pool their copies come from,
 * persistent receive data kept until
 * released, handler ids checked, the wake-up fd; and the engine's send
 * (src/engine: oc__eng_send) with its per-outlet back-pressure on a real
 * transport.  Waits are bounded by a progress budget, never by sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "transport/transport.h"
#include "wire/am.h"
#include "transport/transport_int.h" /* whitebox: the transport book */

typedef struct {
    int      n;
    uint64_t token[256];
    size_t   len[256];
    void    *data[256];
    uint8_t  first[256];
} rx_log_t;

static void on_recv(void *arg, uint64_t token, void *data, size_t len)
{
    rx_log_t *l = arg;
    assert_true(l->n < 256);
    l->token[l->n] = token;
    l->len[l->n] = len;
    l->data[l->n] = data;
    l->first[l->n] = len ? *(uint8_t *)data : 0;
    l->n++;
}

typedef struct {
    oc_tr_context_t *ctx;
    oc_tr_worker_t  *a, *b;
    oc_tr_ep_t      *ab;
    rx_log_t         got;
} pair_t;

static int setup(void **state)
{
    pair_t *p = calloc(1, sizeof(*p));
    const void *addr;
    size_t len;
    assert_non_null(p);
    assert_int_equal(oc__tr_context_create_wakeup(&p->ctx), OC_OK);
    assert_int_equal(oc__tr_worker_create(p->ctx, &p->a), OC_OK);
    assert_int_equal(oc__tr_worker_create(p->ctx, &p->b), OC_OK);
    assert_int_equal(oc__tr_worker_address(p->b, &addr, &len), OC_OK);
    assert_true(len > 0);
    assert_int_equal(oc__tr_set_handler(p->b, OC_AM_BUNDLE, on_recv, &p->got, 1),
                     OC_OK);
    assert_int_equal(oc__tr_ep_create(p->a, addr, 0, &p->ab), OC_OK);
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    pair_t *p = *state;
    oc__tr_ep_destroy(p->a, p->ab);
    oc__tr_worker_destroy(p->a);
    oc__tr_worker_destroy(p->b);
    oc__tr_context_destroy(p->ctx);
    free(p);
    return 0;
}

/* Progress both workers until @p n messages arrived (bounded). */
static void wait_for(pair_t *p, int n)
{
    for (long k = 0; k < 10000000 && p->got.n < n; k++) {
        oc__tr_progress(p->a);
        oc__tr_progress(p->b);
    }
    assert_int_equal(p->got.n, n);
}

typedef struct {
    oc_tr_op_t op;
    int        done;
    oc_status_t st;
} op_t;

static void op_done(oc_tr_op_t *op, oc_status_t st)
{
    op_t *o = (op_t *)op;
    o->done = 1;
    o->st = st;
}

static void test_bundle_and_token(void **state)
{
    pair_t *p = *state;
    uint8_t *buf = malloc(8000);
    op_t op = {{op_done, 0x1234abcdu}, 0, OC_OK};
    oc_status_t st;

    memset(buf, 0x5a, 8000);
    st = oc__tr_send(p->ab, OC_AM_BUNDLE, buf, 8000, &op.op);
    assert_true(st == OC_OK || st == OC_INPROGRESS);
    wait_for(p, 1);
    for (long k = 0; st == OC_INPROGRESS && !op.done && k < 1000000; k++)
        oc__tr_progress(p->a);
    if (st == OC_INPROGRESS) {
        assert_true(op.done);
        assert_int_equal(op.st, OC_OK);
    }
    assert_int_equal(p->got.token[0], 0x1234abcdu);
    assert_int_equal(p->got.len[0], 8000);
    /* persistent: still readable after more progress, until released */
    oc__tr_progress(p->b);
    assert_memory_equal(p->got.data[0], buf, 8000);
    oc__tr_release(p->b, p->got.data[0]);
    free(buf);
}

static void test_small_and_order(void **state)
{
    pair_t *p = *state;
    for (uint8_t k = 0; k < 50; k++)
        assert_int_equal(oc__tr_send_small(p->ab, OC_AM_BUNDLE, 77, &k, 1),
                         OC_OK);
    wait_for(p, 50);
    for (int k = 0; k < 50; k++) {
        assert_int_equal(p->got.token[k], 77);
        assert_int_equal(p->got.len[k], 1);
        assert_int_equal(p->got.first[k], k); /* in order on one endpoint */
        oc__tr_release(p->b, p->got.data[k]);
    }
    /* more than OC_TR_SMALL_MAX bytes is not a small message; that many is */
    static uint8_t big[OC_TR_SMALL_MAX + 1];
    assert_int_not_equal(oc__tr_send_small(p->ab, OC_AM_BUNDLE, 1, big,
                                           sizeof(big)), OC_OK);
    assert_int_equal(oc__tr_send_small(p->ab, OC_AM_BUNDLE, 78, big,
                                       OC_TR_SMALL_MAX), OC_OK);
    wait_for(p, 51);
    assert_int_equal(p->got.token[50], 78);
    assert_int_equal(p->got.len[50], OC_TR_SMALL_MAX);
    oc__tr_release(p->b, p->got.data[50]);
}

typedef struct {
    long     n;
    uint64_t bytes;
    int      bad;
} rx_count_t;

static void on_count(void *arg, uint64_t token, void *data, size_t len)
{
    rx_count_t *c = arg;
    /* every copy carries its own sequence number in its first byte */
    if (token != 79 || len == 0 || *(uint8_t *)data != (uint8_t)c->n)
        c->bad++;
    c->n++;
    c->bytes += len;
}

/* The copies come from the sending worker's pool: thousands of small
 * messages of every size class, a few in flight at a time, allocate no
 * more than the pool keeps (a malloc per message before the pool), and
 * each arrives intact and in order. */
static void test_small_pool(void **state)
{
    pair_t *p = *state;
    enum { N = 4000 };
    static uint8_t msg[OC_TR_SMALL_MAX];
    rx_count_t c = {0};
    uint64_t want = 0;

    assert_int_equal(oc__tr_set_handler(p->b, OC_AM_CONTROL, on_count, &c,
                                        0), OC_OK);
    for (long k = 0; k < N; k++) {
        size_t len = k % 3 == 0 ? 8 : k % 3 == 1 ? 200 : 1 + k % OC_TR_SMALL_MAX;
        memset(msg, (uint8_t)k, len);
        assert_int_equal(oc__tr_send_small(p->ab, OC_AM_CONTROL, 79, msg,
                                           len), OC_OK);
        want += len;
        for (long j = 0; j < 100000 && c.n < k - 8; j++) {
            oc__tr_progress(p->a);
            oc__tr_progress(p->b);
        }
    }
    for (long j = 0; j < 10000000 && c.n < N; j++) {
        oc__tr_progress(p->a);
        oc__tr_progress(p->b);
    }
    assert_int_equal(c.n, N);
    assert_int_equal(c.bad, 0);
    assert_int_equal(c.bytes, want);
    uint64_t allocs = oc__tr_worker_small_allocs(p->a);
    assert_true(allocs >= 1);
    assert_true(allocs <= 2 * 16); /* at most ~9 in flight per class */
    assert_int_equal(oc__tr_worker_small_gets(p->a), N); /* one a send */
}

static void test_handler_ids(void **state)
{
    pair_t *p = *state;
    assert_int_not_equal(oc__tr_set_handler(p->b, 1000, on_recv, NULL, 0),
                         OC_OK);
    /* a wake-up context has an event fd to sleep on */
    assert_true(oc__tr_worker_efd(p->b) >= 0);
}

static oc_status_t eng_handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                               uint32_t len, uint32_t count)
{
    pair_t *p = arg;
    (void)count;
    return oc__eng_send(b->eng, o, p->ab, 99, b, len);
}

/* The engine over a real transport: bundles arrive whole and valid; the
 * outlet blocks at max_inflight and unblocks as sends complete. */
static void test_engine_send(void **state)
{
    pair_t *p = *state;
    oc_eng_params_t ep;
    oc_eng_t *e = NULL;
    oc_eng_out_t o;

    memset(&ep, 0, sizeof(ep));
    ep.bundle_size = 4096;
    ep.nbufs = 8;
    ep.flush_timeout_us = 1000;
    ep.max_inflight = 1;
    ep.handoff = eng_handoff;
    ep.arg = p;
    assert_int_equal(oc__eng_create(&ep, &e), OC_OK);
    oc__eng_out_init(&o);
    o.job = 1;
    for (uint64_t v = 0; v < 4000; v++) {
        oc_status_t st;
        while ((st = oc__eng_put(e, &o, 1, 0, &v, 8)) == OC_ERR_NO_RESOURCE) {
            oc__tr_progress(p->a);
            oc__tr_progress(p->b);
        }
        assert_int_equal(st, OC_OK);
    }
    assert_int_equal(oc__eng_flush(e, &o, OC_ENG_FLUSH_EXPLICIT), OC_OK);
    for (long k = 0; k < 10000000 && (e->inflight > 0); k++) {
        oc__tr_progress(p->a);
        oc__tr_progress(p->b);
    }
    assert_int_equal(e->inflight, 0);
    assert_false(o.blocked);
    /* every item arrived once, in order, in valid bundles */
    for (long k = 0; k < 1000000; k++)
        oc__tr_progress(p->b);
    const oc_wire_check_t chk = {1, 2, 1, OC_WIRE_RANK_NONE, 0};
    uint64_t next = 0;
    for (int k = 0; k < p->got.n; k++) {
        oc_wire_hdr_t h;
        oc_wire_iter_t it;
        oc_wire_msg_t m = {0, 0, 0, NULL};
        assert_int_equal(p->got.token[k], 99);
        assert_int_equal(oc__wire_validate(p->got.data[k], p->got.len[k], &chk,
                                          &h), OC_OK);
        oc__wire_iter_init(&it, p->got.data[k], &h);
        while (oc__wire_iter_next(&it, &m))
            assert_int_equal(oc__load_le64(m.payload), next++);
        oc__tr_release(p->b, p->got.data[k]);
    }
    assert_int_equal(next, 4000);
    assert_int_equal(e->c.bundles, (uint64_t)p->got.n);
    oc__eng_destroy(e);
}

/* The book (tlbook.c): what a thread that does not own the endpoint learns
 * of it, including that it could not be made (offcored fails the rank's
 * job with the reason instead of letting it wait for credit forever). */
static void test_book_failed(void **state)
{
    pair_t *p = *state;
    const void *addr;
    size_t len;
    unsigned cls = 0;
    char tls[128];
    uint64_t uid;
    oc_tr_ep_t *ep;

    oc__tr_book_enable();
    assert_int_equal(oc__tr_worker_address(p->b, &addr, &len), OC_OK);
    assert_int_equal(oc__tr_book_lookup(addr, &cls, tls, sizeof(tls)), 0);
    assert_int_equal(oc__tr_ep_create(p->a, addr, 0, &ep), OC_OK);
    assert_int_equal(oc__tr_book_lookup(addr, &cls, tls, sizeof(tls)), 1);
    assert_true(tls[0] != '\0');
    assert_int_equal(oc__tr_addr_uid(addr, &uid), OC_OK);
    oc__tr_book_failed(uid, "ucp_ep_create: Endpoint timeout");
    assert_int_equal(oc__tr_book_lookup(addr, &cls, tls, sizeof(tls)), -1);
    assert_string_equal(tls, "ucp_ep_create: Endpoint timeout");
    oc__tr_book_forget(addr); /* the failure only: the live one stays */
    assert_int_equal(oc__tr_book_lookup(addr, &cls, tls, sizeof(tls)), 1);
    oc__tr_ep_destroy(p->a, ep);
    assert_int_equal(oc__tr_book_lookup(addr, &cls, tls, sizeof(tls)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bundle_and_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_and_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_book_failed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
