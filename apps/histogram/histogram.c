/*
 * histogram.c — distributed histogram over liboffcore (binary `histogram`).
 *
 * Each rank owns T counters and sends N updates; an update is an 8-byte
 * message (the counter's local index) to the counter's owner, whose handler
 * increments it.  The runtime aggregates the messages; the application
 * only sends, polls now and then, and quiesces.  Compare with
 * histogram_mpi.c, which does the aggregation by hand.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "app_oc.h"
#include "hist_common.h"

typedef struct {
    uint64_t *table;
    uint64_t  n;
    uint64_t  bad;     /* malformed or out-of-range messages */
    uint64_t  applied; /* updates applied: each reads and writes 8 bytes */
} hist_t;

/* One call per run of updates: the loop over them is ours, tight. */
static size_t hist_handler(void *arg, uint32_t src, const void *msgs,
                           size_t len, size_t n)
{
    hist_t *h = arg;
    const uint8_t *p = msgs;
    uint64_t *table = h->table;
    const uint64_t T = h->n;
    if (__builtin_expect(len != sizeof(uint64_t), 0)) {
        h->bad += n;
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t idx;
        memcpy(&idx, p + 8 * i, sizeof idx);
        if (__builtin_expect(idx >= T, 0)) {
            h->bad++;
            continue;
        }
        table[idx]++;
    }
    h->applied += n;
    return n;
}

/* Updates are generated and sent in bursts of this many. */
#define BURST 256

int main(int argc, char **argv)
{
    static const char prog[] = "histogram";
    hist_opts_t o;
    hist_parse(&o, argc, argv, prog, true);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);

    hist_t h = {.n = o.table};
    oc_app_alloc_t req[] = {{"table", o.table, &h.table}};
    if (!oc_app_mpi_alloc(&m, req, 1))
        return oc_app_mpi_finish(false);

    oc_context_t *ctx = oc_app_oc_init_burst(&m, hist_handler, &h);
    const uint32_t P = (uint32_t)m.size;
    const uint64_t T = o.table, N = o.updates, key = oc_app_stream_key(o.seed, (uint64_t)m.rank);
    const uint64_t interval = o.poll_interval;

    oc_app_perf_t perf;
    MPI_Barrier(MPI_COMM_WORLD);
    oc_app_perf_start(&perf);
    double t0 = oc_app_now();
    uint64_t since_poll = 0;
    for (uint64_t i = 0; i < N; i += BURST) {
        uint32_t dests[BURST];
        uint64_t idx[BURST];
        size_t n = N - i < BURST ? (size_t)(N - i) : BURST;
        for (size_t k = 0; k < n; k++)
            oc_app_slot(oc_app_hash_k(key, i + k), P, T, &dests[k], &idx[k]);
        oc_app_send_burst(&m, ctx, dests, idx, sizeof idx[0], n);
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
    uint64_t local_bytes = oc_app_mpi_sum(16 * h.applied);

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0)
        hist_json(&j, &m, &o, oc_placement(ctx), seconds);
    oc_app_json_counters(&m, ctx, &j, &sum);
    oc_app_mpi_json_perf(&m, &perf, &j);
    if (m.rank == 0)
        oc_app_json_u64(&j, "local_bytes", local_bytes);

    bool ok = hist_verify(&m, &o, h.table, h.bad);
    if (m.rank == 0)
        oc_app_json_u64(&j, "poll_interval", interval);
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    oc_app_mpi_free(req, 1);
    return oc_app_mpi_finish(verified);
}
