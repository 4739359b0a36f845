/*
 * rshm.c — a routing thread's side of the shared-memory channel with the
 * ranks it serves on this host (wire/shmseg.h): read what they publish in
 * their "up" rings in place (onto the engine's receive ring, like a UCX
 * arrival, with no copy), give the slots back in order once routed, write
 * deliveries into this thread's "down" ring of every local rank on shared
 * memory, those another thread serves too (the local outlet's buffer is
 * the ring's slot: a thread's deliveries cost the same whichever thread
 * reads the rank's up ring; through UCX they cost a send and a receive
 * per bundle), ring a waiting rank's doorbell (once per turn per ring:
 * oc__router_shm_flush), and tell the ranks it serves when this thread
 * sleeps so they wake it.
 *
 * Threading: the router's thread, except oc__rshm_* (reference counts,
 * any thread).  Trust: a rank can write its segment at any time; see
 * shmseg.h and route.c's re-check of destinations read in place.
 */
#include "router_int.h"

#include "util/log.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

oc_status_t oc__rshm_create(uint32_t nslots, uint32_t slot_size,
                            uint32_t ndown, oc_rshm_t **s_out, int *memfd_out)
{
    const size_t sz = (sizeof(oc_rshm_t) + OC_SPSC_ALIGN - 1) &
                      ~(size_t)(OC_SPSC_ALIGN - 1);
    oc_rshm_t *s = aligned_alloc(OC_SPSC_ALIGN, sz);
    oc_status_t st;

    if (s == NULL)
        return OC_ERR_NO_MEMORY;
    memset(s, 0, sz);
    if ((st = oc__shmseg_create(nslots, slot_size, ndown, &s->seg,
                                memfd_out)) != OC_OK) {
        free(s);
        return st;
    }
    atomic_init(&s->refs, 1);
    /* the promise of oc__router_shm_sleep_begin (wire/shmseg.h) */
    atomic_store_explicit(&s->seg.hdr->agent_barrier,
                          (uint32_t)oc__membarrier_supported(),
                          memory_order_relaxed);
    *s_out = s;
    return OC_OK;
}

void oc__rshm_get(oc_rshm_t *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void oc__rshm_put(oc_rshm_t *s)
{
    if (s == NULL)
        return;
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        oc__shmseg_unmap(&s->seg);
        free(s);
    }
}

/* This router's holds on @p s (router_int.h, pend[]): no atomic on the
 * turn's path; the shared reference goes with the last of its
 * attachments and holds. */
static inline void hold(oc_router_t *r, oc_rshm_t *s)
{
    s->pend[r->p.index].holds++;
}

/* After a hold or an attachment ended: the last lets the segment go. */
static inline void let_go(oc_router_t *r, oc_rshm_t *s)
{
    if (s->pend[r->p.index].holds == 0 && s->pend[r->p.index].attached == 0)
        oc__rshm_put(s);
}

static inline void unhold(oc_router_t *r, oc_rshm_t *s)
{
    s->pend[r->p.index].holds--;
    let_go(r, s);
}

int oc__router_rank_wake_fd(const oc_router_t *r)
{
    return r->rank_wake_fd;
}

oc_status_t oc__router_shm_attach(oc_router_t *r, lrank_t *l, oc_rshm_t *shm,
                                  int serves)
{
    if (r->p.index >= shm->seg.ndown)
        return OC_ERR_INVALID_PARAM;
    if (r->nshm_all == r->shm_cap) {
        uint32_t ncap = r->shm_cap ? 2 * r->shm_cap : 16;
        lrank_t **n = realloc(r->shm_ranks, ncap * sizeof(*n));
        if (n == NULL)
            return OC_ERR_NO_MEMORY;
        r->shm_ranks = n;
        r->shm_cap = ncap;
    }
    if (r->pend_cap < r->shm_cap) { /* room for every ring served */
        oc_rshm_t **n = realloc(r->shm_pend, r->shm_cap * sizeof(*n));
        if (n == NULL)
            return OC_ERR_NO_MEMORY;
        r->shm_pend = n;
        r->pend_cap = r->shm_cap;
    }
    if (r->p.index == 0 && r->cup_buf == NULL &&
        (r->cup_buf = malloc(OC_SHMSEG_CDOWN_SLOT)) == NULL)
        return OC_ERR_NO_MEMORY;
    /* those it serves first, then the others */
    if (serves) {
        r->shm_ranks[r->nshm_all] = r->shm_ranks[r->nshm];
        r->shm_ranks[r->nshm++] = l;
    } else {
        r->shm_ranks[r->nshm_all] = l;
    }
    r->nshm_all++;
    if (shm->pend[r->p.index].attached++ == 0 && shm->pend[r->p.index].holds == 0)
        oc__rshm_get(shm);
    l->shm = shm;
    l->out.shm = shm;
    l->ring_buf.ring = 1;
    l->down = shm->seg.down[r->p.index];
    l->cdown = shm->seg.cdown;
    l->cup = shm->seg.cup;
    l->out.eo.ring = &l->down;
    l->out.eo.ring_buf = &l->ring_buf;
    return OC_OK;
}

