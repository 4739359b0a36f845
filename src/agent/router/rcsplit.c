/*
 * rcsplit.c — a large allreduce of one node's ranks, by memory, split
 * across the agent's routing threads: router 0 cuts the vector into one
 * element-aligned slice per thread and posts every other thread its slice
 * (oc__router_post_run, rpost.c); each thread reads its slice of every local rank's
 * send buffer in large calls, reduces it in rank order into the result
 * (per element the operations of the unsplit path: the same bits), and,
 * once every slice has been read, writes its slice of the result to every
 * rank.  Two phases, so that a send buffer that cannot be read fails the
 * collective with no result written anywhere, as unsplit.  Several nodes:
 * the unsplit path (docs/coll.md, "Split across the routing threads").
 *
 * Threading: start, poll and free run on router 0; slice_run on
 * the thread slice k was posted to.  The slices are disjoint; the counter
 * of slices left is atomic; the pidfds are router 0's duplicates, so a
 * rank that leaves meanwhile closes none under a slice.
 */
#include "rcoll_int.h"

#include "coll/reduce.h"
#include "util/log.h"
#include "wire/colld.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    uint64_t    off, cnt;   /* elements */
    oc_status_t st;         /* OC_OK, or what failed local rank bad */
    uint32_t    bad;
    int         err;        /* its errno */
} rslice_t;

struct rsplit {
    oc_router_t *r0;
    int          dtype, op;
    size_t       es;
    uint32_t     n;          /* local ranks, in rank order */
    uint32_t    *pid;
    int         *pidfd;
    uint64_t    *saddr, *raddr;
    uint8_t     *res;        /* the result (the collective's c->res) */
    int          phase;      /* 0: read and reduce; 1: write */
    uint32_t     nslices;
    _Atomic uint32_t left;   /* slices of the phase still running */
    rslice_t     sl[];
};

static void slice_failed(rslice_t *sl, uint32_t i)
{
    sl->bad = i;
    sl->err = errno;
    sl->st = errno == ESRCH ? OC_ERR_COLL_PEER_FAILED : OC_ERR_COLL_MEMORY;
}

/* Read slice @p sl of every rank in chunks of OC_RCMA_CHUNK per rank and
 * reduce each chunk at once, while it is in cache. */
static void slice_read(struct rsplit *s, rslice_t *sl)
{
    size_t per = OC_RCMA_CHUNK / s->es, m;
    uint8_t *buf = malloc(per * s->es * s->n);
    const void **srcs = malloc(sizeof(*srcs) * s->n);

    if (buf == NULL || srcs == NULL) {
        sl->st = OC_ERR_NO_MEMORY;
        goto out;
    }
    for (uint32_t i = 0; i < s->n; i++)
        srcs[i] = buf + per * s->es * i;
    for (uint64_t o = sl->off; o < sl->off + sl->cnt; o += m) {
        m = sl->off + sl->cnt - o < per ? sl->off + sl->cnt - o : per;
        for (uint32_t i = 0; i < s->n; i++)
            if (oc__rcma_copy(s->pid[i], s->pidfd[i], 0, (void *)srcs[i],
                              s->saddr[i] + o * s->es, m * s->es) != 0) {
                slice_failed(sl, i);
                goto out;
            }
        oc__reduce_ordered(s->dtype, s->op, s->res + o * s->es, srcs, s->n, m);
    }
out:
    free(srcs);
    free(buf);
}

static void slice_write(struct rsplit *s, rslice_t *sl)
{
    const size_t end = (sl->off + sl->cnt) * s->es;

    for (uint32_t i = 0; i < s->n; i++)
        for (size_t o = sl->off * s->es, m; o < end; o += m) {
            m = end - o < OC_RCMA_CHUNK ? end - o : OC_RCMA_CHUNK;
            if (oc__rcma_copy(s->pid[i], s->pidfd[i], 1, s->res + o,
                              s->raddr[i] + o, m) != 0) {
                slice_failed(sl, i);
                return;
            }
        }
}

/* Slice @p k of @p arg (a struct rsplit), its current phase, on this
 * thread; then router 0 is told (the last one wakes it). */
static void slice_run(void *arg, uint32_t k)
{
    struct rsplit *s = arg;
    rslice_t *sl = &s->sl[k];
    oc_router_t *r0 = s->r0; /* once the count is down, router 0 may free s */

    if (s->phase == 0)
        slice_read(s, sl);
    else
        slice_write(s, sl);
    if (atomic_fetch_sub_explicit(&s->left, 1, memory_order_acq_rel) == 1 &&
        k != 0)
        oc__router_wake(r0);
}

/* Post every slice but 0 to its router, then run slice 0 here. */
static void launch(oc_router_t *r, struct rsplit *s)
{
    atomic_store_explicit(&s->left, s->nslices, memory_order_release);
    for (uint32_t k = 1; k < s->nslices; k++)
        if (oc__router_post_run(r->p.siblings[k], slice_run, s, k) != OC_OK)
            slice_run(s, k); /* no memory for the command: here */
    slice_run(s, 0);
}

