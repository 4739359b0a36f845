/*
 * target.h — offcore-nvmf's internal model: configuration, subsystems,
 * namespaces, controllers, queues (one TCP connection each) and commands.
 *
 * Threading: the target runs on workers (worker.c), one thread each, each
 * with its own io_uring, registered-buffer table, connection list, flush
 * list and counters (oc_nvmf_worker_t).  The listener lives on worker 0,
 * which accepts and hands each connection to a worker round robin; that
 * worker owns it (socket, commands, buffers, its disk I/O) for its whole
 * life, admin and I/O queues alike: a queue never migrates.
 * What crosses workers, and what protects it:
 *  - a controller (oc_nvmf_ctrl_t) is owned by its admin queue's worker,
 *    which alone runs its admin commands, keep-alive and destruction.  Its
 *    I/O queues, on any worker, read: subsys (immutable), csts (atomic:
 *    CC.EN gates I/O), and store last_activity_ms (atomic).  Under the
 *    target's ctrl_lock: the controller list, every subsystem's
 *    next_cntlid, each controller's io[] and nr_io_queues, and refs (the
 *    admin side holds one, each I/O queue one; the last put frees it).
 *  - the namespaces, subsystems and configuration: written before the
 *    workers start, read-only afterwards.  Namespace counters are relaxed
 *    atomics.
 *  - the admission guard (util/guard.h) and fd_wait: under guard_lock.
 *  - another worker's connection is never touched: a close is asked for
 *    (close_req, then oc__nvmf_worker_wake), and asked only while the
 *    asker holds the lock (ctrl_lock or guard_lock) under which the
 *    connection must take itself out of reach before it is freed.
 *  - connections handed over: the worker's mailbox, under mb_lock.
 *  - the metrics HTTP thread reads counters (relaxed atomics, summed over
 *    the workers) and, under snap_lock, every worker's connection list.
 *
 * Trust: hosts are untrusted (pdu.c checks their bytes, conn.c their PDU
 * sequence, admin.c and io.c their commands); the configuration file and the
 * key files are trusted once validated (config.c).
 */
#ifndef OC_NVMF_TARGET_H
#define OC_NVMF_TARGET_H

#include "pdu.h"
#include "util/guard.h"

#include <liburing.h>
#include <offcore/offcore.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#define OC_NVMF_DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"
#define OC_NVMF_NQN_MAX 223       /* NVMe: NQNs are at most 223 bytes */
#define OC_NVMF_MAX_NS 64
#define OC_NVMF_MAX_HOSTS 64
#define OC_NVMF_MAX_SUBSYS 32
/* Queue depth: MQES+1.  128 commands per queue keep every queue's buffers
 * (at most MDTS each, allocated on first use) under 16 MiB. */
#define OC_NVMF_QUEUE_DEPTH 128
#define OC_NVMF_MAX_IO_QUEUES 16
/* MDTS = 5 (2^5 pages of 4 KiB = 128 KiB): large sequential I/O still
 * moves in few commands, and a command's buffer stays small. */
#define OC_NVMF_MDTS 5
#define OC_NVMF_MAX_XFER (4096u << OC_NVMF_MDTS)
/* In-capsule data: up to MDTS (IOCCSZ = (64 + 128 KiB) / 16): a write of
 * any size the host may send comes with its capsule and needs no R2T round
 * trip (the Linux host puts a write in the capsule when it fits IOCCSZ);
 * large ones are received straight into the command's buffer (conn.c). */
#define OC_NVMF_INCAP OC_NVMF_MAX_XFER
#define OC_NVMF_MAXH2C OC_NVMF_MAX_XFER
#define OC_NVMF_AERL 3 /* 0-based: 4 Async Event Requests held at most */
/* Command slots per queue: twice the depth, so that a host that sends its
 * next command the moment it reads a completion never finds the slot of
 * that completion still busy while our send's completion is in flight. */
#define OC_NVMF_CMD_SLOTS (2 * OC_NVMF_QUEUE_DEPTH)
/* Entries of the ring's registered-buffer table: command buffers that
 * hold one read and write with READ_FIXED/WRITE_FIXED, their pages pinned
 * once instead of per I/O.  4096 x 128 KiB = 512 MiB pinned at most
 * (16 queues at QD 128 use 4096); buffers past it use plain reads. */
