/*
 * engine.h — the one aggregation engine of offcore, under the runtime
 * (liboffcore, both placements) and the agent's routing threads alike: a
 * pool of bundle buffers, outlets (one open buffer toward one next hop,
 * fixed mode until a message breaks it, then mixed), the dirty list and
 * the flush policy (FULL, TIMEOUT, IDLE, EXPLICIT), sends with per-outlet
 * back-pressure, and the receive ring.  It never allocates on the fast
 * path and never aborts: out of memory is refused, logged once, counted.
 * Its parts and policies: docs/design.md, "The aggregation engine".
 *
 * Threading: an engine belongs to one thread (a rank's context, or one
 * routing thread); nothing here is locked.  Counters are written with
 * relaxed atomic stores so that other threads may read them
 * (oc__eng_counters).
 */
#ifndef OC_ENGINE_H
#define OC_ENGINE_H

#include "transport/transport.h"
#include "util/spsc.h"
#include "wire/wire.h"
#include "util/counter.h"

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OC_ENG_NO_ITEM UINT32_MAX
#define OC_ENG_NO_KEY  UINT64_MAX

/** Why a buffer became a bundle: the one list of flush reasons. */
typedef enum {
    OC_ENG_FLUSH_FULL,     /**< a message did not fit */
    OC_ENG_FLUSH_TIMEOUT,  /**< first message older than flush_timeout_us */
    OC_ENG_FLUSH_IDLE,     /**< the owner saw no new work */
    OC_ENG_FLUSH_EXPLICIT, /**< the owner asked (oc_flush, quiesce, retire) */
    OC_ENG_FLUSH_NREASONS
} oc_eng_flush_t;

typedef struct oc_eng     oc_eng_t;
typedef struct oc_eng_out oc_eng_out_t;

/** A bundle buffer.  op comes first: the transport's completion hands it
 *  back as the oc_tr_op_t. */
typedef struct oc_eng_buf {
    oc_tr_op_t         op;
    oc_eng_t          *eng;
    oc_eng_out_t      *out;     /**< sent to (in flight); NULL once retired */
    uint8_t           *data;    /**< bundle_size bytes, 64-byte aligned */
    struct oc_eng_buf *next;    /**< free list, or the owner's queue */
    uint32_t           len;     /**< bundle length while the owner holds it */
    uint8_t            reserve; /**< malloc'd beyond the pool */
    uint8_t            ring;    /**< a slot of an outlet's ring (never
                                     pooled: the owner publishes it) */
} oc_eng_buf_t;

/** One open buffer toward one next hop.  The owner embeds it in its own
 *  per-destination state and sets the identity fields (job, flags, src,
 *  user) once; the engine keeps the rest.  Hot fields first. */
struct oc_eng_out {
    uint8_t      *wp;        /**< write pointer; NULL when no buffer */
    uint8_t      *end;
    uint32_t      item_len;  /**< fixed mode: every item's length;
                                  OC_ENG_NO_ITEM: mixed (or no buffer) */
    uint32_t      stride;    /**< pad8(item_len) */
    uint32_t      count;     /**< messages (mixed mode; fixed mode counts
                                  from the write pointer) */
    uint32_t      fsrc, fdst; /**< fixed mode: the one source, destination */
    uint64_t      fkey8;     /**< fixed mode of 8-byte items:
                                  oc__eng_fkey(fsrc, fdst); else
                                  OC_ENG_NO_KEY (a routing loop's one
                                  compare) */
    uint8_t       listed;    /**< on the dirty list */
    uint8_t       blocked;   /**< max_inflight reached: hold traffic back */
    uint8_t       mixed_only; /**< owner: never use fixed mode */
    uint8_t       flags;     /**< owner: extra bundle flags (OC_WIRE_F_*) */
    uint8_t       column;    /**< owner: column layout (wire.h): buffers
                                  of one item length take any destination
                                  (a rank's stream) or, with flags
                                  OC_WIRE_F_SRCCOL, any source (an agent's
                                  outlet toward one rank) */
    uint8_t       ring_skip; /**< owner: bundles of this outlet wait for
                                  room in pool buffers; open pool buffers
                                  too until they are in (keeps order) */
    uint8_t      *dcol;      /**< column layout: the column of the open
                                  buffer (count entries written: ranks of
                                  destination, or of source with SRCCOL);
                                  NULL in the other layouts */
    oc_eng_buf_t *buf;
    uint64_t      t_first;   /**< when the first message went in (us) */
    uint64_t      seq;
    uint32_t      inflight;  /**< bundles sent, not yet completed */
    uint32_t      job;       /**< owner: stamped on every bundle */
    uint32_t      src;       /**< owner: header src of a STREAM bundle */
    void         *user;      /**< owner: what the hand-off needs */
    /** owner: buffers of this outlet are the slots of a shared ring
     *  (util/spsc.h), reserved at open and written in place: the hand-off
     *  gets @p ring_buf (its ring flag set) and publishes it — no copy, no
     *  pool buffer.  A full ring is OC_ERR_NO_RESOURCE at open, as an
     *  empty pool is.  NULL: the pool. */
    oc_spsc_t    *ring;
    oc_eng_buf_t *ring_buf;
};

