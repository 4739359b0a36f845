/*
 * rcbuf.c — the data buffers of an agent collective (contributions,
 * results, the chain's and the all-to-all's blocks), kept with its state
 * when it ends (oc__rc_acoll_put) so that the job's next collective of
 * the same size or smaller allocates none; grown when a bigger one needs
 * it; all freed when they exceed OC__RC_BUF_KEEP (a large collective
 * does not pin its memory in a kept state).  Router thread only.
 */
#include "rcoll_int.h"

#include <stdlib.h>

void *oc__rc_buf(oc_router_t *r, acoll_t *c, rcbuf_t *b, size_t len)
{
    if (b->p != NULL && len < b->cap) {
        CNT_ADD(r->c.coll_buf_kept, 1);
        return b->p;
    }
    /* no realloc: the old contents are of no use, a copy would be waste */
    free(b->p);
    c->buf_bytes -= b->cap;
    b->cap = 0;
    if ((b->p = malloc(len + 1)) == NULL)
        return NULL;
    b->cap = len + 1;
    c->buf_bytes += b->cap;
    CNT_ADD(r->c.coll_buf_new, 1);
    return b->p;
}

int oc__rc_bufs_init(acoll_t *c)
{
    c->nbufs = RB_FIXED + 3 * (size_t)c->size + 2 * (size_t)c->nnodes;
    c->bufs = calloc(c->nbufs, sizeof(*c->bufs));
    return c->bufs != NULL ? 0 : -1;
}

void oc__rc_bufs_trim(acoll_t *c, size_t keep)
{
    if (c->buf_bytes <= keep)
        return;
    for (size_t i = 0; c->bufs != NULL && i < c->nbufs; i++) {
        free(c->bufs[i].p);
        c->bufs[i].p = NULL;
        c->bufs[i].cap = 0;
    }
    c->buf_bytes = 0;
}
