/*
 * rkernel_fake.c — the transport and collective stubs under the router's
 * unit tests, and their fixture (rkernel_fake.h).  Single thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rkernel_fake.h"

rk_log_t rk;

/* ---- the transport ------------------------------------------------------ */

struct oc_tr_context {
    int unused;
};

struct oc_tr_worker {
    oc_tr_recv_cb_t cb[8];
    void           *arg[8];
};

struct oc_tr_ep {
    uint32_t kind; /* 0: a local rank, 1: a peer node */
    uint32_t id;
};

void rk_addr(uint32_t kind, uint32_t id, uint8_t out[8])
{
    memcpy(out, &kind, 4);
    memcpy(out + 4, &id, 4);
}

oc_status_t oc__tr_context_create_wakeup(oc_tr_context_t **ctx_p)
{
    *ctx_p = calloc(1, sizeof(**ctx_p));
    return *ctx_p != NULL ? OC_OK : OC_ERR_NO_MEMORY;
}

void oc__tr_context_destroy(oc_tr_context_t *ctx)
{
    free(ctx);
}

oc_status_t oc__tr_worker_create(oc_tr_context_t *ctx, oc_tr_worker_t **w_p)
{
    (void)ctx;
    *w_p = calloc(1, sizeof(**w_p));
    return *w_p != NULL ? OC_OK : OC_ERR_NO_MEMORY;
}

void oc__tr_worker_destroy(oc_tr_worker_t *w)
{
    free(w);
}

int oc__tr_worker_efd(oc_tr_worker_t *w)
{
    (void)w;
    return -1;
}

int oc__tr_worker_arm(oc_tr_worker_t *w)
{
    (void)w;
    return 0;
}

oc_status_t oc__tr_worker_address(oc_tr_worker_t *w, const void **addr,
                                 size_t *len)
{
    *addr = w;
    *len = 8;
    return OC_OK;
}

oc_status_t oc__tr_set_handler(oc_tr_worker_t *w, unsigned id,
                              oc_tr_recv_cb_t cb, void *arg, int persistent)
{
    (void)persistent;
    if (id >= 8)
        return OC_ERR_INVALID_PARAM;
    w->cb[id] = cb;
    w->arg[id] = arg;
    return OC_OK;
}

oc_status_t oc__tr_ep_create(oc_tr_worker_t *w, const void *addr,
                            int peer_err, oc_tr_ep_t **ep_p)
{
    oc_tr_ep_t *ep;
    (void)w;
    (void)peer_err;
    if (rk.fail_ep_create)
        return OC_ERR_TRANSPORT;
    if ((ep = calloc(1, sizeof(*ep))) == NULL)
        return OC_ERR_NO_MEMORY;
    memcpy(&ep->kind, addr, 4);
    memcpy(&ep->id, (const uint8_t *)addr + 4, 4);
    rk.eps_live++;
    *ep_p = ep;
    return OC_OK;
}

void oc__tr_ep_destroy(oc_tr_worker_t *w, oc_tr_ep_t *ep)
{
    (void)w;
    if (ep == NULL)
        return;
    rk.eps_live--;
    free(ep);
}

unsigned oc__tr_progress(oc_tr_worker_t *w)
{
    (void)w;
    return 0;
}

void oc__tr_release(oc_tr_worker_t *w, void *data)
{
    (void)w;
    rk.released++;
    free(data);
}

/* Checks inside the router's calls: a cmocka assert would jump out of
 * the router mid-call and leave it half-changed; a failure here is
 * counted, said, and asserted by rk_turn when the router has returned. */
