/*
 * algos.c — the collectives' public entry points: argument checks, then
 * the schedule (coll_int.h) of each algorithm, handed to the phase engine
 * (coll.c).
 *
 * Allreduce: recursive doubling (with the non-power-of-two ranks folded
 * onto their neighbour first and given the result last) for vectors up to
 * OC_COLL_SMALL bytes; above, and always in the reproducible mode or for
 * 16-bit floats, a reduce-scatter by pairwise exchange in which each rank
 * gathers every rank's copy of its block and reduces it in rank order,
 * then an all-gather by pairwise exchange.  All-to-all(v): pairwise
 * exchange (step k: send to rank+k, receive from rank-k).  Broadcast:
 * binomial tree.  Barrier: dissemination.  Threading: the context's
 * thread only.
 */
#include "coll_int.h"

#include "wire/colld.h"

#include <stdlib.h>
#include <string.h>

OC_API size_t oc_dtype_size(oc_dtype_t dtype)
{
    return oc__dtype_size((int)dtype);
}

OC_API int oc_dtype_count(void) { return OC__DTYPE_COUNT; }

OC_API int oc_op_count(void) { return OC__OP_COUNT; }

OC_API int oc_coll_served(const oc_context_t *ctx, oc_coll_kind_t kind)
{
    static const uint8_t colld[] = {
        [OC_COLL_ALLREDUCE] = OC_COLLD_ALLREDUCE,
        [OC_COLL_ALLTOALL] = OC_COLLD_ALLTOALLV,
        [OC_COLL_BCAST] = OC_COLLD_BCAST,
        [OC_COLL_BARRIER] = OC_COLLD_BARRIER};

    if (ctx == NULL || kind < OC_COLL_ALLREDUCE || kind > OC_COLL_BARRIER ||
        oc__coll_of(ctx) == NULL)
        return 0;
    if (oc__coll_placed(ctx))
        return oc__ext_agent_coll_serves(ctx, colld[kind]);
    return oc__ext_has_peers(ctx);
}

static int is_float(oc_dtype_t d)
{
    return d == OC_FLOAT32 || d == OC_FLOAT64 || d == OC_BFLOAT16 ||
           d == OC_FLOAT16;
}

static oc_status_t check_common(oc_context_t *ctx, oc_dtype_t dtype,
                                oc_request_t **req_p)
{
    if (req_p == NULL)
        return OC_ERR_COLL_REQUEST;
    if (oc__dtype_size((int)dtype) == 0)
        return OC_ERR_COLL_DTYPE;
    return oc__coll_check_ctx(ctx);
}

/* The buffers of a collective moving @p bytes (> 0) into @p recvbuf:
 * both given, the receive buffer not OC_IN_PLACE, and the send buffer
 * (unless OC_IN_PLACE) not overlapping it. */
static oc_status_t check_buffers(const void *sendbuf, void *recvbuf,
                                 size_t bytes)
{
    if (sendbuf == NULL || recvbuf == NULL || recvbuf == (void *)OC_IN_PLACE)
        return OC_ERR_COLL_BUFFER;
    if (sendbuf != OC_IN_PLACE &&
        (const uint8_t *)sendbuf < (uint8_t *)recvbuf + bytes &&
        (uint8_t *)recvbuf < (const uint8_t *)sendbuf + bytes)
        return OC_ERR_COLL_BUFFER;
    return OC_OK;
}

static uint32_t mod(int64_t a, uint32_t n)
{
    return (uint32_t)(((a % n) + n) % n);
}

/* Block b of count elements split over n ranks. */
static void block(size_t count, uint32_t n, uint32_t b, size_t *off,
                  size_t *len)
{
    size_t q = count / n, r = count % n;
    *off = b * q + (b < r ? b : r);
    *len = q + (b < r ? 1 : 0);
}

