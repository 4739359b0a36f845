/*
 * rb_kernel.c — one routing thread of offcored, in process, for
 * router-bench (rb_kernel.h): the router of this tree's src/agent/router,
 * unchanged, linked against an in-process transport instead of UCX.
 *
 * The seam is the transport (transport/transport.h), at link time: the
 * production router is not built differently and pays nothing for it.  The
 * router is driven only through router.h (create, add_job, add_rank,
 * start, counters, destroy), which every revision has, so this file builds
 * against another commit's router as well (bench/run-router-bench.sh).
 *
 * The transport here: a worker's "progress" hands the harness's pre-made
 * bundles to the router's bundle handler (persistent: read in place, as
 * UCX's are), at most `window` of them not yet released; a send to a
 * rank's endpoint is a sink that hands the bundle to the harness and
 * completes at once (the buffer goes back to the router's pool); credits
 * and the rest are accepted and dropped.  So a run costs what the routing
 * thread does per bundle and per message — validation, the routing loop,
 * flush policy, credits — and no network, copy or wake-up.
 *
 * The shared-memory channel (rb_params_t.shm_slots): every rank gets the
 * segment offcored's control side makes for it (oc__rshm_create, handed
 * to the router with the rank, mapped a second time as the rank maps it),
 * and the harness's thread plays all the ranks as liboffcore does: it
 * writes each bundle into its rank's "up" ring and publishes it (waking
 * the router if it sleeps), and reads the "down" rings, touching every
 * line of a delivery as the rank's handlers would, releasing the slots in
 * order.  The routing thread then runs its real shared-memory path —
 * rshm.c's poll and release, validation of bundles read in place,
 * deliveries written into the ranks' ring slots — against another core's
 * cache, as in offcored.  Its turns still call oc__tr_progress (no UCX
 * traffic), which marks the run's start and end on that thread.
 *
 * One kernel per module at a time (the transport finds it through a
 * static); the harness loads each revision's module once.
 */
#include "rb_kernel.h"

#include "router.h"
#include "transport/transport.h"
#include "wire/am.h"
#include "wire/shmseg.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define RB_ADDR_MAGIC 0x4b425252u /* "RRBK" */
#define RB_AM_IDS 16

typedef struct rbk {
    oc_router_t      *r;
    rb_params_t       p;
    int               done_fd;   /* the routing thread says: run complete */
    oc_tr_worker_t   *w;
    /* the run the harness posts (then seq, release, then the wake) */
    const rb_bundle_t *post_feed;
    uint64_t          post_n;
    rb_sink_t         post_sink;
    _Atomic uint64_t  seq;
    /* the routing thread's side: its copy of the run it is feeding */
    const rb_bundle_t *feed;
    uint64_t          n;
    rb_sink_t         sink;
    uint64_t          seen;      /* seq of that run */
    uint64_t          next;      /* next bundle of the feed */
    uint64_t          out;       /* handed over, not yet released */
    uint64_t          t0, cpu0, cpu1;
    _Atomic uint64_t  t1;
    uint64_t          bundles_out;
    _Atomic int       asleep;
    /* shared memory: the ranks' view of their segments; the run's end as
     * the ranks' thread saw it (the seq), taken up by the routing thread */
    oc_shmseg_t      *ranks;
    uint64_t          turns, idle_turns, last_work, last_cpu, busy_ns;
    int               running;
    _Atomic uint64_t  stop_seq;
} rbk_t;

static rbk_t *g_k; /* the one kernel of this module (see above) */
static volatile uint64_t rb_touched; /* what the ranks read: kept */

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* ---- the transport ---------------------------------------------------- */

struct oc_tr_context {
    int unused;
};

struct oc_tr_worker {
    oc_tr_recv_cb_t cb[RB_AM_IDS];
    void           *arg[RB_AM_IDS];
    int             efd;         /* the router sleeps on it; a run wakes it */
    uint8_t         addr[8];
};

struct oc_tr_ep {
    uint32_t rank;
    int      rank_ep;            /* an address of ours (a local rank) */
};

oc_status_t oc__tr_context_create_wakeup(oc_tr_context_t **ctx_p)
{
    oc_tr_context_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    *ctx_p = c;
    return OC_OK;
}

void oc__tr_context_destroy(oc_tr_context_t *ctx)
{
    free(ctx);
}

