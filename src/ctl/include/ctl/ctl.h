/*
 * ctl.h — the control plane: the handshake and job wire-up between ranks and
 * their node's agent, and between agents (docs/design.md, "Decided":
 * Bootstrap).  Never data.  Parts: ctl.c the message codec (table-driven,
 * strict; the frame and every message in the comment below),
 * auth.c keys, nonces and HMAC-SHA256 proofs, conn.c a non-blocking framed
 * connection, sock.c unix:/tcp: listen/accept/connect, derive.c job keys
 * and data-path tokens.
 *
 * Trust: every frame is decoded strictly before use (fuzzed:
 * tests/fuzz/fuzz_ctl.c).  Thread-safety: every function here is
 * thread-safe on distinct objects; a connection or listener is used by one
 * thread at a time.
 */
/* The protocol.
 *
 * FRAME (protocol version 6, OC_CTL_VERSION below; little-endian, no
 * padding, no alignment):
 *   0 u32 magic "OCC1"   4 u16 version (6)   6 u16 type
 *   8 u32 payload length (0 .. OC_CTL_MAX_PAYLOAD = 65536)   12 u32 reserved 0
 *  16 payload: the fields of the type, in this order, nothing after them:
 *
 *   type             payload
 *   1  HELLO         u32 job, u32 rank, u32 size, u32 pid, u32 flags
 *                    (OC_CTL_HELLO_F_*), 16 B client nonce, addr (the
 *                    rank's UCX worker address)                  rank->agent
 *   2  CHALLENGE     32 B server nonce                           agent->rank
 *   3  AUTH          32 B mac (oc__ctl_rank_mac)                  rank->agent
 *   4  WELCOME       u32 node, u32 thread, addr (the agent thread's worker),
 *                    u32 coll_thread, addr (the worker of the thread that
 *                    runs the job's collectives)                 agent->rank
 *   5  READY         u32 size, u32 nnodes, u32 coll (OC_CTL_COLL_*: the
 *                    collectives the agent serves this job)     agent->rank
 *   6  ERROR         i32 status, text                            either way
 *   7  BYE           u32 reason (oc_ctl_bye_t)                   either way
 *   8  COUNTS        u32 job, u32 epoch, u32 round, u64 sent, u64 delivered
 *                    rank->agent, and child agent->parent agent
 *   9  COUNTS_REQ    the same fields          agent->rank, parent->child agent
 *   10 QUIESCE_DONE  u32 job, u32 epoch       agent->rank, parent->child agent
 *   11 PEER_HELLO    u32 node, u32 cluster, 32 B nonce          agent->agent
 *   12 PEER_AUTH     32 B mac (oc__ctl_peer_mac)                 agent->agent
 *   13 PEER_INFO     u32 node, u32 n, n x addr (one per routing thread)
 *   14 JOB_RANKS     u32 job, u32 size, u32 node, u32 n, n x u32 rank
 *   15 JOB_FAIL      u32 job, i32 status                        agent->agent
 *
 *   addr = u32 len + len bytes, 1 .. OC_CTL_MAX_ADDR (4096);
 *   text = u32 len + len bytes, 0 .. OC_CTL_MAX_TEXT (256), each 0x20..0x7e.
 *
 * Rules checked by the decoder (and by the encoder, with the same codes):
 *   size 1 .. OC_CTL_MAX_RANKS and rank < size (HELLO); pid 1 .. INT32_MAX;
 *   thread, coll_thread < OC_CTL_MAX_THREADS; nnodes 1 .. size and coll
 *   only OC_CTL_COLL_ALL bits (READY); status < 0
 *   (ERROR, JOB_FAIL); reason 0 .. 2; PEER_INFO n 1 .. OC_CTL_MAX_THREADS; JOB_RANKS
 *   size 1 .. OC_CTL_MAX_RANKS, ranks strictly increasing and < size (so
 *   no duplicates, n <= size).  Every message has one encoding: decoding
 *   then encoding gives back the same bytes.
 *
 * Handshakes (who checks what is the agent's business; these are the
 * messages and proofs).  Rank: HELLO -> CHALLENGE -> AUTH -> WELCOME ...
 * READY, or ERROR + close.  Agents: each side sends PEER_HELLO, then
 * PEER_AUTH over the other's nonce; then PEER_INFO and JOB_RANKS.  Use a
 * fresh nonce (oc__ctl_random) per connection; oc__ctl_peer_verify() refuses
 * a peer that claims the verifier's own node id or nonce (else it could
 * reflect the verifier's proof back at it).
 */
