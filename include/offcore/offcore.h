/*
 * offcore.h — the public API of liboffcore, the offcore runtime library.
 *
 * An application creates one context per communication "channel" (one per
 * thread at most: a context is not thread-safe), sends small messages to any
 * rank with oc_send(), and receives them through a handler called from
 * oc_poll().  Messages are aggregated per destination into bundles; nothing
 * blocks and nothing is dropped: when a buffer cannot take a message,
 * oc_send() returns OC_ERR_NO_RESOURCE and the caller polls and retries.
 *
 * Placement (inline routing in the library, or through the node's agent) is
 * chosen at run time by configuration, never by the application.
 *
 * A failed context: when a peer rank, the node's agent or another node's
 * agent goes away, the transport fails, or the library runs out of memory
 * on a path that cannot refuse (a received bundle), the context fails
 * with OC_ERR_PEER_FAILED, OC_ERR_TRANSPORT or OC_ERR_NO_MEMORY (logged
 * once, saying which).  From then on every call that returns a status
 * returns that error ("the context's failure" below); oc_finalize() still
 * frees it.
 *
 * Every function's comment lists every status it returns (the values are
 * in <offcore/status.h>).  None of them is thread-safe on one context.
 */
#ifndef OFFCORE_OFFCORE_H
#define OFFCORE_OFFCORE_H

#include <offcore/status.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OC_VERSION_MAJOR 0
#define OC_VERSION_MINOR 1

/**
 * The library's version as built: "MAJOR.MINOR.PATCH", followed where it
 * was built from a git checkout by '+' and `git describe` (e.g.
 * "0.1.0+e5aa0e1").  The same string every offcore binary's --version
 * prints and the daemons' offcore_build_info metric carries.  Thread-safe.
 *
 * @return a static string, valid for the life of the process; never NULL
 */
OC_API const char *oc_version(void);

typedef struct oc_context oc_context_t;

/**
 * Message handler, called from oc_poll() once per delivered message.
 *
 * @param arg  params->handler_arg
 * @param src  rank that sent the message
 * @param msg  the payload; valid only until the handler returns.  8-byte
 *             aligned when len is a multiple of 8.
 * @param len  payload length in bytes (may be 0)
 * @return OC_OK when the message was consumed.  OC_ERR_NO_RESOURCE when the
 *         handler could not act on it now (it must then have had no side
 *         effect); the same message is delivered again by a later oc_poll().
 *         Any other value is treated as OC_OK and counted.
 *
 * A handler may call oc_send() (replies).  Sends made from inside a handler
 * never fail for lack of aggregation buffers: the runtime takes them from a
 * reserve so that request/reply traffic cannot deadlock.  A handler must not
 * call oc_poll(), oc_flush(), oc_quiesce() or oc_finalize().
 */
typedef oc_status_t (*oc_handler_t)(void *arg, uint32_t src, const void *msg,
                                    size_t len);

/**
 * Burst handler: called from oc_poll() with a run of @p n messages from
 * @p src that all have length @p len, the i-th at msgs + i * stride where
 * stride is @p len rounded up to a multiple of 8 (so an array of uint64_t
 * or of 16-byte structs arrives as that array).  One call per run instead
 * of one per message: what makes 8-byte messages cheap.  Runs come from
 * bundles whose messages all had one size; other messages arrive one at a
 * time (n = 1).
 *
 * @return how many of the n it consumed, from the first; fewer than n
 *         means "call again later with the rest" (those must have had no
 *         side effect).  Same rules as oc_handler_t otherwise: it may
 *         oc_send()/oc_send_burst() replies, nothing else.  @p msgs is
 *         valid only during the call.
 */
typedef size_t (*oc_burst_handler_t)(void *arg, uint32_t src,
                                     const void *msgs, size_t len, size_t n);

/**
 * All-gather used to bootstrap: every rank contributes @p len bytes from
 * @p sendbuf; on return @p recvbuf holds size * len bytes, rank i's at
 * offset i * len.  Collective over all ranks of the job.  Used only during
 * oc_init() and oc_finalize(), never on the data path.
 */
typedef oc_status_t (*oc_allgather_fn_t)(void *arg, const void *sendbuf,
                                         void *recvbuf, size_t len);

