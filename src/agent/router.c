/*
 * router.c — one routing thread of offcored: receive bundles, validate,
 * re-aggregate every message per next hop, flush on full / timeout /
 * idle, hold back under back-pressure (see router.h).
 */
#include "router.h"

#include "util/log.h"
#include "wire/am.h"
#include "wire/wire.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OC_ROUTER_MAX_JOBS 64
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

typedef struct rbuf {
    oc_tr_op_t    op;
    oc_router_t  *r;
    struct out   *out;   /* the next hop it was sent to */
    uint8_t      *data;
    struct rbuf  *next;
} rbuf_t;

typedef struct {
    oc_tr_ep_t *ep;
    uint64_t    send_token, recv_token;
    oc_router_peer_counters_t c; /* written by the router only */
} peer_t;

/* Aggregation toward one next hop (a local rank, or a peer for a job). */
typedef struct out {
    uint8_t    *wp, *end;
    uint32_t    count;
    uint8_t     listed, blocked;
    rbuf_t     *buf;
    uint64_t    t_first;
    uint64_t    seq;
    uint32_t    inflight;
    oc_tr_ep_t *ep;        /* NULL: gone */
    uint64_t    token;     /* header of bundles to it */
    uint32_t    job;
    oc_router_job_counters_t *jc;
    peer_t     *peer;      /* the peer node it sends to; NULL: a local rank */
} out_t;

typedef struct {
    oc_tr_ep_t *ep;
    uint64_t    token;     /* sender token of this rank's bundles */
    uint32_t    credits;   /* bundles routed, credit not yet returned */
    out_t       out;
} lrank_t;

typedef struct {
    _Atomic uint32_t tag;  /* job id + 1; 0: free slot (for readers) */
    oc_job_map_t    *map;
    lrank_t        **local; /* [size]: NULL unless the rank is on this node */
    out_t           *to_node; /* [nnodes] */
    oc_router_job_counters_t c; /* written by the router only */
} rjob_t;

typedef struct {
    uint64_t token;
    int      is_peer;
    uint32_t job, rank, node; /* rank sender: job/rank; peer: node */
} sender_t;

typedef struct {
    uint8_t      *data;
    uint32_t      len;
    uint32_t      done;     /* messages routed */
    uint64_t      token;
    uint64_t      t_arrival;  /* us */
    uint8_t       validated;
    oc_wire_hdr_t hdr;
} rx_t;

/* A peer's bundle may arrive before this agent has heard (on the control
 * channel) of the job it belongs to: wait that long before rejecting. */
#define OC_ROUTER_UNKNOWN_JOB_WAIT_US 5000000u

typedef enum {
    CMD_ADD_RANK, CMD_DEL_RANK, CMD_ADD_JOB, CMD_DEL_JOB, CMD_ADD_PEER,
    CMD_DEL_PEER
} cmd_kind_t;

typedef struct cmd {
    cmd_kind_t    kind;
    uint32_t      job, rank, node;
    uint64_t      token, token2;
    oc_job_map_t *map;
    size_t        addr_len;
    struct cmd   *next;
    uint8_t       addr[];
} cmd_t;

struct oc_router {
    oc_router_params_t p;
    oc_tr_context_t   *tr;
    oc_tr_worker_t    *w;
    pthread_t          tid;
    int                started;
    _Atomic int        stop;
    /* commands */
    pthread_mutex_t    mu;
    int                wake_fd;     /* eventfd: commands, stop */
    cmd_t             *cmd_head, **cmd_tail;
    _Atomic int        cmd_pending;
    /* state private to the thread */
    rjob_t             jobs[OC_ROUTER_MAX_JOBS];
    peer_t            *peers;       /* [nnodes] */
    sender_t          *senders;
    uint32_t           nsenders, senders_cap;
    rx_t              *rxq;
    uint32_t           rx_head, rx_count, rx_cap;
    rbuf_t            *free_bufs;
    rbuf_t            *descs;
    uint8_t           *mem;
    out_t            **dirty;
    uint32_t           ndirty, dirty_cap;
    uint64_t           inflight;
    oc_router_counters_t c;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define CNT_ADD(field, v) \
    atomic_store_explicit((_Atomic uint64_t *)&(field), (field) + (v), \
                          memory_order_relaxed)

/* ---- job maps --------------------------------------------------------- */

oc_job_map_t *oc_job_map_new(uint32_t job, uint32_t size, uint32_t nnodes)
{
    oc_job_map_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->node_of = calloc(size, sizeof(*m->node_of));
    if (m->node_of == NULL) {
        free(m);
        return NULL;
    }
    m->job = job;
    m->size = size;
    m->nnodes = nnodes;
    m->refs = 1;
    return m;
}

void oc_job_map_put(oc_job_map_t *m)
{
    if (m == NULL)
        return;
    if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free(m->node_of);
        free(m);
    }
}

