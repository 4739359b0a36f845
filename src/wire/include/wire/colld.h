/*
 * colld.h — the messages of the collectives in the agent placement, on
 * the data transport between a rank and its agent (active messages
 * OC_AM_COLL and OC_AM_COLL_DONE, am.h): a rank starts a collective with
 * one descriptor (kind, dtype, op, count, root, sequence number; for
 * all-to-allv its count and displacement arrays; with OC_COLLD_F_CMA its
 * pid and buffers, for the agent to move the data itself), and the agent
 * answers DONE (or OC_COLLD_FALLBACK: send by UCX).  docs/coll.md,
 * "Agent placement".  Little-endian, as the bundles.
 *
 * Trust: a descriptor comes from a rank; the agent decodes it with
 * oc__colld_decode() before using anything in it (fuzzed:
 * tests/fuzz/fuzz_colld.c).  Pure functions; thread-safe.
 */
#ifndef OC_WIRE_COLLD_H
#define OC_WIRE_COLLD_H

#include <offcore/offcore.h>
#include "util/reject.h"
#include <stddef.h>
#include <stdint.h>

#define OC_COLLD_MAGIC   0x444c434fu /* "OCLD" */
#define OC_COLLD_VERSION 2
#define OC_COLLD_DONE_MAGIC 0x4e44434fu /* "OCDN" */

enum {
    OC_COLLD_ALLREDUCE = 1,
    OC_COLLD_ALLTOALLV = 2, /* all-to-all is an all-to-allv */
    OC_COLLD_BCAST     = 3,
    OC_COLLD_BARRIER   = 4,
};

/** Flags: the memory block is set and the agent may move the data
 *  (allreduce: the vectors; all-to-allv: the send and receive buffers,
 *  as far as their blocks reach). */
#define OC_COLLD_F_CMA 1u
/** Flags (allreduce): the contribution follows the descriptor, count x
 *  element size bytes (at most OC_COLLD_INLINE_MAX), and the agent's DONE
 *  carries the result after its 16 bytes: one message each way, no tagged
 *  transfer.  All-to-allv: the send buffer's extent (oc__colld_extent() x
 *  element size, 0 when it sends nothing) follows instead, and DONE
 *  carries the received blocks packed in source rank order (their counts
 *  x element size, at most OC_COLLD_INLINE_MAX too), for the rank to
 *  place at its displacements.  Broadcast (count x element size at most
 *  OC_COLLD_INLINE_MAX): the root's descriptor carries the data, the
 *  others' nothing, and every other rank's DONE carries the data. */
#define OC_COLLD_F_INLINE 2u
/** Flags (all-to-allv with OC_COLLD_F_CMA): the rank copies its own block
 *  (from itself to itself) in place; the agent neither reads nor writes
 *  it (it would take two copies through the agent's core for one). */
#define OC_COLLD_F_SELF 4u
/** The largest contribution a descriptor carries inline, bytes. */
#define OC_COLLD_INLINE_MAX 4096
/** DONE status: "not by memory: send the contribution and receive the
 *  result by UCX" (a status no collective ends with). */
#define OC_COLLD_FALLBACK 1

/** A decoded descriptor.  The pointers point into the decoded buffer. */
typedef struct {
    uint8_t        kind, dtype, op;
    uint32_t       flags;            /* OC_COLLD_F_* */
    uint32_t       pid;              /* F_CMA: the rank's process id */
    uint64_t       saddr, slen;      /* F_CMA: send buffer, bytes */
    uint64_t       raddr, rlen;      /* F_CMA: receive buffer, bytes */
    uint32_t       seq, root;
    uint64_t       count;            /* elements (allreduce, bcast) */
    uint32_t       nv;               /* alltoallv: the job's size, else 0 */
    const uint8_t *v;                /* 4 * nv little-endian uint64: scounts,
                                        sdispls, rcounts, rdispls */
    const uint8_t *data;             /* F_INLINE: the contribution */
    size_t         dlen;             /* ... its bytes (all-to-allv: the send
                                        extent; bcast: count x element size
                                        from the root, 0 from the others;
                                        allreduce: count x element size,
                                        which encode uses instead) */
} oc_colld_t;

/** Fixed part of a descriptor, in bytes (32, then the memory block: pid,
 *  zero, saddr, slen, raddr, rlen). */
#define OC_COLLD_HDR 72

/** Bytes of the encoding of @p d (d->v ignored: 32 * nv; with
 *  OC_COLLD_F_INLINE, the contribution's count x element size more, or
 *  d->dlen for an all-to-allv). */
size_t oc__colld_size(const oc_colld_t *d);
/** Encode @p d (v: 4 * nv host-order uint64 values in @p vals; with
 *  OC_COLLD_F_INLINE, the contribution from d->data) into @p buf of
 *  oc__colld_size(d) bytes. */
void oc__colld_encode(const oc_colld_t *d, const uint64_t *vals, void *buf);
/** The elements a decoded all-to-allv descriptor's blocks reach: the
 *  largest count + displacement of a block with a nonzero count, of the
 *  send side (@p which 0) or the receive side (2). */
