/*
 * staged.c — collectives on CUDA device buffers (src/gpu), inline
 * placement: the vector is cut into chunks of OC_GPU_CHUNK bytes, each
 * staged through a pinned slot of the context's pool; chunk k is copied
 * to the host while chunk k-1 is reduced or exchanged (an ordinary host
 * collective on the slot) and chunk k-2 copied back, every copy queued
 * on its slot's stream and waited for by polling its event from the
 * progress hook: the caller's thread never blocks on the device.
 *
 * Matching across ranks: the chunks' collectives take their sequence
 * numbers when the call is made (oc__coll_seq_take), not when their data
 * arrives, so ranks whose copies finish in other orders still agree.
 * Allreduce chunks use the algorithm the host path would use for the
 * whole vector, so the result equals the host path's bit for bit.
 *
 * Correct or loud: a rank whose copy or query fails keeps running the
 * chunks' collectives (so that no peer waits for ever) but writes nothing
 * more to the caller's buffers, and a last small allreduce (the maximum
 * of every rank's failure flag) makes the collective fail with OC_ERR_GPU
 * on every rank.
 *
 * Whole mode, for the agent placement and for all-to-allv (whose chunks
 * the ranks could not agree on: each knows only its own counts): the rank
 * stages the whole vector into a pinned buffer of its own (a lane: own
 * stream and event) during the call, starts the ordinary host collective
 * on it (in the agent placement the agent does the rest) and the flag
 * allreduce right after, both in call order; once the collective
 * completes, the result is copied back.  A copy-in failure is
 * agreed on every rank; a copy-back failure fails only the rank whose
 * copy failed (its peers' results are right).  Threading: the context's
 * thread only.
 */
#include "coll_int.h"

#include "gpu/gpu.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

enum { SLOT_FREE = 0, SLOT_IN, SLOT_COLL, SLOT_OUT };

typedef struct {
    int           state;
    size_t        chunk;  /* which chunk the slot holds */
    oc_request_t *sub;    /* its collective (SLOT_COLL) */
} slot_t;

struct oc__staged {
    int              kind;
    oc__gpu_pool_t  *pool;   /* NULL when failed before the pool existed */
    uint8_t         *spare;  /* host slots then (nothing to copy) */
    uint64_t         ticket;
    uint32_t         seq0;   /* nchunks + 1 numbers: chunks, then the flag */
    int              sdev, rdev; /* the buffers are device memory */
    const uint8_t   *sbuf;
    uint8_t         *rbuf;
    size_t           count, es, per; /* per: elements of a chunk (per peer) */
    size_t           nchunks, started, done;
    size_t           half;   /* a slot's input half; the output follows */
    int              dtype, op, rd;
    uint32_t         root, n, me;
    int              gpu_err;   /* this rank's copies or queries failed */
    oc_status_t      coll_err;  /* a chunk's collective failed */
    oc_request_t    *agree;
    int32_t          flag_in, flag_out;
    slot_t          *slot;
    /* whole mode */
    int              whole, out_queued;
    size_t           rbytes;         /* all-to-allv: the receive extent */
    size_t          *vrc, *vrd;      /* all-to-allv: receive counts, displs */
    oc__gpu_lane_t  *lane;
    uint8_t         *host;   /* the lane's memory, or malloc'd (failed) */
    size_t           bytes;  /* of one vector (send or receive) */
    oc_request_t    *inner;
    oc_status_t      inner_st;
};

static uint8_t *slot_mem(struct oc__staged *s, unsigned i)
{
    return s->pool != NULL ? oc__gpu_slot_host(s->pool, i)
                           : s->spare + (size_t)i * 2 * s->half;
}

static unsigned nslots(const oc__coll_t *c, const struct oc__staged *s)
{
    return s->pool != NULL ? oc__gpu_pool_nslots(s->pool) : (unsigned)c->gpu_slots;
}

