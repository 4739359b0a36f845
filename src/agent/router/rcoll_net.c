/*
 * rcoll_net.c — the transfers of the agent placement's collectives
 * (rcoll.c runs them): tagged sends and receives toward local ranks and
 * peer agents, the inter-agent failure messages, and the end of a
 * collective (zeros into its ranks' receives when it failed, DONE to each
 * local rank).  Router 0's thread only.
 */
#include "rcoll_int.h"

#include "coll/reduce.h"
#include "util/log.h"
#include "wire/colld.h"

#include <stdlib.h>
#include <string.h>

/* Tag of an inter-agent message: 0xC in the top 4 bits (the ranks'
 * collectives never set them: their sequence numbers have 20 bits),
 * job 16 bits, sequence 20, step 4 (1-4: STEP_*, plus RC_FAILED), sending
 * node 20. */
#define RC_TAG(job, seq, step, node)                                          \
    (((uint64_t)0xC << 60) | ((uint64_t)((job) & 0xffff) << 44) |            \
     ((uint64_t)((seq) & 0xfffff) << 24) | ((uint64_t)((step) & 0xf) << 20) | \
     (uint64_t)((node) & 0xfffff))
/* The step's failure bit: the message is a failure message
 * (oc__colld_fail_decode), not the step's data.  Every inter-agent
 * receive is posted with RC_MASK, so that it takes either. */
#define RC_FAILED 0x8
#define RC_FAIL_BIT ((uint64_t)RC_FAILED << 20)
#define RC_MASK (~RC_FAIL_BIT)

typedef struct {
    oc_tr_op_t op;
    acoll_t   *c;
} rop_t;

static void op_done(oc_tr_op_t *op, oc_status_t st)
{
    rop_t *o = (rop_t *)op;
    acoll_t *c = o->c;
    free(o);
    c->pending--;
    if (st == OC_ERR_WIRE_LENGTH && c->status == OC_OK)
        c->status = OC_ERR_COLL_MISMATCH;
    else if (st != OC_OK && c->status == OC_OK)
        c->status = OC_ERR_COLL_PEER_FAILED;
}

/* Issue one tagged transfer: @p kind 3 send (on @p ep), 4 receive. */
void oc__rc_issue(oc_router_t *r, acoll_t *c, int kind, oc_tr_ep_t *ep,
                         void *buf, size_t len, uint64_t tag)
{
    rop_t *o = malloc(sizeof(*o));
    oc_status_t st;

    if (o == NULL) {
        if (c->status == OC_OK)
            c->status = OC_ERR_NO_MEMORY;
        return;
    }
    o->op.cb = op_done;
    o->op.token = 0;
    o->c = c;
    if (ep == NULL && kind != 4) {
        st = OC_ERR_PEER_FAILED;
    } else {
        st = kind == 3 ? oc__tr_tag_send(ep, tag, buf, len, &o->op)
                       : oc__tr_tag_recv(r->w, tag, buf, len, &o->op);
    }
    if (st == OC_INPROGRESS) {
        c->pending++;
        return;
    }
    free(o);
    if (st == OC_ERR_WIRE_LENGTH && c->status == OC_OK)
        c->status = OC_ERR_COLL_MISMATCH;
    else if (st != OC_OK && c->status == OC_OK)
        c->status = OC_ERR_COLL_PEER_FAILED;
}

/* An inter-agent transfer: a receive, or a failure message sent; @p small
 * holds a message of a few bytes (a failure message, or data this short). */
typedef struct {
    oc_tr_recv_op_t op;
    oc_router_t    *r;
    acoll_t        *c;
    uint8_t        *buf;  /* where the step's data goes; NULL: failed here */
    size_t          want; /* its length */
    uint32_t        from; /* the sending node */
    uint8_t         small[16];
} nop_t;

static void net_recvd(oc_tr_op_t *op, oc_status_t st)
{
    nop_t *o = (nop_t *)op;
    acoll_t *c = o->c;
    const uint8_t *got = o->buf != NULL && o->want >= sizeof(o->small)
                             ? o->buf : o->small;
    oc_status_t why = OC_OK, dec;

    c->pending--;
    if (st == OC_OK && (o->op.tag & RC_FAIL_BIT)) {
        /* the sender failed this collective: its status, checked */
        if ((dec = oc__colld_fail_decode(got, o->op.len, &why)) != OC_OK) {
            oc_warn(OC_COMP_ROUTER, "job %u: collective %u: node %u's failure "
                    "message is malformed: %s", c->job, c->seq, o->from,
                    oc_status_string(dec));
            CNT_ADD(o->r->c.rejects, 1);
            why = OC_ERR_COLL_PEER_FAILED;
        }
    } else if (st == OC_OK) {
        if (o->op.len != o->want)
            why = OC_ERR_COLL_MISMATCH;
        else if (o->buf != NULL && got != o->buf)
            memcpy(o->buf, o->small, o->want);
    } else {
        why = st == OC_ERR_WIRE_LENGTH ? OC_ERR_COLL_MISMATCH
                                       : OC_ERR_COLL_PEER_FAILED;
    }
    if (why != OC_OK && c->status == OC_OK)
        c->status = why; /* failed here already: what came is dropped */
    free(o);
}

