/*
 * router_int.h — what the files of one routing thread share (router.c:
 * the thread and its life cycle; route.c: the routing kernel; rcmd.c:
 * commands from the control thread).  Everything here belongs to the
 * router's thread, except what router.h says other threads may call.
 */
#ifndef OC_AGENT_ROUTER_INT_H
#define OC_AGENT_ROUTER_INT_H

#include "router.h"

#include "engine/engine.h"
#include "wire/am.h"
#include "wire/shmseg.h"
#include "wire/wire.h"
#include "util/likely.h"

#include <pthread.h>
#include <stdatomic.h>

#define OC_ROUTER_MAX_JOBS 64

/* Bundles this router may have at one peer agent's router, not yet
 * routed there (the peer's credit window): bounds what a slow or stalled
 * peer holds for us, and turns it into back-pressure here. */
#define OC_ROUTER_PEER_WINDOW 64

/* A peer's bundle may arrive before this agent has heard (on the control
 * channel) of the job it belongs to: wait that long before rejecting. */
#define OC_ROUTER_UNKNOWN_JOB_WAIT_US 5000000u

/* Senders a router can hold back at once while routing the others; past
 * that it stops the scan (the old head-of-line behaviour). */
#define OC_ROUTER_MAX_HELD 64

typedef struct peer {
    oc_tr_ep_t   *ep;
    uint64_t      send_token, recv_token;
    /* the token its bundles will carry, known once the control thread
     * has authenticated it and before it is added (CMD_EXPECT_PEER): its
     * first bundles can beat the ADD_PEER, and are held, not refused */
    uint64_t      expect_token;
    oc_router_peer_counters_t c; /* written by the router only */
    /* the link to it: every job's bundles toward it, one window */
    oc_eng_out_t  link;          /* accounts the bundles in flight */
    uint32_t      credits;       /* bundles we may still send it */
    uint32_t      owed;          /* its bundles finished here, credit not
                                    yet returned */
    oc_eng_buf_t *wait_head, **wait_tail; /* bundles waiting for credit */
    uint32_t      waiting;
} peer_t;

/* Aggregation toward one next hop (a local rank, or a peer for a job). */
typedef struct out {
    oc_eng_out_t eo;       /* first: the engine hands this back */
    oc_tr_ep_t  *ep;       /* NULL: gone */
    uint64_t     token;    /* header of bundles to it */
    oc_router_job_counters_t *jc;
    peer_t      *peer;     /* the peer node it sends to; NULL: a local rank */
    uint8_t      none;     /* rjob_t.none: no next hop (never opened) */
    oc_rshm_t   *shm;      /* a local rank on shared memory: its ring */
    /* toward a peer (rpeer.c): the first packed bytes after the header
     * of buffer packed_buf are runs already (a compaction), the rest
     * mixed messages; 0 / NULL: all mixed */
    uint32_t      packed;
    oc_eng_buf_t *packed_buf;
} out_t;

/* Shared by every routing thread that delivers to the rank: what one
 * thread writes often sits on a cache line of its own (the up ring's
 * handle, the serving thread's, is in seg; each thread's down and
 * completion ring handles are copies in its lrank_t). */
struct oc_rshm {
    oc_shmseg_t      seg;
    int              broken_said;
    int              cup_broken_said; /* router 0's */
    _Alignas(OC_SPSC_ALIGN) _Atomic uint32_t refs;
    /* the router that writes the cdown ring (index + 1; 0: none yet):
     * the first to, so that it keeps one producer */
    _Alignas(OC_SPSC_ALIGN) _Atomic uint32_t cdown_writer;
    /* router i's own line (rshm.c): on its shm_pend list; its
     * attachments (lranks) and the holds of its turn (bundles read in
     * place, the pend list) — plain counts only router i touches, behind
     * the one shared reference it takes at its first attachment: a locked
     * add per bundle or per completion waited for the store buffer to
     * drain (the routing loop's and the slot's stores, lines the ranks'
     * cores hold), and each completion of a collective to every rank
     * waited for the one before */
    struct {
        _Alignas(OC_SPSC_ALIGN) uint8_t on;
        uint32_t attached, holds;
    } pend[OC_SHMSEG_MAX_DOWN];
};

