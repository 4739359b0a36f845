/*
 * tenant_stage.c — the tenant stages on a burst (tenant.h): host -> wire
 * (parse, anti-spoofing, egress group, conntrack, policing, VXLAN),
 * host -> host hairpin between a tenant's attachments, and wire -> host
 * (ARP responder, decapsulation, VNI, conntrack or the ingress group,
 * policing).  Each step runs over the whole burst before the next, in the
 * order one frame meets them, so memory latency overlaps while verdicts
 * stay those of frames run one by one: docs/tenants.md, "The stages".
 *
 * Threading: the worker that owns the tenant state (tenant.c); the groups
 * are read as RCU readers (the worker is registered in
 * src/dp/pipeline.c).  Frames are
 * hostile: every parser here is fuzzed (tests/fuzz/fuzz_tenant.c).
 */
#include "tenant_int.h"
#include "util/bytes.h"
#include "util/clock.h"

#include <string.h>

#define PASS 0xff /* why[i] of a frame still on its way */
#define ANSWERED 0xfe /* an ARP request for the tunnel end, answered */
#define NONE 0xff /* to[i] of a frame for the wire (not a hairpin) */

/* a group's answer for one key: 1 allow, 0 deny by rule, -1 no rule */
static int group(oc_acl_t *acl, const oc_acl_key_t *k)
{
    uint32_t ud;
    oc__acl_lookup_burst(acl, k, 1, &ud);
    if (ud == OC_ACL_NO_MATCH)
        return -1;
    return ud == OC_ACL_DENY ? 0 : 1;
}

/* the first two lines of every frame: Ethernet, IPv4 and TCP headers,
 * outer and inner (VXLAN puts the inner ones 50 bytes further) */
static void prefetch(oc_pkt_t **pkts, uint16_t n, bool headroom)
{
    for (uint16_t i = 0; i < n; i++) {
        __builtin_prefetch(pkts[i]->data);
        __builtin_prefetch(pkts[i]->data + 64);
        if (headroom) /* written by the encapsulation */
            __builtin_prefetch(pkts[i]->data - OC_VXLAN_OVERHEAD, 1);
    }
}

/* An IPv6 frame's group key (protocol and ports; its addresses are
 * matched by tenant_rule6.c), and whether it is link control (ND, MLD),
 * which passes without groups or conntrack; @p nd_tgt: a neighbor
 * solicitation's target, else NULL */
static bool v6_prep(const uint8_t *f, uint32_t len, oc_pkt_meta_t *m,
                    const uint8_t **nd_tgt)
{
    const uint8_t *tgt;
    int type = oc__icmp6_type(f, len, m, &tgt);

    *nd_tgt = type == 135 ? tgt : NULL;
    memset(&m->key, 0, sizeof(m->key)); /* addresses: tenant_rule6.c */
    m->key.proto = m->l4_proto;
    if (m->l4_off != 0 && (m->l4_proto == 6 || m->l4_proto == 17)) {
        m->key.sport = oc__load_be16(f + m->l4_off);
        m->key.dport = oc__load_be16(f + m->l4_off + 2);
    }
    return type >= 0 && oc__icmp6_is_link((uint8_t)type);
}

/* The dp attachment of tenant @p t's attachment other than @p x that host
 * frame @p f is for (its MAC, a broadcast ARP request for its address, or
 * a multicast neighbor solicitation, target @p nd_tgt, for one of its IPv6
 * addresses), or NONE. */