#define OC_NVMF_REG_BUFS 4096
/* workers at most (--cores); each has its own ring and buffer table */
#define OC_NVMF_MAX_WORKERS 64
/* connections handed to a worker and not yet taken (worker 0 takes a
 * connection itself when the worker's mailbox is full: never dropped) */
#define OC_NVMF_MAILBOX 256

/* ------------------------------------------------------------ counters */
/* A namespace's counters: one set per worker (ns->st[idx]), written by
 * that worker only (oc__nvmf_stat_add), summed by the metrics thread; a
 * set of its own cache lines, so that workers never share one. */
typedef struct {
    _Alignas(64) _Atomic uint64_t reads, writes, read_bytes, write_bytes, flushes,
        write_zeroes, dsm, errors, integrity_errors;
    _Atomic uint64_t lat_bucket[12]; /* read+write latency histogram */
    _Atomic uint64_t lat_sum_ns, lat_count;
} oc_nvmf_ns_stats_t;

/* Target-wide counters; names match the rejection reasons in docs/nvmf.md */
typedef struct {
    _Atomic uint64_t conns_accepted, conns_closed, conns_active;
    _Atomic uint64_t pdu_fatal;        /* TermReq sent, connection closed */
    _Atomic uint64_t hdr_digest_err, data_digest_err;
    _Atomic uint64_t connect_ok, connect_rejected, host_denied;
    _Atomic uint64_t cmd_before_connect, invalid_opcode, cmd_errors;
    _Atomic uint64_t h2c_out_of_range;
    _Atomic uint64_t kato_expired;
    _Atomic uint64_t send_stalled; /* host stopped reading: closed */
    _Atomic uint64_t admin_cmds, io_cmds;
    _Atomic uint64_t h2c_direct; /* H2CData received into place, no copy */
    _Atomic uint64_t fixed_io;   /* READ_FIXED/WRITE_FIXED submitted */
} oc_nvmf_stats_t;

/* Latency histogram bucket bounds, microseconds (last bucket: +Inf). */
extern const uint32_t oc_nvmf_lat_bounds_us[11];

/* ------------------------------------------------------- configuration */
typedef struct {
    uint32_t nsid;
    char     path[4096];
    uint64_t size;          /* bytes; 0: the file's or device's size */
    uint32_t block_size;    /* 512 or 4096 */
    int      integrity;     /* CRC32C per block in a sidecar file */
    char     integrity_path[4096]; /* "" -> path + ".crc" */
    char     key_path[4096];       /* "" -> no encryption */
    int      direct;        /* O_DIRECT: -1 auto, 0 off, 1 on */
    int      line;          /* config line, for messages */
} oc_nvmf_ns_conf_t;

typedef struct {
    char nqn[OC_NVMF_NQN_MAX + 1];
    int  allow_any;
    int  nhosts;
    char hosts[OC_NVMF_MAX_HOSTS][OC_NVMF_NQN_MAX + 1];
    int  nns;
    oc_nvmf_ns_conf_t ns[OC_NVMF_MAX_NS];
    int  line;
} oc_nvmf_subsys_conf_t;

typedef struct {
    char listen[256];       /* HOST:PORT */
    char advertise[256];    /* TRADDR in the discovery log; "" -> listen host */
    char metrics[256];      /* HOST:PORT of /metrics; "" -> none */
    char control[256];      /* Unix socket path; "" -> none */
    int  kato_grace_ms;
    int  send_timeout_ms;   /* close a queue whose output stalls this long */
    int  poll_us;           /* busy-poll the ring this long after work; 0 off */
    int  cpu;               /* `cpu N`: cores N (one worker); -1: none */
    /* `cores LIST` / --cores: one worker per CPU listed, pinned to it;
     * ncores 0: one worker per CPU of the process's allowed set */
    int  ncores;
    int  cores[OC_NVMF_MAX_WORKERS];
    /* admission (util/guard.h): connections at most; a new connection
     * must have its queue connected (ICReq, then Connect) this long after
     * it arrived; the listener's pause when accept runs out of
     * descriptors or memory */
    uint32_t max_conns, handshake_ms, accept_backoff_ms;
    int  nsubsys;
    oc_nvmf_subsys_conf_t subsys[OC_NVMF_MAX_SUBSYS];
} oc_nvmf_conf_t;

