/*
 * route.c — the routing kernel of one routing thread (router.h): receive
 * bundles onto the engine's ring, validate each once against what its
 * sender may send, sort every message per next hop (a local rank, or the
 * peer node on its path) into the engine's outlets, and send the bundles
 * they become — toward a peer under that peer's credit window.  Runs only
 * on the router's thread.
 */
#include "router_int.h"

#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

sender_t *oc__router_sender_find(oc_router_t *r, uint64_t token)
{
    if (token == 0)
        return NULL;
    for (uint32_t i = 0; i < r->nsenders; i++)
        if (r->senders[i].token == token)
            return &r->senders[i];
    return NULL;
}

static void reject(oc_router_t *r, rjob_t *j, oc_status_t why)
{
    CNT_ADD(r->c.rejects, 1);
    if (why <= OC_ERR_WIRE_TRUNCATED && why >= OC_ERR_WIRE_TRUNCATED - 15)
        CNT_ADD(r->c.reject_wire[OC_ERR_WIRE_TRUNCATED - why], 1);
    else
        CNT_ADD(r->c.reject_unknown_sender, 1);
    if (j != NULL)
        CNT_ADD(j->c.rejects, 1);
    if (r->c.rejects <= 20)
        oc_warn(OC_COMP_ROUTER, "router %u: rejected a bundle: %s", r->p.index,
                oc_status_string(why));
}

/* The next hop of a message for @p dst (precomputed: rcmd.c); never
 * NULL: a local rank not here is j->none. */
static inline out_t *next_hop(rjob_t *j, uint32_t dst)
{
    return j->hop[dst];
}

/* Traffic toward @p o must wait: its next hop has max_inflight bundles in
 * flight, or (a peer) its credit window is spent. */
static inline int held(oc_router_t *r, out_t *o)
{
    if (o->peer != NULL)
        return o->peer->link.blocked || o->peer->waiting > 0;
    if (o->shm != NULL) /* a rank on shared memory: its ring is the window */
        return oc__router_shm_full(r, o);
    return o->eo.blocked;
}

/* Check what only the sender's identity tells: a peer may only hand us a
 * message when the link peer -> us is on that message's path (direct:
 * from a rank on the peer's node to a rank on ours; grid: either hop). */
static oc_status_t check_peer_bundle(oc_router_t *r, rjob_t *j,
                                     const oc_eng_rx_t *e, uint32_t node)
{
    oc_wire_iter_t it;
    oc_wire_msg_t m;
    oc__wire_iter_init(&it, e->data, &e->hdr);
    while (oc__wire_iter_next(&it, &m)) {
        uint32_t s = j->map->node_of[m.src], d = j->map->node_of[m.dst];
        uint32_t h = oc__route_hop(r->p.grid, r->p.nnodes, s, d);
        int first = s == node && h == r->p.node;
        int second = h == node && d == r->p.node && h != s;
        if (!first && !second)
            return OC_ERR_WIRE_RANK;
    }
    return OC_OK;
}

/* ---- sending ------------------------------------------------------------ */

static void peer_send(oc_router_t *r, peer_t *p, oc_eng_buf_t *b)
{
    p->credits--;
    if (oc__eng_send(r->eng, &p->link, p->ep, p->send_token, b, b->len) !=
        OC_OK)
        oc_debug(OC_COMP_ROUTER, "router %u: a bundle to a peer failed",
                 r->p.index);
}

/* Send what waited for credit, in order, as far as credit goes. */
static void peer_drain(oc_router_t *r, peer_t *p)
{
    while (p->wait_head != NULL && p->credits > 0 && p->ep != NULL) {
        oc_eng_buf_t *b = p->wait_head;
        p->wait_head = b->next;
        if (p->wait_head == NULL)
            p->wait_tail = &p->wait_head;
        p->waiting--;
        peer_send(r, p, b);
    }
}