/* After the outlet was retired (what it held published). */
void oc__router_shm_detach(oc_router_t *r, lrank_t *l)
{
    if (l->shm == NULL)
        return;
    for (uint32_t i = 0; i < r->nshm_all; i++)
        if (r->shm_ranks[i] == l) {
            if (i < r->nshm) { /* keep the served ones first */
                r->shm_ranks[i] = r->shm_ranks[--r->nshm];
                i = r->nshm;
            }
            r->shm_ranks[i] = r->shm_ranks[--r->nshm_all];
            break;
        }
    l->out.eo.ring = NULL;
    l->out.eo.ring_buf = NULL;
    l->out.shm = NULL;
    l->shm->pend[r->p.index].attached--;
    let_go(r, l->shm);
    l->shm = NULL;
}

/* A rank wrote indices or lengths no ring has (@p what): nothing more is
 * read from that ring; its job stalls and its owner sees why, once. */
static void broken(oc_router_t *r, const lrank_t *l, int *said,
                   const char *what)
{
    if (*said)
        return;
    *said = 1;
    CNT_ADD(r->c.rejects, 1);
    oc_error(OC_COMP_ROUTER, "router %u: a rank broke its %s (token "
             "%016llx): no longer read", r->p.index, what,
             (unsigned long long)l->token);
}

uint32_t oc__router_shm_poll(oc_router_t *r)
{
    uint32_t got = 0;
    int full = 0;

    for (uint32_t i = 0; i < r->nshm; i++) {
        lrank_t *l = r->shm_ranks[i];
        oc_rshm_t *s = l->shm;
        uint8_t *slot;
        uint32_t len;

        /* every turn looks at every ring: a ring with nothing new costs
         * one load of its tail here, not a call (oc__spsc_ready; a broken
         * ring is left alone, peek says why below) */
        if (s->seg.up.peeked == s->seg.up.tail && !s->seg.up.broken &&
            !oc__spsc_ready(&s->seg.up))
            continue;
        while ((slot = oc__spsc_peek(&s->seg.up, &len)) != NULL) {
            oc_eng_rx_t *e = oc__eng_ring_push(&r->rx);
            if (e == NULL) { /* engine.h's policy: refused, counted */
                s->seg.up.peeked--; /* stays for a later turn */
                CNT_ADD(r->c.rejects, 1);
                return got;
            }
            e->data = slot;
            e->len = len;
            e->token = l->token;
            e->shm = s;
            hold(r, s);
            got++;
            /* at least 7/8 full: flushed for want of room, more follows */
            full |= len >= s->seg.up.slot_size - s->seg.up.slot_size / 8;
        }
        if (s->seg.up.broken)
            broken(r, l, &s->broken_said, "shared-memory ring");
    }
    if (got > 0) {
        CNT_ADD(r->c.shm_bundles_in, got);
        /* ranks mid-stream: a lull of a few turns is not the end of
         * their traffic (ROUTER_IDLE_TURNS) */
        oc__eng_more(r->eng, full);
    }
    return got;
}