#ifndef OC_CTL_H
#define OC_CTL_H

#include <offcore/offcore.h>
#include "util/bytes.h"
#include "util/defaults.h"
#include "util/reject.h"
#include <stdbool.h>

#include "util/guard.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OC_CTL_MAGIC        0x3143434fu /* "OCC1" read little-endian */
#define OC_CTL_VERSION      6 /* 2: HELLO carries flags (shared-memory channel);
                                 3: WELCOME names the collectives' router, READY
                                 the collectives the agent serves;
                                 4: agents send each other RUNS bundles
                                 (wire.h), which a version 3 agent refuses;
                                 5: the shared-memory segment has a down ring
                                 per routing thread and a completion ring
                                 (wire/shmseg.h version 2);
                                 6: and a collective descriptor ring
                                 (wire/shmseg.h version 3) */
#define OC_CTL_HDR_LEN      16
#define OC_CTL_MAX_PAYLOAD  65536u
#define OC_CTL_FRAME_MAX    (OC_CTL_HDR_LEN + OC_CTL_MAX_PAYLOAD)
#define OC_CTL_MAX_ADDR     4096u      /* one UCX worker address */
#define OC_CTL_MAX_TEXT     256u       /* ERROR text */
#define OC_CTL_MAX_THREADS  64u        /* routing threads per agent */
#define OC_CTL_MAX_RANKS    0xffffffu  /* ranks are 24-bit on the wire */
#define OC_CTL_CNONCE_LEN   16
#define OC_CTL_NONCE_LEN    32
#define OC_CTL_MAC_LEN      32

typedef enum {
    OC_CTL_HELLO = 1,
    OC_CTL_CHALLENGE,
    OC_CTL_AUTH,
    OC_CTL_WELCOME,
    OC_CTL_READY,
    OC_CTL_ERROR,
    OC_CTL_BYE,
    OC_CTL_COUNTS,
    OC_CTL_COUNTS_REQ,
    OC_CTL_QUIESCE_DONE,
    OC_CTL_PEER_HELLO,
    OC_CTL_PEER_AUTH,
    OC_CTL_PEER_INFO,
    OC_CTL_JOB_RANKS,
    OC_CTL_JOB_FAIL,
    OC_CTL_TYPE_END /* one past the last type */
} oc_ctl_type_t;

/* HELLO flags.  SHM: the rank asks for the shared-memory channel
 * (wire/shmseg.h); an agent that grants it attaches the segment's memfd
 * and its wake-up eventfd to WELCOME (SCM_RIGHTS), else the rank's bundles
 * go over UCX as without the flag. */
#define OC_CTL_HELLO_F_SHM 1u
#define OC_CTL_HELLO_F_ALL 1u

/* READY's coll: the collectives the agent serves for the job, one bit per
 * kind (wire/colld.h's OC_COLLD_* numbers, 1 << kind).  Decided once per
 * job from what every agent of it knows (the rank map), so every rank gets
 * the same word; the rank refuses the others up front (OC_ERR_UNSUPPORTED,
 * before any buffer is touched). */
#define OC_CTL_COLL_ALLREDUCE (1u << 1)
#define OC_CTL_COLL_ALLTOALLV (1u << 2)
#define OC_CTL_COLL_BCAST     (1u << 3)
#define OC_CTL_COLL_BARRIER   (1u << 4)
#define OC_CTL_COLL_ALL       0x1eu

typedef enum {
    OC_CTL_BYE_NORMAL = 0,
    OC_CTL_BYE_SHUTDOWN = 1,   /* the agent is shutting down */
    OC_CTL_BYE_PEER_FAILED = 2 /* a peer of the job failed */
} oc_ctl_bye_t;

/** Variable-length bytes.  Decoded: points into the decoded buffer. */
typedef struct {
    const uint8_t *data;
    uint32_t       len;
} oc_ctl_bytes_t;

