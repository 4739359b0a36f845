/*
 * router.h — the routing threads of offcored.
 *
 * Each router owns one UCX worker, its own endpoints to every local rank
 * and to the same-numbered router of every peer agent, and private
 * aggregation buffers per next hop (per local rank, per peer node, per
 * job).  Nothing on the routing path is shared or locked.  The control
 * thread changes a router only through commands (oc_router_post), which
 * the router applies between bundles.
 *
 * A bundle is accepted only from a sender the control thread registered
 * (its 8-byte token travels as the active-message header), validated by
 * src/wire against what that sender may send — a rank only as itself and
 * only to ranks of its own job; a peer agent only from ranks on its node
 * to ranks on this one — then every message is copied into the buffer of
 * its next hop.
 */
#ifndef OC_AGENT_ROUTER_H
#define OC_AGENT_ROUTER_H

#include "transport/transport.h"

#include <offcore/offcore.h>
#include <stdint.h>

#define OC_AGENT_MAX_NODES 4096

/** Immutable once published: the rank-to-node map of one job. */
typedef struct {
    uint32_t  job;
    uint32_t  size;
    uint32_t *node_of;   /* [size] node index of each rank */
    uint32_t  nnodes;    /* cluster nodes (index range of node_of) */
    uint32_t  refs;      /* routers holding it (atomic) */
} oc_job_map_t;

typedef struct oc_router oc_router_t;

typedef struct {
    uint32_t index;          /* router number */
    uint32_t node;           /* this agent's node index */
    uint32_t nnodes;
    uint64_t bundle_size;    /* bytes per aggregation buffer */
    uint64_t buffers;        /* pool size */
    uint64_t flush_timeout_us;
    uint64_t max_inflight;   /* bundles in flight per next hop before it
                                is blocklisted */
    int      grid;           /* two-hop routing through a grid of nodes */
    uint32_t nthreads;       /* routers in this agent (collectives: router 0) */
    int      coll_cma;       /* OC_AGENT_COLL_CMA: move allreduce data by
                                memory where a rank offers it (rcma.c) */
    oc_router_t *const *siblings; /* [nthreads]: the agent's routers
                                     (router 0 posts them slices) */
    uint64_t coll_split_min; /* OC_AGENT_COLL_SPLIT_MIN: an allreduce by
                                memory of this many bytes or more is split
                                across the routers (rcsplit.c); 0: never */
} oc_router_params_t;

/**
 * The next node from @p a toward @p b.  Direct: b.  Grid: nodes sit on a
 * grid of ceil(sqrt(n)) columns; a message first goes along a's row to
 * b's column, then along that column to b — so an agent sends to the
 * nodes of its row and column only, O(sqrt(n)) buffers per job instead of
 * O(n).  Where the grid's last row is short, the hop that does not exist
 * is replaced by the other corner, else by b itself.
 */
uint32_t oc__route_hop(int grid, uint32_t nnodes, uint32_t a, uint32_t b);

/**
 * Whether process @p pid may run on a CPU the calling thread may run on
 * (cores.c; the router's idle policy yields its core only to local ranks
 * that may share it).  @return 0 only when both affinities were read and
 * do not meet; 1 when they meet or either cannot be read (@p pid 0, gone,
 * or not ours to see).  Any thread.
 */
int oc__router_cpus_shared(uint32_t pid);

/** Per-router counters.  Written only by the router; read by others with
 *  relaxed atomic loads (oc__router_counters). */