typedef struct {
    oc_tr_ep_t *ep;
    uint64_t    token;     /* sender token of this rank's bundles */
    uint32_t    credits;   /* bundles routed, credit not yet returned */
    out_t       out;
    /* collectives by memory (rcma.c) */
    uint32_t    pid;       /* the kernel's word for its control
                              connection; 0: unknown, never by memory */
    int         pidfd;     /* pidfd_open(pid) at admission; -1: none */
    int         cma;       /* 0 untried, 1 works, -1 refused */
    oc_rshm_t  *shm;       /* its shared-memory channel; NULL: UCX */
    oc_eng_buf_t ring_buf; /* out's slot in shm's "down" ring */
    /* this router's producer handles of its down ring (out.eo.ring) and
     * of the completion ring: copies, so that no other thread's writes
     * share their lines (one producer each) */
    oc_spsc_t   down;
    oc_spsc_t   cdown;
    /* router 0 (the job's collectives): its consumer handle of the rank's
     * descriptor ring */
    oc_spsc_t   cup;
    uint8_t     shares_core; /* it may run on a core of this router's
                                (router.c, idle policy) */
} lrank_t;

typedef struct {
    _Atomic uint32_t tag;  /* job id + 1; 0: free slot (for readers) */
    oc_job_map_t    *map;
    lrank_t        **local; /* [size]: NULL unless the rank is on this node */
    out_t           *to_node; /* [nnodes] */
    out_t          **hop;    /* [size]: each rank's next hop (its local
                                outlet, or to_node[the route's next node]);
                                &none: a local rank not here (rcmd.c) */
    out_t            none;   /* the next hop of ranks that have none */
    uint8_t          none_said; /* a drop toward none was logged (route.c) */
    oc_router_job_counters_t c; /* written by the router only */
} rjob_t;

typedef struct {
    uint64_t token;
    int      is_peer;
    uint32_t job, rank, node; /* rank sender: job/rank; peer: node */
} sender_t;

typedef enum {
    CMD_ADD_RANK, CMD_DEL_RANK, CMD_ADD_JOB, CMD_DEL_JOB, CMD_ADD_PEER,
    CMD_DEL_PEER, CMD_EXPECT_PEER, CMD_RUN
} cmd_kind_t;

typedef struct cmd {
    cmd_kind_t    kind;
    uint32_t      job, rank, node, pid;
    uint64_t      token, token2;
    oc_job_map_t *map;
    oc_rshm_t    *shm;      /* CMD_ADD_RANK: a reference, or NULL */
    int           serves;   /* CMD_ADD_RANK: this router reads its up ring */
    void        (*run)(void *arg, uint32_t k); /* CMD_RUN: run(arg, node) */
    void         *arg;
    size_t        addr_len;
    struct cmd   *next;
    uint8_t       addr[];
} cmd_t;

struct oc_router {
    oc_router_params_t p;
    oc_tr_context_t   *tr;
    oc_tr_worker_t    *w;
    pthread_t          tid;
    int                started;
    _Atomic int        stop;
    /* commands */
    pthread_mutex_t    mu;
    int                wake_fd;     /* eventfd: commands, stop */
    cmd_t             *cmd_head, **cmd_tail;
    _Atomic int        cmd_pending;
    /* state private to the thread */
    rjob_t             jobs[OC_ROUTER_MAX_JOBS];
    peer_t            *peers;       /* [nnodes] */
    sender_t          *senders;
    uint32_t           nsenders, senders_cap;
    oc_eng_t          *eng;         /* buffers, outlets, flush policy */
    oc_eng_ring_t      rx;          /* bundles waiting to be routed */
    int                credits_owed; /* some sender is owed credit */
    struct acoll      *colls;       /* collectives in flight (rcoll.c) */
    struct held       *colls_held;  /* descriptors of senders not yet known */
    struct acoll      *colls_free;  /* ended, kept with their job's layout
                                       for the next one (rcoll_net.c) */
    uint32_t           ncolls_free;
    unsigned           inline_said; /* 1 << kind: its first inline
                                       collective was logged */
    size_t             cma_budget;  /* bytes rcma.c may still move this
                                       round of the loop */
    lrank_t          **shm_ranks;   /* local ranks on shared memory: first
                                       the nshm whose up ring this router
                                       reads, then the others it delivers
                                       to (its down ring); router 0 reads
                                       every one's descriptor ring */
    uint32_t           nshm, shm_cap;
    uint32_t           nshm_all;
    uint8_t           *cup_buf;     /* router 0: a descriptor's copy */
    oc_rshm_t        **shm_pend;    /* rings released into or delivered
                                       to this turn, doorbell not yet
                                       rung (each holds a reference) */
    uint32_t           npend, pend_cap;
    int                rank_wake_fd; /* eventfd they write (rshm.c) */
    uint32_t           core_sharers; /* local ranks that may run on this
                                        thread's cores: idle, it yields */
    uint8_t           *pack_out;    /* rpeer.c: a bundle body's room */
    void              *pack_scratch; /* oc__wire_runs_pack's */
    size_t             pack_scratch_len;
    oc_router_counters_t c;
};

