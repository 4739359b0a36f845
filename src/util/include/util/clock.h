/*
 * clock.h — offcore's clocks, in one place (every module reads time through
 * it): the monotonic clock for intervals and deadlines, the wall clock for
 * timestamps that leave the process, and a thread's CPU time.  Thread-safe:
 * plain clock_gettime() reads, which the vDSO answers without a system call.
 */
#ifndef OC_UTIL_CLOCK_H
#define OC_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/** Microseconds of CLOCK_MONOTONIC (an arbitrary origin, never going back). */
static inline uint64_t oc__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/** Nanoseconds of the same clock (the packet path's policers). */
static inline uint64_t oc__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/** Milliseconds of the same clock (deadlines of control-plane waits). */
static inline int64_t oc__now_ms(void)
{
    return (int64_t)(oc__now_us() / 1000u);
}

/** Microseconds since the Unix epoch (CLOCK_REALTIME): only for timestamps
 *  that others read as dates (IPFIX flowStart/EndMilliseconds).  It can
 *  step (NTP, an operator), so never measure an interval with it: a caller
 *  comparing two readings must treat a later one that is smaller as no
 *  time at all (src/pkt/flow.c does). */
static inline uint64_t oc__wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/** Nanoseconds of CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID):
 *  what a call cost its caller, whatever else runs on the core. */
static inline uint64_t oc__thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
