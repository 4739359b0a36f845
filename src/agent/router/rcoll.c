/*
 * rcoll.c — the collectives of the agent placement, run by a routing
 * thread of offcored: each local rank sends a descriptor (wire/colld.h)
 * and its contribution; the agent reduces the node's ranks in rank order,
 * runs the inter-node part with the other agents and sends every rank its
 * result.  How the chain over the nodes, the all-to-all and the failure
 * messages work: docs/coll.md, "Inside the agent".
 *
 * Threading: the router's thread only (router 0 of each agent serves every
 * job's collectives).  Trust: only a registered sender's descriptors,
 * decoded by oc__colld_decode(), are used; every receive is posted with
 * the size they imply; a peer agent's failure message is decoded strictly;
 * payload tags carry no token (docs/coll.md, "Agent placement").
 */
#include "rcoll_int.h"

#include "coll/reduce.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/colld.h"

#include <stdlib.h>
#include <string.h>

/* The job's nodes in rank order; each node's ranks must be contiguous. */
static oc_status_t layout(oc_router_t *r, acoll_t *c, const oc_job_map_t *m)
{
    uint32_t me = r->p.node, prev = UINT32_MAX;

    c->nodes = malloc(sizeof(*c->nodes) * (m->size + 1));
    c->node_first = malloc(sizeof(*c->node_first) * (m->size + 1));
    if (c->nodes == NULL || c->node_first == NULL)
        return OC_ERR_NO_MEMORY;
    c->first = UINT32_MAX;
    for (uint32_t i = 0; i < m->size; i++) {
        uint32_t n = m->node_of[i];
        if (n != prev) {
            for (uint32_t k = 0; k < c->nnodes; k++)
                if (c->nodes[k] == n)
                    return OC_ERR_UNSUPPORTED; /* not contiguous */
            c->node_first[c->nnodes] = i;
            c->nodes[c->nnodes++] = n;
            prev = n;
        }
        if (n == me) {
            if (c->first == UINT32_MAX)
                c->first = i, c->pos = c->nnodes - 1;
            c->last = i;
            c->nlocal++;
        }
    }
    c->node_first[c->nnodes] = m->size;
    return c->nlocal > 0 ? OC_OK : OC_ERR_STATE;
}

/* An ended collective of job @p job kept by oc__rc_acoll_put(): the layout
 * is computed once per job, not per collective. */
static acoll_t *acoll_kept(oc_router_t *r, uint32_t job)
{
    for (acoll_t **p = &r->colls_free, *c; (c = *p) != NULL; p = &c->next)
        if (c->job == job) {
            *p = c->next;
            c->next = NULL;
            r->ncolls_free--;
            return c;
        }
    return NULL;
}

void oc__rcoll_job_gone(oc_router_t *r, uint32_t job)
{
    acoll_t **p = &r->colls_free, *c;
    while ((c = *p) != NULL) {
        if (job == UINT32_MAX || c->job == job) {
            *p = c->next;
            r->ncolls_free--;
            oc__rc_acoll_free(c);
        } else {
            p = &c->next;
        }
    }
}

