/*
 * app_perf.h — last-level-cache misses of this process over a timed region,
 * from the kernel's perf_event_open(2), for the memory side of the study's
 * memory-to-communication (M:C) ratio (docs/evaluation.md).
 *
 * Counts user-space misses of every thread of the process (inherit), so
 * UCX's progress threads are included.  Where the counters cannot be had
 * (a VM without a virtual PMU, perf_event_paranoid > 2, a seccomp filter)
 * it records why, and the apps print that reason instead of a number.
 */
#ifndef OC_APP_PERF_H
#define OC_APP_PERF_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int      fd;          /**< -1 when not counting */
    bool     ok;          /**< misses is valid (after oc_app_perf_stop) */
    uint64_t misses;
    const char *event;    /**< which event was counted */
    char     why[128];    /**< when unavailable: the reason */
} oc_app_perf_t;

/** Bytes one miss brings from memory (a cache line). */
#define OC_APP_PERF_LINE 64u

/** Open and start the counter.  Never fails: on error p->fd is -1 and
 *  p->why says why.  OC_APP_PERF=off skips it (p->why says so). */
void oc_app_perf_start(oc_app_perf_t *p);

/** Stop, read p->misses (p->ok) and close.  No-op when unavailable. */
void oc_app_perf_stop(oc_app_perf_t *p);

#endif /* OC_APP_PERF_H */