/* the largest configuration file read (util/file.h's loader) */
#define OC_NVMF_CONF_FILE_MAX ((size_t)1 << 20)

/**
 * Read and check a whole configuration file (config.c), read by the file
 * loader (util/file.h: a regular file of at most OC_NVMF_CONF_FILE_MAX
 * bytes; a FIFO or a device is refused at once).  Every error is
 * printed to @p err as "FILE:LINE: reason", and all of them are reported,
 * not just the first.  @return OC_OK, OC_ERR_CONFIG (errors printed),
 * OC_ERR_NO_MEMORY.
 */
oc_status_t oc__nvmf_conf_load(const char *file, oc_nvmf_conf_t *conf,
                              FILE *err);
/**
 * Parse a CPU list ("0-3,6"): numbers and ranges A-B (A <= B) separated by
 * commas, each CPU once, at most @p max of them, each below CPU_SETSIZE.
 * @return how many CPUs were stored in @p cpus (>= 1), or -1 with the
 *         reason in @p why.
 */
int oc__nvmf_parse_cores(const char *s, int *cpus, int max, char *why,
                        size_t whylen);
/** Parse "HOST:PORT" (IPv4 or a name).  @return 0, -1 on error. */
int oc__nvmf_parse_hostport(const char *s, char *host, size_t hlen,
                           uint16_t *port);

/* ----------------------------------------------------------- the model */
typedef struct oc_nvmf_ns {
    uint32_t nsid;
    int      fd;
    int      fixed;         /* fd's index in the ring's file table, or -1 */
    int      meta_fd;
    /* mmap of the sidecar's entries, or NULL; any worker reads and
     * writes them (relaxed: a block's entry and data are ordered by the
     * host, which waits for a write's completion before it reads) */
    _Atomic uint32_t *crc;
    void     *meta_map;
    size_t   meta_map_len;
    uint64_t nblocks;
    uint32_t bs;
    uint32_t bs_shift;
    int      direct;
    struct oc__nvmf_xts *xts; /* xts.h; NULL without a key */
    /* one per worker (oc__nvmf_ns_workers): the EVP fallback holds the
     * IV of the unit at hand; NULL: one worker, xts */
    struct oc__nvmf_xts **xts_w;
    int      nxts_w;
    uint8_t  uuid[16];
    char     path[4096];
    oc_nvmf_ns_stats_t *st;  /* [nworkers] (target.c) */
} oc_nvmf_ns_t;

/** Add to a counter only the calling thread writes (others may read it):
 *  a plain load and store, no locked instruction. */
static inline void oc__nvmf_stat_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

typedef struct oc_nvmf_subsys {
    oc_nvmf_subsys_conf_t *conf;
    int       discovery;
    char      serial[21];
    int       nns;
    oc_nvmf_ns_t *ns[OC_NVMF_MAX_NS];
    uint16_t  next_cntlid;
} oc_nvmf_subsys_t;

struct oc_nvmf_conn;
struct oc_nvmf_target;

typedef struct oc_nvmf_ctrl {
    struct oc_nvmf_target *tgt;
    struct oc_nvmf_worker *w; /* its admin queue's: it runs the controller */
    oc_nvmf_subsys_t *subsys;
    uint16_t cntlid;
    char     hostnqn[OC_NVMF_NQN_MAX + 1];
    uint8_t  hostid[16];
    _Atomic uint32_t cc, csts;  /* written by the admin queue only */
    uint32_t kato_ms;
    uint32_t aen_cfg;
    uint16_t nr_io_queues;  /* granted by Set Features (0: not asked) */
    _Atomic uint64_t last_activity_ms; /* any queue's last command */
    int      refs;          /* under ctrl_lock: admin side + I/O queues */
    struct oc_nvmf_conn *admin;
    struct oc_nvmf_conn *io[OC_NVMF_MAX_IO_QUEUES + 1]; /* by qid */
    uint16_t aer_cids[OC_NVMF_AERL + 1];
    int      naer;
    struct oc_nvmf_ctrl *next;
} oc_nvmf_ctrl_t;

