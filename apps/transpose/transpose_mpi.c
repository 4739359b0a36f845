/*
 * transpose_mpi.c — the same sparse matrix transpose over plain MPI (binary
 * `transpose-mpi`), written the way users write it without an aggregation
 * library: generate this rank's nonzeros, bucket them by column owner
 * (counting sort), exchange the counts with MPI_Alltoall and the 16-byte
 * nonzeros with one MPI_Alltoallv, then build the transposed CSR exactly
 * as the offcore version does (tp_build).  Everything from generation to
 * the CSR is timed, as in the offcore version.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "app_mpi.h"
#include "graph.h"
#include "tp_common.h"

int main(int argc, char **argv)
{
    static const char prog[] = "transpose-mpi";
    tp_opts_t o;
    tp_parse(&o, argc, argv, prog, false);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    const uint64_t R = o.rows;
    oc_graph_er_t g;
    oc_graph_er_init(&g, o.seed, P, R, (double)o.degree);

    /* Space for about the expected nonzeros each way (grown if need be:
     * a Poisson row count rarely goes past 1/8 above its mean). */
    size_t cap = (size_t)(R * o.degree + R * o.degree / 8 + 1024);
    const size_t cap0 = cap;
    /* pre-faulted (huge pages where possible), as the offcore version's
     * buffers are, so that neither pays page faults in its timed region */
    tp_msg_t *gen = (tp_msg_t *)oc_app_alloc_table(2 * (uint64_t)cap);
    tp_ent_t *ent = (tp_ent_t *)oc_app_alloc_table(2 * (uint64_t)cap);
    uint32_t *owner = malloc(cap * sizeof *owner);
    size_t ecap = cap;
    uint64_t *off = malloc((R + 1) * sizeof *off);
    if (gen == NULL || ent == NULL || owner == NULL || off == NULL)
        oc_app_mpi_die(&m, "cannot allocate %" PRIu64 " rows' buffers", R);
    oc_app_a2a_t x;
    oc_app_a2a_init(&x, &m, sizeof(tp_msg_t), cap);
    for (size_t k = 0; k < cap; k++)
        owner[k] = 0; /* fault it in too */

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = oc_app_now();
    size_t n = 0;
    for (uint64_t il = 0; il < R; il++) {
        uint64_t i = (uint64_t)me * R + il;
        uint64_t key = oc_graph_er_key(&g, i);
        uint32_t deg = oc_graph_er_degree(&g, key);
        if (n + deg > cap) /* not seen: 1/8 above a Poisson total's mean */
            oc_app_mpi_die(&m, "more than %zu nonzeros on one rank", cap);
        for (uint32_t k = 0; k < deg; k++, n++) {
            uint64_t col;
            oc_graph_er_nbr(&g, key, k, &owner[n], &col);
            gen[n] = (tp_msg_t){i, (uint32_t)col, tp_value(key, k)};
        }
    }
    const void *recv;
    size_t total = oc_app_a2a(&x, &m, gen, owner, n, &recv);
    if (total > ecap) { /* more than expected arrives: grow, unfaulted */
        oc_app_free_table((uint64_t *)ent, 2 * (uint64_t)ecap);
        ent = (tp_ent_t *)oc_app_alloc_table(2 * (uint64_t)total);
        ecap = total;
        if (ent == NULL)
            oc_app_mpi_die(&m, "cannot allocate %zu received nonzeros", total);
    }
    (void)tp_build((const tp_msg_t *)recv, total, R, off, ent);
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    uint64_t nnz = oc_app_mpi_sum(n);

    oc_app_json_t j;
    if (m.rank == 0) {
        oc_app_json_begin(&j);
        oc_app_json_str(&j, "app", "transpose");
        oc_app_json_str(&j, "placement", "mpi");
        oc_app_json_u64(&j, "ranks", P);
        oc_app_json_u64(&j, "rows_per_rank", R);
        oc_app_json_u64(&j, "degree", o.degree);
        oc_app_json_u64(&j, "nonzeros", nnz);
        oc_app_json_u64(&j, "nonzeros_per_rank", nnz / P);
        oc_app_json_dbl(&j, "seconds", seconds);
        oc_app_json_dbl(&j, "rate", seconds > 0 ? (double)nnz / seconds : 0);
        oc_app_json_str(&j, "rate_unit", "nonzeros/s");
    }
    if (o.corrupt && me == P - 1 && total > 0)
        ent[total / 2].val ^= 1;
    bool verified = oc_app_mpi_all(tp_check(&m, &o, &g, off, ent, total));
    if (m.rank == 0) {
        oc_app_json_bool(&j, "verified", verified);
        oc_app_json_print(&j);
    }
    oc_app_a2a_free(&x);
    oc_app_free_table((uint64_t *)gen, 2 * (uint64_t)cap0);
    oc_app_free_table((uint64_t *)ent, 2 * (uint64_t)ecap);
    free(owner);
    free(off);
    return oc_app_mpi_finish(verified);
}
