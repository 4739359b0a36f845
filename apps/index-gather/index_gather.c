/*
 * index_gather.c — distributed gather over liboffcore (binary
 * `index-gather`).
 *
 * Each rank reads N random slots of a table distributed over all ranks.
 * A request is 8 bytes to the slot's owner: local index in the low 32 bits,
 * request id in the high 32.  The owner's handler replies from inside the
 * handler (the runtime guarantees such sends find a buffer) with 16 bytes:
 * request id, value.  The requester's handler stores the value.  Requests
 * and replies are told apart by their length.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "app_oc.h"
#include "ig_common.h"

typedef struct {
    oc_context_t   *ctx;
    const uint64_t *table;
    uint64_t        T;
    uint64_t       *tgt;
    uint64_t        N;
    uint64_t        replies;
    uint64_t        bad;        /* malformed or out-of-range messages */
    oc_status_t     send_error; /* first failed reply send, if any */
} ig_t;

static oc_status_t ig_handler(void *arg, uint32_t src, const void *msg,
                              size_t len)
{
    ig_t *g = arg;
    if (len == 8) {
        uint64_t r;
        memcpy(&r, msg, sizeof r);
        uint64_t idx = r & 0xffffffffu;
        if (__builtin_expect(idx >= g->T, 0)) {
            g->bad++;
            return OC_OK;
        }
        uint64_t rep[2] = {r >> 32, g->table[idx]};
        oc_status_t st = oc_send(g->ctx, src, rep, sizeof rep);
        if (__builtin_expect(st != OC_OK, 0)) {
            if (st == OC_ERR_NO_RESOURCE)
                return st; /* no side effect yet: redeliver later */
            if (g->send_error == OC_OK)
                g->send_error = st;
        }
        return OC_OK;
    }
    if (len == 16) {
        uint64_t rep[2];
        memcpy(rep, msg, sizeof rep);
        if (__builtin_expect(rep[0] >= g->N, 0)) {
            g->bad++;
            return OC_OK;
        }
        g->tgt[rep[0]] = rep[1];
        g->replies++;
        return OC_OK;
    }
    g->bad++;
    return OC_OK;
}

int main(int argc, char **argv)
{
    static const char prog[] = "index-gather";
    ig_opts_t o;
    ig_parse(&o, argc, argv, prog, true);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);

    uint64_t *table, *tgt;
    oc_app_alloc_t req[] = {{"table", o.table, &table},
                            {"targets", o.requests, &tgt}};
    if (!oc_app_mpi_alloc(&m, req, 2))
        return oc_app_mpi_finish(false);
    ig_fill(&m, &o, table);

    ig_t g = {.table = table, .T = o.table, .tgt = tgt, .N = o.requests};
    oc_context_t *ctx = oc_app_oc_init(&m, ig_handler, &g);
    g.ctx = ctx;
    const uint32_t P = (uint32_t)m.size;
    const uint64_t T = o.table, N = o.requests;
    const uint64_t key = oc_app_stream_key(o.seed, (uint64_t)m.rank);
    const uint64_t interval = o.poll_interval;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = oc_app_now();
    uint64_t countdown = interval;
    for (uint64_t i = 0; i < N; i++) {
        uint32_t dest;
        uint64_t idx;
        oc_app_slot(oc_app_hash_k(key, i), P, T, &dest, &idx);
        uint64_t r = idx | (i << 32);
        oc_app_send(&m, ctx, dest, &r, sizeof r);
        if (--countdown == 0) {
            countdown = interval;
            oc_app_poll(&m, ctx);
        }
    }
    oc_app_quiesce(&m, ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0)
        ig_json(&j, &m, &o, oc_placement(ctx), seconds);
    oc_app_json_counters(&m, ctx, &j, &sum);

    if (g.send_error != OC_OK) {
        oc_app_mpi_err(&m, "a reply failed to send: %s",
                       oc_status_string(g.send_error));
        g.bad++;
    }
    bool verified = ig_verify(&m, &o, tgt, g.replies, g.bad);
    if (m.rank == 0) {
        oc_app_json_u64(&j, "poll_interval", interval);
        oc_app_json_bool(&j, "verified", verified);
        oc_app_json_print(&j);
    }

    oc_status_t st = oc_finalize(ctx);
    if (st != OC_OK) {
        oc_app_mpi_err(&m, "oc_finalize failed: %s", oc_status_string(st));
        verified = false;
    }
    oc_app_mpi_free(req, 2);
    return oc_app_mpi_finish(verified);
}
