/*
 * pool.c — fixed packet-buffer pools (pkt.h).  Everything is mapped and
 * touched at creation so that the fast path never faults or allocates;
 * the buffers are on huge pages where the kernel allows (util/hugemem.h:
 * a stage reading each frame's headers then misses no TLB entry).
 * Not thread-safe: one pool per worker thread.
 */
#include "pool_int.h"
#include "util/hugemem.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

oc_status_t oc__pkt_pool_create(uint32_t count, uint32_t buf_size,
                               oc_pkt_pool_t **out)
{
    oc_pkt_pool_t *p;
    uint32_t shift = 0;

    if (out == NULL || count == 0 || count > (1u << 24) || buf_size < 2048 ||
        buf_size > 65536 || (buf_size & (buf_size - 1)) != 0)
        return OC_ERR_INVALID_PARAM;
    while ((1u << shift) < buf_size)
        shift++;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        goto err;
    p->count = count;
    p->buf_size = buf_size;
    p->shift = shift;
    p->area_len = (size_t)count * buf_size;
    p->area = oc__huge_map(p->area_len);
    if (p->area == NULL)
        goto err_pool;
    p->free = malloc(sizeof(*p->free) * count);
    p->pkts = calloc(count, sizeof(*p->pkts));
    if (p->free == NULL || p->pkts == NULL)
        goto err_arrays;
    for (uint32_t i = 0; i < count; i++) {
        p->pkts[i].idx = i;
        p->pkts[i].data = p->area + ((size_t)i << shift) + OC_PKT_HEADROOM;
        /* highest index first out: the stack pops low indices first */
        p->free[i] = count - 1 - i;
    }
    p->nfree = count;
    *out = p;
    return OC_OK;

err_arrays:
    free(p->free);
    free(p->pkts);
    oc__huge_unmap(p->area, p->area_len);
err_pool:
    free(p);
err:
    oc_error(OC_COMP_PKT, "packet pool of %u x %u bytes: out of memory",
             count, buf_size);
    return OC_ERR_NO_MEMORY;
}

void oc__pkt_pool_destroy(oc_pkt_pool_t *p)
{
    if (p == NULL)
        return;
    oc__huge_unmap(p->area, p->area_len);
    free(p->free);
    free(p->pkts);
    free(p);
}

uint32_t oc__pkt_alloc_bulk(oc_pkt_pool_t *p, oc_pkt_t **pkts, uint32_t n)
{
    uint32_t k = n < p->nfree ? n : p->nfree;
    for (uint32_t i = 0; i < k; i++) {
        oc_pkt_t *pkt = &p->pkts[p->free[--p->nfree]];
        pkt->data = p->area + ((size_t)pkt->idx << p->shift) + OC_PKT_HEADROOM;
        pkt->len = 0;
        pkts[i] = pkt;
    }
    return k;
}

void oc__pkt_free_bulk(oc_pkt_pool_t *p, oc_pkt_t *const *pkts, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        p->free[p->nfree++] = pkts[i]->idx;
}

uint32_t oc__pkt_pool_avail(const oc_pkt_pool_t *p) { return p->nfree; }
uint32_t oc__pkt_pool_count(const oc_pkt_pool_t *p) { return p->count; }
uint32_t oc__pkt_pool_buf_size(const oc_pkt_pool_t *p) { return p->buf_size; }
uint32_t oc__pkt_pool_max_frame(const oc_pkt_pool_t *p)
{
    return p->buf_size - OC_PKT_HEADROOM;
}
