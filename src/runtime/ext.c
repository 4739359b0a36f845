/*
 * ext.c — the runtime's side of runtime/ext.h: the registry of extensions
 * (the layers compiled into liboffcore above the runtime: src/coll), their
 * lifecycle in each context, and the context's facts they may read.
 */
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>

/* Written by constructors only, before any context exists. */
static const oc_ext_t *exts[OC_EXT_MAX];
static uint32_t nexts;

void oc__ext_register(const oc_ext_t *ext)
{
    if (nexts == OC_EXT_MAX) {
        fprintf(stderr, "liboffcore: more than %d extensions registered "
                "(%s): raise OC_EXT_MAX\n", OC_EXT_MAX, ext->name);
        abort();
    }
    exts[nexts++] = ext;
}

void *oc__ext_state(const oc_context_t *ctx, const oc_ext_t *ext)
{
    for (uint32_t i = 0; i < ctx->ext_inited; i++)
        if (exts[i] == ext)
            return ctx->ext_state[i];
    return NULL;
}

oc_status_t oc__ext_init(oc_context_t *ctx)
{
    oc_status_t st;

    for (uint32_t i = 0; i < nexts; i++) {
        if (exts[i]->init != NULL &&
            (st = exts[i]->init(ctx, &ctx->ext_state[i])) != OC_OK)
            return st;
        ctx->ext_inited = i + 1;
    }
    return OC_OK;
}

oc_status_t oc__ext_wired(oc_context_t *ctx)
{
    oc_status_t st;

    for (uint32_t i = 0; i < ctx->ext_inited; i++)
        if (exts[i]->wired != NULL &&
            (st = exts[i]->wired(ctx, ctx->ext_state[i])) != OC_OK)
            return st;
    return OC_OK;
}

int oc__ext_agent_access(const oc_context_t *ctx)
{
    for (uint32_t i = 0; i < ctx->ext_inited; i++)
        if (exts[i]->agent_access != NULL &&
            exts[i]->agent_access(ctx, ctx->ext_state[i]))
            return 1;
    return 0;
}

void oc__ext_fini(oc_context_t *ctx)
{
    ctx->nhooks = 0;
    for (uint32_t i = ctx->ext_inited; i-- > 0;) {
        if (exts[i]->fini != NULL)
            exts[i]->fini(ctx, ctx->ext_state[i]);
        ctx->ext_state[i] = NULL;
    }
    ctx->ext_inited = 0;
}

oc_status_t oc__ext_progress_hook(oc_context_t *ctx, void (*fn)(void *arg),
                                  void *arg)
{
    if (ctx->nhooks == OC_EXT_MAX)
        return OC_ERR_NO_RESOURCE;
    ctx->hooks[ctx->nhooks].fn = fn;
    ctx->hooks[ctx->nhooks].arg = arg;
    ctx->nhooks++;
    return OC_OK;
}

int oc__ext_progress(oc_context_t *ctx) { return oc__progress(ctx); }

uint32_t oc__ext_rank(const oc_context_t *ctx) { return ctx->rank; }

uint32_t oc__ext_size(const oc_context_t *ctx) { return ctx->size; }

uint64_t oc__ext_job(const oc_context_t *ctx) { return ctx->cfg.job; }

oc_status_t oc__ext_failed(const oc_context_t *ctx) { return ctx->failed; }

int oc__ext_in_handler(const oc_context_t *ctx) { return ctx->in_handler; }

oc_tr_worker_t *oc__ext_worker(const oc_context_t *ctx) { return ctx->worker; }

oc_tr_ep_t *oc__ext_peer_ep(const oc_context_t *ctx, uint32_t peer)
{
    return ctx->eps != NULL && peer < ctx->size ? ctx->eps[peer] : NULL;
}

int oc__ext_has_peers(const oc_context_t *ctx) { return ctx->eps != NULL; }

oc_status_t oc__ext_allgather(oc_context_t *ctx, const void *sendbuf,
                              void *recvbuf, size_t len)
{
    if (ctx->allgather == NULL)
        return OC_ERR_UNSUPPORTED;
    return ctx->allgather(ctx->allgather_arg, sendbuf, recvbuf, len);
}

int oc__ext_has_allgather(const oc_context_t *ctx)
{
    return ctx->allgather != NULL;
}

int oc__ext_agent(const oc_context_t *ctx) { return ctx->agent != NULL; }

oc_status_t oc__ext_agent_coll_send(oc_context_t *ctx, const void *msg,
                                    size_t len)
{
    if (ctx->pl == NULL || ctx->pl->coll_send == NULL)
        return OC_ERR_STATE;
    return ctx->pl->coll_send(ctx, msg, len);
}

oc_tr_ep_t *oc__ext_agent_coll_ep(oc_context_t *ctx)
{
    if (ctx->pl == NULL || ctx->pl->coll_ep == NULL)
        return NULL;
    return ctx->pl->coll_ep(ctx);
}

int oc__ext_agent_coll_serves(const oc_context_t *ctx, unsigned kind)
{
    if (ctx->pl == NULL || ctx->pl->coll_serves == NULL)
        return 0;
    return ctx->pl->coll_serves(ctx, kind);
}

uint32_t oc__ext_agent_pid(const oc_context_t *ctx)
{
    if (ctx->pl == NULL || ctx->pl->peer_pid == NULL)
        return 0;
    return ctx->pl->peer_pid(ctx);
}

int oc__ext_agent_gone(oc_context_t *ctx)
{
    if (ctx->pl == NULL || ctx->pl->peer_gone == NULL)
        return 1;
    return ctx->pl->peer_gone(ctx);
}
