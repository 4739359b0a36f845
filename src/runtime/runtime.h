/*
 * runtime.h — private state of a liboffcore context (inline placement).
 *
 * Data path: oc_send copies a message into the aggregation buffer of its
 * destination; a full, timed-out or idle buffer becomes a bundle (header
 * written by src/wire) and goes to the transport, or straight onto the
 * local receive queue when the destination is this rank.  oc_poll runs the
 * transport, validates each received bundle once and hands its messages to
 * the handler.  Buffers come from a pool sized at init; sends from inside a
 * handler may take extra buffers from a reserve so replies never deadlock.
 */
#ifndef OC_RUNTIME_H
#define OC_RUNTIME_H

#include "transport/transport.h"
#include "util/config.h"
#include "wire/am.h"
#include "wire/wire.h"

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stdint.h>

#define OC_NO_ITEM    UINT32_MAX

typedef struct {
    uint64_t bundle_size;      /* OC_BUNDLE_SIZE */
    uint64_t buffers_per_dest; /* OC_BUFFERS_PER_DEST */
    uint64_t flush_timeout_us; /* OC_FLUSH_TIMEOUT_US */
    int      placement;        /* OC_PLACEMENT: 0 inline, 1 agent, 2 auto */
    uint64_t job;              /* OC_JOB */
    char     bootstrap_dir[OC_CFG_STRLEN];
    uint64_t bootstrap_timeout_s;
    uint64_t poll_budget;      /* OC_POLL_BUDGET */
    char     agent[OC_CFG_STRLEN]; /* OC_AGENT */
    uint64_t agent_credits;    /* OC_AGENT_CREDITS */
    char     require_transport[OC_CFG_STRLEN]; /* OC_REQUIRE_TRANSPORT */
    uint64_t stall_warn_s; /* OC_STALL_WARN_S (stall.c) */
} oc__config_t;

/* stall.c: what the agent watchdog remembers between polls */
typedef struct {
    uint32_t polls;
    uint64_t fingerprint;  /* of the counters that move when the agent does */
    uint64_t since_us;     /* the fingerprint last changed; 0: not waiting */
    int      warned;       /* this stall was reported */
} oc__stall_t;

extern const oc_cfg_field_t oc__runtime_config_table[];

typedef struct oc__buf {
    oc_tr_op_t       op;      /* transport completion */
    struct oc_context *ctx;
    uint8_t         *data;    /* OC_BUNDLE_SIZE bytes */
    struct oc__buf  *next;    /* free list, or the credit wait queue */
    uint32_t         len;     /* bundle length while queued */
    uint8_t          reserve; /* malloc'd beyond the pool */
} oc__buf_t;

/* Aggregation state for one lane toward one destination rank: lane 0
 * carries what the application sends, lane 1 what handlers send (replies),
 * so requests and replies each stay in fixed-size form.  Slot index:
 * dest * 2 + lane.  Hot fields first. */
typedef struct {
    uint8_t   *wp;        /* write pointer, NULL when no buffer */
    uint8_t   *end;
    uint32_t   item_len;  /* fixed-mode item length, OC_NO_ITEM if mixed */
    uint32_t   stride;    /* pad8(item_len) */
    uint32_t   count;     /* messages in the buffer */
    uint8_t    listed;    /* on the dirty list */
    oc__buf_t *buf;
    uint64_t   t_first;   /* when the first message went in (us) */
    uint64_t   seq;
} oc__dest_t;

#define OC__SLOT(dest, lane) (((uint32_t)(dest) << 1) | (uint32_t)(lane))

/* A received bundle waiting for (or in) delivery. */
typedef struct {
    uint8_t       *data;
    uint32_t       len;
    uint32_t       done;      /* messages already delivered */
    oc__buf_t     *self_buf;  /* bundle sent to self: return to the pool */
    uint8_t        validated;
    oc_wire_hdr_t  hdr;
} oc__rx_t;


typedef struct {
    int      valid;
    uint32_t epoch, round;
    uint64_t sent, delivered;
    uint32_t verdict;
} oc__qslot_t;

typedef struct {
    int          active;
    uint32_t     epoch;
    uint32_t     round;
    int          sent_up;
    uint32_t     parent;
    uint32_t     first_child, nchildren;
    oc__qslot_t *child;      /* nchildren slots */
    oc__qslot_t  down;
    int          have_prev;  /* root: previous wave's sums */
    uint64_t     prev_sent, prev_delivered;
} oc__quiesce_t;