void oc__rcsplit_free(struct rsplit *s)
{
    if (s == NULL)
        return;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->pidfd[i] >= 0)
            close(s->pidfd[i]);
    free(s->pid);
    free(s->pidfd);
    free(s->saddr);
    free(s->raddr);
    free(s);
}

int oc__rcsplit_may(const oc_router_t *r, const acoll_t *c)
{
    return r->p.nthreads > 1 && r->p.siblings != NULL &&
           r->p.coll_split_min > 0 && c->kset &&
           c->kind == OC_COLLD_ALLREDUCE && c->nnodes == 1 &&
           c->count >= r->p.nthreads &&
           c->count * c->es >= r->p.coll_split_min;
}

int oc__rcsplit_start(oc_router_t *r, acoll_t *c)
{
    const uint64_t bytes = c->count * c->es;
    uint32_t t = r->p.nthreads, n = c->nlocal;
    rjob_t *j = oc__router_job_find(r, c->job);
    struct rsplit *s;

    if (!oc__rcsplit_may(r, c) || c->status != OC_OK || c->pending > 0 ||
        j == NULL)
        return 0;
    for (uint32_t i = c->first; i <= c->last; i++)
        if (!c->r[i].have || !c->r[i].cma || c->r[i].inl ||
            c->r[i].moved != 0 || j->local[i] == NULL)
            return 0; /* all by memory, none read yet: else unsplit */
    if ((s = calloc(1, sizeof(*s) + t * sizeof(s->sl[0]))) == NULL)
        return 0;
    s->pid = malloc(sizeof(*s->pid) * n);
    s->pidfd = malloc(sizeof(*s->pidfd) * n);
    s->saddr = malloc(sizeof(*s->saddr) * n);
    s->raddr = malloc(sizeof(*s->raddr) * n);
    c->res = oc__rc_buf(r, c, &c->bufs[RB_RES], bytes);
    if (s->pid == NULL || s->pidfd == NULL || s->saddr == NULL ||
        s->raddr == NULL || c->res == NULL)
        goto err;
    for (uint32_t i = 0; i < n; i++)
        s->pidfd[i] = -1;
    s->n = n;
    for (uint32_t i = 0; i < n; i++) {
        lrank_t *l = j->local[c->first + i];
        s->pid[i] = l->pid;
        s->saddr[i] = c->r[c->first + i].saddr;
        s->raddr[i] = c->r[c->first + i].raddr;
        if ((s->pidfd[i] = fcntl(l->pidfd, F_DUPFD_CLOEXEC, 0)) < 0)
            goto err;
    }
    s->r0 = r;
    s->dtype = c->dtype, s->op = c->op, s->es = c->es;
    s->res = c->res;
    s->nslices = t;
    for (uint32_t k = 0; k < t; k++) { /* element-aligned, nearly equal */
        s->sl[k].off = c->count * k / t;
        s->sl[k].cnt = c->count * (k + 1) / t - s->sl[k].off;
    }
    if (r->c.coll_split == 0)
        oc_info(OC_COMP_ROUTER, "job %u: allreduce of %llu bytes split "
                "across %u routing threads", c->job,
                (unsigned long long)bytes, t);
    CNT_ADD(r->c.coll_split, 1);
    c->split = s;
    c->split_wait = 1;
    c->pending++;
    c->state = ST_SPLIT;
    launch(r, c->split);
    return 1;
err:
    oc__rcsplit_free(s);
    c->res = NULL; /* its buffer stays with c */
    return 0;
}

int oc__rcsplit_poll(oc_router_t *r, acoll_t *c)
{
    struct rsplit *s = c->split;

    if (atomic_load_explicit(&s->left, memory_order_acquire) != 0)
        return 0;
    for (uint32_t k = 0; k < s->nslices; k++) {
        rslice_t *sl = &s->sl[k];
        uint32_t i = c->first + sl->bad;
        if (sl->st == OC_OK)
            continue;
        if (sl->st == OC_ERR_NO_MEMORY) {
            c->status = OC_ERR_NO_MEMORY;
            continue;
        }
        /* as rcma.c's failed(): named for that rank, fails the others */
        c->r[i].cma_st = sl->st;
        c->status = OC_ERR_COLL_PEER_FAILED;
        oc_warn(OC_COMP_ROUTER, "job %u rank %u: collective %u: cannot %s "
                "its %s buffer: %s", c->job, i, c->seq,
                s->phase ? "write" : "read", s->phase ? "receive" : "send",
                sl->st == OC_ERR_COLL_PEER_FAILED ? "it is gone"
                                                  : strerror(sl->err));
        sl->st = OC_OK;
    }
    if (s->phase == 0 && c->status == OC_OK && !c->dead) {
        s->phase = 1;
        launch(r, s);
        return oc__rcsplit_poll(r, c);
    }
    return 1;
}