static acoll_t *acoll_get(oc_router_t *r, rjob_t *j, uint32_t seq)
{
    acoll_t *c, **tail = &r->colls;

    for (c = r->colls; c != NULL; tail = &c->next, c = c->next)
        if (c->job == j->map->job && c->seq == seq && !c->dead)
            return c;
    if ((c = acoll_kept(r, j->map->job)) != NULL) {
        c->seq = seq; /* its rank array zeroed, its layout the job's */
        *tail = c;
        CNT_ADD(r->c.coll_state_kept, 1);
        return c;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    CNT_ADD(r->c.coll_state_new, 1);
    c->job = j->map->job;
    c->seq = seq;
    c->size = j->map->size;
    c->r = calloc(c->size, sizeof(*c->r));
    if (c->r == NULL || layout(r, c, j->map) != OC_OK ||
        oc__rc_bufs_init(c) != 0) {
        oc__rc_acoll_free(c);
        return NULL;
    }
    *tail = c; /* in order of arrival: the sequence order */
    return c;
}

/* A descriptor whose sender this router does not know yet: the control
 * thread admits a rank's job and the rank's token to the router with a
 * command (rcmd.c) and then releases the rank, whose first descriptor can
 * overtake that command.  Kept (a copy) and retried each loop round for
 * OC_ROUTER_UNKNOWN_JOB_WAIT_US, then dropped and counted. */
typedef struct held {
    struct held *next;
    uint64_t     token, t_arrival;
    size_t       len;
    uint8_t      data[];
} held_t;

static int desc_in(oc_router_t *r, uint64_t token, const void *data,
                   size_t len);

void oc__rcoll_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_router_t *r = arg;
    held_t *h, **t;

    if (desc_in(r, token, data, len))
        return;
    if (len > 65536 || (h = malloc(sizeof(*h) + len)) == NULL) {
        CNT_ADD(r->c.reject_unknown_sender, 1);
        return;
    }
    h->next = NULL;
    h->token = token;
    h->t_arrival = oc__now_us();
    h->len = len;
    memcpy(h->data, data, len);
    for (t = (held_t **)&r->colls_held; *t != NULL; t = &(*t)->next)
        ;
    *t = h;
}

static void retry_held(oc_router_t *r)
{
    held_t **p = (held_t **)&r->colls_held, *h;
    while ((h = *p) != NULL) {
        int done = desc_in(r, h->token, h->data, h->len);
        if (!done && oc__now_us() - h->t_arrival > OC_ROUTER_UNKNOWN_JOB_WAIT_US) {
            CNT_ADD(r->c.reject_unknown_sender, 1);
            done = 1;
        }
        if (done) {
            *p = h->next;
            free(h);
        } else {
            p = &h->next;
        }
    }
}

/* @return 1 when handled (used or rejected), 0 when its sender is unknown
 * for now. */
