/*
 * transport.h — the thin wrapper over UCX's UCP API that the runtime and
 * the agent send bundles through.  Nothing above this layer includes UCX.
 *
 * One oc_tr_worker_t per thread (UCS_THREAD_MODE_SINGLE); none of these
 * functions is thread-safe on the same worker.  Bundles travel as UCP
 * active messages forced to the eager protocol (docs/facts.md: eager copies beat
 * rendezvous over cma at 16-64 KiB) and are received whole and persistent:
 * the receive callback keeps the data until oc__tr_release(), so a bundle is
 * parsed where UCX put it, without a copy.
 */
#ifndef OC_TRANSPORT_H
#define OC_TRANSPORT_H

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>

typedef struct oc_tr_context oc_tr_context_t;
typedef struct oc_tr_worker  oc_tr_worker_t;
typedef struct oc_tr_ep      oc_tr_ep_t;

/** A send in flight.  The caller embeds it in its own buffer descriptor
 *  (no allocation per send); it must stay valid until cb runs. */
typedef struct oc_tr_op oc_tr_op_t;
struct oc_tr_op {
    void (*cb)(oc_tr_op_t *op, oc_status_t status);
    uint64_t token; /* sent as the message's 8-byte header; 0: none */
};

/**
 * Receive callback, run inside oc__tr_progress().  @p token is the sender's
 * op->token (0 when it sent none): the agent gives each connection a
 * secret token and so knows who sent a bundle without trusting its
 * content.  @p data stays valid until
 * oc__tr_release(worker, data); the callee must release it exactly once
 * (possibly later, outside the callback).  It must not call
 * oc__tr_progress().
 */
typedef void (*oc_tr_recv_cb_t)(void *arg, uint64_t token, void *data,
                                size_t len);

/** Create the UCP context (active messages).  UCX_* variables apply. */
oc_status_t oc__tr_context_create(oc_tr_context_t **ctx_p);
/** The same for a rank whose node agent runs as another user: UCX's
 *  sysv and posix transports (owner-only segments) left out of UCX_TLS,
 *  sm turned into cma, tcp added to a list that names no network. */
oc_status_t oc__tr_context_create_xuser(oc_tr_context_t **ctx_p);
/** The same, with UCP_FEATURE_WAKEUP: its workers can sleep until
 *  something arrives (oc__tr_worker_efd, oc__tr_worker_arm).  For threads
 *  that may be idle for long (the agent's routers); the ranks, which only
 *  progress when the application calls, use the plain context. */
oc_status_t oc__tr_context_create_wakeup(oc_tr_context_t **ctx_p);
void oc__tr_context_destroy(oc_tr_context_t *ctx);

oc_status_t oc__tr_worker_create(oc_tr_context_t *ctx, oc_tr_worker_t **w_p);
/** Destroy a worker; every endpoint must be destroyed first. */
void oc__tr_worker_destroy(oc_tr_worker_t *w);

/** The file descriptor that turns readable when the worker has events
 *  (a context made with oc__tr_context_create_wakeup); -1 otherwise. */
int oc__tr_worker_efd(oc_tr_worker_t *w);

/** Arm the worker's event fd before sleeping on it.  Returns 1 when armed
 *  (nothing pending: sleep), 0 when events are pending (progress again
 *  first) or waking is not supported. */
int oc__tr_worker_arm(oc_tr_worker_t *w);

/** The worker's address, to exchange with peers.  Valid until
 *  oc__tr_worker_destroy(). */
oc_status_t oc__tr_worker_address(oc_tr_worker_t *w, const void **addr,
                                 size_t *len);

/** Route active-message id @p id to @p cb.  If @p persistent, the data is
 *  kept for the callee (oc__tr_release); else it is valid only during cb. */
oc_status_t oc__tr_set_handler(oc_tr_worker_t *w, unsigned id,
                              oc_tr_recv_cb_t cb, void *arg, int persistent);