void oc__coll_staged_free(struct oc__staged *s)
{
    if (s == NULL)
        return;
    if (s->inner != NULL || s->agree != NULL) {
        /* failed with the host collective still running (a peer died):
         * the agent may yet write into the buffer; leave it */
        oc_debug(OC_COMP_COLL, "a staged collective ended early: its "
                 "staging buffer stays allocated");
    } else {
        oc__gpu_lane_free(s->lane);
        if (s->lane == NULL)
            free(s->host);
    }
    free(s->spare);
    free(s->slot);
    free(s->vrc);
    free(s);
}

void oc__coll_staged_fini(oc__coll_t *c)
{
    oc__gpu_pool_free(c->gpu_pool);
    c->gpu_pool = NULL;
}

/* The pool of @p m's context, made by the first collective on device
 * memory.  @return NULL (logged) when it cannot serve @p m. */
static oc__gpu_pool_t *pool_for(oc__coll_t *c, const oc__gpu_mem_t *m)
{
    if (c->gpu_pool == NULL) {
        if (oc__gpu_pool_new(m->cuctx, m->device, 2 * c->gpu_chunk,
                             (unsigned)c->gpu_slots, &c->gpu_pool) != OC_OK)
            return NULL;
    }
    if (oc__gpu_pool_ctx(c->gpu_pool) != m->cuctx) {
        oc_error(OC_COMP_COLL, "rank %u: a device buffer on device %d, in "
                 "another context than this rank's staging (device %d): "
                 "one context per rank is served", oc__ext_rank(c->ctx),
                 m->device, oc__gpu_pool_device(c->gpu_pool));
        return NULL;
    }
    return c->gpu_pool;
}

/* Queue chunk k's input into slot i (device: a copy; host: memcpy). */
static void chunk_in(struct oc__staged *s, unsigned i, size_t k)
{
    uint8_t *h = slot_mem(s, i);
    size_t off = k * s->per, len = s->count - off < s->per ? s->count - off
                                                           : s->per;
    oc_status_t st = OC_OK;

    if (s->gpu_err)
        return;
    if (s->kind == OC__STAGED_ALLTOALL) {
        for (uint32_t p = 0; p < s->n && st == OC_OK; p++) {
            const uint8_t *src = s->sbuf + (p * s->count + off) * s->es;
            if (s->sdev)
                st = oc__gpu_slot_d2h(s->pool, i, p * len * s->es, src,
                                      len * s->es);
            else
                memcpy(h + p * len * s->es, src, len * s->es);
        }
    } else if (s->kind == OC__STAGED_ALLREDUCE ||
               s->me == s->root) { /* bcast: the root's data only */
        if (s->sdev)
            st = oc__gpu_slot_d2h(s->pool, i, 0, s->sbuf + off * s->es,
                                  len * s->es);
        else
            memcpy(h, s->sbuf + off * s->es, len * s->es);
    }
    if (st == OC_OK && s->sdev)
        st = oc__gpu_slot_fence(s->pool, i);
    if (st != OC_OK)
        s->gpu_err = 1;
}

/* Queue chunk k's result from slot i into the caller's buffer. */
static void chunk_out(struct oc__staged *s, unsigned i, size_t k)
{
    uint8_t *h = slot_mem(s, i);
    uint8_t *res = s->kind == OC__STAGED_BCAST ? h : h + s->half;
    size_t off = k * s->per, len = s->count - off < s->per ? s->count - off
                                                           : s->per;
    oc_status_t st = OC_OK;

    if (s->gpu_err || s->coll_err != OC_OK ||
        (s->kind == OC__STAGED_BCAST && s->me == s->root))
        return;
    if (s->kind == OC__STAGED_ALLTOALL) {
        for (uint32_t p = 0; p < s->n && st == OC_OK; p++) {
            uint8_t *dst = s->rbuf + (p * s->count + off) * s->es;
            if (s->rdev)
                st = oc__gpu_slot_h2d(s->pool, i, dst, s->half + p * len * s->es,
                                      len * s->es);
            else
                memcpy(dst, res + p * len * s->es, len * s->es);
        }
    } else if (s->rdev) {
        st = oc__gpu_slot_h2d(s->pool, i, s->rbuf + off * s->es,
                              (size_t)(res - h), len * s->es);
    } else {
        memcpy(s->rbuf + off * s->es, res, len * s->es);
    }
    if (st == OC_OK && s->rdev)
        st = oc__gpu_slot_fence(s->pool, i);
    if (st != OC_OK)
        s->gpu_err = 1;
}

