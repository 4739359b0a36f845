/*
 * transpose.c — distributed sparse matrix transpose over liboffcore (binary
 * `transpose`).
 *
 * A square matrix of P x R rows is distributed by rows, R per rank, with an
 * Erdős–Rényi pattern (apps/common/graph.h: Poisson(d) nonzeros per row at
 * uniform columns) and 32-bit values.  Each rank sends every nonzero (i, j,
 * v) of its rows as a 16-byte message to the owner of column j, which
 * appends it; after oc_quiesce each rank builds its rows of the transpose
 * in CSR (counting sort by column, then each row sorted by (i, v)).  Both
 * the exchange and the CSR build are timed: they are the transpose.
 *
 * Verification, exact: every rank regenerates the whole matrix and builds
 * its block of the transpose serially (rows visited in increasing i, so
 * each transposed row comes out sorted), then compares every entry.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "app_oc.h"
#include "graph.h"
#include "tp_common.h"


typedef struct {
    tp_msg_t *rx;     /* pre-faulted (oc_app_alloc_table) unless grown */
    size_t    n, cap, cap0;
    uint64_t  R;      /* columns per rank, for the range check */
    uint64_t  bad;    /* malformed messages */
    int       oom;
} tp_t;

/* Arrays of 16-byte entries: pre-faulted, on huge pages where possible,
 * so that page faults do not land in the timed region. */
static void *tp_alloc(size_t n)
{
    return oc_app_alloc_table(2 * (uint64_t)(n ? n : 1));
}

/* Free what tp_alloc gave (@p n == @p n0) or malloc did (grown). */
static void tp_free(void *p, size_t n, size_t n0)
{
    if (n == n0)
        oc_app_free_table(p, 2 * (uint64_t)(n ? n : 1));
    else
        free(p);
}

/* Appends each run of nonzeros; the array grows by doubling (once per
 * burst at most, never per message). */
static size_t tp_handler(void *arg, uint32_t src, const void *msgs,
                         size_t len, size_t n)
{
    tp_t *t = arg;
    if (len != sizeof(tp_msg_t)) {
        t->bad += n;
        return n;
    }
    if (t->n + n > t->cap) {
        size_t ncap = t->cap ? t->cap : 1024;
        while (ncap < t->n + n)
            ncap *= 2;
        tp_msg_t *p = malloc(ncap * sizeof *p);
        if (p == NULL) {
            t->oom = 1;
            t->bad += n;
            return n;
        }
        memcpy(p, t->rx, t->n * sizeof *p);
        tp_free(t->rx, t->cap, t->cap0);
        t->rx = p;
        t->cap = ncap;
    }
    memcpy(t->rx + t->n, msgs, n * sizeof(tp_msg_t));
    t->n += n;
    return n;
}


int main(int argc, char **argv)
{
    static const char prog[] = "transpose";
    tp_opts_t o;
    tp_parse(&o, argc, argv, prog, true);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    const uint64_t R = o.rows;
    oc_graph_er_t g;
    oc_graph_er_init(&g, o.seed, P, R, (double)o.degree);

    /* Receive space for about the expected nonzeros (it grows if need
     * be), and the result's CSR once their number is known. */
    tp_t t = {.R = R};
    t.cap = t.cap0 = (size_t)(R * o.degree + R * o.degree / 8 + 1024);
    t.rx = tp_alloc(t.cap);
    tp_ent_t *ent = tp_alloc(t.cap);
    uint64_t *off = oc_app_alloc_table(R + 1);
    if (t.rx == NULL || ent == NULL || off == NULL)
        oc_app_mpi_die(&m, "cannot allocate %" PRIu64 " rows' receive space",
                       R);

    oc_context_t *ctx = oc_app_oc_init_burst(&m, tp_handler, &t);
    const uint64_t interval = o.poll_interval;

    oc_app_perf_t perf;
    MPI_Barrier(MPI_COMM_WORLD);
    oc_app_perf_start(&perf);
    double t0 = oc_app_now();
    oc_app_burst_t out;
    oc_app_burst_init(&out, &m, ctx, sizeof(tp_msg_t), interval);
    for (uint64_t il = 0; il < R; il++) {
        uint64_t i = (uint64_t)me * R + il;
        uint64_t key = oc_graph_er_key(&g, i);
        uint32_t deg = oc_graph_er_degree(&g, key);
        for (uint32_t k = 0; k < deg; k++) {
            uint32_t owner;
            uint64_t col;
            oc_graph_er_nbr(&g, key, k, &owner, &col);
            tp_msg_t msg = {i, (uint32_t)col, tp_value(key, k)};
            oc_app_burst_put(&out, owner, &msg);
        }
    }
    oc_app_burst_flush(&out);
    const uint64_t sent = out.sent;
    oc_app_quiesce(&m, ctx);
    if (t.n > t.cap0) { /* more than expected arrived: grow the result */
        tp_free(ent, t.cap0, t.cap0);
        ent = malloc(t.n * sizeof *ent);
        if (ent == NULL)
            oc_app_mpi_die(&m, "cannot allocate the result (%zu entries)", t.n);
    }
    uint64_t local = tp_build(t.rx, t.n, R, off, ent) +
                     sent * 16 /* messages built */ + t.n * 16 /* appended */;
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    oc_app_perf_stop(&perf);
    uint64_t nnz = oc_app_mpi_sum(sent), local_bytes = oc_app_mpi_sum(local);

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0) {
        oc_app_json_head(&j, &m, ctx);
        oc_app_json_u64(&j, "rows_per_rank", R);
        oc_app_json_u64(&j, "degree", o.degree);
        oc_app_json_u64(&j, "nonzeros", nnz);
        oc_app_json_u64(&j, "nonzeros_per_rank", nnz / P);
        oc_app_json_dbl(&j, "seconds", seconds);
        oc_app_json_dbl(&j, "rate", seconds > 0 ? (double)nnz / seconds : 0);
        oc_app_json_str(&j, "rate_unit", "nonzeros/s");
    }
    oc_app_json_counters(&m, ctx, &j, &sum);
    oc_app_mpi_json_perf(&m, &perf, &j);

    /* ---- verification (not timed) ---- */
    bool ok = true;
    if (t.bad != 0 || t.oom) {
        oc_app_mpi_err(&m, "%" PRIu64 " malformed messages%s", t.bad,
                       t.oom ? " (out of memory appending)" : "");
        ok = false;
    }
    if (o.corrupt && me == P - 1 && t.n > 0)
        ent[t.n / 2].val ^= 1;
    if (!tp_check(&m, &o, &g, off, ent, t.n))
        ok = false;
    if (m.rank == 0)
        oc_app_json_u64(&j, "local_bytes", local_bytes);
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    tp_free(ent, t.n > t.cap0 ? 0 : t.cap0, t.cap0);
    oc_app_free_table(off, R + 1);
    tp_free(t.rx, t.cap, t.cap0);
    return oc_app_mpi_finish(verified);
}