/** Bits of oc_context_params_t.field_mask: which fields are set. */
enum {
    OC_PARAM_RANK        = 1u << 0,
    OC_PARAM_SIZE        = 1u << 1,
    OC_PARAM_ALLGATHER   = 1u << 2,
    OC_PARAM_HANDLER     = 1u << 3,
    OC_PARAM_NAME        = 1u << 4,
    OC_PARAM_BURST_HANDLER = 1u << 5,
};

/**
 * Context parameters.  Start with field_mask; fields whose bit is not set
 * are ignored, so the struct can grow without breaking callers.
 *
 * Rank and size come from the fields when set, else from OC_RANK / OC_SIZE.
 * The allgather comes from the field when set; else ranks rendezvous through
 * files in OC_BOOTSTRAP_DIR (all ranks on hosts sharing that directory).
 * include/offcore/mpi.h fills rank, size and allgather from an MPI
 * communicator.
 */
typedef struct {
    uint64_t          field_mask;
    uint32_t          rank;
    uint32_t          size;
    oc_allgather_fn_t allgather;
    void             *allgather_arg;
    oc_handler_t      handler;      /**< this or burst_handler is required */
    void             *handler_arg;  /**< passed to either handler */
    const char       *name;         /**< for logs; copied */
    oc_burst_handler_t burst_handler; /**< preferred when both are set */
} oc_context_params_t;

/**
 * Create a context: read the configuration (OC_* environment variables),
 * start the transport, exchange addresses with every rank of the job.
 * Collective: every rank must call it.  Each error is logged where it is
 * found, saying what to change.
 *
 * @return OC_OK and *ctx_p set, or:
 *   - OC_ERR_INVALID_PARAM: params or ctx_p NULL, no handler, size 0, rank
 *     not below size, or size past the wire's 24-bit rank space;
 *   - OC_ERR_CONFIG: an OC_* setting (or OC_RANK / OC_SIZE) is not valid;
 *   - OC_ERR_BOOTSTRAP: rank or size given nowhere (params, OC_RANK /
 *     OC_SIZE), no way to exchange addresses in the inline placement (no
 *     allgather, no OC_BOOTSTRAP_DIR, more than one rank, no agent), the
 *     file exchange timed out (OC_BOOTSTRAP_TIMEOUT_S), or the ranks
 *     disagree on the wire version or OC_JOB;
 *   - any error the application's allgather returned (oc_init_mpi's:
 *     OC_ERR_BOOTSTRAP, OC_ERR_INVALID_PARAM), passed on unchanged;
 *   - OC_ERR_NO_MEMORY;
 *   - OC_ERR_TRANSPORT: UCX could not start or connect;
 *   - OC_ERR_TRANSPORT_REQUIRED: OC_REQUIRE_TRANSPORT names a transport
 *     that UCX does not offer toward other hosts, or that a peer
 *     connection does not use;
 *   - only with OC_PLACEMENT=agent (with auto, these fall back to the
 *     inline placement, with a warning): OC_ERR_CTL_CONNECT (nothing
 *     answers at OC_AGENT), OC_ERR_CTL_ADDR (OC_AGENT is not a usable
 *     address), OC_ERR_CTL_TIMEOUT (the agent did not answer in time),
 *     OC_ERR_CTL_KEY (OC_JOB_KEY missing or malformed), OC_ERR_CTL_AUTH
 *     (the agent refused the job: wrong key for OC_JOB, or another reason
 *     it gives, which is logged), OC_ERR_PEER_FAILED (the agent closed the
 *     connection during the handshake), OC_ERR_STATE (the agent answered
 *     out of turn: a protocol error, logged), OC_ERR_TRANSPORT (its
 *     endpoint).
 *   On error *ctx_p is untouched and nothing is left allocated.
 */
OC_API oc_status_t oc_init(const oc_context_params_t *params,
                           oc_context_t **ctx_p);

/**
 * Complete outstanding sends, synchronise with every rank (inline
 * placement: through the bootstrap all-gather; agent placement: with the
 * agent) and free the context.  Collective.  Messages not yet delivered
 * are lost: call oc_quiesce() first.
 *
 * @return OC_OK (also for NULL, a no-op, and for a failed context, which
 *         is freed without synchronising); OC_ERR_STATE (called from a
 *         handler: nothing is done, the context stays valid); or, with
 *         the context freed all the same, OC_ERR_NO_MEMORY or the error
 *         the bootstrap all-gather returned (inline placement).
 */
