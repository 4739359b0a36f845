/*
 * uplink.c — offcore-dp's tenant pipeline around the tenant stages
 * (tenant_stage.c): how ESP, flow telemetry and a wire port shared by
 * several tenants (one uplink) compose with them.  This file receives from
 * the wire port (ESP decryption, the tenant by VNI and the attachment by
 * inner MAC, then the stages); what follows the stages in either direction
 * (flow accounting, ESP encryption after VXLAN) is tenant_post.c.  The
 * order and why: docs/tenants.md, "Tenants with ESP and flow export, on
 * one uplink".
 *
 * Threading: worker threads only, on their own bursts; counters per worker
 * (relaxed stores), read by the metrics thread (relaxed loads).  Trust:
 * frames are hostile; nothing reads VXLAN before ESP's ICV and replay check.
 */
#include "tenant_int.h"
#include "metrics/metrics.h"
#include "pkt/flow.h"
#include "util/bytes.h"
#include "util/counter.h"

#include <string.h>

#define NONE 0xff /* a frame no attachment takes (dropped) */

/* Does attachment @p x of tenant @p tc take inner frame @p in (@p len
 * bytes)?  Its own MAC, a broadcast ARP or a multicast IPv6 neighbor
 * solicitation asking for its own address (other broadcasts and
 * multicasts: demux() gives them to the tenant's first attachment). */
static bool takes(const oc_dp_tenant_conf_t *tc, uint32_t x, const uint8_t *in,
                  uint32_t len)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

    if (len < 14)
        return false;
    if (!memcmp(in, tc->mac[x], 6))
        return true;
    if (in[0] == 0x33 && in[1] == 0x33) {
        oc_pkt_meta_t m;
        const uint8_t *tgt;
        oc__pkt_parse(in, len, len, &m);
        return oc__icmp6_type(in, len, &m, &tgt) == 135 && tgt != NULL &&
               oc__ip6_owns(&tc->ip6[x], tgt);
    }
    if (memcmp(in, bcast, 6) != 0)
        return false;
    if (in[12] == 0x08 && in[13] == 0x06 && len >= 14 + 28) {
        const uint8_t *tip = in + 14 + 24; /* the ARP target address */
        uint32_t ip = oc__load_be32(tip);
        return ip == tc->ip[x];
    }
    return false;
}

/* An ARP request on shared port @p a for a live tenant's tunnel address
 * (the fabric resolving the DPU's end, as a kernel VXLAN peer does): the
 * first such tenant's attachment on the port in @p b, whose stages answer
 * it (tenant_stage.c).  @return 1 so. */
static int arp_for_tunnel(oc_dp_worker_t *w, uint32_t a, const oc_pkt_t *p,
                          uint32_t *b)
{
    oc_dp_t *dp = w->dp;
    const uint8_t *f = p->data;
    uint32_t tip;

    if (p->len < 42 || f[12] != 0x08 || f[13] != 0x06 || f[20] != 0 ||
        f[21] != 1)
        return 0;
    tip = oc__load_be32(f + 38);
    for (uint32_t x = a; x < dp->nattach; x++) {
        int t;
        if (x != a && dp->att[x].wire_of != a + 1)
            continue;
        t = __atomic_load_n(&dp->att_tenant[x], __ATOMIC_ACQUIRE);
        if (t >= 0 && dp->ten->t[t].tun.local_ip == tip) {
            *b = x;
            return 1;
        }
    }
    return 0;
}

/* The attachment on shared port @p a (its first attachment) whose live
 * tenant has the frame's VNI and that owns the inner destination (takes()),
 * or NONE (counted, verdict set).  A frame of the tenant that no
 * attachment owns goes to the tenant's first attachment on the port, whose
 * stages drop and count it (not_ours) or deliver a broadcast. */