/** A list of u32.  To encode, set host (count values); a decoded list has
 *  host NULL and wire pointing at count little-endian u32 in the buffer
 *  (maybe unaligned): read it with oc__ctl_u32s_get().  Encoding a decoded
 *  message re-encodes from wire. */
typedef struct {
    uint32_t        count;
    const uint32_t *host;
    const uint8_t  *wire;
} oc_ctl_u32s_t;

typedef struct {
    uint32_t       count;
    oc_ctl_bytes_t item[OC_CTL_MAX_THREADS];
} oc_ctl_addrs_t;

/**
 * A control message: the type and its fields.  Fields that point (bytes,
 * lists) point into the buffer that oc__ctl_decode() was given, or into the
 * connection's input buffer for oc__ctl_conn_read(): see there how long.
 */
typedef struct {
    oc_ctl_type_t type;
    union {
        struct {
            uint32_t       job, rank, size, pid;
            uint32_t       flags;  /* OC_CTL_HELLO_F_* */
            uint8_t        nonce[OC_CTL_CNONCE_LEN];
            oc_ctl_bytes_t addr;
        } hello;
        struct {
            uint8_t nonce[OC_CTL_NONCE_LEN];
        } challenge;
        struct {
            uint8_t mac[OC_CTL_MAC_LEN];
        } auth;        /* AUTH and PEER_AUTH */
        struct {
            uint32_t       node, thread;
            oc_ctl_bytes_t addr;
            uint32_t       coll_thread;
            oc_ctl_bytes_t coll_addr;
        } welcome;
        struct {
            uint32_t size, nnodes;
            uint32_t coll; /* OC_CTL_COLL_* */
        } ready;
        struct {
            int32_t        status;
            oc_ctl_bytes_t text; /* not NUL-terminated: print "%.*s" */
        } error;
        struct {
            uint32_t reason; /* oc_ctl_bye_t */
        } bye;
        struct {
            uint32_t job, epoch, round;
            uint64_t sent, delivered;
        } counts;      /* COUNTS and COUNTS_REQ */
        struct {
            uint32_t job, epoch;
        } quiesce_done;
        struct {
            uint32_t node, cluster;
            uint8_t  nonce[OC_CTL_NONCE_LEN];
        } peer_hello;
        struct {
            uint32_t       node;
            oc_ctl_addrs_t addrs;
        } peer_info;
        struct {
            uint32_t      job, size, node;
            oc_ctl_u32s_t ranks;
        } job_ranks;
        struct {
            uint32_t job;
            int32_t  status; /* why, < 0 */
        } job_fail;
    } u;
} oc_ctl_msg_t;

static inline uint32_t oc__ctl_u32s_get(const oc_ctl_u32s_t *l, uint32_t i)
{
    const uint8_t *p;
    if (l->host != NULL)
        return l->host[i];
    p = l->wire + 4 * (size_t)i;
    return oc__load_le32(p);
}

/** "HELLO", ...; "UNKNOWN" for a value that is no type.  Static string. */
const char *oc__ctl_type_name(int type);

/**
 * Encode @p msg as one frame into @p buf.  With @p buf NULL only computes
 * the frame length.  Checks every rule of the decoder first.
 * @return OC_OK and *len_out set; OC_ERR_INVALID_PARAM (NULL msg/len_out,
 *   a pointer field NULL with a non-zero length, @p cap too small: a buffer
 *   of OC_CTL_FRAME_MAX always fits), OC_ERR_CTL_TYPE, OC_ERR_CTL_VALUE,
 *   OC_ERR_WIRE_COUNT (a list longer than its maximum), OC_ERR_MSG_TOO_LONG
 *   (payload over OC_CTL_MAX_PAYLOAD, e.g. 64 large worker addresses).
 */
oc_status_t oc__ctl_encode(const oc_ctl_msg_t *msg, uint8_t *buf, size_t cap,
                          size_t *len_out);

/**
 * Check the header at the start of @p buf, which holds @p len bytes of a
 * stream (maybe less than a frame).  For stream readers.
 * @return OC_OK and *frame_len = header + payload length;
 *   OC_INPROGRESS when len < OC_CTL_HDR_LEN; OC_ERR_WIRE_MAGIC,
 *   OC_ERR_WIRE_VERSION, OC_ERR_CTL_TYPE (unknown type), OC_ERR_WIRE_FLAGS
 *   (reserved not 0), OC_ERR_WIRE_LENGTH (payload over the maximum).
 */
