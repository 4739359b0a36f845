/*
 * stall.c — the agent watchdog of a rank.  A rank in the agent placement
 * that has bundles in flight or waiting for credit depends on its agent:
 * if the agent is stopped (SIGSTOP, a debugger) or starved of CPU, the
 * rank's oc_poll / oc_send loop spins without a word.  After
 * OC_STALL_WARN_S seconds of no movement in the counters that the
 * agent moves (bundles received, sends completed, bundles handed on,
 * quiesce rounds), this says so once per stall, through a rate-limited
 * log kind (a node of many ranks prints a few lines, not one per rank per
 * second), and once more when the agent moves again.
 *
 * Threading: as the context (one thread at a time).  Never changes what
 * the rank does: it only reports.
 */
#include "runtime.h"

#include "util/clock.h"
#include "util/log.h"

static oc_log_limit_t lim_stall = OC_LOG_LIMIT_INIT("agent stall warnings");

static uint64_t fingerprint(const oc_context_t *ctx)
{
    /* any change is progress; a plain sum would let two moves cancel */
    uint64_t h = ctx->c.bundles_received;
    h = h * 0x9e3779b97f4a7c15ull + ctx->c.bundles_sent;
    h = h * 0x9e3779b97f4a7c15ull + ctx->eng->inflight;
    h = h * 0x9e3779b97f4a7c15ull + ctx->c.quiesce_rounds;
    return h * 0x9e3779b97f4a7c15ull + ctx->c.msgs_delivered;
}

void oc__agent_watch(oc_context_t *ctx)
{
    oc__stall_t *w = &ctx->stall;
    uint64_t fp, now, limit_us = ctx->cfg.stall_warn_s * 1000000u;
    int waiting;

    if (limit_us == 0 || (++w->polls & 255) != 0)
        return;
    waiting = ctx->eng->inflight > 0 || ctx->pl->pending(ctx);
    fp = fingerprint(ctx);
    now = oc__now_us();
    if (!waiting || fp != w->fingerprint) {
        if (w->warned)
            oc_warn_limited(&lim_stall, OC_COMP_RUNTIME,
                            "rank %u: the agent at %s moves again after "
                            "%.1f s", ctx->rank, ctx->cfg.agent,
                            (double)(now - w->since_us) / 1e6);
        w->fingerprint = fp;
        w->since_us = waiting ? now : 0;
        w->warned = 0;
        return;
    }
    if (w->since_us == 0) {
        w->since_us = now;
        return;
    }
    if (!w->warned && now - w->since_us >= limit_us) {
        w->warned = 1;
        oc_warn_limited(&lim_stall, OC_COMP_RUNTIME,
                        "rank %u: no progress from the agent at %s for "
                        "%.0f s (%llu bundles in flight%s): is offcored "
                        "stopped (SIGSTOP) or starved of CPU, or has a "
                        "receiver of this job stopped polling? "
                        "(OC_STALL_WARN_S=0 silences this)",
                        ctx->rank, ctx->cfg.agent,
                        (double)(now - w->since_us) / 1e6,
                        (unsigned long long)ctx->eng->inflight,
                        ctx->pl->pending(ctx) ? ", more waiting for credit"
                                               : "");
    }
}
