/*
 * agent.c — the agent placement of liboffcore: bundles go to the node's
 * offcored instead of straight to their destination.
 *
 * The rank keeps its per-destination aggregation (fixed-size bundles stay
 * cheap to build) and hands every finished bundle to its agent under a
 * credit window: at most OC_AGENT_CREDITS bundles not yet routed by the
 * agent.  Without credit a bundle waits in a queue, holding its pool
 * buffer, so a slow agent or receiver turns into OC_ERR_NO_RESOURCE at
 * oc_send — back-pressure, never loss, never unbounded agent memory.
 */
#include "runtime.h"

#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct oc__agent {
    oc_tr_ep_t *ep;        /* to the agent's router */
    uint64_t    token;     /* names this rank to the agent */
    uint32_t    credits;   /* bundles we may still send */
    oc__buf_t  *wait_head; /* bundles waiting for credit, in order */
    oc__buf_t **wait_tail;
    uint32_t    waiting;
};

oc_status_t oc__agent_submit(oc_context_t *ctx, oc__buf_t *b, uint32_t len)
{
    struct oc__agent *a = ctx->agent;
    oc_status_t st;

    b->len = len;
    if (a->credits == 0 || a->wait_head != NULL) {
        b->next = NULL;
        *a->wait_tail = b;
        a->wait_tail = &b->next;
        a->waiting++;
        return OC_OK;
    }
    a->credits--;
    b->op.token = a->token;
    st = oc_tr_send(a->ep, OC_AM_BUNDLE, b->data, len, &b->op);
    if (st == OC_OK) {
        oc__buf_put(ctx, b);
    } else if (st == OC_INPROGRESS) {
        ctx->inflight++;
    } else {
        oc__buf_put(ctx, b);
        ctx->failed = st;
    }
    return st == OC_INPROGRESS ? OC_OK : st;
}

static void credit_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc_am_credit_t m;
    if (len != sizeof(m) || ctx->agent == NULL)
        return;
    memcpy(&m, data, sizeof(m));
    if (m.magic != OC_AM_CREDIT_MAGIC)
        return;
    ctx->agent->credits += m.credits;
}

void oc__agent_progress(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;

    while (a->wait_head != NULL && a->credits > 0) {
        oc__buf_t *b = a->wait_head;
        a->wait_head = b->next;
        if (a->wait_head == NULL)
            a->wait_tail = &a->wait_head;
        a->waiting--;
        if (oc__agent_submit(ctx, b, b->len) != OC_OK)
            break;
    }
}

oc_status_t oc__agent_init(oc_context_t *ctx, int required)
{
    (void)credit_recv;
    if (required)
        oc_error(OC_COMP_RUNTIME, "OC_PLACEMENT=agent: this build has no "
                                  "agent placement yet; use inline or auto");
    return OC_ERR_UNSUPPORTED;
}

void oc__agent_fini(oc_context_t *ctx)
{
    free(ctx->agent);
    ctx->agent = NULL;
}

oc_status_t oc__agent_quiesce_step(oc_context_t *ctx)
{
    return OC_ERR_UNSUPPORTED;
}

int oc__agent_pending(const oc_context_t *ctx)
{
    return ctx->agent != NULL && ctx->agent->wait_head != NULL;
}