oc_status_t oc__ctl_frame_len(const uint8_t *buf, size_t len,
                             size_t *frame_len);

/**
 * Decode exactly one frame of @p len bytes.  Pointer fields of @p out point
 * into @p buf (valid while it is).  Pure; never reads outside @p buf.
 * @return OC_OK and *out filled; else *out untouched and
 *   OC_ERR_INVALID_PARAM (NULL), OC_ERR_WIRE_TRUNCATED (len < header),
 *   the errors of oc__ctl_frame_len(), OC_ERR_WIRE_LENGTH (len is not the
 *   header's frame length, a field runs past the payload, bytes left
 *   after the last field), OC_ERR_WIRE_COUNT (a list count over its
 *   maximum), OC_ERR_CTL_VALUE (a value out of range, non-printable text,
 *   ranks not increasing).  Logged at debug level with the field's name.
 */
oc_status_t oc__ctl_decode(const uint8_t *buf, size_t len, oc_ctl_msg_t *out);

/** Fill @p msg as an ERROR: @p status (one >= 0 becomes OC_ERR_STATE) and
 *  @p text (may be NULL), cut to OC_CTL_MAX_TEXT; non-printable characters
 *  become '?'.  The text is copied into @p scratch (OC_CTL_MAX_TEXT bytes),
 *  where msg's text then points. */
void oc__ctl_set_error(oc_ctl_msg_t *msg, oc_status_t status, const char *text,
                      char *scratch);

/* ------------------------------------------------------------------ auth */

#define OC_CTL_KEY_MIN 32
#define OC_CTL_KEY_MAX 128
#define OC_CTL_JOB_KEY_ENV     "OC_JOB_KEY"
#define OC_CTL_CLUSTER_KEY_ENV "OC_CLUSTER_KEY"

/** A shared secret: a job key (ranks <-> agent) or a cluster key (agents).
 *  Wipe it with oc__ctl_key_clear() when done. */
typedef struct {
    uint32_t len;
    uint8_t  bytes[OC_CTL_KEY_MAX];
} oc_ctl_key_t;

/**
 * Load a key.  From the file @p path when it is non-NULL and non-empty,
 * else from the environment variable @p env (hex; set but empty counts as
 * unset).
 *   file: it must be a regular file (checked on a non-blocking open, so
 *         a FIFO or device is refused at once, never waited on) and its
 *         permissions must give group and others nothing (mode & 077 ==
 *         0, as ssh asks of private keys);
 *         content of only hex digits (and trailing white space) is hex,
 *         anything else is the raw key bytes.
 *   hex:  upper or lower case, even length.
 * Either way the key has OC_CTL_KEY_MIN .. OC_CTL_KEY_MAX bytes.
 * @return OC_OK and *key set; OC_ERR_CTL_KEY (no key given, unreadable,
 *   too permissive, bad hex, wrong length: logged with the path or the
 *   variable's name, never the key), OC_ERR_INVALID_PARAM.
 */
oc_status_t oc__ctl_key_load(const char *path, const char *env,
                            oc_ctl_key_t *key);
/**
 * The cluster key, for offcored and every `offcore` subcommand alike (the
 * one place that decides where it comes from).  First source that is set:
 *   1. @p flag_file: the --cluster-key FILE flag (NULL: not given; "": an
 *      error, an empty flag is a mistake, not a request for the default);
 *   2. OC_CLUSTER_KEY: the key itself, hex;
 *   3. OC_AGENT_CLUSTER_KEY: a key file (offcored's setting);
 *   4. /etc/offcore/cluster.key.
 * A flag beats the environment.  A variable that is set but empty is
 * treated as unset (with a warning), never as "no key".  Files are read as
 * oc__ctl_key_from_file() says.  @p source (may be NULL) receives which one
 * was used, for messages.
 * @return OC_OK and *key; OC_ERR_CTL_KEY (logged: the source and why).
 */
oc_status_t oc__ctl_cluster_key_load(const char *flag_file, oc_ctl_key_t *key,
                                    char *source, size_t source_cap);