#define CHECK(c)                                                          \
    do {                                                                  \
        if (!(c)) {                                                       \
            print_error("%s:%d: fake transport: %s\n", __FILE__, __LINE__, \
                        #c);                                              \
            rk.bad++;                                                     \
        }                                                                 \
    } while (0)

/* A bundle leaves the router: it must be one its receiver accepts (a
 * rank: every message for that rank; a peer: for ranks of its node), and
 * every message is recorded. */
oc_status_t oc__tr_send(oc_tr_ep_t *ep, unsigned id, const void *buf,
                       size_t len, oc_tr_op_t *op)
{
    oc_wire_check_t chk = {RK_JOB, RK_RANKS, OC_WIRE_RANK_NONE,
                           OC_WIRE_RANK_NONE, 0};
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t m;

    CHECK(id == OC_AM_BUNDLE);
    if (ep->kind == 0) {
        CHECK(op->token == 0); /* to a rank: no sender token */
        chk.dst = ep->id;
        rk.bundles_to_rank[ep->id]++;
    } else {
        CHECK(op->token == RK_PEER_SEND);
        rk.bundles_to_peer++;
    }
    if (oc__wire_validate(buf, len, &chk, &h) != OC_OK) {
        CHECK(!"a bundle its receiver refuses");
        return OC_OK;
    }
    CHECK((h.flags & OC_WIRE_F_STREAM) == 0);
    if (h.flags & OC_WIRE_F_FIXED)
        rk.fixed_bundles++;
    if (h.flags & OC_WIRE_F_SRCCOL) {
        CHECK(ep->kind == 0); /* source columns go to ranks only */
        rk.srccol_bundles++;
    }
    if (h.flags & OC_WIRE_F_RUNS) {
        CHECK(ep->kind == 1); /* runs go to peers only */
        rk.runs_bundles++;
    }
    oc__wire_iter_init(&it, buf, &h);
    while (oc__wire_iter_next(&it, &m)) {
        rk_rec_t *x;
        if (rk.nrecs == RK_MAX_RECS) {
            CHECK(rk.nrecs < RK_MAX_RECS);
            break;
        }
        x = &rk.recs[rk.nrecs++];
        x->peer = ep->kind == 1;
        x->ep_id = ep->id;
        x->bundle = rk.nbundles;
        x->dst = m.dst;
        x->src = m.src;
        x->len = m.len;
        x->v = 0;
        memcpy(&x->v, m.payload, m.len < 8 ? m.len : 8);
        for (uint32_t i = 8; i < m.len; i++) /* the payload whole */
            CHECK(m.payload[i] == rk_tail(x->v, i));
    }
    rk.nbundles++;
    if (!rk.async)
        return OC_OK;
    if (rk.nops == RK_MAX_OPS) {
        CHECK(rk.nops < RK_MAX_OPS);
        return OC_OK;
    }
    rk.ops[rk.nops++] = op;
    return OC_INPROGRESS;
}

oc_status_t oc__tr_send_small(oc_tr_ep_t *ep, unsigned id, uint64_t token,
                             const void *buf, size_t len)
{
    oc_am_credit_t m;
    CHECK(id == OC_AM_CREDIT);
    CHECK(len == sizeof(m));
    memcpy(&m, buf, sizeof(m));
    CHECK(m.magic == OC_AM_CREDIT_MAGIC);
    if (rk.fail_small)
        return OC_ERR_NO_RESOURCE;
    if (ep->kind == 0) {
        CHECK(token == 0);
        rk.credits_to_rank[ep->id] += m.credits;
    } else {
        CHECK(token == RK_PEER_SEND);
        rk.credits_to_peer += m.credits;
    }
    return OC_OK;
}

void rk_complete(void)
{
    uint32_t n = rk.nops;
    rk.nops = 0;
    for (uint32_t i = 0; i < n; i++)
        rk.ops[i]->cb(rk.ops[i], OC_OK);
}

/* ---- the collectives: not this test's ---------------------------------- */

void oc__rcoll_recv(void *arg, uint64_t token, void *data, size_t len)
{
    (void)arg; (void)token; (void)data; (void)len;
}

int oc__rcoll_progress(oc_router_t *r)
{
    (void)r;
    return 0;
}

void oc__rcoll_abort(oc_router_t *r, uint32_t job, uint32_t rank)
{
    (void)r;
    rk.coll_aborts++;
    rk.abort_job = job;
    rk.abort_rank = rank;
}

void oc__rcoll_fini(oc_router_t *r)
{
    (void)r;
}

void oc__rcoll_job_gone(oc_router_t *r, uint32_t job)
{
    (void)r;
    (void)job;
}

void oc__rcma_rank_init(oc_router_t *r, lrank_t *l, uint32_t pid)
{
    (void)r;
    l->pid = pid;
    l->pidfd = -1;
}

void oc__rcma_rank_fini(lrank_t *l)
{
    (void)l;
}

/* ---- the fixture -------------------------------------------------------- */

rk_fix_t *rk_setup(void)
{
    oc_router_params_t p;
    oc_job_map_t *map;
    rk_fix_t *f = calloc(1, sizeof(*f));
    uint8_t a[8];

    assert_non_null(f);
    memset(&rk, 0, sizeof(rk));
    memset(&p, 0, sizeof(p));
    p.node = 0;
    p.nnodes = 2;
    p.bundle_size = RK_BUNDLE;
    p.buffers = 64;
    p.flush_timeout_us = 1000000000u; /* never by time: rk_turn flushes */
    p.max_inflight = RK_INFLIGHT;
    p.nthreads = 1;
    assert_int_equal(oc__router_create(&p, &f->r), OC_OK);
    assert_non_null(map = oc__job_map_new(RK_JOB, RK_RANKS, 2));
    for (uint32_t i = RK_LOCAL; i < RK_RANKS; i++)
        map->node_of[i] = 1;
    rk_addr(1, 1, a);
    assert_int_equal(oc__router_add_peer(f->r, 1, RK_PEER_SEND, RK_PEER_RECV,
                                        a, 8), OC_OK);
    assert_int_equal(oc__router_add_job(f->r, map), OC_OK);
    oc__job_map_put(map); /* the router's reference stays */
    for (uint32_t i = 0; i < RK_LOCAL; i++) {
        rk_addr(0, i, a);
        assert_int_equal(oc__router_add_rank(f->r, rk_tok(i), RK_JOB, i, a, 8,
                                            0, NULL, 0), OC_OK);
    }
    oc__router_apply_commands(f->r);
    return f;
}

void rk_teardown(rk_fix_t *f)
{
    rk_complete();
    oc__router_destroy(f->r);
    assert_int_equal(rk.bad, 0);
    assert_int_equal(rk.eps_live, 0);
    assert_int_equal(rk.released, rk.fed); /* every receive given back */
    free(f);
}

void rk_feed(rk_fix_t *f, uint64_t token, const void *data, size_t len)
{
    void *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, data, len);
    rk.fed++;
    oc__router_bundle_recv(f->r, token, copy, len);
}