static void net_sent(oc_tr_op_t *op, oc_status_t st)
{
    nop_t *o = (nop_t *)op;
    acoll_t *c = o->c;

    c->pending--;
    if (st != OC_OK && c->status == OC_OK)
        c->status = OC_ERR_COLL_PEER_FAILED;
    free(o);
}

static nop_t *nop_new(oc_router_t *r, acoll_t *c, uint32_t k)
{
    nop_t *o = malloc(sizeof(*o));

    if (o == NULL) {
        /* the peer will wait for this message: said, for the operator */
        oc_error(OC_COMP_ROUTER, "job %u: collective %u: out of memory for a "
                 "message to or from node %u", c->job, c->seq, c->nodes[k]);
        if (c->status == OC_OK)
            c->status = OC_ERR_NO_MEMORY;
        return NULL;
    }
    o->r = r;
    o->c = c;
    o->from = c->nodes[k];
    o->op.op.token = 0;
    return o;
}

/* Receive node @p k's message of step @p step: @p want bytes into @p buf
 * (NULL when this collective failed here: whatever comes is dropped), or
 * its failure message, whose status fails the collective here. */
void oc__rc_net_recv(oc_router_t *r, acoll_t *c, uint32_t k, int step,
                            uint8_t *buf, size_t want)
{
    nop_t *o = nop_new(r, c, k);
    int big;

    if (o == NULL)
        return;
    o->op.op.cb = net_recvd;
    o->buf = buf;
    o->want = want;
    big = buf != NULL && want >= sizeof(o->small);
    if (oc__tr_tag_recv_masked(r->w, RC_TAG(c->job, c->seq, step, c->nodes[k]),
                               RC_MASK, big ? buf : o->small,
                               big ? want : sizeof(o->small), &o->op) ==
        OC_INPROGRESS) {
        c->pending++;
        return;
    }
    free(o);
    if (c->status == OC_OK)
        c->status = OC_ERR_COLL_PEER_FAILED;
}

/* Send node @p k this node's message of step @p step: @p len bytes at
 * @p buf, or, when the collective failed here, its status instead (the
 * peer waits for a message from this node either way). */
void oc__rc_net_send(oc_router_t *r, acoll_t *c, uint32_t k, int step,
                            const void *buf, size_t len)
{
    oc_tr_ep_t *ep = r->peers[c->nodes[k]].ep;
    nop_t *o;
    oc_status_t st;

    if (c->status == OC_OK) {
        oc__rc_issue(r, c, 3, ep, (void *)buf, len,
              RC_TAG(c->job, c->seq, step, r->p.node));
        return;
    }
    if (ep == NULL || (o = nop_new(r, c, k)) == NULL)
        return; /* gone: the job fails (oc__rcoll_abort) */
    o->op.op.cb = net_sent;
    oc__colld_fail_encode(c->status, o->small);
    st = oc__tr_tag_send(ep, RC_TAG(c->job, c->seq, step | RC_FAILED, r->p.node),
                         o->small, OC_COLLD_FAIL_LEN, &o->op.op);
    if (st == OC_INPROGRESS) {
        c->pending++;
        return;
    }
    free(o);
}

void oc__rc_acoll_free(acoll_t *c)
{
    oc__rcsplit_free(c->split);
    oc__rc_bufs_trim(c, 0);
    free(c->bufs);
    free(c->r);
    free(c->nodes);
    free(c->node_first);
    free(c);
}

void oc__rc_acoll_put(oc_router_t *r, acoll_t *c)
{
    acoll_t keep;

    if (r->ncolls_free >= OC__RC_KEEP || c->nodes == NULL) {
        oc__rc_acoll_free(c);
        return;
    }
    /* its data's buffers stay with it (rcbuf.c), up to a bound: trimmed
     * first, so that their byte count is kept as it is now */
    oc__rcsplit_free(c->split);
    oc__rc_bufs_trim(c, OC__RC_BUF_KEEP);
    keep = *c;
    memset(c, 0, sizeof(*c));
    memset(keep.r, 0, sizeof(*keep.r) * keep.size);
    c->job = keep.job;
    c->size = keep.size;
    c->r = keep.r;
    c->nodes = keep.nodes;
    c->node_first = keep.node_first;
    c->nnodes = keep.nnodes;
    c->pos = keep.pos;
    c->first = keep.first;
    c->last = keep.last;
    c->nlocal = keep.nlocal;
    c->bufs = keep.bufs;
    c->nbufs = keep.nbufs;
    c->buf_bytes = keep.buf_bytes;
    c->next = r->colls_free;
    r->colls_free = c;
    r->ncolls_free++;
}