/* An io_uring operation's identity: user_data points at one of these. */
typedef enum {
    OC_NVMF_OP_ACCEPT = 1,
    OC_NVMF_OP_RECV,
    OC_NVMF_OP_SEND,
    OC_NVMF_OP_FILE,
    OC_NVMF_OP_TIMER,
    OC_NVMF_OP_SIGNAL,
    OC_NVMF_OP_WAKE,        /* the worker's eventfd: mail, close requests */
} oc_nvmf_op_kind_t;

typedef struct {
    uint8_t kind;
    void   *owner;
} oc_nvmf_op_t;

/* One piece of output: up to 4 iovecs sent in order.  It is on its
 * connection's send queue at most once at a time (queued): a piece pushed
 * again while queued would link the queue into a ring. */
typedef struct oc_nvmf_tx {
    struct iovec iov[4];
    int      niov;
    size_t   len, sent;
    int      queued;          /* on the send queue now */
    int      release_cmd;     /* free the command once sent */
    struct oc_nvmf_cmd *cmd;
    struct oc_nvmf_tx *next;
} oc_nvmf_tx_t;

typedef enum {
    OC_NVMF_CMD_FREE = 0,
    OC_NVMF_CMD_H2C,      /* R2T sent, waiting for data */
    OC_NVMF_CMD_EXEC,     /* file I/O in flight */
    OC_NVMF_CMD_TX,       /* response queued */
    OC_NVMF_CMD_HELD,     /* Async Event Request */
} oc_nvmf_cmd_state_t;

typedef struct oc_nvmf_cmd {
    struct oc_nvmf_conn *conn;
    uint8_t  sqe[OC_NVME_SQE_LEN];
    uint16_t cid;
    uint16_t ttag;          /* index in the queue's table */
    uint8_t  state;
    uint8_t  fua;
    uint8_t  step;          /* io.c's state machine */
    uint16_t status;
    uint32_t dw0, dw1;
    uint8_t  *buf;          /* OC_NVMF_MAX_XFER bytes, 4 KiB-aligned */
    uint16_t buf_reg;       /* buf's index in the ring's table + 1; 0 none */
    uint32_t data_len;      /* bytes to move */
    uint32_t h2c_got;       /* bytes received so far (R2T) */
    uint32_t io_done;       /* bytes read/written so far */
    uint64_t slba;
    uint64_t start_ns;
    oc_nvmf_ns_t *ns;
    oc_nvmf_op_t op;
    oc_nvmf_tx_t tx;        /* C2HData + CapsuleResp */
    oc_nvmf_tx_t r2t_tx;
    uint8_t  r2t_hdr[OC_NVMF_DATA_HLEN + OC_NVMF_DGST_LEN];
    uint8_t  hdr[OC_NVMF_DATA_HLEN + OC_NVMF_DGST_LEN]; /* C2HData or R2T */
    uint8_t  rsp[OC_NVMF_RSP_HLEN + OC_NVMF_DGST_LEN];
    uint8_t  ddgst[OC_NVMF_DGST_LEN];
    uint32_t zr_lo, zr_hi;  /* Write Zeroes / DSM chunk cursor */
} oc_nvmf_cmd_t;

typedef enum {
    OC_NVMF_CONN_ICREQ = 0, /* waiting for ICReq */
    OC_NVMF_CONN_READY,     /* ICResp sent; Connect expected next */
    OC_NVMF_CONN_CLOSING,   /* draining: no more input */
} oc_nvmf_conn_state_t;

