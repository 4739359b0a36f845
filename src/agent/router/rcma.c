/*
 * rcma.c — the agent moves a local rank's allreduce and all-to-all(v)
 * data by memory: process_vm_readv of its send buffer, process_vm_writev
 * of its result (an all-to-all's blocks, many per call): one copy each, no
 * CPU or progress from the rank (docs/coll.md, "By memory").
 *
 * Trust: only a rank whose control connection the kernel vouched for
 * (SO_PEERCRED at HELLO) is served, only for that pid (pinned with a pidfd
 * and checked alive before each chunk), and only in the two ranges its
 * decoded descriptor gave: a rank can make the agent touch no memory but
 * its own.  Where the kernel refuses (uid, Yama), the rank is told to use
 * UCX (OC_COLLD_FALLBACK); a later failure fails the collective by name.
 * Threading: router thread only; at most OC_RCMA_CHUNK bytes a call and
 * OC_RCMA_ROUND per round of the router's loop.  Details: docs/coll.md.
 */
#include "rcoll_int.h"

#include "util/log.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/uio.h>
#include <unistd.h>


void oc__rcma_rank_init(oc_router_t *r, lrank_t *l, uint32_t pid)
{
    l->pid = pid;
    l->pidfd = -1;
    l->cma = 0;
    if (pid == 0 || !r->p.coll_cma)
        return;
    l->pidfd = pidfd_open((pid_t)pid, 0);
    if (l->pidfd < 0)
        oc_info(OC_COMP_ROUTER, "rank pid %u: pidfd_open: %s (its collectives "
                "go by UCX)", pid, strerror(errno));
}

void oc__rcma_rank_fini(lrank_t *l)
{
    if (l != NULL && l->pidfd >= 0) {
        close(l->pidfd);
        l->pidfd = -1;
    }
}

/* The process the pidfd was opened on has not exited. */
static int pidfd_alive(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return poll(&p, 1, 0) == 0;
}

static int alive(const lrank_t *l)
{
    return pidfd_alive(l->pidfd);
}

int oc__rcma_copy(uint32_t pid, int pidfd, int write, void *local,
                  uint64_t remote, size_t len)
{
    struct iovec lv = {local, len};
    struct iovec rv = {(void *)(uintptr_t)remote, len};
    ssize_t n;

    if (!pidfd_alive(pidfd)) {
        errno = ESRCH;
        return -1;
    }
    n = write ? process_vm_writev((pid_t)pid, &lv, 1, &rv, 1, 0)
              : process_vm_readv((pid_t)pid, &lv, 1, &rv, 1, 0);
    if (n < 0)
        return -1;
    if ((size_t)n != len) { /* a page in the range is not mapped */
        errno = EFAULT;
        return -1;
    }
    return 0;
}

/* Copy @p len bytes between @p local and @p remote in @p l's process. */
static int copy(const lrank_t *l, int write, void *local, uint64_t remote,
                size_t len)
{
    return oc__rcma_copy(l->pid, l->pidfd, write, local, remote, len);
}

int oc__rcma_accept(oc_router_t *r, lrank_t *l, uint32_t job, uint32_t rank,
                    uint32_t pid)
{
    const char *why = NULL;
    int told = l->cma < 0; /* the rank heard why once: it offers no more */

    if (!r->p.coll_cma)
        why = "OC_AGENT_COLL_CMA=n";
    else if (l->pid == 0)
        why = "the kernel did not say who it is (TCP control socket)";
    else if (pid != l->pid)
        why = "the descriptor's pid is not its connection's";
    else if (l->pidfd < 0)
        why = "no pidfd to pin its pid (pidfd_open failed)";
    else if (l->cma < 0)
        why = "refused before";
    else if (l->cma == 0) {
        /* the first offer: may we? (1 byte of nothing: EPERM says no) */
        uint8_t b;
        struct iovec lv = {&b, 1}, rv = {NULL, 1};
        if (process_vm_readv((pid_t)l->pid, &lv, 1, &rv, 1, 0) < 0 &&
            (errno == EPERM || errno == ESRCH)) {
            why = errno == EPERM ? "the kernel refuses (another uid, or a "
                                   "ptrace policy)" : "it is gone";
            l->cma = -1;
        } else {
            l->cma = 1;
            oc_info(OC_COMP_ROUTER, "job %u rank %u: collective data by "
                    "memory (pid %u)", job, rank, l->pid);
        }
    }
    if (why == NULL) {
        CNT_ADD(r->c.coll_cma, 1);
        return 1;
    }
    CNT_ADD(r->c.coll_cma_fallback, 1);
    if (!told)
        oc_info(OC_COMP_ROUTER, "job %u rank %u: collective data by UCX, not "
                "by memory: %s", job, rank, why);
    l->cma = -1;
    return 0;
}

/* The failure of a transfer of rank @p i's (errno says why): names it
 * for that rank, fails the collective. */