static uint8_t sibling(const oc_dp_t *dp, uint32_t t, uint32_t x,
                       const uint8_t *f, uint32_t len, const uint8_t *nd_tgt)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const oc_dp_tenant_conf_t *tc = &dp->ten->t[t];
    uint32_t y = NONE;

    if (tc->natt < 2 || len < 14)
        return NONE;
    for (uint32_t i = 0; i < tc->natt; i++)
        if (i != x && !memcmp(f, tc->mac[i], 6))
            y = i;
    if (y == NONE && !memcmp(f, bcast, 6) && len >= 42 && f[12] == 0x08 &&
        f[13] == 0x06 && f[20] == 0 && f[21] == 1) {
        uint32_t tip = oc__load_be32(f + 38);
        for (uint32_t i = 0; i < tc->natt; i++)
            if (i != x && tc->ip[i] == tip)
                y = i;
    }
    if (y == NONE && nd_tgt != NULL && f[0] == 0x33 && f[1] == 0x33)
        for (uint32_t i = 0; i < tc->natt; i++)
            if (i != x && oc__ip6_owns(&tc->ip6[i], nd_tgt))
                y = i;
    if (y == NONE)
        return NONE;
    for (uint32_t b = 0; b < dp->nattach; b++)
        if (__atomic_load_n(&dp->att_tenant[b], __ATOMIC_ACQUIRE) == (int)t &&
            dp->ten->att_idx[b] == y)
            return (uint8_t)b;
    return NONE;
}

/* the ingress group's answer for conntrack packet @p j: IPv4's
 * classifier, or (six) the IPv6 group with the packet's addresses */
typedef struct {
    oc_dp_worker_t *w;
    oc_acl_t       *acl; /* the tenant's ingress group (IPv4) */
    const uint16_t *at;
    const uint8_t  *to;  /* egress: hairpin destinations; ingress: NULL */
    int8_t         *g;   /* per conntrack packet: the answer, 2 not asked */
    const oc_dp_rules6_t *l6;    /* six: the IPv6 ingress group */
    const uint8_t *const *ip;    /* six: the packets' IPv6 headers */
    bool            six;
} ask_t;

static int ask_group(const ask_t *a, uint32_t j)
{
    const oc_acl_key_t *k = &a->w->meta[a->at[j]].key;
    if (a->six)
        return oc__dp_group6(a->l6, k, a->ip[j] + 8, a->ip[j] + 24);
    return group(a->acl, k);
}

/* conntrack's question on the host side: a flow toward the wire opens;
 * one toward another attachment (a hairpin) if the ingress group allows */
static bool may_open_out(void *arg, uint32_t j)
{
    ask_t *a = arg;
    if (a->to[a->at[j]] == NONE)
        return true;
    a->g[j] = (int8_t)ask_group(a, j);
    return a->g[j] > 0;
}

/* the ingress group, asked by conntrack when a packet would open a flow */
static bool may_open(void *arg, uint32_t j)
{
    ask_t *a = arg;
    a->g[j] = (int8_t)ask_group(a, j);
    return a->g[j] > 0;
}

/* A burst's packets for conntrack, both directions: IPv4 ones (nc) first,
 * then the IPv6 ones gathered beside them (n6), in burst order each. */
typedef struct {
    const uint8_t *ip[OC_DP_BURST_MAX];  /* the IP header */
    uint32_t len[OC_DP_BURST_MAX];       /* from it to the frame's end */
    uint16_t at[OC_DP_BURST_MAX];        /* the packet's place in the burst */
    int8_t g[OC_DP_BURST_MAX];           /* the ingress group's answer, 2 not asked */
    oc_ct_result_t cr[OC_DP_BURST_MAX];
    oc_ct_info_t info[OC_DP_BURST_MAX];
    uint16_t nc, n6;
    const uint8_t *ip6[OC_DP_BURST_MAX]; /* the IPv6 packets, until tracked */
    uint32_t len6[OC_DP_BURST_MAX];
    uint16_t at6[OC_DP_BURST_MAX];
    ask_t ask, ask6;                     /* IPv4's and IPv6's ingress group */
} ctb_t;

static void ct_add(ctb_t *b, uint16_t i, const uint8_t *ip, uint32_t len)
{
    b->ip[b->nc] = ip;
    b->len[b->nc] = len;
    b->g[b->nc] = 2;
    b->at[b->nc++] = i;
}

static void ct_add6(ctb_t *b, uint16_t i, const uint8_t *ip, uint32_t len)
{
    b->ip6[b->n6] = ip;
    b->len6[b->n6] = len;
    b->at6[b->n6++] = i;
}

