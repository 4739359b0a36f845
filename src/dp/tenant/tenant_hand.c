/*
 * tenant_hand.c — the flow decides the worker: with several workers, a
 * tenant frame that reaches worker q but whose flow belongs to worker r
 * (oc__ct_thread_of() of the parser's symmetric hash of the inner 5-tuple)
 * is copied into a single-producer single-consumer ring q -> r and worker
 * r runs the tenant stages on it and sends it from its own queue.  So both
 * directions of a flow meet one connection table without a lock, whatever
 * queue the kernel (veth, NIC RSS, the remote's VXLAN source port) chose.
 *
 * Why a copy: a frame lives in worker q's UMEM, which worker r's sockets
 * cannot send from, and pools are single-threaded.  The ring is fixed
 * (HAND_SLOTS frames of up to HAND_BYTES), allocated at start; full, the
 * frame is dropped and counted (`handoff_full`), never silently.  The
 * producer writes the consumer's eventfd (in its poll() set) once per
 * burst so that a sleeping worker wakes.
 *
 * oc__dp_tenant_burst() is the dispatch in front of the tenant stages
 * (tenant_stage.c): frames of this worker's flows go on to them, the
 * others into the rings; a drained ring's frames run the same stages and
 * leave through tenant_post.c.
 *
 * The rings are util/spsc.h's (tail: published by q, head: released by
 * r).  Threading: ring q -> r: its producer handle belongs to worker q,
 * its consumer handle to worker r.
 */
#include "tenant_int.h"
#include "util/spsc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define HAND_SLOTS 2048 /* 4 MB a ring: a TCP window of 1500-byte frames */
#define HAND_BYTES 2048

typedef struct {
    uint16_t len;
    uint8_t  att, dir;
    uint8_t  data[HAND_BYTES - 4];
} hand_slot_t;

struct oc_dp_hand {
    oc_spsc_t prod __attribute__((aligned(64))); /* worker q's */
    oc_spsc_t cons __attribute__((aligned(64))); /* worker r's */
    void     *mem;                               /* the ring */
};

uint32_t oc__dp_hand_owner(oc_dp_worker_t *w, uint32_t a, int dir,
                           const oc_pkt_t *p)
{
    const oc_dp_t *dp = w->dp;
    const oc_dp_tenant_conf_t *tc = oc__dp_tenant_of(dp, a);
    oc_pkt_meta_t m;
    const uint8_t *f = p->data;
    uint32_t len = p->len;

    if (dp->nthreads == 1 || tc == NULL)
        return w->q;
    if (dir == 1) {
        oc_vxlan_rx_t rx;
        if (oc__vxlan_decap(f, len, tc->tun.local_ip, &rx) != OC_VXLAN_OK)
            return w->q; /* dropped here, counted here */
        f += rx.inner_off;
        len = rx.inner_len;
    }
    oc__pkt_parse(f, len, dp->max_frame, &m);
    /* IPv4, IPv6 with its L4 header: the flow's worker (the parser's hash
     * is symmetric for both); ARP, fragments, junk: no flow state */
    if (m.reason != OC_PKT_R_IPV4 &&
        (m.reason != OC_PKT_R_IPV6 || m.l4_off == 0))
        return w->q;
    return oc__ct_thread_of(m.hash, dp->nthreads);
}

oc_status_t oc__dp_hand_create(oc_dp_t *dp)
{
    uint32_t n = dp->nthreads;

    if (n == 1)
        return OC_OK;
    dp->hand = calloc((size_t)n * n, sizeof(*dp->hand));
    if (dp->hand == NULL)
        return OC_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < n * n; i++)
        if (i / n != i % n) {
            struct oc_dp_hand *h;
            size_t bytes = oc__spsc_bytes(HAND_SLOTS, sizeof(hand_slot_t));
            h = dp->hand[i] = aligned_alloc(64, sizeof(*h));
            if (h == NULL)
                return OC_ERR_NO_MEMORY;
            memset(h, 0, sizeof(*h));
            if ((h->mem = aligned_alloc(OC_SPSC_ALIGN, bytes)) == NULL)
                return OC_ERR_NO_MEMORY;
            if (oc__spsc_attach(&h->prod, h->mem, bytes, HAND_SLOTS,
                                sizeof(hand_slot_t), 1) != OC_OK ||
                oc__spsc_attach(&h->cons, h->mem, bytes, HAND_SLOTS,
                                sizeof(hand_slot_t), 0) != OC_OK)
                return OC_ERR_INVALID_PARAM;
        }
    for (uint32_t q = 0; q < n; q++) {
        dp->w[q].hand_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (dp->w[q].hand_fd < 0)
            return OC_ERR_NO_MEMORY;
    }
    return OC_OK;
}

