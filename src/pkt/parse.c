/*
 * parse.c — the packet parser (pkt.h): Ethernet, up to two VLAN tags
 * (802.1Q 0x8100, 802.1ad 0x88a8), IPv4, IPv6 with its extension headers,
 * TCP, UDP, ICMP; output: the classifier's 5-tuple key, a symmetric flow
 * hash and one reason per frame.
 *
 * Trust model: the frame is hostile.  Every read is preceded by a check of
 * the bytes left; lengths inside the frame (IHL, total length, payload
 * length, extension lengths, TCP data offset, UDP length) are checked
 * against what the frame holds before they are used.  Pure, no state:
 * thread-safe.  Fuzzed by tests/fuzz/fuzz_pkt.c.
 *
 * The policy per reason (the defaults below; offcore-dp's config file can
 * change each with `policy REASON pass|drop`):
 *   ipv4            pass: classified by the rules
 *   ipv4_fragment   pass: a non-first fragment has no ports, so it is
 *                   classified with source and destination port 0 (a port
 *                   rule cannot match it; its first fragment, which carries
 *                   the ports, is classified normally: without it the
 *                   datagram cannot be reassembled)
 *   ipv6            pass: not classified (the rules are IPv4 only)
 *   arp             pass: IPv4 neighbours need it
 *   every malformed reason, and unknown ethertypes: drop
 */
#include "pkt/pkt.h"

#include "util/bytes.h"

#include <string.h>

static const char *const reason_names[OC_PKT_R_MAX] = {
    [OC_PKT_R_IPV4] = "ipv4",
    [OC_PKT_R_IPV4_FRAG] = "ipv4_fragment",
    [OC_PKT_R_IPV6] = "ipv6",
    [OC_PKT_R_ARP] = "arp",
    [OC_PKT_R_RUNT] = "runt",
    [OC_PKT_R_OVERSIZED] = "oversized",
    [OC_PKT_R_UNKNOWN_ETHERTYPE] = "unknown_ethertype",
    [OC_PKT_R_VLAN_DEPTH] = "vlan_depth",
    [OC_PKT_R_BAD_IP_VERSION] = "bad_ip_version",
    [OC_PKT_R_BAD_IP_HDR_LEN] = "bad_ip_header_length",
    [OC_PKT_R_BAD_IP_TOTAL_LEN] = "bad_ip_total_length",
    [OC_PKT_R_BAD_L4] = "bad_l4_header",
    [OC_PKT_R_IPV6_EXT] = "bad_ipv6_extension",
};

const char *oc__pkt_reason_name(oc_pkt_reason_t r)
{
    return (unsigned)r < OC_PKT_R_MAX ? reason_names[r] : "unknown";
}

int oc__pkt_reason_from_name(const char *name)
{
    for (int r = 0; r < OC_PKT_R_MAX; r++)
        if (strcmp(name, reason_names[r]) == 0)
            return r;
    return -1;
}

oc_pkt_policy_t oc__pkt_default_policy(oc_pkt_reason_t r)
{
    switch (r) {
    case OC_PKT_R_IPV4:
    case OC_PKT_R_IPV4_FRAG:
    case OC_PKT_R_IPV6:
    case OC_PKT_R_ARP:
        return OC_PKT_PASS;
    default:
        return OC_PKT_DROP;
    }
}


/* Symmetric: a flow and its reply hash alike (one thread may own both). */
static inline uint32_t flow_hash(uint32_t a, uint32_t b, uint16_t pa,
                                 uint16_t pb, uint8_t proto)
{
    uint64_t x = ((uint64_t)(a ^ b) << 32) | (uint32_t)((pa ^ pb) << 8 | proto);
    x ^= (uint64_t)(a + b) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (uint32_t)x;
}

/* L4 ports of IPv4/IPv6 payload @p l4 (@p n bytes).  0 ok, else BAD_L4. */
static int parse_l4(uint8_t proto, const uint8_t *l4, uint32_t n,
                    uint16_t *sport, uint16_t *dport)
{
    switch (proto) {
    case 6: /* TCP */
        if (n < 20 || (uint32_t)(l4[12] >> 4) * 4 < 20 ||
            (uint32_t)(l4[12] >> 4) * 4 > n)
            return -1;
        *sport = oc__load_be16(l4);
        *dport = oc__load_be16(l4 + 2);
        return 0;
    case 17: /* UDP */
        if (n < 8 || oc__load_be16(l4 + 4) < 8 || oc__load_be16(l4 + 4) > n)
            return -1;
        *sport = oc__load_be16(l4);
        *dport = oc__load_be16(l4 + 2);
        return 0;
    case 1:  /* ICMP */
    case 58: /* ICMPv6 */
        return n < 4 ? -1 : 0; /* ports stay 0 */
    default:
        return 0; /* no ports to read */
    }
}

