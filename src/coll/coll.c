/*
 * coll.c — the phase engine of the collectives: configuration, the
 * receive path of collective chunks, progress, oc_test/oc_wait.
 *
 * Payloads travel as UCX active messages (OC_AM_COLL) straight between
 * ranks, cut into chunks of OC_COLL_CHUNK bytes, each named by the 64-bit
 * header (sequence, phase, chunk).  A request keeps at most
 * OC_COLL_WINDOW chunk sends in flight (back-pressure toward the
 * transport); a chunk that arrives before its phase is kept, as UCX
 * delivered it, until the phase starts (no copy, no drop).  Progress runs
 * from oc_poll() (the hook in send.c) and from oc_test()/oc_wait().
 *
 * Threading: the context's thread only.  Trust: the ranks of one job run
 * the same code; a chunk that does not fit the phase it names (index or
 * length) fails that collective with OC_ERR_COLL_MISMATCH, never writes
 * outside its buffer.
 */
#include "coll/coll_int.h"

#include "util/log.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

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
    {"COLL_CHUNK", OC_CFG_SIZE, "128K",
     "Bytes per active message of a collective. Large enough that the "
     "per-message cost vanishes, small enough that a send window stays a "
     "few MB.",
     offsetof(oc__coll_config_t, chunk), 4096, 64u << 20, NULL},
    {"COLL_WINDOW", OC_CFG_UINT, "8",
     "Chunk sends one collective keeps in flight; more wait (back-pressure "
     "toward the transport).",
     offsetof(oc__coll_config_t, window), 1, 4096, NULL},
    OC_CFG_END,
};

typedef struct {
    oc_tr_op_t    op;
    oc_request_t *req;
    oc__coll_t   *c;
} coll_op_t;

static void coll_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc__coll_t *c = ctx->coll;
    oc__coll_rx_t *e = malloc(sizeof(*e));

    if (e == NULL) { /* engine.h's policy: give it back, fail the context */
        oc_tr_release(ctx->worker, data);
        if (ctx->failed == OC_OK)
            ctx->failed = OC_ERR_NO_MEMORY;
        return;
    }
    e->next = NULL;
    e->token = token;
    e->data = data;
    e->len = len;
    *c->rx_tail = e;
    c->rx_tail = &e->next;
    c->rx_pending++;
}

oc_status_t oc__coll_init(oc_context_t *ctx)
{
    oc__coll_t *c = calloc(1, sizeof(*c));
    oc_status_t st;

    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    if ((st = oc_config_load(coll_config_table, &c->cfg)) != OC_OK) {
        free(c);
        return st;
    }
    c->ordered_srcs = calloc(ctx->size, sizeof(*c->ordered_srcs));
    if (c->ordered_srcs == NULL) {
        free(c);
        return OC_ERR_NO_MEMORY;
    }
    c->ctx = ctx;
    c->next_seq = 1;
    c->rx_tail = &c->rx;
    ctx->coll = c;
    st = oc_tr_set_handler(ctx->worker, OC_AM_COLL, coll_recv, ctx, 1);
    if (st != OC_OK) {
        ctx->coll = NULL;
        free(c->ordered_srcs);
        free(c);
    }
    return st;
}

void oc__coll_fini(oc_context_t *ctx)
{
    oc__coll_t *c = ctx->coll;
    oc__coll_rx_t *e, *n;
    oc_request_t *r, *rn;

    if (c == NULL)
        return;
    for (e = c->rx; e != NULL; e = n) {
        n = e->next;
        oc_tr_release(ctx->worker, e->data);
        free(e);
    }
    /* Requests the application never completed: their sends are over
     * once the endpoints are closed (fini runs after the placement's). */
    for (r = c->active; r != NULL; r = rn) {
        rn = r->next;
        oc__coll_req_free(r);
    }
    for (r = c->zombies; r != NULL; r = rn) {
        rn = r->next;
        oc__coll_req_free(r);
    }
    free(c->ordered_srcs);
    free(c);
    ctx->coll = NULL;
}