static oc_request_t *chunk_coll(oc_context_t *ctx, struct oc__staged *s,
                                unsigned i, size_t k)
{
    uint8_t *h = slot_mem(s, i);
    size_t off = k * s->per, len = s->count - off < s->per ? s->count - off
                                                           : s->per;

    switch (s->kind) {
    case OC__STAGED_ALLREDUCE:
        return oc__coll_allreduce_build(ctx, h, h + s->half, len, s->dtype,
                                        s->op, s->rd);
    case OC__STAGED_ALLTOALL:
        return oc__coll_alltoall_build(ctx, h, h + s->half, len, s->es);
    default:
        return oc__coll_bcast_build(ctx, h, len * s->es, s->root);
    }
}

/* The slot's copies: done (OC_OK), not yet, or failed (flagged). */
static int slot_ready(struct oc__staged *s, unsigned i)
{
    oc_status_t st;

    if (s->pool == NULL)
        return 1;
    st = oc__gpu_slot_test(s->pool, i);
    if (st == OC_INPROGRESS)
        return 0;
    if (st != OC_OK)
        s->gpu_err = 1;
    return 1;
}

static void finish(oc_request_t *req, oc_status_t st)
{
    oc__coll_t *c = oc__coll_of(req->ctx);

    if (st != OC_OK && req->staged->pool != NULL && !req->staged->whole)
        oc__gpu_pool_drain(req->staged->pool); /* nothing writes later */
    req->status = st;
    if (!req->staged->whole)
        c->gpu_serving++; /* the slots go to the next one */
}

/* The result from the lane to the caller's buffer: queued (device) or
 * copied (host); all-to-allv: each peer's block alone (MPI leaves the
 * gaps of the receive buffer alone). */
static void whole_copy_back(struct oc__staged *s)
{
    const uint8_t *res = s->kind == OC__STAGED_BCAST ? s->host
                                                     : s->host + s->bytes;
    size_t off = (size_t)(res - s->host);
    oc_status_t st = OC_OK;

    if (s->kind == OC__STAGED_BCAST && s->me == s->root)
        return;
    for (uint32_t p = 0; p < (s->vrc != NULL ? s->n : 1) && st == OC_OK; p++) {
        size_t at = s->vrc != NULL ? s->vrd[p] * s->es : 0;
        size_t len = s->vrc != NULL ? s->vrc[p] * s->es : s->bytes;
        if (len == 0)
            continue;
        if (s->rdev)
            st = oc__gpu_lane_h2d(s->lane, s->rbuf + at, off + at, len);
        else
            memcpy(s->rbuf + at, res + at, len);
    }
    if (st == OC_OK && s->rdev)
        st = oc__gpu_lane_fence(s->lane);
    s->out_queued = st != OC_OK ? -1 : s->rdev ? 1 : 2;
}

