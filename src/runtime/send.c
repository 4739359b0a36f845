/*
 * send.c — the data path of liboffcore on the aggregation engine: oc_send
 * and its burst forms (per-destination outlets, or the one stream outlet
 * of the agent placement's stream mode), the engine's hand-off of finished
 * bundles, and delivery of received bundles (oc_poll).  One thread per
 * context (runtime.h).
 */
#include "runtime.h"

#include "util/log.h"
#include "util/clock.h"
#include "util/likely.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---- bundles out: the engine's hand-off ------------------------------- */

oc_status_t oc__handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                        uint32_t len, uint32_t count)
{
    oc_context_t *ctx = arg;
    oc_status_t st;

    (void)count;
    ctx->c.bundles_sent++;
    ctx->c.wire_bytes_sent += len;
    if (o != ctx->stream && (uint32_t)(o - ctx->dests) >> 1 == ctx->rank) {
        oc__rx_push(ctx, b->data, len, b); /* to self: no transport */
        return ctx->failed;
    }
    st = ctx->pl->submit(ctx, o, b, len);
    if (st != OC_OK && ctx->failed == OC_OK)
        ctx->failed = st;
    return st;
}

void oc__send_failed(void *arg, oc_eng_out_t *o, oc_status_t st)
{
    oc_context_t *ctx = arg;
    (void)o;
    if (ctx->failed == OC_OK)
        ctx->failed = st;
}

oc_status_t oc__flush_all(oc_context_t *ctx, oc_eng_flush_t why)
{
    return oc__eng_flush_dirty(ctx->eng, why, 0);
}

/* ---- receive queue ---------------------------------------------------- */

void oc__rx_push(oc_context_t *ctx, uint8_t *data, uint32_t len,
                 oc_eng_buf_t *self_buf)
{
    oc_eng_rx_t *e = oc__eng_ring_push(&ctx->rx);
    if (unlikely(e == NULL)) { /* engine.h: refuse, count, fail the flow */
        if (self_buf != NULL)
            oc__eng_buf_put(ctx->eng, self_buf);
        else
            oc__tr_release(ctx->worker, data);
        ctx->failed = OC_ERR_NO_MEMORY;
        return;
    }
    e->data = data;
    e->len = len;
    e->self_buf = self_buf;
}

/* Transport receive callback (inside oc__tr_progress): queue the bundle;
 * it is validated and delivered by the next deliver(). */
void oc__bundle_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc__rx_push(ctx, data, (uint32_t)(len > UINT32_MAX ? 0 : len), NULL);
}

void oc__rx_push_shm(oc_context_t *ctx, uint8_t *data, uint32_t len,
                     void *ring)
{
    oc_eng_rx_t *e = oc__eng_ring_push(&ctx->rx);
    if (unlikely(e == NULL)) { /* engine.h's policy; the slot stays */
        ctx->failed = OC_ERR_NO_MEMORY;
        return;
    }
    e->data = data;
    e->len = len;
    e->shm = ring;
}

static void rx_release(oc_context_t *ctx, oc_eng_rx_t *e)
{
    if (e->shm != NULL)
        oc__agent_shm_release(ctx, e->shm); /* in order, per ring */
    else if (e->self_buf != NULL)
        oc__eng_buf_put(ctx->eng, e->self_buf);
    else
        oc__tr_release(ctx->worker, e->data);
}

void oc__rx_drain_release(oc_context_t *ctx)
{
    while (ctx->rx.count > 0) {
        rx_release(ctx, oc__eng_ring_at(&ctx->rx, 0));
        oc__eng_ring_pop(&ctx->rx);
    }
}

/* ---- sending ---------------------------------------------------------- */

static oc_status_t send_slow(oc_context_t *ctx, uint32_t dest, const void *buf,
                             size_t len)
{
    oc_eng_out_t *o = ctx->stream != NULL
                          ? ctx->stream
                          : &ctx->dests[OC__SLOT(dest, ctx->in_handler)];
    oc_status_t st;

    if (unlikely(ctx->failed != OC_OK))
        return ctx->failed; /* the reason, not a generic state error */
    if (len > ctx->max_msg)
        return OC_ERR_MSG_TOO_LONG;
    if (buf == NULL && len > 0)
        return OC_ERR_INVALID_PARAM;
    st = oc__eng_put(ctx->eng, o, dest, ctx->rank, buf, len);
    if (st == OC_OK) {
        ctx->c.msgs_sent++;
        ctx->c.bytes_sent += len;
    } else if (st == OC_ERR_NO_RESOURCE) {
        ctx->c.send_no_resource++;
    }
    return st;
}

