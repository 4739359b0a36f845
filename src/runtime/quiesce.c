/*
 * quiesce.c — counting-based termination detection for oc_quiesce().
 *
 * Waves run over a 4-ary tree of ranks rooted at rank 0: each rank adds
 * its own (sent, delivered) counters to its children's sums and passes
 * them up; the root compares and broadcasts a verdict down.  The job is
 * quiescent when two consecutive waves saw the same totals with
 * sent == delivered (Mattern's four-counter method): nothing was sent or
 * delivered between the waves, and nothing is in flight.  Counters are
 * read after flushing every buffer, so buffered messages keep the
 * difference non-zero until they are delivered.
 *
 * Control messages are tiny active messages on their own id, never
 * aggregated, never blocked by the data path's back-pressure.
 */
#include "runtime.h"

#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#define OC_Q_ARITY 4

enum { Q_UP = 1, Q_DOWN = 2 };
enum { Q_CONTINUE = 0, Q_DONE = 1 };

typedef struct {
    uint32_t type;
    uint32_t from;
    uint32_t epoch;
    uint32_t round;
    uint64_t sent;
    uint64_t delivered;
    uint32_t verdict;
    uint32_t job;
} qmsg_t;

typedef struct {
    oc_tr_op_t op;
    qmsg_t     m;
} qsend_t;

static void qsend_done(oc_tr_op_t *op, oc_status_t st)
{
    (void)st; /* a failed control send is reported by the data path too */
    free(op);
}

static oc_status_t qsend(oc_context_t *ctx, uint32_t to, const qmsg_t *m)
{
    qsend_t *s;
    oc_status_t st;

    if (to == ctx->rank) { /* only with size 1: handled by the caller */
        return OC_OK;
    }
    s = malloc(sizeof(*s));
    if (s == NULL)
        return OC_ERR_NO_MEMORY;
    s->op.cb = qsend_done;
    s->op.token = 0;
    s->m = *m;
    st = oc__tr_send(ctx->eps[to], OC_AM_CONTROL, &s->m, sizeof(s->m),
                    &s->op);
    if (st == OC_INPROGRESS)
        return OC_OK;
    free(s);
    return st;
}

oc_status_t oc__quiesce_init(oc_context_t *ctx)
{
    oc__quiesce_t *q = &ctx->q;
    uint32_t first = ctx->rank * OC_Q_ARITY + 1;

    memset(q, 0, sizeof(*q));
    q->parent = ctx->rank == 0 ? UINT32_MAX : (ctx->rank - 1) / OC_Q_ARITY;
    q->first_child = first;
    q->nchildren = 0;
    if (first < ctx->size)
        q->nchildren = ctx->size - first < OC_Q_ARITY ? ctx->size - first
                                                      : OC_Q_ARITY;
    q->child = calloc(OC_Q_ARITY, sizeof(*q->child));
    return q->child ? OC_OK : OC_ERR_NO_MEMORY;
}

void oc__quiesce_fini(oc_context_t *ctx)
{
    free(ctx->q.child);
    ctx->q.child = NULL;
}

/* Runs inside oc__tr_progress(): only record what arrived. */
void oc__control_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc__quiesce_t *q = &ctx->q;
    qmsg_t m;
    oc__qslot_t *slot;

    if (len != sizeof(m)) {
        oc_warn(OC_COMP_RUNTIME, "control message of %zu bytes rejected", len);
        return;
    }
    memcpy(&m, data, sizeof(m));
    if (m.job != (uint32_t)ctx->cfg.job) {
        oc_warn(OC_COMP_RUNTIME, "control message of job %u rejected", m.job);
        return;
    }
    if (m.type == Q_UP && m.from >= q->first_child &&
        m.from < q->first_child + q->nchildren) {
        slot = &q->child[m.from - q->first_child];
    } else if (m.type == Q_DOWN && m.from == q->parent) {
        slot = &q->down;
    } else {
        oc_warn(OC_COMP_RUNTIME, "unexpected control message type %u from %u",
                m.type, m.from);
        return;
    }
    slot->valid = 1;
    slot->epoch = m.epoch;
    slot->round = m.round;
    slot->sent = m.sent;
    slot->delivered = m.delivered;
    slot->verdict = m.verdict;
}