static int desc_in(oc_router_t *r, uint64_t token, const void *data,
                   size_t len)
{
    sender_t *s = oc__router_sender_find(r, token);
    rjob_t *j;
    oc_colld_t d;
    acoll_t *c;
    rrank_t *rr;
    lrank_t *l;
    oc_status_t st;

    if (s == NULL || s->is_peer || (j = oc__router_job_find(r, s->job)) ==
                                        NULL || (l = j->local[s->rank]) == NULL)
        return s != NULL && s->is_peer; /* a peer sends none: reject */
    if ((st = oc__colld_decode(data, len, j->map->size, &d)) != OC_OK) {
        uint32_t seq;
        oc_warn(OC_COMP_ROUTER, "job %u rank %u: bad collective descriptor: %s",
                s->job, s->rank, oc_status_string(st));
        CNT_ADD(r->c.rejects, 1);
        /* the collective it meant, where that is known, fails on every
         * local rank (the others would wait for this rank for ever) */
        if (r->p.index == 0 && oc__colld_seq(data, len, &seq) &&
            (c = acoll_get(r, j, seq)) != NULL && c->state == ST_GATHER &&
            !c->r[s->rank].have) {
            c->r[s->rank].have = 1;
            c->ndesc++;
            c->status = OC_ERR_COLL_MISMATCH;
            /* what it says it is, until a rank's descriptor says so: the
             * messages the other agents wait for (see the file comment) */
            if (!c->kset)
                (void)oc__colld_shape(data, len, j->map->size, &c->kind,
                                      &c->root);
        }
        return 1;
    }
    if (r->p.index != 0) {
        /* WELCOME names router 0 for the job's collectives: a rank that
         * sends one elsewhere is told so, and only it fails */
        oc_colld_done_t m = {OC_COLLD_DONE_MAGIC, d.seq, OC_ERR_UNSUPPORTED, 0};
        oc_warn(OC_COMP_ROUTER, "job %u rank %u: collective %u sent to router "
                "%u, not to the job's collective router 0: refused", s->job,
                s->rank, d.seq, r->p.index);
        CNT_ADD(r->c.rejects, 1);
        oc__router_coll_done(r, l, &m, sizeof(m), 1);
        return 1;
    }
    c = acoll_get(r, j, d.seq);
    if (c == NULL) {
        oc_colld_done_t m = {OC_COLLD_DONE_MAGIC, d.seq, OC_ERR_UNSUPPORTED, 0};
        oc_warn(OC_COMP_ROUTER, "job %u: collective %u refused (out of memory, "
                "or the ranks of a node are not contiguous)", s->job, d.seq);
        oc__router_coll_done(r, l, &m, sizeof(m), 1);
        return 1;
    }
    rr = &c->r[s->rank];
    if (rr->have || c->state != ST_GATHER) {
        oc_warn(OC_COMP_ROUTER, "job %u rank %u: collective %u started twice",
                s->job, s->rank, d.seq);
        return 1;
    }
    if (!c->kset) {
        c->kind = d.kind, c->dtype = d.dtype, c->op = d.op;
        c->count = d.count, c->root = d.root;
        c->es = oc__dtype_size(d.dtype);
        c->kset = 1;
    } else if (c->kind != d.kind || c->dtype != d.dtype || c->op != d.op ||
               c->count != d.count || c->root != d.root) {
        c->status = OC_ERR_COLL_MISMATCH;
    }
    rr->have = 1;
    rr->kind = d.kind;
    rr->root = d.root;
    c->ndesc++;
    if (d.kind == OC_COLLD_ALLTOALLV) {
        rr->v = oc__rc_buf(r, c, RB_RANK(c, s->rank, 0), 32 * (size_t)d.nv);
        if (rr->v == NULL) {
            c->status = OC_ERR_NO_MEMORY;
            return 1;
        }
        for (uint32_t i = 0; i < d.nv; i++)
            for (unsigned w = 0; w < 4; w++) {
                uint64_t x = oc__colld_v(&d, w, i);
                rr->v[w * d.nv + i] = x;
            }
        for (uint32_t i = 0; i < d.nv; i++) {
            uint64_t se = rr->v[i] ? (rr->v[i] + rr->v[d.nv + i]) * c->es : 0;
            uint64_t re = rr->v[2 * d.nv + i]
                              ? (rr->v[2 * d.nv + i] + rr->v[3 * d.nv + i]) * c->es
                              : 0;
            if (se > rr->slen)
                rr->slen = se;
            if (re > rr->rlen)
                rr->rlen = re;
        }
    } else if (d.kind != OC_COLLD_BARRIER) {
        rr->slen = rr->rlen = d.count * c->es;
    }
    rr->inl = (d.flags & OC_COLLD_F_INLINE) != 0;
    if (rr->inl) { /* the first of each kind said once: tests look */
        static const char *const kn[] = {"", "allreduce", "all-to-all",
                                         "bcast", "barrier"};
        if (!(r->inline_said & (1u << d.kind)))
            oc_info(OC_COMP_ROUTER, "job %u rank %u: small %s contributions "
                    "inline, results in DONE", s->job, s->rank, kn[d.kind]);
        r->inline_said |= 1u << d.kind;
        CNT_ADD(r->c.coll_inline, 1);
        /* a broadcast's data come from its root, and only from it (the
         * decoder let the length be either) */
        if (d.kind == OC_COLLD_BCAST && (d.dlen > 0) != (s->rank == d.root))
            c->status = OC_ERR_COLL_MISMATCH;
    }
    if (d.flags & OC_COLLD_F_CMA) { /* its buffers, offered (rcma.c) */
        rr->cma = oc__rcma_accept(r, l, s->job, s->rank, d.pid);
        rr->saddr = d.saddr, rr->raddr = d.raddr;
        rr->self = rr->cma && (d.flags & OC_COLLD_F_SELF);
        if (rr->self)
            oc__rcma_self(c, rr, s->rank);
        if (!rr->cma) {
            oc_colld_done_t m = {OC_COLLD_DONE_MAGIC, d.seq, OC_COLLD_FALLBACK, 0};
            oc__router_coll_done(r, l, &m, sizeof(m), 1);
        }
    }
    /* its contribution: posted now, so that UCX moves it while the other
     * ranks' descriptors arrive (rendezvous: the agent reads it); by
     * memory, read from the loop (oc__rcma_step) */
    if (rr->slen > 0 && (d.kind != OC_COLLD_BCAST || s->rank == d.root) &&
        d.kind != OC_COLLD_BARRIER) {
        if ((rr->in = oc__rc_buf(r, c, RB_RANK(c, s->rank, 1), rr->slen)) ==
            NULL) {
            c->status = OC_ERR_NO_MEMORY;
            return 1;
        }
        if (rr->inl && d.dlen == rr->slen) /* as the decoder checked */
            memcpy(rr->in, d.data, rr->slen);
        else if (rr->inl) /* a broadcast's root that sent nothing */
            c->status = OC_ERR_COLL_MISMATCH;
        else if (!rr->cma)
            oc__rc_issue(r, c, 4, NULL, rr->in, rr->slen,
                  OC__COLL_CONTRIB_TAG(c->job, c->seq, s->rank));
    }
    return 1;
}