OC_API oc_status_t oc_send(oc_context_t *ctx, uint32_t dest, const void *buf,
                           size_t len)
{
    if (unlikely(dest >= ctx->size))
        return OC_ERR_RANK_RANGE;
    /* In stream mode the per-destination outlets never hold a buffer, so
     * the fast path always falls through to send_slow. */
    if (oc__eng_try_fast(&ctx->dests[OC__SLOT(dest, ctx->in_handler)], buf,
                        len)) {
        ctx->c.msgs_sent++;
        ctx->c.bytes_sent += len;
        return OC_OK;
    }
    /* stream mode: the per-destination outlets never hold a buffer, so
     * this is reached for every message; the column append */
    if (ctx->stream != NULL && buf != NULL &&
        oc__eng_col_room(ctx->stream, len) > 0) {
        oc_eng_out_t *o = ctx->stream;
        oc__store_le32(o->dcol + 4 * (size_t)o->count, dest);
        o->wp = oc__wire_put_item(o->wp, buf, len);
        o->count++;
        ctx->c.msgs_sent++;
        ctx->c.bytes_sent += len;
        return OC_OK;
    }
    return send_slow(ctx, dest, buf, len);
}

/* Stream mode: every message, whatever its destination, goes after the
 * previous one in the one outlet toward the agent, in column layout
 * (wire.h): the burst's destinations are one copy into the destination
 * column, its messages one copy into the items — no per-destination state
 * touched, no per-message header.  Per message only the range check is
 * left, and it has no branch. */
static size_t stream_burst(oc_context_t *ctx, const uint32_t *dests,
                           const uint8_t *p, size_t len, size_t n)
{
    oc_eng_out_t *o = ctx->stream;
    const uint32_t size = ctx->size;
    size_t i = 0, fast = 0;

    if (len > ctx->max_msg)
        return 0;
    while (i < n) {
        size_t k = oc__eng_col_room(o, len);
        if (k > 0) {
            uint32_t bad = 0;
            if (k > n - i)
                k = n - i;
            for (size_t j = 0; j < k; j++)
                bad |= dests[i + j] >= size;
            if (unlikely(bad)) { /* stop before the first one out of range */
                size_t j = 0;
                while (dests[i + j] < size)
                    j++;
                k = j;
            }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(o->dcol + 4 * (size_t)o->count, dests + i, 4 * k);
#else
            for (size_t j = 0; j < k; j++)
                oc__store_le32(o->dcol + 4 * (o->count + j), dests[i + j]);
#endif
            if (len == o->stride) {
                memcpy(o->wp, p, k * len);
                o->wp += k * len;
            } else {
                for (size_t j = 0; j < k; j++)
                    o->wp = oc__wire_put_item(o->wp, p + j * len, len);
            }
            o->count += (uint32_t)k;
            fast += k;
            i += k;
            p += k * len;
            if (i == n || unlikely(bad))
                break;
        }
        /* no column buffer for this length, or it is full: the engine
         * sends it and opens the next (or says why not) */
        if (dests[i] >= size || send_slow(ctx, dests[i], p, len) != OC_OK)
            break;
        i++;
        p += len;
    }
    ctx->c.msgs_sent += fast;
    ctx->c.bytes_sent += fast * len;
    return i;
}

OC_API size_t oc_send_burst(oc_context_t *ctx, const uint32_t *dests,
                            const void *msgs, size_t len, size_t n)
{
    const uint8_t *p = msgs;
    const uint32_t lane = (uint32_t)ctx->in_handler;
    const uint32_t size = ctx->size;
    size_t i, fast = 0;

    if (ctx->stream != NULL)
        return stream_burst(ctx, dests, p, len, n);
    if (len == 8) {
        /* The common case (histogram updates, index-gather requests),
         * with the length a constant the compiler can use.  The outlets'
         * base is read once: the copy writes through a byte pointer, which
         * may alias anything, so ctx->dests would be loaded again for
         * every message (ctx->dests never moves after oc_init). */
        oc_eng_out_t *const outs = ctx->dests;
        for (i = 0; i < n; i++, p += 8) {
            const uint32_t dest = dests[i];
            if (unlikely(dest >= size))
                break;
            oc_eng_out_t *d = &outs[OC__SLOT(dest, lane)];
            if (likely(d->item_len == 8 && d->wp + 8 <= d->end)) {
                memcpy(d->wp, p, 8);
                d->wp += 8;
                fast++;
                continue;
            }
            if (send_slow(ctx, dest, p, 8) != OC_OK)
                break;
        }
        ctx->c.msgs_sent += fast;
        ctx->c.bytes_sent += fast * 8;
        return i;
    }
    for (i = 0; i < n; i++, p += len) {
        const uint32_t dest = dests[i];
        if (unlikely(dest >= size))
            break;
        if (oc__eng_try_fast(&ctx->dests[OC__SLOT(dest, lane)], p, len)) {
            fast++;
            continue;
        }
        if (send_slow(ctx, dest, p, len) != OC_OK)
            break;
    }
    ctx->c.msgs_sent += fast;
    ctx->c.bytes_sent += fast * len;
    return i;
}

