/*
 * util/counter.h — counters that one thread writes and others read (the
 * metrics thread, `offcore stat`): the writer adds with a relaxed store of
 * the new sum — no locked instruction, it is the only writer — and readers
 * load relaxed, so a reader sees a value at most a little old, never a
 * torn one.  A counter with more than one writer needs an atomic add
 * instead (C11 atomic_fetch_add), not these.  Any integer lvalue.
 */
#ifndef OC_UTIL_COUNTER_H
#define OC_UTIL_COUNTER_H

/** Add @p v to @p field (its one writer only). */
#define OC__CTR_ADD(field, v)                                                 \
    __atomic_store_n(&(field), (field) + (v), __ATOMIC_RELAXED)
#define OC__CTR_INC(field) OC__CTR_ADD(field, 1)
/** Take @p v off a gauge (a count of things present, its one writer). */
#define OC__CTR_SUB(field, v)                                                 \
    __atomic_store_n(&(field), (field) - (v), __ATOMIC_RELAXED)
/** Read @p field from any thread. */
#define OC__CTR_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

#endif /* OC_UTIL_COUNTER_H */
