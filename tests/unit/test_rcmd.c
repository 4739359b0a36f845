/*
 * test_rcmd.c — the commands the control thread sends a routing thread
 * (src/agent/router/rcmd.c), with no UCX under it (rkernel_fake.h): each
 * changes the router's state as router.h says, in the order posted; one
 * for a job, rank or node the router does not have is refused and
 * changes nothing; a rank or peer that goes takes its sender token, its
 * endpoint and what was buffered for it along.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rkernel_fake.h"

static int setup(void **state)
{
    *state = rk_setup();
    return 0;
}

static int teardown(void **state)
{
    rk_teardown(*state);
    return 0;
}

/* Rank 0 sends one 8-byte message to @p dst; returns the bundles the
 * router finished. */
static uint32_t send_one(rk_fix_t *f, uint64_t token, uint32_t src,
                         uint32_t dst)
{
    uint64_t v = rk_val(src, dst);
    size_t len;
    uint8_t *b = rk_col(src, 1, &dst, &v, 8, &len);
    uint32_t n;
    rk_feed(f, token, b, len);
    free(b);
    n = rk_turn(f, 1);
    return n;
}

static void add_rank(rk_fix_t *f, uint64_t token, uint32_t job,
                     uint32_t rank)
{
    uint8_t a[8];
    rk_addr(0, rank, a);
    assert_int_equal(oc__router_add_rank(f->r, token, job, rank, a, 8, 0,
                                        NULL, 0), OC_OK);
}

/* The fixture's commands took effect: one job, its local ranks as
 * senders with their own outlets as next hops, the remote ranks behind
 * the peer's outlet, the peer as a sender with a full credit window. */
static void test_setup_state(void **state)
{
    rk_fix_t *f = *state;
    rjob_t *j = oc__router_job_find(f->r, RK_JOB);
    sender_t *s;

    assert_non_null(j);
    assert_int_equal(atomic_load(&j->tag), RK_JOB + 1);
    assert_int_equal(j->map->refs, 1); /* the router's */
    for (uint32_t i = 0; i < RK_RANKS; i++) {
        if (i < RK_LOCAL) {
            assert_non_null(j->local[i]);
            assert_ptr_equal(j->hop[i], &j->local[i]->out);
            assert_non_null(s = oc__router_sender_find(f->r, rk_tok(i)));
            assert_false(s->is_peer);
            assert_int_equal(s->job, RK_JOB);
            assert_int_equal(s->rank, i);
        } else {
            assert_null(j->local[i]);
            assert_ptr_equal(j->hop[i], &j->to_node[1]);
        }
    }
    assert_non_null(j->to_node[1].ep);
    assert_int_equal(j->to_node[1].token, RK_PEER_SEND);
    assert_non_null(s = oc__router_sender_find(f->r, RK_PEER_RECV));
    assert_true(s->is_peer);
    assert_int_equal(s->node, 1);
    assert_int_equal(f->r->peers[1].credits, OC_ROUTER_PEER_WINDOW);
    assert_null(oc__router_sender_find(f->r, 0)); /* 0: no sender */
    assert_int_equal(rk.eps_live, RK_LOCAL + 1);
}

/* A rank for a job the router does not have, past the job's size, one
 * already there, or one whose endpoint cannot be made: refused, no
 * sender, nothing changed. */
static void test_add_rank_refused(void **state)
{
    rk_fix_t *f = *state;
    rjob_t *j = oc__router_job_find(f->r, RK_JOB);
    lrank_t *l0 = j->local[0];
    uint32_t nsenders = f->r->nsenders;

    add_rank(f, 0x777, RK_JOB + 1, 0); /* no such job */
    add_rank(f, 0x778, RK_JOB, RK_RANKS); /* no such rank */
    add_rank(f, 0x779, RK_JOB, 0);        /* there already */
    oc__router_apply_commands(f->r);
    assert_int_equal(rk.eps_live, RK_LOCAL + 1);
    rk.fail_ep_create = 1;
    add_rank(f, 0x77a, RK_JOB, RK_LOCAL); /* no endpoint */
    oc__router_apply_commands(f->r);
    rk.fail_ep_create = 0;
    assert_int_equal(f->r->nsenders, nsenders);
    for (uint64_t t = 0x777; t <= 0x77a; t++)
        assert_null(oc__router_sender_find(f->r, t));
    assert_ptr_equal(j->local[0], l0);
    assert_int_equal(j->local[0]->token, rk_tok(0));
    assert_null(j->local[RK_LOCAL]);
    assert_int_equal(rk.eps_live, RK_LOCAL + 1);
    /* a bundle on a refused token is nobody's */
    assert_int_equal(send_one(f, 0x779, 0, 1), 1);
    assert_int_equal(f->r->c.reject_unknown_sender, 1);
    assert_int_equal(rk.nbundles, 0);
    /* the rank that was there still is */
    assert_int_equal(send_one(f, rk_tok(0), 0, 1), 1);
    assert_int_equal(rk.bundles_to_rank[1], 1);
}

