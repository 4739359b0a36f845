/*
 * offcore/status.h — the status values a liboffcore call can return to an
 * application, and the library's export macro.
 *
 * 0 is success, 1 "in progress", negative values are errors.
 * OC_ERR_NO_RESOURCE is back-pressure: progress (oc_poll) and retry.
 * Every public function's comment (offcore.h, coll.h) lists which of
 * these it returns.  Numeric values are stable: a value keeps its number
 * for as long as it exists.  Gaps in the numbering (-20 .. -41) belong to
 * the library's internal reject reasons (why a bundle or a control frame
 * was refused): those never come back from a public call, but logs and
 * counter labels name them, and oc_status_string() knows them too.
 *
 * Threading: everything here is thread-safe (constants and a pure
 * function).
 */
#ifndef OFFCORE_STATUS_H
#define OFFCORE_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The one export macro: the library is built with -fvisibility=hidden and
 * OC_BUILDING_LIBRARY, so only what is marked OC_API is exported. */
#if defined(OC_BUILDING_LIBRARY)
#define OC_API __attribute__((visibility("default")))
#else
#define OC_API
#endif

/** Status values returned by liboffcore's public calls. */
typedef enum {
    OC_OK                  = 0,
    OC_INPROGRESS          = 1,
    OC_ERR_NO_RESOURCE     = -1,  /**< back-pressure: poll and retry */
    OC_ERR_INVALID_PARAM   = -2,
    OC_ERR_NO_MEMORY       = -3,
    OC_ERR_MSG_TOO_LONG    = -4,  /**< longer than oc_max_message() */
    OC_ERR_RANK_RANGE      = -5,  /**< destination rank not in the job */
    OC_ERR_TRANSPORT       = -6,  /**< the transport (UCX) failed */
    OC_ERR_BOOTSTRAP       = -7,  /**< address exchange failed */
    OC_ERR_CONFIG          = -8,  /**< bad configuration value */
    OC_ERR_STATE           = -9,  /**< call not allowed in this state */
    OC_ERR_UNSUPPORTED     = -10,
    OC_ERR_PEER_FAILED     = -11, /**< a peer or the agent went away */
    OC_ERR_TRANSPORT_REQUIRED = -12, /**< a connection or the node lacks the transport OC_REQUIRE_TRANSPORT names */
    /* Why oc_init() could not use the node's agent (agent placement,
     * OC_PLACEMENT=agent; with auto the library falls back to inline). */
    OC_ERR_CTL_AUTH        = -42, /**< the agent refused the job (wrong OC_JOB_KEY for OC_JOB, or another refusal it logs) */
    OC_ERR_CTL_KEY         = -43, /**< OC_JOB_KEY missing or malformed */
    OC_ERR_CTL_TIMEOUT     = -44, /**< the agent did not answer in time */
    OC_ERR_CTL_ADDR        = -45, /**< OC_AGENT is not a usable address */
    OC_ERR_CTL_CONNECT     = -46, /**< nothing answers at OC_AGENT */
    OC_ERR_CTL_DENIED      = -47, /**< OC_AGENT's Unix socket refuses this user (EACCES: the modes of the socket or its directory) */
    OC_ERR_CTL_VERSION     = -48, /**< the agent speaks another control protocol version (another offcore release): both versions are logged */
    OC_ERR_COLL_DTYPE      = -60, /**< collective: unknown datatype */
    OC_ERR_COLL_OP         = -61, /**< collective: unknown op, or not defined for the datatype */
    OC_ERR_COLL_BUFFER     = -62, /**< collective: NULL or misplaced buffer (OC_IN_PLACE where not allowed) */
    OC_ERR_COLL_COUNT      = -63, /**< collective: count too large, or counts/displacements missing or past the buffer */
    OC_ERR_COLL_ROOT       = -64, /**< collective: root not a rank of the job */
    OC_ERR_COLL_REQUEST    = -65, /**< collective: NULL request pointer */
    OC_ERR_COLL_MISMATCH   = -66, /**< collective: a peer sent more, or other, data than this rank's call expects */
    OC_ERR_COLL_PEER_FAILED = -67, /**< collective: a rank (or agent) taking part died or became unreachable */
    OC_ERR_COLL_MEMORY     = -68, /**< collective (agent placement): the agent could not read this rank's send buffer or write its receive buffer (an address not mapped, or the rank exited); nothing outside the buffers was written */
    OC_ERR_GPU             = -69, /**< collective on device memory: the CUDA driver failed a copy or a query, or a buffer lies in another device's context than the collective's staging (logged with the driver's words); on every rank of the collective */
} oc_status_t;

/** Name and meaning of a status value ("OC_ERR_CTL_KEY: ..."), for any
 *  value: the public ones above, the library's internal reject reasons
 *  (which appear in its logs), and "OC_ERR_UNKNOWN: ..." for the rest.
 *  Never NULL; the string is static.  Thread-safe. */
OC_API const char *oc_status_string(oc_status_t status);

#ifdef __cplusplus
}
#endif
#endif /* OFFCORE_STATUS_H */
