/*
 * guard.h — the one admission policy of offcore's servers (offcored's
 * control socket, the /metrics endpoint, offcore-nvmf's listener): at most
 * max_conns connections, a newcomer over the cap taking the place of the
 * oldest one still pending; a deadline for a pending connection's whole
 * exchange; no spinning when accept runs out of descriptors (back-off, and
 * a reserve of descriptors for the server's own work).  The policy and its
 * reasons: docs/agent-limits.md, "Admission".  The guard keeps no sockets:
 * servers embed an oc_guard_slot_t and close what it names.
 *
 * Threading: one guard is used by one thread (the server's loop), except
 * the counters, which any thread may read (relaxed atomics).  Trust: every
 * peer is a stranger until its server says it settled.
 */
#ifndef OC_UTIL_GUARD_H
#define OC_UTIL_GUARD_H

#include <offcore/offcore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "clock.h"
#include "log.h"

typedef struct {
    uint32_t max_conns;   /* cap on open connections (>= 1) */
    uint32_t deadline_ms; /* pending connections must settle by then */
    uint32_t backoff_ms;  /* listener left alone after EMFILE & co */
} oc_guard_params_t;

/** Counters since start (read with oc__guard_counters()). */
typedef struct {
    uint64_t accepted;  /* connections taken in */
    uint64_t evicted;   /* pending ones closed to make room (cap) */
    uint64_t refused;   /* newcomers closed: cap reached, none pending */
    uint64_t expired;   /* pending ones closed at their deadline */
    uint64_t backoffs;  /* accept failed for want of descriptors/memory */
} oc_guard_counters_t;

typedef struct oc_guard_slot {
    uint64_t              deadline_us; /* pending: when it must settle */
    struct oc_guard_slot *prev, *next; /* pending list, oldest first */
    bool                  pending;
    bool                  counted;
} oc_guard_slot_t;

typedef struct {
    oc_guard_params_t p;
    const char       *name;       /* "control", "metrics": for the logs */
    uint32_t          nconns;
    oc_guard_slot_t  *head, *tail; /* pending, oldest first */
    uint64_t          paused_until_us;
    int               accept_errno;  /* of the last failed accept */
    oc_log_comp_t     comp;          /* the server's log component */
    uint32_t          fd_cap;        /* 0, or the cap the limit imposes */
    uint64_t          fd_cap_nofile; /* RLIMIT_NOFILE when it was set */
    uint64_t          fd_check_us;   /* next look at the limit */
    _Atomic uint64_t  c[5];        /* oc_guard_counters_t, in order */
    oc_log_limit_t    lim_accept, lim_cap, lim_expire, lim_fd;
} oc_guard_t;

/* The guard's times are util/clock.h's oc__now_us(), the project's one
 * monotonic clock. */

/** Set up @p g; @p name must outlive it.  Values of 0 in @p p become 1. */
void oc__guard_init(oc_guard_t *g, const char *name, const oc_guard_params_t *p);

/** Log as @p comp (default OC_COMP_UTIL): each server (offcored, offcore-nvmf,
 *  offcore-dp, the metrics exporter) has its guard's lines under its own
 *  module's name. */
void oc__guard_log_as(oc_guard_t *g, oc_log_comp_t comp);

/** Whether to poll the listener now.  When not, *wait_ms (if not NULL) is
 *  lowered to the time left in the back-off. */
bool oc__guard_listen_ok(oc_guard_t *g, uint64_t now, int *wait_ms);

/**
 * accept4() one connection from @p lfd (SOCK_NONBLOCK | SOCK_CLOEXEC).
 * @return OC_OK and *fd_out (and the address in @p ss / @p sl when not
 *   NULL); OC_INPROGRESS nothing waiting (or an aborted connection);
 *   OC_ERR_NO_RESOURCE out of descriptors or memory: the guard now backs
 *   off (counted, logged rate-limited; the errno is in g->accept_errno: on
 *   EMFILE / ENFILE call oc__guard_fd_short()); OC_ERR_TRANSPORT another
 *   error (logged rate-limited).
 */
oc_status_t oc__guard_accept(oc_guard_t *g, int lfd, int *fd_out,
                            struct sockaddr_storage *ss, socklen_t *sl);

/**
 * What oc__guard_accept() does with accept4()'s result, for a server that
 * accepted some other way (an io_uring accept's completion): @p res is the
 * new descriptor or a negated errno.  Counted, classified and logged as
 * there; the same return values (OC_OK when @p res >= 0).
 */