typedef struct {
    uint64_t msgs;               /* messages routed */
    uint64_t bundles_in, bundles_out;
    uint64_t bytes_in, bytes_out;
    uint64_t flush_full, flush_timeout, flush_idle, flush_explicit;
    uint64_t rejects;            /* bundles rejected (any reason) */
    uint64_t reject_unknown_sender;
    uint64_t reject_wire[16];    /* by -(status) - 20: OC_ERR_WIRE_* */
    uint64_t blocklist_depth;    /* next hops blocked now (gauge) */
    uint64_t backlog;            /* bundles waiting to be routed (gauge) */
    uint64_t bundles_forwarded;  /* sent on whole (one destination), not
                                    re-aggregated message by message */
    uint64_t sleeps;             /* times the thread slept, idle */
    uint64_t undeliverable;      /* messages for a local rank that has left
                                    its (failing) job, or aggregated toward
                                    a next hop that went away: dropped,
                                    counted */
    uint64_t coll_cma;           /* rank contributions moved by memory */
    uint64_t coll_cma_fallback;  /* offered by memory, sent back to UCX */
    uint64_t coll_inline;        /* carried in their descriptors */
    uint64_t coll_state_new;     /* collective states allocated */
    uint64_t coll_state_kept;    /* ... taken from the ended ones kept
                                    (oc__rc_acoll_put): steady state */
    uint64_t coll_buf_new;       /* collective data buffers allocated */
    uint64_t coll_buf_kept;      /* ... taken from a kept state: steady */
    uint64_t coll_a2a_mem;       /* all-to-alls written by memory (the
                                    first is logged; not exported) */
    uint64_t coll_split;         /* allreduces split across the routers
                                    (the first is logged; not exported) */
    uint64_t shm_bundles_in;     /* bundles read from ranks' shared rings */
    uint64_t shm_bundles_out;    /* bundles written into them */
    uint64_t shm_full;           /* a rank's ring full: its traffic held */
    uint64_t shm_wakes;          /* doorbell rings of a waiting rank */
    uint64_t coll_dones_shm;     /* collective DONEs through a rank's
                                    completion ring */
    uint64_t coll_dones_ucx;     /* ... by UCX (no ring, or it was full) */
    uint64_t coll_descs_shm;     /* collective descriptors read from a
                                    rank's descriptor ring (router 0) */
    uint64_t coll_descs_ucx;     /* ... that came by UCX */
    uint64_t coll_nudges;        /* empty ones: a rank woke this router
                                    for its ring */
} oc_router_counters_t;

typedef struct {
    uint32_t job;
    uint64_t msgs_in, msgs_out, bytes_in, bytes_out, bundles_in, bundles_out;
    uint64_t rejects;
} oc_router_job_counters_t;

/** Traffic between this router and one peer node's agent (all jobs): what
 *  crossed the network.  Bundles out are counted when handed to UCX, in
 *  when accepted (validated); so once the traffic has stopped, and no
 *  link failed, one agent's "out" toward a node equals that node's "in"
 *  from it. */
typedef struct {
    uint64_t bundles_in, bundles_out;
    uint64_t bytes_in, bytes_out;
    uint64_t msgs_in, msgs_out;
    uint64_t blocked;            /* next hops toward it blocked now (gauge) */
} oc_router_peer_counters_t;

/** A rank's shared-memory channel (wire/shmseg.h), held by the control
 *  thread that made it and every router (the one that serves it reads
 *  its up ring; each writes its own down ring); unmapped when the last
 *  reference goes (rshm.c).  Thread-safe reference counting. */
typedef struct oc_rshm oc_rshm_t;
/** Create a segment of an up ring and @p ndown down rings (one per
 *  routing thread) of @p nslots slots of @p slot_size bytes; *memfd_out is
 *  its sealed memfd (the caller passes it to the rank, then closes it).
 *  One reference.  OC_ERR_INVALID_PARAM, OC_ERR_NO_MEMORY,
 *  OC_ERR_NO_RESOURCE (memfd, seals, mmap). */
oc_status_t oc__rshm_create(uint32_t nslots, uint32_t slot_size,
                            uint32_t ndown, oc_rshm_t **s_out, int *memfd_out);
void oc__rshm_get(oc_rshm_t *s);
/** Drop a reference.  NULL is a no-op. */
void oc__rshm_put(oc_rshm_t *s);
/** The eventfd ranks on shared memory write to wake this router when it
 *  sleeps (its own, not the command one: a rank may read it too). */