/* ---- buffers and sending ---------------------------------------------- */

static void out_unblock(oc_router_t *r, out_t *o)
{
    o->blocked = 0;
    CNT_ADD(r->c.blocklist_depth, (uint64_t)-1);
    if (o->peer != NULL)
        CNT_ADD(o->peer->c.blocked, (uint64_t)-1);
}

static void send_done(oc_tr_op_t *op, oc_status_t st)
{
    rbuf_t *b = (rbuf_t *)op;
    oc_router_t *r = b->r;
    out_t *o = b->out;

    if (st != OC_OK)
        oc_debug(OC_COMP_AGENT, "router %u: a bundle to a next hop failed",
                 r->p.index);
    r->inflight--;
    if (o != NULL) { /* NULL: the next hop went away meanwhile */
        o->inflight--;
        if (o->blocked && o->inflight < r->p.max_inflight)
            out_unblock(r, o);
    }
    b->next = r->free_bufs;
    r->free_bufs = b;
}

/* Send @p b (@p len bytes, header written, @p count messages) to @p o. */
static void out_send(oc_router_t *r, out_t *o, rbuf_t *b, uint32_t len,
                     uint32_t count)
{
    oc_status_t st;

    if (o->ep == NULL) { /* next hop went away: the job is failing */
        b->next = r->free_bufs;
        r->free_bufs = b;
        return;
    }
    b->out = o;
    b->op.token = o->token;
    CNT_ADD(r->c.bundles_out, 1);
    CNT_ADD(r->c.bytes_out, len);
    CNT_ADD(o->jc->bundles_out, 1);
    CNT_ADD(o->jc->bytes_out, len);
    CNT_ADD(o->jc->msgs_out, count);
    if (o->peer != NULL) {
        CNT_ADD(o->peer->c.bundles_out, 1);
        CNT_ADD(o->peer->c.bytes_out, len);
        CNT_ADD(o->peer->c.msgs_out, count);
    }
    st = oc_tr_send(o->ep, OC_AM_BUNDLE, b->data, len, &b->op);
    if (st == OC_INPROGRESS) {
        o->inflight++;
        r->inflight++;
        if (!o->blocked && o->inflight >= r->p.max_inflight) {
            o->blocked = 1;
            CNT_ADD(r->c.blocklist_depth, 1);
            if (o->peer != NULL)
                CNT_ADD(o->peer->c.blocked, 1);
        }
    } else {
        b->next = r->free_bufs;
        r->free_bufs = b;
    }
}

static void out_flush(oc_router_t *r, out_t *o, int reason)
{
    rbuf_t *b = o->buf;
    oc_wire_hdr_t h;
    uint32_t len;

    if (b == NULL)
        return;
    len = (uint32_t)(o->wp - b->data);
    memset(&h, 0, sizeof(h));
    h.count = o->count;
    h.length = len;
    h.src_hop = r->p.node;
    h.job = o->job;
    h.seq = o->seq++;
    h.src = h.dst = OC_WIRE_RANK_NONE;
    oc_wire_hdr_write(b->data, &h);
    o->buf = NULL;
    o->wp = o->end = NULL;
    o->count = 0;
    switch (reason) {
    case 0: CNT_ADD(r->c.flush_full, 1); break;
    case 1: CNT_ADD(r->c.flush_timeout, 1); break;
    case 2: CNT_ADD(r->c.flush_idle, 1); break;
    default: CNT_ADD(r->c.flush_explicit, 1); break;
    }
    out_send(r, o, b, len, h.count);
}

static void flush_dirty(oc_router_t *r, int reason, uint64_t now)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < r->ndirty; i++) {
        out_t *o = r->dirty[i];
        if (o->buf != NULL && reason == 1 &&
            now - o->t_first < r->p.flush_timeout_us) {
            r->dirty[keep++] = o;
            continue;
        }
        out_flush(r, o, reason);
        o->listed = 0;
    }
    r->ndirty = keep;
}

/* Open a buffer on @p o; 0 when the pool is empty. */
static int out_open(oc_router_t *r, out_t *o)
{
    rbuf_t *b = r->free_bufs;
    if (b == NULL)
        return 0;
    r->free_bufs = b->next;
    o->buf = b;
    o->wp = b->data + OC_WIRE_HDR_LEN;
    o->end = b->data + r->p.bundle_size;
    o->count = 0;
    o->t_first = now_us();
    if (!o->listed) {
        if (r->ndirty == r->dirty_cap) {
            uint32_t ncap = r->dirty_cap ? r->dirty_cap * 2 : 64;
            out_t **n = realloc(r->dirty, ncap * sizeof(*n));
            if (n == NULL) {
                r->free_bufs = b;
                o->buf = NULL;
                o->wp = o->end = NULL;
                return 0;
            }
            r->dirty = n;
            r->dirty_cap = ncap;
        }
        r->dirty[r->ndirty++] = o;
        o->listed = 1;
    }
    return 1;
}

