/*
 * pool_int.h — the pool's layout, shared by pool.c and the backends that
 * register its area with the kernel (xdp.c).  Private to src/pkt.
 */
#ifndef OC_PKT_POOL_INT_H
#define OC_PKT_POOL_INT_H

#include "pkt/pkt.h"

struct oc_pkt_pool {
    uint8_t  *area;      /* count * buf_size bytes, mmap'd */
    size_t    area_len;
    uint32_t  count, buf_size, shift; /* buf_size == 1 << shift */
    uint32_t  nfree;
    uint32_t *free;      /* stack of free buffer indices */
    oc_pkt_t *pkts;      /* one descriptor per buffer */
    /* AF_XDP: the area as a UMEM, made by the first socket on it */
    void     *xsk_umem;
    void     *xsk_fill, *xsk_comp; /* the UMEM's own rings (first socket) */
    uint32_t  xsk_users;
};

/** Descriptor of the buffer whose frame starts at byte @p off of the area. */
static inline oc_pkt_t *oc__pkt_of_off(oc_pkt_pool_t *p, uint64_t off)
{
    return &p->pkts[off >> p->shift];
}

/** Return one buffer (no checks: the caller knows it was taken). */
static inline void oc__pkt_put(oc_pkt_pool_t *p, oc_pkt_t *pkt)
{
    p->free[p->nfree++] = pkt->idx;
}

/** Take one buffer, or NULL. */
static inline oc_pkt_t *oc__pkt_get(oc_pkt_pool_t *p)
{
    if (p->nfree == 0)
        return NULL;
    return &p->pkts[p->free[--p->nfree]];
}

#endif
