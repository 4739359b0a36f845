/*
 * runtime.h — private state of a liboffcore context.
 *
 * Data path: oc_send appends a message to an outlet of the aggregation
 * engine (src/engine): in per-destination mode one outlet per destination
 * rank and lane, in stream mode (agent placement) one outlet toward the
 * agent for every destination.  A full, timed-out or idle outlet becomes
 * a bundle, which the engine hands back here (handoff): a bundle for this
 * rank goes straight onto the receive ring, any other to the placement
 * (oc__placement_t below: inline sends it to its rank, agent to the
 * node's agent).
 * oc_poll runs the transport, validates each received bundle once and
 * hands its messages to the handler.  Buffers come from the engine's pool
 * sized at init; sends from inside a handler may take extra buffers from a
 * reserve so replies never deadlock.
 *
 * Threading: a context belongs to one thread at a time (none of its calls
 * is thread-safe), like the UCX worker under it.
 */
#ifndef OC_RUNTIME_H
#define OC_RUNTIME_H

#include "engine/engine.h"
#include "runtime/ext.h"
#include "transport/transport.h"
#include "util/config.h"
#include "wire/am.h"
#include "wire/wire.h"

#include <offcore/offcore.h>
#include <stdbool.h>
#include <stdint.h>

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
    int      agent_mode;       /* OC_AGENT_MODE: oc__agent_mode_t */
    int      agent_channel;    /* OC_AGENT_CHANNEL: 0 shm, 1 ucx */
} oc__config_t;

typedef enum {
    OC__AGENT_MODE_PER_DEST,
    OC__AGENT_MODE_STREAM,
    OC__AGENT_MODE_AUTO /* stream on shared memory, else per-dest (agent.c) */
} oc__agent_mode_t;

/* stall.c: what the agent watchdog remembers between polls */
typedef struct {
    uint32_t polls;
    uint64_t fingerprint;  /* of the counters that move when the agent does */
    uint64_t since_us;     /* the fingerprint last changed; 0: not waiting */
    int      warned;       /* this stall was reported */
} oc__stall_t;

extern const oc_cfg_field_t oc__runtime_config_table[];

/* Outlet slot of one lane toward one destination rank: lane 0 carries
 * what the application sends, lane 1 what handlers send (replies), so
 * requests and replies each stay in fixed-size form. */
/* Empty polls under back-pressure before the rank yields its core. */
#define OC__YIELD_AFTER 8

#define OC__SLOT(dest, lane) (((uint32_t)(dest) << 1) | (uint32_t)(lane))

typedef struct oc__placement oc__placement_t;

/* A progress hook of an extension (oc__ext_progress_hook). */
typedef struct {
    void (*fn)(void *arg);
    void  *arg;
} oc__hook_t;

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
    oc_eng_out_t   *dests;        /* [2 * size]: OC__SLOT(dest, lane) */
    oc_counters_t   c;
    uint32_t        rank, size;
    int             in_handler;
    int             failed;       /* OC_OK or the error that broke it */
    int             closing;      /* endpoints being closed: peers that
                                   * go away now have not failed */
    oc_eng_out_t   *stream;       /* stream mode: the one outlet, else NULL */
    oc_handler_t    handler;
    oc_burst_handler_t burst_handler;
    void           *handler_arg;
    oc_eng_t       *eng;
    uint64_t        last_activity; /* msgs_sent + no_resource at last poll */
    uint64_t        last_no_resource; /* send_no_resource at last poll */
    uint32_t        idle_polls;    /* empty polls under back-pressure */
    oc_eng_ring_t   rx;            /* received bundles */
    /* cold */
    const oc__placement_t *pl;    /* inline or agent (oc__placement_t) */
    oc_eng_out_t    stream_out;   /* the stream outlet */
    oc_tr_ep_t    **eps;          /* [size] inline placement */
    oc__config_t    cfg;
    size_t          max_msg;
    oc_tr_context_t *tr;
    oc_tr_worker_t  *worker;
    oc_allgather_fn_t allgather;
    void            *allgather_arg;
    uint32_t         bootstrap_seq;   /* file bootstrap call counter */
    oc__quiesce_t    q;
    char             name[64];
    /* agent placement (agent.c); NULL in inline placement */
    struct oc__agent *agent;
    oc__stall_t      stall;         /* stall.c */
    /* extensions (runtime/ext.h, ext.c): their state and progress hooks */
    void            *ext_state[OC_EXT_MAX];
    uint32_t         ext_inited;    /* extensions 0 .. n-1 had init */
    uint32_t         nhooks;
    oc__hook_t       hooks[OC_EXT_MAX];
};

/** What a placement does with the bundles and the job's life cycle.  A
 *  new placement is a new file with one of these (inline.c, agent.c). */
