/*
 * flow.h — flow telemetry: a per-thread bidirectional flow table (flow.c)
 * and the IPFIX (RFC 7011) message encoder for its records (ipfix.c).
 * Biflows (RFC 5103) of an IPv4 5-tuple and VNI, ended by idle and active
 * timeouts or TCP's close; round-trip times from TCP timestamps (RFC 7323)
 * by the passive method.  What is counted and when a record goes out:
 * docs/esp-ipfix.md, "Inside the flow table".
 *
 * Threading: a table belongs to one thread; records are handed out
 * through a callback (the caller queues them).  No allocation after
 * create.  Trust: packets are hostile, but the table only reads the
 * parser's checked key and the IPv4/TCP header bytes the parser vouched for.
 */
#ifndef OC_PKT_FLOW_H
#define OC_PKT_FLOW_H

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OC_FLOW_NO_VNI 0xffffffffu

/* flowEndReason (IANA IE 136) */
enum {
    OC_FLOW_END_IDLE = 1,
    OC_FLOW_END_ACTIVE = 2,
    OC_FLOW_END_EOF = 3,     /* end of flow detected: TCP FIN/RST */
    OC_FLOW_END_FORCED = 4,  /* the exporter shut down */
};

#define OC_FLOW_RTT_BUCKETS 12
/** Upper bounds (us) of the RTT histogram buckets; one more: +Inf. */
extern const uint32_t oc_flow_rtt_le_us[OC_FLOW_RTT_BUCKETS];

/** Round-trip time samples of one direction (see above). */
typedef struct {
    uint32_t n, min_us, max_us;         /* min/max valid when n > 0 */
    uint64_t sum_us;
    uint32_t b[OC_FLOW_RTT_BUCKETS + 1];/* per bucket (not cumulative) */
} oc_flow_rtt_t;

/** A TCP packet's timestamps option (host order). */
typedef struct {
    uint32_t val, ecr;
} oc_flow_ts_t;

/** One exported record (one direction pair). */
typedef struct {
    uint64_t start_ms, end_ms;          /* UNIX epoch milliseconds */
    uint32_t src, dst;                  /* forward direction, host order */
    uint16_t sport, dport;              /* ICMP: dport = type << 8 | code */
    uint8_t  proto, end_reason;
    uint16_t flags[2];                  /* TCP flags, forward / reverse */
    uint32_t vni;                       /* OC_FLOW_NO_VNI when none */
    uint16_t port;                      /* the port of its first packet */
    uint64_t packets[2], octets[2];     /* forward / reverse, deltas */
    uint64_t first_ms;                  /* the flow's first packet */
    uint64_t total_octets;              /* both ways, since first_ms */
    uint32_t rtt_us;                    /* SYN -> ACK of the handshake, 0 none */
    oc_flow_rtt_t rtt[2];               /* TCP timestamps: toward the
                                         * responder / the initiator */
} oc_flow_rec_t;

typedef void (*oc_flow_emit_fn)(void *arg, const oc_flow_rec_t *r);

typedef struct oc_flow_table oc_flow_table_t;

typedef struct {
    uint32_t capacity;        /**< flows (a power of two), 1024 .. 2^24 */
    uint32_t idle_ms;         /**< idle timeout */
    uint32_t active_ms;       /**< active timeout */
    oc_flow_emit_fn emit;
    void    *arg;
} oc_flow_conf_t;

oc_status_t oc__flow_table_create(const oc_flow_conf_t *c, oc_flow_table_t **out);
/** Emit every flow (end reason forced), then free. */
void oc__flow_table_destroy(oc_flow_table_t *t);

/**
 * Account one IPv4 packet of @p ip_len bytes (its total length) with the
 * TCP flags @p tcp_flags (-1: not TCP, or no TCP header: a fragment);
 * addresses and ports in host order.  @p port: the caller's name for where
 * the packet came in (offcore-dp: its attachment), kept from a flow's
 * first packet and carried in its records (not part of the key).  @p now_ms the caller's clock (UNIX
 * us).  @return false when the flow was new and the table had no room
 * (counted in oc__flow_stats).  Times are microseconds (the handshake RTT
 * needs them); records carry milliseconds.  @p ts: the packet's TCP
 * timestamps option (oc__flow_tcp_ts()), NULL when it has none.
 */
bool oc__flow_update(oc_flow_table_t *t, uint32_t ip_len, int tcp_flags,
                    uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                    uint8_t proto, uint32_t vni, uint16_t port,
                    uint64_t now_us, const oc_flow_ts_t *ts);

/**
 * Find the timestamps option (kind 8, length 10) in TCP header @p tcp of
 * @p hdr_len bytes (its data offset * 4; all of them readable).  Hostile
 * input: reads nothing outside tcp[0..hdr_len), stops at a malformed
 * option.  @return true and *out when present.
 */
bool oc__flow_tcp_ts(const uint8_t *tcp, size_t hdr_len, oc_flow_ts_t *out);

/** Expire flows: visits up to @p budget slots from where the last call
 *  stopped (a whole pass over time).  @return records emitted. */
uint32_t oc__flow_expire(oc_flow_table_t *t, uint64_t now_us, uint32_t budget);

typedef struct {
    uint64_t active;          /**< flows in the table now */
    uint64_t created, ended, no_room;
} oc_flow_stats_t;
void oc__flow_stats(const oc_flow_table_t *t, oc_flow_stats_t *out);

/** Call @p fn for every flow in the table now (its counters since its last
 *  record).  Same thread as the table, or with the table's thread stopped. */
void oc__flow_walk(const oc_flow_table_t *t, oc_flow_emit_fn fn, void *arg);

/* ---------------------------------------------------------------- IPFIX */

#define OC_IPFIX_TEMPLATE_ID 256
#define OC_IPFIX_REC_LEN     74   /* bytes of one data record */

/**
 * Write an IPFIX message header (16 bytes) at @p m: version 10, @p len,
 * export time @p now_s, sequence number @p seq (data records sent before
 * this message), observation domain @p domain.
 */
void oc__ipfix_header(uint8_t *m, uint16_t len, uint32_t now_s, uint32_t seq,
                     uint32_t domain);
/** Write the template set (ID 2, one template: OC_IPFIX_TEMPLATE_ID) at
 *  @p p.  @return its length. */
size_t oc__ipfix_template_set(uint8_t *p);
/** Write one data record (OC_IPFIX_REC_LEN bytes) of @p r at @p p. */
void oc__ipfix_record(uint8_t *p, const oc_flow_rec_t *r);

#endif
