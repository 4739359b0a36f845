/*
 * coll.c — the phase engine of the collectives: configuration, the
 * receive path of collective chunks, progress, oc_test/oc_wait.
 *
 * Payloads travel as UCX tagged messages straight between ranks, cut into
 * chunks of OC_COLL_CHUNK bytes, each tagged (sequence, phase, chunk) and
 * received straight into its place (the result or a scratch block): UCX
 * uses rendezvous for large chunks, so a chunk moves once and only once
 * its receiver has posted the buffer (back-pressure by construction); a
 * small one that arrives early waits in UCX's unexpected queue.  A request
 * keeps at most OC_COLL_WINDOW chunk sends and as many receives in
 * flight.  Progress runs from oc_poll() (the progress hook of
 * runtime/ext.h, set by the first collective) and from oc_test()/oc_wait().
 *
 * Threading: the context's thread only.  Trust: the ranks of one job run
 * the same code; a chunk of another length than the receiver posted fails
 * that collective with OC_ERR_COLL_MISMATCH (UCX never writes past the
 * posted buffer).
 */
#include "coll_int.h"

#include "util/clock.h"
#include "util/log.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static const char *const coll_faults[] = {"none", "desc", "short", NULL};

static const oc_cfg_field_t coll_config_table[] = {
    {"COLL_REPRODUCIBLE", OC_CFG_BOOL, "n",
     "Reduce every allreduce element in rank order (x0 op x1 op x2 ...) "
     "whatever the size, so floating-point results are bitwise identical "
     "run to run and equal a serial reduction. Off by default: small "
     "reductions then use recursive doubling (log2(ranks) steps instead of "
     "2 x (ranks-1)); results are still deterministic for one rank count "
     "and size.",
     offsetof(oc__coll_config_t, reproducible), 0, 0, NULL},
    {"COLL_SMALL", OC_CFG_SIZE, "16K",
     "Allreduces up to this many bytes use recursive doubling (latency: "
     "log2(ranks) exchanges of the whole vector); larger ones reduce-"
     "scatter + all-gather (bandwidth: each rank sends 2 x (ranks-1)/ranks "
     "of the vector).",
     offsetof(oc__coll_config_t, small), 0, UINT64_MAX, NULL},
    {"COLL_CHUNK", OC_CFG_SIZE, "1M",
     "Bytes per tagged message of a collective. Large enough that the "
     "per-message cost (a rendezvous handshake each) vanishes, small "
     "enough that a send window stays a few MB (docs/results.md has what "
     "1M and 128K measured).",
     offsetof(oc__coll_config_t, chunk), 4096, 64u << 20, NULL},
    {"COLL_SHM_MAX", OC_CFG_SIZE, "2K",
     "Allreduces of up to this many bytes, and all-to-alls whose send "
     "buffer is up to this many bytes, go through a shared-memory segment "
     "when every rank of the job is on one host (inline placement): one "
     "write and one read per rank, no UCX message, where UCX's own latency "
     "exceeds Open MPI's whole small allreduce. Above it, UCX's single-"
     "copy rendezvous wins. 0: off. Every rank must use the same value.",
     offsetof(oc__coll_config_t, shm_max), 0, 1u << 20, NULL},
    {"COLL_WINDOW", OC_CFG_UINT, "8",
     "Chunk sends one collective keeps in flight; more wait (back-pressure "
     "toward the transport).",
     offsetof(oc__coll_config_t, window), 1, 4096, NULL},
    {"COLL_CMA", OC_CFG_BOOL, "y",
     "Agent placement, allreduce: let the node's agent read the send buffer "
     "and write the result itself (process_vm_readv/writev, one copy each), "
     "so that the rank needs no CPU between oc_iallreduce and oc_wait. The "
     "agent checks the pid against the kernel's word for the rank's "
     "control connection; where it will not or cannot (another uid, a "
     "ptrace policy, a TCP control socket) it says so and the collective "
     "goes by UCX (logged at OC_LOG=info, counted). n: always by UCX.",
     offsetof(oc__coll_config_t, cma), 0, 0, NULL},
    {"COLL_AGENT_INLINE", OC_CFG_SIZE, "4K",
     "Agent placement: allreduces and broadcasts of up to this many "
     "bytes, and all-to-all(v)s that send (their send buffer's extent) "
     "and receive at most this many, carry the contribution in their descriptor and "
     "get the result back in the agent's DONE: one message each way, no "
     "tagged transfer and no system call in the agent (the latency of "
     "small collectives). Above it, by memory or by UCX (OC_COLL_CMA). "
     "0: off; at most 4K.",
     offsetof(oc__coll_config_t, agent_inline), 0, 4096, NULL},
    {"COLL_FAULT", OC_CFG_ENUM, "none",
     "Testing only: plant a fault in this rank's collective number "
     "OC_COLL_FAULT_AT of the agent placement, so that tests can check "
     "that every rank then gets an error and none a result. desc: send "
     "its descriptor with an unknown type (the agent rejects it); short: "
     "send its contribution one element short (the agent's receive "
     "fails). none: never.",
     offsetof(oc__coll_config_t, fault), 0, 0, coll_faults},
    {"COLL_FAULT_AT", OC_CFG_UINT, "0",
     "Testing only: the sequence number (1, 2, ... in the order the "
     "context starts collectives) that OC_COLL_FAULT applies to; 0: none.",
     offsetof(oc__coll_config_t, fault_at), 0, UINT32_MAX, NULL},
    OC_CFG_END,
};

