/*
 * ct.h — connection tracking for offcore-dp's tenant stages: TCP (states,
 * timeouts, sequence windows), UDP, ICMP echo pairs and related errors,
 * other protocols as generic flows; one table per family (IPv4 or IPv6).
 * Sized once at oc__ct_create(), never allocating in oc__ct_track(); a
 * full table evicts only flows not yet established.  Memory per flow and
 * the eviction policy: docs/tenants.md, "Inside the table".
 *
 * Threading: a table belongs to one thread, chosen by oc__ct_thread_of()
 * of the symmetric flow hash; oc__ct_count() and oc__ct_stats() may be
 * called from any thread (relaxed loads).  Trust: packets are hostile:
 * oc__ct_track() checks every length (fuzzed: tests/fuzz/fuzz_tenant.c).
 */
#ifndef OC_PKT_CT_H
#define OC_PKT_CT_H

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Entries a full table examines for a victim. */
#define OC_CT_EVICT_SCAN 32u
/** Largest capacity oc__ct_create() accepts. */
#define OC_CT_MAX_FLOWS (1u << 26)

typedef enum {
    OC_CT_TCP_NONE = 0,
    OC_CT_TCP_SYN_SENT,   /**< SYN seen from the originator */
    OC_CT_TCP_SYN_RECV,   /**< SYN+ACK seen from the responder */
    OC_CT_TCP_ESTABLISHED,/**< the handshake's last ACK seen */
    OC_CT_TCP_FIN_WAIT,   /**< one side sent FIN */
    OC_CT_TCP_LAST_ACK,   /**< both sides sent FIN */
    OC_CT_TCP_TIME_WAIT,  /**< both FINs acknowledged */
    OC_CT_TCP_CLOSE,      /**< RST seen */
    OC_CT_TCP_NSTATES
} oc_ct_tcp_state_t;

/** Timeouts in seconds (defaults: oc__ct_timeouts_default(), Linux's). */
typedef struct {
    uint32_t tcp[OC_CT_TCP_NSTATES];
    uint32_t udp_unreplied, udp_replied;
    uint32_t icmp;
    uint32_t generic;
} oc_ct_timeouts_t;

typedef struct {
    uint32_t capacity;       /**< flows, 1 .. OC_CT_MAX_FLOWS */
    oc_ct_timeouts_t to;
    bool     ipv6;           /**< an IPv6 table (IPv4 packets untracked) */
} oc_ct_conf_t;

typedef enum {
    OC_CT_NEW = 0,   /**< a flow was created by this packet (original direction) */
    OC_CT_EST,       /**< the packet belongs to a tracked flow (either direction) */
    OC_CT_RELATED,   /**< an ICMP error about a tracked flow */
    OC_CT_NO_CONN,   /**< no flow, and this packet may not (or cannot) open one */
    OC_CT_INVALID,   /**< bad for its flow: out of window, bad flags, truncated */
    OC_CT_FULL,      /**< a flow was needed and the table holds only live established ones */
    OC_CT_UNTRACKED, /**< a non-first fragment (another family: INVALID) */
    OC_CT_NRESULTS
} oc_ct_result_t;

/** Why OC_CT_INVALID. */
typedef enum {
    OC_CT_WHY_NONE = 0,
    OC_CT_WHY_MALFORMED,  /**< lengths, or a truncated L4 header */
    OC_CT_WHY_WINDOW,     /**< TCP sequence outside the tracked window */
    OC_CT_WHY_FLAGS,      /**< TCP flags impossible in the flow's state */
    OC_CT_WHY_ICMP,       /**< ICMP type not tracked (neither echo nor error) */
} oc_ct_why_t;

/** What oc__ct_track() saw (set for every result). */
typedef struct {
    uint8_t  reply;      /**< 1: packet goes responder -> originator */
    uint8_t  why;        /**< oc_ct_why_t when OC_CT_INVALID */
    uint8_t  proto;
    uint8_t  state;      /**< the flow's TCP state after this packet */
} oc_ct_info_t;

/** A flow as oc__ct_walk() shows it: originator's view. */
typedef struct {
    uint16_t zone;
    uint8_t  proto, state;
    uint32_t src_ip, dst_ip;   /**< host order, originator -> responder
                                *   (IPv4; 0 in an IPv6 table's flows) */
    uint16_t sport, dport;
    uint8_t  family;           /**< 4 or 6 */
    uint8_t  src6[16], dst6[16]; /**< IPv6: originator -> responder */
    bool     assured;          /**< answered / established */
    uint32_t expires_in_ms;
    uint32_t packets[2];       /**< original, reply */
} oc_ct_flow_t;