static void failed(acoll_t *c, uint32_t i, const lrank_t *l, int write)
{
    int gone = l == NULL || errno == ESRCH;
    c->r[i].cma_st = gone ? OC_ERR_COLL_PEER_FAILED : OC_ERR_COLL_MEMORY;
    c->status = OC_ERR_COLL_PEER_FAILED;
    oc_warn(OC_COMP_ROUTER, "job %u rank %u: collective %u: cannot %s its %s "
            "buffer: %s", c->job, i, c->seq, write ? "write" : "read",
            write ? "receive" : "send", gone ? "it is gone" : strerror(errno));
}

int oc__rcma_step(oc_router_t *r, acoll_t *c, int write)
{
    int all = 1;

    for (uint32_t i = c->first; i <= c->last; i++) {
        rrank_t *rr = &c->r[i];
        rjob_t *j;
        lrank_t *l;
        size_t len = write ? rr->rlen : rr->slen, n;

        if (!rr->have || !rr->cma || rr->moved == len)
            continue;
        if (c->status != OC_OK)
            return 1; /* failed: moves nothing more */
        j = oc__router_job_find(r, c->job);
        l = j != NULL ? j->local[i] : NULL;
        while (rr->moved < len && r->cma_budget > 0) {
            if (!write && rr->hole_len > 0 && rr->moved == rr->hole_off) {
                rr->moved += rr->hole_len; /* its own block: not read */
                continue;
            }
            n = len - rr->moved;
            n = n < OC_RCMA_CHUNK ? n : OC_RCMA_CHUNK;
            if (!write && rr->hole_len > 0 && rr->moved < rr->hole_off &&
                n > rr->hole_off - rr->moved)
                n = rr->hole_off - rr->moved;
            if (l == NULL ||
                copy(l, write, (write ? c->res : rr->in) + rr->moved,
                     (write ? rr->raddr : rr->saddr) + rr->moved, n) != 0) {
                failed(c, i, l, write);
                return 1;
            }
            rr->moved += n;
            r->cma_budget = r->cma_budget > n ? r->cma_budget - n : 0;
        }
        if (rr->moved < len)
            all = 0;
    }
    return all;
}

/* All-to-all(v): up to OC_RCMA_IOV blocks (and about OC_RCMA_CHUNK bytes)
 * a process_vm_writev; the blocks of rank d start at rr->moved, the next
 * source rank to write. */
#define OC_RCMA_IOV 64
int oc__rcma_a2a_step(oc_router_t *r, acoll_t *c)
{
    int all = 1;

    for (uint32_t d = c->first; d <= c->last; d++) {
        rrank_t *rr = &c->r[d];
        const uint8_t **src = c->a2a_src + (size_t)(d - c->first) * c->size;
        const uint64_t *rc = rr->v + 2 * (size_t)c->size, *rd = rc + c->size;
        rjob_t *j;
        lrank_t *l;

        if (!rr->have || !rr->cma || rr->moved == c->size)
            continue;
        if (c->status != OC_OK)
            return 1; /* failed: moves nothing more */
        j = oc__router_job_find(r, c->job);
        l = j != NULL ? j->local[d] : NULL;
        while (rr->moved < c->size && r->cma_budget > 0) {
            struct iovec lv[OC_RCMA_IOV], rv[OC_RCMA_IOV];
            size_t n = 0, bytes = 0, s = rr->moved;
            ssize_t got;
            for (; s < c->size && n < OC_RCMA_IOV && bytes < OC_RCMA_CHUNK; s++) {
                if (src[s] == NULL)
                    continue;
                /* within [raddr, raddr + rlen): the decoder checked that
                 * rlen is the extent of these very blocks */
                lv[n].iov_base = (void *)(uintptr_t)src[s];
                lv[n].iov_len = rc[s] * c->es;
                rv[n].iov_base = (void *)(uintptr_t)(rr->raddr + rd[s] * c->es);
                rv[n].iov_len = rc[s] * c->es;
                bytes += rc[s] * c->es;
                n++;
            }
            if (n > 0) {
                if (l == NULL || !alive(l)) {
                    errno = ESRCH;
                    failed(c, d, l, 1);
                    return 1;
                }
                got = process_vm_writev((pid_t)l->pid, lv, n, rv, n, 0);
                if (got < 0 || (size_t)got != bytes) {
                    if (got >= 0)
                        errno = EFAULT; /* a page in the range is not mapped */
                    failed(c, d, l, 1);
                    return 1;
                }
            }
            rr->moved = (uint32_t)s;
            r->cma_budget = r->cma_budget > bytes ? r->cma_budget - bytes : 0;
        }
        if (rr->moved < c->size)
            all = 0;
    }
    return all;
}

void oc__rcma_self(const acoll_t *c, rrank_t *rr, uint32_t me)
{
    const uint64_t n = c->size, cnt = rr->v[me], off = rr->v[n + me];

    rr->hole_off = rr->hole_len = 0;
    if (cnt == 0 || cnt != rr->v[2 * n + me]) {
        rr->self = 0;
        return;
    }
    for (uint32_t s = 0; s < n; s++)
        if (s != me && rr->v[s] > 0 && rr->v[n + s] < off + cnt &&
            off < rr->v[n + s] + rr->v[s])
            return; /* another block reads those bytes */
    rr->hole_off = off * c->es;
    rr->hole_len = cnt * c->es;
}

void oc__rcma_round(oc_router_t *r)
{
    r->cma_budget = OC_RCMA_ROUND;
}
