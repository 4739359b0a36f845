/*
 * send.c — the data path of the inline placement: aggregation (oc_send),
 * flushing, and delivery of received bundles (oc_poll).
 */
#include "runtime.h"

#include "util/log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

uint64_t oc__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- buffers ---------------------------------------------------------- */

static oc__buf_t *buf_get(oc_context_t *ctx)
{
    oc__buf_t *b = ctx->free_bufs;
    if (likely(b != NULL)) {
        ctx->free_bufs = b->next;
        return b;
    }
    if (!ctx->in_handler)
        return NULL; /* back-pressure on the application */
    /* A handler's reply must not wait for buffers that only the
     * application's own progress would free: take one from the reserve. */
    b = ctx->reserve_bufs;
    if (b != NULL) {
        ctx->reserve_bufs = b->next;
    } else {
        b = calloc(1, sizeof(*b));
        if (b == NULL)
            return NULL;
        b->data = aligned_alloc(64, ctx->cfg.bundle_size);
        if (b->data == NULL) {
            free(b);
            return NULL;
        }
        b->ctx = ctx;
        b->op.cb = oc__send_done;
        b->reserve = 1;
    }
    ctx->c.reserve_buffers++;
    return b;
}

void oc__buf_put(oc_context_t *ctx, oc__buf_t *b)
{
    if (b->reserve) {
        b->next = ctx->reserve_bufs;
        ctx->reserve_bufs = b;
    } else {
        b->next = ctx->free_bufs;
        ctx->free_bufs = b;
    }
}

void oc__send_done(oc_tr_op_t *op, oc_status_t st)
{
    oc__buf_t *b = (oc__buf_t *)op;
    oc_context_t *ctx = b->ctx;
    ctx->inflight--;
    if (st != OC_OK && ctx->failed == OC_OK)
        ctx->failed = st;
    oc__buf_put(ctx, b);
}

/* ---- receive queue ---------------------------------------------------- */

void oc__rx_push(oc_context_t *ctx, uint8_t *data, uint32_t len,
                 oc__buf_t *self_buf)
{
    oc__rx_t *e;
    if (unlikely(ctx->rx_count == ctx->rx_cap)) {
        /* Grow (rare: only when this rank falls behind its senders).
         * Re-lay the ring from index 0 so indices stay simple. */
        uint32_t ncap = ctx->rx_cap * 2;
        oc__rx_t *n = malloc(sizeof(*n) * ncap);
        if (n == NULL) {
            oc_error(OC_COMP_RUNTIME, "out of memory growing the receive "
                                      "queue to %u bundles", ncap);
            abort(); /* cannot drop a bundle silently, cannot refuse it */
        }
        for (uint32_t i = 0; i < ctx->rx_count; i++)
            n[i] = ctx->rxq[(ctx->rx_head + i) & (ctx->rx_cap - 1)];
        free(ctx->rxq);
        ctx->rxq = n;
        ctx->rx_head = 0;
        ctx->rx_cap = ncap;
    }
    e = &ctx->rxq[(ctx->rx_head + ctx->rx_count) & (ctx->rx_cap - 1)];
    e->data = data;
    e->len = len;
    e->done = 0;
    e->self_buf = self_buf;
    e->validated = 0;
    ctx->rx_count++;
}

/* Transport receive callback (inside oc_tr_progress): queue the bundle;
 * it is validated and delivered by the next deliver(). */
void oc__bundle_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc__rx_push(ctx, data, (uint32_t)(len > UINT32_MAX ? 0 : len), NULL);
}

static void rx_release(oc_context_t *ctx, oc__rx_t *e)
{
    if (e->self_buf != NULL)
        oc__buf_put(ctx, e->self_buf);
    else
        oc_tr_release(ctx->worker, e->data);
}

void oc__rx_drain_release(oc_context_t *ctx)
{
    while (ctx->rx_count > 0) {
        rx_release(ctx, &ctx->rxq[ctx->rx_head]);
        ctx->rx_head = (ctx->rx_head + 1) & (ctx->rx_cap - 1);
        ctx->rx_count--;
    }
}

/* Messages in @p d's open buffer.  The fast paths do not count fixed-size
 * items one by one: their number follows from the write pointer. */