OC_API size_t oc_send_many(oc_context_t *ctx, uint32_t dest, const void *msgs,
                           size_t len, size_t n)
{
    const uint8_t *p = msgs;
    oc_eng_out_t *d;
    size_t i = 0;

    if (unlikely(dest >= ctx->size))
        return 0;
    d = &ctx->dests[OC__SLOT(dest, ctx->in_handler)];
    while (i < n) {
        size_t room = ctx->stream == NULL && len == d->item_len &&
                              len == d->stride
                          ? (size_t)(d->end - d->wp) / d->stride : 0;
        if (room > 0) {
            /* a run that fits the open buffer: one copy */
            size_t k = n - i < room ? n - i : room;
            memcpy(d->wp, p, k * len);
            d->wp += k * len;
            ctx->c.msgs_sent += k;
            ctx->c.bytes_sent += k * len;
            i += k;
            p += k * len;
            continue;
        }
        if (oc__eng_try_fast(d, p, len)) {
            ctx->c.msgs_sent++;
            ctx->c.bytes_sent += len;
        } else if (send_slow(ctx, dest, p, len) != OC_OK) {
            break;
        }
        i++;
        p += len;
    }
    return i;
}

OC_API oc_status_t oc_flush(oc_context_t *ctx)
{
    if (ctx->failed != OC_OK)
        return ctx->failed;
    if (ctx->in_handler)
        return OC_ERR_STATE;
    return oc__flush_all(ctx, OC_ENG_FLUSH_EXPLICIT);
}

/* ---- delivery --------------------------------------------------------- */

static void reject(oc_context_t *ctx, oc_eng_rx_t *e, oc_status_t why)
{
    ctx->c.bundles_rejected++;
    if (ctx->c.bundles_rejected <= 10)
        oc_warn(OC_COMP_RUNTIME, "rank %u: rejected a %u-byte bundle: %s",
                ctx->rank, e->len, oc_status_string(why));
}

/* Deliver the messages of the head bundle.  Returns the number delivered;
 * *stalled is set when the handler asked to be called again later. */
static uint32_t deliver_one(oc_context_t *ctx, oc_eng_rx_t *e, int *stalled)
{
    const oc_handler_t handler = ctx->handler;
    void *const harg = ctx->handler_arg;
    const oc_wire_hdr_t *h = &e->hdr;
    uint32_t i = e->done, n = 0;
    uint64_t bytes = 0;

    if (h->flags & OC_WIRE_F_SRCCOL) {
        /* an agent's source column: a call per stretch of one source */
        const uint32_t len = h->item_size;
        const size_t stride = oc__wire_pad8(len);
        const uint8_t *col = e->data + OC_WIRE_HDR_LEN;
        const uint8_t *p = col + oc__wire_col_dst_bytes(h->count) +
                           (size_t)i * stride;
        while (i < h->count) {
            const uint32_t src = oc__load_le32(col + 4 * (size_t)i);
            uint32_t k = i + 1;
            size_t took = 1;
            if (ctx->burst_handler != NULL) {
                while (k < h->count && oc__load_le32(col + 4 * (size_t)k) == src)
                    k++;
                took = ctx->burst_handler(harg, src, p, len, k - i);
                if (took > k - i)
                    took = k - i;
            } else if (handler(harg, src, p, len) == OC_ERR_NO_RESOURCE) {
                took = 0;
            }
            i += (uint32_t)took;
            p += took * stride;
            if (unlikely(i < k)) {
                *stalled = 1;
                break;
            }
        }
        n = i - e->done;
        bytes = (uint64_t)n * len;
    } else if (h->flags & OC_WIRE_F_FIXED) {
        const uint32_t len = h->item_size;
        const size_t stride = oc__wire_pad8(len);
        const uint32_t src = h->src;
        const uint8_t *p = e->data + OC_WIRE_HDR_LEN + (size_t)i * stride;
        if (ctx->burst_handler != NULL) {
            /* the whole run in one call: the handler's loop, not ours */
            size_t left = h->count - i;
            size_t took = ctx->burst_handler(harg, src, p, len, left);
            if (took > left)
                took = left;
            i += (uint32_t)took;
            if (took < left)
                *stalled = 1;
        } else {
            for (; i < h->count; i++, p += stride) {
                if (unlikely(handler(harg, src, p, len) ==
                             OC_ERR_NO_RESOURCE)) {
                    *stalled = 1;
                    break;
                }
            }
        }
        n = i - e->done;
        bytes = (uint64_t)n * len;
    } else {
        oc_wire_iter_t it;
        oc_wire_msg_t m;
        oc__wire_iter_init(&it, e->data, h);
        oc__wire_iter_skip(&it, i);
        while (oc__wire_iter_next(&it, &m)) {
            int refused = ctx->burst_handler != NULL
                ? ctx->burst_handler(harg, m.src, m.payload, m.len, 1) == 0
                : handler(harg, m.src, m.payload, m.len) == OC_ERR_NO_RESOURCE;
            if (unlikely(refused)) {
                *stalled = 1;
                break;
            }
            i++;
            bytes += m.len;
        }
        n = i - e->done;
    }
    e->done = i;
    ctx->c.msgs_delivered += n;
    ctx->c.bytes_delivered += bytes;
    return n;
}

