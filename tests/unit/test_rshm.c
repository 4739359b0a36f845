/*
 * test_rshm.c — a routing thread's side of the shared-memory channel
 * (src/agent/router/rshm.c), alone: rshm.c built with a bare router
 * (its engine and receive ring, nothing else) and a rank's mapping of the
 * same segment.  What a rank sees of the router's turn: bundles it
 * published are taken in order; a released slot is the rank's at once,
 * but a rank asleep on its doorbell is woken only at the turn's end
 * (oc__router_shm_flush), once for all the turn's releases; a delivery is
 * published at once and rings at the flush; an empty ring costs nothing
 * and a broken one is said once and no longer read; a second routing
 * thread delivers into its own down ring; the router's holds on a
 * segment outlive the rank's detachment; router 0 reads the descriptor
 * rings.
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

/* In place of the collectives' entry (oc__rcoll_recv), a recorder: what
 * router 0 read from the ranks' descriptor rings, in order. */
static struct {
    int      n;
    uint64_t token;
    size_t   len;
    uint8_t  first[4];
} got;

static void rcoll_recv(void *arg, uint64_t token, void *data, size_t len)
{
    (void)arg;
    got.token = token;
    got.len = len;
    memcpy(got.first + (got.n < 4 ? got.n : 3), data, 1);
    got.n++;
}

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
    assert_int_equal(oc__rshm_create(SLOTS, SLOT, 1, &f->s, &fd), OC_OK);
    assert_int_equal(oc__shmseg_map(fd, &f->rank), OC_OK);
    close(fd);
    f->l.token = 42;
    assert_int_equal(oc__router_shm_attach(&f->r, &f->l, f->s, 1), OC_OK);
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
    free(f->r.cup_buf);
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
    assert_non_null(slot = oc__spsc_peek(&f->rank.down[0], &len));
    assert_int_equal(len, 16);
    assert_int_equal(slot[15], 7);
    assert_int_equal(atomic_load(&f->rank.hdr->rank_bell.waiting), 1);
    assert_int_equal(f->r.npend, 1); /* one ring, however many events */
    oc__router_shm_flush(&f->r);
    assert_int_equal(f->r.c.shm_wakes, 1);
    assert_int_equal(f->r.c.shm_bundles_out, 1);
    oc__spsc_release(&f->rank.down[0]);
}

/* Two routing threads: the one that serves the rank reads its up ring
 * and delivers into down ring 0; another, attached to deliver only,
 * writes down ring 1 (its index) and never reads the up ring; each pends
 * the doorbell on its own.  A thread whose index the segment has no ring
 * for is refused. */
static void test_second_thread(void **state)
{
    oc_router_t r0, r1, r2;
    lrank_t l0, l1, l2;
    oc_eng_params_t ep;
    oc_shmseg_t rank;
    oc_rshm_t *s;
    oc_eng_buf_t *b;
    uint8_t *slot;
    uint32_t len;
    int fd;
    (void)state;

    memset(&r0, 0, sizeof(r0)), memset(&r1, 0, sizeof(r1));
    memset(&r2, 0, sizeof(r2));
    memset(&l0, 0, sizeof(l0)), memset(&l1, 0, sizeof(l1));
    memset(&l2, 0, sizeof(l2));
    memset(&ep, 0, sizeof(ep));
    ep.bundle_size = SLOT;
    ep.nbufs = 4;
    ep.flush_timeout_us = 1000;
    ep.handoff = handoff;
    assert_int_equal(oc__eng_create(&ep, &r0.eng), OC_OK);
    assert_int_equal(oc__eng_create(&ep, &r1.eng), OC_OK);
    r1.p.index = 1, r2.p.index = 2;
    assert_int_equal(oc__rshm_create(SLOTS, SLOT, 2, &s, &fd), OC_OK);
    assert_int_equal(oc__shmseg_map(fd, &rank), OC_OK);
    close(fd);
    assert_int_equal(oc__router_shm_attach(&r0, &l0, s, 1), OC_OK);
    assert_int_equal(oc__router_shm_attach(&r1, &l1, s, 0), OC_OK);
    uint32_t refs = atomic_load(&s->refs);
    assert_int_equal(oc__router_shm_attach(&r2, &l2, s, 0), OC_ERR_INVALID_PARAM);
    assert_int_equal(atomic_load(&s->refs), refs); /* refused: no reference */
    assert_int_equal(r2.nshm_all, 0);
    assert_null(l2.shm);
    assert_int_equal(r0.nshm, 1);
    assert_int_equal(r1.nshm, 0); /* it does not read the up ring */
    assert_int_equal(r1.nshm_all, 1);
    /* each its own producer handle of its own ring */
    assert_ptr_equal(l1.out.eo.ring, &l1.down);
    assert_ptr_equal(l1.down.sh, s->seg.down[1].sh);
    assert_ptr_equal(l0.down.sh, s->seg.down[0].sh);
    (void)oc__bell_prepare(&rank.hdr->rank_bell);
    assert_non_null(b = oc__eng_buf_get(r1.eng));
    memset(b->data, 9, 8);
    oc__router_shm_deliver(&r1, &l1.out, b, 8);
    assert_null(oc__spsc_peek(&rank.down[0], &len));
    assert_non_null(slot = oc__spsc_peek(&rank.down[1], &len));
    assert_int_equal(len, 8);
    assert_int_equal(slot[7], 9);
    assert_int_equal(s->pend[1].on, 1);
    assert_int_equal(s->pend[0].on, 0);
    /* the serving thread delivers too: its own ring, its own pend */
    assert_non_null(b = oc__eng_buf_get(r0.eng));
    memset(b->data, 5, 8);
    oc__router_shm_deliver(&r0, &l0.out, b, 8);
    assert_non_null(slot = oc__spsc_peek(&rank.down[0], &len));
    assert_int_equal(slot[0], 5);
    assert_int_equal(s->pend[0].on, 1);
    oc__router_shm_flush(&r0); /* r0 rings; r1's pend stays */
    assert_int_equal(r0.c.shm_wakes, 1);
    assert_int_equal(s->pend[0].on, 0);
    assert_int_equal(s->pend[1].on, 1);
    (void)oc__bell_prepare(&rank.hdr->rank_bell); /* asleep again */
    oc__router_shm_flush(&r1); /* and r1 rings on its own */
    assert_int_equal(r1.c.shm_wakes, 1);
    assert_int_equal(s->pend[1].on, 0);
    oc__spsc_release(&rank.down[0]);
    oc__spsc_release(&rank.down[1]);
    oc__router_shm_detach(&r1, &l1);
    oc__router_shm_detach(&r0, &l0);
    assert_int_equal(r1.nshm_all, 0);
    oc__shmseg_unmap(&rank);
    oc__rshm_put(s);
    oc__eng_destroy(r0.eng);
    oc__eng_destroy(r1.eng);
    free(r0.shm_ranks), free(r0.shm_pend), free(r0.cup_buf);
    free(r1.shm_ranks), free(r1.shm_pend), free(r1.cup_buf);
    free(r2.shm_ranks), free(r2.shm_pend), free(r2.cup_buf);
}

