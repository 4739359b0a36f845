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
    uint64_t  bad; /* malformed or out-of-range messages */
} hist_t;

static oc_status_t hist_handler(void *arg, uint32_t src, const void *msg,
                                size_t len)
{
    hist_t *h = arg;
    uint64_t idx;
    if (__builtin_expect(len != sizeof idx, 0)) {
        h->bad++;
        return OC_OK;
    }
    memcpy(&idx, msg, sizeof idx);
    if (__builtin_expect(idx >= h->n, 0)) {
        h->bad++;
        return OC_OK;
    }
    h->table[idx]++;
    return OC_OK;
}

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

    oc_context_t *ctx = oc_app_oc_init(&m, hist_handler, &h);
    const uint32_t P = (uint32_t)m.size;
    const uint64_t T = o.table, N = o.updates, key = oc_app_stream_key(o.seed, (uint64_t)m.rank);
    const uint64_t interval = o.poll_interval;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = oc_app_now();
    uint64_t countdown = interval;
    for (uint64_t i = 0; i < N; i++) {
        uint32_t dest;
        uint64_t idx;
        oc_app_slot(oc_app_hash_k(key, i), P, T, &dest, &idx);
        oc_app_send(&m, ctx, dest, &idx, sizeof idx);
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
        hist_json(&j, &m, &o, oc_placement(ctx), seconds);
    oc_app_json_counters(&m, ctx, &j, &sum);

    bool verified = hist_verify(&m, &o, h.table, h.bad);
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
    oc_app_mpi_free(req, 1);
    return oc_app_mpi_finish(verified);
}