/* A whole-mode request: the host collective, the flag, the copy back. */
static void whole_advance(oc_request_t *req)
{
    struct oc__staged *s = req->staged;
    oc_status_t st;

    /* ended: oc_test frees them (and sets the pointer to NULL) without
     * progressing */
    if (s->inner != NULL && oc__coll_req_done(s->inner) &&
        (st = oc_test(&s->inner), s->inner == NULL)) {
        s->inner_st = st;
        if (st == OC_OK && !s->gpu_err)
            whole_copy_back(s);
    }
    if (s->agree != NULL && oc__coll_req_done(s->agree) &&
        (st = oc_test(&s->agree), s->agree == NULL) && st != OC_OK &&
        s->inner_st == OC_OK)
        s->inner_st = st;
    if (s->inner != NULL || s->agree != NULL)
        return;
    if (s->out_queued == 1) {
        st = oc__gpu_lane_test(s->lane);
        if (st == OC_INPROGRESS)
            return;
        s->out_queued = st == OC_OK ? 2 : -1;
    }
    if (s->inner_st != OC_OK) {
        finish(req, s->inner_st);
    } else if (s->flag_out != 0 || s->out_queued == -1) {
        if (!s->gpu_err && s->out_queued != -1)
            oc_error(OC_COMP_COLL, "rank %u: collective %u on device memory "
                     "failed on another rank (its log says why)", s->me,
                     req->seq);
        finish(req, OC_ERR_GPU);
    } else {
        finish(req, OC_OK);
    }
}

static void staged_advance_inline(oc_request_t *req);

void oc__coll_staged_advance(oc_request_t *req)
{
    if (req->staged->whole) {
        if (req->status == OC_INPROGRESS)
            whole_advance(req);
        return;
    }
    staged_advance_inline(req);
}

static void staged_advance_inline(oc_request_t *req)
{
    oc_context_t *ctx = req->ctx;
    oc__coll_t *c = oc__coll_of(ctx);
    struct oc__staged *s = req->staged;
    unsigned ns;
    int moved = 1;

    if (req->status != OC_INPROGRESS || c->gpu_serving != s->ticket)
        return; /* an earlier one has the slots */
    ns = nslots(c, s);
    while (moved) {
        moved = 0;
        for (unsigned i = 0; i < ns; i++) {
            slot_t *sl = &s->slot[i];
            if (sl->state == SLOT_FREE && s->started < s->nchunks &&
                s->started % ns == i) {
                sl->chunk = s->started++;
                chunk_in(s, i, sl->chunk);
                sl->state = SLOT_IN, moved = 1;
            }
            if (sl->state == SLOT_IN && slot_ready(s, i)) {
                sl->sub = chunk_coll(ctx, s, i, sl->chunk);
                if (sl->sub == NULL) { /* peers would wait: cannot go on */
                    oc_error(OC_COMP_COLL, "rank %u: no memory for chunk %zu "
                             "of a staged collective", s->me, sl->chunk);
                    finish(req, OC_ERR_NO_MEMORY);
                    return;
                }
                oc__coll_start_seq(ctx, sl->sub,
                                   oc__coll_seq_nth(s->seq0,
                                                    (uint32_t)sl->chunk));
                sl->state = SLOT_COLL, moved = 1;
            }
            if (sl->state == SLOT_COLL && sl->sub->status != OC_INPROGRESS) {
                if (sl->sub->status != OC_OK && s->coll_err == OC_OK)
                    s->coll_err = sl->sub->status;
                oc__coll_retire(sl->sub);
                sl->sub = NULL;
                chunk_out(s, i, sl->chunk);
                sl->state = SLOT_OUT, moved = 1;
            }
            if (sl->state == SLOT_OUT && slot_ready(s, i)) {
                sl->state = SLOT_FREE, moved = 1;
                s->done++;
                req->cur++; /* oc_wait: progress was made */
            }
        }
    }
    if (s->done < s->nchunks)
        return;
    if (s->agree == NULL) { /* every rank says whether its part failed */
        s->flag_in = s->gpu_err;
        s->agree = oc__coll_allreduce_build(ctx, &s->flag_in, &s->flag_out, 1,
                                            OC_INT32, OC_MAX, 1);
        if (s->agree == NULL) {
            finish(req, OC_ERR_NO_MEMORY);
            return;
        }
        oc__coll_start_seq(ctx, s->agree,
                           oc__coll_seq_nth(s->seq0, (uint32_t)s->nchunks));
    }
    if (s->agree->status == OC_INPROGRESS)
        return;
    if (s->agree->status != OC_OK) {
        oc_status_t st = s->agree->status;
        oc__coll_retire(s->agree);
        s->agree = NULL;
        finish(req, st);
        return;
    }
    oc__coll_retire(s->agree);
    s->agree = NULL;
    if (s->coll_err != OC_OK) {
        finish(req, s->coll_err);
    } else if (s->flag_out != 0) {
        if (!s->gpu_err)
            oc_error(OC_COMP_COLL, "rank %u: collective %u on device memory "
                     "failed on another rank (its log says why)", s->me,
                     req->seq);
        finish(req, OC_ERR_GPU);
    } else {
        finish(req, OC_OK);
    }
}

