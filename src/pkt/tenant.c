/*
 * tenant.c — VXLAN encapsulation/decapsulation, anti-spoofing, the
 * token-bucket policer, the tunnel end's ARP responder and IPv6's
 * anti-spoofing and neighbor discovery checks (tenant.h).
 * Written by hand: each is a few dozen lines over the frame already in our
 * buffer, and the kernel's vxlan device and ARP (the independent peer in
 * tests/integration) check our output.
 *
 * Threading and trust: tenant.h (pure; hostile frames).
 */
#include "pkt/tenant.h"

#include "util/bytes.h"

#include <string.h>


/* ------------------------------------------------------------- VXLAN */

void oc__vxlan_hdr_init(oc_vxlan_hdr_t *h, const oc_vxlan_tun_t *t,
                       uint32_t vni)
{
    uint8_t *o = h->b, *ip = o + 14, *udp = ip + 20, *vx = udp + 8;
    uint32_t sum = 0;

    memset(h->b, 0, sizeof(h->b));
    memcpy(o, t->remote_mac, 6);
    memcpy(o + 6, t->local_mac, 6);
    oc__store_be16(o + 12, 0x0800);
    ip[0] = 0x45;
    oc__store_be16(ip + 6, 0x4000); /* DF: VXLAN must not be fragmented */
    ip[8] = 64;
    ip[9] = 17;
    oc__store_be32(ip + 12, t->local_ip);
    oc__store_be32(ip + 16, t->remote_ip);
    oc__store_be16(udp + 2, OC_VXLAN_PORT);
    /* UDP checksum 0: allowed over IPv4 (RFC 7348 5) */
    oc__store_be32(vx, 0x08000000u); /* I flag, reserved */
    oc__store_be32(vx + 4, (vni & OC_VXLAN_VNI_MAX) << 8);
    for (int i = 0; i < 20; i += 2)
        sum += oc__load_be16(ip + i); /* total length and checksum are 0 here */
    h->sum = sum;
}

uint8_t *oc__vxlan_encap_hdr(uint8_t *inner, uint32_t len,
                            const oc_vxlan_hdr_t *h, uint32_t hash)
{
    uint8_t *o = inner - OC_VXLAN_OVERHEAD, *ip = o + 14, *udp = ip + 20;
    uint32_t sum = h->sum + (20 + 8 + 8 + len);

    memcpy(o, h->b, OC_VXLAN_OVERHEAD);
    oc__store_be16(ip + 2, (uint16_t)(20 + 8 + 8 + len));
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    oc__store_be16(ip + 10, (uint16_t)~sum);
    oc__store_be16(udp, (uint16_t)(49152 + (hash & 0x3fff)));
    oc__store_be16(udp + 4, (uint16_t)(8 + 8 + len));
    return o;
}

uint8_t *oc__vxlan_encap(uint8_t *inner, uint32_t len, const oc_vxlan_tun_t *t,
                        uint32_t vni, uint32_t hash)
{
    oc_vxlan_hdr_t h;
    oc__vxlan_hdr_init(&h, t, vni);
    return oc__vxlan_encap_hdr(inner, len, &h, hash);
}

oc_vxlan_reason_t oc__vxlan_decap(const uint8_t *f, uint32_t len,
                                 uint32_t local_ip, oc_vxlan_rx_t *out)
{
    uint32_t ihl, total, ulen;
    const uint8_t *ip, *udp, *vx;

    if (len < 14)
        return OC_VXLAN_SHORT;
    if (oc__load_be16(f + 12) != 0x0800)
        return OC_VXLAN_NOT_VXLAN;
    ip = f + 14;
    if (len < 14 + 20)
        return OC_VXLAN_SHORT;
    if ((ip[0] >> 4) != 4)
        return OC_VXLAN_BAD_OUTER;
    ihl = (uint32_t)(ip[0] & 15) * 4;
    total = oc__load_be16(ip + 2);
    if (ihl < 20 || total < ihl || 14 + total > len)
        return OC_VXLAN_BAD_OUTER;
    if (ip[9] != 17 || (local_ip != 0 && oc__load_be32(ip + 16) != local_ip))
        return OC_VXLAN_NOT_VXLAN;
    if ((oc__load_be16(ip + 6) & 0x3fff) != 0) /* MF or an offset: VXLAN is never fragmented */
        return OC_VXLAN_BAD_OUTER;
    if (total < ihl + 8)
        return OC_VXLAN_SHORT;
    udp = ip + ihl;
    if (oc__load_be16(udp + 2) != OC_VXLAN_PORT)
        return OC_VXLAN_NOT_VXLAN;
    ulen = oc__load_be16(udp + 4);
    if (ulen < 8 || ulen > total - ihl)
        return OC_VXLAN_BAD_OUTER;
    if (ulen < 16)
        return OC_VXLAN_SHORT;
    vx = udp + 8;
    if (!(vx[0] & 0x08))
        return OC_VXLAN_BAD_FLAGS;
    if (ulen - 16 < 14)
        return OC_VXLAN_BAD_INNER;
    out->vni = oc__load_be32(vx + 4) >> 8;
    out->inner_off = (uint32_t)(vx + 8 - f);
    out->inner_len = ulen - 16;
    out->src_ip = oc__load_be32(ip + 12);
    return OC_VXLAN_OK;
}

