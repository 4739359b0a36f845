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

#define MAX_ROWS (UINT64_C(1) << 32)

typedef struct {
    uint64_t rows;    /* per rank */
    uint64_t degree;  /* mean nonzeros per row */
    uint64_t seed;
    uint64_t poll_interval;
    uint64_t corrupt;
} tp_opts_t;

/* One nonzero on its way to its column's owner. */
typedef struct {
    uint64_t row;  /* global row index */
    uint32_t col;  /* column, local to the receiving rank */
    uint32_t val;
} tp_msg_t;

/* One entry of a transposed row: the original row and the value. */
typedef struct {
    uint64_t row;
    uint32_t val;
    uint32_t pad;
} tp_ent_t;

typedef struct {
    tp_msg_t *rx;     /* pre-faulted (oc_app_alloc_table) unless grown */
    size_t    n, cap, cap0;
    uint64_t  R;      /* columns per rank, for the range check */
    uint64_t  bad;    /* malformed messages */
    int       oom;
} tp_t;

static void tp_parse(tp_opts_t *o, int argc, char **argv, const char *prog)
{
    *o = (tp_opts_t){.rows = 1000000, .degree = 16, .seed = 1,
                     .poll_interval = 1024};
    oc_app_flag_t flags[] = {
        {"rows", OC_APP_FLAG_SIZE, &o->rows, 1, MAX_ROWS,
         "matrix rows per rank (the matrix is square: ranks x rows)"},
        {"degree", OC_APP_FLAG_U64, &o->degree, 0, OC_GRAPH_MAX_DEGREE,
         "mean nonzeros per row (Poisson)"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX,
         "seed of the matrix"},
        {"poll-interval", OC_APP_FLAG_SIZE, &o->poll_interval, 1,
         UINT64_C(1) << 27, "oc_poll() once every this many sends"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: change one value of the last rank's result after the run, to"
         " check that verification fails (exit 1)"},
    };
    oc_app_parse_flags(argc, argv, prog,
                       "Sparse matrix transpose over liboffcore: every nonzero is"
                       " a 16-byte message\nto its column's owner; the result is"
                       " verified against a serial transpose.",
                       flags, sizeof flags / sizeof flags[0]);
}

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

static inline int ent_less(const tp_ent_t *a, const tp_ent_t *b)
{
    return a->row < b->row || (a->row == b->row && a->val < b->val);
}

static int ent_cmp(const void *a, const void *b)
{
    const tp_ent_t *x = a, *y = b;
    return ent_less(x, y) ? -1 : ent_less(y, x) ? 1 : 0;
}