void oc__router_peer_drop(oc_router_t *r, peer_t *p)
{
    while (p->wait_head != NULL) {
        oc_eng_buf_t *b = p->wait_head;
        p->wait_head = b->next;
        /* dropped, never silently: its messages (the header's count) */
        CNT_ADD(r->c.undeliverable, oc__load_le32(b->data + 8));
        oc__eng_buf_put(r->eng, b);
    }
    p->wait_tail = &p->wait_head;
    p->waiting = 0;
}

/* Send bundle @p b (@p len bytes, header written, @p count messages) to
 * @p o's next hop. */
static void out_send(oc_router_t *r, out_t *o, oc_eng_buf_t *b, uint32_t len,
                     uint32_t count)
{
    if (o->peer != NULL) /* in runs, where they are smaller (rpeer.c) */
        len = oc__router_peer_pack(r, o, b, len);
    if (o->ep == NULL) { /* next hop went away: the job is failing */
        CNT_ADD(r->c.undeliverable, count); /* dropped, never silently */
        oc__eng_buf_put(r->eng, b);
        return;
    }
    CNT_ADD(r->c.bundles_out, 1);
    CNT_ADD(r->c.bytes_out, len);
    CNT_ADD(o->jc->bundles_out, 1);
    CNT_ADD(o->jc->bytes_out, len);
    CNT_ADD(o->jc->msgs_out, count);
    if (o->peer != NULL) {
        peer_t *p = o->peer;
        CNT_ADD(p->c.bundles_out, 1);
        CNT_ADD(p->c.bytes_out, len);
        CNT_ADD(p->c.msgs_out, count);
        b->len = len;
        if (p->credits == 0 || p->wait_head != NULL) { /* keep the order */
            b->next = NULL;
            *p->wait_tail = b;
            p->wait_tail = &b->next;
            p->waiting++;
            return;
        }
        peer_send(r, p, b);
        return;
    }
    if (o->shm != NULL) {
        oc__router_shm_deliver(r, o, b, len);
        return;
    }
    if (oc__eng_send(r->eng, &o->eo, o->ep, o->token, b, len) != OC_OK)
        oc_debug(OC_COMP_ROUTER, "router %u: a bundle to a rank failed",
                 r->p.index);
}

oc_status_t oc__router_handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                               uint32_t len, uint32_t count)
{
    out_send(arg, (out_t *)o, b, len, count);
    return OC_OK;
}

void oc__router_blocked(void *arg, oc_eng_out_t *o, int on)
{
    oc_router_t *r = arg;
    peer_t *p = o->user; /* set on peer links only */
    CNT_ADD(r->c.blocklist_depth, on ? 1 : (uint64_t)-1);
    if (p != NULL)
        CNT_ADD(p->c.blocked, on ? 1 : (uint64_t)-1);
}

/* ---- routing ------------------------------------------------------------ */

/* Forward a fixed-size bundle whole to @p o.  Every message of such a
 * bundle has one destination (the header's), so it needs no
 * re-aggregation, only a copy: the received data is UCX's until released,
 * and a send may complete later.  Messages already aggregated toward the
 * same next hop go first, which keeps each sender's order.  Returns RX_DONE
 * when sent, RX_HOLD (held next hop) or RX_NOBUF when it must wait. */