const char *oc__vxlan_reason_name(oc_vxlan_reason_t r)
{
    static const char *const n[OC_VXLAN_NREASONS] = {
        "ok", "not_vxlan", "short", "bad_outer", "bad_flags", "bad_inner"};
    return (unsigned)r < OC_VXLAN_NREASONS ? n[r] : "?";
}

/* ------------------------------------------------------ anti-spoofing */

oc_spoof_t oc__spoof_check(const uint8_t *f, uint32_t len,
                          const oc_pkt_meta_t *m, const uint8_t mac[6],
                          uint32_t ip)
{
    const uint8_t *a;

    if (len < 14 || memcmp(f + 6, mac, 6) != 0)
        return OC_SPOOF_SRC_MAC;
    switch (m->reason) {
    case OC_PKT_R_IPV4:
    case OC_PKT_R_IPV4_FRAG:
        return m->key.src_ip == ip ? OC_SPOOF_OK : OC_SPOOF_SRC_IP;
    case OC_PKT_R_ARP:
        /* Ethernet/IPv4 ARP: htype 1, ptype 0x0800, hlen 6, plen 4 */
        if (m->l3_off + 28u > len)
            return OC_SPOOF_ARP;
        a = f + m->l3_off;
        if (oc__load_be16(a) != 1 || oc__load_be16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4)
            return OC_SPOOF_ARP;
        if (memcmp(a + 8, mac, 6) != 0)
            return OC_SPOOF_ARP;
        if (oc__load_be32(a + 14) != ip && oc__load_be32(a + 14) != 0)
            return OC_SPOOF_ARP;
        return OC_SPOOF_OK;
    default:
        return OC_SPOOF_OTHER;
    }
}

/* --------------------------------------------------------------- IPv6 */

void oc__ip6_set_ll(oc_ip6_set_t *s, const uint8_t mac[6])
{
    memset(s->ll, 0, 16);
    s->ll[0] = 0xfe;
    s->ll[1] = 0x80;
    s->ll[8] = mac[0] ^ 2; /* the universal/local bit, inverted */
    s->ll[9] = mac[1];
    s->ll[10] = mac[2];
    s->ll[11] = 0xff;
    s->ll[12] = 0xfe;
    memcpy(s->ll + 13, mac + 3, 3);
}

bool oc__ip6_owns(const oc_ip6_set_t *s, const uint8_t *a)
{
    if (!memcmp(a, s->ll, 16))
        return true;
    for (uint32_t i = 0; i < s->n && i < OC_TENANT_IP6_MAX; i++)
        if (!memcmp(a, s->a[i], 16))
            return true;
    return false;
}

bool oc__icmp6_is_link(uint8_t t)
{
    /* MLD query/report/done (130-132), MLDv2 report (143), router and
     * neighbor solicitation/advertisement, redirect (133-137) */
    return (t >= 130 && t <= 137) || t == 143;
}

int oc__icmp6_type(const uint8_t *f, uint32_t len, const oc_pkt_meta_t *m,
                   const uint8_t **target)
{
    uint32_t o = m->l4_off, end = m->l4_end;

    *target = NULL;
    if (m->reason != OC_PKT_R_IPV6 || m->l4_proto != 58 || o == 0 ||
        end > len || o + 4 > end)
        return -1;
    if ((f[o] == 135 || f[o] == 136) && o + 24 <= end)
        *target = f + o + 8;
    return f[o];
}

/* the link-layer address options (RFC 4861 4.6.1) of an ND message whose
 * options start at @p o: each of type @p want must name @p mac; any
 * option of length 0 or past the end is malformed */
static bool nd_opts_ok(const uint8_t *f, uint32_t o, uint32_t end,
                       uint8_t want, const uint8_t mac[6])
{
    while (o < end) {
        uint32_t l;
        if (end - o < 2 || f[o + 1] == 0)
            return false;
        l = (uint32_t)f[o + 1] * 8;
        if (l > end - o)
            return false;
        if (f[o] == want && (l < 8 || memcmp(f + o + 2, mac, 6) != 0))
            return false;
        o += l;
    }
    return true;
}

