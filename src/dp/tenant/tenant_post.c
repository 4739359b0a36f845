/*
 * tenant_post.c — what follows the tenant stages (tenant_stage.c) in
 * either direction, before the frame leaves: flow accounting of the inner
 * packet with the tenant's VNI (src/dp/flow_stage.c), the MSS clamp of TCP SYNs
 * so that VXLAN + ESP fit esp_mtu, and host -> wire ESP encryption of the
 * VXLAN packet (src/dp/esp_stage.c; uplink.c says why after
 * encapsulation).  Called by the worker loop (src/dp/pipeline.c), the
 * uplink (uplink.c) and the handoff rings (tenant_hand.c).
 *
 * Threading: worker threads only, on their own bursts.
 */
#include "tenant_int.h"
#include "pkt/flow.h"

void oc__dp_tenant_post(oc_dp_worker_t *w, uint32_t a, int dir,
                        oc_pkt_t **pkts, uint16_t n)
{
    oc_dp_t *dp = w->dp;
    const oc_dp_tenant_conf_t *tc;
    bool esp = dp->esp != NULL && dir == 0;
    uint64_t now = 0;

    if (n == 0 || (dp->flow == NULL && dp->esp == NULL))
        return;
    tc = oc__dp_tenant_of(dp, a);
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_t *p = pkts[i];
        if (p->verdict != OC_DP_V_FORWARD)
            continue;
        if (tc == NULL) {
            /* the tenant was deleted during this burst: its attachment is
             * closed; nothing leaves unencrypted or unaccounted */
            p->verdict = OC_DP_V_TENANT;
            continue;
        }
        {
            /* the inner frame: behind the VXLAN headers on the way out,
             * already decapsulated on the way in */
            uint32_t off = dir == 0 ? OC_VXLAN_OVERHEAD : 0;
            oc_pkt_meta_t m;
            if (p->len > off &&
                oc__pkt_parse(p->data + off, p->len - off, dp->max_frame, &m) ==
                    OC_PKT_R_IPV4) {
                /* TCP fits VXLAN + ESP in esp_mtu: SYNs both ways clamped
                 * (the ESP stage itself sees only the outer UDP) */
                if (dp->esp != NULL && m.key.proto == 6)
                    (void)oc__dp_esp_clamp(w, p->data + off + m.l3_off,
                                           p->len - off - m.l3_off,
                                           OC_VXLAN_OVERHEAD);
            }
            if (dp->flow != NULL && p->len > off)
                oc__dp_flow_one(w, p->data + off, &m, tc->vni, a, &now);
        }
        if (esp) /* the ESP stage reads the outer (VXLAN) packet's parse */
            (void)oc__pkt_parse(p->data, p->len, dp->max_frame, &w->meta[i]);
    }
    if (esp && tc != NULL)
        oc__dp_esp_out(w, pkts, n);
}

void oc__dp_tenant_forward(oc_dp_worker_t *w, uint32_t a, int dir,
                           oc_pkt_t **pkts, uint16_t n)
{
    oc__dp_tenant_post(w, a, dir, pkts, n);
    oc__dp_send(w, w->dp->att[a].port[dir], w->dp->att[a].port[!dir], pkts,
                n);
}
