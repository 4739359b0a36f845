/*
 * pkt.h — the packet library's core: buffers, burst ports and the parser.
 *
 *  - oc_pkt_pool_t: a fixed number of fixed-size packet buffers in one
 *    mmap'd area, allocated at start; alloc/free never call malloc.  One
 *    pool per worker thread (not thread-safe): the AF_XDP backend registers
 *    the area as the thread's UMEM and shares it between the sockets of the
 *    ports that thread serves, so a frame received on one port goes out on
 *    the other without a copy.
 *  - oc_port_t: a port with N queues and burst calls in the spirit of
 *    rte_eth_rx_burst / rte_eth_tx_burst: receive up to n, send up to n,
 *    both return counts.  Queue q of every port is served by one thread.
 *    Backends: AF_XDP through libxdp (xdp.c; the default) and DPDK
 *    (dpdk.c, built when pkg-config finds libdpdk), behind one API (port.c).
 *  - oc__pkt_parse(): Ethernet / 802.1Q / 802.1ad / IPv4 / IPv6 / TCP /
 *    UDP / ICMP to a classifier key and a verdict reason (parse.c; pure,
 *    fuzzed, never reads outside the frame).
 *
 * Trust model: frames come from the wire or from a tenant's host: every
 * byte is untrusted; the parser checks every length before reading.
 * Threading: pools, and a port's queue q, belong to one thread each;
 * oc_port_open/close and oc__port_stats are for the control thread.
 */
#ifndef OC_PKT_H
#define OC_PKT_H

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkt/acl/acl.h"

/* ------------------------------------------------------------- buffers */

/** One packet buffer.  data points into the pool's area; len bytes are the
 *  frame.  Valid from alloc/rx until free/tx hands it back. */
typedef struct oc_pkt {
    uint8_t *data;
    uint32_t len;
    uint32_t idx;   /**< buffer index in its pool */
    uint32_t hash;  /**< flow hash (set by the parser) */
    uint16_t port;  /**< rx port index (set by the caller) */
    uint16_t verdict; /**< pipeline scratch: 0 forward, else a drop reason */
    void    *mbuf;    /**< DPDK backend: the rte_mbuf this describes */
} oc_pkt_t;

typedef struct oc_pkt_pool oc_pkt_pool_t;

/** Bytes in front of a buffer's data kept free for the backends. */
#define OC_PKT_HEADROOM 256u

/**
 * Create a pool of @p count buffers of @p buf_size bytes each (a power of
 * two, 2048 .. 65536; 4096 holds a 1500-byte MTU frame in every backend).
 * All memory is mapped and touched now.
 * @return OC_OK and *out; OC_ERR_INVALID_PARAM; OC_ERR_NO_MEMORY.
 */
oc_status_t oc__pkt_pool_create(uint32_t count, uint32_t buf_size,
                               oc_pkt_pool_t **out);
/** Free the pool.  Every port using it must be closed first.  NULL: no-op. */
void oc__pkt_pool_destroy(oc_pkt_pool_t *pool);
/** Take up to @p n buffers (len 0, data at the headroom).  @return how many. */
uint32_t oc__pkt_alloc_bulk(oc_pkt_pool_t *pool, oc_pkt_t **pkts, uint32_t n);
/** Give buffers back. */
void oc__pkt_free_bulk(oc_pkt_pool_t *pool, oc_pkt_t *const *pkts, uint32_t n);
uint32_t oc__pkt_pool_avail(const oc_pkt_pool_t *pool);
uint32_t oc__pkt_pool_count(const oc_pkt_pool_t *pool);
uint32_t oc__pkt_pool_buf_size(const oc_pkt_pool_t *pool);
/** Largest frame a buffer holds (buf_size - OC_PKT_HEADROOM). */
uint32_t oc__pkt_pool_max_frame(const oc_pkt_pool_t *pool);

/* --------------------------------------------------------------- ports */

typedef enum {
    OC_PORT_XDP_AUTO = 0, /**< native XDP where the driver has it, else generic */
    OC_PORT_XDP_NATIVE,
    OC_PORT_XDP_GENERIC,
} oc_port_xdp_mode_t;