oc_spoof_t oc__spoof_check6(const uint8_t *f, uint32_t len,
                            const oc_pkt_meta_t *m, const uint8_t mac[6],
                            const oc_ip6_set_t *own)
{
    static const uint8_t any[16];
    const uint8_t *src, *tgt;
    uint32_t o = m->l4_off, end = m->l4_end;
    int type;

    if (len < 14 || memcmp(f + 6, mac, 6) != 0)
        return OC_SPOOF_SRC_MAC;
    if (m->reason != OC_PKT_R_IPV6 || (uint32_t)m->l3_off + 40 > len)
        return OC_SPOOF_OTHER;
    src = f + m->l3_off + 8;
    type = oc__icmp6_type(f, len, m, &tgt);
    if (!memcmp(src, any, 16)) {
        if (type != 135 && type != 131 && type != 143)
            return OC_SPOOF_SRC_IP;
    } else if (!oc__ip6_owns(own, src)) {
        return OC_SPOOF_SRC_IP;
    }
    switch (type) {
    case 133: /* router solicitation: options after 8 bytes */
        return o + 8 <= end && nd_opts_ok(f, o + 8, end, 1, mac)
                   ? OC_SPOOF_OK : OC_SPOOF_ND;
    case 134: /* router advertisement, redirect: a router's, not a host's */
    case 137:
        return OC_SPOOF_ND;
    case 135: /* neighbor solicitation: asking is free, the sender's own
               * link-layer address must be its MAC */
        return tgt != NULL && nd_opts_ok(f, o + 24, end, 1, mac)
                   ? OC_SPOOF_OK : OC_SPOOF_ND;
    case 136: /* neighbor advertisement: only for its own address */
        return tgt != NULL && oc__ip6_owns(own, tgt) &&
                       nd_opts_ok(f, o + 24, end, 2, mac)
                   ? OC_SPOOF_OK : OC_SPOOF_ND;
    default:
        return OC_SPOOF_OK;
    }
}

/* ------------------------------------------------------ ARP responder */

bool oc__arp_answer(uint8_t *f, uint32_t len, const uint8_t mac[6], uint32_t ip)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    uint8_t *a = f + 14, sha[6];
    uint32_t spa;

    /* Ethernet/IPv4 ARP request: htype 1, ptype 0x0800, hlen 6, plen 4 */
    if (len < 42 || oc__load_be16(f + 12) != 0x0806 || oc__load_be16(a) != 1 ||
        oc__load_be16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4 || oc__load_be16(a + 6) != 1)
        return false;
    if (oc__load_be32(a + 24) != ip || (memcmp(f, bcast, 6) != 0 && memcmp(f, mac, 6)))
        return false;
    spa = oc__load_be32(a + 14);
    /* a gratuitous announcement is no question; a reply goes to a unicast
     * sender only */
    if (spa == ip || (a[8] & 1) || !memcmp(a + 8, "\0\0\0\0\0\0", 6))
        return false;
    memcpy(sha, a + 8, 6);
    memcpy(f, sha, 6);
    memcpy(f + 6, mac, 6);
    oc__store_be16(a + 6, 2);
    memcpy(a + 8, mac, 6);
    oc__store_be32(a + 14, ip);
    memcpy(a + 18, sha, 6);
    oc__store_be32(a + 24, spa);
    memset(f + 42, 0, len - 42);
    return true;
}

/* ------------------------------------------------------------ policer */

#define NS 1000000000ull

void oc__policer_init(oc_policer_t *p, uint64_t rate, uint64_t burst,
                     uint64_t now_ns)
{
    p->rate = rate;
    p->burst = burst;
    p->tokens = burst * NS; /* starts full: a new attachment may burst */
    p->last_ns = now_ns;
}

bool oc__policer_take(oc_policer_t *p, uint64_t now_ns, uint32_t bytes)
{
    uint64_t cap = p->burst * NS, dt;

    if (p->rate == 0)
        return true;
    if (now_ns > p->last_ns) {
        dt = now_ns - p->last_ns;
        /* a full refill takes burst / rate seconds: no need to add more
         * (and dt * rate cannot overflow below that) */
        if (dt >= cap / p->rate)
            p->tokens = cap;
        else {
            p->tokens += dt * p->rate;
            if (p->tokens > cap)
                p->tokens = cap;
        }
        p->last_ns = now_ns;
    }
    if (p->tokens < (uint64_t)bytes * NS)
        return false;
    p->tokens -= (uint64_t)bytes * NS;
    return true;
}
