/*
 * status.c — names for every status value: the public ones
 * (<offcore/status.h>) and the internal reject reasons (util/reject.h),
 * which logs and metric labels show.  Pure; thread-safe.
 */
#include "util/reject.h"

#include <offcore/status.h>

OC_API const char *oc_status_string(oc_status_t s)
{
    switch ((int)s) { /* int: the reject reasons are not enumerators */
    case OC_OK: return "OC_OK: success";
    case OC_INPROGRESS: return "OC_INPROGRESS: operation in progress";
    case OC_ERR_NO_RESOURCE: return "OC_ERR_NO_RESOURCE: no buffer free now (poll and retry)";
    case OC_ERR_INVALID_PARAM: return "OC_ERR_INVALID_PARAM: invalid parameter";
    case OC_ERR_NO_MEMORY: return "OC_ERR_NO_MEMORY: out of memory";
    case OC_ERR_MSG_TOO_LONG: return "OC_ERR_MSG_TOO_LONG: message longer than oc_max_message()";
    case OC_ERR_RANK_RANGE: return "OC_ERR_RANK_RANGE: rank not in the job";
    case OC_ERR_TRANSPORT: return "OC_ERR_TRANSPORT: transport (UCX) error";
    case OC_ERR_BOOTSTRAP: return "OC_ERR_BOOTSTRAP: address exchange failed";
    case OC_ERR_CONFIG: return "OC_ERR_CONFIG: bad configuration value";
    case OC_ERR_STATE: return "OC_ERR_STATE: call not allowed in this state";
    case OC_ERR_UNSUPPORTED: return "OC_ERR_UNSUPPORTED: not supported";
    case OC_ERR_PEER_FAILED: return "OC_ERR_PEER_FAILED: a peer or the agent went away";
    case OC_ERR_TRANSPORT_REQUIRED: return "OC_ERR_TRANSPORT_REQUIRED: the transport OC_REQUIRE_TRANSPORT names is not in use (offcore doctor says why)";
    case OC_ERR_WIRE_TRUNCATED: return "OC_ERR_WIRE_TRUNCATED: bundle shorter than its header";
    case OC_ERR_WIRE_MAGIC: return "OC_ERR_WIRE_MAGIC: not an offcore bundle (bad magic)";
    case OC_ERR_WIRE_VERSION: return "OC_ERR_WIRE_VERSION: unknown wire version";
    case OC_ERR_WIRE_FLAGS: return "OC_ERR_WIRE_FLAGS: unknown flag bits";
    case OC_ERR_WIRE_LENGTH: return "OC_ERR_WIRE_LENGTH: length past the end or bytes left over";
    case OC_ERR_WIRE_COUNT: return "OC_ERR_WIRE_COUNT: message count disagrees with content";
    case OC_ERR_WIRE_RANK: return "OC_ERR_WIRE_RANK: rank out of range or wrong destination";
    case OC_ERR_WIRE_JOB: return "OC_ERR_WIRE_JOB: bundle of another job";
    case OC_ERR_WIRE_EMPTY: return "OC_ERR_WIRE_EMPTY: bundle with no message";
    case OC_ERR_WIRE_ITEM_SIZE: return "OC_ERR_WIRE_ITEM_SIZE: bad fixed item size";
    case OC_ERR_CTL_TYPE: return "OC_ERR_CTL_TYPE: unknown control message type";
    case OC_ERR_CTL_VALUE: return "OC_ERR_CTL_VALUE: control message field out of range";
    case OC_ERR_CTL_AUTH: return "OC_ERR_CTL_AUTH: authentication failed";
    case OC_ERR_CTL_KEY: return "OC_ERR_CTL_KEY: key missing, malformed or its file too permissive";
    case OC_ERR_CTL_TIMEOUT: return "OC_ERR_CTL_TIMEOUT: no answer on the control channel in time";
    case OC_ERR_CTL_ADDR: return "OC_ERR_CTL_ADDR: bad control address or cannot listen on it";
    case OC_ERR_CTL_CONNECT: return "OC_ERR_CTL_CONNECT: nothing answers at the control address";
    case OC_ERR_CTL_DENIED: return "OC_ERR_CTL_DENIED: permission denied (EACCES) on the control socket: its mode or its directory's keeps this user out";
    case OC_ERR_CTL_VERSION: return "OC_ERR_CTL_VERSION: the other side speaks another control protocol version (another offcore release)";
    case OC_ERR_COLL_DTYPE: return "OC_ERR_COLL_DTYPE: unknown collective datatype";
    case OC_ERR_COLL_OP: return "OC_ERR_COLL_OP: unknown reduction op, or not defined for the datatype";
    case OC_ERR_COLL_BUFFER: return "OC_ERR_COLL_BUFFER: NULL or misplaced collective buffer";
    case OC_ERR_COLL_COUNT: return "OC_ERR_COLL_COUNT: collective count too large, or counts/displacements invalid";
    case OC_ERR_COLL_ROOT: return "OC_ERR_COLL_ROOT: root is not a rank of the job";
    case OC_ERR_COLL_REQUEST: return "OC_ERR_COLL_REQUEST: NULL collective request pointer";
    case OC_ERR_COLL_MISMATCH: return "OC_ERR_COLL_MISMATCH: a peer's collective call does not match this rank's";
    case OC_ERR_GPU: return "OC_ERR_GPU: the CUDA driver failed a copy or a query of a device buffer (on some rank of the collective)";
    case OC_ERR_COLL_MEMORY: return "OC_ERR_COLL_MEMORY: the agent could not read or write this rank's collective buffers (not mapped, or the rank is gone)";
    case OC_ERR_COLL_PEER_FAILED: return "OC_ERR_COLL_PEER_FAILED: a rank or agent taking part in the collective died or became unreachable";
    }
    return "OC_ERR_UNKNOWN: unknown status";
}
