/*
 * placed.c — the rank's side of the collectives in the agent placement:
 * a collective is one descriptor to the node's agent (wire/colld.h), the
 * contribution as one tagged message (or, with OC_COLL_CMA, the rank's
 * buffers for the agent to read and write itself), and the result back.
 * How each step goes and why: docs/coll.md, "The rank's side".
 *
 * Threading: the context's thread only.  Trust: the agent is trusted (it
 * authenticated with the job key); its answers are still checked.
 */
#include "coll_int.h"

#include "util/log.h"
#include "wire/am.h"
#include "wire/colld.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One tagged transfer in flight; on the context's list until its callback
 * runs, so that oc__coll_placed_fini() frees those whose callback never
 * will (a failed collective's receives the agent never filled, a
 * rendezvous send the rank did not progress to its end before it left). */
typedef struct placed_op {
    oc_tr_op_t        op;
    oc_request_t     *req;
    struct placed_op *next, **pprev;
} placed_op_t;

void oc__coll_placed_fini(oc__coll_t *c)
{
    placed_op_t *o, *on;
    for (o = c->placed_ops; o != NULL; o = on) {
        on = o->next;
        free(o);
    }
    c->placed_ops = NULL;
}

int oc__coll_placed(const oc_context_t *ctx)
{
    return oc__ext_agent(ctx);
}

static void done_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc_colld_done_t m;
    oc_request_t *r;

    (void)token;
    if (len < sizeof(m) || oc__coll_of(ctx) == NULL)
        return;
    memcpy(&m, data, sizeof(m));
    if (m.magic != OC_COLLD_DONE_MAGIC)
        return;
    for (r = oc__coll_of(ctx)->active; r != NULL; r = r->next) {
        if (!r->placed || r->seq != m.seq || r->agent_st != OC_INPROGRESS)
            continue;
        /* inline: a successful DONE carries the result, exactly */
        if (len != sizeof(m) + (r->inl && m.status == OC_OK ? r->inl_len : 0)) {
            oc_error(OC_COMP_COLL, "rank %u: collective %u: the agent's DONE "
                     "has %zu bytes", oc__ext_rank(ctx), m.seq, len);
            r->agent_st = OC_ERR_COLL_PEER_FAILED;
            return;
        }
        if (r->inl && m.status == OC_OK && r->cma_v != NULL) {
            /* all-to-allv: the blocks packed in source order, each to
             * its displacement */
            const uint32_t n = oc__ext_size(ctx);
            const uint8_t *p = (const uint8_t *)data + sizeof(m);
            for (uint32_t s = 0; s < n; s++) {
                size_t b = r->cma_v[2 * n + s] * r->cma_es;
                if (b > 0)
                    memcpy((uint8_t *)r->inl_rbuf + r->cma_v[3 * n + s] * r->cma_es,
                           p, b);
                p += b;
            }
        } else if (r->inl && m.status == OC_OK) {
            memcpy(r->inl_rbuf, (const uint8_t *)data + sizeof(m), r->inl_len);
        }
        if (m.status == OC_COLLD_FALLBACK && r->cma) {
            r->cma_fallback = 1; /* oc__coll_placed_check() sends */
            return;
        }
        if (m.status == OC_OK || m.status == OC_ERR_COLL_MISMATCH ||
            m.status == OC_ERR_COLL_COUNT || m.status == OC_ERR_UNSUPPORTED ||
            m.status == OC_ERR_NO_MEMORY || m.status == OC_ERR_COLL_MEMORY)
            r->agent_st = (oc_status_t)m.status;
        else
            r->agent_st = OC_ERR_COLL_PEER_FAILED;
        return;
    }
    oc_warn(OC_COMP_COLL, "rank %u: the agent ended collective %u, which "
            "is not in flight here", oc__ext_rank(ctx), m.seq);
}

static oc_status_t xfer(oc_request_t *req, oc_tr_ep_t *ep, void *buf,
                        size_t len, uint64_t tag);