/** Counters of one table (monotonic except flows). */
typedef struct {
    uint64_t flows;       /**< live now */
    uint64_t capacity;
    uint64_t created, evicted, expired, full, closed;
    uint64_t out_of_window, invalid, no_conn;
} oc_ct_stats_t;

typedef struct oc_ct oc_ct_t;

void oc__ct_timeouts_default(oc_ct_timeouts_t *to);

/** Bytes oc__ct_create() maps for @p capacity flows (IPv4). */
size_t oc__ct_mem_for(uint32_t capacity);
/** The same for an IPv6 table (the addresses beside the entries). */
size_t oc__ct_mem_for6(uint32_t capacity);

/**
 * Create a table for @p conf->capacity flows: all memory mapped and
 * touched now (oc__ct_mem_for()).
 * @return OC_OK and *out; OC_ERR_INVALID_PARAM (capacity 0 or too large);
 *   OC_ERR_NO_MEMORY.
 */
oc_status_t oc__ct_create(const oc_ct_conf_t *conf, oc_ct_t **out);
/** NULL is a no-op. */
void oc__ct_destroy(oc_ct_t *ct);
size_t oc__ct_mem_bytes(const oc_ct_t *ct);

/**
 * Track one IPv4 (IPv6 in an IPv6 table) packet (@p ip, @p len bytes from
 * its IP header) of tenant
 * zone @p zone at time @p now_ms (monotonic).  With @p allow_new false a
 * packet of no flow is OC_CT_NO_CONN and nothing is created (wire-side
 * traffic under default deny); with true a TCP SYN, UDP, ICMP echo request
 * or other protocol's packet creates its flow.
 * @return the result; @p info always filled.
 */
oc_ct_result_t oc__ct_track(oc_ct_t *ct, uint16_t zone, const uint8_t *ip,
                           uint32_t len, uint64_t now_ms, bool allow_new,
                           oc_ct_info_t *info);

/**
 * Whether packet @p i of a burst, which would open a flow (no live flow
 * has it, and it is a TCP SYN, UDP, ICMP echo request or other protocol's
 * packet), may create one.  Called only when that is the question, in
 * packet order; @p arg is oc__ct_track_burst()'s.
 */
typedef bool (*oc_ct_open_fn)(void *arg, uint32_t i);

/**
 * Track @p n packets (@p ip[i], @p len[i] bytes from their IP headers) of
 * zone @p zone: the results and infos are exactly those of oc__ct_track()
 * on each packet in turn, with allow_new = @p may_open(@p arg, i) (NULL:
 * true), but the table's cache misses of a whole chunk of packets overlap
 * (keys and hashes first, then prefetches of their index slots and
 * entries, then the packets in order).
 * @p res and @p info receive n elements each.
 */
void oc__ct_track_burst(oc_ct_t *ct, uint16_t zone, const uint8_t *const *ip,
                       const uint32_t *len, uint32_t n, uint64_t now_ms,
                       oc_ct_open_fn may_open, void *arg,
                       oc_ct_result_t *res, oc_ct_info_t *info);

/** Reclaim expired flows among the next @p budget entries of the sweep.
 *  @return flows reclaimed. */
uint32_t oc__ct_expire(oc_ct_t *ct, uint64_t now_ms, uint32_t budget);

/** Live flows.  Any thread. */
uint32_t oc__ct_count(const oc_ct_t *ct);
/** Any thread. */
void oc__ct_stats(const oc_ct_t *ct, oc_ct_stats_t *out);

/** Remove every flow of @p zone (-1: all).  @return flows removed. */
uint32_t oc__ct_flush(oc_ct_t *ct, int zone);

/** Call @p fn for each live flow (of @p zone, -1: all) until it returns
 *  nonzero.  @return flows shown. */
typedef int (*oc_ct_walk_fn)(void *arg, const oc_ct_flow_t *f);
uint32_t oc__ct_walk(const oc_ct_t *ct, int zone, uint64_t now_ms,
                    oc_ct_walk_fn fn, void *arg);

/** The worker that owns a flow of symmetric hash @p hash (oc_pkt_meta_t.hash). */
static inline uint32_t oc__ct_thread_of(uint32_t hash, uint32_t nthreads)
{
    return (uint32_t)(((uint64_t)hash * nthreads) >> 32);
}

const char *oc__ct_result_name(oc_ct_result_t r);
const char *oc__ct_tcp_state_name(oc_ct_tcp_state_t s);

#endif