#define OC_CTL_CLUSTER_KEY_FILE_ENV "OC_AGENT_CLUSTER_KEY"
#define OC_CTL_CLUSTER_KEY_DEFAULT  OC_DEFAULT_CLUSTER_KEY /* util/defaults.h */
/* Where offcored listens and ranks look for it unless told otherwise. */
#define OC_CTL_AGENT_DEFAULT        OC_DEFAULT_AGENT_ADDR /* util/defaults.h */

oc_status_t oc__ctl_key_from_hex(const char *hex, oc_ctl_key_t *key);
oc_status_t oc__ctl_key_from_file(const char *path, oc_ctl_key_t *key);
/** A fresh random key of 32 bytes (to hand to a job's ranks and agents). */
oc_status_t oc__ctl_key_generate(oc_ctl_key_t *key);
/** Lower-case hex of the key, NUL-terminated; @p cap >= 2 * len + 1. */
oc_status_t oc__ctl_key_hex(const oc_ctl_key_t *key, char *buf, size_t cap);
void oc__ctl_key_clear(oc_ctl_key_t *key);

/** Cryptographically random bytes (getrandom, else OpenSSL RAND_bytes).
 *  @return OC_OK, or OC_ERR_TRANSPORT when no random source works. */
oc_status_t oc__ctl_random(void *buf, size_t len);

/** Raw HMAC-SHA256 (exposed for the known-answer tests). */
void oc__ctl_hmac_sha256(const void *key, size_t key_len, const void *data,
                        size_t len, uint8_t mac[OC_CTL_MAC_LEN]);

/** The rank's proof: HMAC-SHA256(job_key, "offcore-rank-v1" (15 bytes, no
 *  NUL) || server nonce (32) || client nonce (16) || job || rank || size
 *  (u32 little-endian each)). */
void oc__ctl_rank_mac(const oc_ctl_key_t *job_key,
                     const uint8_t server_nonce[OC_CTL_NONCE_LEN],
                     const uint8_t client_nonce[OC_CTL_CNONCE_LEN],
                     uint32_t job, uint32_t rank, uint32_t size,
                     uint8_t mac[OC_CTL_MAC_LEN]);

/** An agent's proof: HMAC-SHA256(cluster_key, "offcore-peer-v1" ||
 *  the peer's nonce (32) || own nonce (32) || own node (u32 LE)). */
void oc__ctl_peer_mac(const oc_ctl_key_t *cluster_key,
                     const uint8_t peer_nonce[OC_CTL_NONCE_LEN],
                     const uint8_t own_nonce[OC_CTL_NONCE_LEN],
                     uint32_t own_node, uint8_t mac[OC_CTL_MAC_LEN]);

/** Constant-time comparison of two MACs: true when equal. */
bool oc__ctl_mac_equal(const uint8_t a[OC_CTL_MAC_LEN],
                      const uint8_t b[OC_CTL_MAC_LEN]);

/** Agent side: check an AUTH against the HELLO it answers and the nonce
 *  sent in CHALLENGE.  @return OC_OK or OC_ERR_CTL_AUTH. */
oc_status_t oc__ctl_rank_verify(const oc_ctl_key_t *job_key,
                               const uint8_t server_nonce[OC_CTL_NONCE_LEN],
                               const oc_ctl_msg_t *hello,
                               const uint8_t mac[OC_CTL_MAC_LEN]);

/** Check a PEER_AUTH from the agent that sent @p peer_hello, over @p
 *  own_nonce (the one this side sent).  @return OC_OK or OC_ERR_CTL_AUTH
 *  (also when the peer claims this side's node id @p own_node or nonce:
 *  it could be reflecting this side's own proof). */
oc_status_t oc__ctl_peer_verify(const oc_ctl_key_t *cluster_key,
                               uint32_t own_node,
                               const uint8_t own_nonce[OC_CTL_NONCE_LEN],
                               const oc_ctl_msg_t *peer_hello,
                               const uint8_t mac[OC_CTL_MAC_LEN]);

/* ------------------------------------------------------------ connection */

#define OC_CTL_ADDR_STRLEN 128  /* "unix:/path" or "tcp:[v6]:port" + NUL */
#define OC_CTL_OUT_MAX (1u << 20) /* queued output per connection */

typedef struct oc_ctl_conn oc_ctl_conn_t;

