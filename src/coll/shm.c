/*
 * shm.c — small allreduces and all-to-alls among ranks of one host
 * through a shared-memory segment, without UCX on their path (as Open
 * MPI's coll/sm does): each rank writes its contribution once into its
 * slot and raises a sequence number; every rank reads every slot.  Used
 * when every rank mapped the segment at start-up and the contribution
 * fits a slot (OC_COLL_SHM_MAX).  Why, the layout and its ordering rules:
 * docs/coll.md, "The shared segment".
 *
 * Threading: the context's thread.  Trust: the segment is created 0600
 * by rank 0 under a random name, checked by a random cookie, and unlinked
 * once every rank has mapped it; the ranks of a job trust each other.
 */
#include "coll_int.h"

#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#define CL 64u

typedef struct {
    uint64_t cookie;
    uint32_t nranks, slot_bytes;
} shm_hdr_t;

struct oc__coll_shm {
    uint8_t *base;
    size_t   len;
    size_t   area;       /* bytes per rank */
    size_t   slot;       /* data bytes per slot */
    uint32_t n, me;
    uint64_t next_seq;   /* the next shared-memory collective's number */
    uint64_t done;       /* this rank's last consumed one */
};

static size_t up(size_t x)
{
    return (x + CL - 1) / CL * CL;
}

static uint64_t *done_of(const oc__coll_shm_t *s, uint32_t r)
{
    return (uint64_t *)(s->base + CL + (size_t)r * s->area);
}

static uint64_t *seq_of(const oc__coll_shm_t *s, uint32_t r, uint64_t k)
{
    return (uint64_t *)(s->base + CL + (size_t)r * s->area + CL +
                        (k & 1) * (CL + up(s->slot)));
}

static uint8_t *data_of(const oc__coll_shm_t *s, uint32_t r, uint64_t k)
{
    return (uint8_t *)seq_of(s, r, k) + CL;
}

static void unmap(oc__coll_shm_t *s)
{
    if (s->base != NULL)
        munmap(s->base, s->len);
    free(s);
}

/* Round 1's message: rank 0's segment, if it made one, and the CPUs
 * each rank may run on. */
typedef struct {
    char      name[48];
    uint64_t  cookie;
    uint8_t   want;
    uint8_t   pad[7];
    cpu_set_t cpus;
} offer_t;

/* Do the ranks have a core each?  Not when the CPUs they may run on,
 * all together, are fewer than they are (two ranks pinned to one core;
 * sixteen on a two-core machine); ranks pinned one per core, or free on
 * enough of them, do.  oc_wait yields at once where they share. */
static int cores_each(const offer_t *all, uint32_t n)
{
    cpu_set_t any;

    CPU_ZERO(&any);
    for (uint32_t r = 0; r < n; r++)
        CPU_OR(&any, &any, &all[r].cpus);
    return (uint32_t)CPU_COUNT(&any) >= n;
}

oc_status_t oc__coll_shm_setup(oc_context_t *ctx, void *state)
{
    oc__coll_t *c = state;
    const uint32_t n = oc__ext_size(ctx);
    offer_t mine, *all = NULL;
    uint8_t ok = 0, *oks = NULL;
    oc__coll_shm_t *s = NULL;
    oc_status_t st = OC_OK;
    int fd = -1, agreed = 1;

    if (c != NULL && n == 1)
        c->cores_each = 1; /* only the agent might share its core */
    if (c == NULL || n < 2 || !oc__ext_has_allgather(ctx))
        return OC_OK;
    memset(&mine, 0, sizeof(mine));
    mine.want = c->cfg.shm_max > 0;
    if (sched_getaffinity(0, sizeof(mine.cpus), &mine.cpus) != 0)
        CPU_ZERO(&mine.cpus); /* counts as none */
    all = calloc(n, sizeof(*all));
    oks = calloc(n, 1);
    s = calloc(1, sizeof(*s));
    if (all == NULL || oks == NULL || s == NULL) {
        st = OC_ERR_NO_MEMORY;
        goto out;
    }
    s->n = n;
    s->me = oc__ext_rank(ctx);
    s->slot = c->cfg.shm_max;
    s->area = CL + 2 * (CL + up(s->slot));
    s->len = CL + (size_t)n * s->area;
    if (oc__ext_rank(ctx) == 0 && mine.want &&
        getrandom(&mine.cookie, sizeof(mine.cookie), 0) ==
            (ssize_t)sizeof(mine.cookie)) {
        snprintf(mine.name, sizeof(mine.name), "/offcore-coll-%ld-%016llx",
                 (long)getpid(), (unsigned long long)mine.cookie);
        fd = shm_open(mine.name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)s->len) != 0) {
            oc_info(OC_COMP_COLL, "collectives: no shared-memory segment "
                    "(%s: %s): small collectives go through UCX", mine.name,
                    strerror(errno));
            if (fd >= 0)
                shm_unlink(mine.name);
            mine.name[0] = '\0';
        }
    }
    /* round 1: everyone learns rank 0's segment and who wants it */
    if ((st = oc__ext_allgather(ctx, &mine, all, sizeof(mine))) != OC_OK)
        goto out_unlink;
    for (uint32_t r = 0; r < n; r++)
        agreed &= all[r].want;
    if (agreed && all[0].name[0] != '\0') {
        if (fd < 0)
            fd = shm_open(all[0].name, O_RDWR, 0600);
        if (fd >= 0) {
            void *p = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED,
                           fd, 0);
            s->base = p == MAP_FAILED ? NULL : p;
        }
        if (s->base != NULL && oc__ext_rank(ctx) == 0) {
            shm_hdr_t h = {all[0].cookie, n, (uint32_t)s->slot};
            memcpy(s->base, &h, sizeof(h));
        }
        ok = s->base != NULL;
    }
    /* round 2: everyone mapped it (rank 0 wrote the header before) */
    if ((st = oc__ext_allgather(ctx, &ok, oks, 1)) != OC_OK)
        goto out_unlink;
    for (uint32_t r = 0; r < n; r++)
        agreed &= oks[r];
    if (agreed) {
        shm_hdr_t h;
        memcpy(&h, s->base, sizeof(h));
        if (h.cookie != all[0].cookie || h.nranks != n ||
            h.slot_bytes != s->slot)
            agreed = 0; /* cannot differ on one rank only: the same file */
    }