oc_status_t oc__coll_check_ctx(oc_context_t *ctx)
{
    if (ctx == NULL)
        return OC_ERR_INVALID_PARAM;
    if (ctx->in_handler)
        return OC_ERR_STATE;
    if (ctx->failed != OC_OK)
        return ctx->failed;
    if (ctx->coll == NULL || ctx->eps == NULL || ctx->agent != NULL)
        return OC_ERR_UNSUPPORTED;
    return OC_OK;
}

oc_request_t *oc__coll_req_new(oc_context_t *ctx, uint32_t nphases)
{
    oc_request_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->ph = calloc(nphases ? nphases : 1, sizeof(*r->ph));
    if (r->ph == NULL) {
        free(r);
        return NULL;
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
    free(req->ph);
    free(req->tmp);
    free(req);
}

static size_t nchunks(const oc__coll_t *c, size_t len)
{
    return len == 0 ? 1 : (len + c->cfg.chunk - 1) / c->cfg.chunk;
}

static void fail(oc_request_t *req, oc_status_t st)
{
    if (req->status == OC_INPROGRESS)
        req->status = st;
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

static void send_done(oc_tr_op_t *op, oc_status_t st)
{
    coll_op_t *o = (coll_op_t *)op;
    oc_request_t *req = o->req;
    oc__coll_t *c = o->c;

    free(o);
    if (req == NULL)
        return;
    req->inflight--;
    if (st != OC_OK)
        fail(req, st);
    else
        req->s_done++;
    (void)c;
}

/* Post chunks of the current phase's send while the window allows. */
static void post_sends(oc__coll_t *c, oc_request_t *req, const oc__phase_t *ph)
{
    size_t total = nchunks(c, ph->slen);

    while (req->s_posted < total && req->inflight < c->cfg.window &&
           req->status == OC_INPROGRESS) {
        size_t off = req->s_posted * c->cfg.chunk;
        size_t len = ph->slen - off < c->cfg.chunk ? ph->slen - off
                                                   : c->cfg.chunk;
        coll_op_t *o = malloc(sizeof(*o));
        oc_status_t st;

        if (o == NULL) {
            fail(req, OC_ERR_NO_MEMORY);
            return;
        }
        o->op.cb = send_done;
        o->op.token = OC__COLL_TOKEN(req->seq, req->cur, req->s_posted);
        o->req = req;
        o->c = c;
        st = oc_tr_send(c->ctx->eps[ph->speer], OC_AM_COLL,
                        ph->slen ? ph->sbuf + off : (const void *)o, len,
                        &o->op);
        req->s_posted++;
        if (st == OC_OK) {
            free(o);
            req->s_done++;
        } else if (st == OC_INPROGRESS) {
            req->inflight++;
        } else {
            free(o);
            fail(req, st);
        }
    }
}

/* Take the chunks that arrived for the current phase of @p req. */
static void match_recvs(oc__coll_t *c, oc_request_t *req, const oc__phase_t *ph)
{
    oc__coll_rx_t **p = &c->rx, *e;
    size_t total = nchunks(c, ph->rlen);

    while ((e = *p) != NULL) {
        uint32_t seq = (uint32_t)(e->token >> 44);
        uint32_t phase = (uint32_t)(e->token >> 24) & 0xfffffu;
        size_t ck = (size_t)(e->token & 0xffffffu);

        if (seq != req->seq || phase != req->cur) {
            p = &e->next;
            continue;
        }
        if (ph->rpeer == UINT32_MAX || ck >= total ||
            e->len != (ck + 1 == total ? ph->rlen - ck * c->cfg.chunk
                                       : c->cfg.chunk)) {
            oc_error(OC_COMP_RUNTIME,
                     "collective %u phase %u: chunk %zu of %zu bytes does not "
                     "fit the %zu bytes this rank expects from rank %u",
                     req->seq, req->cur, ck, e->len, ph->rlen, ph->rpeer);
            fail(req, OC_ERR_COLL_MISMATCH);
        } else {
            if (e->len)
                memcpy(ph->rbuf + ck * c->cfg.chunk, e->data, e->len);
            req->r_got++;
        }
        *p = e->next;
        if (c->rx_tail == &e->next)
            c->rx_tail = p;
        oc_tr_release(c->ctx->worker, e->data);
        free(e);
        c->rx_pending--;
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
        const void **srcs = ctx->coll->ordered_srcs;
        for (uint32_t k = 0; k < ctx->size; k++)
            srcs[k] = req->tmp + k * req->blk_stride;
        oc__reduce_ordered(req->dtype, req->op,
                           req->rbuf + req->blk_off * req->esize, srcs,
                           ctx->size, req->blk_count);
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
            req->s_posted = req->s_done = req->r_got = 0;
        }
        if (ph->speer != UINT32_MAX)
            post_sends(c, req, ph);
        if (ph->rpeer != UINT32_MAX && c->rx != NULL)
            match_recvs(c, req, ph);
        sends_done = ph->speer == UINT32_MAX ||
                     req->s_done == nchunks(c, ph->slen);
        recvs_done = ph->rpeer == UINT32_MAX ||
                     req->r_got == nchunks(c, ph->rlen);
        if (!sends_done || !recvs_done || req->status != OC_INPROGRESS)
            break;
        run_after(req, ph);
        req->cur++;
        req->started = 0;
    }
    if (req->status == OC_INPROGRESS && req->cur == req->nphases)
        req->status = OC_OK;
    return req->status;
}

void oc__coll_progress(oc_context_t *ctx)
{
    oc__coll_t *c = ctx->coll;
    oc_request_t **p, *r;

    if (c == NULL)
        return;
    for (r = c->active; r != NULL; r = r->next)
        if (r->status == OC_INPROGRESS)
            advance(c, r);
    for (p = &c->zombies; (r = *p) != NULL;) {
        if (r->inflight == 0) {
            *p = r->next;
            oc__coll_req_free(r);
        } else {
            p = &r->next;
        }
    }
}

oc_status_t oc__coll_start(oc_context_t *ctx, oc_request_t *req)
{
    oc__coll_t *c = ctx->coll;

    req->seq = c->next_seq;
    c->next_seq = (c->next_seq + 1) & ((1u << OC__COLL_SEQ_BITS) - 1);
    if (c->next_seq == 0)
        c->next_seq = 1;
    req->next = c->active;
    c->active = req;
    advance(c, req);
    return OC_OK;
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
    if (ctx->in_handler)
        return OC_ERR_STATE;
    if (req->status == OC_INPROGRESS) {
        if (ctx->failed != OC_OK)
            fail(req, ctx->failed);
        else
            oc__progress(ctx); /* runs oc__coll_progress */
    }
    st = req->status;
    if (st == OC_INPROGRESS)
        return st;
    unlink_req(ctx->coll, req);
    if (req->inflight > 0) { /* failed with sends out: free them later */
        req->next = ctx->coll->zombies;
        ctx->coll->zombies = req;
    } else {
        oc__coll_req_free(req);
    }
    *req_p = NULL;
    return st;
}

OC_API oc_status_t oc_wait(oc_request_t **req_p)
{
    oc_request_t *req = req_p != NULL ? *req_p : NULL;
    size_t mark = 0, last = SIZE_MAX;
    unsigned idle = 0;
    oc_status_t st;

    while ((st = oc_test(req_p)) == OC_INPROGRESS) {
        /* Waiting on another rank's progress: where ranks share cores
         * (oversubscribed), spinning only burns the slice it needs. */
        mark = req->cur * 3 + req->r_got + req->s_done;
        if (mark != last) {
            last = mark;
            idle = 0;
        } else if (++idle >= 16) {
            idle = 0;
            sched_yield();
        }
    }
    return st;
}