/* The agent placement: stage the whole input now, start the host
 * collective and the flag allreduce (call order), copy back later. */
static oc_status_t whole_start(oc_context_t *ctx, oc__coll_t *c,
                               struct oc__staged *s, const oc__gpu_mem_t *ms,
                               const oc__gpu_mem_t *mr, int bad,
                               const size_t *const *v, oc_request_t **req_p)
{
    size_t need = s->kind == OC__STAGED_BCAST ? s->bytes : s->bytes + s->rbytes;
    oc__gpu_pool_t *pool = NULL;
    oc_request_t *req;
    uint8_t *hs, *hr;
    oc_status_t st;

    s->whole = 1;
    if (!bad) {
        pool = pool_for(c, s->sdev ? ms : mr);
        if (pool != NULL && s->sdev && s->rdev && ms->cuctx != mr->cuctx) {
            oc_error(OC_COMP_COLL, "rank %u: send and receive buffers on "
                     "devices %d and %d", s->me, ms->device, mr->device);
            pool = NULL;
        }
        if (pool != NULL && oc__gpu_lane_new(pool, need, &s->lane) != OC_OK)
            s->lane = NULL;
    }
    if (s->lane != NULL) {
        s->host = oc__gpu_lane_host(s->lane);
    } else { /* take part, so that no peer waits, and fail everywhere */
        s->gpu_err = 1;
        if ((s->host = malloc(need)) == NULL)
            return OC_ERR_NO_MEMORY;
    }
    hs = s->host;
    hr = s->kind == OC__STAGED_BCAST ? s->host : s->host + s->bytes;
    if (!s->gpu_err && (s->kind != OC__STAGED_BCAST || s->me == s->root)) {
        if (!s->sdev) {
            if (s->bytes > 0)
                memcpy(hs, s->sbuf, s->bytes);
        } else if (oc__gpu_lane_d2h(s->lane, 0, s->sbuf, s->bytes) != OC_OK ||
                   oc__gpu_lane_fence(s->lane) != OC_OK) {
            s->gpu_err = 1;
        } else { /* the rank stages: the agent needs the data now */
            while ((st = oc__gpu_lane_test(s->lane)) == OC_INPROGRESS)
                ;
            s->gpu_err = st != OC_OK;
        }
    }
    if (s->kind == OC__STAGED_ALLTOALLV)
        st = oc_ialltoallv(ctx, hs, v[0], v[1], hr, v[2], v[3], s->dtype,
                           &s->inner);
    else if (s->kind == OC__STAGED_ALLREDUCE)
        st = oc_iallreduce(ctx, hs, hr, s->count, s->dtype, s->op, &s->inner);
    else if (s->kind == OC__STAGED_ALLTOALL)
        st = oc_ialltoall(ctx, hs, hr, s->count, s->dtype, &s->inner);
    else
        st = oc_ibcast(ctx, hs, s->count, s->dtype, s->root, &s->inner);
    if (st != OC_OK) {
        s->inner = NULL;
        return st;
    }
    s->flag_in = s->gpu_err;
    st = oc_iallreduce(ctx, &s->flag_in, &s->flag_out, 1, OC_INT32, OC_MAX,
                       &s->agree);
    if (st != OC_OK) {
        s->agree = NULL;
        (void)oc_wait(&s->inner);
        return st;
    }
    if ((req = oc__coll_req_new(ctx, 0)) == NULL) {
        (void)oc_wait(&s->inner);
        (void)oc_wait(&s->agree);
        return OC_ERR_NO_MEMORY;
    }
    req->staged = s;
    req->seq = s->inner != NULL ? s->inner->seq : 0;
    oc__coll_link(c, req);
    *req_p = req;
    return OC_OK;
}