static inline uint32_t dest_count(const oc__dest_t *d)
{
    if (d->item_len != OC_NO_ITEM)
        return (uint32_t)((size_t)(d->wp - (d->buf->data + OC_WIRE_HDR_LEN)) /
                          d->stride);
    return d->count;
}

/* ---- flushing --------------------------------------------------------- */

oc_status_t oc__flush_dest(oc_context_t *ctx, uint32_t slot, int reason)
{
    oc__dest_t *d = &ctx->dests[slot];
    const uint32_t dest = slot >> 1;
    oc__buf_t *b = d->buf;
    oc_wire_hdr_t h;
    oc_status_t st;
    uint32_t len;

    if (b == NULL)
        return OC_OK;
    len = (uint32_t)(d->wp - b->data);
    memset(&h, 0, sizeof(h));
    if (d->item_len != OC_NO_ITEM) {
        h.flags = OC_WIRE_F_FIXED;
        h.item_size = (uint16_t)d->item_len;
        h.src = ctx->rank;
        h.dst = dest;
    } else {
        h.src = OC_WIRE_RANK_NONE;
        h.dst = OC_WIRE_RANK_NONE;
    }
    h.count = dest_count(d);
    h.length = len;
    h.src_hop = ctx->rank;
    h.job = (uint32_t)ctx->cfg.job;
    h.seq = d->seq++;
    oc_wire_hdr_write(b->data, &h);

    d->buf = NULL;
    d->wp = d->end = NULL;
    d->item_len = OC_NO_ITEM;
    d->count = 0;

    ctx->c.bundles_sent++;
    ctx->c.wire_bytes_sent += len;
    switch (reason) {
    case OC__FLUSH_FULL: ctx->c.flush_full++; break;
    case OC__FLUSH_TIMEOUT: ctx->c.flush_timeout++; break;
    case OC__FLUSH_IDLE: ctx->c.flush_idle++; break;
    default: ctx->c.flush_explicit++; break;
    }

    if (dest == ctx->rank) {
        oc__rx_push(ctx, b->data, len, b);
        return OC_OK;
    }
    if (ctx->agent != NULL)
        return oc__agent_submit(ctx, b, len);
    st = oc_tr_send(ctx->eps[dest], OC_AM_BUNDLE, b->data, len, &b->op);
    if (st == OC_OK) {
        oc__buf_put(ctx, b);
    } else if (st == OC_INPROGRESS) {
        ctx->inflight++;
    } else {
        oc__buf_put(ctx, b);
        ctx->failed = st;
        return st;
    }
    return OC_OK;
}

/* Flush the dirty destinations that @p pred selects, compacting the list. */
static oc_status_t flush_dirty(oc_context_t *ctx, int reason, uint64_t now)
{
    uint32_t keep = 0;
    oc_status_t ret = OC_OK;

    for (uint32_t i = 0; i < ctx->ndirty; i++) {
        uint32_t slot = ctx->dirty[i];
        oc__dest_t *d = &ctx->dests[slot];
        if (d->buf != NULL && reason == OC__FLUSH_TIMEOUT &&
            now - d->t_first < ctx->cfg.flush_timeout_us) {
            ctx->dirty[keep++] = slot;
            continue;
        }
        if (d->buf != NULL) {
            oc_status_t st = oc__flush_dest(ctx, slot, reason);
            if (st != OC_OK)
                ret = st;
        }
        d->listed = 0;
    }
    ctx->ndirty = keep;
    return ret;
}

oc_status_t oc__flush_all(oc_context_t *ctx, int reason)
{
    return flush_dirty(ctx, reason, 0);
}

/* ---- sending ---------------------------------------------------------- */

static oc_status_t dest_open(oc_context_t *ctx, oc__dest_t *d, uint32_t slot,
                             size_t len)
{
    oc__buf_t *b = buf_get(ctx);
    if (b == NULL)
        return OC_ERR_NO_RESOURCE;
    d->buf = b;
    d->wp = b->data + OC_WIRE_HDR_LEN;
    d->end = b->data + ctx->cfg.bundle_size;
    d->count = 0;
    /* Fixed-size mode (no per-message header) until a message of another
     * length arrives; zero-length messages need headers to be counted. */
    d->item_len = len > 0 ? (uint32_t)len : OC_NO_ITEM;
    d->stride = (uint32_t)oc_wire_pad8(len);
    d->t_first = oc__now_us();
    if (!d->listed) {
        d->listed = 1;
        ctx->dirty[ctx->ndirty++] = slot;
    }
    return OC_OK;
}

