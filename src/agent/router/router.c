/*
 * router.c — one routing thread of offcored (router.h): its loop (apply
 * commands, progress UCX, route, flush policy, credits, idle sleep), its
 * life cycle and the counter readers other threads call.  The routing
 * kernel is route.c, the commands rcmd.c, the buffers and flush policy
 * the aggregation engine (src/engine).
 */
#include "router_int.h"

#include "util/clock.h"
#include "util/log.h"

#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ---- the thread ------------------------------------------------------- */

/* The router flushes its half-filled bundles once it has found nothing new
 * this many turns in a row (a turn of its loop takes 0.1-0.3 us), not at
 * the first: a rank streaming at full speed publishes its next bundle a
 * few microseconds after the last one was routed, and a delivery flushed
 * in that gap hands the receiving rank a third of a bundle, which costs
 * it the per-bundle work and a ring slot as a whole one does (measured:
 * histogram, ranks on core 0 and the agent on core 1, 42-55 % of the
 * deliveries flushed idle at 1 turn, 15-25 % at 16, ~5 % faster).  A
 * request that ends a burst waits these few turns more. */
#define ROUTER_IDLE_TURNS 64

/* Local rank @p pid arrives: does it count among those the idle policy
 * yields to?  Called on the router's thread (commands), so the affinity
 * compared is this thread's. */
void oc__router_rank_cores(oc_router_t *r, lrank_t *l, uint32_t pid)
{
    l->shares_core = (uint8_t)oc__router_cpus_shared(pid);
    r->core_sharers += l->shares_core;
}

void oc__router_rank_cores_fini(oc_router_t *r, lrank_t *l)
{
    if (l->shares_core && r->core_sharers > 0)
        r->core_sharers--;
    l->shares_core = 0;
}

/* Idle: sleep until UCX has an event (something arrived), a command is
 * posted or 100 ms pass — so an idle agent costs no CPU.  With work that
 * no UCX event announces (bundles held for an unknown job or a blocked
 * next hop, sends in flight, buffers waiting for their timeout, credit a
 * full send pool refused, retried each turn) it only naps 50 us, as it
 * always did. */
static void router_sleep(oc_router_t *r, uint64_t idle_us)
{
    static const struct timespec nap = {0, 50000};
    /* Short lulls (a busy job between bursts, the ranks between their
     * time slices) only yield the core: on a core of its own the router
     * goes on at once, with no wake-up latency (a 50 us nap here cost the
     * ranks their credits for 60-100 us at every lull, the swings of the
     * spare-core runs); on cores it shares, the ranks run.  Work held for
     * longer (a stalled next hop) naps 50 us: a core is not burnt for a
     * peer that does not move.  Only an agent idle for 10 ms sleeps.
     *
     * The yield is for local ranks that may run on this core; with none
     * (the agent on cores of its own, as the agent placement wants) the
     * lull is spent polling.  A yield is not free where anything else is
     * runnable on the core: the scheduler (EEVDF, Linux 6.6+) makes the
     * yielder give up the rest of its slice, and the router lost its core
     * for 1.1-4.5 ms at the first yield of a lull — 9 of the 12 late
     * collective descriptors of a traced coll-bench overlap run (ranks on
     * core 0, offcored on core 1, other work on both), the cause of its
     * 16-45 % runs (docs/coll.md, "Overlap"). */
    if (idle_us < 10000) {
        if (r->core_sharers > 0)
            sched_yield();
        return;
    }
    if (r->rx.count > 0 || r->eng->inflight > 0 || r->eng->ndirty > 0 ||
        r->colls != NULL || r->colls_held != NULL || r->credits_owed ||
        r->wake_fd < 0 || oc__tr_worker_efd(r->w) < 0) {
        nanosleep(&nap, NULL);
        return;
    }
    if (!oc__tr_worker_arm(r->w))
        return; /* events pending: progress them first */
    /* ranks on shared memory write rank_wake_fd when they see us asleep */
    if (!oc__router_shm_sleep_begin(r))
        return;
    struct pollfd pfd[3] = {{.fd = oc__tr_worker_efd(r->w), .events = POLLIN},
                            {.fd = r->wake_fd, .events = POLLIN},
                            {.fd = r->rank_wake_fd, .events = POLLIN}};
    CNT_ADD(r->c.sleeps, 1);
    if (poll(pfd, 3, 100) > 0) {
        uint64_t v;
        if (pfd[1].revents & POLLIN)
            (void)!read(r->wake_fd, &v, sizeof v);
        if (pfd[2].revents & POLLIN)
            (void)!read(r->rank_wake_fd, &v, sizeof v);
    }
    oc__router_shm_sleep_end(r);
}