/* ---- running a collective ------------------------------------------ */

static uint32_t node_pos(const acoll_t *c, uint32_t rank)
{
    uint32_t k = 0;
    while (k + 1 < c->nnodes && c->node_first[k + 1] <= rank)
        k++;
    return k;
}

static int raw16(const acoll_t *c)
{
    return c->es == 2;
}

/* Allreduce and barrier: fold this node's ranks onto what came down the
 * chain into c->res, and say what goes on to the next node. */
static void fold(oc_router_t *r, acoll_t *c, size_t bytes, const void **obuf,
                 size_t *olen)
{
    const uint32_t last = c->nnodes - 1;
    const size_t before = c->node_first[c->pos]; /* ranks on earlier nodes */
    const void **srcs;
    uint32_t k = 0, n;

    n = c->nlocal + (c->pos > 0 ? (raw16(c) ? (uint32_t)before : 1) : 0);
    srcs = oc__rc_buf(r, c, &c->bufs[RB_SRCS], sizeof(*srcs) * (n + 1));
    c->res = oc__rc_buf(r, c, &c->bufs[RB_RES], bytes);
    if (srcs == NULL || c->res == NULL) {
        c->status = OC_ERR_NO_MEMORY;
        return;
    }
    if (c->pos > 0)
        for (uint32_t b = 0; b < (raw16(c) ? before : 1); b++)
            srcs[k++] = c->net + b * bytes;
    for (uint32_t i = c->first; i <= c->last; i++)
        srcs[k++] = c->r[i].in;
    if (c->pos == last || !raw16(c)) {
        if (bytes > 0)
            oc__reduce_ordered(c->dtype, c->op, c->res, srcs, n, c->count);
    }
    if (c->pos < last) {
        /* raw 16-bit floats: what came, then this node's inputs */
        *olen = raw16(c) ? n * bytes : bytes;
        if ((c->acc = oc__rc_buf(r, c, &c->bufs[RB_ACC], *olen)) == NULL) {
            c->status = OC_ERR_NO_MEMORY;
        } else if (raw16(c)) {
            for (uint32_t b = 0; b < n; b++)
                memcpy(c->acc + b * bytes, srcs[b], bytes);
        } else {
            memcpy(c->acc, c->res, bytes);
        }
        *obuf = c->acc;
    }
}

/* Allreduce and barrier: the chain (see the file comment).  Failed here,
 * or told so, a node still receives and sends every message of the
 * chain, failure messages in place of its data. */