out_unlink:
    if (oc__ext_rank(ctx) == 0 && mine.name[0] != '\0')
        shm_unlink(mine.name); /* every rank has it open or gave up */
out:
    if (fd >= 0)
        close(fd);
    if (st == OC_OK && agreed && s != NULL && s->base != NULL) {
        s->next_seq = 1;
        c->shm = s;
        /* every rank is on this host (they all mapped one segment) */
        c->cores_each = cores_each(all, n);
        oc_debug(OC_COMP_COLL, "rank %u: collectives up to %zu bytes "
                 "through shared memory; %s", oc__ext_rank(ctx), s->slot,
                 c->cores_each ? "a core for each rank"
                               : "ranks share cores: waits yield at once");
    } else if (s != NULL) {
        unmap(s);
    }
    free(all);
    free(oks);
    return st;
}

void oc__coll_shm_fini(oc__coll_t *c)
{
    if (c->shm != NULL)
        unmap(c->shm);
    c->shm = NULL;
}

int oc__coll_shm_fits(const oc_context_t *ctx, size_t bytes)
{
    const oc__coll_shm_t *s = oc__coll_of(ctx)->shm;
    return s != NULL && bytes > 0 && bytes <= s->slot;
}

oc_status_t oc__coll_shm_start(oc_context_t *ctx, int kind,
                               const void *sbuf, void *rbuf, size_t count,
                               int dtype, int op, oc_request_t **req_p)
{
    oc__coll_t *c = oc__coll_of(ctx);
    oc_request_t *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return OC_ERR_NO_MEMORY;
    r->ctx = ctx;
    r->status = OC_INPROGRESS;
    r->shm = (uint8_t)kind;
    r->shm_seq = c->shm->next_seq++;
    r->own = sbuf;
    r->rbuf = rbuf;
    r->blk_count = count;
    r->dtype = dtype;
    r->op = op;
    r->esize = oc__dtype_size(dtype);
    oc__coll_link(c, r);
    *req_p = r;
    oc__coll_shm_advance(r);
    return OC_OK;
}

static uint64_t load_acq(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

void oc__coll_shm_advance(oc_request_t *req)
{
    oc__coll_shm_t *s = oc__coll_of(req->ctx)->shm;
    const uint64_t k = req->shm_seq;
    const size_t bytes = req->blk_count * req->esize; /* per peer */

    if (!req->shm_written) {
        for (uint32_t p = 0; p < s->n; p++)
            if (k > 2 && load_acq(done_of(s, p)) < k - 2)
                return; /* a rank still reads collective k - 2 */
        memcpy(data_of(s, s->me, k), req->own,
               req->shm == OC__SHM_ALLTOALL ? bytes * s->n : bytes);
        __atomic_store_n(seq_of(s, s->me, k), k, __ATOMIC_RELEASE);
        req->shm_written = 1;
    }
    if (s->done != k - 1)
        return; /* the one before first */
    for (uint32_t p = 0; p < s->n; p++)
        if (load_acq(seq_of(s, p, k)) != k)
            return;
    if (req->shm == OC__SHM_ALLREDUCE) {
        const void **srcs = oc__coll_of(req->ctx)->ordered_srcs;
        for (uint32_t p = 0; p < s->n; p++)
            srcs[p] = data_of(s, p, k);
        oc__reduce_ordered(req->dtype, req->op, req->rbuf, srcs, s->n,
                           req->blk_count);
    } else {
        for (uint32_t p = 0; p < s->n; p++)
            memcpy(req->rbuf + (size_t)p * bytes,
                   data_of(s, p, k) + (size_t)s->me * bytes, bytes);
    }
    s->done = k;
    __atomic_store_n(done_of(s, s->me), k, __ATOMIC_RELEASE);
    req->status = OC_OK;
}