static int forward_whole(oc_router_t *r, oc_eng_rx_t *e, out_t *o)
{
    oc_wire_hdr_t h = e->hdr;
    oc_eng_buf_t *b;

    if (held(r, o))
        return RX_HOLD;
    if (o->eo.buf != NULL) {
        oc__eng_flush(r->eng, &o->eo, OC_ENG_FLUSH_EXPLICIT);
        if (held(r, o))
            return RX_HOLD;
    }
    if (o->shm != NULL) {
        /* a rank on shared memory: copied once, straight into its ring's
         * next slot (held() found room; the outlet holds no slot now) */
        uint8_t *slot = oc__spsc_reserve(o->eo.ring);
        if (slot == NULL || e->len > o->eo.ring->slot_size)
            return RX_HOLD;
        b = o->eo.ring_buf;
        b->data = slot;
        b->ring = 1;
    } else if ((b = oc__eng_buf_get(r->eng)) == NULL) {
        return RX_NOBUF;
    }
    memcpy(b->data, e->data, e->len);
    h.src_hop = r->p.node;
    h.seq = o->eo.seq++;
    oc__wire_hdr_write(b->data, &h);
    CNT_ADD(r->c.bundles_forwarded, 1);
    out_send(r, o, b, e->len, h.count);
    return RX_DONE;
}

/* @p n messages for local rank @p dst, which is not here (it left its
 * job, which is failing): dropped, counted, and said once per job and
 * router — a drop in a job that is not failing is a bug, and must not
 * show only as ranks that wait for ever. */
static __attribute__((cold, noinline)) void
drop_none(oc_router_t *r, rjob_t *j, uint32_t dst, uint32_t n)
{
    CNT_ADD(r->c.undeliverable, n);
    if (j->none_said)
        return;
    j->none_said = 1;
    oc_warn(OC_COMP_ROUTER, "router %u: job %u: %u message(s) for rank %u, "
            "which is not here (it left), dropped; later ones are counted "
            "in offcore_thread_undeliverable_total, not said",
            r->p.index, j->c.job, n, dst);
}

/* One message to its next hop's outlet: RX_DONE (appended, or counted
 * undeliverable), RX_HOLD or RX_NOBUF (not taken: retry it later).
 * Inlined into each loop of route_bundle: no call per message. */
static inline __attribute__((always_inline)) int
route_msg(oc_router_t *r, rjob_t *j, uint32_t dst, uint32_t src,
          const uint8_t *payload, uint32_t len)
{
    out_t *o = next_hop(j, dst);
    oc_eng_out_t *eo;

    if (unlikely(o->none)) { /* a local rank that left: undeliverable */
        drop_none(r, j, dst, 1);
        return RX_DONE;
    }
    eo = &o->eo;
    if (likely(len == 8 && eo->item_len == 8 && eo->fsrc == src &&
               eo->fdst == dst && eo->wp + 8 <= eo->end)) {
        memcpy(eo->wp, payload, 8);
        eo->wp += 8;
        return RX_DONE;
    }
    if (oc__eng_try_put(eo, dst, src, payload, len))
        return RX_DONE;
    if (eo->item_len == OC_ENG_NO_ITEM && eo->buf != NULL &&
        eo->wp + OC_WIRE_MSG_HDR_LEN + oc__wire_pad8(len) <= eo->end &&
        (len != 0 || o->packed_buf != eo->buf)) {
        /* an open mixed buffer with room: oc__eng_put's mixed case (an
         * empty message behind runs: rpeer.c's, it takes more room) */
        eo->wp = oc__wire_put_msg(eo->wp, dst, src, payload, len);
        eo->count++;
        return RX_DONE;
    }
    /* toward a peer: a full buffer regrouped into runs (rpeer.c) makes
     * room in place */
    if (o->peer != NULL && eo->item_len == OC_ENG_NO_ITEM &&
        oc__router_peer_put(r, o, dst, src, payload, len))
        return RX_DONE;
    if (unlikely(held(r, o)))
        return RX_HOLD;
    if (oc__eng_put(r->eng, eo, dst, src, payload, len) != OC_OK)
        return RX_NOBUF;
    return RX_DONE;
}

/* Up to this many ranks a job's outlets stay in L1 (128 bytes each):
 * route_col does not prefetch them. */
#define OC_ROUTER_FEW_RANKS 128
/* How far ahead route_col reads a stream's items (bytes; half that in
 * its column of destinations). */
#define OC_ROUTER_READ_AHEAD 1024