static void chain(oc_router_t *r, acoll_t *c)
{
    const size_t bytes = c->kind == OC_COLLD_BARRIER ? 0 : c->count * c->es;
    const uint32_t last = c->nnodes - 1;
    const size_t before = c->node_first[c->pos]; /* ranks on earlier nodes */

    if (c->step == 0) {
        if (c->pos > 0) {
            size_t inlen = raw16(c) ? before * bytes : bytes;
            if (c->status == OC_OK &&
                (c->net = oc__rc_buf(r, c, &c->bufs[RB_NET], inlen)) == NULL)
                c->status = OC_ERR_NO_MEMORY;
            oc__rc_net_recv(r, c, c->pos - 1, STEP_CHAIN,
                     c->status == OC_OK ? c->net : NULL, inlen);
        }
        c->step = 1;
        return;
    }
    if (c->step == 1) {
        const void *obuf = NULL;
        size_t olen = 0;

        if (c->pending > 0)
            return;
        if (c->status == OC_OK)
            fold(r, c, bytes, &obuf, &olen);
        if (c->pos < last) {
            oc__rc_net_send(r, c, c->pos + 1, STEP_CHAIN, obuf, olen);
            oc__rc_net_recv(r, c, last, STEP_RESULT,
                     c->status == OC_OK ? c->res : NULL, bytes);
        } else {
            for (uint32_t q = 0; q < last; q++)
                oc__rc_net_send(r, c, q, STEP_RESULT, c->res, bytes);
        }
        c->step = 2;
        return;
    }
    if (c->pending == 0)
        c->state = ST_PUT;
}

/* Broadcast: the root's node sends every node the data; every other node
 * sends every node an empty message (a failure message when it failed),
 * so that a failure anywhere fails the broadcast everywhere. */
static void bcast(oc_router_t *r, acoll_t *c)
{
    const size_t bytes = c->count * c->es;
    const uint32_t rp = node_pos(c, c->root);

    if (c->step == 0) {
        if (c->status != OC_OK) {
            /* nothing of the data */
        } else if (rp == c->pos) {
            c->res = c->r[c->root].in;
        } else if ((c->res = oc__rc_buf(r, c, RB_RANK(c, c->root, 1), bytes)) ==
                   NULL) {
            c->status = OC_ERR_NO_MEMORY;
        } else {
            c->r[c->root].in = c->res; /* in the root's buffer */
        }
        for (uint32_t q = 0; q < c->nnodes; q++)
            if (q != c->pos)
                oc__rc_net_recv(r, c, q, STEP_BCAST,
                         q == rp && c->status == OC_OK ? c->res : NULL,
                         q == rp ? bytes : 0);
        for (uint32_t q = 0; q < c->nnodes; q++)
            if (q != c->pos)
                oc__rc_net_send(r, c, q, STEP_BCAST, c->res,
                         rp == c->pos ? bytes : 0);
        c->step = 1;
        return;
    }
    if (c->pending == 0)
        c->state = ST_PUT;
}

#define SC(rr, d) ((rr)->v[(d)])
#define SD(rr, d) ((rr)->v[c->size + (d)])
#define RCNT(rr, s) ((rr)->v[2 * c->size + (s)])
#define RD(rr, s) ((rr)->v[3 * c->size + (s)])

/* All-to-all(v): this node's blocks for every other node, packed. */
static void a2a_pack(oc_router_t *r, acoll_t *c)
{
    size_t M = c->nnodes;
    /* its four arrays of M in one buffer: pointers, then lengths */
    uint8_t *meta = oc__rc_buf(r, c, &c->bufs[RB_A2A_META],
                               M * 2 * (sizeof(uint8_t *) + sizeof(size_t)));

    if (meta == NULL) {
        c->status = OC_ERR_NO_MEMORY;
        return;
    }
    memset(meta, 0, M * 2 * (sizeof(uint8_t *) + sizeof(size_t)));
    c->a2a_out = (uint8_t **)meta;
    c->a2a_in = c->a2a_out + M;
    c->a2a_olen = (size_t *)(void *)(c->a2a_in + M);
    c->a2a_ilen = c->a2a_olen + M;
    for (uint32_t q = 0; q < M; q++) {
        size_t ol = 0, il = 0, off = 0;
        if (q == c->pos)
            continue;
        for (uint32_t s = c->first; s <= c->last; s++)
            for (uint32_t d = c->node_first[q]; d < c->node_first[q + 1]; d++)
                ol += SC(&c->r[s], d) * c->es;
        for (uint32_t s = c->node_first[q]; s < c->node_first[q + 1]; s++)
            for (uint32_t d = c->first; d <= c->last; d++)
                il += RCNT(&c->r[d], s) * c->es;
        c->a2a_out[q] = oc__rc_buf(r, c, RB_NODE(c, q, 0), ol);
        c->a2a_in[q] = oc__rc_buf(r, c, RB_NODE(c, q, 1), il);
        if (c->a2a_out[q] == NULL || c->a2a_in[q] == NULL) {
            c->status = OC_ERR_NO_MEMORY;
            return;
        }
        for (uint32_t s = c->first; s <= c->last; s++)
            for (uint32_t d = c->node_first[q]; d < c->node_first[q + 1]; d++) {
                size_t len = SC(&c->r[s], d) * c->es;
                if (len)
                    memcpy(c->a2a_out[q] + off,
                           c->r[s].in + SD(&c->r[s], d) * c->es, len);
                off += len;
            }
        c->a2a_olen[q] = ol, c->a2a_ilen[q] = il;
    }
}