oc_status_t oc__tr_worker_create(oc_tr_context_t *ctx, oc_tr_worker_t **w_p)
{
    oc_tr_worker_t *w = calloc(1, sizeof(*w));
    (void)ctx;
    if (w == NULL)
        return OC_ERR_NO_MEMORY;
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->efd < 0) {
        free(w);
        return OC_ERR_NO_RESOURCE;
    }
    if (g_k != NULL)
        g_k->w = w;
    *w_p = w;
    return OC_OK;
}

void oc__tr_worker_destroy(oc_tr_worker_t *w)
{
    if (w == NULL)
        return;
    close(w->efd);
    free(w);
}

int oc__tr_worker_efd(oc_tr_worker_t *w)
{
    return w->efd;
}

/* Before the router sleeps: 1 (sleep) unless a run is waiting. */
int oc__tr_worker_arm(oc_tr_worker_t *w)
{
    rbk_t *k = g_k;
    uint64_t v;
    (void)!read(w->efd, &v, sizeof v);
    if (k != NULL &&
        atomic_load_explicit(&k->seq, memory_order_acquire) != k->seen)
        return 0;
    if (k != NULL)
        atomic_store_explicit(&k->asleep, 1, memory_order_release);
    return 1;
}

oc_status_t oc__tr_worker_address(oc_tr_worker_t *w, const void **addr,
                                 size_t *len)
{
    *addr = w->addr;
    *len = sizeof(w->addr);
    return OC_OK;
}

oc_status_t oc__tr_set_handler(oc_tr_worker_t *w, unsigned id,
                              oc_tr_recv_cb_t cb, void *arg, int persistent)
{
    (void)persistent; /* the feed's bundles outlive every run */
    if (id >= RB_AM_IDS)
        return OC_ERR_INVALID_PARAM;
    w->cb[id] = cb;
    w->arg[id] = arg;
    return OC_OK;
}

oc_status_t oc__tr_ep_create(oc_tr_worker_t *w, const void *addr,
                            int peer_err, oc_tr_ep_t **ep_p)
{
    oc_tr_ep_t *ep = calloc(1, sizeof(*ep));
    uint32_t a[2];
    (void)w;
    (void)peer_err;
    if (ep == NULL)
        return OC_ERR_NO_MEMORY;
    memcpy(a, addr, sizeof(a));
    ep->rank_ep = a[0] == RB_ADDR_MAGIC;
    ep->rank = a[1];
    *ep_p = ep;
    return OC_OK;
}

void oc__tr_ep_destroy(oc_tr_worker_t *w, oc_tr_ep_t *ep)
{
    (void)w;
    free(ep);
}

/* What the routing thread has done so far (a turn that changes none of
 * it was idle). */
static uint64_t shm_work(rbk_t *k)
{
    oc_router_counters_t c;
    oc__router_counters(k->r, &c);
    return c.msgs + c.shm_bundles_in + c.shm_bundles_out;
}

/* Shared memory, the routing thread's turn: mark a run's start (the
 * ranks' thread waits for it before publishing) and its end (after the
 * ranks' thread saw the last delivery): the thread's CPU time between.
 * On a shared machine the one thread that plays the ranks is not always
 * running, and the routing thread spins meanwhile: so every turn's CPU
 * time is read, and only the turns that did something count as busy
 * (rb_run_t.busy_cpu_ns; each pays one clock read and one counter
 * snapshot, both kernels alike). */
static unsigned shm_turn(rbk_t *k)
{
    const uint64_t seq = atomic_load_explicit(&k->seq, memory_order_acquire);
    uint64_t one = 1, work, cpu;

    if (seq != k->seen) {
        atomic_store_explicit(&k->asleep, 0, memory_order_relaxed);
        k->seen = seq;
        k->turns = k->idle_turns = k->busy_ns = 0;
        k->last_work = shm_work(k);
        k->running = 1;
        k->cpu0 = k->last_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        k->t0 = now_ns();
        (void)!write(k->done_fd, &one, sizeof one);
        return 0;
    }
    if (!k->running)
        return 0;
    k->turns++;
    work = shm_work(k);
    cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (work == k->last_work)
        k->idle_turns++;
    else
        k->busy_ns += cpu - k->last_cpu;
    k->last_work = work;
    k->last_cpu = cpu;
    if (atomic_load_explicit(&k->stop_seq, memory_order_acquire) == seq) {
        k->cpu1 = cpu;
        k->running = 0;
        (void)!write(k->done_fd, &one, sizeof one);
    }
    return 0;
}