/** Hand a message that came by another path than UCX (a shared-memory
 *  ring) to the handler set for @p id, as if it had arrived as an active
 *  message: 1 when a handler took it, 0 when none is set for @p id or it
 *  is a persistent one (which may keep @p data: the caller's memory is
 *  valid only during the call). */
int oc__tr_deliver_local(oc_tr_worker_t *w, unsigned id, uint64_t token,
                         void *data, size_t len);

/** Connect to a peer's worker.  With @p peer_err, a peer that dies fails
 *  the endpoint's operations (UCP_ERR_HANDLING_MODE_PEER) instead of
 *  leaving them hanging, and the worker's failure callback
 *  (oc__tr_worker_on_failure) runs; UCX's keepalive finds a dead peer
 *  within about a second (the contexts set UCX_KEEPALIVE_INTERVAL=1s and
 *  peer-failure handling on shared memory unless the environment says
 *  otherwise).  It narrows the transports UCX can use (no cma on one
 *  host).  When UCX cannot do it, the endpoint is made without it and a
 *  warning logged. */
oc_status_t oc__tr_ep_create(oc_tr_worker_t *w, const void *addr,
                            int peer_err, oc_tr_ep_t **ep_p);
/**
 * Called (inside oc__tr_progress) once per endpoint made with peer_err
 * whose peer died or became unreachable; @p why is UCX's reason.  Its
 * receives posted from any peer are not failed by UCX (tagged receives
 * match any sender): the owner must fail what waits on that peer.  Sends
 * to it complete with OC_ERR_PEER_FAILED.
 */
typedef void (*oc_tr_fail_cb_t)(void *arg, oc_tr_ep_t *ep, const char *why);
void oc__tr_worker_on_failure(oc_tr_worker_t *w, oc_tr_fail_cb_t cb, void *arg);
/** Has @p ep's peer failed (its failure callback run)?  0 for NULL. */
int oc__tr_ep_failed(const oc_tr_ep_t *ep);

/** Close (force) and free; progresses the worker until done.  NULL ok. */
void oc__tr_ep_destroy(oc_tr_worker_t *w, oc_tr_ep_t *ep);

/**
 * Send @p len bytes at @p buf as active message @p id, with op->token as
 * its header when non-zero.
 * @return OC_OK: done, buf reusable, op->cb is NOT called;
 *         OC_INPROGRESS: buf must stay untouched until op->cb(op, status)
 *         (OC_ERR_PEER_FAILED there when the peer died);
 *         OC_ERR_PEER_FAILED: the peer is already known dead (logged at
 *         debug only: the endpoint's failure callback reports it);
 *         OC_ERR_TRANSPORT (logged): failed otherwise.  On an error op->cb
 *         is not called.
 */
oc_status_t oc__tr_send(oc_tr_ep_t *ep, unsigned id, const void *buf,
                       size_t len, oc_tr_op_t *op);

/** The most bytes oc__tr_send_small() takes. */
#define OC_TR_SMALL_MAX 8192

/** Send a small message (copied; at most OC_TR_SMALL_MAX bytes) as active
 *  message @p id with @p token; the copy comes from the worker's pool and
 *  goes back to it when the send completes (no allocation per message once
 *  the pool has grown to the most sends in flight).  For control traffic
 *  and the agent's small collective results (DONE with the data), not the
 *  bulk data path.
 *  @return as oc__tr_send(), or OC_ERR_INVALID_PARAM (too long),
 *          OC_ERR_NO_MEMORY (the pool could not grow). */
oc_status_t oc__tr_send_small(oc_tr_ep_t *ep, unsigned id, uint64_t token,
                             const void *buf, size_t len);
/** How many buffers @p w's small-send pool has allocated so far (tests:
 *  steady state allocates none). */
uint64_t oc__tr_worker_small_allocs(const oc_tr_worker_t *w);
/** How many buffers @p w's small-send pool has handed out so far, from
 *  its free lists or new (tests: the messages meant to take the pool do;
 *  a copy allocated beside it would not count in either). */
uint64_t oc__tr_worker_small_gets(const oc_tr_worker_t *w);