static void *router_main(void *arg)
{
    oc_router_t *r = arg;
    uint64_t idle_spins = 0, idle_since = 0;

    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        unsigned events;
        uint32_t done;

        if (atomic_load_explicit(&r->cmd_pending, memory_order_acquire))
            oc__router_apply_commands(r);
        events = oc__tr_progress(r->w);
        if (r->nshm > 0)
            events += oc__router_shm_poll(r);
        if (r->p.index == 0 && r->nshm_all > 0)
            events += oc__router_cup_poll(r, oc__rcoll_recv);
        done = oc__router_route_all(r);
        done += (uint32_t)oc__rcoll_progress(r);
        /* Something arrived: flush what timed out.  Nothing arrived:
         * nobody gains from waiting, send it all (IDLE). */
        oc__eng_policy(r->eng, done == 0 && events == 0);
        /* what the ranks on shared memory got and gave back this turn,
         * told once (before any sleep) */
        oc__router_shm_flush(r);
        if (done > 0 || events > 0) {
            idle_spins = 0;
        } else {
            /* Back off after a while so an agent sharing cores with the
             * application does not starve it (docs/facts.md); a short spin
             * first keeps the latency of a busy period. */
            if (++idle_spins == 20000)
                idle_since = oc__now_us();
            if (idle_spins > 20000)
                router_sleep(r, oc__now_us() - idle_since);
        }
        oc__router_send_credits(r);
    }
    /* drain: flush and complete what is in flight */
    oc__eng_flush_dirty(r->eng, OC_ENG_FLUSH_EXPLICIT, 0);
    oc__router_shm_flush(r);
    for (int k = 0; k < 100000 && r->eng->inflight > 0; k++)
        oc__tr_progress(r->w);
    return NULL;
}

/* A collective descriptor by UCX (a rank on UCX, or its descriptor ring
 * full or too short for it), or an empty one: a rank's nudge, to wake this
 * router for its descriptor ring (oc__router_cup_poll). */
static void coll_am(void *arg, uint64_t token, void *data, size_t len)
{
    oc_router_t *r = arg;

    if (len == 0) {
        CNT_ADD(r->c.coll_nudges, 1);
        return;
    }
    CNT_ADD(r->c.coll_descs_ucx, 1);
    oc__rcoll_recv(arg, token, data, len);
}

oc_status_t oc__router_create(const oc_router_params_t *p, oc_router_t **r_p)
{
    oc_eng_params_t ep;
    oc_router_t *r;
    oc_status_t st = OC_ERR_NO_MEMORY;

    if (p->nnodes == 0 || p->nnodes > OC_AGENT_MAX_NODES || p->buffers == 0 ||
        p->bundle_size < 256 || p->max_inflight == 0)
        return OC_ERR_INVALID_PARAM;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return OC_ERR_NO_MEMORY;
    r->p = *p;
    r->wake_fd = -1;
    r->rank_wake_fd = -1;
    pthread_mutex_init(&r->mu, NULL);
    r->cmd_tail = &r->cmd_head;
    r->peers = calloc(p->nnodes, sizeof(*r->peers));
    if (r->peers == NULL)
        goto err;
    for (uint32_t n = 0; n < p->nnodes; n++) {
        peer_t *pe = &r->peers[n];
        oc__eng_out_init(&pe->link);
        pe->link.user = pe;
        pe->wait_tail = &pe->wait_head;
    }
    memset(&ep, 0, sizeof(ep));
    ep.bundle_size = p->bundle_size & ~(uint64_t)7;
    ep.nbufs = p->buffers;
    ep.flush_timeout_us = p->flush_timeout_us;
    ep.idle_turns = ROUTER_IDLE_TURNS;
    ep.max_inflight = p->max_inflight > UINT32_MAX ? UINT32_MAX
                                                   : (uint32_t)p->max_inflight;
    ep.src_hop = p->node;
    ep.dirty_cap = 64;
    ep.handoff = oc__router_handoff;
    ep.blocked = oc__router_blocked;
    ep.arg = r;
    ep.name = "router";
    ep.log_comp = OC_COMP_ROUTER;
    if ((st = oc__eng_create(&ep, &r->eng)) != OC_OK)
        goto err;
    if ((st = oc__eng_ring_init(&r->rx, r->eng, 256)) != OC_OK)
        goto err;
    if ((st = oc__router_pack_init(r)) != OC_OK)
        goto err;
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    r->rank_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((st = oc__tr_context_create_wakeup(&r->tr)) != OC_OK)
        goto err;
    if ((st = oc__tr_worker_create(r->tr, &r->w)) != OC_OK)
        goto err;
    if ((st = oc__tr_set_handler(r->w, OC_AM_BUNDLE, oc__router_bundle_recv,
                                r, 1)) != OC_OK)
        goto err;
    if ((st = oc__tr_set_handler(r->w, OC_AM_CREDIT, oc__router_credit_recv,
                                r, 0)) != OC_OK)
        goto err;
    if ((st = oc__tr_set_handler(r->w, OC_AM_COLL, coll_am, r, 0)) != OC_OK)
        goto err;
    *r_p = r;
    return OC_OK;
err:
    oc__router_destroy(r);
    return st;
}