oc_status_t oc__guard_accept_result(oc_guard_t *g, int res);

/**
 * Make room for a newcomer under the cap (or the lower one the descriptor
 * limit imposes, oc__guard_fd_short()).  @return true when it may be added (then call
 * oc__guard_add()); *evict_out is the pending slot the caller must close
 * first (NULL when there was room).  false: refuse it (counted, logged
 * rate-limited); the caller closes the newcomer.
 */
bool oc__guard_admit(oc_guard_t *g, oc_guard_slot_t **evict_out);

/** A connection arrived: counted, pending, deadline from @p now. */
void oc__guard_add(oc_guard_t *g, oc_guard_slot_t *s, uint64_t now);
/** It proved itself: no deadline, no longer evictable. */
void oc__guard_settle(oc_guard_t *g, oc_guard_slot_t *s);
/** Pending again (HTTP: the next request on a kept-alive connection). */
void oc__guard_rearm(oc_guard_t *g, oc_guard_slot_t *s, uint64_t now);
/** It left (closed for whatever reason).  Idempotent. */
void oc__guard_remove(oc_guard_t *g, oc_guard_slot_t *s);

/** The oldest pending slot whose deadline has passed, or NULL.  Counted
 *  and logged (rate-limited) as expired; the caller closes it and calls
 *  oc__guard_remove(). */
oc_guard_slot_t *oc__guard_expired(oc_guard_t *g, uint64_t now);

/** The oldest pending slot, unlinked and counted as evicted, or NULL: for
 *  a server that must shed connections (poll() refusing more descriptors
 *  than RLIMIT_NOFILE after the limit was lowered under it).  The caller
 *  closes it and calls oc__guard_remove(). */
oc_guard_slot_t *oc__guard_shed(oc_guard_t *g);

/**
 * The process ran out of descriptors with the guard's connections open
 * (accept failed with EMFILE / ENFILE, or poll() refused more descriptors
 * than RLIMIT_NOFILE).  @p room is how many of its connections fit under
 * the limit now: after EMFILE, those whose descriptor is numbered below it
 * (every number below it is taken; one above it, opened before the limit
 * was lowered, frees nothing under it when closed); after poll(), the
 * limit less the server's other polled descriptors, at most that.  From
 * now on the guard holds at most @p room less OC_GUARD_FD_RESERVE (see
 * "limit" above; at least 1); oc__guard_admit() applies it as it applies
 * the cap.  For one limit the cap is only ever lowered: out again under
 * it, the server's own descriptors grew into the reserve, and shedding
 * gives it back.  Logged, rate-limited.
 * @return how many connections the caller must shed now (oc__guard_shed()
 *   each, then close it); fewer may be pending: shed those.
 */
uint32_t oc__guard_fd_short(oc_guard_t *g, uint32_t room);

/** Descriptors kept free under a limit that became the cap: what a server
 *  opens for itself at a time (UCX: one per endpoint being made, per
 *  routing thread), with room to spare; a constant, so that a low limit
 *  still leaves room for connections. */
#define OC_GUARD_FD_RESERVE 16u

/** Lift the cap oc__guard_fd_short() set once RLIMIT_NOFILE has been
 *  raised above what it was then (looked at, at most once a second, from
 *  @p now).  @return true when it was lifted (logged). */
bool oc__guard_fd_relax(oc_guard_t *g, uint64_t now);

/** Leave the listener alone for the back-off from @p now (what an accept
 *  failing with EMFILE does; also for a server that finds out otherwise,
 *  e.g. offcored when poll() refuses more descriptors than a lowered
 *  RLIMIT_NOFILE).  Counted in the back-offs counter either way. */
void oc__guard_pause(oc_guard_t *g, uint64_t now);

/** End a back-off early (the server freed a descriptor itself). */
void oc__guard_resume(oc_guard_t *g);

/** Milliseconds until the next deadline or the end of the back-off, at
 *  most @p cap_ms (for a poll() timeout). */
int oc__guard_wait_ms(const oc_guard_t *g, uint64_t now, int cap_ms);

void oc__guard_counters(const oc_guard_t *g, oc_guard_counters_t *out);

/** The cap a server can keep with its descriptor limit: @p wanted, lowered
 *  to 3/4 of RLIMIT_NOFILE (the rest is for UCX, ranks' endpoints, files)
 *  when the limit is lower.  *nofile_out: the limit (soft, after raising
 *  it to the hard limit, which this also does). */
uint32_t oc__guard_fit_nofile(uint32_t wanted, uint64_t *nofile_out);

#endif