/* A collective's DONE goes through the rank's completion ring, one per
 * slot, the rank woken at the flush; by UCX when the ring is full, when
 * it is too long for a slot, when tagged messages of the collective go
 * to the rank (DONE must follow them on their endpoint), or from a
 * second router (the first keeps the ring: one producer).  No endpoint here: "by UCX" is only counted. */
static void test_coll_done(void **state)
{
    fix_t *f = *state;
    oc_router_t r1;
    lrank_t l1;
    uint8_t msg[OC_SHMSEG_CDOWN_SLOT + 1];
    const uint8_t *slot;
    uint32_t len;

    memset(msg, 0, sizeof(msg));
    (void)oc__bell_prepare(&f->rank.hdr->rank_bell);
    for (uint32_t i = 0; i < OC_SHMSEG_CDOWN_SLOTS; i++) {
        msg[0] = (uint8_t)i;
        oc__router_coll_done(&f->r, &f->l, msg, 16 + i, 1);
    }
    assert_int_equal(f->r.c.coll_dones_shm, OC_SHMSEG_CDOWN_SLOTS);
    assert_int_equal(f->r.c.coll_dones_ucx, 0);
    oc__router_coll_done(&f->r, &f->l, msg, 16, 1); /* full */
    assert_int_equal(f->r.c.coll_dones_ucx, 1);
    assert_int_equal(f->r.npend, 1);
    oc__router_shm_flush(&f->r);
    assert_int_equal(f->r.c.shm_wakes, 1);
    for (uint32_t i = 0; i < OC_SHMSEG_CDOWN_SLOTS; i++) {
        assert_non_null(slot = oc__spsc_peek(&f->rank.cdown, &len));
        assert_int_equal(len, 16 + i);
        assert_int_equal(slot[0], (uint8_t)i);
        oc__spsc_release(&f->rank.cdown);
    }
    assert_null(oc__spsc_peek(&f->rank.cdown, &len));
    oc__router_coll_done(&f->r, &f->l, msg, sizeof(msg), 1); /* too long */
    assert_int_equal(f->r.c.coll_dones_ucx, 2);
    oc__router_coll_done(&f->r, &f->l, msg, 16, 0); /* tagged data before */
    assert_int_equal(f->r.c.coll_dones_ucx, 3);
    assert_null(oc__spsc_peek(&f->rank.cdown, &len));
    oc__router_coll_done(&f->r, &f->l, msg, OC_SHMSEG_CDOWN_SLOT, 1); /* fits */
    assert_int_equal(f->r.c.coll_dones_shm, OC_SHMSEG_CDOWN_SLOTS + 1);
    assert_non_null(oc__spsc_peek(&f->rank.cdown, &len));
    assert_int_equal(len, OC_SHMSEG_CDOWN_SLOT);
    oc__spsc_release(&f->rank.cdown);
    /* a second router: the ring is the first's */
    memset(&r1, 0, sizeof(r1)), memset(&l1, 0, sizeof(l1));
    r1.p.index = 0; /* index 0 has a down ring in this one-ring segment */
    assert_int_equal(oc__router_shm_attach(&r1, &l1, f->s, 0), OC_OK);
    r1.p.index = 1; /* ... but is another router */
    oc__router_coll_done(&r1, &l1, msg, 16, 1);
    assert_int_equal(r1.c.coll_dones_ucx, 1);
    assert_int_equal(r1.c.coll_dones_shm, 0);
    assert_null(oc__spsc_peek(&f->rank.cdown, &len));
    r1.p.index = 0;
    oc__router_shm_detach(&r1, &l1);
    free(r1.shm_ranks), free(r1.shm_pend), free(r1.cup_buf);
}

