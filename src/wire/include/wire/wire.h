/*
 * wire.h — the bundle and message format (docs/design.md, "Wire format").
 *
 * The only module that knows the byte layout (the comment below).
 * Everything else builds bundles with the oc_wire_put_* helpers and
 * reads them through oc__wire_validate() + oc_wire_iter_*.
 * Trust: bundles come from any peer; oc__wire_validate() checks every
 * field before anything is delivered or routed (fuzzed: tests/fuzz/).
 * No state of its own: thread-safe on distinct bundles.
 */
/* The layout.
 *
 * Bundle (little-endian, 8-byte aligned, OC_WIRE_HDR_LEN = 40 bytes):
 *   0 u32 magic "OCB1"   4 u8 version   5 u8 flags   6 u16 item_size
 *   8 u32 count         12 u32 length (whole bundle, header included)
 *  16 u32 src_hop       20 u32 job     24 u64 seq
 *  32 u32 src           36 u32 dst     (single source / destination, or
 *                                       OC_WIRE_RANK_NONE)
 * then either
 *   mixed  (flags without FIXED): count messages, each an 8-byte header
 *          [dst:24 | src:24 | len:16] and len payload bytes padded to 8;
 *   fixed  (flags & FIXED): count items of item_size bytes, each padded to
 *          8, all from hdr.src to hdr.dst: no per-message header.
 *   stream (flags & STREAM): what one rank (hdr.src) wrote toward its
 *          agent in the order it sent, whatever the destinations (agent
 *          placement, stream mode; the agent sorts it per next hop).
 *          hdr.dst is OC_WIRE_RANK_NONE, and only an agent accepts one: a
 *          check naming a single receiving rank (chk.dst) rejects it.  Two
 *          layouts:
 *          - row (STREAM alone): mixed messages, every src is hdr.src;
 *          - column (STREAM | FIXED): count items of item_size (>= 1)
 *            bytes: first the count u32 destinations, zero-padded to 8
 *            bytes (oc__wire_col_dst_bytes), then the items, each padded
 *            to 8.  What oc_send_burst is given (an array of destinations,
 *            an array of messages) goes in as two copies, and the agent
 *            reads the destinations as one array.
 *   runs   (RUNS alone; what an agent sends a peer agent): runs of
 *          messages of one source, one destination and one length, each
 *          a 16-byte run header [dst:24 | src:24 | len:16] (a message
 *          header's word) + u32 n (>= 1) + u32 0, then n items of len
 *          bytes each padded to 8: no per-message header.  item_size 0,
 *          hdr.src/dst OC_WIRE_RANK_NONE; count is the sum of the runs'
 *          n.  A run of len 0 has n = 1 (a header per empty message, as
 *          in mixed mode); otherwise two runs in a row differ in source,
 *          destination or length (one encoding per bundle).  The
 *          messages of one (source, destination) keep their order;
 *          oc__wire_runs_pack() builds it from mixed.
 *   source column (FIXED | SRCCOL; what an agent hands a rank): count
 *          items of item_size (>= 1) bytes, all for hdr.dst, from any
 *          sources: first the count u32 sources, zero-padded to 8 bytes
 *          (oc__wire_col_dst_bytes), then the items, each padded to 8 —
 *          a column stream with the roles turned round.  hdr.src is
 *          OC_WIRE_RANK_NONE.  An agent's outlet toward a rank takes
 *          every sender's items of one length this way, with no
 *          per-message header.  Only an agent writes one; an agent
 *          refuses one it receives (route.c).
 */
#ifndef OC_WIRE_H
#define OC_WIRE_H