/* Track the burst's packets in tenant @p t's tables, IPv4's then IPv6's;
 * @p may decides whether a packet opens a flow (@p to: egress's hairpin
 * destinations, NULL on ingress). */
static void ct_track(oc_dp_worker_t *w, uint32_t t, uint64_t now,
                     const uint8_t *to, bool (*may)(void *, uint32_t),
                     ctb_t *b)
{
    struct oc_dp_tenants *ten = w->dp->ten;
    uint16_t nc = b->nc;

    b->ask = (ask_t){w, ten->acl[t][1], b->at, to, b->g, NULL, NULL, false};
    b->ask6 = (ask_t){w, NULL, b->at + nc, to, b->g + nc,
                      __atomic_load_n(&ten->g6[t][1], __ATOMIC_ACQUIRE),
                      b->ip + nc, true};
    for (uint16_t j = 0; j < b->n6; j++) {
        b->ip[nc + j] = b->ip6[j];
        b->len[nc + j] = b->len6[j];
        b->g[nc + j] = 2;
        b->at[nc + j] = b->at6[j];
    }
    oc__ct_track_burst(w->tw->ct, (uint16_t)t, b->ip, b->len, nc,
                      now / 1000000, may, &b->ask, b->cr, b->info);
    oc__ct_track_burst(w->tw->ct6, (uint16_t)t, b->ip + nc, b->len + nc,
                      b->n6, now / 1000000, may, &b->ask6, b->cr + nc,
                      b->info + nc);
}

/* The verdict of tracked packet @p j on its way to a host (wire -> host,
 * or a hairpin): a flow's packet passes; one without a flow (a fragment
 * has none) passes if the ingress group allows it; @p why if it passes. */
static uint8_t ct_to_host(const ctb_t *b, uint16_t j, uint8_t why)
{
    int gj = b->g[j];

    switch (b->cr[j]) {
    case OC_CT_NEW: /* the group allowed it */
    case OC_CT_EST:
    case OC_CT_RELATED:
        return why;
    case OC_CT_INVALID:
        return OC_DP_T_INVALID;
    case OC_CT_FULL:
        return OC_DP_T_TABLE_FULL;
    default:
        if (gj == 2)
            gj = j < b->nc ? ask_group(&b->ask, j)
                           : ask_group(&b->ask6, j - b->nc);
        if (gj <= 0)
            return gj == 0 ? OC_DP_T_DENIED : OC_DP_T_NO_CONN;
        if (b->cr[j] == OC_CT_NO_CONN)
            return OC_DP_T_INVALID; /* allowed, but cannot open a flow */
        return why;
    }
}