oc_status_t oc__coll_staged_init(oc__coll_t *c)
{
    oc__gpu_config_t g;
    oc_status_t st = oc__gpu_config(&g);

    if (st != OC_OK)
        return st;
    c->gpu_on = g.on;
    c->gpu_chunk = g.chunk, c->gpu_slots = g.slots;
    return OC_OK;
}

int oc__coll_staged_try(oc_context_t *ctx, int kind, const void *sbuf,
                        void *rbuf, size_t count, int dtype, int op,
                        uint32_t root, oc_request_t **req_p, oc_status_t *st)
{
    oc__coll_t *c = oc__coll_of(ctx);
    oc__gpu_mem_t ms = {-1, NULL}, mr = {-1, NULL};
    int bad = 0;
    struct oc__staged *s;
    oc_request_t *req;
    const oc__gpu_mem_t *m;

    if (!c->gpu_on || !oc__gpu_available())
        return 0; /* no driver: host memory, as before */
    if (sbuf != NULL && oc__gpu_mem_of(sbuf, &ms) != OC_OK)
        bad = 1;
    if (rbuf != NULL && rbuf != sbuf && oc__gpu_mem_of(rbuf, &mr) != OC_OK)
        bad = 1;
    if (rbuf == sbuf)
        mr = ms;
    if (!bad && ms.device < 0 && mr.device < 0)
        return 0;
    if ((s = calloc(1, sizeof(*s))) == NULL ||
        (s->slot = calloc(c->gpu_slots, sizeof(*s->slot))) == NULL) {
        free(s);
        *st = OC_ERR_NO_MEMORY;
        return 1;
    }
    s->kind = kind, s->count = count, s->dtype = dtype, s->op = op;
    s->es = oc__dtype_size(dtype), s->root = root;
    s->n = oc__ext_size(ctx), s->me = oc__ext_rank(ctx);
    s->sbuf = sbuf, s->rbuf = rbuf;
    s->sdev = ms.device >= 0, s->rdev = mr.device >= 0;
    s->half = c->gpu_chunk;
    s->per = kind == OC__STAGED_ALLTOALL ? c->gpu_chunk / (s->n * s->es)
                                         : c->gpu_chunk / s->es;
    if (s->per == 0) { /* OC_GPU_CHUNK below one element per rank */
        oc_error(OC_COMP_COLL, "OC_GPU_CHUNK=%llu holds no element per rank "
                 "(%u ranks)", (unsigned long long)c->gpu_chunk, s->n);
        oc__coll_staged_free(s);
        *st = OC_ERR_CONFIG;
        return 1;
    }
    s->bytes = count * s->es * (kind == OC__STAGED_ALLTOALL ? s->n : 1);
    s->rbytes = s->bytes;
    if (oc__coll_placed(ctx)) {
        if ((*st = whole_start(ctx, c, s, &ms, &mr, bad, NULL, req_p)) != OC_OK)
            oc__coll_staged_free(s);
        return 1;
    }
    s->nchunks = (count + s->per - 1) / s->per;
    if (s->nchunks >= 1u << (OC__COLL_SEQ_BITS - 1)) {
        oc_error(OC_COMP_COLL, "a staged collective of %zu chunks: raise "
                 "OC_GPU_CHUNK", s->nchunks);
        oc__coll_staged_free(s);
        *st = OC_ERR_COLL_COUNT;
        return 1;
    }
    if (kind == OC__STAGED_ALLREDUCE)
        s->rd = oc__coll_allreduce_rd(ctx, count * s->es, s->es);
    m = s->sdev ? &ms : &mr;
    if (bad || (s->pool = pool_for(c, m)) == NULL ||
        (s->sdev && s->rdev && ms.cuctx != mr.cuctx)) {
        if (s->pool != NULL && s->sdev && s->rdev)
            oc_error(OC_COMP_COLL, "rank %u: send and receive buffers on "
                     "devices %d and %d", s->me, ms.device, mr.device);
        /* take part, so that no peer waits, and fail everywhere */
        s->gpu_err = 1;
        s->pool = NULL;
        s->spare = malloc(c->gpu_slots * 2 * s->half);
        if (s->spare == NULL) {
            oc__coll_staged_free(s);
            *st = OC_ERR_NO_MEMORY;
            return 1;
        }
    }
    if ((req = oc__coll_req_new(ctx, 0)) == NULL) {
        oc__coll_staged_free(s);
        *st = OC_ERR_NO_MEMORY;
        return 1;
    }
    req->staged = s;
    s->ticket = c->gpu_ticket++;
    s->seq0 = oc__coll_seq_take(c, (uint32_t)s->nchunks + 1);
    req->seq = s->seq0;
    oc__coll_link(c, req);
    oc__coll_staged_advance(req);
    *req_p = req;
    *st = OC_OK;
    return 1;
}

