/*
 * agent_shm.c — the agent placement's shared-memory channel (agent.c's
 * header says how it works): attaching the segment, writing bundles into
 * the ring toward the agent, the ranks' side of the doorbell.  One thread
 * per context.
 */
#include "agent_state.h"

#include "util/log.h"

#include <sched.h>
#include <string.h>

/* Bundles that waited for room go into the ring, in order. */
void oc__agent_shm_drain(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;
    uint8_t *slot;
    int moved = 0;

    while (a->wait_head != NULL && (slot = oc__spsc_reserve(&a->seg.up))) {
        oc_eng_buf_t *b = a->wait_head;
        a->wait_head = b->next;
        if (a->wait_head == NULL)
            a->wait_tail = &a->wait_head;
        a->waiting--;
        memcpy(slot, b->data, b->len);
        oc__spsc_publish(&a->seg.up, b->len);
        oc__eng_buf_put(ctx->eng, b);
        moved = 1;
    }
    if (a->wait_head == NULL && ctx->stream != NULL)
        ctx->stream->ring_skip = 0; /* in order again: write in place */
    if (moved)
        oc__agent_shm_kick(a);
}


int oc__agent_want_shm(const oc_context_t *ctx)
{
    return ctx->cfg.agent_channel == 0 &&
           strncmp(ctx->cfg.agent, "unix:", 5) == 0;
}

/* WELCOME brought the segment's memfd and the router's wake-up eventfd
 * (or nothing: an agent that offers no shared memory; UCX then). */
oc_status_t oc__agent_shm_attach(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;
    int mfd = oc__ctl_conn_take_fd(a->cc), efd = oc__ctl_conn_take_fd(a->cc);
    oc_status_t st;

    if (mfd < 0 || efd < 0) {
        if (mfd >= 0)
            close(mfd);
        return OC_OK;
    }
    st = oc__shmseg_map(mfd, &a->seg);
    close(mfd);
    if (st != OC_OK) {
        close(efd);
        oc_error(OC_COMP_RUNTIME, "rank %u: cannot map the agent's "
                 "shared-memory channel: %s", ctx->rank, oc_status_string(st));
        return OC_ERR_PEER_FAILED;
    }
    a->wake_fd = efd;
    a->ring_buf.ring = 1;
    a->shm = 1;
    /* cheap kicks (oc__agent_shm_kick) where the agent promises its barrier */
    a->light = a->mb_registered &&
               atomic_load_explicit(&a->seg.hdr->agent_barrier,
                                    memory_order_relaxed);
    return OC_OK;
}

void oc__agent_shm_release(oc_context_t *ctx, void *ring)
{
    struct oc__agent *a = ctx->agent;
    if (a == NULL || !a->shm)
        return; /* gone: the segment went with it */
    oc__spsc_release(ring);
}

void oc__agent_stream_setup(oc_context_t *ctx, oc_eng_out_t *o)
{
    struct oc__agent *a = ctx->agent;
    if (a == NULL || !a->shm)
        return;
    o->ring = &a->seg.up;
    o->ring_buf = &a->ring_buf;
}

uint32_t oc__agent_max_bundle(const oc_context_t *ctx)
{
    const struct oc__agent *a = ctx->agent;
    return a != NULL && a->shm ? a->seg.up.slot_size : 0;
}


/* Back-pressured with nothing to do: sleep on the doorbell until the
 * agent frees a slot or delivers (at most 1 ms: the control channel and
 * the watchdog still get their turn). */
void oc__agent_wait(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;
    oc_bell_t *bell;
    uint32_t seen;

    if (!a->shm) {
        sched_yield();
        return;
    }
    bell = &a->seg.hdr->rank_bell;
    a->waits++;
    oc__agent_shm_kick(a);
    seen = oc__bell_prepare(bell);
    int ready = oc__spsc_in_use(&a->seg.up) < a->seg.up.nslots ||
                oc__spsc_ready(&a->seg.cdown);
    for (uint32_t i = 0; i < a->seg.ndown && !ready; i++)
        ready = oc__spsc_ready(&a->seg.down[i]);
    if (ready) {
        oc__bell_cancel(bell);
        return;
    }
    a->slept += (uint64_t)oc__bell_wait(bell, seen, 1000);
}


oc_status_t oc__agent_shm_send_raw(oc_context_t *ctx, const void *buf,
                                   size_t len)
{
    struct oc__agent *a = ctx->agent;
    uint8_t *slot;

    if (a == NULL || !a->shm || len > a->seg.up.slot_size ||
        (ctx->stream != NULL && ctx->stream->buf != NULL &&
         ctx->stream->buf->ring))
        return OC_ERR_STATE;
    if ((slot = oc__spsc_reserve(&a->seg.up)) == NULL)
        return OC_ERR_NO_RESOURCE;
    memcpy(slot, buf, len);
    oc__spsc_publish(&a->seg.up, (uint32_t)len);
    oc__agent_shm_kick(a);
    return OC_OK;
}