static oc_request_t *allreduce_rd(oc_context_t *ctx, uint8_t *rbuf,
                                  size_t bytes)
{
    const uint32_t n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
    uint32_t p = 1, L = 0, rem;
    int64_t nr;
    oc_request_t *req;

    while (p * 2 <= n) {
        p *= 2;
        L++;
    }
    rem = n - p;
    req = oc__coll_req_new(ctx, L + 2);
    if (req == NULL)
        return NULL;
    req->tmp = malloc(bytes ? bytes : 1);
    if (req->tmp == NULL) {
        oc__coll_req_free(req);
        return NULL;
    }
    if (me < 2 * rem) {
        oc__phase_t *f = &req->ph[0], *u = &req->ph[L + 1];
        if (me % 2 == 0) { /* folded: hand over, get the result last */
            f->speer = me + 1, f->sbuf = rbuf, f->slen = bytes;
            u->rpeer = me + 1, u->rbuf = rbuf, u->rlen = bytes;
            return req;
        }
        f->rpeer = me - 1, f->rbuf = req->tmp, f->rlen = bytes;
        f->after = OC__AFTER_REDUCE_LO_FIRST;
        u->speer = me - 1, u->sbuf = rbuf, u->slen = bytes;
        nr = me / 2;
    } else {
        nr = me - rem;
    }
    for (uint32_t j = 0; j < L; j++) {
        oc__phase_t *ph = &req->ph[1 + j];
        uint32_t pn = (uint32_t)nr ^ (1u << j);
        uint32_t peer = pn < rem ? pn * 2 + 1 : pn + rem;
        ph->speer = peer, ph->sbuf = rbuf, ph->slen = bytes;
        ph->rpeer = peer, ph->rbuf = req->tmp, ph->rlen = bytes;
        ph->after = peer < me ? OC__AFTER_REDUCE_LO_FIRST
                              : OC__AFTER_REDUCE_HI_FIRST;
    }
    return req;
}

/* The input is read from @p sbuf (the result buffer when in place): no
 * copy of the vector before the reduce-scatter, and this rank's own block
 * is reduced from where it lies. */
static oc_request_t *allreduce_rsag(oc_context_t *ctx, const uint8_t *sbuf,
                                    uint8_t *rbuf, size_t count, size_t es)
{
    const uint32_t n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
    size_t moff, mlen;
    oc_request_t *req = oc__coll_req_new(ctx, 2 * (n - 1));

    if (req == NULL)
        return NULL;
    block(count, n, me, &moff, &mlen);
    req->tmp = malloc(n * mlen * es + 1);
    if (req->tmp == NULL) {
        oc__coll_req_free(req);
        return NULL;
    }
    req->blk_off = moff;
    req->blk_count = mlen;
    req->blk_stride = mlen * es;
    req->own = sbuf + moff * es;
    for (uint32_t k = 1; k < n; k++) {
        oc__phase_t *rs = &req->ph[k - 1], *ag = &req->ph[n - 1 + k - 1];
        uint32_t to = mod((int64_t)me + k, n), from = mod((int64_t)me - k, n);
        size_t toff, tlen, foff, flen;
        block(count, n, to, &toff, &tlen);
        block(count, n, from, &foff, &flen);
        rs->speer = to, rs->sbuf = sbuf + toff * es, rs->slen = tlen * es;
        rs->rpeer = from, rs->rbuf = req->tmp + from * mlen * es;
        rs->rlen = mlen * es;
        ag->speer = to, ag->sbuf = rbuf + moff * es, ag->slen = mlen * es;
        ag->rpeer = from, ag->rbuf = rbuf + foff * es, ag->rlen = flen * es;
    }
    req->ph[n - 2].after = OC__AFTER_REDUCE_ORDERED;
    return req;
}

int oc__coll_allreduce_rd(const oc_context_t *ctx, size_t bytes, size_t es)
{
    const oc__coll_t *c = oc__coll_of(ctx);
    /* as oc_iallreduce chooses: the shared segment reduces in rank order,
     * as reduce-scatter + all-gather does */
    return !oc__coll_shm_fits(ctx, bytes) && !c->cfg.reproducible &&
           es != 2 && bytes <= c->cfg.small;
}

oc_request_t *oc__coll_allreduce_build(oc_context_t *ctx, const void *sbuf,
                                       void *rbuf, size_t count, int dtype,
                                       int op, int rd)
{
    size_t es = oc__dtype_size(dtype);
    oc_request_t *req;

    if (rd) {
        memcpy(rbuf, sbuf, count * es);
        req = allreduce_rd(ctx, rbuf, count * es);
    } else {
        req = allreduce_rsag(ctx, sbuf, rbuf, count, es);
    }
    if (req == NULL)
        return NULL;
    req->dtype = dtype;
    req->op = op;
    req->esize = es;
    req->rbuf = rbuf;
    return req;
}