/* ---- routing ---------------------------------------------------------- */

static void apply_commands(oc_router_t *r);

static sender_t *sender_find(oc_router_t *r, uint64_t token)
{
    if (token == 0)
        return NULL;
    for (uint32_t i = 0; i < r->nsenders; i++)
        if (r->senders[i].token == token)
            return &r->senders[i];
    return NULL;
}

static rjob_t *job_find(oc_router_t *r, uint32_t job)
{
    for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
        if (r->jobs[i].map != NULL && r->jobs[i].map->job == job)
            return &r->jobs[i];
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
        oc_warn(OC_COMP_AGENT, "router %u: rejected a bundle: %s", r->p.index,
                oc_status_string(why));
}

uint32_t oc_route_hop(int grid, uint32_t nnodes, uint32_t a, uint32_t b)
{
    uint32_t cols, h;
    if (!grid || a == b)
        return b;
    cols = 1;
    while (cols * cols < nnodes)
        cols++;
    h = (a / cols) * cols + b % cols;     /* a's row, b's column */
    if (h == a)                           /* same column: straight down */
        return b;
    if (h < nnodes)
        return h;
    h = (b / cols) * cols + a % cols;     /* the other corner */
    return h < nnodes && h != b ? h : b;
}

/* The next hop of a message for @p dst. */
static inline out_t *next_hop(oc_router_t *r, rjob_t *j, uint32_t dst)
{
    uint32_t node = j->map->node_of[dst];
    if (node == r->p.node) {
        lrank_t *l = j->local[dst];
        return l != NULL ? &l->out : NULL;
    }
    return &j->to_node[oc_route_hop(r->p.grid, r->p.nnodes, r->p.node, node)];
}

/* Check what only the sender's identity tells: a peer may only hand us a
 * message when the link peer -> us is on that message's path (direct:
 * from a rank on the peer's node to a rank on ours; grid: either hop). */
static oc_status_t check_peer_bundle(oc_router_t *r, rjob_t *j,
                                     const rx_t *e, uint32_t node)
{
    oc_wire_iter_t it;
    oc_wire_msg_t m;
    oc_wire_iter_init(&it, e->data, &e->hdr);
    while (oc_wire_iter_next(&it, &m)) {
        uint32_t s = j->map->node_of[m.src], d = j->map->node_of[m.dst];
        uint32_t h = oc_route_hop(r->p.grid, r->p.nnodes, s, d);
        int first = s == node && h == r->p.node;
        int second = h == node && d == r->p.node && h != s;
        if (!first && !second)
            return OC_ERR_WIRE_RANK;
    }
    return OC_OK;
}

/* What became of a bundle: routed (or rejected) and released, or kept for
 * later — held by its sender's blocked next hop or a job not yet known
 * (only that sender waits), or short of buffers (everything waits). */
enum { RX_DONE, RX_HOLD, RX_NOBUF };

/* Forward a fixed-size bundle whole to @p o.  Every message of such a
 * bundle has one destination (the header's), so it needs no
 * re-aggregation, only a copy: the received data is UCX's until released,
 * and a send may complete later.  Messages already aggregated toward the
 * same next hop go first, which keeps each sender's order.  Returns RX_DONE
 * when sent, RX_HOLD (blocked next hop) or RX_NOBUF when it must wait. */
static int forward_whole(oc_router_t *r, rx_t *e, out_t *o)
{
    oc_wire_hdr_t h = e->hdr;
    rbuf_t *b;

    if (o->blocked)
        return RX_HOLD;
    if (o->buf != NULL) {
        out_flush(r, o, 3);
        if (o->blocked)
            return RX_HOLD;
    }
    if ((b = r->free_bufs) == NULL)
        return RX_NOBUF;
    r->free_bufs = b->next;
    memcpy(b->data, e->data, e->len);
    h.src_hop = r->p.node;
    h.seq = o->seq++;
    oc_wire_hdr_write(b->data, &h);
    CNT_ADD(r->c.bundles_forwarded, 1);
    out_send(r, o, b, e->len, h.count);
    return RX_DONE;
}

/* Route what can be routed of @p e: RX_DONE when all of it is, else
 * RX_HOLD (a blocked next hop) or RX_NOBUF; e->done says how far it got. */