/* A rank's column stream, items of @p len bytes (a multiple of 8; a
 * constant where inlined, so every copy is a fixed-size move): each item
 * goes to its next hop's open buffer while that has room, with no call.
 * An outlet toward a local rank receives from many senders, so its buffer
 * is mixed (a header per item) almost always: that case is checked first,
 * and its header is the bundle's (source, length) word with the
 * destination ORed in.  An outlet made a source column (wire.h; none is
 * yet, docs/router.md) takes the source into its column, the item bare.  An open fixed-size buffer of this source and
 * destination (an outlet fed by this rank alone) takes the item bare.
 * Anything else (no buffer, no room, another mode, a destination out of
 * range) stops the loop where it is, for route_msg.  These are exactly
 * route_msg's cases that need neither a flush nor an open, in the same
 * outlets, so order and back-pressure are route_msg's.  @p ahead: also
 * prefetch the outlet of the item 8 ahead. */
static inline __attribute__((always_inline)) const uint8_t *
route_col(out_t *const *hop, uint32_t lim, uint32_t src,
          const uint8_t *dc, const uint8_t *dend, const uint8_t **pp,
          const uint32_t len, const int ahead)
{
    const uint64_t mh = oc__wire_msg_hdr(0, src, len);
    const uint64_t skey = oc__eng_fkey(src, 0);
    const size_t msz = OC_WIRE_MSG_HDR_LEN + (size_t)len;
    const uint8_t *p = *pp;
    for (; dc < dend; dc += 4, p += len) {
        const uint32_t dst = oc__load_le32(dc);
        /* checked as read: a stream in shared memory is read in place,
         * and its rank may rewrite it after validation (the same bound
         * as validation's, so the header takes it whole) */
        if (unlikely(dst >= lim))
            break;
        /* the bundle itself, a few hundred nanoseconds ahead: a rank's
         * stream was written by the rank's core (a shared-memory slot,
         * or UCX's receive buffer), so each of its lines is a transfer
         * from another cache that the hardware prefetcher does not
         * start early enough */
        __builtin_prefetch(p + OC_ROUTER_READ_AHEAD, 0, 3);
        __builtin_prefetch(dc + OC_ROUTER_READ_AHEAD / 2, 0, 3);
        /* the outlet of an item a few ahead (at hundreds of destinations
         * the outlets are more than L1 holds; at tens it only costs) */
        if (ahead && dc + 32 < dend) {
            const uint32_t a = oc__load_le32(dc + 32);
            if (a < lim)
                __builtin_prefetch(hop[a], 1, 3);
        }
        oc_eng_out_t *eo = &hop[dst]->eo; /* never NULL: rjob_t.none */
        uint8_t *wp = eo->wp;
        /* no buffer: wp == end == NULL, no room */
        const size_t room = (size_t)(eo->end - wp);
        if (likely(eo->item_len == OC_ENG_NO_ITEM && room >= msz)) {
            oc__store_le64(wp, mh | dst);
            memcpy(wp + OC_WIRE_MSG_HDR_LEN, p, len);
            /* the line this outlet writes next-but-one, for writing (a
             * ring slot toward a rank on shared memory: its lines were
             * last read by the rank's core, each write a transfer) */
            __builtin_prefetch(wp + 128, 1, 3);
            eo->wp = wp + msz;
            eo->count++;
            continue;
        }
        if (eo->dcol != NULL && eo->item_len == len && room >= len) {
            /* a source column (wire.h): this source into its column */
            const uint32_t n = eo->count;
            oc__store_le32(eo->dcol + 4 * (size_t)n, src);
            memcpy(wp, p, len);
            __builtin_prefetch(wp + 128, 1, 3); /* as below */
            eo->wp = wp + len;
            eo->count = n + 1;
            continue;
        }
        if (len == 8) {
            if (unlikely(eo->fkey8 != (skey | oc__eng_fkey(0, dst)) ||
                         room < 8))
                break;
        } else if (unlikely(eo->item_len != len || eo->fsrc != src ||
                            eo->fdst != dst || room < len)) {
            break;
        }
        memcpy(wp, p, len);
        /* as above: a ring slot's lines were last read by its rank */
        __builtin_prefetch(wp + 128, 1, 3);
        eo->wp = wp + len;
    }
    *pp = p;
    return dc;
}

