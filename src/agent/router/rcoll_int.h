/*
 * rcoll_int.h — the state of one collective of the agent placement,
 * shared by rcoll.c (the algorithms) and rcma.c (moving a local rank's
 * data by memory).  Router thread only.
 */
#ifndef OC_AGENT_RCOLL_INT_H
#define OC_AGENT_RCOLL_INT_H

#include "router_int.h"

/* ST_DRAIN: failed, the ranks' posted receives being filled before DONE */
/* ST_SPLIT: read, reduced and written by slices on every router (rcsplit.c) */
enum { ST_GATHER, ST_GET, ST_SPLIT, ST_NET, ST_PUT, ST_WRITE, ST_DRAIN, ST_END };
enum { STEP_CHAIN = 1, STEP_RESULT = 2, STEP_A2A = 3, STEP_BCAST = 4 };

/* A data buffer kept with a collective state (oc__rc_buf). */
typedef struct {
    uint8_t *p;
    size_t   cap;
} rcbuf_t;

/* The state's buffers, c->bufs[]: these, then per rank (RB_RANK) and per
 * node (RB_NODE) */
enum { RB_RES, RB_ACC, RB_NET, RB_SRCS, RB_ZERO, RB_A2A_SRC, RB_A2A_META,
       RB_FIXED };
#define RB_RANK(c, i, k) (&(c)->bufs[RB_FIXED + 3 * (size_t)(i) + (k)]) /* v in out */
#define RB_NODE(c, q, k) (&(c)->bufs[RB_FIXED + 3 * (size_t)(c)->size + \
                                     2 * (size_t)(q) + (k)]) /* out in */

typedef struct {
    int           have;
    uint8_t       kind;       /* what its own descriptor says */
    uint32_t      root;
    uint64_t     *v;          /* alltoallv: 4 * size */
    size_t        slen, rlen; /* bytes registered */
    uint8_t      *in;         /* its contribution, read here */
    oc_status_t   st;         /* its own outcome (a mismatch it receives) */
    int           inl;        /* OC_COLLD_F_INLINE: in came with the
                                 descriptor, the result goes in DONE */
    uint8_t      *out;        /* ... all-to-allv: its blocks, packed in
                                 source order, olen bytes */
    size_t        olen;
    /* by memory (rcma.c): its buffers, read and written here */
    int           cma;
    uint64_t      saddr, raddr;
    size_t        moved;      /* bytes of the current read or write done */
    int           self;       /* OC_COLLD_F_SELF: it copies its own block */
    size_t        hole_off, hole_len; /* ... so its send buffer's bytes
                                         there are not read (0: none) */
    oc_status_t   cma_st;     /* what failed it (OC_ERR_COLL_MEMORY...) */
} rrank_t;

typedef struct acoll {
    struct acoll *next;
    uint32_t      job, seq, size;
    uint8_t       kind, dtype, op; /* from the first rank's descriptor */
    int           kset;         /* ... once one was decoded */
    uint64_t      count;
    uint32_t      root;
    size_t        es;
    uint32_t      nlocal, ndesc, first, last; /* local ranks [first, last] */
    uint32_t      nnodes, pos;  /* nodes of the job; this one's place */
    uint32_t     *nodes;        /* [nnodes] in rank order */
    rrank_t      *r;            /* [size] */
    int           state;
    uint32_t      pending;      /* operations in flight */
    oc_status_t   status;
    int           dead;         /* failed: finish once pending is 0 */
    int           step;         /* within ST_NET */
    uint8_t      *acc;          /* what goes down the chain */
    uint8_t      *res;          /* the result (allreduce, bcast) */
    uint8_t      *net;          /* what came from the previous node */
    uint8_t     **a2a_out, **a2a_in; /* [nnodes] */
    size_t       *a2a_olen, *a2a_ilen;
    const uint8_t **a2a_src;    /* [(d - first) * size + s]: where block s -> d
                                   is, for a local rank d by memory (NULL:
                                   none, or its lengths disagree) */
    uint32_t     *node_first;   /* [nnodes + 1] ranks of each node in order */
    uint8_t      *zero;         /* drain(): zeros for the ranks' receives */
    struct rsplit *split;       /* split across the routers (rcsplit.c) */
    int           split_wait;   /* ... a phase's slices are running (one
                                   in c->pending) */
    rcbuf_t      *bufs;         /* [nbufs]: where every pointer above to
                                   data points; kept with the state */
    size_t        nbufs, buf_bytes; /* ... and their capacity in all */
} acoll_t;

/* rcma.c: process_vm_readv here (2 cores, loaded): 1.1-1.5 GB/s in 4 KiB
 * calls, 3-3.6 at 64-256 KiB, 4-5.5 at 1 MiB (a two-process
 * microbenchmark, 200 reads of 1 MiB).  512 KiB calls are near the
 * plateau; a round's 2 MiB (~0.5 ms) keeps the loop turning while a 64 MiB
 * collective moves. */
#define OC_RCMA_CHUNK ((size_t)512 << 10)
#define OC_RCMA_ROUND ((size_t)2 << 20)
/** Copy @p len bytes between @p local and @p remote in process @p pid
 *  (pinned by @p pidfd, checked alive first).  Any thread.
 *  @return 0, or -1 with errno (ESRCH: gone, EFAULT: not mapped...). */
int oc__rcma_copy(uint32_t pid, int pidfd, int write, void *local,
                  uint64_t remote, size_t len);
/** The rank offered its buffers (flag OC_COLLD_F_CMA): 1 if the agent
 *  moves its data by memory, 0 if it must be told OC_COLLD_FALLBACK. */