/* One chunk's send or receive in flight; on its context's list until its
 * callback runs, so that the fini hook (coll_fini) can free those whose
 * callback never will (a failed collective's receives from a dead rank,
 * sends a force-closed endpoint left unfinished). */
typedef struct coll_op {
    oc_tr_op_t      op;
    oc_request_t   *req;
    int             is_recv;
    struct coll_op *next, **pprev;
} coll_op_t;

static void op_link(oc__coll_t *c, coll_op_t *o)
{
    o->next = c->ops;
    if (o->next != NULL)
        o->next->pprev = &o->next;
    o->pprev = &c->ops;
    c->ops = o;
}

static void op_unlink(coll_op_t *o)
{
    *o->pprev = o->next;
    if (o->next != NULL)
        o->next->pprev = o->pprev;
}

static oc_status_t coll_init(oc_context_t *ctx, void **state_p)
{
    oc__coll_t *c = calloc(1, sizeof(*c));
    oc_status_t st;

    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    if ((st = oc__config_load(coll_config_table, &c->cfg)) != OC_OK ||
        (st = oc__coll_staged_init(c)) != OC_OK) {
        free(c);
        return st;
    }
    c->ordered_srcs = calloc(oc__ext_size(ctx), sizeof(*c->ordered_srcs));
    if (c->ordered_srcs == NULL) {
        free(c);
        return OC_ERR_NO_MEMORY;
    }
    c->ctx = ctx;
    c->next_seq = 1;
    *state_p = c;
    return OC_OK;
}

static int coll_agent_access(const oc_context_t *ctx, void *state)
{
    const oc__coll_t *c = state;
    (void)ctx;
    return c != NULL && c->cfg.cma;
}

static void coll_fini(oc_context_t *ctx, void *state)
{
    oc__coll_t *c = state;
    oc_request_t *r, *rn;
    coll_op_t *o, *on;

    if (c == NULL)
        return;
    c->closing = 1; /* the requests below are freed, not kept */
    if (c->cma_ops > 0)
        oc_info(OC_COMP_COLL, "rank %u: %llu allreduces offered to the "
                "agent by memory, %llu of them sent by UCX instead", oc__ext_rank(ctx),
                (unsigned long long)c->cma_ops,
                (unsigned long long)c->cma_fallbacks);
    /* Called once the worker is destroyed (context.c): no callback can
     * run any more, so what is still in flight (the application never
     * completed a request, or a failed collective's operations that UCX
     * will never finish) is freed here. */
    for (o = (coll_op_t *)c->ops; o != NULL; o = on) {
        on = o->next;
        free(o);
    }
    for (r = c->active; r != NULL; r = rn) {
        rn = r->next;
        oc__coll_req_free(r);
    }
    for (r = c->zombies; r != NULL; r = rn) {
        rn = r->next;
        oc__coll_req_free(r);
    }
    for (r = c->req_kept; r != NULL; r = rn) {
        rn = r->next;
        free(r->ph);
        free(r);
    }
    oc__coll_placed_fini(c);
    oc__coll_shm_fini(c);
    oc__coll_staged_fini(c);
    free(c->ordered_srcs);
    free(c);
}

/* The collectives are an extension of the runtime (runtime/ext.h): every
 * context gets their state at oc_init, their shared segment once it is
 * wired (shm.c), and their progress hook once a collective starts. */
const oc_ext_t oc__coll_ext = {
    .name = "coll",
    .init = coll_init,
    .wired = oc__coll_shm_setup,
    .agent_access = coll_agent_access,
    .fini = coll_fini,
};
OC_EXT_REGISTER(oc__coll_ext)