/**
 * Wrap a connected stream socket (or a pipe, for tests).  Sets O_NONBLOCK.
 * The connection owns @p fd from then on (closes it in destroy); on error
 * @p fd is left open and untouched.  @p name is copied, for logs (NULL:
 * "fd N").  Buffers start small and grow to the largest frame seen.
 * @return OC_OK and *conn_p; OC_ERR_NO_MEMORY, OC_ERR_INVALID_PARAM.
 */
oc_status_t oc__ctl_conn_create(int fd, const char *name,
                               oc_ctl_conn_t **conn_p);
/** The largest frame this connection accepts (header included), between
 *  OC_CTL_HDR_LEN and OC_CTL_FRAME_MAX (the default).  A header announcing
 *  more fails the read with OC_ERR_WIRE_LENGTH at once, before a byte of
 *  it is buffered: servers set OC_CTL_PREAUTH_FRAME_MAX until the peer has
 *  authenticated, so an anonymous peer can make them hold ~4 KiB, not
 *  64 KiB. */
void oc__ctl_conn_set_max_frame(oc_ctl_conn_t *conn, size_t max);
/** Largest frame of a handshake's first message (HELLO with the largest
 *  worker address; PEER_HELLO is smaller). */
#define OC_CTL_PREAUTH_FRAME_MAX                                               \
    (OC_CTL_HDR_LEN + 5 * 4 + OC_CTL_CNONCE_LEN + 4 + OC_CTL_MAX_ADDR)

/** What a reject status means for a control frame (the wire codes are
 *  shared with bundles, whose texts say "bundle").  Static string. */
const char *oc__ctl_reject_reason(oc_status_t st);

/** Close the fd and free the buffers.  NULL is a no-op. */
void oc__ctl_conn_destroy(oc_ctl_conn_t *conn);

/** Descriptors one frame may carry (SCM_RIGHTS). */
#define OC_CTL_MAX_FDS 4
/**
 * Queue @p msg with @p nfds descriptors attached to its first byte (Unix
 * sockets only; the connection sends duplicates, the caller keeps its
 * own).  One frame with descriptors may wait at a time.
 * @return OC_OK; OC_ERR_INVALID_PARAM (not a Unix socket, too many, one
 *   already waiting); OC_ERR_NO_RESOURCE (dup failed); oc__ctl_conn_send's.
 */
oc_status_t oc__ctl_conn_send_fds(oc_ctl_conn_t *conn, const oc_ctl_msg_t *msg,
                                  const int *fds, int nfds);
/** Keep descriptors the peer passes (read with recvmsg) instead of letting
 *  the kernel discard them; at most OC_CTL_MAX_FDS are kept, in order.
 *  Without this, passed descriptors are closed on arrival. */
void oc__ctl_conn_accept_fds(oc_ctl_conn_t *conn);
/** The oldest descriptor received and not yet taken (the caller owns it
 *  now), or -1. */
int oc__ctl_conn_take_fd(oc_ctl_conn_t *conn);
int oc__ctl_conn_fd(const oc_ctl_conn_t *conn);
const char *oc__ctl_conn_name(const oc_ctl_conn_t *conn);

/** The protocol version of the frame that the last read refused with
 *  OC_ERR_WIRE_VERSION (another offcore release at the other end); 0
 *  when none was. */
unsigned oc__ctl_conn_peer_version(const oc_ctl_conn_t *conn);

/** After such a refusal: queue an ERROR (status OC_ERR_WIRE_VERSION,
 *  @p text, at most OC_CTL_MAX_TEXT printable characters) framed in the
 *  peer's version, so that the other release reads why (ERROR's layout
 *  is the same in every version).  Flush it before closing.
 *  @return OC_OK; OC_ERR_INVALID_PARAM (no refusal seen); as
 *  oc__ctl_conn_send(). */
oc_status_t oc__ctl_conn_send_version_error(oc_ctl_conn_t *conn,
                                            const char *text);

/**
 * Read the next message.  Reads from the fd as needed; never blocks.  After
 * poll() reports POLLIN, call it until it returns OC_INPROGRESS: several
 * frames may arrive in one read.  Pointer fields of @p msg point into the
 * connection's buffer and stay valid until the next oc__ctl_conn_read() or
 * oc__ctl_conn_destroy() on it (forward them with oc__ctl_conn_send(), which
 * copies).
 * @return OC_OK one message; OC_INPROGRESS no whole frame yet;
 *   OC_ERR_PEER_FAILED end of stream (between frames or inside one) or a
 *   socket error; a decode error (oc__ctl_decode) for a malformed frame,
 *   checked as soon as its header is in.  After an error, reading is over:
 *   every later call returns the same status (sending still works, to say
 *   ERROR and BYE).
 */
