/*
 * tp_common.c — flags, CSR build and verification shared by the offcore and
 * MPI sparse transposes (see tp_common.h).
 */
#include "tp_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS (UINT64_C(1) << 32)

void tp_parse(tp_opts_t *o, int argc, char **argv, const char *prog,
              bool offcore)
{
    *o = (tp_opts_t){.rows = 1000000, .degree = 16, .seed = 1,
                     .poll_interval = 1024};
    oc_app_flag_t flags[5] = {
        {"rows", OC_APP_FLAG_SIZE, &o->rows, 1, MAX_ROWS,
         "matrix rows per rank (the matrix is square: ranks x rows)"},
        {"degree", OC_APP_FLAG_U64, &o->degree, 0, OC_GRAPH_MAX_DEGREE,
         "mean nonzeros per row (Poisson)"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX,
         "seed of the matrix"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: change one value of the last rank's result after the run, to"
         " check that verification fails (exit 1)"},
    };
    size_t nflags = 4; /* the offcore version adds a fifth */
    if (offcore)
        flags[nflags++] = (oc_app_flag_t){
            "poll-interval", OC_APP_FLAG_SIZE, &o->poll_interval, 1,
            UINT64_C(1) << 27, "oc_poll() once every this many sends"};
    oc_app_parse_flags(argc, argv, prog,
                       offcore
                           ? "Sparse matrix transpose over liboffcore: every"
                             " nonzero is a 16-byte message\nto its column's"
                             " owner; verified against a serial transpose."
                           : "Sparse matrix transpose over plain MPI: nonzeros"
                             " bucketed by column owner and\nexchanged with one"
                             " MPI_Alltoallv; verified against a serial"
                             " transpose.",
                       flags, nflags);
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

/* Build the CSR of the transposed rows from the received nonzeros:
 * off[R + 1], ent[n].  Returns the bytes of memory it read and wrote. */
uint64_t tp_build(const tp_msg_t *rx, size_t n, uint64_t R, uint64_t *off,
                  tp_ent_t *ent)
{
    memset(off, 0, (R + 1) * sizeof *off);
    for (size_t k = 0; k < n; k++)
        off[rx[k].col + 1]++;
    for (uint64_t c = 0; c < R; c++)
        off[c + 1] += off[c];
    uint64_t *pos = off; /* reuse: pos[c] runs from off[c] to off[c + 1] */
    for (size_t k = 0; k < n; k++) {
        const tp_msg_t *m = &rx[k];
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
    return (uint64_t)n * (16 + 16 + 16 + 16 + 16 + 32) + R * (16 + 16);
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

bool tp_check(const oc_app_mpi_t *m, const tp_opts_t *o,
              const oc_graph_er_t *g, const uint64_t *off, const tp_ent_t *ent,
              size_t n)
{
    const uint64_t R = o->rows, me = (uint64_t)m->rank;
    bool ok = true;
    uint64_t *roff;
    tp_ent_t *rent;
    uint64_t rn;
    if (!tp_reference(o, m, g, &roff, &rent, &rn)) {
        oc_app_mpi_err(m, "cannot allocate the serial reference");
        ok = false;
    } else {
        if (rn != n) {
            oc_app_mpi_err(m, "received %zu nonzeros, the serial transpose "
                           "has %" PRIu64, n, rn);
            ok = false;
        } else {
            uint64_t nbad = 0, first = 0;
            for (uint64_t c = 0; c <= R; c++)
                if (off[c] != roff[c] && nbad++ == 0)
                    first = c;
            if (nbad) {
                oc_app_mpi_err(m, "%" PRIu64 " row lengths differ from the "
                               "serial transpose; first at row %" PRIu64,
                               nbad, me * R + first);
                ok = false;
            }
            for (uint64_t k = 0; ok && k < rn; k++) {
                if (ent[k].row != rent[k].row || ent[k].val != rent[k].val) {
                    /* find the transposed row of entry k, for the message */
                    uint64_t c = 0;
                    while (c < R && roff[c + 1] <= k)
                        c++;
                    oc_app_mpi_err(m, "first wrong entry: row %" PRIu64
                                   " of the transpose, entry %" PRIu64
                                   ": expected (%" PRIu64 ", %" PRIu32
                                   "), got (%" PRIu64 ", %" PRIu32 ")",
                                   me * R + c, k - roff[c],
                                   rent[k].row, rent[k].val, ent[k].row,
                                   ent[k].val);
                    ok = false;
                }
            }
        }
        free(roff);
        free(rent);
    }
    return ok;
}