uint32_t oc__router_cup_poll(oc_router_t *r, oc_tr_recv_cb_t deliver)
{
    uint32_t got = 0;

    for (uint32_t i = 0; i < r->nshm_all; i++) {
        lrank_t *l = r->shm_ranks[i];
        uint8_t *slot;
        uint32_t len;

        if (!l->cup.broken && !oc__spsc_ready(&l->cup))
            continue; /* one load, most rings, most turns */
        while ((slot = oc__spsc_peek(&l->cup, &len)) != NULL) {
            /* the rank can rewrite its slot at any time: the collectives
             * decode a copy (it is short: a descriptor) */
            memcpy(r->cup_buf, slot, len);
            oc__spsc_release(&l->cup);
            CNT_ADD(r->c.coll_descs_shm, 1);
            deliver(r, l->token, r->cup_buf, len);
            got++;
        }
        if (l->cup.broken)
            broken(r, l, &l->shm->cup_broken_said,
                   "collective descriptor ring");
    }
    return got;
}

/* Ring @p s was released into or delivered to: a rank asleep on its
 * doorbell is woken at the turn's end (oc__router_shm_flush), once
 * however many bundles it was.  A turn routes every bundle the ranks
 * published; a full fence per bundle drained the store buffer (full of
 * the routing loop's stores) bundle after bundle, and a rank that waits
 * for room was woken for each slot — a futex call and, where it shares
 * the router's core, a switch of that core per bundle.  The slots
 * themselves go back at once: a rank still running uses them. */
static void shm_pend(oc_router_t *r, oc_rshm_t *s)
{
    if (s->pend[r->p.index].on)
        return;
    if (r->npend == r->pend_cap) /* a ring no longer served: room now */
        oc__router_shm_flush(r);
    if (r->pend_cap == 0) { /* not reached: attach made room */
        oc__bell_ring(&s->seg.hdr->rank_bell);
        return;
    }
    s->pend[r->p.index].on = 1;
    hold(r, s);
    r->shm_pend[r->npend++] = s;
}

void oc__router_shm_flush(oc_router_t *r)
{
    const uint32_t n = r->npend;

    if (n == 0)
        return;
    /* the heads and the deliveries published before any "waiting" is
     * read: no lost wake-up (oc__bell_ring) */
    atomic_thread_fence(memory_order_seq_cst);
    for (uint32_t i = 0; i < n; i++) {
        oc_rshm_t *s = r->shm_pend[i];
        if (oc__bell_ring_fenced(&s->seg.hdr->rank_bell))
            CNT_ADD(r->c.shm_wakes, 1);
        s->pend[r->p.index].on = 0;
        unhold(r, s);
    }
    r->npend = 0;
}

void oc__router_shm_release(oc_router_t *r, oc_eng_rx_t *e)
{
    oc_rshm_t *s = e->shm;

    if (e->self_buf != NULL) { /* a private copy (route.c) */
        oc__eng_buf_put(r->eng, e->self_buf);
        e->self_buf = NULL;
    }
    oc__spsc_release(&s->seg.up);
    shm_pend(r, s); /* a rank waiting for room: woken at the turn's end */
    e->shm = NULL;
    unhold(r, s);
}

/* A DONE into @p l's completion ring: 1 when written.  A ring has one
 * producer: the first router to write it keeps it (a job's collectives
 * meet in router 0; this holds should that change). */
static int shm_done(oc_router_t *r, lrank_t *l, const void *msg, size_t len)
{
    oc_rshm_t *s = l->shm;
    uint32_t me = r->p.index + 1, w;
    uint8_t *slot;

    if (s == NULL || len > l->cdown.slot_size)
        return 0;
    /* a load once the ring is this router's: a locked compare-exchange
     * per DONE waited for the previous DONE's stores to drain */
    w = atomic_load_explicit(&s->cdown_writer, memory_order_relaxed);
    if (w != me &&
        (w != 0 || (!atomic_compare_exchange_strong_explicit(
                        &s->cdown_writer, &w, me, memory_order_relaxed,
                        memory_order_relaxed) && w != me)))
        return 0;
    if ((slot = oc__spsc_reserve(&l->cdown)) == NULL)
        return 0; /* more collectives in flight than slots */
    memcpy(slot, msg, len);
    oc__spsc_publish(&l->cdown, (uint32_t)len);
    shm_pend(r, s); /* a rank asleep on its doorbell: woken then */
    return 1;
}

