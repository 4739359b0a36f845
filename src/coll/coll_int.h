/*
 * coll_int.h — private state of the collectives (src/coll): requests,
 * their schedules of phases, and the reduction kernels.
 *
 * A collective is compiled at start into a schedule: an array of phases,
 * each with at most one send to one peer and at most one receive from one
 * peer, and an optional step to run once both are complete (a reduction, a
 * copy).  Every algorithm here fits that shape (recursive doubling,
 * pairwise exchange, binomial tree, dissemination), which lets a message
 * be named by (collective sequence number, phase, chunk index) alone: the
 * 64-bit header the transport carries.  The collectives sit on the
 * runtime as its extension (runtime/ext.h): they see a context only
 * through it.  Threading: a context's thread only.
 */
#ifndef OC_COLL_INT_H
#define OC_COLL_INT_H

#include "runtime/ext.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/reject.h"

#include <offcore/coll.h>
#include <stddef.h>
#include <stdint.h>

/* Tag of a collective chunk (UCX tag matching): sequence
 * number (20 bits, never 0), phase (20 bits), chunk index (24 bits). */
#define OC__COLL_SEQ_BITS   20
#define OC__COLL_PHASE_BITS 20
#define OC__COLL_CHUNK_BITS 24
#define OC__COLL_TOKEN(seq, ph, ck)                                           \
    (((uint64_t)(seq) << 44) | ((uint64_t)(ph) << 24) | (uint64_t)(ck))

typedef struct oc__coll oc__coll_t;

typedef enum {
    OC__AFTER_NONE = 0,
    OC__AFTER_REDUCE_LO_FIRST, /* rbuf = tmp op rbuf (peer below) */
    OC__AFTER_REDUCE_HI_FIRST, /* rbuf = rbuf op tmp (peer above) */
    OC__AFTER_REDUCE_ORDERED,  /* my block = tmp[0] op tmp[1] ... */
} oc__after_t;

typedef struct {
    uint32_t       speer, rpeer;   /* UINT32_MAX: no send / no receive */
    const uint8_t *sbuf;
    size_t         slen;
    uint8_t       *rbuf;
    size_t         rlen;
    uint8_t        after;          /* oc__after_t */
} oc__phase_t;

struct oc_request {
    oc_context_t  *ctx;
    oc_request_t  *next;           /* active or zombie list */
    uint32_t       seq;
    uint32_t       nphases, cur;
    oc__phase_t   *ph;
    uint32_t       ph_cap;         /* phases ph has room for */
    oc_status_t    status;         /* OC_INPROGRESS, OC_OK or the error */
    oc_status_t    mismatch;       /* OC_ERR_COLL_MISMATCH seen, reported
                                    * once the schedule has run out */
    uint32_t       inflight;       /* chunk sends not yet completed */
    int            started;        /* current phase's sends begun */
    size_t         s_posted, s_done;   /* chunks of the current send */
    size_t         r_posted, r_done;   /* chunks of the current receive */
    /* reduction */
    int            dtype, op;
    size_t         esize;
    uint8_t       *rbuf;           /* the result vector */
    uint8_t       *tmp;            /* scratch, freed with the request */
    size_t         blk_off, blk_count; /* this rank's block (ordered) */
    size_t         blk_stride;     /* bytes between contributions in tmp */
    const uint8_t *own;            /* this rank's own contribution to it */
    /* agent placement (placed.c): the agent runs it; no phases here */
    int            placed;
    oc_status_t    agent_st;       /* the agent's DONE; OC_INPROGRESS before */
    uint64_t       settle_us;      /* waiting before failing until then
                                      (coll.c, settling()); 0: not */
    /* shared-memory path (shm.c): OC__SHM_ALLREDUCE or _ALLTOALL, else 0;
     * own is the input, blk_count the count (per peer for all-to-all) */
    uint8_t        shm;
    uint8_t        shm_written;    /* this rank's slot is filled */
    uint64_t       shm_seq;
    /* ... by memory (the agent reads sbuf and writes rbuf itself) */
    int            cma;            /* offered: no payload, no receive here */
    int            cma_fallback;   /* the agent said: by UCX after all */
    const void    *cma_sbuf;
    void          *cma_rbuf;
    size_t         cma_len;
    size_t         cma_es;         /* bytes per element */
    uint64_t      *cma_v;          /* all-to-allv: its 4 x size counts and
                                      displacements, for a fallback */
    /* ... inline (small allreduce): the contribution went in the
     * descriptor, the result comes in DONE, into inl_rbuf */
    int            inl;
    void          *inl_rbuf;
    size_t         inl_len;
    /* device buffers (staged.c): the chunks' state; NULL for host ones */
    struct oc__staged *staged;
};

