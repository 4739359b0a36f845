/*
 * rkernel_fake.h — a routing thread of offcored with no UCX under it, for
 * the router's unit tests (test_rkernel.c, test_rcmd.c): the router's own
 * files (router.c, route.c, rcmd.c, rshm.c, hop.c, cores.c, rpeer.c) linked
 * against the in-test transport of rkernel_fake.c, which records every
 * bundle and credit the router sends and every receive it releases, and
 * can keep sends in flight (back-pressure) until the test completes them.
 * The collectives (rcoll.c, rcma.c) are stubs: the commands' calls into
 * them are recorded, nothing more.
 *
 * The fixture: one router (node 0 of 2), job RK_JOB of RK_RANKS ranks,
 * ranks 0..3 on node 0 (registered here, tokens rk_tok(rank)) and 4..7
 * on node 1 (the peer, tokens RK_PEER_SEND / RK_PEER_RECV).  Single
 * thread: the test plays the router's loop (rk_turn).
 */
#ifndef RKERNEL_FAKE_H
#define RKERNEL_FAKE_H

#include "agent/router/router_int.h"

#define RK_JOB        7u
#define RK_RANKS      8u
#define RK_LOCAL      4u     /* ranks 0..3 here, 4..7 on node 1 */
#define RK_BUNDLE     256u   /* the router's bundle size */
#define RK_INFLIGHT   2u     /* max_inflight per next hop */
#define RK_PEER_SEND  0x900u
#define RK_PEER_RECV  0x901u
#define RK_MAX_RECS   8192
#define RK_MAX_OPS    256

static inline uint64_t rk_tok(uint32_t rank) { return 0x100u + rank; }

/* One message the router sent on, as the receiver decodes it. */
typedef struct {
    uint8_t  peer;   /* sent to the peer node (else to local rank ep_id) */
    uint32_t ep_id;  /* rank, or node */
    uint32_t bundle; /* which bundle of the run (0, 1, ...) */
    uint32_t dst, src, len;
    uint64_t v;      /* the payload's first 8 bytes */
} rk_rec_t;

typedef struct {
    /* what the router sent */
    rk_rec_t     recs[RK_MAX_RECS];
    uint32_t     nrecs, nbundles;
    uint32_t     bundles_to_rank[RK_RANKS], bundles_to_peer;
    uint32_t     fixed_bundles;    /* of those: FIXED (no message headers) */
    uint32_t     runs_bundles;     /* of those: RUNS (a peer's, rpeer.c) */
    uint32_t     srccol_bundles;   /* of those: SRCCOL (a rank's) */
    uint32_t     credits_to_rank[RK_RANKS], credits_to_peer;
    /* sends kept in flight (async): completed by rk_complete */
    int          async;
    oc_tr_op_t  *ops[RK_MAX_OPS];
    uint32_t     nops;
    /* the peer returns credit for what it got at every rk_turn (a peer
     * that keeps up), unless the test says otherwise */
    int          peer_withholds;
    uint32_t     peer_credited;
    /* receives */
    uint32_t     fed, released;
    /* credit messages refused by the transport (it is out of room) */
    int          fail_small;
    /* endpoints */
    int          fail_ep_create;
    uint32_t     eps_live;
    /* checks that failed inside the router's calls (rkernel_fake.c) */
    uint32_t     bad;
    /* collective stubs */
    uint32_t     coll_aborts, abort_job, abort_rank;
} rk_log_t;

extern rk_log_t rk;

typedef struct {
    oc_router_t *r;
} rk_fix_t;

/* The router, its job and its peer, commands applied; rk zeroed. */
rk_fix_t *rk_setup(void);
void rk_teardown(rk_fix_t *f);
/* An endpoint address the fake transport understands. */
void rk_addr(uint32_t kind, uint32_t id, uint8_t out[8]);
/* Hand the router a bundle as UCX would (a private copy, released by the
 * router through oc__tr_release). */
void rk_feed(rk_fix_t *f, uint64_t token, const void *data, size_t len);
/* One turn of the router's loop: commands, route, credits (the peer's
 * too, unless rk.peer_withholds).  With @p flush, everything buffered
 * goes out (EXPLICIT).  Returns the bundles finished. */
uint32_t rk_turn(rk_fix_t *f, int flush);
/* Complete every send in flight (OC_OK). */
void rk_complete(void);

/* Byte @p i (>= 8) of the payload whose first 8 bytes are @p v. */
static inline uint8_t rk_tail(uint64_t v, uint32_t i)
{
    return (uint8_t)(v * 7 + i);
}

/* Bundle builders (malloc'd; the caller frees).  Payload of message k:
 * its 8-byte value vals[k], then (len > 8) bytes rk_tail(vals[k], i). */
uint8_t *rk_row(uint32_t src, uint32_t n, const uint32_t *dst,
                const uint64_t *vals, uint32_t len, size_t *len_out);
uint8_t *rk_col(uint32_t src, uint32_t n, const uint32_t *dst,
                const uint64_t *vals, uint32_t len, size_t *len_out);
uint8_t *rk_fixed(uint32_t src, uint32_t dst, uint32_t n,
                  const uint64_t *vals, uint32_t len, size_t *len_out);
/* A mixed bundle (a peer's): message k from src[k] to dst[k], 8 bytes. */
uint8_t *rk_mixed(uint32_t job, uint32_t n, const uint32_t *src,
                  const uint32_t *dst, const uint64_t *vals, size_t *len_out);

/* A value naming its message: (src, sequence number). */
static inline uint64_t rk_val(uint32_t src, uint32_t seq)
{
    return (uint64_t)src << 32 | seq;
}

#endif