#define CNT_ADD(field, v) OC__CTR_ADD(field, v)

/* What became of a bundle: routed (or rejected) and released, or kept for
 * later — held by its sender's blocked next hop or a job not yet known
 * (only that sender waits), or short of buffers (everything waits). */
enum { RX_DONE, RX_HOLD, RX_NOBUF };

/* A job of this router by id, or NULL.  Inline: every room of the
 * router looks jobs up (a short scan of OC_ROUTER_MAX_JOBS slots). */
static inline rjob_t *oc__router_job_find(oc_router_t *r, uint32_t job)
{
    for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
        if (r->jobs[i].map != NULL && r->jobs[i].map->job == job)
            return &r->jobs[i];
    return NULL;
}

/* route.c */
sender_t *oc__router_sender_find(oc_router_t *r, uint64_t token);
uint32_t oc__router_route_all(oc_router_t *r);
void oc__router_bundle_recv(void *arg, uint64_t token, void *data,
                            size_t len);
void oc__router_credit_recv(void *arg, uint64_t token, void *data,
                            size_t len);
void oc__router_send_credits(oc_router_t *r);
oc_status_t oc__router_handoff(void *arg, oc_eng_out_t *o, oc_eng_buf_t *b,
                               uint32_t len, uint32_t count);
void oc__router_blocked(void *arg, oc_eng_out_t *o, int on);
/* router.c: a local rank arrives (@p pid: its process, 0 unknown) or
 * goes; the idle policy yields the core only to ranks that may share it */
void oc__router_rank_cores(oc_router_t *r, lrank_t *l, uint32_t pid);
void oc__router_rank_cores_fini(oc_router_t *r, lrank_t *l);
/** Drop what waits for a peer's credit (the peer went away). */
void oc__router_peer_drop(oc_router_t *r, peer_t *p);

/* rpeer.c: bundles toward a peer agent in runs (wire.h, RUNS) */
/** Room for the pack (router create); OC_ERR_NO_MEMORY. */
oc_status_t oc__router_pack_init(oc_router_t *r);
void oc__router_pack_fini(oc_router_t *r);
/** A message for @p o (toward a peer, mixed) that route_msg's append did
 *  not take: appended, after regrouping the open buffer into runs in
 *  place when it is full (1); or 0, for oc__eng_put to open the next. */
int oc__router_peer_put(oc_router_t *r, out_t *o, uint32_t dst, uint32_t src,
                        const uint8_t *payload, uint32_t len);
/** The finished bundle @p b (@p len bytes, header written) of @p o,
 *  toward a peer: in runs when they are smaller (always when the buffer
 *  was compacted).  Returns its length now. */
uint32_t oc__router_peer_pack(oc_router_t *r, out_t *o, oc_eng_buf_t *b,
                              uint32_t len);

/* rcoll.c: the collectives of the agent placement */
void oc__rcoll_recv(void *arg, uint64_t token, void *data, size_t len);
/** Advance the collectives in flight.  @return non-zero if any is. */
int oc__rcoll_progress(oc_router_t *r);
/** Fail the collectives of @p job (rank @p rank gone, or UINT32_MAX: the
 *  job or a peer node) before the endpoints go: the local ranks still
 *  there are told OC_ERR_COLL_PEER_FAILED. */
void oc__rcoll_abort(oc_router_t *r, uint32_t job, uint32_t rank);
/** Free what is left (the router is going away). */
void oc__rcoll_fini(oc_router_t *r);
/** Job @p job leaves this router: the collective states kept with its
 *  layout go (a later job may reuse the id with another map). */
void oc__rcoll_job_gone(oc_router_t *r, uint32_t job);