/* A rank that goes: its sender token is no longer accepted, messages for
 * it are counted undeliverable (never sent), what was buffered for it is
 * dropped and counted the same way, its endpoint closed, its collectives failed; a rank or job
 * the router does not have: nothing changes. */
static void test_del_rank(void **state)
{
    rk_fix_t *f = *state;
    rjob_t *j = oc__router_job_find(f->r, RK_JOB);
    uint32_t dst[3] = {2, 2, 2};
    uint64_t vals[3] = {1, 2, 3};
    size_t len;
    uint8_t *b = rk_col(0, 3, dst, vals, 8, &len);

    rk_feed(f, rk_tok(0), b, len);
    free(b);
    rk_turn(f, 0); /* buffered toward rank 2, not sent */
    assert_int_equal(oc__router_del_rank(f->r, RK_JOB, 2), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(rk.coll_aborts, 1);
    assert_int_equal(rk.abort_job, RK_JOB);
    assert_int_equal(rk.abort_rank, 2);
    assert_null(j->local[2]);
    assert_ptr_equal(j->hop[2], &j->none);
    assert_null(oc__router_sender_find(f->r, rk_tok(2)));
    assert_int_equal(rk.eps_live, RK_LOCAL);
    rk_turn(f, 1);
    assert_int_equal(rk.bundles_to_rank[2], 0); /* dropped with it, */
    assert_int_equal(f->r->c.undeliverable, 3); /* counted */

    assert_int_equal(send_one(f, rk_tok(0), 0, 2), 1);
    assert_int_equal(f->r->c.undeliverable, 4);
    assert_int_equal(rk.nbundles, 0);
    assert_int_equal(send_one(f, rk_tok(2), 2, 1), 1);
    assert_int_equal(f->r->c.reject_unknown_sender, 1);

    /* unknown: a rank not here, past the size, another job */
    assert_int_equal(oc__router_del_rank(f->r, RK_JOB, 2), OC_OK);
    assert_int_equal(oc__router_del_rank(f->r, RK_JOB, RK_RANKS + 5), OC_OK);
    assert_int_equal(oc__router_del_rank(f->r, RK_JOB + 1, 0), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(rk.eps_live, RK_LOCAL);
    assert_non_null(oc__router_sender_find(f->r, rk_tok(0)));
    assert_non_null(j->local[0]);
    assert_int_equal(send_one(f, rk_tok(0), 0, 1), 1);
    assert_int_equal(rk.bundles_to_rank[1], 1);

    /* the same rank back, with a new token */
    add_rank(f, 0x222, RK_JOB, 2);
    oc__router_apply_commands(f->r);
    assert_ptr_equal(j->hop[2], &j->local[2]->out);
    assert_int_equal(send_one(f, 0x222, 2, 3), 1);
    assert_int_equal(rk.bundles_to_rank[3], 1);
}

/* Jobs: a second ADD_JOB of a job there already changes nothing (and
 * gives its map back); a job past OC_ROUTER_MAX_JOBS is refused; a job
 * that goes frees its slot and its map, and its ranks' bundles are
 * refused as another job's; a job the router does not have: nothing. */
static void test_jobs(void **state)
{
    rk_fix_t *f = *state;
    rjob_t *j = oc__router_job_find(f->r, RK_JOB);
    oc_job_map_t *dup = oc__job_map_new(RK_JOB, 2, 2);
    oc_job_map_t *keep = j->map;
    oc_job_map_t *maps[OC_ROUTER_MAX_JOBS];

    assert_non_null(dup);
    assert_int_equal(oc__router_add_job(f->r, dup), OC_OK);
    assert_int_equal(dup->refs, 2);
    oc__router_apply_commands(f->r);
    assert_int_equal(dup->refs, 1); /* given back */
    assert_ptr_equal(j->map, keep);
    oc__job_map_put(dup);

    /* fill every slot; one more is refused */
    for (uint32_t i = 0; i < OC_ROUTER_MAX_JOBS; i++) {
        assert_non_null(maps[i] = oc__job_map_new(100 + i, 4, 2));
        assert_int_equal(oc__router_add_job(f->r, maps[i]), OC_OK);
    }
    oc__router_apply_commands(f->r);
    for (uint32_t i = 0; i < OC_ROUTER_MAX_JOBS - 1; i++) {
        assert_non_null(oc__router_job_find(f->r, 100 + i));
        assert_int_equal(maps[i]->refs, 2);
    }
    assert_null(oc__router_job_find(f->r, 100 + OC_ROUTER_MAX_JOBS - 1));
    assert_int_equal(maps[OC_ROUTER_MAX_JOBS - 1]->refs, 1);
    for (uint32_t i = 0; i < OC_ROUTER_MAX_JOBS; i++)
        assert_int_equal(oc__router_del_job(f->r, 100 + i), OC_OK);
    oc__router_apply_commands(f->r);
    for (uint32_t i = 0; i < OC_ROUTER_MAX_JOBS; i++) {
        assert_int_equal(maps[i]->refs, 1);
        oc__job_map_put(maps[i]);
    }

    /* the job goes: slot, map, endpoints; its ranks' bundles refused */
    __atomic_add_fetch(&keep->refs, 1, __ATOMIC_ACQ_REL); /* to look */
    assert_int_equal(oc__router_del_job(f->r, RK_JOB + 1), OC_OK);
    oc__router_apply_commands(f->r);
    assert_ptr_equal(oc__router_job_find(f->r, RK_JOB), j);
    assert_int_equal(oc__router_del_job(f->r, RK_JOB), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(rk.abort_job, RK_JOB);
    assert_int_equal(rk.abort_rank, UINT32_MAX);
    assert_null(oc__router_job_find(f->r, RK_JOB));
    assert_int_equal(atomic_load(&j->tag), 0);
    assert_int_equal(keep->refs, 1);
    oc__job_map_put(keep);
    assert_int_equal(rk.eps_live, 1); /* the peer's */
    assert_int_equal(send_one(f, rk_tok(0), 0, 1), 1);
    assert_int_equal(f->r->c.reject_wire[OC_ERR_WIRE_TRUNCATED -
                                         OC_ERR_WIRE_JOB], 1);
    assert_int_equal(rk.nbundles, 0);
}

/* Commands apply in the order posted: a rank before its job is refused,
 * after it admitted. */
static void test_order(void **state)
{
    rk_fix_t *f = *state;
    oc_job_map_t *m = oc__job_map_new(9, 2, 2);

    assert_non_null(m);
    add_rank(f, 0x901a, 9, 0);
    assert_int_equal(oc__router_add_job(f->r, m), OC_OK);
    add_rank(f, 0x901b, 9, 1);
    oc__job_map_put(m);
    assert_int_equal(atomic_load(&f->r->cmd_pending), 1);
    oc__router_apply_commands(f->r);
    assert_int_equal(atomic_load(&f->r->cmd_pending), 0);
    assert_null(oc__router_sender_find(f->r, 0x901a));
    assert_non_null(oc__router_sender_find(f->r, 0x901b));
    assert_null(oc__router_job_find(f->r, 9)->local[0]);
    assert_non_null(oc__router_job_find(f->r, 9)->local[1]);
}

/* Work posted to a router (a slice of a split allreduce, rcsplit.c) runs
 * when it applies its commands, in the order posted, with the argument
 * and number it was posted with; a stopped router frees it unrun. */
static uint32_t ran[4], nran;
static void *ran_arg;
static void run_note(void *arg, uint32_t k)
{
    ran_arg = arg;
    if (nran < 4)
        ran[nran] = k;
    nran++;
}

static void test_run(void **state)
{
    rk_fix_t *f = *state;
    int x;

    nran = 0;
    assert_int_equal(oc__router_post_run(f->r, run_note, &x, 3), OC_OK);
    assert_int_equal(oc__router_post_run(f->r, run_note, &x, 1), OC_OK);
    assert_int_equal(nran, 0); /* not before the router applies them */
    assert_int_equal(atomic_load(&f->r->cmd_pending), 1);
    oc__router_apply_commands(f->r);
    assert_int_equal(nran, 2);
    assert_int_equal(ran[0], 3);
    assert_int_equal(ran[1], 1);
    assert_ptr_equal(ran_arg, &x);
    /* a stopped router runs none: the router that posted it may be gone */
    atomic_store(&f->r->stop, 1);
    assert_int_equal(oc__router_post_run(f->r, run_note, &x, 2), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(nran, 2);
    atomic_store(&f->r->stop, 0);
}

/* Peers: a node out of range refused when posted; a second ADD_PEER of a
 * node there already changes nothing; a peer that goes takes its sender
 * token, its endpoint, its outlets' and its credit queue's bundles. */
static void test_peers(void **state)
{
    rk_fix_t *f = *state;
    rjob_t *j = oc__router_job_find(f->r, RK_JOB);
    peer_t *p = &f->r->peers[1];
    uint8_t a[8];
    uint64_t v = 1;
    size_t len;
    uint8_t *b;

    rk_addr(1, 5, a);
    assert_int_equal(oc__router_add_peer(f->r, 2, 1, 2, a, 8),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__router_add_peer(f->r, 1, 0xaa, 0xab, a, 8), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(p->send_token, RK_PEER_SEND);
    assert_null(oc__router_sender_find(f->r, 0xab));
    assert_int_equal(rk.eps_live, RK_LOCAL + 1);

    /* spend the window: one bundle waits for credit */
    p->credits = 0;
    b = rk_fixed(0, 5, 1, &v, 8, &len);
    rk_feed(f, rk_tok(0), b, len);
    free(b);
    rk_turn(f, 1);
    assert_int_equal(p->waiting, 1);
    assert_int_equal(rk.bundles_to_peer, 0);

    assert_int_equal(f->r->c.undeliverable, 0);
    assert_int_equal(oc__router_del_peer(f->r, 1), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(p->waiting, 0);
    assert_int_equal(f->r->c.undeliverable, 1); /* the waiting one, counted */
    assert_null(p->wait_head);
    assert_null(p->ep);
    assert_null(j->to_node[1].ep);
    assert_null(oc__router_sender_find(f->r, RK_PEER_RECV));
    assert_int_equal(rk.eps_live, RK_LOCAL);
    assert_int_equal(rk.abort_job, UINT32_MAX);
    /* its bundles are nobody's now; toward it nothing goes */
    b = rk_mixed(RK_JOB, 1, (uint32_t[]){5}, (uint32_t[]){0}, &v, &len);
    rk_feed(f, RK_PEER_RECV, b, len);
    free(b);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.reject_unknown_sender, 1);
    assert_int_equal(send_one(f, rk_tok(0), 0, 6), 1);
    assert_int_equal(rk.nbundles, 0);
    assert_int_equal(f->r->c.undeliverable, 2); /* dropped, counted */

    /* and it comes back */
    rk_addr(1, 1, a);
    assert_int_equal(oc__router_add_peer(f->r, 1, RK_PEER_SEND, RK_PEER_RECV,
                                        a, 8), OC_OK);
    oc__router_apply_commands(f->r);
    assert_non_null(j->to_node[1].ep);
    assert_int_equal(p->credits, OC_ROUTER_PEER_WINDOW);
    assert_int_equal(send_one(f, rk_tok(0), 0, 6), 1);
    assert_int_equal(rk.bundles_to_peer, 1);
}

/* A peer authenticated but not yet added (its PEER_INFO not read here):
 * its bundles wait for the ADD_PEER instead of being refused, then route;
 * a token nobody announced is still refused at once, and an announced one
 * whose peer never comes is refused after OC_ROUTER_UNKNOWN_JOB_WAIT_US. */
static void test_expect_peer(void **state)
{
    rk_fix_t *f = *state;
    uint8_t a[8];
    uint64_t v = 1;
    size_t len;
    uint8_t *b;

    assert_int_equal(oc__router_del_peer(f->r, 1), OC_OK);
    oc__router_apply_commands(f->r);
    assert_int_equal(oc__router_expect_peer(f->r, 2, 7), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__router_expect_peer(f->r, 1, 0), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__router_expect_peer(f->r, 1, RK_PEER_RECV), OC_OK);
    oc__router_apply_commands(f->r);

    /* from the peer to local rank 0: held while only announced */
    b = rk_mixed(RK_JOB, 1, (uint32_t[]){5}, (uint32_t[]){0}, &v, &len);
    rk_feed(f, RK_PEER_RECV, b, len);
    rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 1);
    assert_int_equal(f->r->c.rejects, 0);
    /* a forged token beside it: refused at once */
    rk_feed(f, 0x5eed, b, len);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.reject_unknown_sender, 1);
    assert_int_equal(f->r->rx.count, 1);

    /* the ADD_PEER arrives: the held bundle routes */
    rk_addr(1, 1, a);
    assert_int_equal(oc__router_add_peer(f->r, 1, RK_PEER_SEND, RK_PEER_RECV,
                                        a, 8), OC_OK);
    rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 0);
    assert_int_equal(f->r->c.rejects, 1);
    assert_int_equal(rk.bundles_to_rank[0], 1);
    assert_int_equal(rk.recs[rk.nrecs - 1].v, v);
    assert_int_equal(rk.recs[rk.nrecs - 1].src, 5);

    /* announced, and the peer never comes: refused once the wait is over */
    assert_int_equal(oc__router_del_peer(f->r, 1), OC_OK);
    assert_int_equal(oc__router_expect_peer(f->r, 1, RK_PEER_RECV), OC_OK);
    oc__router_apply_commands(f->r);
    rk_feed(f, RK_PEER_RECV, b, len);
    rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 1);
    oc__eng_ring_at(&f->r->rx, 0)->t_arrival -= OC_ROUTER_UNKNOWN_JOB_WAIT_US;
    rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 0);
    assert_int_equal(f->r->c.reject_unknown_sender, 2);
    assert_int_equal(rk.released, rk.fed);
    free(b);
}