typedef struct oc_nvmf_conn {
    struct oc_nvmf_target *tgt;
    struct oc_nvmf_worker *w; /* the owner, for the connection's life */
    _Atomic int close_req;   /* another thread asks its owner to close it */
    const char *_Atomic close_why; /* static; stored before close_req */
    int      fd;
    int      state;
    uint64_t id;
    char     peer[64];
    char     local[64];     /* our address on this connection */
    oc_nvmf_pdu_limits_t lim;
    uint16_t qid;
    uint16_t sqsize;        /* 0-based, from Connect */
    uint16_t sqhd;
    int      connected;
    oc_nvmf_ctrl_t *ctrl;
    /* receive */
    uint8_t  *rx;
    uint32_t rx_cap, rx_head, rx_tail;
    uint32_t rx_more;       /* bytes the PDU at rx_head still lacks, or 0 */
    uint32_t h2c_wait;      /* commands sent an R2T, their data not all in */
    oc_nvmf_op_t rx_op;
    int      rx_armed;
    /* a large H2CData or in-capsule data received straight into its
     * command's buffer: dr_state 1 data arriving, 2 its data digest next
     * in rx, 0 none; dr_capsule: the data is the capsule's own */
    int      dr_state;
    int      dr_capsule;
    int      rx_window;     /* large in-capsule writes seen: receive in windows */
    struct oc_nvmf_cmd *dr_cmd;
    uint32_t dr_datao, dr_datal, dr_off, dr_left;
    uint8_t  dr_flags;
    /* send */
    oc_nvmf_tx_t *txq_head, *txq_tail;
    oc_nvmf_op_t tx_op;
    int      tx_armed;
    int      flush_queued;  /* on the target's flush list */
    struct oc_nvmf_conn *flush_next;
    uint64_t tx_progress_ms; /* last time output moved (or was queued) */
    struct iovec tx_iov[64];
    struct msghdr tx_msg;
    /* ICResp and C2HTermReq each have their own piece and buffer: one
     * segment can hold an ICReq and the PDU that is fatal, and the
     * TermReq then follows the ICResp, still queued */
    oc_nvmf_tx_t ic_tx;
    uint8_t  ic_buf[OC_NVMF_IC_LEN];
    oc_nvmf_tx_t term_tx;
    uint8_t  term_buf[OC_NVMF_TERM_HLEN + OC_NVMF_TERM_MAX_DATA];
    int      close_after_tx; /* fatal: no more input, close once sent */
    /* admission: pending (evictable, with a deadline) until its Connect
     * succeeds; counted until closed */
    oc_guard_slot_t slot;
    int      settled;       /* the guard was told (once: it takes a lock) */
    /* commands */
    oc_nvmf_cmd_t cmds[OC_NVMF_CMD_SLOTS];
    uint16_t free_cmds[OC_NVMF_CMD_SLOTS];
    int      nfree;
    int      inflight_ops;  /* io_uring ops that still point here */
    _Atomic uint64_t ncmds;
    /* Read/Write latency on this queue (buckets as the namespaces') */
    _Atomic uint64_t lat_bucket[12], lat_sum_ns, lat_count;
    /* what the metrics thread shows; written once, under snap_lock */
    int      snap_connected;
    uint16_t snap_qid, snap_cntlid;
    char     snap_host[OC_NVMF_NQN_MAX + 1], snap_sub[OC_NVMF_NQN_MAX + 1];
    char     snap_digest[16];
    struct oc_nvmf_conn *next, *prev;
} oc_nvmf_conn_t;

/* One worker: a thread and everything it alone touches (see Threading) */
typedef struct oc_nvmf_worker {
    struct io_uring ring;
    struct oc_nvmf_target *tgt;
    int      idx;
    int      cpu;           /* pinned to it; -1: not pinned */
    int      ring_ok;
    pthread_t thread;
    oc_nvmf_conn_t *conns;
    oc_nvmf_conn_t *flush_list; /* output queued this loop turn */
    int      draining;
    uint64_t drain_deadline_ms;
    /* draining: commands still moving here (1 until this worker has
     * looked); connections close when no worker has any (a controller's
     * queues may be on several) */
    _Atomic int drain_busy;
    /* wake-ups from other threads: an eventfd read in the ring */
    int      wake_fd;
    uint64_t wake_val;
    oc_nvmf_op_t wake_op;
    int      wake_armed;
    _Atomic int close_pending; /* some connection's close_req is set */
    pthread_mutex_t mb_lock;   /* connections handed over, not yet taken */
    int      mb_fds[OC_NVMF_MAILBOX];
    int      mb_n;
    /* free entries of the ring's registered-buffer table (a stack);
     * reg_off: no table (old kernel) or a registration failed (memlock) */
    uint16_t reg_free[OC_NVMF_REG_BUFS];
    uint32_t reg_nfree;
    int      reg_off;
    oc_nvmf_stats_t st;
} oc_nvmf_worker_t;

