/*
 * engine.c — the aggregation engine (see engine.h): pool, outlets, fixed
 * and mixed modes, flush policy, sends with per-outlet back-pressure, the
 * receive ring.  One thread per engine; no locks.
 */
#include "engine/engine.h"

#include "util/log.h"
#include "wire/am.h"
#include "util/clock.h"
#include "util/likely.h"
#include "util/counter.h"

#include <stdlib.h>

static void send_done(oc_tr_op_t *op, oc_status_t st);

static void oom(oc_eng_t *e, const char *what)
{
    OC__CTR_ADD(e->c.oom, 1);
    if (e->c.oom <= 10)
        oc_log(e->p.log_comp, OC_LOG_ERROR, "%s: out of memory %s; refused (counted)",
                 e->p.name ? e->p.name : "engine", what);
}

oc_status_t oc__eng_create(const oc_eng_params_t *p, oc_eng_t **e_p)
{
    oc_eng_t *e;

    if (p == NULL || e_p == NULL || p->bundle_size < 256 || p->nbufs == 0 ||
        p->handoff == NULL || (p->bundle_size & 7) != 0)
        return OC_ERR_INVALID_PARAM;
    e = calloc(1, sizeof(*e));
    if (e == NULL)
        return OC_ERR_NO_MEMORY;
    e->p = *p;
    e->dirty_cap = p->dirty_cap ? p->dirty_cap : 64;
    e->dirty = calloc(e->dirty_cap, sizeof(*e->dirty));
    e->descs = calloc(p->nbufs, sizeof(*e->descs));
    e->mem = aligned_alloc(64, p->nbufs * p->bundle_size);
    if (e->dirty == NULL || e->descs == NULL || e->mem == NULL) {
        oc__eng_destroy(e);
        return OC_ERR_NO_MEMORY;
    }
    for (uint64_t i = p->nbufs; i-- > 0;) {
        oc_eng_buf_t *b = &e->descs[i];
        b->eng = e;
        b->op.cb = send_done;
        b->data = e->mem + i * p->bundle_size;
        b->next = e->free_bufs;
        e->free_bufs = b;
    }
    *e_p = e;
    return OC_OK;
}

void oc__eng_destroy(oc_eng_t *e)
{
    oc_eng_buf_t *b;
    if (e == NULL)
        return;
    while ((b = e->reserve_bufs) != NULL) {
        e->reserve_bufs = b->next;
        free(b->data);
        free(b);
    }
    free(e->dirty);
    free(e->descs);
    free(e->mem);
    free(e);
}

void oc__eng_out_init(oc_eng_out_t *o)
{
    memset(o, 0, sizeof(*o));
    o->item_len = OC_ENG_NO_ITEM;
    o->fkey8 = OC_ENG_NO_KEY;
}

/* ---- buffers ------------------------------------------------------------ */

oc_eng_buf_t *oc__eng_buf_get(oc_eng_t *e)
{
    oc_eng_buf_t *b = e->free_bufs;
    if (likely(b != NULL)) {
        e->free_bufs = b->next;
        return b;
    }
    if (!e->p.reserve || !e->in_handler)
        return NULL; /* back-pressure */
    /* A handler's reply must not wait for buffers that only the owner's
     * own progress would free: take one from the reserve. */
    b = e->reserve_bufs;
    if (b != NULL) {
        e->reserve_bufs = b->next;
    } else {
        b = calloc(1, sizeof(*b));
        if (b != NULL)
            b->data = aligned_alloc(64, e->p.bundle_size);
        if (b == NULL || b->data == NULL) {
            free(b);
            oom(e, "for a reserve buffer");
            return NULL;
        }
        b->eng = e;
        b->op.cb = send_done;
        b->reserve = 1;
    }
    OC__CTR_ADD(e->c.reserve_buffers, 1);
    return b;
}