static void egress(oc_dp_worker_t *w, uint32_t t, uint32_t a, oc_pkt_t **pkts,
                   uint16_t n, uint64_t now, uint8_t *why, uint8_t *to)
{
    struct oc_dp_tenants *ten = w->dp->ten;
    const oc_dp_tenant_conf_t *tc = &ten->t[t];
    uint32_t x = ten->att_idx[a]; /* the attachment's own MAC, address */
    struct oc_dp_tw *tw = w->tw;
    uint16_t k = 0;
    ctb_t b;
    oc_vxlan_hdr_t hdr;
    const oc_dp_rules6_t *g6 = __atomic_load_n(&ten->g6[t][0],
                                               __ATOMIC_ACQUIRE);

    b.nc = b.n6 = 0;
    prefetch(pkts, n, true);
    /* parse and anti-spoofing; the keys of IPv4 frames for the group; the
     * IPv6 group's answer per frame (IPv6 is the rarer: no burst lookup) */
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_meta_t *m = &w->meta[i];
        oc_pkt_reason_t r = oc__pkt_parse(pkts[i]->data, pkts[i]->len,
                                         w->dp->max_frame, m);
        const uint8_t *nd = NULL;
        why[i] = PASS;
        to[i] = NONE;
        if (r == OC_PKT_R_IPV6) {
            bool link = v6_prep(pkts[i]->data, pkts[i]->len, m, &nd);
            if (oc__spoof_check6(pkts[i]->data, pkts[i]->len, m, tc->mac[x],
                                 &tc->ip6[x]) != OC_SPOOF_OK) {
                why[i] = OC_DP_T_SPOOFED;
                continue;
            }
            to[i] = sibling(w->dp, t, x, pkts[i]->data, pkts[i]->len, nd);
            if (link) /* neighbor discovery, MLD: always within the tenant */
                continue;
            if (oc__dp_group6(g6, &m->key, pkts[i]->data + m->l3_off + 8,
                              pkts[i]->data + m->l3_off + 24) == 0)
                why[i] = OC_DP_T_DENIED;
            else
                ct_add6(&b, i, pkts[i]->data + m->l3_off,
                        pkts[i]->len - m->l3_off);
        } else if (r != OC_PKT_R_IPV4 && r != OC_PKT_R_IPV4_FRAG &&
                   r != OC_PKT_R_ARP)
            why[i] = OC_DP_T_NOT_IPV4;
        else if (oc__spoof_check(pkts[i]->data, pkts[i]->len, m, tc->mac[x],
                                tc->ip[x]) != OC_SPOOF_OK)
            why[i] = OC_DP_T_SPOOFED;
        else {
            to[i] = sibling(w->dp, t, x, pkts[i]->data, pkts[i]->len, NULL);
            if (r != OC_PKT_R_ARP) {
                w->keys[k] = m->key;
                w->kidx[k++] = i;
            }
        }
    }
    /* the egress group, one lookup for the burst: allowed unless a rule
     * denies */
    if (k > 0)
        oc__acl_lookup_burst(ten->acl[t][0], w->keys, k, w->ud);
    for (uint16_t j = 0; j < k; j++) {
        uint16_t i = w->kidx[j];
        if (w->ud[j] == OC_ACL_DENY) {
            why[i] = OC_DP_T_DENIED;
            continue;
        }
        ct_add(&b, i, pkts[i]->data + w->meta[i].l3_off,
               pkts[i]->len - w->meta[i].l3_off);
    }
    /* connection tracking: the host opens flows (a hairpin's, if the
     * ingress group allows) */
    ct_track(w, t, now, to, may_open_out, &b);
    for (uint16_t j = 0; j < b.nc + b.n6; j++) {
        uint8_t *y = &why[b.at[j]];
        if (to[b.at[j]] != NONE) { /* as on the way in */
            *y = ct_to_host(&b, j, *y);
            continue;
        }
        switch (b.cr[j]) {
        case OC_CT_NEW:
        case OC_CT_EST:
        case OC_CT_RELATED:
        case OC_CT_UNTRACKED:
            break;
        case OC_CT_FULL:
            *y = OC_DP_T_TABLE_FULL;
            break;
        case OC_CT_NO_CONN:
            *y = OC_DP_T_NO_CONN;
            break;
        default:
            *y = OC_DP_T_INVALID;
        }
    }
    /* policing and encapsulation, in order (a hairpin: both attachments'
     * policers, no encapsulation) */
    oc__vxlan_hdr_init(&hdr, &tc->tun, tc->vni);
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_t *p = pkts[i];
        if (why[i] != PASS)
            continue;
        if (!oc__policer_take(&tw->pol[a][0], now, p->len) ||
            (to[i] != NONE && !oc__policer_take(&tw->pol[to[i]][1], now, p->len))) {
            why[i] = OC_DP_T_POLICED;
            continue;
        }
        if (to[i] != NONE)
            continue;
        p->data = oc__vxlan_encap_hdr(p->data, p->len, &hdr, w->meta[i].hash);
        p->len += OC_VXLAN_OVERHEAD;
    }
}