OC_API oc_status_t oc_finalize(oc_context_t *ctx);

/** This rank, and the number of ranks of the job.  @p ctx must be a
 *  context from oc_init() (not checked: these are on hot paths). */
OC_API uint32_t oc_rank(const oc_context_t *ctx);
OC_API uint32_t oc_size(const oc_context_t *ctx);

/** Largest payload oc_send() accepts, in bytes (depends on OC_BUNDLE_SIZE). */
OC_API size_t oc_max_message(const oc_context_t *ctx);

/** Placement this context runs in: "inline" or "agent".  Static string;
 *  never NULL. */
OC_API const char *oc_placement(const oc_context_t *ctx);

/**
 * Send @p len bytes to rank @p dest.  Non-blocking: the payload is copied
 * into the aggregation buffer for that destination before the call returns,
 * so @p buf may be reused at once.  Delivery happens at the destination's
 * oc_poll().  Order: from one rank to another, messages the application
 * sent arrive in the order sent, and so do messages its handlers sent
 * (replies); the two streams are not ordered with respect to each other
 * (like two channels, or bale's request and reply conveyors), which keeps
 * each of them in the compact fixed-size form.
 *
 * @return OC_OK (accepted; it will be delivered exactly once),
 *         OC_ERR_NO_RESOURCE (not accepted: call oc_poll() and retry),
 *         OC_ERR_RANK_RANGE (dest not below oc_size()),
 *         OC_ERR_MSG_TOO_LONG (len over oc_max_message()),
 *         OC_ERR_INVALID_PARAM (buf NULL with len > 0), or, once the
 *         context has failed, the context's failure (OC_ERR_PEER_FAILED:
 *         a rank, the agent or another node's agent went away;
 *         OC_ERR_TRANSPORT; OC_ERR_NO_MEMORY).  Messages that still fit
 *         the current buffer may be accepted before that; oc_poll()
 *         reports the failure at once.
 */
OC_API oc_status_t oc_send(oc_context_t *ctx, uint32_t dest, const void *buf,
                           size_t len);

/**
 * Send @p n messages of @p len bytes each, message i (at msgs + i * len)
 * to dests[i].  The burst form of oc_send(), for the hot loops of
 * applications that generate many small messages.
 * @return how many were accepted, from the first (0 .. n).  Fewer than
 *         n: message [return value] was refused; oc_send() on it returns
 *         why (any of oc_send()'s errors; usually OC_ERR_NO_RESOURCE:
 *         oc_poll() and continue from there).
 */
OC_API size_t oc_send_burst(oc_context_t *ctx, const uint32_t *dests,
                            const void *msgs, size_t len, size_t n);

/** oc_send_burst() with every message to @p dest: runs are copied into
 *  the destination's buffer in one piece.  Same return value. */
OC_API size_t oc_send_many(oc_context_t *ctx, uint32_t dest, const void *msgs,
                           size_t len, size_t n);

/**
 * Make progress: run the transport, deliver received messages to the
 * handler, and flush buffers whose timeout expired, or all of them when
 * nothing was sent since the previous call (idle).
 *
 * @return the number of messages delivered (>= 0); OC_ERR_STATE (called
 *         from a handler); the context's failure (OC_ERR_PEER_FAILED,
 *         OC_ERR_TRANSPORT, OC_ERR_NO_MEMORY).  A malformed bundle
 *         received is not an error of the call: it is logged, counted
 *         (bundles_rejected) and never delivered.
 */
OC_API int oc_poll(oc_context_t *ctx);

/** Hand every non-empty aggregation buffer to the transport now.
 *  @return OC_OK, or OC_ERR_NO_RESOURCE when some could not be sent yet
 *  (they stay buffered and go out on a later poll); OC_ERR_STATE (called
 *  from a handler); the context's failure (OC_ERR_PEER_FAILED,
 *  OC_ERR_TRANSPORT, OC_ERR_NO_MEMORY). */
OC_API oc_status_t oc_flush(oc_context_t *ctx);