static int route_bundle(oc_router_t *r, rjob_t *j, rx_t *e)
{
    oc_wire_iter_t it;
    oc_wire_msg_t m;
    uint32_t i = e->done;
    int finished = RX_DONE;

    /* the common case: a rank's fixed-size bundle, all for one rank */
    if (i == 0 && (e->hdr.flags & OC_WIRE_F_FIXED) &&
        e->hdr.dst != OC_WIRE_RANK_NONE && e->len <= r->p.bundle_size) {
        out_t *o = next_hop(r, j, e->hdr.dst);
        int res = o != NULL ? forward_whole(r, e, o) : RX_DONE;
        if (res != RX_DONE)
            return res;
        if (o == NULL) /* a local rank that left: undeliverable (as below) */
            CNT_ADD(r->c.undeliverable, e->hdr.count);
        CNT_ADD(r->c.msgs, e->hdr.count);
        CNT_ADD(j->c.msgs_in, e->hdr.count);
        e->done = e->hdr.count;
        return RX_DONE;
    }

    oc_wire_iter_init(&it, e->data, &e->hdr);
    oc_wire_iter_skip(&it, i);
    while (oc_wire_iter_next(&it, &m)) {
        out_t *o = next_hop(r, j, m.dst);
        size_t need = OC_WIRE_MSG_HDR_LEN + oc_wire_pad8(m.len);
        if (unlikely(o == NULL)) { /* a local rank that left: undeliverable */
            CNT_ADD(r->c.undeliverable, 1);
            i++;
            continue;
        }
        if (unlikely(o->blocked)) {
            finished = RX_HOLD;
            break;
        }
        if (o->buf != NULL && o->wp + need > o->end)
            out_flush(r, o, 0);
        if (o->buf == NULL) {
            if (!out_open(r, o)) {
                finished = RX_NOBUF;
                break;
            }
        }
        o->wp = oc_wire_put_msg(o->wp, m.dst, m.src, m.payload, m.len);
        o->count++;
        i++;
    }
    CNT_ADD(r->c.msgs, i - e->done);
    CNT_ADD(j->c.msgs_in, i - e->done);
    e->done = i;
    return finished;
}

static void return_credit(oc_router_t *r, sender_t *s)
{
    rjob_t *j = job_find(r, s->job);
    lrank_t *l;
    if (j == NULL || s->rank >= j->map->size || (l = j->local[s->rank]) == NULL)
        return;
    l->credits++;
}

static void send_credits(oc_router_t *r)
{
    for (int k = 0; k < OC_ROUTER_MAX_JOBS; k++) {
        rjob_t *j = &r->jobs[k];
        if (j->map == NULL)
            continue;
        for (uint32_t i = 0; i < j->map->size; i++) {
            lrank_t *l = j->local[i];
            if (l == NULL || l->credits == 0 || l->ep == NULL)
                continue;
            oc_am_credit_t m = {OC_AM_CREDIT_MAGIC, l->credits};
            if (oc_tr_send_small(l->ep, OC_AM_CREDIT, 0, &m, sizeof(m)) ==
                OC_OK)
                l->credits = 0;
        }
    }
}

/* Senders a router can hold back at once while routing the others; past
 * that it stops the scan (the old head-of-line behaviour). */
#define OC_ROUTER_MAX_HELD 64

