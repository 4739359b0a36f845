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
 * Threading: ring q -> r: head written by q, tail by r (acquire/release).
 */
#include "tenant_int.h"

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
    uint32_t head __attribute__((aligned(64))); /* producer */
    uint32_t tail __attribute__((aligned(64))); /* consumer */
    hand_slot_t slot[HAND_SLOTS];
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
            dp->hand[i] = aligned_alloc(64, sizeof(struct oc_dp_hand));
            if (dp->hand[i] == NULL)
                return OC_ERR_NO_MEMORY;
            memset(dp->hand[i], 0, sizeof(struct oc_dp_hand));
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
            free(dp->hand[i]);
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
    uint32_t head = h->head;
    hand_slot_t *s;

    if (p->len > sizeof(s->data) ||
        head - __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE) == HAND_SLOTS)
        return -1;
    s = &h->slot[head % HAND_SLOTS];
    memcpy(s->data, p->data, p->len);
    s->len = (uint16_t)p->len;
    s->att = (uint8_t)a;
    s->dir = (uint8_t)dir;
    __atomic_store_n(&h->head, head + 1, __ATOMIC_RELEASE);
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
        struct oc_dp_hand *h;
        uint32_t tail, head;
        if (from == w->q)
            continue;
        h = dp->hand[from * dp->nthreads + w->q];
        tail = h->tail;
        head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
        while (tail != head) {
            oc_pkt_t *pkts[OC_DP_BURST_MAX];
            uint32_t k = head - tail, got;
            const hand_slot_t *s0 = &h->slot[tail % HAND_SLOTS];
            uint32_t a = s0->att;
            int dir = s0->dir;
            if (k > dp->burst)
                k = dp->burst;
            /* one burst per (attachment, direction) run of slots */
            for (uint32_t i = 1; i < k; i++) {
                const hand_slot_t *s = &h->slot[(tail + i) % HAND_SLOTS];
                if (s->att != a || s->dir != dir) {
                    k = i;
                    break;
                }
            }
            got = oc__pkt_alloc_bulk(w->pool, pkts, k);
            if (got == 0)
                break; /* no buffer now: the frames wait in the ring */
            for (uint32_t i = 0; i < got; i++) {
                const hand_slot_t *s = &h->slot[(tail + i) % HAND_SLOTS];
                memcpy(pkts[i]->data, s->data, s->len);
                pkts[i]->len = s->len;
            }
            tail += got;
            __atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
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
                oc__dp_ctr_add(&w->tw->c[t].handoff, 1);
                kick |= 1ull << r;
            } else {
                oc__dp_ctr_add(&w->tw->c[t].drop[OC_DP_T_HANDOFF_FULL], 1);
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