static int deliver(oc_context_t *ctx)
{
    const oc_wire_check_t chk = {(uint32_t)ctx->cfg.job, ctx->size, ctx->rank,
                                 OC_WIRE_RANK_NONE, 0};
    uint64_t budget = ctx->cfg.poll_budget ? ctx->cfg.poll_budget : UINT64_MAX;
    int total = 0;

    ctx->in_handler = 1;
    ctx->eng->in_handler = 1;
    while (ctx->rx.count > 0 && budget-- > 0) {
        /* Copy the entry: a handler's send to self may grow the ring. */
        oc_eng_rx_t e = *oc__eng_ring_at(&ctx->rx, 0);
        int stalled = 0;

        if (!e.validated) {
            oc_status_t st = oc__wire_validate(e.data, e.len, &chk, &e.hdr);
            ctx->c.bundles_received++;
            if (st != OC_OK) {
                reject(ctx, &e, st);
                goto pop;
            }
            e.validated = 1;
        }
        total += (int)deliver_one(ctx, &e, &stalled);
        if (stalled) {
            ctx->c.handler_retries++;
            *oc__eng_ring_at(&ctx->rx, 0) = e; /* head is still this entry */
            break;
        }
pop:
        oc__eng_ring_pop(&ctx->rx);
        rx_release(ctx, &e);
    }
    ctx->in_handler = 0;
    ctx->eng->in_handler = 0;
    return total;
}

/* One round of progress: transport, placement, delivery, flush policy. */
int oc__progress(oc_context_t *ctx)
{
    uint64_t activity;
    unsigned events;
    int n;

    events = oc__tr_progress(ctx->worker);
    if (ctx->pl->progress != NULL)
        ctx->pl->progress(ctx);
    for (uint32_t i = 0; i < ctx->nhooks; i++) /* runtime/ext.h */
        ctx->hooks[i].fn(ctx->hooks[i].arg);
    n = deliver(ctx);
    /* Back-pressured and nothing moved: what we wait for is another
     * process's work (the receiver's, the agent's).  Where it shares our
     * core, spinning only burns the time slice it needs; give the core up
     * after a few empty turns (on a core of its own the yield returns at
     * once). */
    if (events == 0 && n == 0 &&
        ctx->c.send_no_resource != ctx->last_no_resource) {
        if (++ctx->idle_polls >= OC__YIELD_AFTER) {
            ctx->idle_polls = 0;
            if (ctx->pl->wait != NULL)
                ctx->pl->wait(ctx);
            else
                sched_yield();
        }
    } else {
        ctx->idle_polls = 0;
    }
    ctx->last_no_resource = ctx->c.send_no_resource;
    activity = ctx->c.msgs_sent + ctx->c.send_no_resource;
    if (ctx->q.active)
        oc__flush_all(ctx, OC_ENG_FLUSH_EXPLICIT);
    else
        oc__eng_policy(ctx->eng, activity == ctx->last_activity);
    ctx->last_activity = activity;
    return n;
}

OC_API int oc_poll(oc_context_t *ctx)
{
    if (ctx->in_handler)
        return OC_ERR_STATE;
    if (ctx->failed != OC_OK)
        return ctx->failed;
    return oc__progress(ctx);
}