typedef struct {
    const char *ifname;
    uint32_t    nqueues;    /**< queues 0..nqueues-1, one thread each */
    oc_pkt_pool_t *const *pools; /**< nqueues pools: queue q's buffers */
    oc_port_xdp_mode_t xdp_mode;
    bool        zero_copy;  /**< ask for zero-copy (fails where unsupported) */
    uint32_t    ring_size;  /**< rx/tx/fill/completion ring entries (power of 2) */
} oc_port_conf_t;

typedef struct oc_port oc_port_t;

/** Per-port counters (sums over queues). */
typedef struct {
    uint64_t rx_packets, rx_bytes;
    uint64_t tx_packets, tx_bytes;
    uint64_t tx_full;     /**< tx calls that could not take every packet */
    uint64_t rx_no_buf;   /**< refills short of buffers (back-pressure to the kernel) */
    uint64_t kernel_rx_dropped; /**< XDP_STATISTICS: rx_dropped + rx_ring_full + fill empty */
    uint64_t kernel_tx_invalid;
} oc_port_stats_t;

/**
 * Open @p conf->ifname with the AF_XDP backend: one socket per queue on
 * queue q, sharing queue q's pool with every other port opened on it.
 * Loads libxdp's default XSK program.  A quick re-open can meet EBUSY from
 * the kernel: retried for up to a second.
 * @return OC_OK and *out; OC_ERR_INVALID_PARAM; OC_ERR_CONFIG (no such
 *   interface, rx queues not exactly nqueues (frames on a queue without a
 *   socket would bypass offcore-dp), zero-copy not supported: logged);
 *   OC_ERR_TRANSPORT (the kernel refused the socket or program: logged);
 *   OC_ERR_NO_MEMORY.
 */
oc_status_t oc__port_open_xdp(const oc_port_conf_t *conf, oc_port_t **out);

typedef enum {
    OC_PORT_DPDK_AF_XDP = 0, /**< DPDK's net_af_xdp driver on the interface */
    OC_PORT_DPDK_AF_PACKET,  /**< DPDK's net_af_packet driver */
} oc_port_dpdk_pmd_t;

/**
 * Open @p conf->ifname through DPDK (the EAL starts on the first call:
 * --no-huge --no-pci --no-shconf).  @p conf->pools is not used: DPDK ports
 * take their buffers from per-queue mbuf pools of the backend.
 * @return OC_OK and *out; OC_ERR_UNSUPPORTED (built without libdpdk);
 *   OC_ERR_CONFIG (interface, queues); OC_ERR_TRANSPORT (EAL or device
 *   setup failed: logged); OC_ERR_NO_MEMORY.
 */
oc_status_t oc__port_open_dpdk(const oc_port_conf_t *conf,
                              oc_port_dpdk_pmd_t pmd, oc_port_t **out);
/** Whether this build has the DPDK backend. */
bool oc__pkt_have_dpdk(void);

/** Give back frames received on @p port's queue @p q that will not be sent
 *  (dropped by the pipeline, or refused by a tx burst). */
void oc__port_free_bulk(oc_port_t *port, uint32_t q, oc_pkt_t *const *pkts,
                       uint16_t n);

/** Close: removes the sockets (and the XDP program when no other socket
 *  uses it).  No queue may be in use.  NULL is a no-op. */
void oc__port_close(oc_port_t *port);

/**
 * Receive up to @p n frames from queue @p q.  Never blocks.  The caller
 * owns the returned buffers until it frees them or a tx_burst takes them.
 * Refills the kernel's fill ring from the queue's pool.
 * @return frames received (0 .. n).
 */
uint16_t oc__port_rx_burst(oc_port_t *port, uint32_t q, oc_pkt_t **pkts,
                          uint16_t n);

/**
 * Send up to @p n frames on queue @p q (buffers of the queue's pool).  The
 * port takes the first k it returns and gives them back to the pool when
 * the kernel is done; pkts[k..n) stay the caller's (the ring is full:
 * back-pressure — retry or count them).  Reaps completions first.
 * @return k, frames taken (0 .. n).
 */
uint16_t oc__port_tx_burst(oc_port_t *port, uint32_t q, oc_pkt_t **pkts,
                          uint16_t n);

/** Reap completed sends and kick the kernel if it waits for a wakeup;
 *  call when idle so that buffers come back.  @return frames reaped. */
uint32_t oc__port_tx_reap(oc_port_t *port, uint32_t q);