/* The routing thread's turn: start a run the harness posted, then hand
 * over bundles up to the window. */
unsigned oc__tr_progress(oc_tr_worker_t *w)
{
    rbk_t *k = g_k;
    unsigned got = 0;
    uint64_t seq;

    if (k == NULL)
        return 0;
    if (k->ranks != NULL)
        return shm_turn(k);
    seq = atomic_load_explicit(&k->seq, memory_order_acquire);
    if (seq != k->seen) {
        atomic_store_explicit(&k->asleep, 0, memory_order_relaxed);
        k->seen = seq;
        k->feed = k->post_feed;
        k->n = k->post_n;
        k->sink = k->post_sink;
        k->next = 0;
        k->out = 0;
        k->bundles_out = 0;
        k->cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        k->t0 = now_ns();
    }
    while (k->next < k->n && k->out < k->p.window) {
        const rb_bundle_t *b = &k->feed[k->next++];
        k->out++;
        got++;
        /* the sender token of rank src (rb_create) */
        w->cb[OC_AM_BUNDLE](w->arg[OC_AM_BUNDLE], (uint64_t)b->src + 1,
                            (void *)b->data, b->len);
    }
    return got;
}

void oc__tr_release(oc_tr_worker_t *w, void *data)
{
    (void)w;
    (void)data;
    if (g_k != NULL && g_k->out > 0)
        g_k->out--;
}

/* A bundle to a local rank: the sink; done at once. */
oc_status_t oc__tr_send(oc_tr_ep_t *ep, unsigned id, const void *buf,
                       size_t len, oc_tr_op_t *op)
{
    rbk_t *k = g_k;
    (void)op;
    if (k == NULL || !ep->rank_ep || id != OC_AM_BUNDLE)
        return OC_OK;
    k->bundles_out++;
    if (k->sink.deliver(k->sink.arg, ep->rank, buf, (uint32_t)len)) {
        uint64_t one = 1, t1 = now_ns();
        k->cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        atomic_store_explicit(&k->t1, t1, memory_order_release);
        (void)!write(k->done_fd, &one, sizeof one);
    }
    return OC_OK;
}

oc_status_t oc__tr_send_small(oc_tr_ep_t *ep, unsigned id, uint64_t token,
                             const void *buf, size_t len)
{
    (void)ep; (void)id; (void)token; (void)buf; (void)len;
    return OC_OK; /* credits: the feed has its own window */
}

oc_status_t oc__tr_tag_send(oc_tr_ep_t *ep, uint64_t tag, const void *buf,
                           size_t len, oc_tr_op_t *op)
{
    (void)ep; (void)tag; (void)buf; (void)len; (void)op;
    return OC_ERR_TRANSPORT; /* collectives: not benchmarked here */
}

oc_status_t oc__tr_tag_recv(oc_tr_worker_t *w, uint64_t tag, void *buf,
                           size_t len, oc_tr_op_t *op)
{
    (void)w; (void)tag; (void)buf; (void)len; (void)op;
    return OC_ERR_TRANSPORT;
}

#ifdef OC_TR_HAS_TAG_RECV_MASKED /* revisions since the agents' failure messages */
oc_status_t oc__tr_tag_recv_masked(oc_tr_worker_t *w, uint64_t tag,
                                  uint64_t mask, void *buf, size_t cap,
                                  oc_tr_recv_op_t *op)
{
    (void)w; (void)tag; (void)mask; (void)buf; (void)cap; (void)op;
    return OC_ERR_TRANSPORT;
}
#endif

/* ---- the driver (rb_kernel.h) ----------------------------------------- */

static void rb_destroy(void *kv)
{
    rbk_t *k = kv;
    if (k == NULL)
        return;
    oc__router_destroy(k->r);
    if (k->ranks != NULL)
        for (uint32_t i = 0; i < k->p.nranks; i++)
            oc__shmseg_unmap(&k->ranks[i]);
    free(k->ranks);
    if (k->done_fd >= 0)
        close(k->done_fd);
    if (g_k == k)
        g_k = NULL;
    free(k);
}