uint32_t rk_turn(rk_fix_t *f, int flush)
{
    uint32_t done;
    if (atomic_load(&f->r->cmd_pending))
        oc__router_apply_commands(f->r);
    done = oc__router_route_all(f->r);
    if (flush)
        oc__eng_flush_dirty(f->r->eng, OC_ENG_FLUSH_EXPLICIT, 0);
    oc__router_send_credits(f->r);
    assert_int_equal(rk.bad, 0);
    if (!rk.peer_withholds && rk.bundles_to_peer > rk.peer_credited) {
        oc_am_credit_t m = {OC_AM_CREDIT_MAGIC,
                            rk.bundles_to_peer - rk.peer_credited};
        rk.peer_credited = rk.bundles_to_peer;
        oc__router_credit_recv(f->r, RK_PEER_RECV, &m, sizeof(m));
    }
    return done;
}

/* ---- bundle builders ---------------------------------------------------- */

static uint8_t *payload(uint8_t *p, uint64_t v, uint32_t len)
{
    uint8_t tmp[256];
    assert_true(len >= 8 && len <= sizeof(tmp));
    memcpy(tmp, &v, 8);
    for (uint32_t i = 8; i < len; i++)
        tmp[i] = rk_tail(v, i);
    return oc__wire_put_item(p, tmp, len);
}