int oc__coll_staged_alltoallv(oc_context_t *ctx, const void *sbuf,
                              const size_t *sc, const size_t *sd, void *rbuf,
                              const size_t *rc, const size_t *rd, int dtype,
                              size_t slim, size_t rlim, oc_request_t **req_p,
                              oc_status_t *st)
{
    oc__coll_t *c = oc__coll_of(ctx);
    oc__gpu_mem_t ms = {-1, NULL}, mr = {-1, NULL};
    const size_t *v[4] = {sc, sd, rc, rd};
    struct oc__staged *s;
    int bad = 0;

    if (!c->gpu_on || !oc__gpu_available())
        return 0;
    if (slim > 0 && oc__gpu_mem_of(sbuf, &ms) != OC_OK)
        bad = 1;
    if (rlim > 0 && oc__gpu_mem_of(rbuf, &mr) != OC_OK)
        bad = 1;
    if (!bad && ms.device < 0 && mr.device < 0)
        return 0;
    if ((s = calloc(1, sizeof(*s))) == NULL) {
        *st = OC_ERR_NO_MEMORY;
        return 1;
    }
    s->kind = OC__STAGED_ALLTOALLV, s->dtype = dtype;
    s->es = oc__dtype_size(dtype);
    s->n = oc__ext_size(ctx), s->me = oc__ext_rank(ctx);
    s->sbuf = sbuf, s->rbuf = rbuf;
    s->sdev = ms.device >= 0, s->rdev = mr.device >= 0;
    s->bytes = slim * s->es, s->rbytes = rlim * s->es;
    s->vrc = malloc(2 * (size_t)s->n * sizeof(*s->vrc));
    if (s->vrc == NULL) {
        oc__coll_staged_free(s);
        *st = OC_ERR_NO_MEMORY;
        return 1;
    }
    s->vrd = s->vrc + s->n;
    memcpy(s->vrc, rc, s->n * sizeof(*rc));
    memcpy(s->vrd, rd, s->n * sizeof(*rd));
    if (s->bytes + s->rbytes == 0) { /* nothing to stage: the host path */
        oc__coll_staged_free(s);
        return 0;
    }
    if ((*st = whole_start(ctx, c, s, &ms, &mr, bad, v, req_p)) != OC_OK)
        oc__coll_staged_free(s);
    return 1;
}