void oc__eng_buf_put(oc_eng_t *e, oc_eng_buf_t *b)
{
    if (unlikely(b->ring))
        return; /* a ring slot: its owner publishes it, never pools it */
    b->out = NULL;
    if (b->reserve) {
        b->next = e->reserve_bufs;
        e->reserve_bufs = b;
    } else {
        b->next = e->free_bufs;
        e->free_bufs = b;
    }
}

/* ---- outlets ------------------------------------------------------------ */

static int dirty_add(oc_eng_t *e, oc_eng_out_t *o)
{
    if (e->ndirty == e->dirty_cap) {
        uint32_t ncap = e->dirty_cap * 2;
        oc_eng_out_t **n = realloc(e->dirty, ncap * sizeof(*n));
        if (n == NULL) {
            oom(e, "growing the dirty list");
            return 0;
        }
        e->dirty = n;
        e->dirty_cap = ncap;
    }
    e->dirty[e->ndirty++] = o;
    o->listed = 1;
    return 1;
}

oc_status_t oc__eng_open(oc_eng_t *e, oc_eng_out_t *o, uint32_t dst,
                        uint32_t src, size_t len)
{
    size_t size = e->p.bundle_size;
    oc_eng_buf_t *b;

    uint8_t *slot = NULL;

    if (o->ring != NULL) {
        /* the next slot of the ring, written in place; a full ring is
         * back-pressure, except for a handler's reply, which takes a
         * buffer (the reserve) as everywhere else so that replies never
         * deadlock, and the owner queues it (ring_skip until it is in) */
        if (!o->ring_skip)
            slot = oc__spsc_reserve(o->ring);
        if (slot == NULL && !(e->p.reserve && e->in_handler) && !o->ring_skip)
            return OC_ERR_NO_RESOURCE;
        if (o->ring->slot_size < size)
            size = o->ring->slot_size & ~(size_t)7;
    }
    if (slot != NULL) {
        b = o->ring_buf;
        b->data = slot;
        b->ring = 1;
    } else if ((b = oc__eng_buf_get(e)) == NULL) {
        return OC_ERR_NO_RESOURCE;
    }
    if (!o->listed && !dirty_add(e, o)) {
        oc__eng_buf_put(e, b);
        return OC_ERR_NO_RESOURCE;
    }
    o->buf = b;
    o->count = 0;
    o->t_first = oc__now_us();
    if (o->column && len > 0) {
        /* destinations first, items after the room the most would take */
        const size_t stride = oc__wire_pad8(len);
        const uint32_t cap = oc__wire_col_cap(size, stride);
        o->dcol = b->data + OC_WIRE_HDR_LEN;
        o->wp = o->dcol + oc__wire_col_dst_bytes(cap);
        o->end = o->wp + (size_t)cap * stride;
        o->item_len = (uint32_t)len;
        o->stride = (uint32_t)stride;
        o->fkey8 = OC_ENG_NO_KEY;
        /* a column of destinations (a rank's stream) or of sources (an
         * agent's outlet toward a rank) */
        o->fsrc = (o->flags & OC_WIRE_F_SRCCOL) ? OC_WIRE_RANK_NONE : src;
        o->fdst = (o->flags & OC_WIRE_F_SRCCOL) ? dst : OC_WIRE_RANK_NONE;
        return OC_OK;
    }
    o->dcol = NULL;
    o->wp = b->data + OC_WIRE_HDR_LEN;
    o->end = b->data + size;
    /* Fixed mode (no per-message header) until a message of another
     * length, source or destination arrives; zero-length messages need
     * headers to be counted. */
    o->item_len = len > 0 && !o->mixed_only ? (uint32_t)len : OC_ENG_NO_ITEM;
    o->fkey8 = o->item_len == 8 ? oc__eng_fkey(src, dst) : OC_ENG_NO_KEY;
    o->stride = (uint32_t)oc__wire_pad8(len);
    o->fsrc = src;
    o->fdst = dst;
    return OC_OK;
}

/* Rewrite a fixed-mode buffer in place as mixed mode (each item gains its
 * 8-byte header).  Items move backwards, last first, so nothing is
 * overwritten before it is moved.  The caller checked the space. */