static void ingress(oc_dp_worker_t *w, uint32_t t, uint32_t a,
                    oc_pkt_t **pkts, uint16_t n, uint64_t now, uint8_t *why)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    struct oc_dp_tenants *ten = w->dp->ten;
    const oc_dp_tenant_conf_t *tc = &ten->t[t];
    uint32_t x = ten->att_idx[a];
    struct oc_dp_tw *tw = w->tw;
    uint32_t ilen[OC_DP_BURST_MAX];
    uint16_t ioff[OC_DP_BURST_MAX];
    ctb_t b;

    b.nc = b.n6 = 0;
    prefetch(pkts, n, false);
    /* the tunnel's checks, the inner frame's parse and delivery check */
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_t *p = pkts[i];
        oc_pkt_meta_t *m = &w->meta[i];
        oc_vxlan_rx_t rx;
        oc_vxlan_reason_t vr;
        oc_pkt_reason_t r;
        const uint8_t *in;

        why[i] = PASS;
        vr = oc__vxlan_decap(p->data, p->len, tc->tun.local_ip, &rx);
        if (vr != OC_VXLAN_OK) {
            if (vr == OC_VXLAN_NOT_VXLAN &&
                oc__arp_answer(p->data, p->len, tc->tun.local_mac,
                              tc->tun.local_ip)) {
                why[i] = ANSWERED;
                continue;
            }
            OC__CTR_ADD(tw->c[t].vxlan[vr], 1);
            why[i] = vr == OC_VXLAN_NOT_VXLAN ? OC_DP_T_NOT_VXLAN
                                              : OC_DP_T_MALFORMED_VXLAN;
            continue;
        }
        if (rx.vni != tc->vni) {
            why[i] = OC_DP_T_UNKNOWN_VNI;
            continue;
        }
        in = p->data + rx.inner_off;
        ioff[i] = (uint16_t)rx.inner_off;
        ilen[i] = rx.inner_len;
        r = oc__pkt_parse(in, rx.inner_len, w->dp->max_frame, m);
        if (r == OC_PKT_R_IPV6) {
            const uint8_t *nd;
            bool link = v6_prep(in, rx.inner_len, m, &nd);
            /* delivery: its MAC, or multicast neighbor discovery (a
             * solicitation only for one of its addresses) */
            if (memcmp(in, tc->mac[x], 6) != 0 &&
                !(in[0] == 0x33 && in[1] == 0x33 && link &&
                  m->l4_proto == 58 && in[m->l4_off] >= 133 &&
                  in[m->l4_off] <= 137 &&
                  (nd == NULL || oc__ip6_owns(&tc->ip6[x], nd))))
                why[i] = OC_DP_T_NOT_OURS;
            else if (!link)
                ct_add6(&b, i, in + m->l3_off, rx.inner_len - m->l3_off);
            continue;
        }
        if (r != OC_PKT_R_IPV4 && r != OC_PKT_R_IPV4_FRAG &&
            r != OC_PKT_R_ARP) {
            if (r == OC_PKT_R_UNKNOWN_ETHERTYPE) {
                why[i] = OC_DP_T_NOT_IPV4;
            } else {
                OC__CTR_ADD(tw->c[t].vxlan[OC_VXLAN_BAD_INNER], 1);
                why[i] = OC_DP_T_MALFORMED_VXLAN;
            }
            continue;
        }
        /* delivery to this attachment only: its MAC, or broadcast (ARP) */
        if (memcmp(in, tc->mac[x], 6) != 0 && memcmp(in, bcast, 6) != 0) {
            why[i] = OC_DP_T_NOT_OURS;
            continue;
        }
        if (r != OC_PKT_R_ARP)
            ct_add(&b, i, in + m->l3_off, rx.inner_len - m->l3_off);
    }
    /* connection tracking: a packet of a flow the tenant has passes; one
     * that would open a flow asks the ingress group (default deny) */
    ct_track(w, t, now, NULL, may_open, &b);
    for (uint16_t j = 0; j < b.nc + b.n6; j++)
        why[b.at[j]] = ct_to_host(&b, j, why[b.at[j]]);
    /* policing, in order; the inner frame is what goes to the host */
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_t *p = pkts[i];
        if (why[i] != PASS)
            continue;
        if (!oc__policer_take(&tw->pol[a][1], now, ilen[i])) {
            why[i] = OC_DP_T_POLICED;
            continue;
        }
        p->data += ioff[i];
        p->len = ilen[i];
    }
}