typedef struct oc_nvmf_target {
    oc_nvmf_conf_t *conf;
    int      listen_fd;
    uint16_t port;
    char     traddr[256];
    oc_nvmf_op_t accept_op;
    int      accept_armed;
    /* who may hold a connection, for how long before Connect, and the
     * accept back-off (util/guard.h); fd_wait: the back-off ends when a
     * connection closed to make room (out of descriptors) has let its
     * descriptor go; both under guard_lock */
    oc_guard_t guard;
    int      fd_wait;
    pthread_mutex_t guard_lock;
    int      nsubsys;
    oc_nvmf_subsys_t subsys[OC_NVMF_MAX_SUBSYS + 1]; /* [0] discovery */
    oc_nvmf_ctrl_t *ctrls;     /* under ctrl_lock */
    pthread_mutex_t ctrl_lock;
    _Atomic uint64_t next_conn_id;
    unsigned rr;               /* worker 0's round robin */
    _Atomic int listen_done;   /* worker 0 accepts no more */
    _Atomic int start_failed;  /* a worker could not start: all stop */
    int      nworkers;
    oc_nvmf_worker_t *w;       /* [nworkers]; [0] runs on the caller */
    _Atomic int *stop;         /* oc__nvmf_target_run's */
    /* start: workers 1.. say their ring is made (nready), then wait for
     * go (1 run, -1 a worker could not start: none runs) */
    pthread_mutex_t start_lock;
    pthread_cond_t start_cond;
    int      nready, go;
    pthread_mutex_t snap_lock; /* guards the connection lists for readers */
} oc_nvmf_target_t;

/* base.c: what the target lends conn.c, qpair.c, admin.c and io.c */
uint64_t oc__nvmf_now_ms(void);
uint64_t oc__nvmf_now_ns(void);
/** A submission entry of the worker's ring (what is queued is submitted
 *  first when it is full), or NULL. */
struct io_uring_sqe *oc__nvmf_sqe(oc_nvmf_worker_t *w);
/** Ask @p c's owner to close it (any thread; the caller holds the lock
 *  that keeps @p c alive, see Threading), or close it now when the caller
 *  is its owner @p self. */
void oc__nvmf_conn_close_by(oc_nvmf_worker_t *self, oc_nvmf_conn_t *c,
                           const char *why);
/** Wake @p w's loop (any thread). */
void oc__nvmf_worker_wake(oc_nvmf_worker_t *w);
/** Drop a reference to @p ctrl (takes ctrl_lock); the last frees it. */
void oc__nvmf_ctrl_put(oc_nvmf_ctrl_t *ctrl);
oc_nvmf_subsys_t *oc__nvmf_subsys_find(oc_nvmf_target_t *t, const char *nqn);

/* conn.c: a connection's input */
/** A connection accepted: admitted under the guard's cap (which may close
 *  the oldest one still pending, or refuse this one), then received from. */
void oc__nvmf_conn_accepted(oc_nvmf_worker_t *w, int fd);
void oc__nvmf_conn_recv_done(oc_nvmf_conn_t *c, int res);

/* qpair.c: a connection's output and end */
/** The connection a guard slot belongs to. */
oc_nvmf_conn_t *oc__nvmf_conn_of(oc_guard_slot_t *s);
void oc__nvmf_conn_send_done(oc_nvmf_conn_t *c, int res);
void oc__nvmf_conn_close(oc_nvmf_conn_t *c, const char *why);
void oc__nvmf_conn_fatal(oc_nvmf_conn_t *c, uint16_t fes, uint32_t fei,
                        const uint8_t *hdr, uint32_t hlen, const char *why);
void oc__nvmf_conn_release_op(oc_nvmf_conn_t *c);
/** Queue the command's completion (and its C2HData when it read data). */
void oc__nvmf_cmd_complete(oc_nvmf_cmd_t *cmd);
/** Queue an R2T for the rest of the command's data. */
void oc__nvmf_cmd_r2t(oc_nvmf_cmd_t *cmd);
/** Queue @tx; it goes out at the end of the loop turn, gathered with
 * everything else the turn queued on @c (oc__nvmf_conn_flush_all). */
void oc__nvmf_tx_push(oc_nvmf_conn_t *c, oc_nvmf_tx_t *tx);
/** One sendmsg per connection for what this loop turn queued. */
void oc__nvmf_conn_flush_all(oc_nvmf_worker_t *w);
/** The command's data buffer (OC_NVMF_MAX_XFER bytes), allocated on the
 *  slot's first use and kept until its connection is freed, registered
 *  with the ring while the table has room.  @return 0, -1 out of memory. */
