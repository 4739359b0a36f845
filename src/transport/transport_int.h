/*
 * transport_int.h — what transport.c and tlbook.c share (private to
 * src/transport): the book of endpoints' transports.  The book's
 * functions are thread-safe (one mutex, tlbook.c); the uid query is pure.
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

#endif