/* Validate (once) and route bundle @p e. */
static int route_one(oc_router_t *r, rx_t *e)
{
    sender_t *s = sender_find(r, e->token);
    rjob_t *j = NULL;
    oc_status_t st = OC_OK;

    if (s == NULL) {
        oc_debug(OC_COMP_AGENT, "router %u: bundle with unknown token "
                 "%016llx", r->p.index, (unsigned long long)e->token);
        st = OC_ERR_STATE;
    } else if (!e->validated) {
        oc_wire_check_t chk;
        uint32_t job = s->job;
        /* A peer carries many jobs: the bundle names its own, which
         * must be one this node serves; validation then holds it to
         * that job's ranks. */
        if (s->is_peer && !oc_wire_peek_job(e->data, e->len, &job))
            job = 0;
        j = job_find(r, job);
        if (j == NULL && s->is_peer &&
            now_us() - e->t_arrival < OC_ROUTER_UNKNOWN_JOB_WAIT_US) {
            if (atomic_load_explicit(&r->cmd_pending, memory_order_acquire))
                apply_commands(r);
            if ((j = job_find(r, job)) == NULL)
                return RX_HOLD; /* not yet known here: retry later */
        }
        if (j == NULL) {
            st = OC_ERR_WIRE_JOB;
        } else {
            chk.job = j->map->job;
            chk.nranks = j->map->size;
            chk.dst = OC_WIRE_RANK_NONE;
            chk.src = s->is_peer ? OC_WIRE_RANK_NONE : s->rank;
            st = oc_wire_validate(e->data, e->len, &chk, &e->hdr);
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
        j = job_find(r, e->hdr.job);
        if (j == NULL)
            st = OC_ERR_WIRE_JOB; /* job ended meanwhile */
    }
    if (st != OC_OK) {
        reject(r, j, st);
    } else {
        int res = route_bundle(r, j, e);
        if (res != RX_DONE)
            return res;
        if (!s->is_peer)
            return_credit(r, s);
    }
    oc_tr_release(r->w, e->data);
    return RX_DONE;
}

/* Process the receive queue.  A bundle that cannot go on now holds back
 * only its sender's later bundles (each sender's order is kept), so one
 * stalled receiver does not stall the other ranks and jobs this router
 * serves.  Returns the number of bundles finished. */
static uint32_t route_all(oc_router_t *r)
{
    const uint32_t mask = r->rx_cap - 1, n = r->rx_count;
    uint64_t held[OC_ROUTER_MAX_HELD];
    uint32_t finished = 0, kept = 0, nheld = 0;
    int stop = 0;

    for (uint32_t k = 0; k < n; k++) {
        rx_t *e = &r->rxq[(r->rx_head + k) & mask];
        int keep = stop;
        for (uint32_t h = 0; !keep && h < nheld; h++)
            keep = held[h] == e->token;
        if (!keep) {
            /* Commands first: whatever was posted before this bundle could
             * be sent (a rank registered here before its job was released,
             * its first bundle, a peer's bundle for it) must be in force,
             * or a message for a rank not yet applied would look
             * undeliverable. */
            if (atomic_load_explicit(&r->cmd_pending, memory_order_acquire))
                apply_commands(r);
            int res = route_one(r, e);
            if (res == RX_NOBUF) {
                keep = stop = 1;
            } else if (res == RX_HOLD) {
                keep = 1;
                if (nheld < OC_ROUTER_MAX_HELD)
                    held[nheld++] = e->token;
                else
                    stop = 1;
            }
        }
        if (keep) {
            if (kept != k)
                r->rxq[(r->rx_head + kept) & mask] = *e;
            kept++;
        } else {
            finished++;
        }
    }
    r->rx_count = kept;
    atomic_store_explicit((_Atomic uint64_t *)&r->c.backlog, r->rx_count,
                          memory_order_relaxed);
    return finished;
}

static void bundle_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_router_t *r = arg;
    rx_t *e;
    if (r->rx_count == r->rx_cap) {
        uint32_t ncap = r->rx_cap * 2;
        rx_t *n = malloc(ncap * sizeof(*n));
        if (n == NULL) {
            oc_error(OC_COMP_AGENT, "router %u: out of memory queueing a "
                     "bundle; refusing it", r->p.index);
            oc_tr_release(r->w, data);
            CNT_ADD(r->c.rejects, 1);
            return;
        }
        for (uint32_t i = 0; i < r->rx_count; i++)
            n[i] = r->rxq[(r->rx_head + i) & (r->rx_cap - 1)];
        free(r->rxq);
        r->rxq = n;
        r->rx_head = 0;
        r->rx_cap = ncap;
    }
    e = &r->rxq[(r->rx_head + r->rx_count) & (r->rx_cap - 1)];
    memset(e, 0, sizeof(*e));
    e->data = data;
    e->len = len > UINT32_MAX ? 0 : (uint32_t)len;
    e->token = token;
    e->t_arrival = now_us();
    r->rx_count++;
}

/* ---- commands --------------------------------------------------------- */

/* Wake the router if it sleeps (router_sleep). */
static void router_wake(oc_router_t *r)
{
    uint64_t one = 1;
    if (r->wake_fd >= 0)
        (void)!write(r->wake_fd, &one, sizeof one);
}

static oc_status_t post(oc_router_t *r, cmd_t *c)
{
    c->next = NULL;
    pthread_mutex_lock(&r->mu);
    *r->cmd_tail = c;
    r->cmd_tail = &c->next;
    atomic_store_explicit(&r->cmd_pending, 1, memory_order_release);
    pthread_mutex_unlock(&r->mu);
    router_wake(r);
    return OC_OK;
}

static cmd_t *cmd_new(cmd_kind_t kind, const void *addr, size_t len)
{
    cmd_t *c = calloc(1, sizeof(*c) + len);
    if (c == NULL)
        return NULL;
    c->kind = kind;
    c->addr_len = len;
    if (len)
        memcpy(c->addr, addr, len);
    return c;
}

oc_status_t oc_router_add_rank(oc_router_t *r, uint64_t token, uint32_t job,
                               uint32_t rank, const void *addr, size_t len)
{
    cmd_t *c = cmd_new(CMD_ADD_RANK, addr, len);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->token = token;
    c->job = job;
    c->rank = rank;
    return post(r, c);
}