/* Sort one row: insertion sort for the short rows (most of them). */
static void sort_row(tp_ent_t *e, size_t n)
{
    if (n > 32) {
        qsort(e, n, sizeof *e, ent_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        tp_ent_t x = e[i];
        size_t k = i;
        while (k > 0 && ent_less(&x, &e[k - 1])) {
            e[k] = e[k - 1];
            k--;
        }
        e[k] = x;
    }
}

/* The value of nonzero @p k of the row with stream key @p key. */
static inline uint32_t tp_value(uint64_t key, uint32_t k)
{
    return (uint32_t)oc_app_mix64(oc_graph_er_word(key, k) ^ OC_APP_GOLDEN);
}

/* Build the CSR of the transposed rows from the received nonzeros:
 * off[R + 1], ent[n].  Returns the bytes of memory it read and wrote. */
static uint64_t tp_build(const tp_t *t, uint64_t R, uint64_t *off,
                         tp_ent_t *ent)
{
    memset(off, 0, (R + 1) * sizeof *off);
    for (size_t k = 0; k < t->n; k++)
        off[t->rx[k].col + 1]++;
    for (uint64_t c = 0; c < R; c++)
        off[c + 1] += off[c];
    uint64_t *pos = off; /* reuse: pos[c] runs from off[c] to off[c + 1] */
    for (size_t k = 0; k < t->n; k++) {
        const tp_msg_t *m = &t->rx[k];
        ent[pos[m->col]++] = (tp_ent_t){m->row, m->val, 0};
    }
    /* pos[c] now holds off[c + 1]: shift back */
    memmove(off + 1, off, R * sizeof *off);
    off[0] = 0;
    for (uint64_t c = 0; c < R; c++)
        sort_row(ent + off[c], off[c + 1] - off[c]);
    /* counting pass (16 B read, 8 B counter r/w), prefix (16 B per row),
     * placement (16 B read, 8 B r/w, 16 B written), the shift and the
     * sort (about 2 x 16 B per entry) */
    return (uint64_t)t->n * (16 + 16 + 16 + 16 + 16 + 32) + R * (16 + 16);
}

/* The serial reference: this rank's block of the transpose, from the
 * regenerated matrix.  Rows are visited in increasing order, so each
 * transposed row comes out sorted by row; entries of one row that fall
 * in the same column are ordered by value like the result's.
 * @return false when it cannot allocate. */
static bool tp_reference(const tp_opts_t *o, const oc_app_mpi_t *m,
                         const oc_graph_er_t *g, uint64_t **off_p,
                         tp_ent_t **ent_p, uint64_t *n_p)
{
    const uint32_t P = (uint32_t)m->size, me = (uint32_t)m->rank;
    const uint64_t R = o->rows, N = (uint64_t)P * R;
    uint64_t *off = calloc(R + 1, sizeof *off);
    if (off == NULL)
        return false;
    for (uint64_t i = 0; i < N; i++) {
        uint64_t key = oc_graph_er_key(g, i);
        uint32_t deg = oc_graph_er_degree(g, key);
        for (uint32_t k = 0; k < deg; k++) {
            uint32_t owner;
            uint64_t col;
            oc_graph_er_nbr(g, key, k, &owner, &col);
            off[col + 1] += owner == me;
        }
    }
    for (uint64_t c = 0; c < R; c++)
        off[c + 1] += off[c];
    uint64_t n = off[R];
    tp_ent_t *ent = malloc((n ? n : 1) * sizeof *ent);
    uint64_t *pos = malloc(R * sizeof *pos);
    if (ent == NULL || pos == NULL) {
        free(off);
        free(ent);
        free(pos);
        return false;
    }
    memcpy(pos, off, R * sizeof *pos);
    for (uint64_t i = 0; i < N; i++) {
        uint64_t key = oc_graph_er_key(g, i);
        uint32_t deg = oc_graph_er_degree(g, key);
        for (uint32_t k = 0; k < deg; k++) {
            uint32_t owner;
            uint64_t col;
            oc_graph_er_nbr(g, key, k, &owner, &col);
            if (owner != me)
                continue;
            tp_ent_t *e = &ent[pos[col]++];
            *e = (tp_ent_t){i, tp_value(key, k), 0};
            /* same row twice in this column: keep value order */
            while (e > ent + off[col] && e[-1].row == e->row &&
                   e[-1].val > e->val) {
                tp_ent_t x = e[-1];
                e[-1] = e[0];
                e[0] = x;
                e--;
            }
        }
    }
    free(pos);
    *off_p = off;
    *ent_p = ent;
    *n_p = n;
    return true;
}

int main(int argc, char **argv)
{
    static const char prog[] = "transpose";
    tp_opts_t o;
    tp_parse(&o, argc, argv, prog);

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
    uint64_t local = tp_build(&t, R, off, ent) +
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
    uint64_t *roff;
    tp_ent_t *rent;
    uint64_t rn;
    if (!tp_reference(&o, &m, &g, &roff, &rent, &rn)) {
        oc_app_mpi_err(&m, "cannot allocate the serial reference");
        ok = false;
    } else {
        if (rn != t.n) {
            oc_app_mpi_err(&m, "received %zu nonzeros, the serial transpose "
                           "has %" PRIu64, t.n, rn);
            ok = false;
        } else {
            uint64_t nbad = 0, first = 0;
            for (uint64_t c = 0; c <= R; c++)
                if (off[c] != roff[c] && nbad++ == 0)
                    first = c;
            if (nbad) {
                oc_app_mpi_err(&m, "%" PRIu64 " row lengths differ from the "
                               "serial transpose; first at row %" PRIu64,
                               nbad, (uint64_t)me * R + first);
                ok = false;
            }
            for (uint64_t k = 0; ok && k < rn; k++) {
                if (ent[k].row != rent[k].row || ent[k].val != rent[k].val) {
                    /* find the transposed row of entry k, for the message */
                    uint64_t c = 0;
                    while (c < R && roff[c + 1] <= k)
                        c++;
                    oc_app_mpi_err(&m, "first wrong entry: row %" PRIu64
                                   " of the transpose, entry %" PRIu64
                                   ": expected (%" PRIu64 ", %" PRIu32
                                   "), got (%" PRIu64 ", %" PRIu32 ")",
                                   (uint64_t)me * R + c, k - roff[c],
                                   rent[k].row, rent[k].val, ent[k].row,
                                   ent[k].val);
                    ok = false;
                }
            }
        }
        free(roff);
        free(rent);
    }
    if (m.rank == 0)
        oc_app_json_u64(&j, "local_bytes", local_bytes);
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    tp_free(ent, t.n > t.cap0 ? 0 : t.cap0, t.cap0);
    oc_app_free_table(off, R + 1);
    tp_free(t.rx, t.cap, t.cap0);
    return oc_app_mpi_finish(verified);
}