/* All-to-all(v): one message each way between this node and every other;
 * failed here, failure messages go instead (and what comes is dropped). */
static void alltoallv(oc_router_t *r, acoll_t *c)
{
    if (c->step == 0) {
        if (c->status == OC_OK)
            a2a_pack(r, c); /* everything first: one outcome for every node */
        for (uint32_t q = 0; q < c->nnodes; q++) {
            int ok = c->status == OC_OK;
            if (q == c->pos)
                continue;
            oc__rc_net_recv(r, c, q, STEP_A2A, ok ? c->a2a_in[q] : NULL,
                     ok ? c->a2a_ilen[q] : 0);
            oc__rc_net_send(r, c, q, STEP_A2A, ok ? c->a2a_out[q] : NULL,
                     ok ? c->a2a_olen[q] : 0);
        }
        c->step = 1;
        return;
    }
    if (c->pending == 0)
        c->state = ST_PUT;
}

/* Block @p len bytes at @p src of rank @p d's result, from rank @p from
 * (all-to-all) or 0: one tagged message into the receive it posted. */
static void put(oc_router_t *r, acoll_t *c, uint32_t d, const void *src,
                size_t len, uint32_t from)
{
    lrank_t *l = oc__rc_local_of(r, c, d);
    if (len == 0)
        return;
    oc__rc_issue(r, c, 3, l ? l->ep : NULL, (void *)src, len,
          OC__COLL_RESULT_TAG(c->seq, from));
}