/* Rewrite a fixed-mode buffer in place as mixed mode (each item gains its
 * 8-byte header).  Items move backwards, last first, so nothing is
 * overwritten before it is moved.  Caller checked the space. */
static void dest_to_mixed(oc_context_t *ctx, oc__dest_t *d, uint32_t dest)
{
    uint8_t *base = d->buf->data + OC_WIRE_HDR_LEN;
    uint32_t stride = d->stride;
    d->count = dest_count(d);
    for (uint32_t i = d->count; i-- > 0;) {
        uint8_t *src = base + (size_t)i * stride;
        uint8_t *dst = base + (size_t)i * (stride + OC_WIRE_MSG_HDR_LEN);
        memmove(dst + OC_WIRE_MSG_HDR_LEN, src, stride);
        oc_wire_st64(dst, oc_wire_msg_hdr(dest, ctx->rank, d->item_len));
    }
    d->wp = base + (size_t)d->count * (stride + OC_WIRE_MSG_HDR_LEN);
    d->item_len = OC_NO_ITEM;
}

static oc_status_t send_slow(oc_context_t *ctx, uint32_t dest, const void *buf,
                             size_t len)
{
    const uint32_t slot = OC__SLOT(dest, ctx->in_handler);
    oc__dest_t *d = &ctx->dests[slot];
    size_t need;
    oc_status_t st;

    if (unlikely(ctx->failed != OC_OK))
        return ctx->failed; /* the reason, not a generic state error */
    if (len > ctx->max_msg)
        return OC_ERR_MSG_TOO_LONG;
    if (buf == NULL && len > 0)
        return OC_ERR_INVALID_PARAM;

    for (int attempt = 0; attempt < 2; attempt++) {
        if (d->buf == NULL) {
            st = dest_open(ctx, d, slot, len);
            if (st != OC_OK) {
                ctx->c.send_no_resource++;
                return st;
            }
        }
        if (d->item_len == len) { /* fixed mode, same size */
            if (d->wp + d->stride <= d->end) {
                d->wp = oc_wire_put_item(d->wp, buf, len);
                goto accepted;
            }
        } else {
            need = OC_WIRE_MSG_HDR_LEN + oc_wire_pad8(len);
            if (d->item_len != OC_NO_ITEM) {
                size_t mixed = (size_t)dest_count(d) *
                               (d->stride + OC_WIRE_MSG_HDR_LEN);
                if (OC_WIRE_HDR_LEN + mixed + need <=
                    (size_t)(d->end - d->buf->data))
                    dest_to_mixed(ctx, d, dest);
            }
            if (d->item_len == OC_NO_ITEM && d->wp + need <= d->end) {
                d->wp = oc_wire_put_msg(d->wp, dest, ctx->rank, buf, len);
                goto accepted;
            }
        }
        /* No room in this buffer: it is full for this message. */
        st = oc__flush_dest(ctx, slot, OC__FLUSH_FULL);
        if (st != OC_OK)
            return st;
    }
    return OC_ERR_NO_RESOURCE; /* not reached: a fresh buffer fits max_msg */

accepted:
    d->count++; /* meaningful in mixed mode only (dest_count) */
    ctx->c.msgs_sent++;
    ctx->c.bytes_sent += len;
    return OC_OK;
}

/* The fast path shared by oc_send and the burst calls: a same-size message
 * into a lane whose buffer has room.  Returns 0 when the slow path must
 * decide.  Counters are the caller's. */
static inline int try_fast(oc__dest_t *d, const void *buf, size_t len)
{
    if (likely(len == d->item_len && d->wp + d->stride <= d->end)) {
        if (len == 8)
            memcpy(d->wp, buf, 8);
        else
            oc_wire_put_item(d->wp, buf, len);
        d->wp += d->stride;
        return 1;
    }
    return 0;
}

OC_API oc_status_t oc_send(oc_context_t *ctx, uint32_t dest, const void *buf,
                           size_t len)
{
    if (unlikely(dest >= ctx->size))
        return OC_ERR_RANK_RANGE;
    if (try_fast(&ctx->dests[OC__SLOT(dest, ctx->in_handler)], buf, len)) {
        ctx->c.msgs_sent++;
        ctx->c.bytes_sent += len;
        return OC_OK;
    }
    return send_slow(ctx, dest, buf, len);
}