static uint32_t demux(oc_dp_worker_t *w, uint32_t a, oc_pkt_t *p)
{
    oc_dp_t *dp = w->dp;
    oc_vxlan_rx_t rx;
    oc_vxlan_reason_t vr = oc__vxlan_decap(p->data, p->len, 0, &rx);
    uint32_t first = NONE;

    p->verdict = OC_DP_V_TENANT;
    if (vr == OC_VXLAN_NOT_VXLAN && arp_for_tunnel(w, a, p, &first)) {
        p->verdict = OC_DP_V_FORWARD; /* its stages answer it */
        return first;
    }
    if (vr != OC_VXLAN_OK) {
        OC__CTR_ADD(w->c.uplink[a][vr], 1);
        return NONE;
    }
    for (uint32_t b = a; b < dp->nattach; b++) {
        int t;
        if (b != a && dp->att[b].wire_of != a + 1)
            continue;
        t = __atomic_load_n(&dp->att_tenant[b], __ATOMIC_ACQUIRE);
        if (t < 0 || dp->ten->t[t].vni != rx.vni)
            continue;
        if (takes(&dp->ten->t[t], dp->ten->att_idx[b], p->data + rx.inner_off,
                  rx.inner_len)) {
            p->verdict = OC_DP_V_FORWARD;
            return b;
        }
        if (first == NONE)
            first = b;
    }
    if (first != NONE) {
        p->verdict = OC_DP_V_FORWARD;
        return first;
    }
    OC__CTR_ADD(w->c.uplink[a][0], 1); /* unknown VNI */
    return NONE;
}

void oc__dp_uplink_rx(oc_dp_worker_t *w, uint32_t a, oc_pkt_t **pkts,
                      uint16_t n)
{
    oc_dp_t *dp = w->dp;
    oc_port_t *in = dp->att[a].port[1];
    oc_pkt_t *sub[OC_DP_BURST_MAX];
    uint8_t tgt[OC_DP_BURST_MAX];
    uint16_t k = 0;
    uint64_t seen = 0; /* attachments with frames, a bit each */

    if (dp->esp != NULL) {
        oc__dp_stage_parse(w, pkts, n);
        oc__dp_esp_in(w, pkts, n); /* the VXLAN packets, authenticated */
    }
    for (uint16_t i = 0; i < n; i++) {
        if (dp->esp != NULL && pkts[i]->verdict != OC_DP_V_FORWARD)
            tgt[i] = NONE; /* counted by the ESP stage or the parser policy */
        else if (dp->att[a].uplink)
            tgt[i] = (uint8_t)demux(w, a, pkts[i]);
        else
            tgt[i] = (uint8_t)a;
        if (tgt[i] == NONE)
            sub[k++] = pkts[i];
        else
            seen |= 1ull << tgt[i];
    }
    if (k > 0) /* every one of them has a drop verdict: freed, counted */
        oc__dp_send(w, in, in, sub, k);
    for (uint32_t b = a; seen != 0 && b < dp->nattach; b++) {
        if (!(seen & (1ull << b)))
            continue;
        seen &= ~(1ull << b);
        k = 0;
        for (uint16_t i = 0; i < n; i++)
            if (tgt[i] == b)
                sub[k++] = pkts[i];
        k = oc__dp_tenant_burst(w, b, 1, sub, k);
        oc__dp_tenant_post(w, b, 1, sub, k);
        oc__dp_send(w, in, dp->att[b].port[0], sub, k);
    }
}

void oc__dp_uplink_metrics(oc_dp_t *dp, void *prom)
{
    oc_prom_t *p = prom;
    bool any = false;

    for (uint32_t a = 0; a < dp->nattach; a++)
        any |= dp->att[a].uplink;
    if (!any)
        return;
    oc__prom_family(p, "offcore_dp_uplink_dropped_packets_total",
                   "frames from a wire port shared by tenants that no tenant "
                   "took: unknown_vni, or the VXLAN reason (not_vxlan, short, "
                   "bad_outer, bad_flags, bad_inner)", OC_PROM_COUNTER);
    for (uint32_t a = 0; a < dp->nattach; a++) {
        if (!dp->att[a].uplink)
            continue;
        for (int r = 0; r < OC_VXLAN_NREASONS; r++) {
            uint64_t v = 0;
            for (uint32_t q = 0; q < dp->nthreads; q++)
                v += OC__CTR_GET(dp->w[q].c.uplink[a][r]);
            oc__prom_sample(p, "offcore_dp_uplink_dropped_packets_total",
                           OC_PROM_LABELS({"port", oc__port_name(dp->att[a].port[1])},
                                          {"reason", r == 0 ? "unknown_vni"
                                                            : oc__vxlan_reason_name(r)}),
                           v);
        }
    }
}