/* Route what can be routed of @p e: RX_DONE when all of it is, else
 * RX_HOLD (a held next hop) or RX_NOBUF; e->done says how far it got. */
static int route_bundle(oc_router_t *r, rjob_t *j, oc_eng_rx_t *e)
{
    oc_wire_iter_t it;
    uint32_t i = e->done;
    int finished = RX_DONE;

    /* a rank's fixed-size bundle, all for one rank (per-dest mode) */
    if (i == 0 && (e->hdr.flags & OC_WIRE_F_FIXED) &&
        e->hdr.dst != OC_WIRE_RANK_NONE && e->len <= r->p.bundle_size) {
        out_t *o = next_hop(j, e->hdr.dst);
        int res = !o->none ? forward_whole(r, e, o) : RX_DONE;
        if (res != RX_DONE)
            return res;
        if (o->none) /* a local rank that left: undeliverable (as below) */
            drop_none(r, j, e->hdr.dst, e->hdr.count);
        CNT_ADD(r->c.msgs, e->hdr.count);
        CNT_ADD(j->c.msgs_in, e->hdr.count);
        e->done = e->hdr.count;
        return RX_DONE;
    }

    /* the routing kernel: every message of a rank's stream or another
     * agent's bundle to its next hop's outlet.  The message headers (or a
     * column stream's destinations) are read in place, validated already;
     * an item for an open fixed-size buffer of the same source and
     * destination is one copy. */
    oc__wire_iter_init(&it, e->data, &e->hdr);
    oc__wire_iter_skip(&it, i);
    if (it.col != NULL) {
        /* a rank's column stream: one source, one length; the
         * destinations are an array.  route_col takes every item whose
         * next hop has an open buffer with room; route_msg the rest. */
        const uint32_t src = e->hdr.src, len = e->hdr.item_size;
        const size_t stride = oc__wire_pad8(len);
        const uint8_t *dc = it.col, *const dend = it.col + 4 * (size_t)it.left;
        const uint8_t *p = it.p;
        /* validation's bound (wire.c): below it, a rank fits its
         * 24-bit field */
        const uint32_t nranks = j->map->size < OC_WIRE_MAX_RANKS
                                    ? j->map->size : OC_WIRE_MAX_RANKS;
        while (dc < dend) {
            if (len == 8 && nranks <= OC_ROUTER_FEW_RANKS)
                dc = route_col(j->hop, nranks, src, dc, dend, &p, 8, 0);
            else if (len == 8)
                dc = route_col(j->hop, nranks, src, dc, dend, &p, 8, 1);
            else if (len == 16 && nranks <= OC_ROUTER_FEW_RANKS)
                dc = route_col(j->hop, nranks, src, dc, dend, &p, 16, 0);
            else if (len == 16)
                dc = route_col(j->hop, nranks, src, dc, dend, &p, 16, 1);
            else if ((len & 7) == 0)
                dc = route_col(j->hop, nranks, src, dc, dend, &p, len, 1);
            if (dc == dend)
                break;
            const uint32_t dst = oc__load_le32(dc);
            if (unlikely(dst >= nranks)) {
                /* a destination out of range in a stream read in place
                 * (shared memory: checked here, as it is read, not by
                 * validation): the rest of the bundle is rejected */
                reject(r, j, OC_ERR_WIRE_RANK);
                break;
            }
            int res = route_msg(r, j, dst, src, p, len);
            if (unlikely(res != RX_DONE)) {
                finished = res;
                break;
            }
            dc += 4;
            p += stride;
        }
        i += (uint32_t)((size_t)(dc - it.col) / 4);
    } else if (it.fixed || it.runs) {
        /* a fixed bundle not forwarded whole, or a peer's runs */
        oc_wire_msg_t m;
        while (oc__wire_iter_next(&it, &m)) {
            int res = route_msg(r, j, m.dst, m.src, m.payload, m.len);
            if (unlikely(res != RX_DONE)) {
                finished = res;
                break;
            }
            i++;
        }
    } else {
        const uint8_t *p = it.p;
        for (uint32_t left = it.left; left > 0; left--) {
            const uint64_t mh = oc__load_le64(p);
            const uint32_t len = (uint32_t)(mh >> 48);
            int res = route_msg(r, j, (uint32_t)(mh & 0xffffffu),
                                (uint32_t)((mh >> 24) & 0xffffffu),
                                p + OC_WIRE_MSG_HDR_LEN, len);
            if (unlikely(res != RX_DONE)) {
                finished = res;
                break;
            }
            p += OC_WIRE_MSG_HDR_LEN + oc__wire_pad8(len);
            i++;
        }
    }
    CNT_ADD(r->c.msgs, i - e->done);
    CNT_ADD(j->c.msgs_in, i - e->done);
    e->done = i;
    return finished;
}