/**
 * Tagged send of @p len bytes with the 64-bit @p tag (UCP_FEATURE_TAG:
 * the plain and the wakeup contexts).  UCX picks eager or rendezvous by size:
 * large payloads are copied once, into the buffer the receiver posted.
 * op->token is not used.  Returns as oc__tr_send(); a send that a dead
 * peer fails completes with OC_ERR_PEER_FAILED (logged at debug only: the
 * endpoint's failure callback reports it).
 */
oc_status_t oc__tr_tag_send(oc_tr_ep_t *ep, uint64_t tag, const void *buf,
                           size_t len, oc_tr_op_t *op);
/**
 * Post a receive of exactly @p len bytes tagged @p tag (matched exactly,
 * from any peer) into @p buf.  @return OC_OK (already received),
 * OC_INPROGRESS (op->cb(op, status) runs later; @p buf and @p op stay
 * valid until then), OC_ERR_WIRE_LENGTH (the message had another length;
 * as the callback's status too), OC_ERR_PEER_FAILED (its sender died
 * mid-message), OC_ERR_TRANSPORT.  op->token is
 * overwritten.
 */
oc_status_t oc__tr_tag_recv(oc_tr_worker_t *w, uint64_t tag, void *buf,
                           size_t len, oc_tr_op_t *op);

/** A receive posted with oc__tr_tag_recv_masked(): what matched it. */
typedef struct {
    oc_tr_op_t op;
    uint64_t   tag; /* the sender's tag: set before op.cb runs with OC_OK */
    size_t     len; /* the bytes received: likewise */
} oc_tr_recv_op_t;

/**
 * Post a receive of at most @p cap bytes into @p buf of a message whose
 * tag equals @p tag in the bits set in @p mask (so that one receive takes
 * one of a few tags: the caller tells them apart by op->tag).  The caller
 * checks op->len.  @return OC_INPROGRESS (op->op.cb(&op->op, status) runs
 * later, with OC_OK and op->tag and op->len set, OC_ERR_WIRE_LENGTH when
 * the message was longer than @p cap, OC_ERR_PEER_FAILED when its sender
 * died mid-message, or OC_ERR_TRANSPORT; @p buf and @p op stay valid until
 * then), or OC_ERR_TRANSPORT (logged; the callback does not run).
 */
oc_status_t oc__tr_tag_recv_masked(oc_tr_worker_t *w, uint64_t tag,
                                  uint64_t mask, void *buf, size_t cap,
                                  oc_tr_recv_op_t *op);
/* For code built against several revisions of this header
 * (bench/router/rb_kernel.c). */
#define OC_TR_HAS_TAG_RECV_MASKED 1

/** Progress communication.  @return a non-zero value if anything happened. */
unsigned oc__tr_progress(oc_tr_worker_t *w);

/** Give back data handed to a persistent receive callback. */
void oc__tr_release(oc_tr_worker_t *w, void *data);

/** Describe the transports UCX selected for @p ep (for logs and doctor). */
void oc__tr_ep_describe(oc_tr_ep_t *ep, char *buf, size_t len);

/* ---- which transport is really in use (runtime watch, offcore doctor) ----
 * UCX 1.13 has no ucp_ep_query() field for an endpoint's transports (1.14
 * added UCP_EP_ATTR_FIELD_TRANSPORTS), so these read ucp_ep_print_info()'s
 * lane table and ucp_context_print_info()'s resource list. */

/** Transport classes, as bits. */
enum {
    OC_TR_CLASS_SELF  = 1u << 0, /* self: a worker to itself */
    OC_TR_CLASS_SM    = 1u << 1, /* posix sysv cma knem xpmem: same host only */
    OC_TR_CLASS_GPU   = 1u << 2, /* cuda_ipc cuda_copy gdr_copy rocm_*: same host */
    OC_TR_CLASS_TCP   = 1u << 3, /* tcp: the slow network path */
    OC_TR_CLASS_RDMA  = 1u << 4, /* rc ud dc (_verbs, _mlx5): InfiniBand/RoCE */
    OC_TR_CLASS_OTHER = 1u << 5,
};
/** Classes that can only reach a peer on the same host. */
#define OC_TR_CLASS_INTRA_HOST (OC_TR_CLASS_SELF | OC_TR_CLASS_SM | OC_TR_CLASS_GPU)