OC_API oc_status_t oc_iallreduce(oc_context_t *ctx, const void *sendbuf,
                                 void *recvbuf, size_t count,
                                 oc_dtype_t dtype, oc_op_t op,
                                 oc_request_t **req_p)
{
    oc_status_t st = check_common(ctx, dtype, req_p);
    size_t es = oc__dtype_size((int)dtype), bytes;
    oc_request_t *req;

    if (st != OC_OK)
        return st;
    if ((unsigned)op >= OC__OP_COUNT || (op == OC_PROD && is_float(dtype)))
        return OC_ERR_COLL_OP;
    if (count > SIZE_MAX / es / (oc__ext_size(ctx) + 1u))
        return OC_ERR_COLL_COUNT;
    bytes = count * es;
    if (count > 0 && check_buffers(sendbuf, recvbuf, bytes) != OC_OK)
        return OC_ERR_COLL_BUFFER;
    if (count > 0 &&
        oc__coll_staged_try(ctx, OC__STAGED_ALLREDUCE,
                            sendbuf == OC_IN_PLACE ? recvbuf : sendbuf,
                            recvbuf, count, (int)dtype, (int)op, 0, req_p, &st))
        return st;
    if (oc__coll_placed(ctx)) {
        oc_colld_t d = {.kind = OC_COLLD_ALLREDUCE, .dtype = (uint8_t)dtype,
                        .op = (uint8_t)op, .count = count};
        return oc__coll_placed_start(ctx, &d, NULL,
                                     sendbuf == OC_IN_PLACE ? recvbuf : sendbuf,
                                     bytes, recvbuf, bytes, req_p);
    }
    if (oc__coll_shm_fits(ctx, bytes))
        return oc__coll_shm_start(ctx, OC__SHM_ALLREDUCE,
                                  sendbuf == OC_IN_PLACE ? recvbuf : sendbuf,
                                  recvbuf, count, (int)dtype, (int)op, req_p);
    if (oc__ext_size(ctx) > 1 && (oc__coll_of(ctx)->cfg.reproducible || es == 2 ||
                          bytes > oc__coll_of(ctx)->cfg.small)) {
        req = allreduce_rsag(ctx, sendbuf == OC_IN_PLACE ? recvbuf : sendbuf,
                             recvbuf, count, es);
    } else {
        if (count > 0 && sendbuf != OC_IN_PLACE)
            memcpy(recvbuf, sendbuf, bytes);
        req = oc__ext_size(ctx) == 1 ? oc__coll_req_new(ctx, 0)
                             : allreduce_rd(ctx, recvbuf, bytes);
    }
    if (req == NULL)
        return OC_ERR_NO_MEMORY;
    req->dtype = (int)dtype;
    req->op = (int)op;
    req->esize = es;
    req->rbuf = recvbuf;
    *req_p = req;
    return oc__coll_start(ctx, req);
}

/* Pairwise exchange; counts/displacements in elements, per peer.  The
 * schedule, with this rank's own block already in place. */
static oc_request_t *alltoallv_build(oc_context_t *ctx, const uint8_t *sbuf,
                                     const size_t *sc, const size_t *sd,
                                     uint8_t *rbuf, const size_t *rc,
                                     const size_t *rd, size_t es)
{
    const uint32_t n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
    oc_request_t *req = oc__coll_req_new(ctx, n - 1);

    if (req == NULL)
        return NULL;
    req->esize = es;
    memmove(rbuf + rd[me] * es, sbuf + sd[me] * es, sc[me] * es);
    for (uint32_t k = 1; k < n; k++) {
        oc__phase_t *ph = &req->ph[k - 1];
        uint32_t to = mod((int64_t)me + k, n), from = mod((int64_t)me - k, n);
        ph->speer = to, ph->sbuf = sbuf + sd[to] * es, ph->slen = sc[to] * es;
        ph->rpeer = from, ph->rbuf = rbuf + rd[from] * es;
        ph->rlen = rc[from] * es;
    }
    return req;
}

