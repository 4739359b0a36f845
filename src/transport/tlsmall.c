/*
 * tlsmall.c — the per-worker pool of oc__tr_send_small()'s copies: the
 * agent's DONE with an inline result, credits and other small control
 * messages are copied into a buffer that must outlive the call when UCX
 * keeps the send in flight.  A malloc per message was the cost; the pool
 * keeps the buffers that came back, per size class, so that a worker in
 * steady state allocates nothing.  It grows to the most buffers in flight
 * at once, keeps up to OC__TR_SMALL_KEEP of each class and frees the rest
 * as they come back: running out is never a refusal (no new
 * back-pressure), only a malloc.  Single-threaded, as its worker
 * (transport.h); buffers come back in send callbacks, which run inside
 * that worker's progress, endpoint close or destroy.
 */
#include "transport_int.h"

#include <stdlib.h>

/* Class 0 holds a DONE with a few words of result and the credits; class
 * 1 anything up to OC_TR_SMALL_MAX (a small collective's whole result). */
static const uint32_t class_bytes[OC__TR_SMALL_CLASSES] = {256,
                                                           OC_TR_SMALL_MAX};
#define OC__TR_SMALL_KEEP 64

oc__tr_small_buf_t *oc__tr_small_get(oc__tr_small_pool_t *pool, size_t len)
{
    unsigned c = len <= class_bytes[0] ? 0 : 1;
    oc__tr_small_buf_t *b = pool->free[c];

    if (len > OC_TR_SMALL_MAX)
        return NULL;
    pool->gets++;
    if (b != NULL) {
        pool->free[c] = b->next;
        pool->nfree[c]--;
        return b;
    }
    b = malloc(sizeof(*b) + class_bytes[c]);
    if (b == NULL)
        return NULL;
    pool->allocs++;
    b->pool = pool;
    b->cls = c;
    return b;
}

void oc__tr_small_put(oc__tr_small_buf_t *b)
{
    oc__tr_small_pool_t *pool = b->pool;

    if (pool->nfree[b->cls] >= OC__TR_SMALL_KEEP) {
        free(b);
        return;
    }
    b->next = pool->free[b->cls];
    pool->free[b->cls] = b;
    pool->nfree[b->cls]++;
}

void oc__tr_small_fini(oc__tr_small_pool_t *pool)
{
    for (unsigned c = 0; c < OC__TR_SMALL_CLASSES; c++)
        while (pool->free[c] != NULL) {
            oc__tr_small_buf_t *b = pool->free[c];
            pool->free[c] = b->next;
            free(b);
        }
    pool->nfree[0] = pool->nfree[1] = 0;
}