/** The class of UCX transport name @p tl ("rc_mlx5", "tcp", "sysv").
 *  @p len: its length (the name need not be terminated). */
unsigned oc__tr_class_of(const char *tl, size_t len);
/** "rdma", "tcp", "sm", "self", "gpu", "other" for one class bit; NULL
 *  for anything else.  oc__tr_class_parse() is the inverse. */
const char *oc__tr_class_name(unsigned cls);
unsigned oc__tr_class_parse(const char *name, size_t len);

/**
 * Parse ucp_ep_print_info() text @p info: write the transports of the
 * lanes that carry active messages ("sysv/memory,cma/memory", no
 * duplicates, in lane order) to @p out.  Pure function (tests feed it
 * recorded text).  @return the class bits of those lanes; 0 when none
 * parsed.
 */
unsigned oc__tr_parse_ep_info(const char *info, char *out, size_t outlen);

/** The transports UCX uses for active messages on @p ep (as
 *  oc__tr_parse_ep_info).  @return their class bits. */
unsigned oc__tr_ep_transports(oc_tr_ep_t *ep, char *out, size_t outlen);

/** Parse ucp_context_print_info() text: the resources ("self/memory0
 *  tcp/lo tcp/eth0 ...", space-separated) to @p out.  @return their
 *  class bits. */
unsigned oc__tr_parse_ctx_info(const char *info, char *out, size_t outlen);
/** The transport resources of @p ctx (as oc__tr_parse_ctx_info). */
unsigned oc__tr_context_resources(oc_tr_context_t *ctx, char *out,
                                 size_t outlen);

/** A context that offers only the transports that reach other hosts (the
 *  UCX_TLS setting without shared memory and self; when UCX_TLS is unset,
 *  "^sm,self").  `offcore doctor` connects a worker of the normal context
 *  to one of these to learn what UCX would pick toward another node. */
oc_status_t oc__tr_context_create_net(oc_tr_context_t **ctx_p);

/** The UCX library's version ("1.13.1"). */
const char *oc__tr_version(void);

/** From now on, in this process, oc__tr_ep_create() records which
 *  transports each new endpoint uses (as oc__tr_ep_transports) under its
 *  remote worker, for threads that do not own the worker (tlbook.c):
 *  offcored's control and metrics threads.  Costs one ucp_ep_print_info
 *  per endpoint created. */
void oc__tr_book_enable(void);
/** What was recorded for the newest live endpoint to the worker whose
 *  address is @p addr: its class bits in *@p cls and its transports
 *  ("tcp/lo") in @p out.  @return 1; -1 when the newest attempt to make
 *  one failed (@p out says why: "ucp_ep_create: Endpoint timeout"); or 0
 *  (and "") when none is known: the book is off, the endpoint not yet
 *  created or already gone.  Thread-safe. */
int oc__tr_book_lookup(const void *addr, unsigned *cls, char *out,
                      size_t outlen);
/** Strike out the failed attempts recorded for @p addr's worker (the
 *  owner acted on them).  Thread-safe. */
void oc__tr_book_forget(const void *addr);

/** The main class of class bits @p cls, for one word in logs and
 *  metrics: "rdma" if any lane is, else "tcp", else "sm" (any class that
 *  stays on the host), else "other"; "unknown" for 0. */
const char *oc__tr_class_main(unsigned cls);

/** Iterate a worker's live endpoints: NULL gives the first; returns NULL
 *  after the last.  Not safe against concurrent create/destroy. */
oc_tr_ep_t *oc__tr_worker_ep_next(oc_tr_worker_t *w, oc_tr_ep_t *prev);

#endif
