/*
 * esp_room.c — how far a packet may grow in its pool buffer, for the ESP
 * stage (headers go in front of the data, the trailer behind).  Needs the
 * pool's layout (pool_int.h), hence here.  The packet's thread only.
 */
#include "pkt/esp.h"
#include "pkt/pkt.h"
#include "pool_int.h"

void oc__esp_room(const oc_pkt_pool_t *pool, const oc_pkt_t *pkt,
                 uint32_t *head, uint32_t *tail)
{
    const uint8_t *start, *end;

    *head = *tail = 0;
    if (pkt->mbuf != NULL || pkt->data < pool->area ||
        pkt->data >= pool->area + pool->area_len)
        return; /* not one of this pool's buffers (DPDK's mbufs) */
    start = pool->area + ((size_t)(pkt->data - pool->area) & ~(size_t)(pool->buf_size - 1));
    end = start + pool->buf_size;
    if (pkt->data + pkt->len > end)
        return;
    *head = (uint32_t)(pkt->data - start);
    *tail = (uint32_t)(end - pkt->data - pkt->len);
}