/* 128 bytes on 64-bit hosts, on purpose: owners keep arrays of outlets
 * (the runtime's per-destination lanes) and the send loops index them per
 * message, which a power of two makes one shift.  At 136 bytes (the ring
 * fields appended after the padding) oc_send_burst's inline loop took 24.2
 * instructions a message against 23.2 at the earlier 112 (callgrind,
 * histogram); 128 and the base read once give 21.4.  Grow it past 128 only
 * with a measurement (bench/run-inline-ab.sh, bench/rank-cpu.py). */
_Static_assert(sizeof(void *) != 8 || sizeof(struct oc_eng_out) == 128,
               "oc_eng_out_t: keep it 128 bytes (see above)");

/** Where a finished bundle goes: the owner sends it (oc__eng_send), queues
 *  it, or delivers it locally.  It owns @p b from here (back to the pool
 *  with oc__eng_buf_put).  A negative status is returned to the caller of
 *  the flush. */
typedef oc_status_t (*oc_eng_handoff_t)(void *arg, oc_eng_out_t *o,
                                        oc_eng_buf_t *b, uint32_t len,
                                        uint32_t count);

typedef struct {
    uint64_t bundle_size;      /**< bytes per buffer (>= 256) */
    uint64_t nbufs;            /**< pool buffers (>= 1) */
    uint64_t flush_timeout_us;
    /** While the owner expects more traffic (oc__eng_more), IDLE flushes
     *  after this many idle turns in a row, not at the first (keep it a
     *  few microseconds' worth: the turns between do not look at the
     *  clock for TIMEOUT). */
    uint32_t idle_turns;
    uint32_t max_inflight;     /**< per outlet before it blocks; 0: never */
    uint32_t src_hop;          /**< stamped in every header */
    uint32_t dirty_cap;        /**< initial dirty-list room (grows) */
    uint32_t ring_cap;         /**< initial receive-ring room, power of 2 */
    bool     reserve;          /**< allow reserve buffers (oc_eng_t.in_handler) */
    oc_eng_handoff_t handoff;
    /** @p o became blocked (@p on = 1) or unblocked (0); optional. */
    void   (*blocked)(void *arg, oc_eng_out_t *o, int on);
    /** A send that completed with an error (the buffer is back already). */
    void   (*send_failed)(void *arg, oc_eng_out_t *o, oc_status_t st);
    void    *arg;
    const char *name;          /**< for logs: "rank 3", "router 1" */
    int      log_comp;         /**< OC_COMP_* of the owner, for its logs */
} oc_eng_params_t;

/** Counters (relaxed atomic stores by the owner's thread). */
typedef struct {
    uint64_t bundles;          /**< bundles built (flushed) */
    uint64_t bytes;            /**< their bytes, headers included */
    uint64_t flush[OC_ENG_FLUSH_NREASONS];
    uint64_t reserve_buffers;  /**< reserve buffers taken */
    uint64_t blocked;          /**< outlets blocked now (gauge) */
    uint64_t oom;              /**< refusals for lack of memory */
} oc_eng_counters_t;