uint16_t oc__dp_tenant_stages(oc_dp_worker_t *w, uint32_t a, int dir,
                              oc_pkt_t **pkts, uint16_t n)
{
    int ti = __atomic_load_n(&w->dp->att_tenant[a], __ATOMIC_ACQUIRE);
    uint32_t t = (uint32_t)ti;
    struct oc_dp_tw *tw = w->tw;
    uint8_t why[OC_DP_BURST_MAX], to[OC_DP_BURST_MAX], hto[OC_DP_BURST_MAX];
    oc_pkt_t *arp[OC_DP_BURST_MAX], *hair[OC_DP_BURST_MAX];
    uint16_t k = 0, na = 0, nh = 0, sent;
    uint64_t dests = 0; /* hairpins' attachments, a bit each */

    if (ti < 0) {
        /* its tenant was deleted: the attachment is closed until a tenant
         * is added on it (dp's drop counter, cause "tenant") */
        for (uint16_t i = 0; i < n; i++)
            pkts[i]->verdict = OC_DP_V_TENANT;
        return n;
    }
    if (n == 0)
        return 0;
    memset(to, NONE, n);
    if (dir == 0)
        egress(w, t, a, pkts, n, oc__now_ns(), why, to);
    else
        ingress(w, t, a, pkts, n, oc__now_ns(), why);
    for (uint16_t i = 0; i < n; i++) {
        if (why[i] == ANSWERED) {
            arp[na++] = pkts[i];
            continue;
        }
        if (why[i] == PASS && to[i] != NONE) {
            if (w->meta[i].reason == OC_PKT_R_IPV6)
                OC__CTR_ADD(tw->c[t].pkts6[1], 1);
            hto[nh] = to[i];
            hair[nh++] = pkts[i];
            dests |= 1ull << to[i];
            continue;
        }
        if (why[i] == PASS) {
            pkts[i]->verdict = OC_DP_V_FORWARD;
            OC__CTR_ADD(tw->c[t].pkts[dir], 1);
            if (w->meta[i].reason == OC_PKT_R_IPV6)
                OC__CTR_ADD(tw->c[t].pkts6[dir], 1);
        } else {
            pkts[i]->verdict = OC_DP_V_TENANT;
            OC__CTR_ADD(tw->c[t].drop[why[i]], 1);
        }
        pkts[k++] = pkts[i];
    }
    if (na > 0) {
        /* the answers go back out of the wire port they came in by; what
         * its ring cannot take is dropped with dp's tx_full count */
        oc_port_t *wire = w->dp->att[a].port[1];
        sent = oc__port_tx_burst(wire, w->q, arp, na);
        OC__CTR_ADD(tw->c[t].arp_replies, sent);
        for (uint16_t i = sent; i < na; i++) {
            arp[i]->verdict = OC_DP_V_TX_FULL;
            pkts[k++] = arp[i];
        }
    }
    /* hairpins: to each other attachment's host port, in order */
    for (uint32_t b = 0; dests != 0; b++, dests >>= 1) {
        oc_pkt_t *sub[OC_DP_BURST_MAX];
        uint16_t ns = 0;
        if (!(dests & 1))
            continue;
        for (uint16_t i = 0; i < nh; i++)
            if (hto[i] == b)
                sub[ns++] = hair[i];
        OC__CTR_ADD(tw->c[t].pkts[1], ns);
        for (uint16_t i = 0; i < ns; i++)
            sub[i]->verdict = OC_DP_V_FORWARD;
        oc__dp_send(w, w->dp->att[a].port[0], w->dp->att[b].port[0], sub, ns);
    }
    return k;
}