static int rb_create(const rb_params_t *p, void **kp)
{
    oc_router_params_t rp;
    oc_job_map_t *map;
    rbk_t *k;

    if (p->abi != RB_KERNEL_ABI || p->nranks == 0 || p->window == 0 ||
        g_k != NULL)
        return -1;
    k = calloc(1, sizeof(*k));
    if (k == NULL)
        return -1;
    k->p = *p;
    k->done_fd = eventfd(0, EFD_CLOEXEC);
    g_k = k;
    /* by name: revisions may add fields */
    memset(&rp, 0, sizeof(rp));
    rp.index = 0;
    rp.node = 0;
    rp.nnodes = 1;
    rp.bundle_size = p->bundle_size;
    rp.buffers = p->buffers;
    rp.flush_timeout_us = p->flush_timeout_us;
    rp.max_inflight = p->max_inflight;
    rp.nthreads = 1;
    if (k->done_fd < 0 || oc__router_create(&rp, &k->r) != OC_OK)
        goto err;
    if ((map = oc__job_map_new(p->job, p->nranks, 1)) == NULL)
        goto err;
    /* every rank on node 0 (node_of is zeroed): all local */
    if (oc__router_add_job(k->r, map) != OC_OK) {
        oc__job_map_put(map);
        goto err;
    }
    oc__job_map_put(map);
    if (p->shm_slots > 0 &&
        (k->ranks = calloc(p->nranks, sizeof(*k->ranks))) == NULL)
        goto err;
    for (uint32_t i = 0; i < p->nranks; i++) {
        uint32_t addr[2] = {RB_ADDR_MAGIC, i};
        oc_rshm_t *s = NULL;
        oc_status_t st;
        int fd;
        /* as offcored's session.c makes it, and the rank maps it */
        if (p->shm_slots > 0) {
            if (oc__rshm_create(p->shm_slots, p->bundle_size & ~7u, 1, &s,
                                &fd) != OC_OK)
                goto err;
            st = oc__shmseg_map(fd, &k->ranks[i]);
            close(fd);
            if (st != OC_OK) {
                oc__rshm_put(s);
                goto err;
            }
        }
        st = oc__router_add_rank(k->r, (uint64_t)i + 1, p->job, i, addr,
                                 sizeof(addr), 0, s, 1);
        oc__rshm_put(s); /* the router keeps its own reference */
        if (st != OC_OK)
            goto err;
    }
    if (oc__router_start(k->r) != OC_OK)
        goto err;
    *kp = k;
    return 0;
err:
    rb_destroy(k);
    return -1;
}

/* The ranks' side of a publish (liboffcore's oc__agent_shm_kick, the
 * fence kept): wake the router if it sleeps. */
static void shm_kick(rbk_t *k, oc_shmseg_t *g)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&g->hdr->agent_sleeping, memory_order_relaxed)) {
        uint64_t one = 1;
        (void)!write(oc__router_rank_wake_fd(k->r), &one, sizeof one);
    }
}

static int wait_fd(int fd, uint32_t timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    uint64_t v;
    if (poll(&pfd, 1, (int)timeout_ms) != 1)
        return -1;
    (void)!read(fd, &v, sizeof v);
    return 0;
}

/* Shared memory: this thread is every rank.  Bundles go into their
 * ranks' "up" rings in feed order, a round of the senders at a time, as
 * far as each ring has room; then the "down" rings are read as
 * liboffcore reads them (every line of a delivery touched, as the
 * handlers would) and released in order. */
