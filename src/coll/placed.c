/*
 * placed.c — the rank's side of the collectives in the agent placement
 * (docs/coll.md): a collective is one descriptor to the node's agent and
 * one answer back.
 *
 * The rank registers its send and receive buffers with UCX, sends the
 * agent a descriptor (wire/colld.h: what, and where the buffers lie, with
 * their remote keys) and returns.  The agent reads the contribution and
 * writes the result with one-sided operations — over shared memory
 * (cma) they need nothing from the rank — and then sends DONE, which
 * the rank's next oc_test()/oc_wait() finds.  So the rank computes while
 * its collective runs on the agent's core: nothing here has to be called
 * for it to advance.  A rank or agent that dies fails the job (the agents
 * tell every rank on the control channel); a collective of a failed
 * context ends with OC_ERR_COLL_PEER_FAILED.
 *
 * Threading: the context's thread only.  Trust: the agent is trusted (it
 * authenticated with the job key); its answers are still checked.
 */
#include "coll/coll_int.h"

#include "util/log.h"
#include "wire/am.h"
#include "wire/colld.h"

#include <stdlib.h>
#include <string.h>

int oc__coll_placed(const oc_context_t *ctx)
{
    return ctx->agent != NULL;
}

static void done_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc_colld_done_t m;
    oc_request_t *r;

    (void)token;
    if (len != sizeof(m) || ctx->coll == NULL)
        return;
    memcpy(&m, data, sizeof(m));
    if (m.magic != OC_COLLD_DONE_MAGIC)
        return;
    for (r = ctx->coll->active; r != NULL; r = r->next) {
        if (!r->placed || r->seq != m.seq || r->status != OC_INPROGRESS)
            continue;
        if (m.status == OC_OK || m.status == OC_ERR_COLL_MISMATCH ||
            m.status == OC_ERR_COLL_COUNT || m.status == OC_ERR_UNSUPPORTED ||
            m.status == OC_ERR_NO_MEMORY)
            r->status = (oc_status_t)m.status;
        else
            r->status = OC_ERR_COLL_PEER_FAILED;
        return;
    }
    oc_warn(OC_COMP_RUNTIME, "rank %u: the agent ended collective %u, which "
            "is not in flight here", ctx->rank, m.seq);
}

static oc_status_t map(oc_context_t *ctx, const void *buf, size_t len,
                       oc_tr_mem_t **m, uint64_t *addr, const void **key,
                       uint32_t *klen)
{
    size_t kl;
    oc_status_t st;

    if (len == 0)
        return OC_OK;
    st = oc_tr_mem_map(ctx->worker, (void *)buf, len, m);
    if (st != OC_OK)
        return st;
    oc_tr_mem_rkey(*m, key, &kl);
    if (kl > OC_COLLD_RKEY_MAX) {
        oc_error(OC_COMP_RUNTIME, "rank %u: UCX packed a %zu-byte remote key "
                 "(at most %d fit a descriptor)", ctx->rank, kl,
                 OC_COLLD_RKEY_MAX);
        return OC_ERR_UNSUPPORTED;
    }
    *klen = (uint32_t)kl;
    *addr = (uint64_t)(uintptr_t)buf;
    return OC_OK;
}

oc_status_t oc__coll_placed_start(oc_context_t *ctx, void *dv,
                                  const uint64_t *vals, const void *sbuf,
                                  size_t slen, void *rbuf, size_t rlen,
                                  oc_request_t **req_p)
{
    oc_colld_t *d = dv;
    oc__coll_t *c = ctx->coll;
    oc_request_t *req;
    uint8_t *msg;
    size_t mlen;
    oc_status_t st;

    if (!c->done_handler) {
        st = oc_tr_set_handler(ctx->worker, OC_AM_COLL_DONE, done_recv, ctx,
                               0);
        if (st != OC_OK)
            return st;
        c->done_handler = 1;
    }
    if ((req = oc__coll_req_new(ctx, 0)) == NULL)
        return OC_ERR_NO_MEMORY;
    req->placed = 1;
    if (sbuf == rbuf && slen == rlen) { /* in place: one registration */
        st = map(ctx, rbuf, rlen, &req->rmem, &d->raddr, &d->rrkey,
                 &d->rrkey_len);
        d->saddr = d->raddr, d->srkey = d->rrkey, d->srkey_len = d->rrkey_len;
    } else {
        st = map(ctx, sbuf, slen, &req->smem, &d->saddr, &d->srkey,
                 &d->srkey_len);
        if (st == OC_OK)
            st = map(ctx, rbuf, rlen, &req->rmem, &d->raddr, &d->rrkey,
                     &d->rrkey_len);
    }
    if (st != OC_OK)
        goto err;
    req->seq = c->next_seq;
    d->seq = req->seq;
    mlen = oc_colld_size(d);
    if ((msg = malloc(mlen)) == NULL) {
        st = OC_ERR_NO_MEMORY;
        goto err;
    }
    oc_colld_encode(d, vals, msg);
    if ((st = oc__agent_coll_send(ctx, msg, mlen)) != OC_OK)
        goto err; /* msg is the agent's to free from here */
    c->next_seq = (c->next_seq + 1) & ((1u << OC__COLL_SEQ_BITS) - 1);
    if (c->next_seq == 0)
        c->next_seq = 1;
    req->next = c->active;
    c->active = req;
    *req_p = req;
    return OC_OK;
err:
    oc__coll_req_free(req);
    return st;
}