static oc_status_t send_down(oc_context_t *ctx, uint32_t verdict)
{
    oc__quiesce_t *q = &ctx->q;
    qmsg_t m = {Q_DOWN, ctx->rank, q->epoch, q->round, 0, 0, verdict,
                (uint32_t)ctx->cfg.job};
    for (uint32_t i = 0; i < q->nchildren; i++) {
        oc_status_t st = qsend(ctx, q->first_child + i, &m);
        if (st != OC_OK)
            return st;
    }
    return OC_OK;
}

static void end_round(oc_context_t *ctx, uint32_t verdict)
{
    oc__quiesce_t *q = &ctx->q;
    ctx->c.quiesce_rounds++;
    if (verdict == Q_DONE) {
        q->active = 0;
        q->epoch++;
        q->round = 0;
        q->have_prev = 0;
    } else {
        q->round++;
    }
    q->sent_up = 0;
}

/* Advance the state machine as far as the messages received allow (the
 * inline placement's quiesce_step). */
oc_status_t oc__inline_quiesce_step(oc_context_t *ctx)
{
    oc__quiesce_t *q = &ctx->q;
    oc_status_t st;

    /* A rank must not report while its own deliveries are pending or a
     * handler is stalled: it would only force another wave. */
    if (ctx->rx.count > 0)
        return OC_INPROGRESS;
    if (!q->sent_up) {
        uint64_t sent, delivered;
        for (uint32_t i = 0; i < q->nchildren; i++) {
            oc__qslot_t *c = &q->child[i];
            if (!c->valid || c->epoch != q->epoch || c->round != q->round)
                return OC_INPROGRESS;
        }
        /* Every buffer was flushed by the progress call before this. */
        sent = ctx->c.msgs_sent;
        delivered = ctx->c.msgs_delivered;
        for (uint32_t i = 0; i < q->nchildren; i++) {
            sent += q->child[i].sent;
            delivered += q->child[i].delivered;
            q->child[i].valid = 0;
        }
        if (ctx->rank == 0) {
            uint32_t verdict = Q_CONTINUE;
            if (sent == delivered && q->have_prev && q->prev_sent == sent &&
                q->prev_delivered == delivered)
                verdict = Q_DONE;
            q->have_prev = 1;
            q->prev_sent = sent;
            q->prev_delivered = delivered;
            st = send_down(ctx, verdict);
            if (st != OC_OK)
                return st;
            end_round(ctx, verdict);
            return q->active ? OC_INPROGRESS : OC_OK;
        }
        qmsg_t m = {Q_UP, ctx->rank, q->epoch, q->round, sent, delivered, 0,
                    (uint32_t)ctx->cfg.job};
        st = qsend(ctx, q->parent, &m);
        if (st != OC_OK)
            return st;
        q->sent_up = 1;
    }
    if (q->down.valid && q->down.epoch == q->epoch &&
        q->down.round == q->round) {
        uint32_t verdict = q->down.verdict;
        q->down.valid = 0;
        st = send_down(ctx, verdict);
        if (st != OC_OK)
            return st;
        end_round(ctx, verdict);
        return q->active ? OC_INPROGRESS : OC_OK;
    }
    return OC_INPROGRESS;
}

OC_API oc_status_t oc_quiesce_start(oc_context_t *ctx)
{
    if (ctx->in_handler || ctx->q.active)
        return OC_ERR_STATE;
    if (ctx->failed != OC_OK)
        return ctx->failed;
    ctx->q.active = 1;
    ctx->q.round = 0;
    ctx->q.sent_up = 0;
    ctx->q.have_prev = 0;
    return OC_OK;
}

OC_API oc_status_t oc_quiesce_test(oc_context_t *ctx)
{
    oc_status_t st;

    if (ctx->in_handler || !ctx->q.active)
        return OC_ERR_STATE;
    oc__progress(ctx); /* flushes every buffer while a quiesce runs */
    if (ctx->failed != OC_OK)
        return ctx->failed;
    st = ctx->pl->quiesce_step(ctx);
    if (st < 0) {
        oc_error(OC_COMP_RUNTIME, "quiesce failed: %s", oc_status_string(st));
        ctx->failed = st;
    }
    return st;
}

OC_API oc_status_t oc_quiesce(oc_context_t *ctx)
{
    oc_status_t st = oc_quiesce_start(ctx);
    if (st != OC_OK)
        return st;
    do {
        st = oc_quiesce_test(ctx);
    } while (st == OC_INPROGRESS);
    return st;
}