static uint8_t *finish(uint8_t *b, uint8_t *end, oc_wire_hdr_t *h,
                       size_t *len_out)
{
    h->job = RK_JOB;
    h->length = (uint32_t)(end - b);
    oc__wire_hdr_write(b, h);
    *len_out = h->length;
    return b;
}

uint8_t *rk_row(uint32_t src, uint32_t n, const uint32_t *dst,
                const uint64_t *vals, uint32_t len, size_t *len_out)
{
    uint8_t *b = calloc(1, OC_WIRE_HDR_LEN + (size_t)n * (8 + 256));
    uint8_t *p, tmp[256];
    oc_wire_hdr_t h;

    assert_non_null(b);
    memset(&h, 0, sizeof(h));
    h.flags = OC_WIRE_F_STREAM;
    h.count = n;
    h.src = src;
    h.dst = OC_WIRE_RANK_NONE;
    p = b + OC_WIRE_HDR_LEN;
    for (uint32_t k = 0; k < n; k++) {
        payload(tmp, vals[k], len);
        p = oc__wire_put_msg(p, dst[k], src, tmp, len);
    }
    return finish(b, p, &h, len_out);
}

uint8_t *rk_col(uint32_t src, uint32_t n, const uint32_t *dst,
                const uint64_t *vals, uint32_t len, size_t *len_out)
{
    uint8_t *b = calloc(1, OC_WIRE_HDR_LEN + oc__wire_col_dst_bytes(n) +
                               (size_t)n * oc__wire_pad8(len));
    uint8_t *p;
    oc_wire_hdr_t h;

    assert_non_null(b);
    memset(&h, 0, sizeof(h));
    h.flags = OC_WIRE_F_STREAM | OC_WIRE_F_FIXED;
    h.item_size = (uint16_t)len;
    h.count = n;
    h.src = src;
    h.dst = OC_WIRE_RANK_NONE;
    p = b + OC_WIRE_HDR_LEN;
    for (uint32_t k = 0; k < n; k++)
        oc__store_le32(p + 4 * (size_t)k, dst[k]);
    p += oc__wire_col_dst_bytes(n);
    for (uint32_t k = 0; k < n; k++)
        p = payload(p, vals[k], len);
    return finish(b, p, &h, len_out);
}

uint8_t *rk_fixed(uint32_t src, uint32_t dst, uint32_t n,
                  const uint64_t *vals, uint32_t len, size_t *len_out)
{
    uint8_t *b = calloc(1, OC_WIRE_HDR_LEN + (size_t)n * oc__wire_pad8(len));
    uint8_t *p;
    oc_wire_hdr_t h;

    assert_non_null(b);
    memset(&h, 0, sizeof(h));
    h.flags = OC_WIRE_F_FIXED;
    h.item_size = (uint16_t)len;
    h.count = n;
    h.src = src;
    h.dst = dst;
    p = b + OC_WIRE_HDR_LEN;
    for (uint32_t k = 0; k < n; k++)
        p = payload(p, vals[k], len);
    return finish(b, p, &h, len_out);
}

uint8_t *rk_mixed(uint32_t job, uint32_t n, const uint32_t *src,
                  const uint32_t *dst, const uint64_t *vals, size_t *len_out)
{
    uint8_t *b = calloc(1, OC_WIRE_HDR_LEN + (size_t)n * 16);
    uint8_t *p;
    oc_wire_hdr_t h;

    assert_non_null(b);
    memset(&h, 0, sizeof(h));
    h.count = n;
    h.src = OC_WIRE_RANK_NONE;
    h.dst = OC_WIRE_RANK_NONE;
    h.src_hop = 1;
    p = b + OC_WIRE_HDR_LEN;
    for (uint32_t k = 0; k < n; k++)
        p = oc__wire_put_msg(p, dst[k], src[k], &vals[k], 8);
    finish(b, p, &h, len_out);
    h.job = job; /* a peer's bundle may name another job */
    oc__wire_hdr_write(b, &h);
    return b;
}