void oc__router_coll_done(oc_router_t *r, lrank_t *l, const void *msg,
                          size_t len, int ring)
{
    if (ring && shm_done(r, l, msg, len)) {
        CNT_ADD(r->c.coll_dones_shm, 1);
        return;
    }
    CNT_ADD(r->c.coll_dones_ucx, 1);
    if (l->ep != NULL)
        (void)oc__tr_send_small(l->ep, OC_AM_COLL_DONE, 0, msg, len);
}

int oc__router_shm_full(oc_router_t *r, out_t *o)
{
    oc_spsc_t *down = o->eo.ring;
    if (oc__spsc_in_use(down) + (o->eo.buf != NULL) < down->nslots)
        return 0;
    CNT_ADD(r->c.shm_full, 1);
    return 1;
}

void oc__router_shm_deliver(oc_router_t *r, out_t *o, oc_eng_buf_t *b,
                            uint32_t len)
{
    oc_spsc_t *down = o->eo.ring;

    if (!b->ring) {
        /* a pool buffer (a bundle forwarded whole): into the next slot */
        uint8_t *slot = oc__spsc_reserve(down);
        if (slot == NULL || len > down->slot_size) {
            /* not reached: the caller checked room (shm_full); say so
             * rather than lose it silently */
            CNT_ADD(r->c.undeliverable, 1);
            oc_error(OC_COMP_ROUTER, "router %u: no slot for a local "
                     "delivery (bug): bundle dropped", r->p.index);
            oc__eng_buf_put(r->eng, b);
            return;
        }
        memcpy(slot, b->data, len);
        oc__eng_buf_put(r->eng, b);
    }
    oc__spsc_publish(down, len);
    CNT_ADD(r->c.shm_bundles_out, 1);
    shm_pend(r, o->shm); /* a rank asleep on its doorbell: woken then */
}

/* Router 0 reads every attached rank's descriptor ring as well: its
 * flag is set in each of them while it sleeps, and it looks at them last. */
static uint32_t sleep_ranks(const oc_router_t *r)
{
    return r->p.index == 0 ? r->nshm_all : r->nshm;
}

/* This router's "sleeping" flags: the up ring's in the segments of the
 * ranks it serves, and router 0's collective flag in every one. */
static void sleep_flags(oc_router_t *r, uint32_t v, memory_order mo)
{
    for (uint32_t i = 0; i < sleep_ranks(r); i++) {
        oc_shmseg_hdr_t *h = r->shm_ranks[i]->shm->seg.hdr;
        if (i < r->nshm)
            atomic_store_explicit(&h->agent_sleeping, v, mo);
        if (r->p.index == 0)
            atomic_store_explicit(&h->coll_sleeping, v, mo);
    }
}

int oc__router_shm_sleep_begin(oc_router_t *r)
{
    int promised = 0;

    sleep_flags(r, 1, memory_order_seq_cst);
    for (uint32_t i = 0; i < sleep_ranks(r); i++)
        promised |= (int)atomic_load_explicit(
            &r->shm_ranks[i]->shm->seg.hdr->agent_barrier,
            memory_order_relaxed);
    /* ranks that skip their fence (agent_barrier): run it for them, so a
     * bundle they published is seen below or they see the flag */
    if (promised && oc__membarrier_global() != 0) {
        for (uint32_t i = 0; i < sleep_ranks(r); i++)
            atomic_store_explicit(
                &r->shm_ranks[i]->shm->seg.hdr->agent_barrier, 0,
                memory_order_seq_cst);
        oc_warn(OC_COMP_ROUTER, "router %u: membarrier failed: ranks fence "
                "for themselves from now on", r->p.index);
        oc__router_shm_sleep_end(r);
        return 0;
    }
    /* a bundle or a descriptor published before a rank saw the flag: do
     * not sleep */
    for (uint32_t i = 0; i < sleep_ranks(r); i++)
        if ((i < r->nshm && oc__spsc_ready(&r->shm_ranks[i]->shm->seg.up)) ||
            (r->p.index == 0 && oc__spsc_ready(&r->shm_ranks[i]->cup))) {
            oc__router_shm_sleep_end(r);
            return 0;
        }
    return 1;
}

void oc__router_shm_sleep_end(oc_router_t *r)
{
    sleep_flags(r, 0, memory_order_relaxed);
}