/** A received bundle waiting for (or in) delivery or routing. */
typedef struct {
    uint8_t       *data;
    uint32_t       len;
    uint32_t       done;      /**< messages already handled */
    uint64_t       token;     /**< the sender's transport token */
    uint64_t       t_arrival; /**< us */
    oc_eng_buf_t  *self_buf;  /**< a bundle from this engine: back to pool */
    void          *shm;       /**< owner's: the shared ring it lies in
                                   (released there, in order); NULL:
                                   the transport's */
    uint8_t        validated;
    oc_wire_hdr_t  hdr;       /**< once validated */
} oc_eng_rx_t;

/** Ring of oc_eng_rx_t (capacity a power of two; grows by doubling). */
typedef struct {
    oc_eng_rx_t *q;
    uint32_t     head, count, cap;
    oc_eng_t    *eng;         /**< for the oom counter and log */
} oc_eng_ring_t;

struct oc_eng {
    oc_eng_params_t   p;
    oc_eng_buf_t     *free_bufs;
    oc_eng_buf_t     *reserve_bufs;
    oc_eng_out_t    **dirty;
    uint32_t          ndirty, dirty_cap;
    uint32_t          idle_run;  /**< idle turns in a row (oc__eng_policy) */
    int               more;      /**< owner: more traffic expected */
    uint64_t          inflight;  /**< bundles in flight, all outlets */
    int               in_handler; /**< owner: reserve buffers allowed now */
    oc_eng_counters_t c;
    oc_eng_buf_t     *descs;
    uint8_t          *mem;
};

/** Create an engine and its pool.  OC_ERR_INVALID_PARAM, OC_ERR_NO_MEMORY. */
oc_status_t oc__eng_create(const oc_eng_params_t *p, oc_eng_t **e_p);
/** Free the pool and the reserve.  Buffers still in flight must have
 *  completed or been purged by the transport.  NULL is a no-op. */
void oc__eng_destroy(oc_eng_t *e);

/** Zero an outlet: no buffer, no identity (call once before use, then set
 *  the owner's fields). */
void oc__eng_out_init(oc_eng_out_t *o);

/** A buffer from the pool (or the reserve, in a handler); NULL if none. */
oc_eng_buf_t *oc__eng_buf_get(oc_eng_t *e);
void oc__eng_buf_put(oc_eng_t *e, oc_eng_buf_t *b);

/** Open a buffer on @p o (which has none) for a first message of @p len
 *  bytes from @p src to @p dst.  OC_ERR_NO_RESOURCE: no buffer. */
oc_status_t oc__eng_open(oc_eng_t *e, oc_eng_out_t *o, uint32_t dst,
                        uint32_t src, size_t len);

/**
 * Append one message.  Opens a buffer if needed, flushes a full one
 * (FULL) and retries once.  The caller checked len <= the largest message
 * and that @p o is not blocked (a blocked outlet still accepts what fits
 * its open buffer).
 * @return OC_OK; OC_ERR_NO_RESOURCE (no buffer free: progress and retry);
 *         or the hand-off's error.
 */
oc_status_t oc__eng_put(oc_eng_t *e, oc_eng_out_t *o, uint32_t dst,
                       uint32_t src, const void *buf, size_t len);

/** Messages in @p o's open buffer. */
static inline uint32_t oc__eng_out_count(const oc_eng_out_t *o)
{
    if (o->buf == NULL)
        return 0;
    if (o->dcol != NULL)
        return o->count;
    if (o->item_len != OC_ENG_NO_ITEM)
        return (uint32_t)((size_t)(o->wp - (o->buf->data + OC_WIRE_HDR_LEN)) /
                          o->stride);
    return o->count;
}

/** The fast path of an outlet toward one destination from one source (a
 *  rank's per-destination outlet): a same-size item into an open
 *  fixed-mode buffer with room.  Returns 0 when oc__eng_put must decide. */
static inline int oc__eng_try_fast(oc_eng_out_t *o, const void *buf, size_t len)
{
    if (__builtin_expect(len == o->item_len && o->wp + o->stride <= o->end, 1)) {
        if (len == 8)
            memcpy(o->wp, buf, 8);
        else
            oc__wire_put_item(o->wp, buf, len);
        o->wp += o->stride;
        return 1;
    }
    return 0;
}

/** (source, destination) as one word: oc_eng_out_t.fkey8. */
static inline uint64_t oc__eng_fkey(uint32_t src, uint32_t dst)
{
    /* the destination low: a routing loop ORs the one it just loaded
     * (zero-extended) into the bundle's source, with no shift */
    return (uint64_t)dst | (uint64_t)src << 32;
}
/** Column layout: room for this many more items in the open buffer (0
 *  when there is none, or it is not in column layout for @p len). */