oc_status_t oc_router_del_rank(oc_router_t *r, uint32_t job, uint32_t rank)
{
    cmd_t *c = cmd_new(CMD_DEL_RANK, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->job = job;
    c->rank = rank;
    return post(r, c);
}

oc_status_t oc_router_add_job(oc_router_t *r, oc_job_map_t *map)
{
    cmd_t *c = cmd_new(CMD_ADD_JOB, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    __atomic_add_fetch(&map->refs, 1, __ATOMIC_ACQ_REL);
    c->map = map;
    c->job = map->job;
    return post(r, c);
}

oc_status_t oc_router_del_job(oc_router_t *r, uint32_t job)
{
    cmd_t *c = cmd_new(CMD_DEL_JOB, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->job = job;
    return post(r, c);
}

oc_status_t oc_router_add_peer(oc_router_t *r, uint32_t node,
                               uint64_t send_token, uint64_t recv_token,
                               const void *addr, size_t len)
{
    cmd_t *c;
    if (node >= r->p.nnodes)
        return OC_ERR_INVALID_PARAM;
    c = cmd_new(CMD_ADD_PEER, addr, len);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->node = node;
    c->token = send_token;
    c->token2 = recv_token;
    return post(r, c);
}

oc_status_t oc_router_del_peer(oc_router_t *r, uint32_t node)
{
    cmd_t *c = cmd_new(CMD_DEL_PEER, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->node = node;
    return post(r, c);
}

static void sender_add(oc_router_t *r, const sender_t *s)
{
    if (r->nsenders == r->senders_cap) {
        uint32_t ncap = r->senders_cap ? r->senders_cap * 2 : 32;
        sender_t *n = realloc(r->senders, ncap * sizeof(*n));
        if (n == NULL) {
            oc_error(OC_COMP_AGENT, "router %u: out of memory", r->p.index);
            return;
        }
        r->senders = n;
        r->senders_cap = ncap;
    }
    r->senders[r->nsenders++] = *s;
}

static void sender_del(oc_router_t *r, int is_peer, uint32_t job,
                       uint32_t rank, uint32_t node)
{
    for (uint32_t i = 0; i < r->nsenders; i++) {
        sender_t *s = &r->senders[i];
        if (s->is_peer == is_peer &&
            (is_peer ? s->node == node : (s->job == job && s->rank == rank))) {
            r->senders[i] = r->senders[--r->nsenders];
            return;
        }
    }
}

/* An out buffer that goes away: flush what it holds, forget it.  Bundles
 * still in flight to it complete later (or are purged when the worker
 * goes): they must not find it then. */
static void out_retire(oc_router_t *r, out_t *o)
{
    out_flush(r, o, 3);
    if (o->inflight > 0)
        for (uint64_t i = 0; i < r->p.buffers; i++)
            if (r->descs[i].out == o)
                r->descs[i].out = NULL;
    if (o->blocked)
        out_unblock(r, o);
    o->inflight = 0;
    for (uint32_t i = 0; i < r->ndirty; i++)
        if (r->dirty[i] == o) {
            r->dirty[i] = r->dirty[--r->ndirty];
            break;
        }
    o->listed = 0;
}

static void job_free(oc_router_t *r, rjob_t *j)
{
    for (uint32_t i = 0; i < j->map->size; i++) {
        lrank_t *l = j->local[i];
        if (l == NULL)
            continue;
        out_retire(r, &l->out);
        l->out.ep = NULL;
        oc_tr_ep_destroy(r->w, l->ep);
        free(l);
    }
    for (uint32_t n = 0; n < j->map->nnodes; n++)
        out_retire(r, &j->to_node[n]);
    free(j->local);
    free(j->to_node);
    oc_job_map_put(j->map);
    j->map = NULL;
    atomic_store(&j->tag, 0);
}

static void apply(oc_router_t *r, cmd_t *c)
{
    rjob_t *j;
    oc_status_t st;

    switch (c->kind) {
    case CMD_ADD_JOB:
        if (job_find(r, c->job) != NULL) {
            oc_job_map_put(c->map);
            break;
        }
        j = NULL;
        for (int i = 0; i < OC_ROUTER_MAX_JOBS && j == NULL; i++)
            if (r->jobs[i].map == NULL)
                j = &r->jobs[i];
        if (j == NULL) {
            oc_error(OC_COMP_AGENT, "router %u: more than %d jobs", r->p.index,
                     OC_ROUTER_MAX_JOBS);
            oc_job_map_put(c->map);
            break;
        }
        memset(&j->c, 0, sizeof(j->c));
        j->local = calloc(c->map->size, sizeof(*j->local));
        j->to_node = calloc(c->map->nnodes, sizeof(*j->to_node));
        if (j->local == NULL || j->to_node == NULL) {
            free(j->local);
            free(j->to_node);
            oc_job_map_put(c->map);
            break;
        }
        j->map = c->map;
        j->c.job = c->job;
        for (uint32_t n = 0; n < c->map->nnodes; n++) {
            j->to_node[n].ep = r->peers[n].ep;
            j->to_node[n].token = r->peers[n].send_token;
            j->to_node[n].job = c->job;
            j->to_node[n].jc = &j->c;
            j->to_node[n].peer = n != r->p.node ? &r->peers[n] : NULL;
        }
        atomic_store(&j->tag, c->job + 1);
        break;
    case CMD_DEL_JOB:
        if ((j = job_find(r, c->job)) != NULL)
            job_free(r, j);
        break;
    case CMD_ADD_RANK: {
        lrank_t *l;
        sender_t s = {c->token, 0, c->job, c->rank, r->p.node};
        j = job_find(r, c->job);
        if (j == NULL || c->rank >= j->map->size || j->local[c->rank]) {
            oc_error(OC_COMP_AGENT, "router %u: cannot add rank %u of job %u",
                     r->p.index, c->rank, c->job);
            break;
        }
        l = calloc(1, sizeof(*l));
        if (l == NULL)
            break;
        st = oc_tr_ep_create(r->w, c->addr, 0, &l->ep);
        if (st != OC_OK) {
            free(l);
            break;
        }
        l->token = c->token;
        l->out.ep = l->ep;
        l->out.job = c->job;
        l->out.jc = &j->c;
        j->local[c->rank] = l;
        sender_add(r, &s);
        break;
    }
    case CMD_DEL_RANK:
        sender_del(r, 0, c->job, c->rank, 0);
        j = job_find(r, c->job);
        if (j != NULL && c->rank < j->map->size && j->local[c->rank]) {
            lrank_t *l = j->local[c->rank];
            l->out.ep = NULL; /* what is buffered for it is dropped */
            out_retire(r, &l->out);
            oc_tr_ep_destroy(r->w, l->ep);
            free(l);
            j->local[c->rank] = NULL;
        }
        break;
    case CMD_ADD_PEER: {
        sender_t s = {c->token2, 1, 0, 0, c->node};
        peer_t *p = &r->peers[c->node];
        if (p->ep != NULL)
            break;
        if (oc_tr_ep_create(r->w, c->addr, 1, &p->ep) != OC_OK)
            break;
        p->send_token = c->token;
        p->recv_token = c->token2;
        sender_add(r, &s);
        for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
            if (r->jobs[i].map != NULL) {
                r->jobs[i].to_node[c->node].ep = p->ep;
                r->jobs[i].to_node[c->node].token = p->send_token;
            }
        break;
    }
    case CMD_DEL_PEER: {
        peer_t *p = &r->peers[c->node];
        sender_del(r, 1, 0, 0, c->node);
        for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
            if (r->jobs[i].map != NULL) {
                r->jobs[i].to_node[c->node].ep = NULL;
                out_retire(r, &r->jobs[i].to_node[c->node]);
            }
        oc_tr_ep_destroy(r->w, p->ep);
        p->ep = NULL;
        break;
    }
    }
}

static void apply_commands(oc_router_t *r)
{
    cmd_t *c;
    pthread_mutex_lock(&r->mu);
    c = r->cmd_head;
    r->cmd_head = NULL;
    r->cmd_tail = &r->cmd_head;
    atomic_store_explicit(&r->cmd_pending, 0, memory_order_relaxed);
    pthread_mutex_unlock(&r->mu);
    while (c != NULL) {
        cmd_t *next = c->next;
        apply(r, c);
        free(c);
        c = next;
    }
}

/* ---- the thread ------------------------------------------------------- */

/* Idle: sleep until UCX has an event (something arrived), a command is
 * posted or 100 ms pass — so an idle agent costs no CPU.  With work that
 * no UCX event announces (bundles held for an unknown job or a blocked
 * next hop, sends in flight, buffers waiting for their timeout) it only
 * naps 50 us, as it always did. */
static void router_sleep(oc_router_t *r, uint64_t idle_us)
{
    static const struct timespec nap = {0, 50000};
    /* Short lulls (a busy job between bursts) only nap: arming and a
     * poll cost more than they save there, and on shared cores the wake-up
     * latency slowed routing 2x.  Only an agent idle for 10 ms sleeps. */
    if (idle_us < 10000 || r->rx_count > 0 || r->inflight > 0 || r->ndirty > 0 ||
        r->wake_fd < 0 || oc_tr_worker_efd(r->w) < 0) {
        nanosleep(&nap, NULL);
        return;
    }
    if (!oc_tr_worker_arm(r->w))
        return; /* events pending: progress them first */
    struct pollfd pfd[2] = {{.fd = oc_tr_worker_efd(r->w), .events = POLLIN},
                            {.fd = r->wake_fd, .events = POLLIN}};
    CNT_ADD(r->c.sleeps, 1);
    if (poll(pfd, 2, 100) > 0 && (pfd[1].revents & POLLIN)) {
        uint64_t v;
        (void)!read(r->wake_fd, &v, sizeof v);
    }
}

static void *router_main(void *arg)
{
    oc_router_t *r = arg;
    uint64_t idle_spins = 0, idle_since = 0;

    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        unsigned events;
        uint32_t done;

        if (atomic_load_explicit(&r->cmd_pending, memory_order_acquire))
            apply_commands(r);
        events = oc_tr_progress(r->w);
        done = route_all(r);
        if (done > 0 || events > 0) {
            idle_spins = 0;
            if (r->ndirty > 0)
                flush_dirty(r, 1, now_us());
        } else {
            /* Nothing arrived: nobody gains from waiting, send it all. */
            if (r->ndirty > 0)
                flush_dirty(r, 2, 0);
            /* Back off after a while so an agent sharing cores with the
             * application does not starve it (FACTS.md); a short spin
             * first keeps the latency of a busy period. */
            if (++idle_spins == 20000)
                idle_since = now_us();
            if (idle_spins > 20000)
                router_sleep(r, now_us() - idle_since);
        }
        send_credits(r);
    }
    /* drain: flush and complete what is in flight */
    flush_dirty(r, 3, 0);
    for (int k = 0; k < 100000 && r->inflight > 0; k++)
        oc_tr_progress(r->w);
    return NULL;
}

oc_status_t oc_router_create(const oc_router_params_t *p, oc_router_t **r_p)
{
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
    pthread_mutex_init(&r->mu, NULL);
    r->cmd_tail = &r->cmd_head;
    r->peers = calloc(p->nnodes, sizeof(*r->peers));
    r->rx_cap = 256;
    r->rxq = calloc(r->rx_cap, sizeof(*r->rxq));
    r->descs = calloc(p->buffers, sizeof(*r->descs));
    r->mem = aligned_alloc(64, p->buffers * p->bundle_size);
    if (r->peers == NULL || r->rxq == NULL || r->descs == NULL ||
        r->mem == NULL)
        goto err;
    for (uint64_t i = p->buffers; i-- > 0;) {
        rbuf_t *b = &r->descs[i];
        b->op.cb = send_done;
        b->r = r;
        b->data = r->mem + i * p->bundle_size;
        b->next = r->free_bufs;
        r->free_bufs = b;
    }
    r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((st = oc_tr_context_create_wakeup(&r->tr)) != OC_OK)
        goto err;
    if ((st = oc_tr_worker_create(r->tr, &r->w)) != OC_OK)
        goto err;
    if ((st = oc_tr_set_handler(r->w, OC_AM_BUNDLE, bundle_recv, r, 1)) !=
        OC_OK)
        goto err;
    *r_p = r;
    return OC_OK;
err:
    oc_router_destroy(r);
    return st;
}

oc_status_t oc_router_start(oc_router_t *r)
{
    if (pthread_create(&r->tid, NULL, router_main, r) != 0)
        return OC_ERR_NO_RESOURCE;
    r->started = 1;
    return OC_OK;
}

void oc_router_destroy(oc_router_t *r)
{
    if (r == NULL)
        return;
    if (r->started) {
        atomic_store(&r->stop, 1);
        router_wake(r);
        pthread_join(r->tid, NULL);
    }
    if (r->w != NULL) {
        apply_commands(r); /* free what was posted and not applied */
        for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
            if (r->jobs[i].map != NULL)
                job_free(r, &r->jobs[i]);
        for (uint32_t n = 0; n < r->p.nnodes; n++)
            oc_tr_ep_destroy(r->w, r->peers[n].ep);
        while (r->rx_count > 0) {
            oc_tr_release(r->w, r->rxq[r->rx_head].data);
            r->rx_head = (r->rx_head + 1) & (r->rx_cap - 1);
            r->rx_count--;
        }
    }
    oc_tr_worker_destroy(r->w);
    oc_tr_context_destroy(r->tr);
    pthread_mutex_destroy(&r->mu);
    if (r->wake_fd >= 0)
        close(r->wake_fd);
    free(r->senders);
    free(r->dirty);
    free(r->peers);
    free(r->rxq);
    free(r->descs);
    free(r->mem);
    free(r);
}

oc_status_t oc_router_address(oc_router_t *r, const void **addr, size_t *len)
{
    return oc_tr_worker_address(r->w, addr, len);
}

void oc_router_counters(const oc_router_t *r, oc_router_counters_t *out)
{
    const uint64_t *src = (const uint64_t *)&r->c;
    uint64_t *dst = (uint64_t *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        dst[i] = atomic_load_explicit((_Atomic uint64_t *)&src[i],
                                      memory_order_relaxed);
}

void oc_router_peer_counters(const oc_router_t *r, uint32_t node,
                             oc_router_peer_counters_t *out)
{
    const uint64_t *src = (const uint64_t *)&r->peers[node].c;
    uint64_t *dst = (uint64_t *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        dst[i] = atomic_load_explicit((_Atomic uint64_t *)&src[i],
                                      memory_order_relaxed);
}

uint32_t oc_router_job_counters(oc_router_t *r, oc_router_job_counters_t *out,
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
