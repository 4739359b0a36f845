/*
 * busypoll.h — when busy-polling pays (poll-us in offcore-nvmf, --poll-us in
 * offcore-nvmf-load): for a while after work, look for more without
 * sleeping, because a sleeping thread on a halted virtual CPU takes tens
 * of us to wake and a command at QD32 has a few hundred in all.  That is
 * only worth it on a CPU nobody else wants: a thread the scheduler has
 * preempted since the last check (another task was waiting for its CPU)
 * stops polling for OC_NVMF_POLL_BACKOFF_NS and sleeps at once instead.
 *
 * Threading: one oc_nvmf_poller_t per polling thread, used by that thread
 * only.  No input from outside the process.
 */
#ifndef OC_NVMF_BUSYPOLL_H
#define OC_NVMF_BUSYPOLL_H

#include <stdint.h>
#include <sys/resource.h>

#define OC_NVMF_POLL_CHECK_NS 1000000ull     /* read the preemptions 1/ms */
#define OC_NVMF_POLL_BACKOFF_NS 100000000ull /* then sleep-only 100 ms */

typedef struct {
    uint64_t poll_ns;       /* 0: never poll */
    uint64_t last_work_ns;  /* when work last arrived */
    uint64_t next_check_ns;
    uint64_t off_until_ns;
    long     nivcsw;        /* involuntary context switches seen */
    uint64_t backoffs;      /* times polling stopped for contention */
} oc_nvmf_poller_t;

/** Work arrived at @now: poll (if enabled) for poll_ns from here. */
static inline void oc__nvmf_poll_work(oc_nvmf_poller_t *p, uint64_t now)
{
    p->last_work_ns = now;
}

/** 1: look for more work without sleeping; 0: sleep until it comes. */
static inline int oc__nvmf_poll_now(oc_nvmf_poller_t *p, uint64_t now)
{
    if (!p->poll_ns || now - p->last_work_ns >= p->poll_ns)
        return 0;
    if (now >= p->next_check_ns) {
        struct rusage ru;
        int first = p->next_check_ns == 0;
        p->next_check_ns = now + OC_NVMF_POLL_CHECK_NS;
        if (getrusage(RUSAGE_THREAD, &ru) == 0) {
            if (!first && ru.ru_nivcsw != p->nivcsw) {
                p->off_until_ns = now + OC_NVMF_POLL_BACKOFF_NS;
                p->backoffs++;
            }
            p->nivcsw = ru.ru_nivcsw;
        }
    }
    return now >= p->off_until_ns;
}

#endif