oc_status_t oc__ctl_conn_read(oc_ctl_conn_t *conn, oc_ctl_msg_t *msg);

/**
 * Queue one message (encoded and copied now).  Nothing is written: call
 * oc__ctl_conn_flush() now or when poll() reports POLLOUT.
 * @return OC_OK; the errors of oc__ctl_encode(); OC_ERR_NO_RESOURCE when
 *   more than OC_CTL_OUT_MAX bytes would be queued (flush and retry);
 *   OC_ERR_PEER_FAILED after a write failed; OC_ERR_NO_MEMORY.
 */
oc_status_t oc__ctl_conn_send(oc_ctl_conn_t *conn, const oc_ctl_msg_t *msg);

/** Write what the socket takes.  @return OC_OK all written; OC_INPROGRESS
 *  some is left (wait for POLLOUT); OC_ERR_PEER_FAILED (the peer closed or
 *  reset: later sends and flushes return it too). */
oc_status_t oc__ctl_conn_flush(oc_ctl_conn_t *conn);

/** Bytes are queued: poll for POLLOUT. */
bool oc__ctl_conn_want_write(const oc_ctl_conn_t *conn);

/** The poll() events to wait for: POLLIN, and POLLOUT when want_write. */
short oc__ctl_conn_events(const oc_ctl_conn_t *conn);

/**
 * Blocking client helper: queue @p req (NULL: none), flush it, and wait
 * with poll() for the next message, at most @p timeout_ms (< 0: forever).
 * An ERROR reply is returned as a message like any other.
 * @return OC_OK and *reply (valid as for oc__ctl_conn_read());
 *   OC_ERR_CTL_TIMEOUT; the errors of send, flush and read.
 */
oc_status_t oc__ctl_conn_request(oc_ctl_conn_t *conn, const oc_ctl_msg_t *req,
                                oc_ctl_msg_t *reply, int timeout_ms);

/** Internal, for the fuzz target: a connection without an fd that reads
 *  through @p reader, which behaves as read(2) does (bytes, 0 at the end,
 *  -1 with errno EAGAIN for "nothing now").  Sending fails on it. */
typedef ssize_t (*oc__ctl_reader_t)(void *arg, void *buf, size_t len);
oc_status_t oc__ctl_conn_create_reader(oc__ctl_reader_t reader, void *arg,
                                      const char *name, oc_ctl_conn_t **conn_p);

/* --------------------------------------------------------------- sockets */

/**
 * Addresses: "unix:/path/to/sock" (or a bare path starting with '/'),
 * "tcp:HOST:PORT" or "HOST:PORT"; HOST is a name, an IPv4 address or an
 * IPv6 one in brackets ("tcp:[::1]:7000"); an empty HOST listens on every
 * interface.  Names are resolved with getaddrinfo(), which may block on
 * DNS: event loops should use numeric addresses.
 */
typedef struct {
    int  fd;                       /**< listening socket, non-blocking */
    char addr[OC_CTL_ADDR_STRLEN]; /**< what it is bound to; a TCP port 0
                                        is replaced by the kernel's choice */
    /* private: the socket file, to remove it on close if still ours */
    char          path[OC_CTL_ADDR_STRLEN];
    unsigned long dev, ino;
} oc_ctl_listener_t;

/**
 * Listen.  TCP: SO_REUSEADDR.  Unix: a socket file left by a dead agent
 * (nothing accepts on it) is removed; a live one, or a path that is not a
 * socket, is an error.  Two agents starting on one path at the same
 * instant can race: give each agent its own path.
 * @return OC_OK and *l filled; OC_ERR_CTL_ADDR (unparsable, unresolvable,
 *   in use, bind/listen failed: logged); OC_ERR_INVALID_PARAM.
 */
oc_status_t oc__ctl_listen(const char *addr, oc_ctl_listener_t *l);