struct oc_context {
    /* hot */
    oc__dest_t     *dests;        /* [2 * size]: OC__SLOT(dest, lane) */
    oc_counters_t   c;
    uint32_t        rank, size;
    int             in_handler;
    int             failed;       /* OC_OK or the error that broke it */
    oc_handler_t    handler;
    oc_burst_handler_t burst_handler;
    void           *handler_arg;
    oc__buf_t      *free_bufs;
    oc__buf_t      *reserve_bufs;
    uint32_t       *dirty;        /* slots with a buffer */
    uint32_t        ndirty;
    uint64_t        last_activity; /* msgs_sent + no_resource at last poll */
    /* receive queue: ring of rx entries */
    oc__rx_t       *rxq;
    uint32_t        rx_head, rx_count, rx_cap;
    uint64_t        inflight;      /* bundles handed to the transport */
    /* cold */
    oc_tr_ep_t    **eps;          /* [size] inline placement */
    oc__config_t    cfg;
    size_t          max_msg;
    oc__buf_t      *pool_descs;
    uint8_t        *pool_mem;
    size_t          pool_n;
    oc_tr_context_t *tr;
    oc_tr_worker_t  *worker;
    oc_allgather_fn_t allgather;
    void            *allgather_arg;
    uint32_t         bootstrap_seq;   /* file bootstrap call counter */
    oc__quiesce_t    q;
    char             name[64];
    /* agent placement (agent.c); agent == NULL in inline placement */
    struct oc__agent *agent;
    oc__stall_t      stall;         /* stall.c */
};

/* send.c */
oc_status_t oc__flush_dest(oc_context_t *ctx, uint32_t slot, int reason);
oc_status_t oc__flush_all(oc_context_t *ctx, int reason);
int oc__progress(oc_context_t *ctx);
void oc__rx_push(oc_context_t *ctx, uint8_t *data, uint32_t len,
                 oc__buf_t *self_buf);
void oc__rx_drain_release(oc_context_t *ctx);
void oc__send_done(oc_tr_op_t *op, oc_status_t st);
void oc__bundle_recv(void *arg, uint64_t token, void *data, size_t len);
uint64_t oc__now_us(void);

enum { OC__FLUSH_FULL, OC__FLUSH_TIMEOUT, OC__FLUSH_IDLE, OC__FLUSH_EXPLICIT };

/* agent.c: the agent placement */
oc_status_t oc__agent_init(oc_context_t *ctx, int required);
void oc__agent_fini(oc_context_t *ctx);
/** Hand a finished bundle to the agent (now, or when credit returns). */
oc_status_t oc__agent_submit(oc_context_t *ctx, oc__buf_t *b, uint32_t len);
/** Control-socket and credit work, once per progress call. */
void oc__agent_progress(oc_context_t *ctx);
/** Tests only: send raw bytes to the agent as a bundle, with this rank's
 *  token (0) or another.  At most 256 bytes. */
oc_status_t oc__agent_send_raw(oc_context_t *ctx, const void *buf, size_t len,
                               uint64_t token);
/** Bundles still waiting for credit. */
int oc__agent_pending(const oc_context_t *ctx);
oc_status_t oc__agent_quiesce_step(oc_context_t *ctx);
void oc__buf_put(oc_context_t *ctx, oc__buf_t *b);

/* stall.c: warn (once per stall, rate-limited) when a rank waits on an
 * agent that has made no progress for OC_STALL_WARN_S seconds.
 * Called by oc__progress() in the agent placement; cheap (looks at the
 * clock once per 256 calls). */
void oc__agent_watch(oc_context_t *ctx);

/* quiesce.c */
oc_status_t oc__quiesce_init(oc_context_t *ctx);
void oc__quiesce_fini(oc_context_t *ctx);
void oc__control_recv(void *arg, uint64_t token, void *data, size_t len);

/* watch.c: log and count the transport of every peer connection; fail
 * with OC_ERR_TRANSPORT_REQUIRED when OC_REQUIRE_TRANSPORT is not met. */
oc_status_t oc__transport_watch(oc_context_t *ctx);
/* ... and before any connection: does UCX offer it toward other hosts? */
oc_status_t oc__transport_precheck(oc_context_t *ctx);

/* bootstrap.c: all-gather through files in a shared directory */
oc_status_t oc__file_allgather(void *arg, const void *sendbuf, void *recvbuf,
                               size_t len);
void oc__file_bootstrap_cleanup(oc_context_t *ctx);

#endif
