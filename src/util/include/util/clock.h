/*
 * clock.h — the one monotonic clock of offcore (every module reads time
 * through it).  Thread-safe: a plain clock_gettime(CLOCK_MONOTONIC) read,
 * which the vDSO answers without a system call.
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

/** Nanoseconds of CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID):
 *  what a call cost its caller, whatever else runs on the core. */
static inline uint64_t oc__thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