static void return_credit(oc_router_t *r, sender_t *s)
{
    rjob_t *j;
    lrank_t *l;
    r->credits_owed = 1;
    if (s->is_peer) {
        r->peers[s->node].owed++;
        return;
    }
    j = oc__router_job_find(r, s->job);
    if (j == NULL || s->rank >= j->map->size || (l = j->local[s->rank]) == NULL)
        return;
    if (l->shm != NULL)
        return; /* shared memory: the ring is its window, no credits */
    l->credits++;
}

/* Credits back to the ranks whose bundles were routed, and to the peers
 * whose bundles are done here. */
void oc__router_send_credits(oc_router_t *r)
{
    if (!r->credits_owed)
        return;
    r->credits_owed = 0;
    for (int k = 0; k < OC_ROUTER_MAX_JOBS; k++) {
        rjob_t *j = &r->jobs[k];
        if (j->map == NULL)
            continue;
        for (uint32_t i = 0; i < j->map->size; i++) {
            lrank_t *l = j->local[i];
            if (l == NULL || l->credits == 0 || l->ep == NULL)
                continue;
            oc_am_credit_t m = {OC_AM_CREDIT_MAGIC, l->credits};
            if (oc__tr_send_small(l->ep, OC_AM_CREDIT, 0, &m, sizeof(m)) ==
                OC_OK)
                l->credits = 0;
            else
                r->credits_owed = 1; /* try again next turn */
        }
    }
    for (uint32_t n = 0; n < r->p.nnodes; n++) {
        peer_t *p = &r->peers[n];
        if (p->owed == 0 || p->ep == NULL)
            continue;
        oc_am_credit_t m = {OC_AM_CREDIT_MAGIC, p->owed};
        if (oc__tr_send_small(p->ep, OC_AM_CREDIT, p->send_token, &m,
                             sizeof(m)) == OC_OK)
            p->owed = 0;
        else
            r->credits_owed = 1;
    }
}

/* A peer router returns credit (inside oc__tr_progress).  Only an
 * authenticated peer's token counts, and never past the window. */
void oc__router_credit_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_router_t *r = arg;
    sender_t *s = oc__router_sender_find(r, token);
    oc_am_credit_t m;
    peer_t *p;

    if (s == NULL || !s->is_peer || len != sizeof(m))
        return;
    memcpy(&m, data, sizeof(m));
    if (m.magic != OC_AM_CREDIT_MAGIC)
        return;
    p = &r->peers[s->node];
    p->credits = m.credits > OC_ROUTER_PEER_WINDOW - p->credits
                     ? OC_ROUTER_PEER_WINDOW : p->credits + m.credits;
    peer_drain(r, p);
}