/* A job and its local ranks posted as one batch (as the agent posts them
 * when a job is ready): nothing of it is in force until the batch ends,
 * then all of it in one turn, so a peer's bundle for a local rank that
 * arrives meanwhile is held and then delivered.  Applied alone, the job
 * has its local ranks as ranks that left, and the same bundle is counted
 * undeliverable: lost, which in netns-test.sh twonode left every rank's
 * quiesce waiting. */
static void test_job_batch(void **state)
{
    rk_fix_t *f = *state;
    oc_job_map_t *map;
    uint8_t a[8];
    uint64_t v = rk_val(5, 1);
    size_t len;
    uint8_t *b = rk_mixed(RK_JOB, 1, (uint32_t[]){5}, (uint32_t[]){0}, &v,
                          &len);

    /* the job again, alone first: what the batch prevents */
    assert_int_equal(oc__router_del_job(f->r, RK_JOB), OC_OK);
    oc__router_apply_commands(f->r);
    assert_non_null(map = oc__job_map_new(RK_JOB, RK_RANKS, 2));
    for (uint32_t i = RK_LOCAL; i < RK_RANKS; i++)
        map->node_of[i] = 1;
    assert_int_equal(oc__router_add_job(f->r, map), OC_OK);
    oc__router_apply_commands(f->r);
    rk_feed(f, RK_PEER_RECV, b, len);
    rk_turn(f, 1);
    assert_int_equal(f->r->c.undeliverable, 1);
    assert_int_equal(rk.bundles_to_rank[0], 0);

    /* now as a batch, with a turn of the router inside it */
    assert_int_equal(oc__router_del_job(f->r, RK_JOB), OC_OK);
    oc__router_apply_commands(f->r);
    oc__router_batch_begin(f->r);
    assert_int_equal(oc__router_add_job(f->r, map), OC_OK);
    assert_int_equal(atomic_load(&f->r->cmd_pending), 0);
    oc__router_apply_commands(f->r);
    assert_null(oc__router_job_find(f->r, RK_JOB));
    rk_feed(f, RK_PEER_RECV, b, len); /* the peer was ready first */
    rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 1); /* held: job not known yet */
    for (uint32_t i = 0; i < RK_LOCAL; i++) {
        rk_addr(0, i, a);
        assert_int_equal(oc__router_add_rank(f->r, rk_tok(i), RK_JOB, i, a,
                                            8, 0, NULL, 0), OC_OK);
    }
    assert_int_equal(atomic_load(&f->r->cmd_pending), 0);
    oc__router_batch_end(f->r);
    assert_int_equal(atomic_load(&f->r->cmd_pending), 1);
    oc__router_batch_end(f->r); /* ended already: nothing */
    rk_turn(f, 1);
    assert_int_equal(f->r->rx.count, 0);
    assert_int_equal(f->r->c.undeliverable, 1); /* only the first */
    assert_int_equal(rk.bundles_to_rank[0], 1);
    assert_int_equal(rk.recs[rk.nrecs - 1].v, v);
    assert_int_equal(rk.recs[rk.nrecs - 1].src, 5);
    assert_int_equal(rk.eps_live, RK_LOCAL + 1);
    /* after the batch, posts go at once again */
    assert_int_equal(oc__router_del_rank(f->r, RK_JOB, 3), OC_OK);
    assert_int_equal(atomic_load(&f->r->cmd_pending), 1);
    oc__router_apply_commands(f->r);
    assert_int_equal(rk.eps_live, RK_LOCAL);
    oc__job_map_put(map);
    assert_int_equal(rk.released, rk.fed);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_setup_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_rank_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_del_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_batch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