#include <offcore/offcore.h>
#include "util/bytes.h"
#include "util/reject.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define OC_WIRE_MAGIC       0x3142434fu /* "OCB1" read little-endian */
#define OC_WIRE_VERSION     1
#define OC_WIRE_HDR_LEN     40
#define OC_WIRE_MSG_HDR_LEN 8
#define OC_WIRE_F_FIXED     0x01u
#define OC_WIRE_F_STREAM    0x02u
#define OC_WIRE_F_RUNS      0x04u /* alone: neither FIXED nor STREAM */
#define OC_WIRE_F_SRCCOL    0x08u /* with FIXED only: a source column */
#define OC_WIRE_F_ALL       (OC_WIRE_F_FIXED | OC_WIRE_F_STREAM)
#define OC_WIRE_F_KNOWN     (OC_WIRE_F_ALL | OC_WIRE_F_RUNS | OC_WIRE_F_SRCCOL)
#define OC_WIRE_RUN_HDR_LEN 16
#define OC_WIRE_RANK_NONE   0xffffffu   /* 24-bit ranks: 0 .. 2^24-2 */
#define OC_WIRE_MAX_RANKS   0xffffffu
#define OC_WIRE_MAX_MSG     0xffffu     /* 16-bit payload length */

typedef struct {
    uint32_t magic;
    uint8_t  version;
    uint8_t  flags;
    uint16_t item_size;
    uint32_t count;
    uint32_t length;
    uint32_t src_hop;
    uint32_t job;
    uint64_t seq;
    uint32_t src;
    uint32_t dst;
} oc_wire_hdr_t;

/** What the receiver expects of a bundle. */
typedef struct {
    uint32_t job;      /**< bundles of another job are rejected */
    uint32_t nranks;   /**< every rank must be below this */
    uint32_t dst;      /**< every message must be for this rank, or
                            OC_WIRE_RANK_NONE to accept any in range */
    uint32_t src;      /**< every message must come from this rank (what
                            an agent knows of the connection), or
                            OC_WIRE_RANK_NONE */
    uint32_t flags;    /**< OC_WIRE_CHECK_*; 0 checks everything */
} oc_wire_check_t;

/** oc_wire_check_t.flags: a column stream's destinations are left to the
 *  caller, which checks each as it reads it (a bundle in memory that its
 *  sender can still write, where a check before use proves nothing). */
#define OC_WIRE_CHECK_DST_AT_USE 1u

static inline size_t oc__wire_pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static inline uint64_t oc__wire_msg_hdr(uint32_t dst, uint32_t src, uint32_t len)
{
    return (uint64_t)(dst & 0xffffffu) | ((uint64_t)(src & 0xffffffu) << 24) |
           ((uint64_t)(len & 0xffffu) << 48);
}

/** Append one mixed-mode message at @p p (caller checked the space:
 *  OC_WIRE_MSG_HDR_LEN + pad8(len)).  Padding is zeroed.  Returns the end. */
static inline uint8_t *oc__wire_put_msg(uint8_t *p, uint32_t dst, uint32_t src,
                                       const void *buf, size_t len)
{
    oc__store_le64(p, oc__wire_msg_hdr(dst, src, (uint32_t)len));
    p += OC_WIRE_MSG_HDR_LEN;
    if (len & 7)
        oc__store_le64(p + (len & ~(size_t)7), 0);
    if (len != 0)
        memcpy(p, buf, len);
    return p + oc__wire_pad8(len);
}

/** Append one fixed-mode item (space checked by the caller). */
static inline uint8_t *oc__wire_put_item(uint8_t *p, const void *buf, size_t len)
{
    if (len & 7)
        oc__store_le64(p + (len & ~(size_t)7), 0);
    memcpy(p, buf, len);
    return p + oc__wire_pad8(len);
}

/** Column stream: bytes of the destination column of @p n items. */
static inline size_t oc__wire_col_dst_bytes(size_t n)
{
    return oc__wire_pad8(4 * n);
}

/** Column stream: the most items of @p stride bytes (pad8 of the item
 *  size) that fit a bundle of @p bundle_size bytes. */
static inline uint32_t oc__wire_col_cap(size_t bundle_size, size_t stride)
{
    size_t n;
    if (bundle_size < OC_WIRE_HDR_LEN + 8 + stride)
        return 0;
    n = (bundle_size - OC_WIRE_HDR_LEN) / (4 + stride);
    while (n > 0 && OC_WIRE_HDR_LEN + oc__wire_col_dst_bytes(n) + n * stride >
                        bundle_size)
        n--;
    return (uint32_t)n;
}

