/*
 * base.c — what the target lends the code that serves its hosts (conn.c,
 * qpair.c, admin.c, io.c): a submission entry of the ring, the clock, a
 * subsystem by its NQN.  Out of target.c, whose loop calls that code, so
 * that no call goes back up to the loop; the PDU stream's fuzz target
 * (tests/fuzz/fuzz_nvmf_stream.c) puts a ring and a clock of its own in
 * this file's place.
 *
 * Threading: a worker's own thread, except oc__nvmf_worker_wake (any).
 */
#include "target.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t oc__nvmf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t oc__nvmf_now_ms(void)
{
    return oc__nvmf_now_ns() / 1000000;
}

struct io_uring_sqe *oc__nvmf_sqe(oc_nvmf_worker_t *w)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    if (!sqe) { /* full: hand what is queued to the kernel, then retry */
        io_uring_submit(&w->ring);
        sqe = io_uring_get_sqe(&w->ring);
    }
    return sqe;
}

void oc__nvmf_worker_wake(oc_nvmf_worker_t *w)
{
    uint64_t one = 1;

    /* an eventfd's counter only saturates past 2^64-2: never short */
    if (w->wake_fd >= 0 && write(w->wake_fd, &one, sizeof(one)) < 0)
        return; /* EAGAIN: it is awake already */
}

oc_nvmf_subsys_t *oc__nvmf_subsys_find(oc_nvmf_target_t *t, const char *nqn)
{
    if (!strcmp(nqn, OC_NVMF_DISCOVERY_NQN))
        return &t->subsys[0];
    for (int i = 1; i <= t->nsubsys; i++)
        if (!strcmp(t->subsys[i].conf->nqn, nqn))
            return &t->subsys[i];
    return NULL;
}