void oc__dp_hand_free(oc_dp_t *dp)
{
    if (dp->hand != NULL)
        for (uint32_t i = 0; i < dp->nthreads * dp->nthreads; i++)
            if (dp->hand[i] != NULL) {
                free(dp->hand[i]->mem);
                free(dp->hand[i]);
            }
    free(dp->hand);
    dp->hand = NULL;
    if (dp->w != NULL)
        for (uint32_t q = 0; q < dp->nthreads; q++)
            if (dp->w[q].hand_fd > 0)
                close(dp->w[q].hand_fd);
}

int oc__dp_hand_push(oc_dp_worker_t *w, uint32_t to, uint32_t a, int dir,
                     const oc_pkt_t *p)
{
    struct oc_dp_hand *h = w->dp->hand[w->q * w->dp->nthreads + to];
    hand_slot_t *s;

    if (p->len > sizeof(s->data) ||
        (s = (hand_slot_t *)oc__spsc_reserve(&h->prod)) == NULL)
        return -1;
    memcpy(s->data, p->data, p->len);
    s->len = (uint16_t)p->len;
    s->att = (uint8_t)a;
    s->dir = (uint8_t)dir;
    oc__spsc_publish(&h->prod, sizeof(*s));
    return 0;
}

void oc__dp_hand_kick(oc_dp_worker_t *w, uint32_t to)
{
    uint64_t one = 1;
    if (write(w->dp->w[to].hand_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        return; /* the counter saturates only after 2^64 - 2 kicks */
}

uint32_t oc__dp_hand_drain(oc_dp_worker_t *w)
{
    oc_dp_t *dp = w->dp;
    uint32_t done = 0;
    uint64_t v;

    if (dp->hand == NULL)
        return 0;
    for (uint32_t from = 0; from < dp->nthreads; from++) {
        oc_spsc_t *r;
        uint32_t left, len;
        if (from == w->q)
            continue;
        r = &dp->hand[from * dp->nthreads + w->q]->cons;
        left = oc__spsc_count(r); /* what was there when we came */
        while (left > 0) {
            oc_pkt_t *pkts[OC_DP_BURST_MAX];
            const hand_slot_t *s[OC_DP_BURST_MAX];
            uint32_t k = left, got;
            uint32_t a;
            int dir;
            if (k > dp->burst)
                k = dp->burst;
            s[0] = (const hand_slot_t *)oc__spsc_peek(r, &len);
            if (s[0] == NULL)
                break; /* counted, so not without a broken ring */
            a = s[0]->att;
            dir = s[0]->dir;
            /* one burst per (attachment, direction) run of slots */
            for (uint32_t i = 1; i < k; i++) {
                s[i] = (const hand_slot_t *)oc__spsc_peek(r, &len);
                if (s[i] == NULL || s[i]->att != a || s[i]->dir != dir) {
                    k = i;
                    break;
                }
            }
            got = oc__pkt_alloc_bulk(w->pool, pkts, k);
            for (uint32_t i = 0; i < got; i++) {
                memcpy(pkts[i]->data, s[i]->data, s[i]->len);
                pkts[i]->len = s[i]->len;
                oc__spsc_release(r);
            }
            oc__spsc_unpeek(r); /* looked ahead further than it took */
            if (got == 0)
                break; /* no buffer now: the frames wait in the ring */
            left -= got;
            oc__dp_tenant_forward(w, a, dir, pkts,
                                  oc__dp_tenant_stages(w, a, dir, pkts,
                                                       (uint16_t)got));
            done += got;
        }
    }
    if (done > 0)
        (void)!read(w->hand_fd, &v, sizeof(v)); /* reset: later kicks set it again */
    return done;
}

uint16_t oc__dp_tenant_burst(oc_dp_worker_t *w, uint32_t a, int dir,
                             oc_pkt_t **pkts, uint16_t n)
{
    oc_dp_t *dp = w->dp;
    oc_pkt_t *gone[OC_DP_BURST_MAX];
    uint64_t kick = 0; /* workers to wake, a bit each */
    int ti = __atomic_load_n(&dp->att_tenant[a], __ATOMIC_ACQUIRE);
    uint32_t t = (uint32_t)ti;
    uint16_t k = 0, ng = 0;

    if (ti >= 0 && dp->nthreads > 1) {
        for (uint16_t i = 0; i < n; i++) {
            uint32_t r = oc__dp_hand_owner(w, a, dir, pkts[i]);
            if (r == w->q) {
                pkts[k++] = pkts[i];
                continue;
            }
            if (oc__dp_hand_push(w, r, a, dir, pkts[i]) == 0) {
                OC__CTR_ADD(w->tw->c[t].handoff, 1);
                kick |= 1ull << r;
            } else {
                OC__CTR_ADD(w->tw->c[t].drop[OC_DP_T_HANDOFF_FULL], 1);
            }
            gone[ng++] = pkts[i];
        }
        for (uint32_t r = 0; kick != 0; r++, kick >>= 1)
            if (kick & 1)
                oc__dp_hand_kick(w, r);
        if (ng > 0)
            oc__port_free_bulk(dp->att[a].port[dir], w->q, gone, ng);
        n = k;
    }
    return oc__dp_tenant_stages(w, a, dir, pkts, n);
}