/** The job a bundle claims, before validation (to pick what to validate
 *  it against).  Returns 0 when too short to have one. */
static inline int oc__wire_peek_job(const void *buf, size_t len, uint32_t *job)
{
    const uint8_t *p = (const uint8_t *)buf + 20;
    if (len < OC_WIRE_HDR_LEN)
        return 0;
    *job = oc__load_le32(p);
    return 1;
}

/** Write the bundle header into the first OC_WIRE_HDR_LEN bytes of @p buf. */
void oc__wire_hdr_write(void *buf, const oc_wire_hdr_t *hdr);

/**
 * Check a whole received bundle before anything in it is trusted.
 * Thread-safe (pure function).
 *
 * @return OC_OK and *hdr_out filled, or one of
 *   OC_ERR_WIRE_TRUNCATED (len < header), OC_ERR_WIRE_MAGIC,
 *   OC_ERR_WIRE_VERSION, OC_ERR_WIRE_FLAGS (unknown flags, a STREAM
 *   bundle for a single rank, RUNS with another flag, SRCCOL other than
 *   with FIXED alone), OC_ERR_WIRE_JOB,
 *   OC_ERR_WIRE_LENGTH (header length != len, a message or run running
 *   past the end, bytes left after the last message, non-zero padding or
 *   run reserved word),
 *   OC_ERR_WIRE_COUNT (also a run of n 0, runs past the header's count,
 *   an empty-message run of n > 1, a run that the one before it could
 *   have held: same source, destination and length), OC_ERR_WIRE_EMPTY
 *   (count 0),
 *   OC_ERR_WIRE_RANK
 *   (also a STREAM message whose src is not the header's, or a header
 *   dst on a STREAM bundle, a header src on a SRCCOL one, a source in
 *   its column out of range or not chk->src),
 *   OC_ERR_WIRE_ITEM_SIZE, OC_ERR_INVALID_PARAM (NULL arguments).
 */
oc_status_t oc__wire_validate(const void *buf, size_t len,
                             const oc_wire_check_t *chk, oc_wire_hdr_t *hdr_out);

/** Iterator over a bundle that oc__wire_validate() accepted. */
typedef struct {
    const uint8_t *p;
    uint32_t       left;     /**< messages not yet returned */
    uint32_t       fixed;    /**< 1 in fixed mode and column streams */
    uint32_t       item_size;
    uint32_t       src, dst; /**< fixed mode */
    const uint8_t *col;      /**< column stream: the next destination;
                                  source column: the next source */
    uint32_t       colsrc;   /**< 1: col holds sources (SRCCOL) */
    uint32_t       runs;     /**< 1 in a RUNS bundle */
    uint32_t       run_left; /**< RUNS: items left in the current run */
} oc_wire_iter_t;

typedef struct {
    uint32_t       dst;
    uint32_t       src;
    uint32_t       len;
    const uint8_t *payload;
} oc_wire_msg_t;

static inline void oc__wire_iter_init(oc_wire_iter_t *it, const void *bundle,
                                     const oc_wire_hdr_t *hdr)
{
    it->p = (const uint8_t *)bundle + OC_WIRE_HDR_LEN;
    it->left = hdr->count;
    it->fixed = (hdr->flags & OC_WIRE_F_FIXED) != 0;
    it->item_size = hdr->item_size;
    it->src = hdr->src;
    it->dst = hdr->dst;
    it->col = NULL;
    it->runs = (hdr->flags & OC_WIRE_F_RUNS) != 0;
    it->run_left = 0;
    it->colsrc = (hdr->flags & OC_WIRE_F_SRCCOL) != 0;
    if ((hdr->flags & (OC_WIRE_F_FIXED | OC_WIRE_F_STREAM)) ==
            (OC_WIRE_F_FIXED | OC_WIRE_F_STREAM) || it->colsrc) {
        it->col = it->p;
        it->p += oc__wire_col_dst_bytes(hdr->count);
    }
}