enum { OC__SHM_ALLREDUCE = 1, OC__SHM_ALLTOALL = 2 };

typedef struct {
    int      reproducible;  /* OC_COLL_REPRODUCIBLE */
    uint64_t small;         /* OC_COLL_SMALL */
    uint64_t chunk;         /* OC_COLL_CHUNK */
    uint64_t window;        /* OC_COLL_WINDOW */
    uint64_t shm_max;       /* OC_COLL_SHM_MAX */
    int      cma;           /* OC_COLL_CMA */
    uint64_t agent_inline;  /* OC_COLL_AGENT_INLINE: bytes */
    int      fault;         /* OC_COLL_FAULT: 0 none, 1 desc, 2 short */
    uint64_t fault_at;      /* OC_COLL_FAULT_AT: sequence number */
} oc__coll_config_t;

typedef struct oc__coll_shm oc__coll_shm_t;

struct oc__coll {
    oc_context_t     *ctx;
    oc__coll_config_t cfg;
    uint32_t          next_seq;
    oc_request_t     *active, *zombies;
    struct coll_op   *ops;           /* chunk operations in flight (coll.c) */
    const void      **ordered_srcs;  /* [size] scratch of the ordered reduction */
    int               done_handler;  /* placed.c: OC_AM_COLL_DONE handler set */
    oc__coll_shm_t   *shm;           /* shm.c: NULL when not every rank has it */
    int               cores_each;    /* shm.c: all ranks on this host, no
                                      * more of them than the CPUs they
                                      * may run on, together */
    int               cma_refused;   /* placed.c: the agent fell back once */
    uint64_t          cma_ops, cma_fallbacks; /* placed.c: counted */
    struct placed_op *placed_ops;    /* placed.c: transfers in flight */
    int               hooked;        /* the progress hook is set */
    /* coll.c: ended requests kept with their phase arrays (up to
     * OC__COLL_REQ_KEEP), taken by the next collectives; closing: the
     * context ends, nothing more is kept */
    oc_request_t     *req_kept;
    uint32_t          nreq_kept;
    int               closing;
    /* staged.c: device buffers staged through one pinned pool, used by
     * one collective at a time, in the order they were started */
    struct oc__gpu_pool *gpu_pool;
    uint64_t          gpu_ticket, gpu_serving;
    int               gpu_on;        /* OC_GPU */
    uint64_t          gpu_chunk, gpu_slots;
};

/* coll.c: the collectives as the runtime's extension */
extern const oc_ext_t oc__coll_ext;

/** The collectives' state of @p ctx (NULL before oc_init made it). */
static inline oc__coll_t *oc__coll_of(const oc_context_t *ctx)
{
    return (oc__coll_t *)oc__ext_state(ctx, &oc__coll_ext);
}

/* coll.c: the phase engine */
oc_status_t oc__coll_start(oc_context_t *ctx, oc_request_t *req);
oc_request_t *oc__coll_req_new(oc_context_t *ctx, uint32_t nphases);
void oc__coll_req_free(oc_request_t *req);
oc_status_t oc__coll_check_ctx(oc_context_t *ctx);
/** Put @p req on the active list (and set the progress hook, the first
 *  time). */
void oc__coll_link(oc__coll_t *c, oc_request_t *req);

/** Take @p n consecutive sequence numbers (the first returned): a
 *  collective on device buffers starts its chunks' collectives later,
 *  as their data arrives, with numbers taken in call order. */
uint32_t oc__coll_seq_take(oc__coll_t *c, uint32_t n);
/** The @p k-th of the numbers from @p base. */
uint32_t oc__coll_seq_nth(uint32_t base, uint32_t k);
/** oc__coll_start() with a number from oc__coll_seq_take(). */
void oc__coll_start_seq(oc_context_t *ctx, oc_request_t *req, uint32_t seq);
/** Take a finished (not OC_INPROGRESS) internal request off the active
 *  list and free it (or keep it until its sends complete). */