static void to_mixed(oc_eng_out_t *o)
{
    uint8_t *base = o->buf->data + OC_WIRE_HDR_LEN;
    const uint32_t stride = o->stride;
    const uint64_t mh = oc__wire_msg_hdr(o->fdst, o->fsrc, o->item_len);
    o->count = oc__eng_out_count(o);
    for (uint32_t i = o->count; i-- > 0;) {
        uint8_t *s = base + (size_t)i * stride;
        uint8_t *d = base + (size_t)i * (stride + OC_WIRE_MSG_HDR_LEN);
        memmove(d + OC_WIRE_MSG_HDR_LEN, s, stride);
        oc__store_le64(d, mh);
    }
    o->wp = base + (size_t)o->count * (stride + OC_WIRE_MSG_HDR_LEN);
    o->item_len = OC_ENG_NO_ITEM;
    o->fkey8 = OC_ENG_NO_KEY;
}

/* Most items col_to_mixed rewrites (its copy of the sources is on the
 * stack). */
#define OC_ENG_COL_MIXED_MAX 256

/* Rewrite a source-column buffer under a quarter full in place as mixed
 * mode (each item gains its 8-byte header, its source from the column),
 * when an item of another length arrives: as to_mixed, rather than send
 * a bundle of a few items.  Records grow forward from the start of the
 * body; record i ends at 8 (i + 1) + (i + 1) stride, below item i + 1
 * (at the column's room, >= 4 cap, plus (i + 1) stride) while i + 1 <=
 * cap / 2.  Returns 0 (nothing changed) when it does not pay or fit. */
static int col_to_mixed(oc_eng_out_t *o, size_t need)
{
    uint32_t srcs[OC_ENG_COL_MIXED_MAX];
    uint8_t *base = o->buf->data + OC_WIRE_HDR_LEN;
    const uint32_t n = o->count, stride = o->stride;
    const uint8_t *items = o->wp - (size_t)n * stride;
    const size_t room = (size_t)(o->end - base);
    const size_t cap = (size_t)(o->end - items) / stride;
    const uint64_t mh = oc__wire_msg_hdr(o->fdst, 0, o->item_len);

    if (!(o->flags & OC_WIRE_F_SRCCOL) || n > OC_ENG_COL_MIXED_MAX ||
        (size_t)n * 4 >= cap ||
        (size_t)n * (OC_WIRE_MSG_HDR_LEN + stride) + need > room)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        srcs[i] = oc__load_le32(o->dcol + 4 * (size_t)i);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *d = base + (size_t)i * (OC_WIRE_MSG_HDR_LEN + stride);
        memmove(d + OC_WIRE_MSG_HDR_LEN, items + (size_t)i * stride, stride);
        oc__store_le64(d, mh | oc__wire_msg_hdr(0, srcs[i], 0));
    }
    o->wp = base + (size_t)n * (OC_WIRE_MSG_HDR_LEN + stride);
    o->dcol = NULL;
    o->item_len = OC_ENG_NO_ITEM;
    return 1;
}

/* oc__eng_put on a column outlet: an item of the open column buffer's
 * length goes in; another length (or a zero-length message, which the
 * row layout carries) sends the buffer and opens another — or, toward a
 * rank (source column), turns a buffer under a quarter full mixed. */