int oc__nvmf_cmd_buf(oc_nvmf_cmd_t *cmd);
/** Unlink a controller and close its queues (its admin queue's worker);
 *  the memory goes with the last reference (oc__nvmf_ctrl_put). */
void oc__nvmf_ctrl_destroy(oc_nvmf_ctrl_t *ctrl);

/* admin.c */
void oc__nvmf_admin_exec(oc_nvmf_cmd_t *cmd);
void oc__nvmf_fabrics_exec(oc_nvmf_cmd_t *cmd);

/** Direction of a command's data: 1 to the controller, 0 from it or none
 *  (@p admin: an admin queue's command; the direction does not depend on
 *  it today). */
static inline int oc__nvmf_cmd_dir_write(const uint8_t *sqe, int admin)
{
    uint8_t opc = oc__sqe_opc(sqe);

    if (opc == 0x7f) /* fabrics: direction from FCTYPE's low bits */
        return (sqe[4] & 0x03) == 0x01;
    (void)admin;
    return (opc & 0x03) == 0x01;
}

/* io.c */
void oc__nvmf_io_exec(oc_nvmf_cmd_t *cmd);
void oc__nvmf_io_file_done(oc_nvmf_cmd_t *cmd, int res);
void oc__nvmf_ns_stats_lat(oc_nvmf_ns_t *ns, oc_nvmf_conn_t *c,
                          uint64_t ns_elapsed);

/* ns.c */
oc_status_t oc__nvmf_ns_open(const oc_nvmf_ns_conf_t *nc, const char *subnqn,
                            oc_nvmf_ns_t **out);
void oc__nvmf_ns_close(oc_nvmf_ns_t *ns);
/** Ciphers for @p n workers (a copy of the key schedule for each).
 *  @return 0, -1 (logged) out of memory or OpenSSL refused. */
int oc__nvmf_ns_workers(oc_nvmf_ns_t *ns, int n);
/** Check (and on success decrypt in place) @p n blocks read at @p lba,
 *  on worker @p w (its cipher context). */
uint64_t oc__nvmf_ns_verify(oc_nvmf_ns_t *ns, int w, uint8_t *buf,
                           uint64_t lba, uint32_t n, int *bad);
/** Encrypt in place and record checksums of @p n blocks to write at @p lba,
 *  on worker @p w. */
int oc__nvmf_ns_seal(oc_nvmf_ns_t *ns, int w, uint8_t *buf, uint64_t lba,
                    uint32_t n);
/** Checksum entries for blocks now holding zeros on disk. */
void oc__nvmf_ns_mark_zero(oc_nvmf_ns_t *ns, uint64_t lba, uint64_t n);

/* target.c */
/** Open every namespace, worker 0's ring (on the calling thread, pinned
 *  to its CPU), and (unless @p check_only) the listening socket.  Errors
 *  are logged.  @return OC_OK, OC_ERR_CONFIG, OC_ERR_UNSUPPORTED (no
 *  io_uring), OC_ERR_NO_MEMORY. */
oc_status_t oc__nvmf_target_init(oc_nvmf_target_t *t, oc_nvmf_conf_t *conf,
                                int check_only);
/** Start workers 1.. on their threads, run worker 0 on the caller's until
 *  @p stop and every connection is drained, then join them.
 *  @return OC_OK, or OC_ERR_UNSUPPORTED / OC_ERR_NO_MEMORY when a worker
 *  could not start (logged; the others are stopped). */
oc_status_t oc__nvmf_target_run(oc_nvmf_target_t *t, _Atomic int *stop);
void oc__nvmf_target_fini(oc_nvmf_target_t *t);

/* worker.c */
/** A worker's ring: created on the thread that will use it, pinned to
 *  w->cpu first (unless @p check_only).  Errors are logged.
 *  @return OC_OK, OC_ERR_CONFIG (the CPU), OC_ERR_UNSUPPORTED (io_uring). */
oc_status_t oc__nvmf_worker_init(oc_nvmf_worker_t *w, int check_only);
void oc__nvmf_worker_fini(oc_nvmf_worker_t *w);
/** The worker's loop, until @p stop and its connections are drained. */
void oc__nvmf_worker_run(oc_nvmf_worker_t *w, _Atomic int *stop);

#endif
