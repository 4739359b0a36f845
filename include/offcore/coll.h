/*
 * offcore/coll.h — collectives over all ranks of a liboffcore context:
 * allreduce, all-to-all(v), broadcast and barrier, non-blocking with
 * blocking wrappers, in both placements (inline: the ranks run them;
 * agent: the node's offcored does, while the ranks compute).
 *
 * Semantics follow MPI's: every rank calls the same collectives in the
 * same order with matching arguments; one started with oc_i*() runs while
 * the application calls oc_poll(), oc_test() or oc_wait() on the context,
 * and its buffers belong to the library until it completes.  Several may
 * be in flight; they complete in any order.  A rank or agent that dies
 * fails it on every other rank with OC_ERR_COLL_PEER_FAILED.
 *
 * Threading: none of these is thread-safe on one context; a request
 * belongs to the context that started it.  Algorithms, numerical promises
 * and reproducibility (OC_COLL_REPRODUCIBLE): docs/coll.md.
 */
#ifndef OFFCORE_COLL_H
#define OFFCORE_COLL_H

#include <offcore/offcore.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types of a reduction or exchange. */
typedef enum {
    OC_INT32 = 0,
    OC_INT64,
    OC_UINT64,
    OC_FLOAT32,
    OC_FLOAT64,
    OC_BFLOAT16, /**< the upper 16 bits of a float32 (stored as uint16_t) */
    OC_FLOAT16   /**< IEEE 754 binary16 (stored as uint16_t) */
} oc_dtype_t;

/** Reduction operators.  OC_PROD is defined for integer types only. */
typedef enum {
    OC_SUM = 0,
    OC_MIN,
    OC_MAX,
    OC_PROD
} oc_op_t;

/** Pass as the send buffer to reduce (or exchange) in the receive buffer:
 *  its input is taken from there and overwritten with the result. */
#define OC_IN_PLACE ((const void *)1)

/** A collective in flight.  Owned by the library: freed by the oc_test()
 *  or oc_wait() that completes it, which also sets the caller's pointer
 *  to NULL. */
typedef struct oc_request oc_request_t;

/** Size in bytes of one element of @p dtype; 0 for an unknown type.
 *  Thread-safe. */
OC_API size_t oc_dtype_size(oc_dtype_t dtype);

/** How many element types (oc_dtype_t: 0 .. n-1) and reduction operators
 *  (oc_op_t: 0 .. n-1) this library knows.  Functions, not enum members,
 *  so that a type or an operator added in a later version changes no
 *  value an application was compiled with.  Thread-safe. */
OC_API int oc_dtype_count(void);
OC_API int oc_op_count(void);

/** The collectives, as oc_coll_served() names them. */
typedef enum {
    OC_COLL_ALLREDUCE = 1,
    OC_COLL_ALLTOALL,  /**< and oc_alltoallv() */
    OC_COLL_BCAST,
    OC_COLL_BARRIER
} oc_coll_kind_t;

/**
 * Whether the context's placement serves collective @p kind.  Decided at
 * oc_init() and the same on every rank of the context: the inline
 * placement serves every one (with more than one rank); the agent
 * placement serves those the job's agents declared when the job became
 * ready (all of them, unless a node's ranks are not contiguous).  A call
 * of one not served fails at once with OC_ERR_UNSUPPORTED, before any
 * buffer is read or written, so a caller may ask here first and do the
 * work another way (the MPI interposer passes such calls to MPI).
 * @return 1 served, 0 not (also for a NULL context or unknown kind).
 * Thread-safe with respect to other calls on the context.
 */
OC_API int oc_coll_served(const oc_context_t *ctx, oc_coll_kind_t kind);

/**
 * Start an allreduce: on completion every rank's @p recvbuf holds the
 * element-wise reduction with @p op of all ranks' @p sendbuf (@p count
 * elements of @p dtype each).
 *
 * @param ctx      the context (collective over all its ranks)
 * @param sendbuf  @p count elements, or OC_IN_PLACE (input in @p recvbuf)
 * @param recvbuf  room for @p count elements; may not overlap @p sendbuf
 * @param count    elements per rank (0 allowed: completes with no data)
 * @param req_p    receives the request on OC_OK
 * @return OC_OK (started; complete it with oc_test/oc_wait),
 *         OC_ERR_COLL_REQUEST (req_p NULL), OC_ERR_COLL_DTYPE,
 *         OC_ERR_COLL_OP (unknown, or OC_PROD on a floating type),
 *         OC_ERR_COLL_BUFFER (NULL buffer with count > 0, recvbuf
 *         OC_IN_PLACE), OC_ERR_COLL_COUNT (count * size overflows),
 *         OC_ERR_NO_MEMORY, OC_ERR_UNSUPPORTED (the placement does not
 *         serve it: see oc_coll_served(); nothing was read or written),
 *         OC_ERR_STATE (called from a message handler), or the error that
 *         failed the context (OC_ERR_COLL_PEER_FAILED when a rank died).  On error nothing was started and *req_p is
 *         untouched.
 */
OC_API oc_status_t oc_iallreduce(oc_context_t *ctx, const void *sendbuf,
                                 void *recvbuf, size_t count,
                                 oc_dtype_t dtype, oc_op_t op,
                                 oc_request_t **req_p);