static oc_status_t alltoallv_start(oc_context_t *ctx, const uint8_t *sbuf,
                                   const size_t *sc, const size_t *sd,
                                   uint8_t *rbuf, const size_t *rc,
                                   const size_t *rd, size_t es, uint8_t *own,
                                   oc_request_t **req_p)
{
    const uint32_t me = oc__ext_rank(ctx);
    oc_request_t *req;

    if (rc[me] != sc[me]) {
        free(own);
        return OC_ERR_COLL_COUNT;
    }
    if ((req = alltoallv_build(ctx, sbuf, sc, sd, rbuf, rc, rd, es)) == NULL) {
        free(own);
        return OC_ERR_NO_MEMORY;
    }
    req->tmp = own;
    *req_p = req;
    return oc__coll_start(ctx, req);
}

oc_request_t *oc__coll_alltoall_build(oc_context_t *ctx, const void *sbuf,
                                      void *rbuf, size_t count, size_t es)
{
    const size_t n = oc__ext_size(ctx);
    size_t *v = malloc(2 * n * sizeof(*v));
    oc_request_t *req;

    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        v[i] = count;
        v[n + i] = i * count;
    }
    req = alltoallv_build(ctx, sbuf, v, v + n, rbuf, v, v + n, es);
    free(v);
    return req;
}

/* The agent placement's all-to-all(v): the counts travel in the
 * descriptor; @p own (in place: the copy of the input) goes with the
 * request. */
static oc_status_t placed_alltoallv(oc_context_t *ctx, const void *sbuf,
                                    const size_t *sc, const size_t *sd,
                                    void *rbuf, const size_t *rc,
                                    const size_t *rd, oc_dtype_t dtype,
                                    size_t slim, size_t rlim, uint8_t *own,
                                    oc_request_t **req_p)
{
    const uint32_t n = oc__ext_size(ctx);
    size_t es = oc__dtype_size((int)dtype);
    oc_colld_t d = {.kind = OC_COLLD_ALLTOALLV, .dtype = (uint8_t)dtype,
                    .nv = n};
    uint64_t *v = malloc(4 * (size_t)n * sizeof(*v));
    oc_status_t st;

    if (v == NULL) {
        free(own);
        return OC_ERR_NO_MEMORY;
    }
    if (rc[oc__ext_rank(ctx)] != sc[oc__ext_rank(ctx)]) {
        free(v);
        free(own);
        return OC_ERR_COLL_COUNT;
    }
    for (uint32_t i = 0; i < n; i++) {
        v[i] = sc[i], v[n + i] = sd[i];
        v[2 * n + i] = rc[i], v[3 * n + i] = rd[i];
    }
    st = oc__coll_placed_start(ctx, &d, v, sbuf, slim * es, rbuf, rlim * es,
                               req_p);
    free(v);
    if (st == OC_OK)
        (*req_p)->tmp = own;
    else
        free(own);
    return st;
}

OC_API oc_status_t oc_ialltoallv(oc_context_t *ctx, const void *sendbuf,
                                 const size_t *scounts, const size_t *sdispls,
                                 void *recvbuf, const size_t *rcounts,
                                 const size_t *rdispls, oc_dtype_t dtype,
                                 oc_request_t **req_p)
{
    oc_status_t st = check_common(ctx, dtype, req_p);
    size_t es = oc__dtype_size((int)dtype);
    size_t slim = 0, rlim = 0;

    if (st != OC_OK)
        return st;
    if (scounts == NULL || sdispls == NULL || rcounts == NULL ||
        rdispls == NULL)
        return OC_ERR_COLL_COUNT;
    if (sendbuf == OC_IN_PLACE || recvbuf == (void *)OC_IN_PLACE)
        return OC_ERR_COLL_BUFFER;
    for (uint32_t i = 0; i < oc__ext_size(ctx); i++) {
        if (scounts[i] > SIZE_MAX / es / 2 || sdispls[i] > SIZE_MAX / es / 2 ||
            rcounts[i] > SIZE_MAX / es / 2 || rdispls[i] > SIZE_MAX / es / 2)
            return OC_ERR_COLL_COUNT;
        if (scounts[i] > 0 && sdispls[i] + scounts[i] > slim)
            slim = sdispls[i] + scounts[i];
        if (rcounts[i] > 0 && rdispls[i] + rcounts[i] > rlim)
            rlim = rdispls[i] + rcounts[i];
    }
    if ((slim > 0 && sendbuf == NULL) || (rlim > 0 && recvbuf == NULL))
        return OC_ERR_COLL_BUFFER;
    if (rcounts[oc__ext_rank(ctx)] != scounts[oc__ext_rank(ctx)])
        return OC_ERR_COLL_COUNT;
    if (oc__coll_staged_alltoallv(ctx, sendbuf, scounts, sdispls, recvbuf,
                                  rcounts, rdispls, (int)dtype, slim, rlim,
                                  req_p, &st))
        return st;
    if (oc__coll_placed(ctx))
        return placed_alltoallv(ctx, sendbuf, scounts, sdispls, recvbuf,
                                rcounts, rdispls, dtype, slim, rlim, NULL,
                                req_p);
    return alltoallv_start(ctx, sendbuf, scounts, sdispls, recvbuf, rcounts,
                           rdispls, es, NULL, req_p);
}