/* A collective's name for what failed it: a dead or unreachable peer
 * (the context failed with OC_ERR_PEER_FAILED, inline.c, or a send to it
 * failed) is OC_ERR_COLL_PEER_FAILED; anything else keeps its name. */
static oc_status_t coll_err(oc_status_t st)
{
    return st == OC_ERR_PEER_FAILED ? OC_ERR_COLL_PEER_FAILED : st;
}

oc_status_t oc__coll_check_ctx(oc_context_t *ctx)
{
    if (ctx == NULL)
        return OC_ERR_INVALID_PARAM;
    if (oc__ext_in_handler(ctx))
        return OC_ERR_STATE;
    if (oc__ext_failed(ctx) != OC_OK)
        return coll_err(oc__ext_failed(ctx)); /* fail fast: a peer is gone */
    if (oc__coll_of(ctx) == NULL || (!oc__ext_has_peers(ctx) && !oc__ext_agent(ctx)))
        return OC_ERR_UNSUPPORTED;
    return OC_OK;
}

/* Ended requests a context keeps for its next collectives: a calloc and a
 * free of the request and of its phases cost a small collective ~0.1 us
 * (2-core machine, traced: 0.4 us from one collective's DONE to the next
 * one's start through the agent).  Not under AddressSanitizer: a request
 * used after its end must stay an error it reports. */
#if defined(__SANITIZE_ADDRESS__)
#define OC__COLL_REQ_KEEP 0
#else
#define OC__COLL_REQ_KEEP 16
#endif
/* Phases a new request has room for at least (the schedules of up to 256
 * ranks; a longer one is allocated for itself and not kept). */
#define OC__COLL_PH_MIN 16

oc_request_t *oc__coll_req_new(oc_context_t *ctx, uint32_t nphases)
{
    oc__coll_t *c = oc__coll_of(ctx);
    const uint32_t need = nphases ? nphases : 1;
    oc_request_t *r;

    if (c != NULL && (r = c->req_kept) != NULL && r->ph_cap >= need) {
        oc__phase_t *ph = r->ph;
        const uint32_t cap = r->ph_cap;
        c->req_kept = r->next;
        c->nreq_kept--;
        memset(r, 0, sizeof(*r));
        memset(ph, 0, need * sizeof(*ph));
        r->ph = ph;
        r->ph_cap = cap;
    } else {
        const uint32_t cap = need < OC__COLL_PH_MIN ? OC__COLL_PH_MIN : need;
        if ((r = calloc(1, sizeof(*r))) == NULL)
            return NULL;
        if ((r->ph = calloc(cap, sizeof(*r->ph))) == NULL) {
            free(r);
            return NULL;
        }
        r->ph_cap = cap;
    }
    for (uint32_t i = 0; i < nphases; i++)
        r->ph[i].speer = r->ph[i].rpeer = UINT32_MAX;
    r->ctx = ctx;
    r->nphases = nphases;
    r->status = OC_INPROGRESS;
    return r;
}

void oc__coll_req_free(oc_request_t *req)
{
    if (req == NULL)
        return;
    oc__coll_staged_free(req->staged);
    free(req->tmp);
    free(req->cma_v);
#if OC__COLL_REQ_KEEP > 0
    oc__coll_t *c = oc__coll_of(req->ctx);
    if (c != NULL && !c->closing && c->nreq_kept < OC__COLL_REQ_KEEP &&
        req->ph_cap <= OC__COLL_PH_MIN) {
        req->next = c->req_kept;
        c->req_kept = req;
        c->nreq_kept++;
        return;
    }
#endif
    free(req->ph);
    free(req);
}

static size_t nchunks(const oc__coll_t *c, size_t len)
{
    return len == 0 ? 1 : (len + c->cfg.chunk - 1) / c->cfg.chunk;
}

static void fail(oc_request_t *req, oc_status_t st)
{
    if (req->status == OC_INPROGRESS)
        req->status = coll_err(st);
}