static oc_status_t put_column(oc_eng_t *e, oc_eng_out_t *o, uint32_t dst,
                              uint32_t src, const void *buf, size_t len)
{
    oc_status_t st;

    for (int attempt = 0; attempt < 2; attempt++) {
        if (o->buf == NULL && (st = oc__eng_open(e, o, dst, src, len)) != OC_OK)
            return st;
        if (o->dcol != NULL) {
            if (len == o->item_len && o->wp + o->stride <= o->end) {
                oc__store_le32(o->dcol + 4 * (size_t)o->count,
                               (o->flags & OC_WIRE_F_SRCCOL) ? src : dst);
                o->wp = oc__wire_put_item(o->wp, buf, len);
                o->count++;
                return OC_OK;
            }
        }
        if (o->dcol != NULL && (len == o->item_len ||
                                !col_to_mixed(o, OC_WIRE_MSG_HDR_LEN +
                                                 oc__wire_pad8(len)))) {
            /* full, or another length: send it */
        } else if (o->wp + OC_WIRE_MSG_HDR_LEN + oc__wire_pad8(len) <= o->end) {
            o->wp = oc__wire_put_msg(o->wp, dst, src, buf, len);
            o->count++;
            return OC_OK;
        }
        if ((st = oc__eng_flush(e, o, OC_ENG_FLUSH_FULL)) != OC_OK)
            return st;
    }
    return OC_ERR_NO_RESOURCE; /* not reached: a fresh buffer fits it */
}

oc_status_t oc__eng_put(oc_eng_t *e, oc_eng_out_t *o, uint32_t dst,
                       uint32_t src, const void *buf, size_t len)
{
    oc_status_t st;

    if (o->column)
        return put_column(e, o, dst, src, buf, len);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (o->buf == NULL && (st = oc__eng_open(e, o, dst, src, len)) != OC_OK)
            return st;
        const size_t size = (size_t)(o->end - o->buf->data); /* non-column */
        if (o->item_len == len && o->fsrc == src && o->fdst == dst) {
            if (o->wp + o->stride <= o->end) {
                o->wp = oc__wire_put_item(o->wp, buf, len);
                return OC_OK;
            }
        } else {
            size_t need = OC_WIRE_MSG_HDR_LEN + oc__wire_pad8(len);
            /* Another source or destination in a fixed buffer already a
             * quarter full: send it as it is (FULL: full for fixed form)
             * rather than rewrite it with headers — an agent sorting
             * streams of a few ranks keeps its bundles fixed-size (cheap
             * to deliver), one sorting many ranks goes mixed. */
            if (o->item_len == len && attempt == 0 &&
                (size_t)(o->wp - o->buf->data) * 4 >= size)
                goto full;
            if (o->item_len != OC_ENG_NO_ITEM) {
                size_t mixed = (size_t)oc__eng_out_count(o) *
                               (o->stride + OC_WIRE_MSG_HDR_LEN);
                if (OC_WIRE_HDR_LEN + mixed + need <= size)
                    to_mixed(o);
            }
            if (o->item_len == OC_ENG_NO_ITEM && o->wp + need <= o->end) {
                o->wp = oc__wire_put_msg(o->wp, dst, src, buf, len);
                o->count++;
                return OC_OK;
            }
        }
full:
        /* No room in this buffer: it is full for this message. */
        if ((st = oc__eng_flush(e, o, OC_ENG_FLUSH_FULL)) != OC_OK)
            return st;
    }
    return OC_ERR_NO_RESOURCE; /* not reached: a fresh buffer fits it */
}