/**
 * Collective termination: returns when every message that every rank sent
 * before calling oc_quiesce() (and every message sent by handlers while
 * delivering those) has been delivered.  Progresses while it waits.
 * @return OC_OK; OC_ERR_STATE (called from a handler, or a non-blocking
 *         quiesce is already running); the context's failure, or the
 *         error that failed the termination wave, which fails the context
 *         (OC_ERR_PEER_FAILED, OC_ERR_TRANSPORT, OC_ERR_NO_MEMORY).
 */
OC_API oc_status_t oc_quiesce(oc_context_t *ctx);

/** Non-blocking quiesce: start it, then call oc_quiesce_test() (which also
 *  progresses) until it returns OC_OK.  oc_send() stays allowed meanwhile.
 *  @return OC_OK; OC_ERR_STATE (one is already running, or called from a
 *  handler); the context's failure. */
OC_API oc_status_t oc_quiesce_start(oc_context_t *ctx);
/** @return OC_INPROGRESS; OC_OK (done: the next oc_quiesce_start() starts
 *  a new one); OC_ERR_STATE (none started, or called from a handler); the
 *  context's failure, or the error that failed the termination wave,
 *  which fails the context (OC_ERR_PEER_FAILED, OC_ERR_TRANSPORT,
 *  OC_ERR_NO_MEMORY). */
OC_API oc_status_t oc_quiesce_test(oc_context_t *ctx);

/**
 * Counters of one context, cumulative since oc_init().
 *
 * Versioned by size: new counters are only ever appended, and the caller
 * passes sizeof of its own struct to oc_counters_get(), so a program built
 * against an older header (a shorter struct) gets the counters it knows,
 * and one built against a newer header than the library it runs with
 * reads 0 in the counters the library does not have yet.
 */
typedef struct {
    uint64_t msgs_sent;        /**< accepted by oc_send */
    uint64_t bytes_sent;       /**< payload bytes accepted */
    uint64_t bundles_sent;     /**< bundles handed to the transport (incl. to self) */
    uint64_t wire_bytes_sent;  /**< bundle bytes incl. headers */
    uint64_t msgs_delivered;   /**< handler calls that consumed a message */
    uint64_t bytes_delivered;
    uint64_t bundles_received;
    uint64_t bundles_rejected; /**< malformed bundles, never delivered */
    uint64_t flush_full;       /**< flushes because a buffer was full */
    uint64_t flush_timeout;    /**< ... because OC_FLUSH_TIMEOUT_US expired */
    uint64_t flush_idle;       /**< ... because nothing was sent between polls */
    uint64_t flush_explicit;   /**< ... by oc_flush / oc_quiesce */
    uint64_t send_no_resource; /**< oc_send calls answered OC_ERR_NO_RESOURCE */
    uint64_t handler_retries;  /**< handler returned OC_ERR_NO_RESOURCE */
    uint64_t reserve_buffers;  /**< buffers taken from the reserve by handlers */
    uint64_t quiesce_rounds;   /**< termination-detection waves */
    /* peer connections made at oc_init, by the transport UCX picked for
     * their active messages (OC_LOG=runtime:info names each) */
    uint64_t conn_rdma;        /**< InfiniBand/RoCE verbs (rc, ud, dc) */
    uint64_t conn_tcp;         /**< TCP */
    uint64_t conn_sm;          /**< shared memory, self or GPU IPC (same host) */
    uint64_t conn_other;       /**< anything else, or not known */
    /* new counters go here, at the end, and nowhere else */
} oc_counters_t;

/**
 * Copy the context's counters into @p out, a struct of @p size bytes:
 * call it as oc_counters_get(ctx, &c, sizeof c).  The library fills the
 * first min(size, its own sizeof(oc_counters_t)) bytes and sets any bytes
 * beyond those (counters newer than the library) to 0; it never writes
 * past @p size.  Not thread-safe on the same context (like every call on
 * it); a handler may call it.
 *
 * @return OC_OK; OC_ERR_INVALID_PARAM (ctx or out NULL, or size 0 or not
 *         a multiple of 8: not a counters struct), and then *out is
 *         untouched.
 */
OC_API oc_status_t oc_counters_get(const oc_context_t *ctx, oc_counters_t *out,
                                   size_t size);

#ifdef __cplusplus
}
#endif
#endif /* OFFCORE_OFFCORE_H */