static void start_puts(oc_router_t *r, acoll_t *c)
{
    if (c->kind == OC_COLLD_ALLTOALLV) {
        int mem = 0;
        for (uint32_t d = c->first; d <= c->last; d++)
            if (c->r[d].cma) {
                c->r[d].moved = 0; /* now: the next source to write */
                mem = 1;
            }
        if (mem) {
            size_t n = (size_t)c->nlocal * c->size * sizeof(*c->a2a_src);
            if ((c->a2a_src = oc__rc_buf(r, c, &c->bufs[RB_A2A_SRC], n)) == NULL)
                c->status = OC_ERR_NO_MEMORY;
            else
                memset((void *)c->a2a_src, 0, n);
        }
        for (uint32_t d = c->first; d <= c->last; d++)
            if (c->r[d].inl && c->status == OC_OK) {
                /* its blocks go in its DONE: at most OC_COLLD_INLINE_MAX
                 * bytes (decoded), packed here in source order */
                c->r[d].olen = 0;
                if ((c->r[d].out = oc__rc_buf(r, c, RB_RANK(c, d, 2),
                                              OC_COLLD_INLINE_MAX)) == NULL)
                    c->status = OC_ERR_NO_MEMORY;
            }
        if (c->status != OC_OK) {
            oc__rc_finish(r, c);
            return;
        }
        for (uint32_t q = 0; q < c->nnodes; q++) {
            size_t off = 0;
            for (uint32_t s = c->node_first[q]; s < c->node_first[q + 1]; s++)
                for (uint32_t d = c->first; d <= c->last; d++) {
                    size_t len = RCNT(&c->r[d], s) * c->es;
                    const uint8_t **src = c->r[d].cma
                        ? &c->a2a_src[(size_t)(d - c->first) * c->size + s] : NULL;
                    if (c->r[d].inl) { /* into its DONE (oc__rc_tell) */
                        const uint8_t *from = c->a2a_in != NULL && q != c->pos
                                                  ? c->a2a_in[q] + off : NULL;
                        if (q != c->pos) {
                            off += len;
                        } else if (SC(&c->r[s], d) * c->es != len) {
                            c->r[d].st = OC_ERR_COLL_MISMATCH; /* none */
                            continue;
                        } else if (len > 0) {
                            from = c->r[s].in + SD(&c->r[s], d) * c->es;
                        }
                        if (len > 0)
                            memcpy(c->r[d].out + c->r[d].olen, from, len);
                        c->r[d].olen += len;
                        continue;
                    }
                    if (src != NULL) { /* by memory: written from ST_WRITE */
                        if (s == d && c->r[d].self)
                            continue; /* the rank copies its own */
                        if (q != c->pos) {
                            *src = len ? c->a2a_in[q] + off : NULL;
                            off += len;
                        } else if (SC(&c->r[s], d) * c->es != len) {
                            c->r[d].st = OC_ERR_COLL_MISMATCH; /* not written */
                        } else if (len > 0) {
                            *src = c->r[s].in + SD(&c->r[s], d) * c->es;
                        }
                        continue;
                    }
                    if (q == c->pos) { /* from a rank of this node */
                        size_t slen = SC(&c->r[s], d) * c->es;
                        if (slen != len && len == 0) {
                            /* it posted nothing: tell it instead */
                            c->r[d].st = OC_ERR_COLL_MISMATCH;
                            continue;
                        }
                        /* the sender's length: a receive it does not fit
                         * ends with OC_ERR_COLL_MISMATCH on the receiver,
                         * as inline, and no receive is left posted */
                        if (slen != len) {
                            lrank_t *l = oc__rc_local_of(r, c, d);
                            oc__rc_issue(r, c, 3, l ? l->ep : NULL,
                                  c->r[s].in + SD(&c->r[s], d) * c->es, slen,
                                  OC__COLL_RESULT_TAG(c->seq, s));
                            continue;
                        }
                        put(r, c, d, c->r[s].in + SD(&c->r[s], d) * c->es, len,
                            s);
                    } else {
                        put(r, c, d, c->a2a_in[q] + off, len, s);
                        off += len;
                    }
                }
        }
        if (mem) {
            if (r->c.coll_a2a_mem == 0)
                oc_info(OC_COMP_ROUTER, "job %u: all-to-all blocks written "
                        "by memory", c->job);
            CNT_ADD(r->c.coll_a2a_mem, 1);
            c->state = ST_WRITE; /* DONE once the blocks are written */
            return;
        }
    } else if (c->kind != OC_COLLD_BARRIER) {
        int mem = 0;
        for (uint32_t i = c->first; i <= c->last; i++) {
            c->r[i].moved = 0;
            if (c->r[i].cma)
                mem = 1; /* written by oc__rcma_step */
            else if (c->r[i].inl)
                continue; /* in its DONE */
            else if (!(c->kind == OC_COLLD_BCAST && i == c->root))
                put(r, c, i, c->res, c->count * c->es, 0);
        }
        if (mem) {
            c->state = ST_WRITE; /* DONE once the results are written */
            return;
        }
    }
    /* DONE at once: a rank completes when it has both DONE and its
     * blocks; the result buffers live until the sends are over */
    oc__rc_finish(r, c);
}