/** Next message; false when none is left.  msg->payload points into the
 *  bundle and is valid as long as the bundle is. */
static inline bool oc__wire_iter_next(oc_wire_iter_t *it, oc_wire_msg_t *msg)
{
    if (it->left == 0)
        return false;
    it->left--;
    if (it->fixed) {
        msg->dst = it->dst;
        msg->src = it->src;
        if (it->col != NULL) {
            if (it->colsrc)
                msg->src = oc__load_le32(it->col);
            else
                msg->dst = oc__load_le32(it->col);
            it->col += 4;
        }
        msg->len = it->item_size;
        msg->payload = it->p;
        it->p += oc__wire_pad8(it->item_size);
    } else if (it->runs) {
        if (it->run_left == 0) { /* the next run's header */
            uint64_t h = oc__load_le64(it->p);
            it->dst = (uint32_t)(h & 0xffffffu);
            it->src = (uint32_t)((h >> 24) & 0xffffffu);
            it->item_size = (uint32_t)(h >> 48);
            it->run_left = oc__load_le32(it->p + 8);
            it->p += OC_WIRE_RUN_HDR_LEN;
        }
        it->run_left--;
        msg->dst = it->dst;
        msg->src = it->src;
        msg->len = it->item_size;
        msg->payload = it->p;
        it->p += oc__wire_pad8(it->item_size);
    } else {
        uint64_t h = oc__load_le64(it->p);
        msg->dst = (uint32_t)(h & 0xffffffu);
        msg->src = (uint32_t)((h >> 24) & 0xffffffu);
        msg->len = (uint32_t)(h >> 48);
        msg->payload = it->p + OC_WIRE_MSG_HDR_LEN;
        it->p += OC_WIRE_MSG_HDR_LEN + oc__wire_pad8(msg->len);
    }
    return true;
}

/** Skip the first @p n messages (n <= it->left). */
static inline void oc__wire_iter_skip(oc_wire_iter_t *it, uint32_t n)
{
    oc_wire_msg_t m;
    if (it->fixed) {
        it->p += (size_t)n * oc__wire_pad8(it->item_size);
        it->left -= n;
        if (it->col != NULL)
            it->col += 4 * (size_t)n;
        return;
    }
    while (n-- && oc__wire_iter_next(it, &m))
        ;
}

/* ---- runs (wire_runs.c) ------------------------------------------------ */

/** Scratch bytes oc__wire_runs_pack() needs for bodies of up to
 *  @p body_max bytes (the caller allocates it once). */
size_t oc__wire_runs_scratch(size_t body_max);

/**
 * Regroup a bundle body into RUNS layout: the first @p packed bytes of
 * @p body are runs already (an earlier pack), the rest up to @p len mixed
 * messages.  Messages are grouped per (source, destination) in order of
 * first appearance, each group's messages in their order, a run per
 * stretch of one length.  Writes the runs to @p out (room: @p out_cap).
 * Pure; thread-safe on distinct buffers.
 *
 * The output is at most packed + 2 * (len - packed) bytes (a message
 * alone in its run gains 8 bytes of header, an empty one 16 over its 8).
 *
 * @return the runs' length; 0 when @p packed is 0 and the runs would not
 *   be smaller than the mixed body (keep it mixed), or when @p out_cap or
 *   @p scratch_len is too small (the caller's mistake).
 */
size_t oc__wire_runs_pack(const uint8_t *body, size_t packed, size_t len,
                          uint8_t *out, size_t out_cap, void *scratch,
                          size_t scratch_len);

/** Mark the header at @p buf as a RUNS bundle of @p len bytes (after
 *  oc__wire_hdr_write of the mixed one and a pack of its body): the flag,
 *  the length, and the source and destination OC_WIRE_RANK_NONE. */
void oc__wire_hdr_set_runs(void *buf, uint32_t len);

#endif /* OC_WIRE_H */
