/*
 * base.c — what the target lends the code that serves its hosts (conn.c,
 * qpair.c, admin.c, io.c): a submission entry of the ring, the clock, a
 * subsystem by its NQN.  Out of target.c, whose loop calls that code, so
 * that no call goes back up to the loop; the PDU stream's fuzz target
 * (tests/fuzz/fuzz_nvmf_stream.c) puts a ring and a clock of its own in
 * this file's place.
 *
 * Threading: the loop thread only.
 */
#include "target.h"

#include <string.h>
#include <time.h>

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

struct io_uring_sqe *oc__nvmf_sqe(oc_nvmf_target_t *t)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
    if (!sqe) { /* full: hand what is queued to the kernel, then retry */
        io_uring_submit(&t->ring);
        sqe = io_uring_get_sqe(&t->ring);
    }
    return sqe;
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