uint64_t oc__colld_extent(const oc_colld_t *d, unsigned which);
/** Element @p i of array @p which (0 scounts, 1 sdispls, 2 rcounts,
 *  3 rdispls) of a decoded all-to-allv descriptor. */
uint64_t oc__colld_v(const oc_colld_t *d, unsigned which, uint32_t i);

/**
 * Decode and check a descriptor from a rank of a job of @p size ranks.
 * @return OC_OK, or OC_ERR_WIRE_MAGIC / OC_ERR_WIRE_VERSION (not one),
 * OC_ERR_WIRE_LENGTH (the length disagrees with @p len),
 * OC_ERR_INVALID_PARAM (kind, dtype, op, root, nv out of range; a count
 * or displacement whose byte offset would pass 2^48; unknown flags; a
 * memory block on another kind than allreduce or all-to-allv, with a zero
 * pid or address, lengths other than count x element size (allreduce) or
 * the extents of the blocks (all-to-allv: oc__colld_extent() x element
 * size, neither zero), a range that wraps past 2^63; or a memory block
 * without its flag; OC_COLLD_F_INLINE on
 * a barrier, with OC_COLLD_F_CMA, an allreduce or broadcast with no
 * element or more than OC_COLLD_INLINE_MAX bytes, an all-to-allv whose
 * send extent or received blocks pass OC_COLLD_INLINE_MAX bytes; a
 * broadcast's inline length is either count x element size or 0, which
 * the agent checks against the sender being the root).
 */
oc_status_t oc__colld_decode(const void *buf, size_t len, uint32_t size,
                            oc_colld_t *d);

/** The sequence number of a descriptor oc__colld_decode() rejected, when
 *  its fixed part was whole and of this version (so the collective it
 *  meant is known and can be failed rather than waited for).
 *  @return 1 and *seq_out, or 0. */
int oc__colld_seq(const void *buf, size_t len, uint32_t *seq_out);

/** What a descriptor oc__colld_decode() rejected says it is, when its
 *  fixed part was whole and of this version and its kind is one of the
 *  four (for a broadcast, with a root below @p size).  Not trusted: the
 *  agent uses it only to choose which messages to send the other agents
 *  when the collective fails, none of them a rank's data.
 *  @return 1 and *kind_out and *root_out, or 0. */
int oc__colld_shape(const void *buf, size_t len, uint32_t size,
                    uint8_t *kind_out, uint32_t *root_out);

/** The agent's answer: collective @p seq ended with @p status. */
typedef struct {
    uint32_t magic;
    uint32_t seq;
    int32_t  status;
    uint32_t pad;
} oc_colld_done_t;

/* An agent's "this collective failed here" to the other agents of the job
 * (src/agent/router/rcoll.c): in place of a step's data, under the step's
 * tag with the failure bit set, 8 bytes: magic, status.  From an
 * authenticated agent, and still decoded strictly. */
#define OC_COLLD_FAIL_MAGIC 0x4c46434fu /* "OCFL" */
#define OC_COLLD_FAIL_LEN   8

/** Encode "failed with @p status" into @p buf of OC_COLLD_FAIL_LEN bytes. */
void oc__colld_fail_encode(oc_status_t status, void *buf);

/**
 * Decode a failure message of @p len bytes at @p buf.
 * @return OC_OK and *status_out, one of the statuses a collective of the
 * agent placement ends with (OC_ERR_COLL_MISMATCH, OC_ERR_COLL_COUNT,
 * OC_ERR_COLL_MEMORY, OC_ERR_COLL_PEER_FAILED, OC_ERR_NO_MEMORY,
 * OC_ERR_UNSUPPORTED); or OC_ERR_WIRE_LENGTH (not OC_COLLD_FAIL_LEN
 * bytes), OC_ERR_WIRE_MAGIC, OC_ERR_INVALID_PARAM (another status).
 */
oc_status_t oc__colld_fail_decode(const void *buf, size_t len,
                                 oc_status_t *status_out);

/* Tags of the agent placement (placed.c, src/agent/router/rcoll.c): a rank's
 * contribution to its agent (job, sequence, rank) and a block of its
 * result from the agent (sequence, source rank).  The top 4 bits keep them
 * apart from the agents' own messages (0xC); a rank in the agent placement
 * runs no inline collective, whose tags could reach these values. */
#define OC__COLL_CONTRIB_TAG(job, seq, rank)                                  \
    (((uint64_t)0xD << 60) | ((uint64_t)((job) & 0xffff) << 44) |            \
     ((uint64_t)((seq) & 0xfffff) << 24) | (uint64_t)((rank) & 0xffffff))
#define OC__COLL_RESULT_TAG(seq, src)                                         \
    (((uint64_t)0xE << 60) | ((uint64_t)((seq) & 0xfffff) << 24) |           \
     (uint64_t)((src) & 0xffffff))

#endif