OC_API oc_status_t oc_ialltoall(oc_context_t *ctx, const void *sendbuf,
                                void *recvbuf, size_t count, oc_dtype_t dtype,
                                oc_request_t **req_p)
{
    oc_status_t st = check_common(ctx, dtype, req_p);
    size_t es = oc__dtype_size((int)dtype), n, bytes, *v;
    uint8_t *own = NULL;

    if (st != OC_OK)
        return st;
    n = oc__ext_size(ctx);
    if (count > SIZE_MAX / es / n / 2)
        return OC_ERR_COLL_COUNT;
    bytes = count * es * n;
    if (count > 0 && check_buffers(sendbuf, recvbuf, bytes) != OC_OK)
        return OC_ERR_COLL_BUFFER;
    if (count > 0 &&
        oc__coll_staged_try(ctx, OC__STAGED_ALLTOALL,
                            sendbuf == OC_IN_PLACE ? recvbuf : sendbuf,
                            recvbuf, count, (int)dtype, 0, 0, req_p, &st))
        return st;
    if (!oc__coll_placed(ctx) && oc__coll_shm_fits(ctx, bytes))
        return oc__coll_shm_start(ctx, OC__SHM_ALLTOALL,
                                  sendbuf == OC_IN_PLACE ? recvbuf : sendbuf,
                                  recvbuf, count, (int)dtype, 0, req_p);
    v = malloc(2 * n * sizeof(*v));
    if (v == NULL)
        return OC_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        v[i] = count;
        v[n + i] = i * count;
    }
    if (sendbuf == OC_IN_PLACE) {
        own = malloc(bytes + 1);
        if (own == NULL) {
            free(v);
            return OC_ERR_NO_MEMORY;
        }
        memcpy(own, recvbuf, bytes);
        sendbuf = own;
    }
    if (oc__coll_placed(ctx))
        st = placed_alltoallv(ctx, sendbuf, v, v + n, recvbuf, v, v + n,
                              dtype, count * n, count * n, own, req_p);
    else
        st = alltoallv_start(ctx, sendbuf, v, v + n, recvbuf, v, v + n, es, own,
                         req_p);
    free(v);
    return st;
}

/* Binomial tree from @p root. */
oc_request_t *oc__coll_bcast_build(oc_context_t *ctx, void *buf,
                                   size_t bytes, uint32_t root)
{
    const uint32_t n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
    uint32_t vr, L = 0;
    oc_request_t *req;

    while ((1u << L) < n)
        L++;
    if ((req = oc__coll_req_new(ctx, L)) == NULL)
        return NULL;
    vr = mod((int64_t)me - root, n);
    for (uint32_t j = 0; j < L; j++) {
        uint32_t m = 1u << j;
        oc__phase_t *ph = &req->ph[j];
        if (vr < m && vr + m < n) {
            ph->speer = mod((int64_t)vr + m + root, n);
            ph->sbuf = buf, ph->slen = bytes;
        } else if (vr >= m && vr < 2 * m) {
            ph->rpeer = mod((int64_t)vr - m + root, n);
            ph->rbuf = buf, ph->rlen = bytes;
        }
    }
    return req;
}