/* All-to-alls whose send buffer is smaller go by UCX even where the agent
 * moves data by memory (when they do not go inline: OC_COLL_AGENT_INLINE):
 * there the memory path's four system calls a rank cost more than eager
 * messages.  Measured (bench/run-coll-bench.sh, agent
 * at nice -10, 2 rounds, ratio to Open MPI, by UCX -> by memory): 8 B
 * 3.7-5.8 -> 6.0-9.0, 512 B 4.9-8.1 -> 4.5-7.6, 4 KiB 3.8-4.1 -> 3.1-3.3,
 * 2 MiB 2.3-2.9 -> 1.5-2.0. */
#define OC__A2A_CMA_MIN 1024
/* Room for a descriptor with an inline contribution (and an all-to-allv's
 * counts on a job of up to a hundred ranks) on the stack. */
#define OC__COLL_DESC_STACK 8192

/* The agent will not move this one by memory: receive and send by UCX
 * after all, as a collective that never offered, and offer no more. */
static void fall_back(oc_request_t *req)
{
    oc_context_t *ctx = req->ctx;
    oc_status_t st;

    req->cma = req->cma_fallback = 0;
    oc__coll_of(ctx)->cma_fallbacks++;
    if (!oc__coll_of(ctx)->cma_refused)
        oc_info(OC_COMP_COLL, "rank %u: the agent does not move collective "
                "data by memory here (OC_AGENT_COLL_CMA=n, another uid, or a "
                "ptrace policy): allreduce and all-to-all go by UCX from now "
                "on", oc__ext_rank(ctx));
    oc__coll_of(ctx)->cma_refused = 1;
    if (req->cma_v != NULL) { /* all-to-allv: a receive per block */
        const uint32_t n = oc__ext_size(ctx);
        const size_t es = req->cma_es;
        st = OC_OK;
        for (uint32_t s = 0; s < n && st == OC_OK; s++)
            st = xfer(req, NULL, (uint8_t *)req->cma_rbuf + req->cma_v[3 * n + s] * es,
                      req->cma_v[2 * n + s] * es, OC__COLL_RESULT_TAG(req->seq, s));
    } else {
        st = xfer(req, NULL, req->cma_rbuf, req->cma_len,
                  OC__COLL_RESULT_TAG(req->seq, 0));
    }
    if (st == OC_OK)
        st = xfer(req, oc__ext_agent_coll_ep(ctx), (void *)req->cma_sbuf, req->cma_len,
                  OC__COLL_CONTRIB_TAG(oc__ext_job(ctx), req->seq, oc__ext_rank(ctx)));
    if (st != OC_OK) { /* the agent waits for it: the job must fail */
        oc_error(OC_COMP_COLL, "rank %u: collective %u: %s", oc__ext_rank(ctx),
                 req->seq, oc_status_string(st));
        req->agent_st = st;
    }
}

void oc__coll_placed_check(oc_request_t *req)
{
    if (req->cma_fallback)
        fall_back(req);
    if (req->agent_st == OC_INPROGRESS)
        return;
    if (req->agent_st != OC_OK)
        req->status = req->agent_st;
    else if (req->inflight == 0)
        req->status = req->mismatch;
}

static void op_done(oc_tr_op_t *op, oc_status_t st)
{
    placed_op_t *o = (placed_op_t *)op;
    oc_request_t *req = o->req;

    *o->pprev = o->next;
    if (o->next != NULL)
        o->next->pprev = o->pprev;
    free(o);
    req->inflight--;
    if (st == OC_ERR_WIRE_LENGTH) {
        if (req->mismatch == OC_OK)
            req->mismatch = OC_ERR_COLL_MISMATCH;
    } else if (st != OC_OK && req->status == OC_INPROGRESS) {
        req->status = OC_ERR_COLL_PEER_FAILED;
    }
}

/* Post a receive (@p ep NULL) or a send of one tagged message. */
static oc_status_t xfer(oc_request_t *req, oc_tr_ep_t *ep, void *buf,
                        size_t len, uint64_t tag)
{
    placed_op_t *o;
    oc_status_t st;

    if (len == 0)
        return OC_OK;
    if ((o = malloc(sizeof(*o))) == NULL)
        return OC_ERR_NO_MEMORY;
    o->op.cb = op_done;
    o->op.token = 0;
    o->req = req;
    st = ep != NULL ? oc__tr_tag_send(ep, tag, buf, len, &o->op)
                    : oc__tr_tag_recv(oc__ext_worker(req->ctx), tag, buf, len, &o->op);
    if (st == OC_INPROGRESS) {
        oc__coll_t *c = oc__coll_of(req->ctx);
        o->next = c->placed_ops;
        if (o->next != NULL)
            o->next->pprev = &o->next;
        o->pprev = &c->placed_ops;
        c->placed_ops = o;
        req->inflight++;
        return OC_OK;
    }
    free(o);
    if (st == OC_ERR_WIRE_LENGTH) {
        req->mismatch = OC_ERR_COLL_MISMATCH;
        return OC_OK;
    }
    return st;
}

