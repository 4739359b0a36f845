/*
 * transport_int.h — what transport.c and tlbook.c share (private to
 * src/transport): the book of endpoints' transports.  The book's
 * functions are thread-safe (one mutex, tlbook.c); the uid query is pure.
 * And the pool of small sends' copies (tlsmall.c), one per worker, as
 * single-threaded as its worker.
 */
#ifndef OC_TRANSPORT_INT_H
#define OC_TRANSPORT_INT_H

#include "transport/transport.h"

#include <stddef.h>
#include <stdint.h>

/** Has oc__tr_book_enable() been called? */
int oc__tr_book_on(void);
/** Write @p ep's transports under remote worker @p uid (the creating
 *  thread, right after ucp_ep_create). */
void oc__tr_book_add(const void *ep, uint64_t uid, unsigned cls,
                     const char *tls);
void oc__tr_book_failed(uint64_t uid, const char *why);
/** Strike @p ep out (before it is freed); no-op when not there. */
void oc__tr_book_del(const void *ep);
/** The unique id of the worker whose address is @p addr. */
oc_status_t oc__tr_addr_uid(const void *addr, uint64_t *uid);

/** The names of positive UCX_TLS list @p tls that reach other hosts, in
 *  @p buf; -1 when none does (tls.c). */
int oc__tr_net_tls(const char *tls, char *buf, size_t len);
/** UCX_TLS (@p tls, NULL when unset) for a peer of another user on this
 *  host, in @p buf (tls.c; oc__tr_context_create_xuser). */
void oc__tr_xuser_tls(const char *tls, char *buf, size_t len);

/* A copy of one small message in flight: the send's op first (the send
 * callback gets it back), then the bytes. */
typedef struct oc__tr_small_pool oc__tr_small_pool_t;
typedef struct oc__tr_small_buf  oc__tr_small_buf_t;
struct oc__tr_small_buf {
    oc_tr_op_t           op;
    oc__tr_small_buf_t  *next; /* on the pool's free list */
    oc__tr_small_pool_t *pool;
    unsigned             cls;
    _Alignas(8) uint8_t  data[];
};
#define OC__TR_SMALL_CLASSES 2
struct oc__tr_small_pool {
    oc__tr_small_buf_t *free[OC__TR_SMALL_CLASSES];
    unsigned            nfree[OC__TR_SMALL_CLASSES];
    uint64_t            allocs; /* mallocs so far: the pool's misses */
    uint64_t            gets;   /* buffers handed out, hits and misses */
};
/** A buffer of at least @p len bytes (<= OC_TR_SMALL_MAX) from @p pool's
 *  free list, else newly allocated; NULL when too long or out of memory.
 *  It stays the caller's until oc__tr_small_put(). */
oc__tr_small_buf_t *oc__tr_small_get(oc__tr_small_pool_t *pool, size_t len);
/** Give @p b back to its pool (freed when the pool keeps enough). */
void oc__tr_small_put(oc__tr_small_buf_t *b);
/** Free what @p pool keeps (the worker's destroy, after UCX's: no send
 *  callback can come back later). */
void oc__tr_small_fini(oc__tr_small_pool_t *pool);

#endif