struct oc__placement {
    const char *name;             /* oc_placement() */
    /** A finished bundle for another rank (@p o: the outlet it came
     *  from).  Owns @p b from here.  OC_OK or the error that fails the
     *  context. */
    oc_status_t (*submit)(oc_context_t *ctx, oc_eng_out_t *o, oc_eng_buf_t *b,
                          uint32_t len);
    /** Once per progress call, after the transport's. */
    void (*progress)(oc_context_t *ctx);
    /** Back-pressured and nothing moved for a few polls: wait for the
     *  placement's peer (optional; default sched_yield). */
    void (*wait)(oc_context_t *ctx);
    /** Bundles held back (waiting for credit), not yet handed over. */
    int (*pending)(const oc_context_t *ctx);
    /** One step of oc_quiesce_test: OC_OK done, OC_INPROGRESS, or error. */
    oc_status_t (*quiesce_step)(oc_context_t *ctx);
    /** oc_finalize's part: everything sent, then leave. */
    oc_status_t (*finalize)(oc_context_t *ctx);
    void (*fini)(oc_context_t *ctx);
    /* The collectives' side of a placement that runs them in an agent
     * (runtime/ext.h's oc__ext_agent_*; NULL: none). */
    oc_status_t (*coll_send)(oc_context_t *ctx, const void *msg, size_t len);
    oc_tr_ep_t *(*coll_ep)(oc_context_t *ctx);
    int (*coll_serves)(const oc_context_t *ctx, unsigned kind);
    uint32_t (*peer_pid)(const oc_context_t *ctx);
    int (*peer_gone)(oc_context_t *ctx);
};

extern const oc__placement_t oc__placement_inline;
extern const oc__placement_t oc__placement_agent;


/* send.c */
oc_status_t oc__flush_all(oc_context_t *ctx, oc_eng_flush_t why);
int oc__progress(oc_context_t *ctx);
/** Queue a received bundle (@p self_buf: an engine buffer to give back
 *  instead of releasing to the transport).  On out-of-memory the bundle is
 *  given back and the context fails (engine.h's policy). */
void oc__rx_push(oc_context_t *ctx, uint8_t *data, uint32_t len,
                 oc_eng_buf_t *self_buf);
/** Queue a bundle lying in a shared ring's slot (@p ring: its owner's
 *  handle); released back to it in order (oc__agent_shm_release). */
void oc__rx_push_shm(oc_context_t *ctx, uint8_t *data, uint32_t len,
                     void *ring);
void oc__rx_drain_release(oc_context_t *ctx);
void oc__bundle_recv(void *arg, uint64_t token, void *data, size_t len);
/** The engine's hand-off (engine.h) of a context. */
oc_status_t oc__handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                        uint32_t len, uint32_t count);
void oc__send_failed(void *arg, oc_eng_out_t *o, oc_status_t st);

/* agent.c: the agent placement */
oc_status_t oc__agent_init(oc_context_t *ctx, int required);
/** Tests only: send raw bytes to the agent as a bundle, with this rank's
 *  token (0) or another.  At most 256 bytes. */
oc_status_t oc__agent_send_raw(oc_context_t *ctx, const void *buf, size_t len,
                               uint64_t token);

/** Tests only: publish raw bytes into the shared-memory ring toward the
 *  agent.  OC_ERR_STATE (not on shared memory, or the stream outlet holds
 *  the ring's slot), OC_ERR_NO_RESOURCE (full). */
oc_status_t oc__agent_shm_send_raw(oc_context_t *ctx, const void *buf,
                                   size_t len);

/** The oldest delivery read from down ring @p ring (an oc_spsc_t of the
 *  shared-memory channel) is done: its slot goes back to the agent. */
void oc__agent_shm_release(oc_context_t *ctx, void *ring);
/** Stream mode over the shared-memory channel: make @p o's buffers the
 *  slots of the ring toward the agent.  No-op on the UCX channel. */
void oc__agent_stream_setup(oc_context_t *ctx, oc_eng_out_t *o);
/** The largest bundle the channel to the agent takes (0: no limit). */
uint32_t oc__agent_max_bundle(const oc_context_t *ctx);

/* inline.c: the inline placement */
oc_status_t oc__inline_wireup(oc_context_t *ctx);
void oc__inline_fini(oc_context_t *ctx);

/* stall.c: warn (once per stall, rate-limited) when a rank waits on an
 * agent that has made no progress for OC_STALL_WARN_S seconds.
 * Called by oc__progress() in the agent placement; cheap (looks at the
 * clock once per 256 calls). */
void oc__agent_watch(oc_context_t *ctx);

/* quiesce.c */
oc_status_t oc__quiesce_init(oc_context_t *ctx);
void oc__quiesce_fini(oc_context_t *ctx);
void oc__control_recv(void *arg, uint64_t token, void *data, size_t len);
/** The inline placement's step of a termination wave. */
oc_status_t oc__inline_quiesce_step(oc_context_t *ctx);

/* watch.c: log and count the transport of every peer connection; fail
 * with OC_ERR_TRANSPORT_REQUIRED when OC_REQUIRE_TRANSPORT is not met. */
oc_status_t oc__transport_watch(oc_context_t *ctx);
/* ... and before any connection: does UCX offer it toward other hosts? */
oc_status_t oc__transport_precheck(oc_context_t *ctx);
/* ext.c: the registered extensions' lifecycle (runtime/ext.h) */
oc_status_t oc__ext_init(oc_context_t *ctx);
/* once every rank is wired (inline placement; collective: every rank
 * calls it) */
oc_status_t oc__ext_wired(oc_context_t *ctx);
/* whether an extension wants the agent to reach this process's memory */
int oc__ext_agent_access(const oc_context_t *ctx);
/* after the worker is destroyed: no callback into an extension can run */
void oc__ext_fini(oc_context_t *ctx);

/* bootstrap.c: all-gather through files in a shared directory */
oc_status_t oc__file_allgather(void *arg, const void *sendbuf, void *recvbuf,
                               size_t len);
void oc__file_bootstrap_cleanup(oc_context_t *ctx);

#endif