int oc__rcma_accept(oc_router_t *r, lrank_t *l, uint32_t job, uint32_t rank,
                    uint32_t pid);
/** Move what the budget of this round allows of every local rank's
 *  contribution (@p write 0) or result (1, from c->res).  A failure fails
 *  the collective (c->status) and names it for that rank (cma_st).
 *  @return 1 when every by-memory rank's transfer is complete. */
int oc__rcma_step(oc_router_t *r, acoll_t *c, int write);
/** All-to-all(v): write what the budget allows of every by-memory local
 *  rank's blocks (c->a2a_src) into its receive buffer, many blocks per
 *  system call.  Failures as oc__rcma_step().
 *  @return 1 when every by-memory rank's blocks are written. */
int oc__rcma_a2a_step(oc_router_t *r, acoll_t *c);
/** A new round of the router's loop: a new budget. */
void oc__rcma_round(oc_router_t *r);
/** Local rank @p me's all-to-allv descriptor said OC_COLLD_F_SELF and its
 *  blocks go by memory (rr->self set, rr->v its counts): keep the flag
 *  where its own block's counts agree (else the agent moves it, and a
 *  mismatch is found as before) and skip reading those bytes where no
 *  other block shares them. */
void oc__rcma_self(const acoll_t *c, rrank_t *rr, uint32_t me);

/* rcsplit.c (router 0) */
/** @p c is of the kind and size that is split when every local rank's
 *  data go by memory: its contributions are not read ahead in ST_GATHER. */
int oc__rcsplit_may(const oc_router_t *r, const acoll_t *c);
/** Split @p c (an allreduce by memory, every rank's descriptor in) across
 *  the routers when it qualifies: 1 (c->split, c->split_wait, state
 *  ST_SPLIT), else 0 and nothing changed. */
int oc__rcsplit_start(oc_router_t *r, acoll_t *c);
/** Every slice of the running phase done: the read phase's failures fail
 *  @p c, else the write phase starts (0).  @return 1 when no slice runs
 *  any more (the caller drops c->split_wait and its pending). */
int oc__rcsplit_poll(oc_router_t *r, acoll_t *c);
void oc__rcsplit_free(struct rsplit *s);

/* rcbuf.c: the data buffers kept with a state */
/** The most bytes of data buffers an ended state keeps (oc__rc_acoll_put
 *  frees them all above it).  1 MiB holds a 64 KiB allreduce of up to 12
 *  local ranks (their contributions, the result, the chain's two) and a
 *  small all-to-all's blocks; a 4 MiB all-to-all's are not pinned by a
 *  kept state (16 per routing thread: 16 MiB at most). */
#define OC__RC_BUF_KEEP ((size_t)1 << 20)
/** At least @p len bytes of @p b (one more: a 0-byte datum has an
 *  address), kept from an earlier collective of @p c's state (counted in
 *  coll_buf_kept) or allocated (coll_buf_new); contents undefined.
 *  Valid until the next call on @p b or oc__rc_bufs_trim().
 *  @return the buffer, or NULL (out of memory; @p b empty). */
void *oc__rc_buf(oc_router_t *r, acoll_t *c, rcbuf_t *b, size_t len);
/** Allocate @p c's buffer slots (its layout known).  @return 0 or -1. */
int oc__rc_bufs_init(acoll_t *c);
/** Free @p c's buffers when they hold more than @p keep bytes. */
void oc__rc_bufs_trim(acoll_t *c, size_t keep);

/* rcoll_net.c: the transfers and the end of a collective */
/** Issue one tagged transfer of @p c: @p kind 3 send on @p ep, 4 receive;
 *  counted in c->pending until it completes; a failure fails @p c. */
void oc__rc_issue(oc_router_t *r, acoll_t *c, int kind, oc_tr_ep_t *ep,
                  void *buf, size_t len, uint64_t tag);
/** Receive step @p step's message from the job's node @p k (position in
 *  c->nodes) into @p buf: the data, or that node's failure message. */
void oc__rc_net_recv(oc_router_t *r, acoll_t *c, uint32_t k, int step,
                     uint8_t *buf, size_t want);
/** Send step @p step's message to node @p k: the data, or, when @p c has
 *  failed, a failure message with its status in the data's place. */
void oc__rc_net_send(oc_router_t *r, acoll_t *c, uint32_t k, int step,
                     const void *buf, size_t len);
void oc__rc_acoll_free(acoll_t *c);
/** @p c has ended: its data go, the state with its rank array and its
 *  job's layout is kept for the job's next collective (acoll_get). */
void oc__rc_acoll_put(oc_router_t *r, acoll_t *c);
/** The most ended collective states a router keeps. */
#define OC__RC_KEEP 16
/** The router's state of local rank @p rank of @p c's job, or NULL. */
lrank_t *oc__rc_local_of(oc_router_t *r, acoll_t *c, uint32_t rank);
/** DONE with @p st to local rank @p rank (with the result, when it sent
 *  its contribution inline and @p st is OC_OK). */
void oc__rc_tell(oc_router_t *r, acoll_t *c, uint32_t rank, oc_status_t st);
/** A failed collective: zeros into every receive its local ranks posted. */
void oc__rc_drain(oc_router_t *r, acoll_t *c);
/** DONE to every local rank, each with its own outcome. */
void oc__rc_tell_all(oc_router_t *r, acoll_t *c);
/** End @p c: drain first when it failed (ST_DRAIN until the zeros are
 *  sent), then DONE to every local rank. */
void oc__rc_finish(oc_router_t *r, acoll_t *c);

#endif
