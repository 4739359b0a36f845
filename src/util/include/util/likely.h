/*
 * util/likely.h — branch hints for the fast paths (the engine, the send
 * path, the routing kernel): likely(x), unlikely(x).  Defined here only
 * (tests/primitives.py).
 */
#ifndef OC_UTIL_LIKELY_H
#define OC_UTIL_LIKELY_H

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#endif /* OC_UTIL_LIKELY_H */