/**
 * The same; a Unix socket gets permission bits @p mode (e.g. 0666: any
 * local user may connect, the job key being the gate; 0600: root's only)
 * from its creation on, and its directory is made (0755) when missing.
 * @p mode 0: as oc__ctl_listen() (the umask decides, no directory made).
 * TCP ignores @p mode.  Returns as oc__ctl_listen().
 */
oc_status_t oc__ctl_listen_mode(const char *addr, unsigned mode,
                                oc_ctl_listener_t *l);

/**
 * Accept one connection, non-blocking and close-on-exec (TCP: NODELAY),
 * under the server's admission guard @p g (util/guard.h: its back-off on
 * EMFILE; the caller then applies its cap and deadline).
 * @p peer (may be NULL) receives "tcp:IP:PORT" or "unix:pid=P,uid=U".
 * @return OC_OK and *fd_out; OC_INPROGRESS none is waiting;
 *   OC_ERR_NO_RESOURCE out of file descriptors: the guard backs off (stop
 *   polling the listener while oc__guard_listen_ok() says so);
 *   OC_ERR_TRANSPORT other accept errors; OC_ERR_INVALID_PARAM.
 */
oc_status_t oc__ctl_accept(oc_ctl_listener_t *l, oc_guard_t *g, int *fd_out,
                          char *peer, size_t peer_cap);

/** Close the listener; remove its socket file if it is still the one this
 *  listener made.  NULL or a closed listener is a no-op. */
void oc__ctl_listener_close(oc_ctl_listener_t *l);

/**
 * Connect, waiting at most @p timeout_ms (< 0: no limit); every address a
 * name resolves to is tried in turn.  The fd is non-blocking and
 * close-on-exec (TCP: NODELAY).
 * @return OC_OK and *fd_out; OC_ERR_CTL_CONNECT (refused, no such socket,
 *   unreachable: logged); OC_ERR_CTL_DENIED (a Unix socket this user may
 *   not open: EACCES/EPERM); OC_ERR_CTL_TIMEOUT; OC_ERR_CTL_ADDR
 *   (unparsable, unresolvable); OC_ERR_INVALID_PARAM.
 */
oc_status_t oc__ctl_connect(const char *addr, int timeout_ms, int *fd_out);

/** Start a connection without waiting (first resolved address only).
 *  @return OC_OK connected; OC_INPROGRESS *fd_out set: poll it for POLLOUT,
 *  then call oc__ctl_connect_finish(); OC_ERR_NO_RESOURCE a Unix listener's
 *  backlog is full (retry); the errors of oc__ctl_connect(). */
oc_status_t oc__ctl_connect_start(const char *addr, int *fd_out);

/** Outcome of a started connection once its fd is writable: OC_OK, or
 *  OC_ERR_CTL_CONNECT (the caller closes the fd either way on error). */
oc_status_t oc__ctl_connect_finish(int fd);

/**
 * Does an offcored answer at @p addr?  Connects (at most @p timeout_ms),
 * sends a rank's HELLO for @p job (rank 0 of 1, this process's pid) and
 * waits as long again for the CHALLENGE, then closes without
 * authenticating: the agent drops such a connection silently and keeps no
 * state of it.  Unlike a bare connect, a stopped or hung agent (whose
 * listening socket still accepts) does not pass.  Needs no key.
 * @p why receives a one-line reason for the operator on every failure.
 * @return OC_OK; OC_ERR_CTL_CONNECT, OC_ERR_CTL_ADDR, OC_ERR_CTL_TIMEOUT
 *   (nothing answers in time), OC_ERR_CTL_TYPE (not an offcored), the
 *   agent's refusal (its ERROR status), OC_ERR_PEER_FAILED (it closed the
 *   connection), OC_ERR_INVALID_PARAM.
 */
oc_status_t oc__ctl_agent_probe(const char *addr, uint32_t job, int timeout_ms,
                               char *why, size_t why_cap);

/** Credentials of a Unix socket's peer (SO_PEERCRED): lets an agent check
 *  that HELLO's pid is the process at the other end.
 *  @return OC_OK; OC_ERR_UNSUPPORTED (not a Unix socket). */
oc_status_t oc__ctl_peer_cred(int fd, uint32_t *pid, uint32_t *uid);

#endif /* OC_CTL_H */
