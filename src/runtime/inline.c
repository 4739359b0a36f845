/*
 * inline.c — the inline placement: no agent; the rank's own bundles go
 * straight to their destination rank over UCX, and termination waves run
 * among the ranks (quiesce.c).  The paper's "None" baseline, and what
 * conveyors or YGM do.  One thread per context (runtime.h).
 */
#include "runtime.h"

#include "util/log.h"

#include <stdlib.h>
#include <string.h>

static oc_status_t inline_submit(oc_context_t *ctx, oc_eng_out_t *o,
                                 oc_eng_buf_t *b, uint32_t len)
{
    const uint32_t dest = (uint32_t)(o - ctx->dests) >> 1;
    return oc__eng_send(ctx->eng, o, ctx->eps[dest], 0, b, len);
}

static int inline_pending(const oc_context_t *ctx)
{
    (void)ctx;
    return 0;
}

static oc_status_t inline_finalize(oc_context_t *ctx)
{
    oc_status_t st;
    uint8_t one = 1, *all;

    oc__flush_all(ctx, OC_ENG_FLUSH_EXPLICIT);
    while (ctx->eng->inflight > 0 && ctx->failed == OC_OK)
        oc__tr_progress(ctx->worker);
    /* Everyone's sends are complete before anyone closes endpoints. */
    all = malloc(ctx->size);
    if (all == NULL)
        return OC_ERR_NO_MEMORY;
    st = ctx->allgather(ctx->allgather_arg, &one, all, 1);
    free(all);
    return st;
}

void oc__inline_fini(oc_context_t *ctx)
{
    ctx->closing = 1; /* peers leaving now are no failure */
    if (ctx->eps != NULL && ctx->worker != NULL)
        for (uint32_t i = 0; i < ctx->size; i++) {
            oc__tr_ep_destroy(ctx->worker, ctx->eps[i]);
            ctx->eps[i] = NULL;
        }
}

const oc__placement_t oc__placement_inline = {
    .name = "inline",
    .submit = inline_submit,
    .progress = NULL,
    .pending = inline_pending,
    .quiesce_step = oc__inline_quiesce_step,
    .finalize = inline_finalize,
    .fini = oc__inline_fini,
};

/* UCX found a peer dead (transport.c: keepalive, or its sockets closed):
 * the context fails, so oc_send, oc_poll, oc_quiesce and every collective
 * in flight or to come report it (the collectives as
 * OC_ERR_COLL_PEER_FAILED).  Nothing that waits on that rank can end. */
static void peer_failed(void *arg, oc_tr_ep_t *ep, const char *why)
{
    oc_context_t *ctx = arg;
    uint32_t r = 0;

    while (r < ctx->size && ctx->eps[r] != ep)
        r++;
    if (ctx->closing) {
        oc_debug(OC_COMP_RUNTIME, "rank %u: rank %u left (%s)", ctx->rank, r,
                 why);
        return;
    }
    if (ctx->failed == OC_OK) {
        oc_error(OC_COMP_RUNTIME, "rank %u: lost rank %u (%s): the context "
                 "fails with OC_ERR_PEER_FAILED", ctx->rank, r, why);
        ctx->failed = OC_ERR_PEER_FAILED;
    } else {
        oc_debug(OC_COMP_RUNTIME, "rank %u: lost rank %u too (%s)", ctx->rank,
                 r, why);
    }
}

/* Exchange {version, job, address} with every rank; create endpoints. */
oc_status_t oc__inline_wireup(oc_context_t *ctx)
{
    struct {
        uint32_t version, job, addr_len, pad;
    } mine, *all = NULL;
    const void *addr;
    size_t addr_len, max_len = 0;
    uint8_t *abuf = NULL, *aall = NULL;
    oc_status_t st;

    oc__tr_worker_address(ctx->worker, &addr, &addr_len);
    mine.version = OC_WIRE_VERSION;
    mine.job = (uint32_t)ctx->cfg.job;
    mine.addr_len = (uint32_t)addr_len;
    mine.pad = 0;
    all = calloc(ctx->size, sizeof(*all));
    if (all == NULL)
        return OC_ERR_NO_MEMORY;
    st = ctx->allgather(ctx->allgather_arg, &mine, all, sizeof(mine));
    if (st != OC_OK)
        goto out;
    for (uint32_t i = 0; i < ctx->size; i++) {
        if (all[i].version != OC_WIRE_VERSION || all[i].job != mine.job) {
            oc_error(OC_COMP_RUNTIME,
                     "rank %u runs wire version %u job %u; rank %u runs "
                     "version %u job %u: all ranks must agree",
                     i, all[i].version, all[i].job, ctx->rank, mine.version,
                     mine.job);
            st = OC_ERR_BOOTSTRAP;
            goto out;
        }
        if (all[i].addr_len > max_len)
            max_len = all[i].addr_len;
    }
    abuf = calloc(1, max_len);
    aall = calloc(ctx->size, max_len);
    if (abuf == NULL || aall == NULL) {
        st = OC_ERR_NO_MEMORY;
        goto out;
    }
    memcpy(abuf, addr, addr_len);
    oc__tr_worker_on_failure(ctx->worker, peer_failed, ctx);
    st = ctx->allgather(ctx->allgather_arg, abuf, aall, max_len);
    if (st != OC_OK)
        goto out;
    for (uint32_t i = 0; i < ctx->size; i++) {
        if (i == ctx->rank)
            continue;
        /* peer-failure handling on: a rank that dies fails the others
         * (peer_failed) instead of leaving them waiting for ever */
        st = oc__tr_ep_create(ctx->worker, aall + (size_t)i * max_len, 1,
                             &ctx->eps[i]);
        if (st != OC_OK)
            goto out;
    }
    if (ctx->size > 1 && oc__log_enabled(OC_COMP_TRANSPORT, OC_LOG_DEBUG)) {
        char info[2048];
        uint32_t peer = (ctx->rank + 1) % ctx->size;
        oc__tr_ep_describe(ctx->eps[peer], info, sizeof(info));
        /* one log line a line of UCX's text (log lines are escaped whole:
         * an embedded newline would print as \x0a) */
        char *save = NULL;
        for (char *l = strtok_r(info, "\n", &save); l != NULL;
             l = strtok_r(NULL, "\n", &save))
            oc_debug(OC_COMP_TRANSPORT, "rank %u -> %u: %s", ctx->rank, peer,
                     l);
    }
out:
    if (st != OC_OK && st != OC_ERR_NO_MEMORY)
        oc_error(OC_COMP_RUNTIME, "rank %u: wire-up failed: %s", ctx->rank,
                 oc_status_string(st));
    free(abuf);
    free(aall);
    free(all);
    return st;
}