static oc_pkt_reason_t parse_ipv4(const uint8_t *ip, uint32_t n,
                                  oc_pkt_meta_t *m)
{
    uint32_t ihl, total;
    uint16_t frag;

    if (n < 20)
        return n >= 1 && (ip[0] >> 4) != 4 ? OC_PKT_R_BAD_IP_VERSION
                                           : OC_PKT_R_BAD_IP_HDR_LEN;
    if ((ip[0] >> 4) != 4)
        return OC_PKT_R_BAD_IP_VERSION;
    ihl = (uint32_t)(ip[0] & 15) * 4;
    if (ihl < 20 || ihl > n)
        return OC_PKT_R_BAD_IP_HDR_LEN;
    total = oc__load_be16(ip + 2);
    /* shorter than the frame is Ethernet padding; longer is a lie */
    if (total < ihl || total > n)
        return OC_PKT_R_BAD_IP_TOTAL_LEN;
    m->key.src_ip = oc__load_be32(ip + 12);
    m->key.dst_ip = oc__load_be32(ip + 16);
    m->key.proto = ip[9];
    frag = oc__load_be16(ip + 6);
    if ((frag & 0x3fff) != 0)
        m->is_fragment = 1;
    if ((frag & 0x1fff) != 0) {
        m->hash = flow_hash(m->key.src_ip, m->key.dst_ip, 0, 0, ip[9]);
        return OC_PKT_R_IPV4_FRAG;
    }
    if (parse_l4(ip[9], ip + ihl, total - ihl, &m->key.sport, &m->key.dport))
        return OC_PKT_R_BAD_L4;
    m->hash = flow_hash(m->key.src_ip, m->key.dst_ip, m->key.sport,
                        m->key.dport, ip[9]);
    return OC_PKT_R_IPV4;
}

#define IPV6_MAX_EXT 8 /* more extension headers than any sane packet has */

static oc_pkt_reason_t parse_ipv6(const uint8_t *ip, uint32_t n,
                                  uint32_t l3_off, oc_pkt_meta_t *m)
{
    uint32_t total, off = 40;
    uint16_t sport = 0, dport = 0;
    uint8_t nh;

    if (n < 40)
        return n >= 1 && (ip[0] >> 4) != 6 ? OC_PKT_R_BAD_IP_VERSION
                                           : OC_PKT_R_BAD_IP_HDR_LEN;
    if ((ip[0] >> 4) != 6)
        return OC_PKT_R_BAD_IP_VERSION;
    total = 40u + oc__load_be16(ip + 4);
    if (total > n) /* a jumbogram (payload length 0) is not for us either */
        return OC_PKT_R_BAD_IP_TOTAL_LEN;
    nh = ip[6];
    for (int i = 0;; i++) {
        uint32_t len;
        if (nh != 0 && nh != 43 && nh != 60 && nh != 44 && nh != 51)
            break;
        if (i == IPV6_MAX_EXT || total - off < 8)
            return OC_PKT_R_IPV6_EXT;
        if (nh == 44) { /* fragment header: 8 bytes */
            uint16_t fo = oc__load_be16(ip + off + 2);
            m->is_fragment = 1;
            len = 8;
            if ((fo & 0xfff8) != 0) { /* not the first: no L4 header */
                m->hash = flow_hash(oc__load_be32(ip + 8) ^ oc__load_be32(ip + 20),
                                    oc__load_be32(ip + 24) ^ oc__load_be32(ip + 36), 0, 0, 44);
                return OC_PKT_R_IPV6;
            }
        } else if (nh == 51) { /* AH: (len + 2) 32-bit words */
            len = ((uint32_t)ip[off + 1] + 2) * 4;
        } else {
            len = ((uint32_t)ip[off + 1] + 1) * 8;
        }
        if (len > total - off)
            return OC_PKT_R_IPV6_EXT;
        nh = ip[off];
        off += len;
    }
    if (parse_l4(nh, ip + off, total - off, &sport, &dport))
        return OC_PKT_R_BAD_L4;
    m->l4_proto = nh;
    m->l4_off = (uint16_t)(l3_off + off);
    m->l4_end = (uint16_t)(l3_off + total);
    m->hash = flow_hash(oc__load_be32(ip + 8) ^ oc__load_be32(ip + 20), oc__load_be32(ip + 24) ^ oc__load_be32(ip + 36),
                        sport, dport, nh);
    return OC_PKT_R_IPV6;
}

oc_pkt_reason_t oc__pkt_parse(const uint8_t *f, uint32_t len,
                             uint32_t max_frame, oc_pkt_meta_t *m)
{
    uint32_t off = 12;
    uint16_t et;
    oc_pkt_reason_t r;

    memset(m, 0, sizeof(*m));
    if (len > max_frame) {
        r = OC_PKT_R_OVERSIZED;
        goto out;
    }
    if (len < 14) {
        r = OC_PKT_R_RUNT;
        goto out;
    }
    et = oc__load_be16(f + off);
    while (et == 0x8100 || et == 0x88a8) {
        if (m->vlans == 2) {
            r = OC_PKT_R_VLAN_DEPTH;
            goto out;
        }
        if (len - off < 6) { /* this TPID, the TCI, the next ethertype */
            r = OC_PKT_R_RUNT;
            goto out;
        }
        off += 4;
        m->vlans++;
        et = oc__load_be16(f + off);
    }
    off += 2;
    m->ethertype = et;
    m->l3_off = (uint16_t)off;
    switch (et) {
    case 0x0800:
        r = parse_ipv4(f + off, len - off, m);
        break;
    case 0x86dd:
        r = parse_ipv6(f + off, len - off, off, m);
        break;
    case 0x0806:
        r = OC_PKT_R_ARP;
        break;
    default:
        r = OC_PKT_R_UNKNOWN_ETHERTYPE;
        break;
    }
    if (r != OC_PKT_R_IPV4 && r != OC_PKT_R_IPV4_FRAG)
        memset(&m->key, 0, sizeof(m->key));
out:
    m->reason = (uint8_t)r;
    return r;
}