OC_API oc_status_t oc_ibcast(oc_context_t *ctx, void *buf, size_t count,
                             oc_dtype_t dtype, uint32_t root,
                             oc_request_t **req_p)
{
    oc_status_t st = check_common(ctx, dtype, req_p);
    size_t es = oc__dtype_size((int)dtype), bytes;
    uint32_t n;
    oc_request_t *req;

    if (st != OC_OK)
        return st;
    n = oc__ext_size(ctx);
    if (root >= n)
        return OC_ERR_COLL_ROOT;
    if (count > SIZE_MAX / es / 2)
        return OC_ERR_COLL_COUNT;
    bytes = count * es;
    if (count > 0 && (buf == NULL || buf == (void *)OC_IN_PLACE))
        return OC_ERR_COLL_BUFFER;
    if (count > 0 && oc__coll_staged_try(ctx, OC__STAGED_BCAST, buf, buf, count,
                                         (int)dtype, 0, root, req_p, &st))
        return st;
    if (oc__coll_placed(ctx)) {
        oc_colld_t d = {.kind = OC_COLLD_BCAST, .dtype = (uint8_t)dtype,
                        .root = root, .count = count};
        return oc__coll_placed_start(ctx, &d, NULL, buf, bytes, buf, bytes,
                                     req_p);
    }
    if ((req = oc__coll_bcast_build(ctx, buf, bytes, root)) == NULL)
        return OC_ERR_NO_MEMORY;
    *req_p = req;
    return oc__coll_start(ctx, req);
}

OC_API oc_status_t oc_ibarrier(oc_context_t *ctx, oc_request_t **req_p)
{
    oc_status_t st;
    uint32_t n, me, L = 0;
    oc_request_t *req;

    if (req_p == NULL)
        return OC_ERR_COLL_REQUEST;
    if ((st = oc__coll_check_ctx(ctx)) != OC_OK)
        return st;
    if (oc__coll_placed(ctx)) {
        oc_colld_t d = {.kind = OC_COLLD_BARRIER};
        return oc__coll_placed_start(ctx, &d, NULL, NULL, 0, NULL, 0, req_p);
    }
    n = oc__ext_size(ctx), me = oc__ext_rank(ctx);
    while ((1u << L) < n)
        L++;
    if ((req = oc__coll_req_new(ctx, L)) == NULL)
        return OC_ERR_NO_MEMORY;
    for (uint32_t j = 0; j < L; j++) {
        oc__phase_t *ph = &req->ph[j];
        ph->speer = mod((int64_t)me + (1 << j), n);
        ph->rpeer = mod((int64_t)me - (1 << j), n);
        ph->rbuf = (uint8_t *)req; /* zero bytes: never written */
    }
    *req_p = req;
    return oc__coll_start(ctx, req);
}

OC_API oc_status_t oc_allreduce(oc_context_t *ctx, const void *sendbuf,
                                void *recvbuf, size_t count, oc_dtype_t dtype,
                                oc_op_t op)
{
    oc_request_t *r;
    oc_status_t st = oc_iallreduce(ctx, sendbuf, recvbuf, count, dtype, op, &r);
    return st == OC_OK ? oc_wait(&r) : st;
}

OC_API oc_status_t oc_alltoall(oc_context_t *ctx, const void *sendbuf,
                               void *recvbuf, size_t count, oc_dtype_t dtype)
{
    oc_request_t *r;
    oc_status_t st = oc_ialltoall(ctx, sendbuf, recvbuf, count, dtype, &r);
    return st == OC_OK ? oc_wait(&r) : st;
}

OC_API oc_status_t oc_alltoallv(oc_context_t *ctx, const void *sendbuf,
                                const size_t *scounts, const size_t *sdispls,
                                void *recvbuf, const size_t *rcounts,
                                const size_t *rdispls, oc_dtype_t dtype)
{
    oc_request_t *r;
    oc_status_t st = oc_ialltoallv(ctx, sendbuf, scounts, sdispls, recvbuf,
                                   rcounts, rdispls, dtype, &r);
    return st == OC_OK ? oc_wait(&r) : st;
}

OC_API oc_status_t oc_bcast(oc_context_t *ctx, void *buf, size_t count,
                            oc_dtype_t dtype, uint32_t root)
{
    oc_request_t *r;
    oc_status_t st = oc_ibcast(ctx, buf, count, dtype, root, &r);
    return st == OC_OK ? oc_wait(&r) : st;
}

OC_API oc_status_t oc_barrier(oc_context_t *ctx)
{
    oc_request_t *r;
    oc_status_t st = oc_ibarrier(ctx, &r);
    return st == OC_OK ? oc_wait(&r) : st;
}
