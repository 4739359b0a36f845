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
    uint64_t        served;     /* requests answered: 8-byte table reads */
    uint64_t        bad;        /* malformed or out-of-range messages */
    oc_status_t     send_error; /* first failed reply send, if any */
} ig_t;

/* Replies to one run of requests are built here and sent with one call. */
#define REPLY_BURST 256

/* One call per run: a run of requests (8 bytes) from one rank is answered
 * with one run of replies (16 bytes) to it; a run of replies is stored. */
static size_t ig_handler(void *arg, uint32_t src, const void *msgs,
                         size_t len, size_t n)
{
    ig_t *g = arg;
    const uint8_t *p = msgs;

    if (len == 8) {
        uint64_t rep[REPLY_BURST][2];
        size_t done = 0;
        while (done < n) {
            size_t k = n - done < REPLY_BURST ? n - done : REPLY_BURST, m = 0;
            for (size_t i = 0; i < k; i++) {
                uint64_t r;
                memcpy(&r, p + 8 * (done + i), sizeof r);
                uint64_t idx = r & 0xffffffffu;
                if (__builtin_expect(idx >= g->T, 0)) {
                    g->bad++;
                    continue;
                }
                rep[m][0] = r >> 32;
                rep[m][1] = g->table[idx];
                m++;
            }
            g->served += m;
            size_t sent = oc_send_many(g->ctx, src, rep, sizeof rep[0], m);
            if (__builtin_expect(sent < m, 0)) {
                /* replies never lack buffers (the runtime's reserve); any
                 * other refusal is an error, reported after the run */
                oc_status_t st = oc_send(g->ctx, src, rep[sent], sizeof rep[0]);
                if (st != OC_OK && g->send_error == OC_OK)
                    g->send_error = st;
            }
            done += k;
        }
        return n;
    }
    if (len == 16) {
        /* counts in locals: a store through tgt may alias *g, which would
         * chain every iteration on the previous one's counter update */
        uint64_t *const tgt = g->tgt;
        const uint64_t N = g->N;
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t rep[2];
            memcpy(rep, p + 16 * i, sizeof rep);
            if (__builtin_expect(rep[0] >= N, 0)) {
                bad++;
                continue;
            }
            tgt[rep[0]] = rep[1];
        }
        g->bad += bad;
        g->replies += n - bad;
        return n;
    }
    g->bad += n;
    return n;
}

/* Requests are generated and sent in bursts of this many. */
#define BURST 256

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
    oc_context_t *ctx = oc_app_oc_init_burst(&m, ig_handler, &g);
    g.ctx = ctx;
    const uint32_t P = (uint32_t)m.size;
    const uint64_t T = o.table, N = o.requests;
    const uint64_t key = oc_app_stream_key(o.seed, (uint64_t)m.rank);
    const uint64_t interval = o.poll_interval;

    oc_app_perf_t perf;
    MPI_Barrier(MPI_COMM_WORLD);
    oc_app_perf_start(&perf);
    double t0 = oc_app_now();
    uint64_t since_poll = 0;
    for (uint64_t i = 0; i < N; i += BURST) {
        uint32_t dests[BURST];
        uint64_t r[BURST];
        size_t n = N - i < BURST ? (size_t)(N - i) : BURST;
        for (size_t k = 0; k < n; k++) {
            uint64_t idx;
            oc_app_slot(oc_app_hash_k(key, i + k), P, T, &dests[k], &idx);
            r[k] = idx | ((i + k) << 32);
        }
        oc_app_send_burst(&m, ctx, dests, r, sizeof r[0], n);
        since_poll += n;
        if (since_poll >= interval) {
            since_poll = 0;
            oc_app_poll(&m, ctx);
        }
    }
    oc_app_quiesce(&m, ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    oc_app_perf_stop(&perf);
    /* a table read per request served, a target write per reply stored */
    uint64_t local_bytes = oc_app_mpi_sum(8 * (g.served + g.replies));

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0)
        ig_json(&j, &m, &o, oc_placement(ctx), seconds);
    oc_app_json_counters(&m, ctx, &j, &sum);
    oc_app_mpi_json_perf(&m, &perf, &j);
    if (m.rank == 0)
        oc_app_json_u64(&j, "local_bytes", local_bytes);

    if (g.send_error != OC_OK) {
        oc_app_mpi_err(&m, "a reply failed to send: %s",
                       oc_status_string(g.send_error));
        g.bad++;
    }
    bool ok = ig_verify(&m, &o, tgt, g.replies, g.bad);
    if (m.rank == 0)
        oc_app_json_u64(&j, "poll_interval", interval);
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    oc_app_mpi_free(req, 2);
    return oc_app_mpi_finish(verified);
}
