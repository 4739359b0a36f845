/*
 * test_rshm.c — a routing thread's side of the shared-memory channel
 * (src/agent/router/rshm.c), alone: rshm.c built with a bare router
 * (its engine and receive ring, nothing else) and a rank's mapping of the
 * same segment.  What a rank sees of the router's turn: bundles it
 * published are taken in order; a released slot is the rank's at once,
 * but a rank asleep on its doorbell is woken only at the turn's end
 * (oc__router_shm_flush), once for all the turn's releases; a delivery is
 * published at once and rings at the flush; an empty ring costs nothing
 * and a broken one is said once and no longer read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "agent/router/router_int.h"

#define SLOTS 4
#define SLOT  256

typedef struct {
    oc_router_t r;
    lrank_t     l;
    oc_rshm_t  *s;
    oc_shmseg_t rank;  /* the rank's mapping */
} fix_t;

static oc_status_t handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                           uint32_t len, uint32_t count)
{
    (void)arg; (void)o; (void)b; (void)len; (void)count;
    return OC_OK;
}

static int setup(void **state)
{
    fix_t *f = calloc(1, sizeof(*f));
    oc_eng_params_t ep;
    int fd;

    assert_non_null(f);
    memset(&ep, 0, sizeof(ep));
    ep.bundle_size = SLOT;
    ep.nbufs = 4;
    ep.flush_timeout_us = 1000;
    ep.handoff = handoff;
    assert_int_equal(oc__eng_create(&ep, &f->r.eng), OC_OK);
    assert_int_equal(oc__eng_ring_init(&f->r.rx, f->r.eng, 16), OC_OK);
    assert_int_equal(oc__rshm_create(SLOTS, SLOT, &f->s, &fd), OC_OK);
    assert_int_equal(oc__shmseg_map(fd, &f->rank), OC_OK);
    close(fd);
    f->l.token = 42;
    assert_int_equal(oc__router_shm_attach(&f->r, &f->l, f->s), OC_OK);
    oc__rshm_put(f->s); /* the router's reference stays */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    oc__router_shm_flush(&f->r);
    oc__router_shm_detach(&f->r, &f->l);
    oc__shmseg_unmap(&f->rank);
    oc__eng_ring_fini(&f->r.rx);
    oc__eng_destroy(f->r.eng);
    free(f->r.shm_ranks);
    free(f->r.shm_pend);
    free(f);
    return 0;
}

/* The rank publishes @p n bundles of one byte each, numbered from @p k. */
static void rank_publish(fix_t *f, uint32_t n, uint8_t k)
{
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *slot = oc__spsc_reserve(&f->rank.up);
        assert_non_null(slot);
        slot[0] = (uint8_t)(k + i);
        oc__spsc_publish(&f->rank.up, 1);
    }
}

/* Route (here: release) every queued bundle, as route_all does. */
static void router_release_all(fix_t *f)
{
    while (f->r.rx.count > 0) {
        oc__router_shm_release(&f->r, oc__eng_ring_at(&f->r.rx, 0));
        oc__eng_ring_pop(&f->r.rx);
    }
}

static void test_turn(void **state)
{
    fix_t *f = *state;

    assert_int_equal(oc__router_shm_poll(&f->r), 0); /* nothing yet */
    for (uint8_t round = 0; round < 3; round++) {
        rank_publish(f, SLOTS, (uint8_t)(round * SLOTS));
        assert_null(oc__spsc_reserve(&f->rank.up)); /* full */
        assert_int_equal(oc__router_shm_poll(&f->r), SLOTS);
        assert_int_equal(oc__router_shm_poll(&f->r), 0); /* taken once */
        for (uint32_t i = 0; i < SLOTS; i++) {
            oc_eng_rx_t *e = oc__eng_ring_at(&f->r.rx, i);
            assert_int_equal(e->token, 42);
            assert_int_equal(e->len, 1);
            assert_int_equal(e->data[0], round * SLOTS + i); /* in order */
        }
        /* the rank, out of room, goes to sleep on its doorbell */
        (void)oc__bell_prepare(&f->rank.hdr->rank_bell);
        router_release_all(f);
        /* mid-turn: the room is there, the sleeper not woken yet */
        assert_int_equal(oc__spsc_in_use(&f->rank.up), 0);
        assert_int_equal(atomic_load(&f->rank.hdr->rank_bell.waiting), 1);
        assert_int_equal(f->r.c.shm_wakes, round);
        oc__router_shm_flush(&f->r);
        /* the turn's end: one wake-up for the four slots */
        assert_int_equal(atomic_load(&f->rank.hdr->rank_bell.waiting), 0);
        assert_int_equal(f->r.c.shm_wakes, round + 1);
        assert_int_equal(f->r.npend, 0);
        oc__router_shm_flush(&f->r); /* nothing more to say */
        assert_int_equal(f->r.c.shm_wakes, round + 1);
    }
    assert_int_equal(f->r.c.shm_bundles_in, 3 * SLOTS);
    assert_int_equal(atomic_load(&f->s->refs), 1); /* the router's only */
}

/* A delivery is the rank's at once; its doorbell rings at the flush, once
 * for the turn's deliveries and releases together. */
static void test_deliver(void **state)
{
    fix_t *f = *state;
    oc_eng_buf_t *b = oc__eng_buf_get(f->r.eng);
    uint8_t *slot;
    uint32_t len;

    assert_non_null(b);
    memset(b->data, 7, 16);
    rank_publish(f, 1, 0);
    assert_int_equal(oc__router_shm_poll(&f->r), 1);
    (void)oc__bell_prepare(&f->rank.hdr->rank_bell);
    oc__router_shm_deliver(&f->r, &f->l.out, b, 16); /* a pool buffer */
    router_release_all(f);
    assert_non_null(slot = oc__spsc_peek(&f->rank.down, &len));
    assert_int_equal(len, 16);
    assert_int_equal(slot[15], 7);
    assert_int_equal(atomic_load(&f->rank.hdr->rank_bell.waiting), 1);
    assert_int_equal(f->r.npend, 1); /* one ring, however many events */
    oc__router_shm_flush(&f->r);
    assert_int_equal(f->r.c.shm_wakes, 1);
    assert_int_equal(f->r.c.shm_bundles_out, 1);
    oc__spsc_release(&f->rank.down);
}

/* A rank that publishes more than its ring holds broke it: said once,
 * counted once, never read again. */
static void test_broken(void **state)
{
    fix_t *f = *state;

    atomic_store(&f->rank.up.sh->tail, SLOTS + 3);
    assert_int_equal(oc__router_shm_poll(&f->r), 0);
    assert_int_equal(oc__router_shm_poll(&f->r), 0);
    assert_true(f->s->seg.up.broken);
    assert_int_equal(f->r.c.rejects, 1);
    assert_int_equal(f->r.rx.count, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deliver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