static int advance(oc_router_t *r, acoll_t *c)
{
    int was = c->state, step = c->step;

    if (c->state == ST_DRAIN) {
        if (c->pending > 0)
            return 0;
        oc__rc_tell_all(r, c);
        return 1;
    }
    if (c->status != OC_OK && c->state != ST_NET) {
        /* wait for what is in flight, then end; and for every local
         * rank's descriptor: one that came after the end would start the
         * collective anew and wait for ever */
        if (c->pending > 0 || c->state == ST_END || c->ndesc < c->nlocal)
            return 0;
        if (c->state < ST_NET && c->nnodes > 1 && !c->dead) {
            /* the other nodes' agents wait for this one's messages: it
             * sends them its failure instead (see the file comment) */
            if (c->kind != 0) {
                c->state = ST_NET;
                c->step = 0;
                return 1;
            }
            oc_warn(OC_COMP_ROUTER, "job %u: collective %u failed before any "
                    "of its descriptors here said what it is: the other "
                    "nodes' agents are not told", c->job, c->seq);
        }
        oc__rc_finish(r, c);
        return 1;
    }
    switch (c->state) {
    case ST_GATHER:
        if (!oc__rcsplit_may(r, c))
            (void)oc__rcma_step(r, c, 0); /* read those that are in */
        if (c->ndesc < c->nlocal || c->status != OC_OK)
            return 0;
        c->state = ST_GET; /* the contributions were posted as they came */
        break;
    case ST_GET:
        if (oc__rcsplit_start(r, c))
            break; /* read, reduced and written by slices (rcsplit.c) */
        if (!oc__rcma_step(r, c, 0) || c->pending > 0 || c->status != OC_OK)
            return 0;
        c->state = ST_NET;
        c->step = 0;
        /* fall through */
    case ST_NET:
        if (c->kind == OC_COLLD_ALLTOALLV)
            alltoallv(r, c);
        else if (c->kind == OC_COLLD_BCAST)
            bcast(r, c);
        else
            chain(r, c);
        break;
    case ST_SPLIT:
        if (c->split_wait)
            return 0;
        oc__rc_finish(r, c); /* every result is written */
        break;
    case ST_PUT:
        start_puts(r, c);
        break;
    case ST_WRITE:
        if ((c->kind == OC_COLLD_ALLTOALLV ? oc__rcma_a2a_step(r, c)
                                           : oc__rcma_step(r, c, 1)) &&
            c->status == OC_OK)
            oc__rc_finish(r, c);
        break;
    default:
        break;
    }
    return c->state != was || c->step != step;
}

int oc__rcoll_progress(oc_router_t *r)
{
    acoll_t **p = &r->colls, *c;
    int work = 0;

    if (r->colls_held != NULL)
        retry_held(r);
    oc__rcma_round(r);
    while ((c = *p) != NULL) {
        if (c->split_wait && oc__rcsplit_poll(r, c)) {
            c->split_wait = 0;
            c->pending--;
            work++;
        }
        if (c->state != ST_END)
            while (advance(r, c))
                work++;
        if (c->state == ST_END && c->pending == 0) {
            *p = c->next;
            oc__rc_acoll_put(r, c);
            continue;
        }
        p = &c->next;
    }
    /* a transfer by memory cut short by the round's budget goes on at
     * once, with no sleep in between */
    return work + (r->cma_budget == 0);
}

void oc__rcoll_abort(oc_router_t *r, uint32_t job, uint32_t rank)
{
    for (acoll_t *c = r->colls; c != NULL; c = c->next) {
        if (c->state == ST_END)
            continue;
        if (job == UINT32_MAX ? c->nnodes < 2 : c->job != job)
            continue;
        if (rank != UINT32_MAX && rank < c->size)
            c->r[rank].have = 0; /* its endpoint goes: nothing to tell it */
        c->status = OC_ERR_COLL_PEER_FAILED;
        c->dead = 1;
        oc__rc_finish(r, c);
        oc_warn(OC_COMP_ROUTER, "job %u: collective %u failed (%s)", c->job,
                c->seq, rank != UINT32_MAX ? "a local rank is gone"
                        : job != UINT32_MAX ? "the job failed" : "a peer agent is gone");
    }
}

void oc__rcoll_fini(oc_router_t *r)
{
    acoll_t *c;
    held_t *h;

    while ((h = r->colls_held) != NULL) {
        r->colls_held = h->next;
        free(h);
    }
    oc__rcoll_job_gone(r, UINT32_MAX);
    /* what still has an operation posted is left allocated: UCX may call
     * back into it while the worker goes (a leak at exit, not a crash) */
    while ((c = r->colls) != NULL) {
        r->colls = c->next;
        if (c->pending == 0)
            oc__rc_acoll_free(c);
    }
}