static int shm_run(rbk_t *k, const rb_bundle_t *feed, uint64_t n,
                   const rb_sink_t *sink, uint32_t timeout_ms, rb_run_t *out)
{
    const uint32_t R = k->p.nranks;
    const uint64_t one = 1, deadline = now_ns() + timeout_ms * 1000000ull;
    oc_router_counters_t c0, c1;
    uint64_t next = 0, seq, spins = 0, sum = 0;
    int complete = 0;

    oc__router_counters(k->r, &c0);
    k->bundles_out = 0;
    seq = atomic_fetch_add_explicit(&k->seq, 1, memory_order_release) + 1;
    (void)!write(k->w->efd, &one, sizeof one);
    if (wait_fd(k->done_fd, timeout_ms) != 0)
        return -1; /* the routing thread never took the run up */
    while (!complete) {
        int did = 0;
        /* a round: each rank sends its next bundle, then each polls (a
         * rank streaming at full speed between its deliveries) */
        for (uint32_t m = 0; m < R && next < n; m++) {
            const rb_bundle_t *b = &feed[next];
            oc_shmseg_t *g = &k->ranks[b->src];
            uint8_t *slot = oc__spsc_reserve(&g->up);
            if (slot == NULL)
                break;
            memcpy(slot, b->data, b->len);
            oc__spsc_publish(&g->up, b->len);
            shm_kick(k, g);
            next++;
            did = 1;
        }
        for (uint32_t i = 0; i < R && !complete; i++) {
            oc_spsc_t *down = &k->ranks[i].down[0];
            uint8_t *slot;
            uint32_t len;
            while (!complete && (slot = oc__spsc_peek(down, &len)) != NULL) {
                for (uint32_t o = 0; o < len; o += 64)
                    sum += slot[o];
                k->bundles_out++;
                complete = sink->deliver(sink->arg, i, slot, len);
                oc__spsc_release(down);
                did = 1;
            }
            if (down->broken)
                return -1;
        }
        if (!did && (++spins & 4095) == 0 && now_ns() > deadline)
            return -1;
    }
    k->t1 = now_ns();
    atomic_store_explicit(&k->stop_seq, seq, memory_order_release);
    (void)!write(k->w->efd, &one, sizeof one);
    if (wait_fd(k->done_fd, timeout_ms) != 0)
        return -1;
    oc__router_counters(k->r, &c1);
    rb_touched = sum; /* the lines were read */
    out->ns = k->t1 - k->t0;
    out->cpu_ns = k->cpu1 - k->cpu0;
    out->bundles_out = k->bundles_out;
    out->rejects = c1.rejects - c0.rejects;
    out->undeliverable = c1.undeliverable - c0.undeliverable;
    out->turns = k->turns;
    out->idle_turns = k->idle_turns;
    out->busy_cpu_ns = k->busy_ns;
    return 0;
}

static int rb_run(void *kv, const rb_bundle_t *feed, uint64_t n,
                  const rb_sink_t *sink, uint32_t timeout_ms, rb_run_t *out)
{
    rbk_t *k = kv;
    if (k->ranks != NULL)
        return shm_run(k, feed, n, sink, timeout_ms, out);
    oc_router_counters_t c0, c1;
    struct pollfd pfd = {.fd = k->done_fd, .events = POLLIN};
    uint64_t one = 1, v;

    oc__router_counters(k->r, &c0);
    k->post_feed = feed;
    k->post_n = n;
    k->post_sink = *sink;
    atomic_store_explicit(&k->t1, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->seq, 1, memory_order_release);
    (void)!write(k->w->efd, &one, sizeof one);
    if (poll(&pfd, 1, (int)timeout_ms) != 1)
        return -1;
    (void)!read(k->done_fd, &v, sizeof v);
    oc__router_counters(k->r, &c1);
    out->ns = atomic_load_explicit(&k->t1, memory_order_acquire) - k->t0;
    out->cpu_ns = k->cpu1 - k->cpu0;
    out->bundles_out = k->bundles_out;
    out->rejects = c1.rejects - c0.rejects;
    out->undeliverable = c1.undeliverable - c0.undeliverable;
    out->turns = out->idle_turns = 0;
    out->busy_cpu_ns = out->cpu_ns;
    return 0;
}

static int rb_quiesce(void *kv, uint32_t timeout_ms)
{
    rbk_t *k = kv;
    static const struct timespec ms = {0, 1000000};
    for (uint32_t i = 0; i < timeout_ms; i++) {
        if (atomic_load_explicit(&k->asleep, memory_order_acquire))
            return 1;
        nanosleep(&ms, NULL);
    }
    return 0;
}

static const rb_kernel_t kernel = {
    .abi = RB_KERNEL_ABI,
    .create = rb_create,
    .run = rb_run,
    .quiesce = rb_quiesce,
    .destroy = rb_destroy,
};

__attribute__((visibility("default"))) const rb_kernel_t *rb_kernel(void)
{
    return &kernel;
}
