/*
 * stage.c — offcore-dp's stage toolbox: the steps a burst goes through,
 * called by the worker loop (pipeline.c) and by the tenant pipeline
 * (tenant/: uplink.c, tenant_stage.c, tenant_post.c) alike: parse +
 * policy, the classifier, and sending what passed to the other port
 * (freeing what was dropped).
 * It calls nothing else in offcore-dp, so that the files that call it
 * never form a circle with the loop.
 *
 * Threading: worker threads only, on their own bursts; counters per
 * worker, written with relaxed stores (dp_int.h).
 */
#include "dp_int.h"
#include "util/bytes.h"

#include <string.h>

#define TX_RETRIES 8   /* a full tx ring: kicks before counting a drop */

/* ------------------------------------------------------------- stages */

/* parse + policy: sets meta and a verdict per packet */
void oc__dp_stage_parse(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n)
{
    const oc_dp_t *dp = w->dp;
    for (uint16_t i = 0; i < n; i++) {
        oc_pkt_meta_t *m = &w->meta[i];
        oc_pkt_reason_t r = oc__pkt_parse(pkts[i]->data, pkts[i]->len,
                                         dp->max_frame, m);
        pkts[i]->hash = m->hash;
        OC__CTR_ADD(w->c.reason[r], 1);
        pkts[i]->verdict = dp->policy[r] == OC_PKT_DROP ? OC_DP_V_POLICY
                                                        : OC_DP_V_FORWARD;
    }
}

/* The IPv6 5-tuple of a parsed IPv6 frame (meta from oc__pkt_parse):
 * ports of TCP and UDP, 0 otherwise; a non-first fragment has no L4
 * header: protocol 44 (fragment), ports 0. */
static void key6(const oc_pkt_t *p, const oc_pkt_meta_t *m, oc_acl6_key_t *k)
{
    const uint8_t *ip = p->data + m->l3_off;
    for (int i = 0; i < 4; i++) {
        k->src[i] = oc__load_be32(ip + 8 + 4 * i);
        k->dst[i] = oc__load_be32(ip + 24 + 4 * i);
    }
    k->sport = k->dport = 0;
    k->proto = m->l4_off == 0 ? 44 : m->l4_proto;
    if (m->l4_off != 0 && (m->l4_proto == 6 || m->l4_proto == 17)) {
        k->sport = oc__load_be16(p->data + m->l4_off);
        k->dport = oc__load_be16(p->data + m->l4_off + 2);
    }
}

/* classifier: IPv4 and IPv6 packets still forwarded, one burst lookup per
 * family */
void oc__dp_stage_classify(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n)
{
    oc_dp_t *dp = w->dp;
    uint16_t k = 0, k6 = 0;

    for (uint16_t i = 0; i < n; i++) {
        uint8_t r = w->meta[i].reason;
        if (pkts[i]->verdict != OC_DP_V_FORWARD)
            continue;
        if (r == OC_PKT_R_IPV4 || r == OC_PKT_R_IPV4_FRAG) {
            w->keys[k] = w->meta[i].key;
            w->kidx[k++] = i;
        } else if (r == OC_PKT_R_IPV6) {
            key6(pkts[i], &w->meta[i], &w->keys6[k6]);
            w->kidx6[k6++] = i;
        }
    }
    if (k > 0)
        oc__acl_lookup_burst(dp->acl, w->keys, k, w->ud);
    if (k6 > 0) {
        oc__acl6_lookup_burst(dp->acl6, w->keys6, k6, w->ud + k);
        memcpy(w->kidx + k, w->kidx6, k6 * sizeof(*w->kidx));
        k += k6;
    }
    for (uint16_t j = 0; j < k; j++) {
        oc_pkt_t *p = pkts[w->kidx[j]];
        uint32_t ud = w->ud[j], slot, action;
        if (ud == OC_ACL_NO_MATCH) {
            OC__CTR_ADD(w->c.nomatch, 1);
            if (dp->default_action == OC_ACL_DENY)
                p->verdict = OC_DP_V_DEFAULT;
            continue;
        }
        slot = ud & OC_DP_UD_SLOT_MASK;
        action = ud >> OC_DP_UD_ACTION_SHIFT;
        OC__CTR_ADD(w->rule[slot].packets, 1);
        OC__CTR_ADD(w->rule[slot].bytes, p->len);
        if (action == OC_ACL_DENY)
            p->verdict = OC_DP_V_RULE;
    }
}

/* ------------------------------------------------------------ sending */

/* Send @p n packets (after the stages), free the dropped ones. */
static void forward(oc_dp_worker_t *w, oc_port_t *in, oc_port_t *out,
                    oc_pkt_t **pkts, uint16_t n, bool bare)
{
    oc_pkt_t *fwd[OC_DP_BURST_MAX], *drop[OC_DP_BURST_MAX];
    uint16_t nf = 0, nd = 0, sent = 0;
    uint32_t q = w->q;

    if (bare) {
        memcpy(fwd, pkts, n * sizeof(*pkts));
        nf = n;
    } else {
        for (uint16_t i = 0; i < n; i++) {
            if (pkts[i]->verdict == OC_DP_V_FORWARD)
                fwd[nf++] = pkts[i];
            else {
                OC__CTR_ADD(w->c.dropped[pkts[i]->verdict], 1);
                drop[nd++] = pkts[i];
            }
        }
    }
    for (int t = 0; sent < nf && t <= TX_RETRIES; t++)
        sent += oc__port_tx_burst(out, q, fwd + sent, nf - sent);
    if (sent < nf) {
        /* the peer does not drain: counted, never silent */
        OC__CTR_ADD(w->c.dropped[OC_DP_V_TX_FULL], nf - sent);
        memcpy(drop + nd, fwd + sent, (size_t)(nf - sent) * sizeof(*fwd));
        nd += nf - sent;
    }
    OC__CTR_ADD(w->c.forwarded, sent);
    if (nd > 0)
        oc__port_free_bulk(in, q, drop, nd);
}

void oc__dp_send(oc_dp_worker_t *w, oc_port_t *in, oc_port_t *out,
                 oc_pkt_t **pkts, uint16_t n)
{
    forward(w, in, out, pkts, n, false);
}

void oc__dp_send_bare(oc_dp_worker_t *w, oc_port_t *in, oc_port_t *out,
                      oc_pkt_t **pkts, uint16_t n)
{
    forward(w, in, out, pkts, n, true);
}
