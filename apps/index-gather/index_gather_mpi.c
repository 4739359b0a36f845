/*
 * index_gather_mpi.c — the same distributed gather over plain MPI (binary
 * `index-gather-mpi`), written the way users write it without an
 * aggregation library: in rounds of B reads per rank, bucket the reads by
 * owner (counting sort, remembering each one's position), exchange counts
 * with MPI_Alltoall, 4-byte indices with MPI_Alltoallv, look them up, send
 * the 8-byte values back with MPI_Alltoallv in the same order, and scatter
 * them to their positions.  Replies carry no id: order does the matching,
 * which is what a competent user exploits.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "ig_common.h"

int main(int argc, char **argv)
{
    static const char prog[] = "index-gather-mpi";
    ig_opts_t o;
    ig_parse(&o, argc, argv, prog, false);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size;
    const uint64_t T = o.table, N = o.requests;
    const uint64_t B = o.batch < N ? o.batch : (N ? N : 1);
    if ((uint64_t)P * B > INT_MAX) {
        if (m.rank == 0)
            fprintf(stderr, "%s: --batch %llu x %u ranks exceeds MPI's int counts"
                            " (try --help)\n", prog, (unsigned long long)B, P);
        MPI_Finalize();
        return OC_APP_EXIT_USAGE;
    }

    uint64_t *table, *tgt;
    oc_app_alloc_t req[] = {{"table", T, &table}, {"targets", N, &tgt}};
    if (!oc_app_mpi_alloc(&m, req, 2))
        return oc_app_mpi_finish(false);
    ig_fill(&m, &o, table);

    uint32_t *dst = malloc(B * sizeof *dst);
    uint32_t *lidx = malloc(B * sizeof *lidx);
    uint32_t *sreq = malloc(B * sizeof *sreq);
    uint32_t *perm = malloc(B * sizeof *perm);
    uint64_t *rrep = malloc(B * sizeof *rrep);
    size_t cap = B;
    uint32_t *rreq = malloc(cap * sizeof *rreq);
    uint64_t *srep = malloc(cap * sizeof *srep);
    int *scount = calloc(P, sizeof(int)), *sdispl = calloc(P, sizeof(int));
    int *rcount = calloc(P, sizeof(int)), *rdispl = calloc(P, sizeof(int));
    int *pos = calloc(P, sizeof(int));
    if (!dst || !lidx || !sreq || !perm || !rrep || !rreq || !srep || !scount ||
        !sdispl || !rcount || !rdispl || !pos)
        oc_app_mpi_die(&m, "cannot allocate round buffers of %llu requests",
                       (unsigned long long)B);

    const uint64_t key = oc_app_stream_key(o.seed, (uint64_t)m.rank);
    uint64_t bad = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = oc_app_now();
    for (uint64_t base = 0; base < N; base += B) {
        const uint64_t nb = N - base < B ? N - base : B;
        memset(scount, 0, P * sizeof(int));
        for (uint64_t k = 0; k < nb; k++) {
            uint32_t d;
            uint64_t idx;
            oc_app_slot(oc_app_hash_k(key, base + k), P, T, &d, &idx);
            dst[k] = d;
            lidx[k] = (uint32_t)idx;
            scount[d]++;
        }
        int off = 0;
        for (uint32_t d = 0; d < P; d++) {
            sdispl[d] = pos[d] = off;
            off += scount[d];
        }
        for (uint64_t k = 0; k < nb; k++) {
            int p = pos[dst[k]]++;
            sreq[p] = lidx[k];
            perm[p] = (uint32_t)k;
        }

        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        size_t total = 0;
        for (uint32_t d = 0; d < P; d++) {
            rdispl[d] = (int)total;
            total += (size_t)rcount[d];
        }
        if (total > cap) {
            free(rreq);
            free(srep);
            cap = total;
            rreq = malloc(cap * sizeof *rreq);
            srep = malloc(cap * sizeof *srep);
            if (rreq == NULL || srep == NULL)
                oc_app_mpi_die(&m, "cannot grow the request buffers to %zu", total);
        }
        MPI_Alltoallv(sreq, scount, sdispl, MPI_UINT32_T, rreq, rcount, rdispl,
                      MPI_UINT32_T, MPI_COMM_WORLD);
        for (size_t k = 0; k < total; k++) {
            uint32_t x = rreq[k];
            if (__builtin_expect(x >= T, 0)) {
                bad++;
                srep[k] = 0;
                continue;
            }
            srep[k] = table[x];
        }
        MPI_Alltoallv(srep, rcount, rdispl, MPI_UINT64_T, rrep, scount, sdispl,
                      MPI_UINT64_T, MPI_COMM_WORLD);
        uint64_t *out = tgt + base;
        for (uint64_t p = 0; p < nb; p++)
            out[perm[p]] = rrep[p];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;

    oc_app_json_t j;
    if (m.rank == 0)
        ig_json(&j, &m, &o, "mpi", seconds);
    bool verified = ig_verify(&m, &o, tgt, UINT64_MAX, bad);
    if (m.rank == 0) {
        oc_app_json_u64(&j, "batch_per_rank", B);
        oc_app_json_bool(&j, "verified", verified);
        oc_app_json_print(&j);
    }

    free(dst);
    free(lidx);
    free(sreq);
    free(perm);
    free(rrep);
    free(rreq);
    free(srep);
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
    free(pos);
    oc_app_mpi_free(req, 2);
    return oc_app_mpi_finish(verified);
}