void oc__coll_retire(oc_request_t *req);
/** Has @p req ended (nothing more to wait for: oc_test() would return its
 *  status without progressing)? */
int oc__coll_req_done(oc_request_t *req);

/* algos.c: schedules without starting them (staged.c starts them).
 * @p rd: recursive doubling (else reduce-scatter + all-gather, in rank
 * order).  NULL: no memory. */
oc_request_t *oc__coll_allreduce_build(oc_context_t *ctx, const void *sbuf,
                                       void *rbuf, size_t count, int dtype,
                                       int op, int rd);
/** Would the host path reduce @p bytes by recursive doubling? */
int oc__coll_allreduce_rd(const oc_context_t *ctx, size_t bytes, size_t es);
oc_request_t *oc__coll_alltoall_build(oc_context_t *ctx, const void *sbuf,
                                      void *rbuf, size_t count, size_t es);
oc_request_t *oc__coll_bcast_build(oc_context_t *ctx, void *buf,
                                   size_t bytes, uint32_t root);

/* staged.c: collectives on device buffers (src/gpu), inline placement */
enum { OC__STAGED_ALLREDUCE = 1, OC__STAGED_ALLTOALL, OC__STAGED_BCAST,
       OC__STAGED_ALLTOALLV };
/**
 * If a buffer of the collective is device memory (or the driver cannot
 * say), start it staged and return 1 with *@p st its start status;
 * else return 0 (the host path runs it).  @p sbuf: the input (not
 * OC_IN_PLACE), @p rbuf the output (bcast: both the buffer); @p count:
 * elements (per peer for all-to-all).
 */
int oc__coll_staged_try(oc_context_t *ctx, int kind, const void *sbuf,
                        void *rbuf, size_t count, int dtype, int op,
                        uint32_t root, oc_request_t **req_p, oc_status_t *st);
/** The same for all-to-allv (staged whole: see staged.c); @p slim and
 *  @p rlim: the extents of the buffers, in elements. */
int oc__coll_staged_alltoallv(oc_context_t *ctx, const void *sbuf,
                              const size_t *sc, const size_t *sd, void *rbuf,
                              const size_t *rc, const size_t *rd, int dtype,
                              size_t slim, size_t rlim, oc_request_t **req_p,
                              oc_status_t *st);
void oc__coll_staged_advance(oc_request_t *req);
/** Load OC_GPU* into @p c (coll_init).  OC_ERR_CONFIG (logged). */
oc_status_t oc__coll_staged_init(oc__coll_t *c);
void oc__coll_staged_free(struct oc__staged *s);
void oc__coll_staged_fini(oc__coll_t *c);

/* placed.c: the agent placement.  @p vals: 4 * size values for
 * all-to-allv (d->nv = size), else NULL. */
oc_status_t oc__coll_placed_start(oc_context_t *ctx, void *d, const uint64_t *vals,
                                  const void *sbuf, size_t slen, void *rbuf,
                                  size_t rlen, oc_request_t **req_p);
int oc__coll_placed(const oc_context_t *ctx);
/** Complete @p req once the agent said DONE and its transfers are over. */
void oc__coll_placed_check(oc_request_t *req);
/** Free the transfers still in flight (the worker is gone: no callback
 *  can run any more). */
void oc__coll_placed_fini(oc__coll_t *c);

/* shm.c: small collectives among the ranks of one host (every rank of
 * the job) through a shared segment.  Set up by the wired hook
 * (runtime/ext.h; collective: every rank calls it). */
oc_status_t oc__coll_shm_setup(oc_context_t *ctx, void *state);
/* Does a contribution of @p bytes
 * (all-to-all: the whole send buffer) take that path?  The same answer on
 * every rank for the same collective. */
int oc__coll_shm_fits(const oc_context_t *ctx, size_t bytes);
/** @p kind OC__SHM_*; @p count per peer for all-to-all.  OC_OK or
 *  OC_ERR_NO_MEMORY. */
oc_status_t oc__coll_shm_start(oc_context_t *ctx, int kind,
                               const void *sbuf, void *rbuf, size_t count,
                               int dtype, int op, oc_request_t **req_p);
void oc__coll_shm_advance(oc_request_t *req);
void oc__coll_shm_fini(oc__coll_t *c);

#include "coll/reduce.h" /* the reduction kernels, reduce.c */

#endif