/* rcma.c: collective data moved by memory (process_vm_readv/writev) */
/** Admission of a local rank whose control connection the kernel says is
 *  process @p pid (0: unknown). */
void oc__rcma_rank_init(oc_router_t *r, lrank_t *l, uint32_t pid);
void oc__rcma_rank_fini(lrank_t *l);
/* rshm.c: the shared-memory channel of the ranks this router serves */
/** Queue what the ranks published onto the receive ring.  Returns how
 *  many bundles. */
uint32_t oc__router_shm_poll(oc_router_t *r);
/** Router 0: the collective descriptors local ranks put in their "cup"
 *  rings, each copied out and handed to @p deliver (the collectives'
 *  entry, oc__rcoll_recv: the channel does not know them) in order, with
 *  the rank's token, its slot released at once.  @return descriptors
 *  taken. */
uint32_t oc__router_cup_poll(oc_router_t *r, oc_tr_recv_cb_t deliver);
/** A received bundle is done: its slot goes back (in order); a rank
 *  asleep on its doorbell is woken at the next oc__router_shm_flush. */
void oc__router_shm_release(oc_router_t *r, oc_eng_rx_t *e);
/** End of a turn: the ranks released into or delivered to this turn that
 *  wait on their doorbell are woken (one fence for all).  Before the
 *  router sleeps or goes away. */
void oc__router_shm_flush(oc_router_t *r);
/** Make a just-registered rank's outlet write into its ring. */
/** A collective's DONE (wire/colld.h) to local rank @p l: with @p ring,
 *  through its segment's completion ring (the rank woken at the next
 *  oc__router_shm_flush if it sleeps), else (no @p ring, no segment, ring
 *  full, too long, or another router writes it) by UCX.  @p ring only
 *  when no tagged message of the collective goes to the rank: a DONE by
 *  UCX comes after them on the same endpoint, and the rank may reuse its
 *  buffers once it has DONE.  Counted either way. */
void oc__router_coll_done(oc_router_t *r, lrank_t *l, const void *msg,
                          size_t len, int ring);
/** @p serves: read its up ring too (else deliver only).  OC_ERR_NO_MEMORY;
 *  OC_ERR_INVALID_PARAM: the segment has no down ring for this router. */
oc_status_t oc__router_shm_attach(oc_router_t *r, lrank_t *l, oc_rshm_t *shm,
                                  int serves);
void oc__router_shm_detach(oc_router_t *r, lrank_t *l);
/** Hand bundle @p b (@p len bytes) to a local rank on shared memory: the
 *  ring's own slot is published, a pool buffer copied into the next
 *  slot (the caller checked room: oc__router_shm_full); a rank waiting
 *  is woken at the next oc__router_shm_flush. */
void oc__router_shm_deliver(oc_router_t *r, out_t *o, oc_eng_buf_t *b,
                            uint32_t len);
/** No room for another bundle toward @p o's rank (its ring is full). */
int oc__router_shm_full(oc_router_t *r, out_t *o);
/** Before sleeping: tell the ranks, then look once more.  Returns 0 when
 *  something arrived meanwhile (do not sleep). */
int oc__router_shm_sleep_begin(oc_router_t *r);
void oc__router_shm_sleep_end(oc_router_t *r);

/* rpost.c: the command queue (any thread) */
/** Queue @p c (from oc__router_cmd_new) for @p r and wake it; @p r frees
 *  it once applied.  Returns OC_OK. */
oc_status_t oc__router_post(oc_router_t *r, cmd_t *c);
/** A zeroed command of @p kind carrying @p len bytes of @p addr; NULL. */
cmd_t *oc__router_cmd_new(cmd_kind_t kind, const void *addr, size_t len);
void oc__router_wake(oc_router_t *r);
/** Have router @p r call @p run(@p arg, @p k) on its thread, in order
 *  with its other commands (a slice of a split allreduce: rcsplit.c).
 *  @p arg must stay valid until @p run has said it is done.  Thread-safe;
 *  OC_ERR_NO_MEMORY (then nothing runs). */
oc_status_t oc__router_post_run(oc_router_t *r, void (*run)(void *, uint32_t),
                                void *arg, uint32_t k);
/* rcmd.c */
void oc__router_apply_commands(oc_router_t *r);
void oc__router_job_free(oc_router_t *r, rjob_t *j);

#endif