/* A token no sender has yet, but an authenticated peer's that is about to
 * be added (oc__router_expect_peer). */
static int expected_peer(const oc_router_t *r, uint64_t token)
{
    for (uint32_t n = 0; token != 0 && n < r->p.nnodes; n++)
        if (r->peers[n].expect_token == token)
            return 1;
    return 0;
}

/* Validate (once) and route bundle @p e. */
static int route_one(oc_router_t *r, oc_eng_rx_t *e)
{
    sender_t *s = oc__router_sender_find(r, e->token);
    rjob_t *j = NULL;
    oc_status_t st = OC_OK;

    if (s == NULL && expected_peer(r, e->token) &&
        oc__now_us() - e->t_arrival < OC_ROUTER_UNKNOWN_JOB_WAIT_US)
        return RX_HOLD; /* its ADD_PEER is on the way: retry later */
    if (s == NULL) {
        oc_debug(OC_COMP_ROUTER, "router %u: bundle with unknown token "
                 "%016llx", r->p.index, (unsigned long long)e->token);
        st = OC_ERR_STATE;
    } else if (!e->validated) {
        oc_wire_check_t chk;
        uint32_t job = s->job;
        /* A peer carries many jobs: the bundle names its own, which
         * must be one this node serves; validation then holds it to
         * that job's ranks. */
        if (s->is_peer && !oc__wire_peek_job(e->data, e->len, &job))
            job = 0;
        j = oc__router_job_find(r, job);
        if (j == NULL && s->is_peer &&
            oc__now_us() - e->t_arrival < OC_ROUTER_UNKNOWN_JOB_WAIT_US) {
            if (atomic_load_explicit(&r->cmd_pending, memory_order_acquire))
                oc__router_apply_commands(r);
            if ((j = oc__router_job_find(r, job)) == NULL)
                return RX_HOLD; /* not yet known here: retry later */
        }
        if (j == NULL) {
            st = OC_ERR_WIRE_JOB;
        } else {
            chk.job = j->map->job;
            chk.nranks = j->map->size;
            chk.dst = OC_WIRE_RANK_NONE;
            chk.src = s->is_peer ? OC_WIRE_RANK_NONE : s->rank;
            /* a stream in shared memory: its destinations are checked as
             * routed (route_col), where a rank cannot change them any
             * more; checking them here too would prove nothing */
            chk.flags = e->shm != NULL ? OC_WIRE_CHECK_DST_AT_USE : 0;
            st = oc__wire_validate(e->data, e->len, &chk, &e->hdr);
            if (st == OC_OK && e->shm != NULL &&
                !(e->hdr.flags & OC_WIRE_F_FIXED) && e->self_buf == NULL) {
                /* rows of headers read in place could change under us (a
                 * column stream's destinations are re-checked as read,
                 * route_col): route a private copy, validated again */
                oc_eng_buf_t *b;
                if (e->len > r->eng->p.bundle_size) {
                    st = OC_ERR_WIRE_LENGTH;
                } else if ((b = oc__eng_buf_get(r->eng)) == NULL) {
                    return RX_NOBUF;
                } else {
                    memcpy(b->data, e->data, e->len);
                    e->self_buf = b;
                    e->data = b->data;
                    st = oc__wire_validate(e->data, e->len, &chk, &e->hdr);
                }
            }
            if (st == OC_OK && s->is_peer &&
                (e->hdr.flags & OC_WIRE_F_STREAM))
                st = OC_ERR_WIRE_FLAGS; /* streams come from ranks only */
            if (st == OC_OK && (e->hdr.flags & OC_WIRE_F_SRCCOL))
                st = OC_ERR_WIRE_FLAGS; /* an agent's, for a rank only */
            if (st == OC_OK && s->is_peer)
                st = check_peer_bundle(r, j, e, s->node);
        }
        if (st == OC_OK) {
            e->validated = 1;
            CNT_ADD(r->c.bundles_in, 1);
            CNT_ADD(r->c.bytes_in, e->len);
            CNT_ADD(j->c.bundles_in, 1);
            CNT_ADD(j->c.bytes_in, e->len);
            if (s->is_peer) {
                peer_t *p = &r->peers[s->node];
                CNT_ADD(p->c.bundles_in, 1);
                CNT_ADD(p->c.bytes_in, e->len);
                CNT_ADD(p->c.msgs_in, e->hdr.count);
            }
        }
    } else {
        j = oc__router_job_find(r, e->hdr.job);
        if (j == NULL)
            st = OC_ERR_WIRE_JOB; /* job ended meanwhile */
    }
    if (st != OC_OK) {
        reject(r, j, st);
        if (s != NULL && s->is_peer)
            return_credit(r, s); /* a peer's window must not leak */
    } else {
        int res = route_bundle(r, j, e);
        if (res != RX_DONE)
            return res;
        return_credit(r, s);
    }
    if (e->shm != NULL)
        oc__router_shm_release(r, e);
    else
        oc__tr_release(r->w, e->data);
    return RX_DONE;
}