int oc__router_rank_wake_fd(const oc_router_t *r);

oc_status_t oc__router_create(const oc_router_params_t *p, oc_router_t **r_p);
/** Start the thread.  After this only oc_router_post and the counter
 *  readers may be called from other threads. */
oc_status_t oc__router_start(oc_router_t *r);
/** Stop the thread (flushing what is buffered) and free everything. */
/** Stop the router's thread and wait for it (destroy does it too).  The
 *  agent stops every router before it destroys any: router 0 posts the
 *  others work that refers to its own state (rcsplit.c). */
void oc__router_stop(oc_router_t *r);
void oc__router_destroy(oc_router_t *r);

oc_status_t oc__router_address(oc_router_t *r, const void **addr, size_t *len);

/* Commands, applied by the router thread in the order posted.  Thread-safe.
 * Copies every argument. */
/** @p shm: the rank's shared-memory channel (the router takes a
 *  reference): this router delivers to the rank into its own down ring
 *  (the one of its index), and, when @p serves, reads the rank's up
 *  ring; NULL: UCX only. */
oc_status_t oc__router_add_rank(oc_router_t *r, uint64_t token, uint32_t job,
                               uint32_t rank, const void *addr, size_t len,
                               uint32_t pid, oc_rshm_t *shm, int serves);
oc_status_t oc__router_del_rank(oc_router_t *r, uint32_t job, uint32_t rank);
/** Publish a job's map (the router takes a reference).  Its local ranks
 *  go with it in one batch (below): a job applied alone has its ranks
 *  here as ranks that left, and a peer's bundle for one would be counted
 *  undeliverable. */
oc_status_t oc__router_add_job(oc_router_t *r, oc_job_map_t *map);
/** A batch: the commands this thread posts to @p r from here until
 *  oc__router_batch_end(@p r) are kept back and then queued in one go, so
 *  that the router applies them in the same turn (a job and its local
 *  ranks).  Other threads' commands, and this thread's to other routers,
 *  go as before.  One batch open per thread: a second begin ends the
 *  first. */
void oc__router_batch_begin(oc_router_t *r);
void oc__router_batch_end(oc_router_t *r);
oc_status_t oc__router_del_job(oc_router_t *r, uint32_t job);
/** A peer agent's router to send to (with @p send_token), and the token
 *  its bundles arrive with. */
oc_status_t oc__router_add_peer(oc_router_t *r, uint32_t node,
                               uint64_t send_token, uint64_t recv_token,
                               const void *addr, size_t len);
oc_status_t oc__router_del_peer(oc_router_t *r, uint32_t node);
/** Node @p node is authenticated and its bundles will carry @p recv_token:
 *  until its oc__router_add_peer() is applied (the peer may learn this
 *  router's address and send before this agent has its PEER_INFO), such
 *  bundles wait up to OC_ROUTER_UNKNOWN_JOB_WAIT_US instead of being
 *  refused.  Post it before telling the peer where the routers are. */
oc_status_t oc__router_expect_peer(oc_router_t *r, uint32_t node,
                                  uint64_t recv_token);

/** Snapshot of the counters (relaxed loads; thread-safe). */
void oc__router_counters(const oc_router_t *r, oc_router_counters_t *out);
/** Per-job counters: fills up to @p max entries, returns how many jobs. */
uint32_t oc__router_job_counters(oc_router_t *r, oc_router_job_counters_t *out,
                                uint32_t max);
/** Counters of the traffic with node @p node (< nnodes; zero for this
 *  node itself).  Relaxed loads; thread-safe. */
void oc__router_peer_counters(const oc_router_t *r, uint32_t node,
                             oc_router_peer_counters_t *out);

oc_job_map_t *oc__job_map_new(uint32_t job, uint32_t size, uint32_t nnodes);
void oc__job_map_put(oc_job_map_t *m);

#endif