/*
 * Waiting before failing: a request that is about to fail may first wait,
 * progressing, for the word that makes its end right — one deadline per
 * request (settle_us, set when the wait begins), for one of two reasons:
 *
 * - inline, a chunk failed with a transport error: when a peer dies while
 *   this rank reads its data (cma, one host), UCX completes the read with
 *   an I/O error at once and reports the endpoint's failure (inline.c's
 *   peer_failed) only on a later progress call.  Wait up to
 *   OC__SETTLE_PEER_US for that report, so that the request fails with
 *   OC_ERR_COLL_PEER_FAILED as the peer's death deserves; a transport
 *   error with no dead peer is reported as it is once the wait is over
 *   (coll-fault-kill1 failed 1 run in 6 without this wait, 18/18 with).
 * - agent placement by memory, the job failed: the agent may still be
 *   writing this rank's result (placed.c).  Its DONE, which it sends when
 *   it drops the collective, says it stopped: wait for it up to
 *   OC__SETTLE_AGENT_US, unless the agent's connection has ended (it died:
 *   it writes no more), so that recvbuf is the caller's again when
 *   oc_test() fails.
 *
 * @return 1 while @p req waits.
 */
#define OC__SETTLE_PEER_US  200000u
#define OC__SETTLE_AGENT_US 1000000u
static int settling(oc_request_t *req)
{
    oc_context_t *ctx = req->ctx;
    uint64_t bound, now;

    if (!req->placed && req->status == OC_ERR_TRANSPORT &&
        oc__ext_failed(ctx) == OC_OK)
        bound = OC__SETTLE_PEER_US;
    else if (req->placed && req->cma && req->status == OC_INPROGRESS &&
             req->agent_st == OC_INPROGRESS && oc__ext_failed(ctx) != OC_OK &&
             !oc__ext_agent_gone(ctx))
        bound = OC__SETTLE_AGENT_US;
    else
        return 0;
    now = oc__now_us();
    if (req->settle_us == 0)
        req->settle_us = now + bound;
    return now < req->settle_us;
}

int oc__coll_req_done(oc_request_t *req)
{
    return req->status != OC_INPROGRESS && !settling(req);
}

static void unlink_req(oc__coll_t *c, oc_request_t *req)
{
    for (oc_request_t **p = &c->active; *p != NULL; p = &(*p)->next)
        if (*p == req) {
            *p = req->next;
            req->next = NULL;
            return;
        }
}

static void op_done(oc_tr_op_t *op, oc_status_t st)
{
    coll_op_t *o = (coll_op_t *)op;
    oc_request_t *req = o->req;
    int is_recv = o->is_recv;

    op_unlink(o);
    free(o);
    if (req == NULL)
        return;
    req->inflight--;
    if (st == OC_ERR_WIRE_LENGTH) {
        /* Keep running the schedule, so that the peers that wait on this
         * rank's later sends are not left hanging; report it at the end. */
        oc_error(OC_COMP_COLL, "collective %u phase %u: a peer sent another "
                 "length than this rank expects", req->seq, req->cur);
        if (req->mismatch == OC_OK)
            req->mismatch = OC_ERR_COLL_MISMATCH;
        st = OC_OK;
    }
    if (st != OC_OK)
        fail(req, st);
    else if (is_recv)
        req->r_done++;
    else
        req->s_done++;
}

/* Post chunks of the current phase's send and receive while the window
 * allows: at most OC_COLL_WINDOW of each in flight. */
static void post(oc__coll_t *c, oc_request_t *req, const oc__phase_t *ph,
                 int is_recv)
{
    size_t len_all = is_recv ? ph->rlen : ph->slen;
    size_t total = nchunks(c, len_all);
    size_t *posted = is_recv ? &req->r_posted : &req->s_posted;
    size_t *done = is_recv ? &req->r_done : &req->s_done;

    while (*posted < total && *posted - *done < c->cfg.window &&
           req->status == OC_INPROGRESS) {
        size_t off = *posted * c->cfg.chunk;
        size_t len = len_all - off < c->cfg.chunk ? len_all - off
                                                  : c->cfg.chunk;
        uint64_t tag = OC__COLL_TOKEN(req->seq, req->cur, *posted);
        coll_op_t *o = malloc(sizeof(*o));
        oc_status_t st;

        if (o == NULL) {
            fail(req, OC_ERR_NO_MEMORY);
            return;
        }
        o->op.cb = op_done;
        o->op.token = 0;
        o->req = req;
        o->is_recv = is_recv;
        /* linked first: UCX may run the callback inside the call (a
         * receive whose message is already here), which unlinks it */
        op_link(c, o);
        if (is_recv)
            st = oc__tr_tag_recv(oc__ext_worker(c->ctx), tag, ph->rbuf + off, len,
                                &o->op);
        else
            st = oc__tr_tag_send(oc__ext_peer_ep(c->ctx, ph->speer), tag, ph->sbuf + off,
                                len, &o->op);
        (*posted)++;
        if (st == OC_INPROGRESS) { /* o may be freed already */
            req->inflight++;
            continue;
        }
        op_unlink(o); /* no callback for these */
        free(o);
        if (st == OC_OK)
            (*done)++;
        else
            fail(req, st);
    }
}