oc_status_t oc__router_start(oc_router_t *r)
{
    if (pthread_create(&r->tid, NULL, router_main, r) != 0)
        return OC_ERR_NO_RESOURCE;
    r->started = 1;
    return OC_OK;
}

void oc__router_stop(oc_router_t *r)
{
    if (r == NULL || !r->started)
        return;
    atomic_store(&r->stop, 1);
    oc__router_wake(r);
    pthread_join(r->tid, NULL);
    r->started = 0;
}

void oc__router_destroy(oc_router_t *r)
{
    if (r == NULL)
        return;
    oc__router_stop(r);
    if (r->w != NULL) {
        oc__router_apply_commands(r); /* free what was posted, not applied */
        oc__rcoll_fini(r);
        for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
            if (r->jobs[i].map != NULL)
                oc__router_job_free(r, &r->jobs[i]);
        for (uint32_t n = 0; n < r->p.nnodes; n++) {
            oc__router_peer_drop(r, &r->peers[n]);
            oc__tr_ep_destroy(r->w, r->peers[n].ep);
        }
        while (r->rx.count > 0) {
            oc_eng_rx_t *e = oc__eng_ring_at(&r->rx, 0);
            if (e->shm != NULL)
                oc__router_shm_release(r, e);
            else
                oc__tr_release(r->w, e->data);
            oc__eng_ring_pop(&r->rx);
        }
        oc__router_shm_flush(r); /* the references it held */
    }
    oc__tr_worker_destroy(r->w);
    oc__tr_context_destroy(r->tr);
    pthread_mutex_destroy(&r->mu);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    if (r->rank_wake_fd >= 0)
        close(r->rank_wake_fd);
    free(r->shm_ranks);
    free(r->shm_pend);
    free(r->cup_buf);
    free(r->senders);
    free(r->peers);
    oc__eng_ring_fini(&r->rx);
    oc__router_pack_fini(r);
    oc__eng_destroy(r->eng);
    free(r);
}

oc_status_t oc__router_address(oc_router_t *r, const void **addr, size_t *len)
{
    return oc__tr_worker_address(r->w, addr, len);
}

void oc__router_counters(const oc_router_t *r, oc_router_counters_t *out)
{
    const uint64_t *src = (const uint64_t *)&r->c;
    uint64_t *dst = (uint64_t *)out;
    oc_eng_counters_t e;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        dst[i] = atomic_load_explicit((_Atomic uint64_t *)&src[i],
                                      memory_order_relaxed);
    /* the flush policy and its counters are the engine's */
    oc__eng_counters(r->eng, &e);
    out->flush_full = e.flush[OC_ENG_FLUSH_FULL];
    out->flush_timeout = e.flush[OC_ENG_FLUSH_TIMEOUT];
    out->flush_idle = e.flush[OC_ENG_FLUSH_IDLE];
    out->flush_explicit = e.flush[OC_ENG_FLUSH_EXPLICIT];
}

void oc__router_peer_counters(const oc_router_t *r, uint32_t node,
                             oc_router_peer_counters_t *out)
{
    const uint64_t *src = (const uint64_t *)&r->peers[node].c;
    uint64_t *dst = (uint64_t *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        dst[i] = atomic_load_explicit((_Atomic uint64_t *)&src[i],
                                      memory_order_relaxed);
}

uint32_t oc__router_job_counters(oc_router_t *r, oc_router_job_counters_t *out,
                                uint32_t max)
{
    uint32_t n = 0;
    for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++) {
        const rjob_t *j = &r->jobs[i];
        uint32_t tag = atomic_load(&j->tag);
        const uint64_t *src;
        if (tag == 0)
            continue;
        if (n < max) {
            src = &j->c.msgs_in;
            out[n].job = tag - 1;
            uint64_t *dst = &out[n].msgs_in;
            for (int k = 0; k < 7; k++)
                dst[k] = atomic_load_explicit((_Atomic uint64_t *)&src[k],
                                              memory_order_relaxed);
        }
        n++;
    }
    return n;
}