lrank_t *oc__rc_local_of(oc_router_t *r, acoll_t *c, uint32_t rank)
{
    rjob_t *j = oc__router_job_find(r, c->job);
    return j != NULL ? j->local[rank] : NULL;
}

void oc__rc_tell(oc_router_t *r, acoll_t *c, uint32_t rank, oc_status_t st)
{
    lrank_t *l = oc__rc_local_of(r, c, rank);
    oc_colld_done_t m = {OC_COLLD_DONE_MAGIC, c->seq, st, 0};
    uint8_t buf[sizeof(m) + OC_COLLD_INLINE_MAX];
    size_t len = sizeof(m);
    const rrank_t *rr = &c->r[rank];
    /* all-to-allv: its blocks, packed (olen <= the decoded limit);
     * allreduce, bcast: the result (decoded: count x element size) */
    const uint8_t *res = c->kind == OC_COLLD_ALLTOALLV ? rr->out : c->res;
    size_t rl = c->kind == OC_COLLD_ALLTOALLV ? rr->olen
              : c->kind == OC_COLLD_BCAST && rank == c->root ? 0 /* has it */
              : rr->rlen;

    if (l == NULL || l->ep == NULL)
        return;
    if (rr->inl && st == OC_OK && (res != NULL || rl == 0) &&
        rl <= OC_COLLD_INLINE_MAX) {
        /* its result, in the same message */
        if (rl > 0)
            memcpy(buf + sizeof(m), res, rl);
        len += rl;
    } else if (rr->inl && st == OC_OK) {
        m.status = OC_ERR_COLL_PEER_FAILED; /* not reached: no result */
    }
    memcpy(buf, &m, sizeof(m));
    /* by the ring only where the rank has no tagged message of it to
     * wait for (inline, or by memory): a failed collective's zeros to
     * its posted receives (oc__rc_drain) and a result by UCX must land
     * before it sees DONE and reuses the buffer */
    oc__router_coll_done(r, l, buf, len, rr->have && (rr->inl || rr->cma));
}

/* A failed collective: every receive a local rank posted for its result
 * still gets a message (zeros; the rank reports the error), so that none
 * is left posted in the rank; DONE goes once they are all in (see
 * oc__rc_finish()). */
void oc__rc_drain(oc_router_t *r, acoll_t *c)
{
    size_t max = 0;
    for (uint32_t i = c->first; i <= c->last; i++)
        if (c->r[i].have && c->r[i].rlen > max)
            max = c->r[i].rlen;
    if (max == 0 || c->zero != NULL ||
        (c->zero = oc__rc_buf(r, c, &c->bufs[RB_ZERO], max)) == NULL)
        return;
    memset(c->zero, 0, max);
    for (uint32_t i = c->first; i <= c->last; i++) {
        rrank_t *rr = &c->r[i];
        lrank_t *l = oc__rc_local_of(r, c, i);
        if (!rr->have || l == NULL || rr->cma || rr->inl)
            continue; /* by memory or inline: it posted nothing */
        if (rr->kind == OC_COLLD_ALLTOALLV) {
            for (uint32_t s = 0; s < c->size; s++)
                if (rr->v[2 * c->size + s] > 0)
                    oc__rc_issue(r, c, 3, l->ep, c->zero,
                          rr->v[2 * c->size + s] * oc__dtype_size(c->dtype),
                          OC__COLL_RESULT_TAG(c->seq, s));
        } else if (rr->rlen > 0 && !(rr->kind == OC_COLLD_BCAST && rr->root == i)) {
            oc__rc_issue(r, c, 3, l->ep, c->zero, rr->rlen,
                  OC__COLL_RESULT_TAG(c->seq, 0));
        }
    }
}

void oc__rc_tell_all(oc_router_t *r, acoll_t *c)
{
    for (uint32_t i = c->first; i <= c->last; i++)
        if (c->r[i].have)
            oc__rc_tell(r, c, i, c->r[i].cma_st != OC_OK ? c->r[i].cma_st
                          : c->status != OC_OK ? c->status : c->r[i].st);
    c->state = ST_END;
}

/* DONE to every local rank.  A rank whose DONE says the collective failed
 * returns at once, without waiting for its result's receives: so a failed
 * one's DONE waits for the drain (a rendezvous into a receive the rank
 * posted, landing after it returned, would write into a buffer the
 * application has since reused).  Not when the job failed: nothing more
 * comes from the ranks that are gone. */
void oc__rc_finish(oc_router_t *r, acoll_t *c)
{
    if (c->status != OC_OK) {
        uint32_t before = c->pending;
        oc__rc_drain(r, c);
        if (c->pending > before && !c->dead) {
            c->state = ST_DRAIN;
            return;
        }
    }
    oc__rc_tell_all(r, c);
}