/* Process the receive ring.  A bundle that cannot go on now holds back
 * only its sender's later bundles (each sender's order is kept), so one
 * stalled receiver does not stall the other ranks and jobs this router
 * serves.  Returns the number of bundles finished. */
uint32_t oc__router_route_all(oc_router_t *r)
{
    const uint32_t n = r->rx.count;
    uint64_t held_tok[OC_ROUTER_MAX_HELD];
    uint32_t finished = 0, kept = 0, nheld = 0;
    int stop = 0;

    for (uint32_t k = 0; k < n; k++) {
        oc_eng_rx_t *e = oc__eng_ring_at(&r->rx, k);
        int keep = stop;
        for (uint32_t h = 0; !keep && h < nheld; h++)
            keep = held_tok[h] == e->token;
        if (!keep) {
            /* Commands first: whatever was posted before this bundle could
             * be sent (a rank registered here before its job was released,
             * its first bundle, a peer's bundle for it) must be in force,
             * or a message for a rank not yet applied would look
             * undeliverable. */
            if (atomic_load_explicit(&r->cmd_pending, memory_order_acquire))
                oc__router_apply_commands(r);
            int res = route_one(r, e);
            /* a command may have progressed the worker (an endpoint
             * closed) and grown the ring: find the entry again */
            e = oc__eng_ring_at(&r->rx, k);
            if (res == RX_NOBUF) {
                keep = stop = 1;
            } else if (res == RX_HOLD) {
                keep = 1;
                if (nheld < OC_ROUTER_MAX_HELD)
                    held_tok[nheld++] = e->token;
                else
                    stop = 1;
            }
        }
        if (keep) {
            if (kept != k)
                *oc__eng_ring_at(&r->rx, kept) = *e;
            kept++;
        } else {
            finished++;
        }
    }
    oc__eng_ring_compact(&r->rx, n, kept);
    CNT_ADD(r->c.backlog, r->rx.count - r->c.backlog);
    return finished;
}

/* Transport receive callback (inside oc__tr_progress): queue the bundle.
 * Out of memory: engine.h's policy — refused, released, counted as a
 * rejected bundle. */
void oc__router_bundle_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_router_t *r = arg;
    oc_eng_rx_t *e = oc__eng_ring_push(&r->rx);
    if (e == NULL) {
        oc__tr_release(r->w, data);
        CNT_ADD(r->c.rejects, 1);
        return;
    }
    e->data = data;
    e->len = len > UINT32_MAX ? 0 : (uint32_t)len;
    e->token = token;
    e->t_arrival = oc__now_us();
}