static inline size_t oc__eng_col_room(const oc_eng_out_t *o, size_t len)
{
    if (o->dcol == NULL || len != o->item_len)
        return 0;
    return (size_t)(o->end - o->wp) / o->stride;
}

/** oc__eng_put's fast case, inline: an item of the open fixed-mode
 *  buffer's length, source and destination, with room.  Returns 0 when
 *  oc__eng_put must decide. */
static inline int oc__eng_try_put(oc_eng_out_t *o, uint32_t dst, uint32_t src,
                                 const void *buf, size_t len)
{
    if (__builtin_expect(len == o->item_len && src == o->fsrc &&
                         dst == o->fdst && o->wp + o->stride <= o->end, 1)) {
        o->wp = oc__wire_put_item(o->wp, buf, len);
        return 1;
    }
    return 0;
}

/** Write the header of @p o's buffer and hand it off.  OC_OK when there is
 *  no buffer. */
oc_status_t oc__eng_flush(oc_eng_t *e, oc_eng_out_t *o, oc_eng_flush_t why);

/** Flush the dirty outlets: all of them, or with TIMEOUT only those whose
 *  first message is older than flush_timeout_us at @p now.  Returns the
 *  last error of a hand-off, OC_OK if none. */
oc_status_t oc__eng_flush_dirty(oc_eng_t *e, oc_eng_flush_t why, uint64_t now);

/** The flush policy, once per turn of the owner's loop: @p idle (nothing
 *  new since the last turn) flushes everything (IDLE) — at the first idle
 *  turn, or, while the owner expects more (oc__eng_more), after
 *  idle_turns of them in a row (nothing before) — else what timed out
 *  (TIMEOUT). */
oc_status_t oc__eng_policy(oc_eng_t *e, bool idle);

/** The owner's hint for the IDLE flush: its senders are mid-stream (their
 *  last bundles were full), so a short lull is not the end of their
 *  traffic (1); or they flushed early, so nothing more is on its way (0,
 *  the default). */
static inline void oc__eng_more(oc_eng_t *e, int more)
{
    e->more = more;
}

/** Send a finished bundle on @p ep with @p token as its header: done now
 *  (buffer back to the pool), or in flight (counted on @p o; @p o blocks
 *  at max_inflight).  OC_OK either way, or the transport's error (the
 *  buffer is back in the pool). */
oc_status_t oc__eng_send(oc_eng_t *e, oc_eng_out_t *o, oc_tr_ep_t *ep,
                        uint64_t token, oc_eng_buf_t *b, uint32_t len);

/** Retire an outlet whose next hop goes away: flush what it holds
 *  (EXPLICIT), forget its bundles in flight (their completions will not
 *  find it), unblock it, take it off the dirty list. */
void oc__eng_out_retire(oc_eng_t *e, oc_eng_out_t *o);

/** Snapshot of the counters (relaxed loads; any thread). */
void oc__eng_counters(const oc_eng_t *e, oc_eng_counters_t *out);

/* ---- receive ring ------------------------------------------------------ */

oc_status_t oc__eng_ring_init(oc_eng_ring_t *r, oc_eng_t *e, uint32_t cap);
void oc__eng_ring_fini(oc_eng_ring_t *r);

/** A new zeroed entry at the tail (grows the ring when full).  NULL when
 *  growing failed: see the out-of-memory policy above (logged, counted). */
oc_eng_rx_t *oc__eng_ring_push(oc_eng_ring_t *r);

static inline oc_eng_rx_t *oc__eng_ring_at(oc_eng_ring_t *r, uint32_t k)
{
    return &r->q[(r->head + k) & (r->cap - 1)];
}

static inline void oc__eng_ring_pop(oc_eng_ring_t *r)
{
    r->head = (r->head + 1) & (r->cap - 1);
    r->count--;
}

/** After a scan of the first @p n entries that kept @p kept of them at
 *  positions 0..kept-1 (oc__eng_ring_at), drop the other n - kept; entries
 *  pushed after the scan move down behind the kept ones. */
void oc__eng_ring_compact(oc_eng_ring_t *r, uint32_t n, uint32_t kept);

#endif