static void run_after(oc_request_t *req, const oc__phase_t *ph)
{
    oc_context_t *ctx = req->ctx;
    size_t count = ph->rlen / (req->esize ? req->esize : 1);

    switch (ph->after) {
    case OC__AFTER_REDUCE_LO_FIRST:
        oc__reduce2(req->dtype, req->op, req->rbuf, req->tmp, req->rbuf,
                    count);
        break;
    case OC__AFTER_REDUCE_HI_FIRST:
        oc__reduce2(req->dtype, req->op, req->rbuf, req->rbuf, req->tmp,
                    count);
        break;
    case OC__AFTER_REDUCE_ORDERED: {
        const void **srcs = oc__coll_of(ctx)->ordered_srcs;
        const uint32_t n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
        for (uint32_t k = 0; k < n; k++)
            srcs[k] = k == me ? req->own : req->tmp + k * req->blk_stride;
        oc__reduce_ordered(req->dtype, req->op,
                           req->rbuf + req->blk_off * req->esize, srcs, n,
                           req->blk_count);
        break;
    }
    default:
        break;
    }
}

/* Advance @p req as far as it goes now.  @return its status. */
static oc_status_t advance(oc__coll_t *c, oc_request_t *req)
{
    while (req->status == OC_INPROGRESS && req->cur < req->nphases) {
        const oc__phase_t *ph = &req->ph[req->cur];
        int sends_done, recvs_done;

        if (!req->started) {
            req->started = 1;
            req->s_posted = req->s_done = 0;
            req->r_posted = req->r_done = 0;
        }
        if (ph->rpeer != UINT32_MAX)
            post(c, req, ph, 1);
        if (ph->speer != UINT32_MAX)
            post(c, req, ph, 0);
        sends_done = ph->speer == UINT32_MAX ||
                     req->s_done == nchunks(c, ph->slen);
        recvs_done = ph->rpeer == UINT32_MAX ||
                     req->r_done == nchunks(c, ph->rlen);
        if (!sends_done || !recvs_done || req->status != OC_INPROGRESS)
            break;
        run_after(req, ph);
        req->cur++;
        req->started = 0;
    }
    if (req->status == OC_INPROGRESS && req->cur == req->nphases)
        req->status = req->mismatch;
    return req->status;
}

/* The progress hook (runtime/ext.h), set by the first collective. */
static void coll_progress(void *arg)
{
    oc__coll_t *c = arg;
    oc_request_t **p, *r;

    for (r = c->active; r != NULL; r = r->next)
        if (r->status == OC_INPROGRESS)
            r->placed   ? oc__coll_placed_check(r)
            : r->shm    ? oc__coll_shm_advance(r)
            : r->staged ? oc__coll_staged_advance(r)
                        : (void)advance(c, r);
    for (p = &c->zombies; (r = *p) != NULL;) {
        if (r->inflight == 0) {
            *p = r->next;
            oc__coll_req_free(r);
        } else {
            p = &r->next;
        }
    }
}

void oc__coll_link(oc__coll_t *c, oc_request_t *req)
{
    req->next = c->active;
    c->active = req;
    if (!c->hooked &&
        oc__ext_progress_hook(c->ctx, coll_progress, c) == OC_OK)
        c->hooked = 1;
}

/* Sequence numbers run 1 .. 2^20 - 1 and wrap to 1 (0 is never one). */
uint32_t oc__coll_seq_nth(uint32_t base, uint32_t k)
{
    const uint32_t m = (1u << OC__COLL_SEQ_BITS) - 1;
    return (uint32_t)(((uint64_t)base - 1 + k) % m) + 1;
}

uint32_t oc__coll_seq_take(oc__coll_t *c, uint32_t n)
{
    uint32_t base = c->next_seq;
    c->next_seq = oc__coll_seq_nth(base, n);
    return base;
}

void oc__coll_start_seq(oc_context_t *ctx, oc_request_t *req, uint32_t seq)
{
    oc__coll_t *c = oc__coll_of(ctx);

    req->seq = seq;
    oc__coll_link(c, req);
    advance(c, req);
}

oc_status_t oc__coll_start(oc_context_t *ctx, oc_request_t *req)
{
    oc__coll_start_seq(ctx, req, oc__coll_seq_take(oc__coll_of(ctx), 1));
    return OC_OK;
}

