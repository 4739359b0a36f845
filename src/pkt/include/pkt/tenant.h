/*
 * tenant.h — the per-packet pieces of tenant isolation that are not
 * connection tracking (ct.h): VXLAN encapsulation and decapsulation
 * (RFC 7348, UDP 4789), the anti-spoofing check of a host-side frame
 * against its attachment's own MAC and IPv4 address (ARP included) or
 * IPv6 addresses (neighbor discovery included), a token-bucket policer,
 * and the answer to ARP requests for the tunnel end's own address.  The
 * tunnel itself (the outer headers) is IPv4.
 *
 * All pure functions over caller-owned memory: no allocation, no locks.
 * A policer belongs to one thread.  Trust model: frames are hostile; the
 * decapsulator checks every length and is fuzzed (tests/fuzz/fuzz_tenant.c).
 */
#ifndef OC_PKT_TENANT_H
#define OC_PKT_TENANT_H

#include "pkt/pkt.h"

#include <stdbool.h>
#include <stdint.h>

#define OC_VXLAN_PORT    4789
/** Outer Ethernet + IPv4 + UDP + VXLAN header bytes. */
#define OC_VXLAN_OVERHEAD 50u
#define OC_VXLAN_VNI_MAX  0xffffffu

/** The local and remote tunnel endpoints (outer headers). */
typedef struct {
    uint8_t  local_mac[6], remote_mac[6];
    uint32_t local_ip, remote_ip; /**< host order */
} oc_vxlan_tun_t;

/**
 * Write the outer headers in the OC_VXLAN_OVERHEAD bytes before @p inner
 * (the caller guarantees them: buffer headroom) for an inner frame of
 * @p len bytes in network @p vni.  The UDP source port is taken from
 * @p hash in 49152..65535 (RFC 7348 5: entropy for the fabric's ECMP); the
 * UDP checksum is 0 (allowed over IPv4); the IPv4 checksum is computed
 * and DF set (VXLAN must not be fragmented).
 * @return the outer frame's start (inner - OC_VXLAN_OVERHEAD).
 */
uint8_t *oc__vxlan_encap(uint8_t *inner, uint32_t len, const oc_vxlan_tun_t *t,
                        uint32_t vni, uint32_t hash);

/**
 * The outer headers of one tunnel and VNI, prepared once
 * (oc__vxlan_hdr_init) and put in front of each inner frame with one 50-byte
 * copy (oc__vxlan_encap_hdr), which then patches only what differs per
 * frame: the lengths, the UDP source port and the IPv4 checksum (from the
 * template's partial sum, RFC 1071's one's complement arithmetic).
 */
typedef struct {
    uint8_t  b[OC_VXLAN_OVERHEAD];
    uint32_t sum; /**< IPv4 header words but the total length and checksum */
} oc_vxlan_hdr_t;

void oc__vxlan_hdr_init(oc_vxlan_hdr_t *h, const oc_vxlan_tun_t *t,
                       uint32_t vni);
/** oc__vxlan_encap() with a prepared template: the same bytes. */
uint8_t *oc__vxlan_encap_hdr(uint8_t *inner, uint32_t len,
                            const oc_vxlan_hdr_t *h, uint32_t hash);

/**
 * The tunnel end's ARP responder: when @p frame (@p len bytes, from the
 * fabric) is an Ethernet/IPv4 ARP request (RFC 826) for @p ip, sent to
 * broadcast or to @p mac by a unicast sender, rewrite it in place into the
 * reply from (@p mac, @p ip) to that sender (padding zeroed), as a host
 * answers for its own address.  Anything else is left untouched and not
 * answered: a request for another address (a DPU never answers for what it
 * does not own), replies, gratuitous announcements (sender address = target
 * address), VLAN tags, truncated packets.  Reads nothing outside
 * frame[0..len) (fuzzed).
 * @return true when @p frame now holds a reply to send back on its port.
 */
bool oc__arp_answer(uint8_t *frame, uint32_t len, const uint8_t mac[6],
                   uint32_t ip);

typedef enum {
    OC_VXLAN_OK = 0,
    OC_VXLAN_NOT_VXLAN,  /**< well-formed, but not IPv4/UDP to port 4789 (or not to us) */
    OC_VXLAN_SHORT,      /**< outer headers or VXLAN header truncated */
    OC_VXLAN_BAD_OUTER,  /**< outer IPv4 lengths bad, or fragmented */
    OC_VXLAN_BAD_FLAGS,  /**< the I flag (VNI valid) is not set */
    OC_VXLAN_BAD_INNER,  /**< inner frame shorter than an Ethernet header */
    OC_VXLAN_NREASONS
} oc_vxlan_reason_t;

typedef struct {
    uint32_t vni;
    uint32_t inner_off, inner_len; /**< the inner frame within the outer */
    uint32_t src_ip;               /**< outer source (host order) */
} oc_vxlan_rx_t;