/**
 * Start an all-to-all: rank r sends elements [d * count, (d+1) * count) of
 * @p sendbuf to rank d, which stores them at [r * count, (r+1) * count) of
 * its @p recvbuf.  Buffers hold size * count elements.
 * @p sendbuf may be OC_IN_PLACE (the data is taken from @p recvbuf; the
 * library then holds a temporary copy).  Errors as oc_iallreduce(), less
 * OC_ERR_COLL_OP.
 */
OC_API oc_status_t oc_ialltoall(oc_context_t *ctx, const void *sendbuf,
                                void *recvbuf, size_t count, oc_dtype_t dtype,
                                oc_request_t **req_p);

/**
 * Start an all-to-all with per-rank counts and displacements (in
 * elements), as MPI_Alltoallv: @p scounts[d] elements at
 * sendbuf + sdispls[d] go to rank d, which receives rcounts[r] elements
 * from rank r at recvbuf + rdispls[r].  scounts[d] on rank r must equal
 * rcounts[r] on rank d (else the receiver fails the request with
 * OC_ERR_COLL_MISMATCH).  The four arrays have size entries and are read
 * only during this call.  OC_IN_PLACE is not accepted
 * (OC_ERR_COLL_BUFFER); NULL arrays give OC_ERR_COLL_COUNT.
 * Errors as oc_iallreduce(), less OC_ERR_COLL_OP.
 */
OC_API oc_status_t oc_ialltoallv(oc_context_t *ctx, const void *sendbuf,
                                 const size_t *scounts, const size_t *sdispls,
                                 void *recvbuf, const size_t *rcounts,
                                 const size_t *rdispls, oc_dtype_t dtype,
                                 oc_request_t **req_p);

/**
 * Start a broadcast of @p count elements from rank @p root's @p buf to
 * every rank's @p buf.  Errors as oc_iallreduce(), less OC_ERR_COLL_OP,
 * plus OC_ERR_COLL_ROOT (root >= size).
 */
OC_API oc_status_t oc_ibcast(oc_context_t *ctx, void *buf, size_t count,
                             oc_dtype_t dtype, uint32_t root,
                             oc_request_t **req_p);

/** Start a barrier: it completes on a rank once every rank has started it.
 *  @return OC_OK; OC_ERR_COLL_REQUEST (req_p NULL), OC_ERR_INVALID_PARAM
 *  (ctx NULL), OC_ERR_NO_MEMORY, OC_ERR_UNSUPPORTED (not served:
 *  oc_coll_served()),
 *  OC_ERR_STATE (called from a message handler), or the context's
 *  failure. */
OC_API oc_status_t oc_ibarrier(oc_context_t *ctx, oc_request_t **req_p);

/**
 * Progress the context once and report whether *@p req_p is complete.
 * @return OC_INPROGRESS (not yet; *req_p unchanged), OC_OK (complete:
 *         the results are in place, the request is freed and *req_p set
 *         to NULL), OC_ERR_COLL_REQUEST (req_p or *req_p NULL),
 *         OC_ERR_STATE (called from a message handler; the request is
 *         untouched and still running), or the
 *         error that failed the collective (OC_ERR_COLL_MISMATCH: a
 *         peer sent another amount of data than this rank's call expects;
 *         reported once this rank's part has run to its end, so that the
 *         peers are not left waiting; OC_ERR_COLL_PEER_FAILED: a rank of
 *         the context (in the agent placement: a rank or an agent of the
 *         job) died or became unreachable, found by UCX's keepalive within
 *         about 1-2 s (docs/coll.md), after which every collective of the
 *         context, in flight or started later, fails with it;
 *         OC_ERR_TRANSPORT, OC_ERR_PEER_FAILED...; in the agent placement
 *         OC_ERR_UNSUPPORTED: the agent refused it after all (a rank that
 *         sent it to another router than its job's; never for a kind
 *         oc_coll_served() reports), and OC_ERR_COLL_MEMORY: the agent, moving this rank's
 *         allreduce data by memory (OC_COLL_CMA), could not read the send
 *         buffer or write the receive buffer (not mapped, not writable,
 *         the rank exiting); it wrote nothing outside the receive buffer):
 *         the request is freed
 *         and *req_p set to NULL as well, and the receive buffer's
 *         content is undefined.
 */
OC_API oc_status_t oc_test(oc_request_t **req_p);

/** oc_test() until the request completes.  Same return values, never
 *  OC_INPROGRESS. */
OC_API oc_status_t oc_wait(oc_request_t **req_p);

/** Blocking forms: start, then oc_wait().  Same errors. */
OC_API oc_status_t oc_allreduce(oc_context_t *ctx, const void *sendbuf,
                                void *recvbuf, size_t count, oc_dtype_t dtype,
                                oc_op_t op);
OC_API oc_status_t oc_alltoall(oc_context_t *ctx, const void *sendbuf,
                               void *recvbuf, size_t count, oc_dtype_t dtype);
OC_API oc_status_t oc_alltoallv(oc_context_t *ctx, const void *sendbuf,
                                const size_t *scounts, const size_t *sdispls,
                                void *recvbuf, const size_t *rcounts,
                                const size_t *rdispls, oc_dtype_t dtype);
OC_API oc_status_t oc_bcast(oc_context_t *ctx, void *buf, size_t count,
                            oc_dtype_t dtype, uint32_t root);
OC_API oc_status_t oc_barrier(oc_context_t *ctx);

#ifdef __cplusplus
}
#endif
#endif /* OFFCORE_COLL_H */