oc_status_t oc__coll_placed_start(oc_context_t *ctx, void *dv,
                                  const uint64_t *vals, const void *sbuf,
                                  size_t slen, void *rbuf, size_t rlen,
                                  oc_request_t **req_p)
{
    oc_colld_t *d = dv;
    oc__coll_t *c = oc__coll_of(ctx);
    const uint32_t n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
    oc_request_t *req;
    /* the descriptor is copied out by the send: a small one is encoded
     * here, with no allocation per collective */
    uint8_t small[OC__COLL_DESC_STACK], *msg;
    size_t mlen;
    uint64_t rsum = 0; /* all-to-allv: bytes it receives */
    oc_status_t st = OC_OK;
    int fault;

    /* refused before anything is posted or touched: the agents said at
     * READY what they serve for this job */
    if (!oc__ext_agent_coll_serves(ctx, d->kind))
        return OC_ERR_UNSUPPORTED;
    if (!c->done_handler) {
        st = oc__tr_set_handler(oc__ext_worker(ctx), OC_AM_COLL_DONE, done_recv, ctx,
                               0);
        if (st != OC_OK)
            return st;
        c->done_handler = 1;
    }
    if ((req = oc__coll_req_new(ctx, 0)) == NULL)
        return OC_ERR_NO_MEMORY;
    req->placed = 1;
    req->agent_st = OC_INPROGRESS;
    req->seq = c->next_seq;
    d->seq = req->seq;
    fault = c->cfg.fault_at == req->seq ? c->cfg.fault : 0;
    /* small: the contribution in the descriptor, the result in DONE (the
     * short fault needs a contribution of its own to cut); all-to-allv:
     * the send extent, and the blocks it receives packed; broadcast: the
     * root's data, everyone else's DONE */
    if (d->kind == OC_COLLD_ALLTOALLV)
        for (uint32_t s = 0; s < n && rsum <= OC_COLLD_INLINE_MAX; s++)
            rsum += vals[2 * n + s] > OC_COLLD_INLINE_MAX
                        ? OC_COLLD_INLINE_MAX + 1
                        : vals[2 * n + s] * oc__dtype_size(d->dtype);
    if (slen <= c->cfg.agent_inline && slen <= OC_COLLD_INLINE_MAX &&
        fault != 2 &&
        ((d->kind != OC_COLLD_ALLTOALLV && d->kind != OC_COLLD_BARRIER &&
          slen > 0) ||
         (d->kind == OC_COLLD_ALLTOALLV && c->cfg.agent_inline > 0 &&
          rsum <= c->cfg.agent_inline && rsum <= OC_COLLD_INLINE_MAX &&
          (req->cma_v = malloc(32 * (size_t)n)) != NULL))) {
        req->inl = 1;
        req->inl_rbuf = rbuf;
        /* a broadcast's root sends the data and gets none back */
        const int root = d->kind == OC_COLLD_BCAST && d->root == me;
        req->inl_len = d->kind == OC_COLLD_ALLTOALLV ? rsum : root ? 0 : slen;
        d->flags = OC_COLLD_F_INLINE;
        d->data = sbuf;
        d->dlen = d->kind == OC_COLLD_BCAST && !root ? 0 : slen;
        if (req->cma_v != NULL) {
            memcpy(req->cma_v, vals, 32 * (size_t)n);
            req->cma_es = oc__dtype_size(d->dtype);
        }
    }
    /* by memory: everything the agent needs is in the descriptor (an
     * all-to-allv's buffers as far as its blocks reach: slen, rlen) */
    else if ((d->kind == OC_COLLD_ALLREDUCE ||
              (d->kind == OC_COLLD_ALLTOALLV && rlen > 0 &&
               slen >= OC__A2A_CMA_MIN)) &&
             slen > 0 && c->cfg.cma && !c->cma_refused &&
             oc__ext_agent_pid(ctx) != 0 && fault != 2 &&
             (d->kind != OC_COLLD_ALLTOALLV ||
              (req->cma_v = malloc(32 * (size_t)n)) != NULL)) {
        req->cma = 1;
        req->cma_sbuf = sbuf;
        req->cma_rbuf = rbuf;
        req->cma_len = slen;
        req->cma_es = oc__dtype_size(d->dtype);
        if (req->cma_v != NULL)
            memcpy(req->cma_v, vals, 32 * (size_t)n);
        d->flags = OC_COLLD_F_CMA;
        /* its own block: one copy here (below), not read into the agent
         * and written back */
        if (d->kind == OC_COLLD_ALLTOALLV && vals[me] > 0)
            d->flags |= OC_COLLD_F_SELF;
        d->pid = (uint32_t)getpid();
        d->saddr = (uint64_t)(uintptr_t)sbuf;
        d->raddr = (uint64_t)(uintptr_t)rbuf;
        d->slen = slen;
        d->rlen = d->kind == OC_COLLD_ALLTOALLV ? rlen : slen;
        c->cma_ops++;
    }
    mlen = oc__colld_size(d);
    if ((msg = mlen <= sizeof(small) ? small : malloc(mlen)) == NULL) {
        oc__coll_req_free(req);
        return OC_ERR_NO_MEMORY;
    }
    oc__colld_encode(d, vals, msg);
    if (fault == 1) { /* OC_COLL_FAULT=desc: a type no agent knows */
        msg[6] = 0xff;
        oc_warn(OC_COMP_COLL, "rank %u: collective %u: OC_COLL_FAULT=desc "
                "planted", me, req->seq);
    } else if (fault == 2 && slen > 0) { /* =short: one element less */
        slen -= oc__dtype_size(d->dtype) ? oc__dtype_size(d->dtype) : 1;
        oc_warn(OC_COMP_COLL, "rank %u: collective %u: OC_COLL_FAULT=short "
                "planted", me, req->seq);
    }
    /* the result's receives first, then the contribution, then the
     * descriptor that lets the agent start */
    if (req->cma || req->inl) {
        /* nothing: the agent reads and writes the buffers, or the data
         * travel in the descriptor and the DONE */
    } else if (d->kind == OC_COLLD_ALLTOALLV) {
        size_t es = oc__dtype_size(d->dtype);
        for (uint32_t s = 0; s < n && st == OC_OK; s++)
            st = xfer(req, NULL, (uint8_t *)rbuf + vals[3 * n + s] * es,
                      vals[2 * n + s] * es, OC__COLL_RESULT_TAG(req->seq, s));
    } else if (d->kind != OC_COLLD_BCAST || d->root != me) {
        st = xfer(req, NULL, rbuf, rlen, OC__COLL_RESULT_TAG(req->seq, 0));
    }
    if (st == OC_OK && !req->cma && !req->inl &&
        (d->kind != OC_COLLD_BCAST || d->root == me))
        st = xfer(req, oc__ext_agent_coll_ep(ctx), (void *)sbuf, slen,
                  OC__COLL_CONTRIB_TAG(oc__ext_job(ctx), req->seq, me));
    if (st == OC_OK)
        st = oc__ext_agent_coll_send(ctx, msg, mlen);
    if (st == OC_OK && (d->flags & OC_COLLD_F_SELF)) { /* the agent moves the rest meanwhile */
        const size_t es = oc__dtype_size(d->dtype);
        memcpy((uint8_t *)rbuf + vals[3 * n + me] * es,
               (const uint8_t *)sbuf + vals[n + me] * es, vals[me] * es);
    }
    if (msg != small)
        free(msg);
    c->next_seq = (c->next_seq + 1) & ((1u << OC__COLL_SEQ_BITS) - 1);
    if (c->next_seq == 0)
        c->next_seq = 1;
    oc__coll_link(c, req);
    if (st != OC_OK) {
        /* transfers may be posted: the request stays until they end */
        oc_error(OC_COMP_COLL, "rank %u: collective %u could not start: "
                 "%s", me, req->seq, oc_status_string(st));
        req->status = st;
        req->agent_st = st;
    }
    *req_p = req;
    return OC_OK;
}