oc_status_t oc__eng_flush(oc_eng_t *e, oc_eng_out_t *o, oc_eng_flush_t why)
{
    oc_eng_buf_t *b = o->buf;
    oc_wire_hdr_t h;
    uint32_t len;

    if (b == NULL)
        return OC_OK;
    len = (uint32_t)(o->wp - b->data);
    memset(&h, 0, sizeof(h));
    h.count = oc__eng_out_count(o);
    /* a source-column outlet's buffer that went mixed is plain mixed */
    h.flags = o->dcol != NULL ? o->flags
                              : (uint8_t)(o->flags & ~OC_WIRE_F_SRCCOL);
    if (o->dcol != NULL) {
        /* column stream: the items move down behind the destinations
         * written (only a buffer sent before it filled has a gap) */
        const size_t dbytes = oc__wire_col_dst_bytes(h.count);
        const size_t ibytes = (size_t)h.count * o->stride;
        uint8_t *items = o->wp - ibytes;
        if (h.count & 1)
            oc__store_le32(o->dcol + 4 * (size_t)h.count, 0);
        if (items != o->dcol + dbytes)
            memmove(o->dcol + dbytes, items, ibytes);
        len = (uint32_t)(OC_WIRE_HDR_LEN + dbytes + ibytes);
        h.flags |= OC_WIRE_F_FIXED;
        h.item_size = (uint16_t)o->item_len;
        h.src = (o->flags & OC_WIRE_F_SRCCOL) ? OC_WIRE_RANK_NONE : o->src;
        h.dst = (o->flags & OC_WIRE_F_SRCCOL) ? o->fdst : OC_WIRE_RANK_NONE;
        o->dcol = NULL;
    } else if (o->item_len != OC_ENG_NO_ITEM) {
        h.flags |= OC_WIRE_F_FIXED;
        h.item_size = (uint16_t)o->item_len;
        h.src = o->fsrc;
        h.dst = o->fdst;
    } else {
        h.src = (o->flags & OC_WIRE_F_STREAM) ? o->src : OC_WIRE_RANK_NONE;
        h.dst = OC_WIRE_RANK_NONE;
    }
    h.length = len;
    h.src_hop = e->p.src_hop;
    h.job = o->job;
    h.seq = o->seq++;
    oc__wire_hdr_write(b->data, &h);

    o->buf = NULL;
    o->wp = o->end = NULL;
    o->item_len = OC_ENG_NO_ITEM;
    o->fkey8 = OC_ENG_NO_KEY;
    o->count = 0;

    OC__CTR_ADD(e->c.bundles, 1);
    OC__CTR_ADD(e->c.bytes, len);
    OC__CTR_ADD(e->c.flush[why], 1);
    return e->p.handoff(e->p.arg, o, b, len, h.count);
}

oc_status_t oc__eng_flush_dirty(oc_eng_t *e, oc_eng_flush_t why, uint64_t now)
{
    uint32_t keep = 0;
    oc_status_t ret = OC_OK;

    /* A hand-off may open buffers (a local delivery whose handler
     * replies): the list is re-read each turn and may grow meanwhile. */
    for (uint32_t i = 0; i < e->ndirty; i++) {
        oc_eng_out_t *o = e->dirty[i];
        if (o->buf != NULL && why == OC_ENG_FLUSH_TIMEOUT &&
            now - o->t_first < e->p.flush_timeout_us) {
            e->dirty[keep++] = o;
            continue;
        }
        if (o->buf != NULL) {
            oc_status_t st = oc__eng_flush(e, o, why);
            if (st != OC_OK)
                ret = st;
        }
        if (o->buf != NULL) /* reopened by a hand-off */
            e->dirty[keep++] = o;
        else
            o->listed = 0;
    }
    e->ndirty = keep;
    return ret;
}

oc_status_t oc__eng_policy(oc_eng_t *e, bool idle)
{
    e->idle_run = idle ? e->idle_run + (e->idle_run != UINT32_MAX) : 0;
    if (e->ndirty == 0)
        return OC_OK;
    if (idle && (!e->more || e->idle_run >= e->p.idle_turns)) {
        e->idle_run = 0;
        return oc__eng_flush_dirty(e, OC_ENG_FLUSH_IDLE, 0);
    }
    if (idle) /* a few turns before IDLE flushes it all: no clock read */
        return OC_OK;
    return oc__eng_flush_dirty(e, OC_ENG_FLUSH_TIMEOUT, oc__now_us());
}

/* ---- sending ------------------------------------------------------------ */

static void set_blocked(oc_eng_t *e, oc_eng_out_t *o, int on)
{
    o->blocked = (uint8_t)on;
    OC__CTR_ADD(e->c.blocked, on ? 1 : (uint64_t)-1);
    if (e->p.blocked != NULL)
        e->p.blocked(e->p.arg, o, on);
}

static void unblock(oc_eng_t *e, oc_eng_out_t *o)
{
    set_blocked(e, o, 0);
}