/** The fd to poll() for POLLIN on queue @p q (sleep when idle), or -1
 *  when the backend has none (DPDK's virtual devices): nap instead. */
int oc__port_fd(const oc_port_t *port, uint32_t q);

const char *oc__port_name(const oc_port_t *port);
/** "native copy", "generic copy", "native zero-copy"... static string. */
const char *oc__port_mode(const oc_port_t *port);

/** Sum of the counters.  Reads other threads' counters with relaxed loads:
 *  thread-safe against the queues' threads. */
void oc__port_stats(const oc_port_t *port, oc_port_stats_t *out);

/* -------------------------------------------------------------- parser */

/**
 * Why a frame got the verdict it got.  OC_PKT_R_IPV4 (and _IPV4_FRAG) are
 * the classifiable frames; every other reason has a policy (pass or drop,
 * oc__pkt_default_policy) applied by the pipeline and a counter.
 */
typedef enum {
    OC_PKT_R_IPV4 = 0,        /**< IPv4, key complete */
    OC_PKT_R_IPV4_FRAG,       /**< IPv4 non-first fragment: no L4 header, ports 0 */
    OC_PKT_R_IPV6,            /**< IPv6 (classifier rules are IPv4 only) */
    OC_PKT_R_ARP,             /**< ARP: needed for IPv4 neighbours */
    OC_PKT_R_RUNT,            /**< shorter than an Ethernet header (or a VLAN tag) */
    OC_PKT_R_OVERSIZED,       /**< longer than the configured maximum frame */
    OC_PKT_R_UNKNOWN_ETHERTYPE, /**< neither IPv4, IPv6 nor ARP */
    OC_PKT_R_VLAN_DEPTH,      /**< more than two VLAN tags */
    OC_PKT_R_BAD_IP_VERSION,  /**< version field disagrees with the ethertype */
    OC_PKT_R_BAD_IP_HDR_LEN,  /**< IPv4 IHL < 5 or past the frame */
    OC_PKT_R_BAD_IP_TOTAL_LEN,/**< IPv4 total / IPv6 payload length past the frame or < header */
    OC_PKT_R_BAD_L4,          /**< L4 header truncated, or TCP data offset < 5 / past the packet */
    OC_PKT_R_IPV6_EXT,        /**< IPv6 extension header chain truncated or too long */
    OC_PKT_R_MAX
} oc_pkt_reason_t;

typedef enum { OC_PKT_PASS = 0, OC_PKT_DROP = 1 } oc_pkt_policy_t;

/** Parser result. */
typedef struct {
    oc_acl_key_t key;   /**< IPv4 5-tuple, host order (IPV4 / IPV4_FRAG) */
    uint32_t     hash;  /**< symmetric flow hash (both directions equal) */
    uint16_t     l3_off;
    uint16_t     ethertype; /**< innermost */
    uint8_t      vlans;
    uint8_t      reason;    /**< oc_pkt_reason_t */
    uint8_t      is_fragment; /**< any IPv4/IPv6 fragment (first included) */
    uint8_t      l4_proto;  /**< IPv6: the last next header (0: see l4_off) */
    uint16_t     l4_off;    /**< IPv6: its L4 header's offset in the frame,
                             *   past the extension headers; 0 for a
                             *   non-first fragment and for IPv4 */
    uint16_t     l4_end;    /**< IPv6: the offset just past its payload */
} oc_pkt_meta_t;

/** "ipv4", "runt", ... (the Prometheus label); static string. */
const char *oc__pkt_reason_name(oc_pkt_reason_t r);
/** Reason by name; -1 when unknown. */
int oc__pkt_reason_from_name(const char *name);
/** The documented default policy of each reason (see parse.c). */
oc_pkt_policy_t oc__pkt_default_policy(oc_pkt_reason_t r);

/**
 * Parse @p len bytes at @p frame.  Frames longer than @p max_frame are
 * OC_PKT_R_OVERSIZED without being read.  Pure and thread-safe; reads
 * nothing outside frame[0..len).
 * @return the reason (also in @p out->reason); @p out always filled (key
 *   zero where not IPv4).
 */
oc_pkt_reason_t oc__pkt_parse(const uint8_t *frame, uint32_t len,
                             uint32_t max_frame, oc_pkt_meta_t *out);

#endif