void oc__coll_retire(oc_request_t *req)
{
    oc__coll_t *c = oc__coll_of(req->ctx);

    unlink_req(c, req);
    if (req->inflight > 0) {
        req->next = c->zombies;
        c->zombies = req;
    } else {
        oc__coll_req_free(req);
    }
}

OC_API oc_status_t oc_test(oc_request_t **req_p)
{
    oc_request_t *req;
    oc_context_t *ctx;
    oc_status_t st;

    if (req_p == NULL || *req_p == NULL)
        return OC_ERR_COLL_REQUEST;
    req = *req_p;
    ctx = req->ctx;
    if (oc__ext_in_handler(ctx))
        return OC_ERR_STATE;
    if (req->shm && req->status == OC_INPROGRESS && oc__ext_failed(ctx) == OC_OK)
        oc__coll_shm_advance(req); /* done: no need to progress UCX */
    if (req->status == OC_INPROGRESS || settling(req)) {
        if (oc__ext_failed(ctx) == OC_OK)
            oc__ext_progress(ctx); /* runs coll_progress */
        else if (settling(req))
            (void)oc__tr_progress(oc__ext_worker(ctx)); /* the agent's DONE */
    }
    if (req->status == OC_ERR_TRANSPORT && oc__ext_failed(ctx) != OC_OK)
        req->status = coll_err(oc__ext_failed(ctx));
    /* a peer found dead (inline.c) fails whatever still waits, the
     * receives from it included: UCX fails only the sends to it; or the
     * agents failed the job: a rank or agent died */
    if (req->status == OC_INPROGRESS && oc__ext_failed(ctx) != OC_OK &&
        !settling(req))
        fail(req, req->placed ? OC_ERR_COLL_PEER_FAILED : oc__ext_failed(ctx));
    st = req->status;
    if (st == OC_INPROGRESS || settling(req))
        return OC_INPROGRESS;
    oc__coll_retire(req); /* failed with sends out: freed later */
    *req_p = NULL;
    return st;
}

OC_API oc_status_t oc_wait(oc_request_t **req_p)
{
    oc_request_t *req = req_p != NULL ? *req_p : NULL;
    size_t mark, last;
    unsigned idle = 0, first, again;
    int each, yielded = 0;
    oc_status_t st;
    /* Waiting on another rank's progress.  When ranks outnumber the cores
     * they may run on, spinning only burns the slice the peer needs: give
     * the core up at the first idle turn (a rank that shares this core may
     * be the one the collective waits for: it has not even started it),
     * and once back from that yield keep polling a little longer (64
     * turns, a few us) before the next: by then the peer has had its turn
     * and the answer, the agent's or the peer's, is on its way.  When each
     * rank has a core (shm.c knows: all ranks on this host, no more of
     * them than the CPUs they may run on, together), keep it, as Open MPI
     * does: a yield hands it to whatever else runs there, and the answer
     * that arrives a few hundred ns later waits for the core to come back;
     * but not for ever: the scheduler may have put the peer on this very
     * core.  Measured on the shared 2-core machine (2 ranks, load average
     * 15-19, A/B of coll-bench 8-512 B, three alternating rounds, medians
     * of per-run ratios to Open MPI in the same run): yielding after 16
     * idle turns 0.46-55x (most 1-20x), after 1024 (tens of us)
     * 0.50-1.01, after 64K (ms) 0.03-1.30.  Two ranks on one core, quiet
     * (2026-11-29, 8 B allreduce, ratio to Open MPI in the same job): a
     * yield after 16 idle turns every time 1.5-1.7x inline and 2.5-2.9x
     * through the agent; the first at once and then 64 turns 1.0x and
     * 1.9-2.1x (docs/coll.md, "Ranks that share a core"). */
    if (req == NULL)
        return oc_test(req_p);
    each = oc__coll_of(req->ctx)->cores_each;
    first = each ? 1024 : 1;
    again = each ? 1024 : 64;
    last = req->cur * 3 + req->r_done + req->s_done; /* a first turn that
                                                      * moves nothing is idle */
    while ((st = oc_test(req_p)) == OC_INPROGRESS) {
        mark = req->cur * 3 + req->r_done + req->s_done;
        if (mark != last) {
            last = mark;
            idle = 0;
        } else if (++idle >= (yielded ? again : first)) {
            idle = 0;
            yielded = 1;
            sched_yield();
        }
    }
    return st;
}