static void send_done(oc_tr_op_t *op, oc_status_t st)
{
    oc_eng_buf_t *b = (oc_eng_buf_t *)op;
    oc_eng_t *e = b->eng;
    oc_eng_out_t *o = b->out;

    e->inflight--;
    if (o != NULL) { /* NULL: retired meanwhile */
        o->inflight--;
        if (o->blocked && o->inflight < e->p.max_inflight)
            unblock(e, o);
    }
    oc__eng_buf_put(e, b);
    if (st != OC_OK && e->p.send_failed != NULL)
        e->p.send_failed(e->p.arg, o, st);
}

oc_status_t oc__eng_send(oc_eng_t *e, oc_eng_out_t *o, oc_tr_ep_t *ep,
                        uint64_t token, oc_eng_buf_t *b, uint32_t len)
{
    oc_status_t st;

    b->op.token = token;
    b->out = o;
    st = oc__tr_send(ep, OC_AM_BUNDLE, b->data, len, &b->op);
    if (st == OC_INPROGRESS) {
        e->inflight++;
        o->inflight++;
        if (!o->blocked && e->p.max_inflight != 0 &&
            o->inflight >= e->p.max_inflight)
            set_blocked(e, o, 1);
        return OC_OK;
    }
    oc__eng_buf_put(e, b);
    return st;
}

void oc__eng_out_retire(oc_eng_t *e, oc_eng_out_t *o)
{
    oc__eng_flush(e, o, OC_ENG_FLUSH_EXPLICIT);
    if (o->inflight > 0)
        for (uint64_t i = 0; i < e->p.nbufs; i++)
            if (e->descs[i].out == o)
                e->descs[i].out = NULL;
    if (o->blocked)
        unblock(e, o);
    o->inflight = 0;
    for (uint32_t i = 0; i < e->ndirty; i++)
        if (e->dirty[i] == o) {
            e->dirty[i] = e->dirty[--e->ndirty];
            break;
        }
    o->listed = 0;
}

void oc__eng_counters(const oc_eng_t *e, oc_eng_counters_t *out)
{
    const uint64_t *src = (const uint64_t *)&e->c;
    uint64_t *dst = (uint64_t *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        dst[i] = OC__CTR_GET(src[i]);
}

/* ---- receive ring ------------------------------------------------------- */

oc_status_t oc__eng_ring_init(oc_eng_ring_t *r, oc_eng_t *e, uint32_t cap)
{
    uint32_t c = 16;
    while (c < cap)
        c *= 2;
    r->q = calloc(c, sizeof(*r->q));
    if (r->q == NULL)
        return OC_ERR_NO_MEMORY;
    r->head = r->count = 0;
    r->cap = c;
    r->eng = e;
    return OC_OK;
}

void oc__eng_ring_fini(oc_eng_ring_t *r)
{
    free(r->q);
    r->q = NULL;
    r->count = r->cap = 0;
}

oc_eng_rx_t *oc__eng_ring_push(oc_eng_ring_t *r)
{
    oc_eng_rx_t *x;
    if (unlikely(r->count == r->cap)) {
        /* Grow (rare: only when the owner falls behind its senders).
         * Re-lay the ring from index 0 so indices stay simple. */
        uint32_t ncap = r->cap * 2;
        oc_eng_rx_t *n = ncap > r->cap ? malloc(sizeof(*n) * ncap) : NULL;
        if (n == NULL) {
            oom(r->eng, "growing the receive ring");
            return NULL;
        }
        for (uint32_t i = 0; i < r->count; i++)
            n[i] = *oc__eng_ring_at(r, i);
        free(r->q);
        r->q = n;
        r->head = 0;
        r->cap = ncap;
    }
    x = oc__eng_ring_at(r, r->count);
    memset(x, 0, sizeof(*x));
    r->count++;
    return x;
}

void oc__eng_ring_compact(oc_eng_ring_t *r, uint32_t n, uint32_t kept)
{
    /* entries n..count-1 arrived during the scan: keep them, in order */
    for (uint32_t k = n; k < r->count; k++)
        *oc__eng_ring_at(r, kept + (k - n)) = *oc__eng_ring_at(r, k);
    r->count = kept + (r->count - n);
}