/**
 * Check a frame from the fabric: Ethernet, IPv4 to @p local_ip (0: any),
 * UDP to 4789, VXLAN with the I flag.  Reads nothing outside frame[0..len).
 * @return the reason; @p out set when OC_VXLAN_OK.
 */
oc_vxlan_reason_t oc__vxlan_decap(const uint8_t *frame, uint32_t len,
                                 uint32_t local_ip, oc_vxlan_rx_t *out);

/** "ok", "not_vxlan", "short", ... (a Prometheus label); static string. */
const char *oc__vxlan_reason_name(oc_vxlan_reason_t r);

typedef enum {
    OC_SPOOF_OK = 0,
    OC_SPOOF_SRC_MAC,   /**< Ethernet source is not the attachment's */
    OC_SPOOF_SRC_IP,    /**< IPv4 source is not the attachment's */
    OC_SPOOF_ARP,       /**< ARP sender MAC or IP is not the attachment's */
    OC_SPOOF_OTHER,     /**< neither IPv4, IPv6 nor ARP */
    OC_SPOOF_ND,        /**< IPv6 neighbor discovery a host may not send:
                         *   an NA for an address not its own, a link-layer
                         *   address option not its MAC, a router
                         *   advertisement or redirect, a malformed option */
} oc_spoof_t;

/**
 * Anti-spoofing of a frame a tenant's host sent (@p m: its parse): the
 * Ethernet source must be @p mac; an IPv4 source must be @p ip; an ARP
 * packet's sender hardware address must be @p mac and its sender protocol
 * address @p ip or 0.0.0.0 (an RFC 5227 probe): a host can neither answer
 * nor announce (gratuitous ARP) an address it does not own.
 */
oc_spoof_t oc__spoof_check(const uint8_t *frame, uint32_t len,
                          const oc_pkt_meta_t *m, const uint8_t mac[6],
                          uint32_t ip);

/* ----------------------------------------------------------- IPv6 */

/** An attachment's IPv6 addresses: those listed, and always the
 *  link-local fe80::/64 address derived from its MAC (modified EUI-64,
 *  RFC 4291 appendix A: what Linux configures by default). */
#define OC_TENANT_IP6_MAX 4 /* listed addresses per attachment */
typedef struct {
    uint8_t  n;
    uint8_t  a[OC_TENANT_IP6_MAX][16];
    uint8_t  ll[16]; /**< link-local, set by oc__ip6_set_ll() */
} oc_ip6_set_t;

/** Fill @p s->ll from @p mac (modified EUI-64). */
void oc__ip6_set_ll(oc_ip6_set_t *s, const uint8_t mac[6]);
/** Whether @p a (16 bytes) is one of @p s's (listed or link-local). */
bool oc__ip6_owns(const oc_ip6_set_t *s, const uint8_t *a);

/** ICMPv6 types the tenant stages treat as link control (neighbor
 *  discovery and MLD): they pass between an attachment and its tenant
 *  without security groups or conntrack, after anti-spoofing. */
bool oc__icmp6_is_link(uint8_t type);

/**
 * The ICMPv6 type of IPv6 frame @p f (@p m: its parse, OC_PKT_R_IPV6),
 * or -1 when it is not ICMPv6 or its header is short.  When it is a
 * neighbor solicitation or advertisement with its target, @p target
 * points at it (16 bytes inside @p f), else NULL.
 */
int oc__icmp6_type(const uint8_t *f, uint32_t len, const oc_pkt_meta_t *m,
                   const uint8_t **target);

/**
 * Anti-spoofing of an IPv6 frame a tenant's host sent (@p m: its parse,
 * OC_PKT_R_IPV6): the Ethernet source must be @p mac; the IPv6 source one
 * of @p own (listed or link-local), or :: for a neighbor solicitation
 * (duplicate address detection, RFC 4862) or an MLD report (RFC 3590: a
 * host reports before it has an address); neighbor discovery must not
 * claim what is not the host's: an advertisement's target must be its
 * own address, a source or target link-layer address option its MAC, and
 * router advertisements and redirects (a router's messages) are refused.
 * Reads nothing outside f[0..len) (fuzzed).
 */
oc_spoof_t oc__spoof_check6(const uint8_t *f, uint32_t len,
                            const oc_pkt_meta_t *m, const uint8_t mac[6],
                            const oc_ip6_set_t *own);

/** Token bucket: @p rate bytes per second, @p burst bytes deep. */
typedef struct {
    uint64_t rate;     /**< bytes per second; 0: unlimited */
    uint64_t burst;    /**< bytes */
    uint64_t tokens;   /**< bytes x 1e9 (no rounding loss per packet) */
    uint64_t last_ns;
} oc_policer_t;

void oc__policer_init(oc_policer_t *p, uint64_t rate_bytes, uint64_t burst_bytes,
                     uint64_t now_ns);
/** Take @p bytes at @p now_ns.  @return true: conforms (forward); false:
 *  exceeds (drop, count `policed`). */
bool oc__policer_take(oc_policer_t *p, uint64_t now_ns, uint32_t bytes);

#endif