/* The router's references are counts of its own (pend[]): bundles read
 * in place and the turn's pend list hold the segment with no atomic each,
 * and keep it past the rank's detachment; the one shared reference goes
 * with the last of them. */
static void test_holds(void **state)
{
    fix_t *f = *state;

    oc__rshm_get(f->s); /* the test's, to read the count after */
    rank_publish(f, 2, 0);
    assert_int_equal(oc__router_shm_poll(&f->r), 2);
    assert_int_equal(atomic_load(&f->s->refs), 2); /* the router's, once */
    assert_int_equal(f->s->pend[0].holds, 2);
    oc__router_shm_detach(&f->r, &f->l);
    assert_int_equal(f->s->pend[0].attached, 0);
    assert_int_equal(atomic_load(&f->s->refs), 2); /* still held */
    router_release_all(f);          /* the bundles' holds, the pend's */
    assert_int_equal(f->s->pend[0].holds, 1);
    assert_int_equal(atomic_load(&f->s->refs), 2);
    oc__router_shm_flush(&f->r);    /* the last: the router lets go */
    assert_int_equal(f->s->pend[0].holds, 0);
    assert_int_equal(atomic_load(&f->s->refs), 1);
    oc__rshm_put(f->s);
}

/* Router 0 reads the descriptor ring of every rank it is attached to: a
 * copy of each descriptor to the collectives, in order, the slot the
 * rank's again at once; asleep, it says so in the segment (the rank then
 * nudges it by UCX) and will not sleep over a descriptor already there; a
 * broken ring is said once and no longer read. */
static void test_cup(void **state)
{
    fix_t *f = *state;
    uint8_t *slot;

    memset(&got, 0, sizeof(got));
    assert_int_equal(oc__router_cup_poll(&f->r, rcoll_recv), 0);
    for (uint8_t k = 0; k < 3; k++) {
        assert_non_null(slot = oc__spsc_reserve(&f->rank.cup));
        memset(slot, 'a' + k, 40);
        oc__spsc_publish(&f->rank.cup, 40);
    }
    assert_int_equal(oc__router_cup_poll(&f->r, rcoll_recv), 3);
    assert_int_equal(got.n, 3);
    assert_int_equal(got.token, 42);
    assert_int_equal(got.len, 40);
    assert_memory_equal(got.first, "abc", 3);
    assert_int_equal(f->r.c.coll_descs_shm, 3);
    assert_int_equal(oc__spsc_in_use(&f->rank.cup), 0); /* released */
    assert_int_equal(oc__router_cup_poll(&f->r, rcoll_recv), 0);
    /* asleep: the flag is up while no descriptor waits */
    assert_int_equal(oc__router_shm_sleep_begin(&f->r), 1);
    assert_int_equal(atomic_load(&f->rank.hdr->coll_sleeping), 1);
    oc__router_shm_sleep_end(&f->r);
    assert_int_equal(atomic_load(&f->rank.hdr->coll_sleeping), 0);
    assert_non_null(oc__spsc_reserve(&f->rank.cup));
    oc__spsc_publish(&f->rank.cup, 8);
    assert_int_equal(oc__router_shm_sleep_begin(&f->r), 0); /* one waits */
    assert_int_equal(atomic_load(&f->rank.hdr->coll_sleeping), 0);
    assert_int_equal(oc__router_cup_poll(&f->r, rcoll_recv), 1);
    /* a router other than 0 never reads it nor raises its flag */
    f->r.p.index = 1;
    assert_int_equal(oc__router_shm_sleep_begin(&f->r), 1);
    assert_int_equal(atomic_load(&f->rank.hdr->coll_sleeping), 0);
    oc__router_shm_sleep_end(&f->r);
    f->r.p.index = 0;
    /* broken: said once, never read again */
    atomic_store(&f->rank.cup.sh->tail, OC_SHMSEG_CDOWN_SLOTS + 8);
    assert_int_equal(oc__router_cup_poll(&f->r, rcoll_recv), 0);
    assert_int_equal(oc__router_cup_poll(&f->r, rcoll_recv), 0);
    assert_int_equal(f->r.c.rejects, 1);
    assert_int_equal(got.n, 4);
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
        cmocka_unit_test_setup_teardown(test_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cup, setup, teardown),
        cmocka_unit_test(test_second_thread),
        cmocka_unit_test_setup_teardown(test_coll_done, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