OC_API size_t oc_send_burst(oc_context_t *ctx, const uint32_t *dests,
                            const void *msgs, size_t len, size_t n)
{
    const uint8_t *p = msgs;
    const uint32_t lane = (uint32_t)ctx->in_handler;
    const uint32_t size = ctx->size;
    size_t i, fast = 0;

    if (len == 8) {
        /* The common case (histogram updates, index-gather requests),
         * with the length a constant the compiler can use. */
        for (i = 0; i < n; i++, p += 8) {
            const uint32_t dest = dests[i];
            if (unlikely(dest >= size))
                break;
            oc__dest_t *d = &ctx->dests[OC__SLOT(dest, lane)];
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
        if (try_fast(&ctx->dests[OC__SLOT(dest, lane)], p, len)) {
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
    oc__dest_t *d;
    size_t i = 0;

    if (unlikely(dest >= ctx->size))
        return 0;
    d = &ctx->dests[OC__SLOT(dest, ctx->in_handler)];
    while (i < n) {
        size_t room = len == d->item_len && len == d->stride
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
        if (try_fast(d, p, len)) {
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
    return oc__flush_all(ctx, OC__FLUSH_EXPLICIT);
}

/* ---- delivery --------------------------------------------------------- */

static void reject(oc_context_t *ctx, oc__rx_t *e, oc_status_t why)
{
    ctx->c.bundles_rejected++;
    if (ctx->c.bundles_rejected <= 10)
        oc_warn(OC_COMP_RUNTIME, "rank %u: rejected a %u-byte bundle: %s",
                ctx->rank, e->len, oc_status_string(why));
}

/* Deliver the messages of the head bundle.  Returns the number delivered;
 * *stalled is set when the handler asked to be called again later. */
static uint32_t deliver_one(oc_context_t *ctx, oc__rx_t *e, int *stalled)
{
    const oc_handler_t handler = ctx->handler;
    void *const harg = ctx->handler_arg;
    const oc_wire_hdr_t *h = &e->hdr;
    uint32_t i = e->done, n = 0;
    uint64_t bytes = 0;

    if (h->flags & OC_WIRE_F_FIXED) {
        const uint32_t len = h->item_size;
        const size_t stride = oc_wire_pad8(len);
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
        oc_wire_iter_init(&it, e->data, h);
        oc_wire_iter_skip(&it, i);
        while (oc_wire_iter_next(&it, &m)) {
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
                                 OC_WIRE_RANK_NONE};
    uint64_t budget = ctx->cfg.poll_budget ? ctx->cfg.poll_budget : UINT64_MAX;
    int total = 0;

    ctx->in_handler = 1;
    while (ctx->rx_count > 0 && budget-- > 0) {
        /* Copy the entry: a handler's send to self may grow the ring. */
        oc__rx_t e = ctx->rxq[ctx->rx_head];
        int stalled = 0;

        if (!e.validated) {
            oc_status_t st = oc_wire_validate(e.data, e.len, &chk, &e.hdr);
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
            ctx->rxq[ctx->rx_head] = e; /* head is still this entry */
            break;
        }
pop:
        ctx->rx_head = (ctx->rx_head + 1) & (ctx->rx_cap - 1);
        ctx->rx_count--;
        rx_release(ctx, &e);
    }
    ctx->in_handler = 0;
    return total;
}

/* One round of progress: transport, delivery, flush policy. */
int oc__progress(oc_context_t *ctx)
{
    uint64_t activity;
    int n;

    oc_tr_progress(ctx->worker);
    if (ctx->agent != NULL) {
        oc__agent_progress(ctx);
        oc__agent_watch(ctx);
    }
    n = deliver(ctx);
    if (ctx->ndirty > 0) {
        activity = ctx->c.msgs_sent + ctx->c.send_no_resource;
        if (ctx->q.active)
            oc__flush_all(ctx, OC__FLUSH_EXPLICIT);
        else if (activity == ctx->last_activity)
            oc__flush_all(ctx, OC__FLUSH_IDLE);
        else
            flush_dirty(ctx, OC__FLUSH_TIMEOUT, oc__now_us());
        ctx->last_activity = activity;
    } else {
        ctx->last_activity = ctx->c.msgs_sent + ctx->c.send_no_resource;
    }
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
