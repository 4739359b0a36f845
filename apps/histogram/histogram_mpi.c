/*
 * histogram_mpi.c — the same distributed histogram over plain MPI (binary
 * `histogram-mpi`), written the way users write it without an aggregation
 * library: in rounds of B updates per rank, bucket the updates by owner
 * (counting sort), exchange the counts with MPI_Alltoall and the 8-byte
 * indices with MPI_Alltoallv, apply what arrived.  It is the baseline the
 * offcore version is measured against, so it is kept honest: no per-update
 * division, buffers allocated once, one pass to bucket.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "hist_common.h"

int main(int argc, char **argv)
{
    static const char prog[] = "histogram-mpi";
    hist_opts_t o;
    hist_parse(&o, argc, argv, prog, false);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size;
    const uint64_t T = o.table, N = o.updates;
    const uint64_t B = o.batch < N ? o.batch : (N ? N : 1);
    if ((uint64_t)P * B > INT_MAX) {
        if (m.rank == 0)
            fprintf(stderr, "%s: --batch %llu x %u ranks exceeds MPI's int counts"
                            " (try --help)\n", prog, (unsigned long long)B, P);
        MPI_Finalize();
        return OC_APP_EXIT_USAGE;
    }

    uint64_t *table;
    oc_app_alloc_t req[] = {{"table", T, &table}};
    if (!oc_app_mpi_alloc(&m, req, 1))
        return oc_app_mpi_finish(false);

    /* Round buffers.  A rank receives at most P * B indices a round; the
     * receive buffer grows to what the counts announce, never beyond. */
    uint32_t *dst = malloc(B * sizeof *dst);
    uint64_t *ix = malloc(B * sizeof *ix);
    uint64_t *sendbuf = malloc(B * sizeof *sendbuf);
    size_t recvcap = B;
    uint64_t *recvbuf = malloc(recvcap * sizeof *recvbuf);
    int *scount = calloc(P, sizeof(int)), *sdispl = calloc(P, sizeof(int));
    int *rcount = calloc(P, sizeof(int)), *rdispl = calloc(P, sizeof(int));
    int *pos = calloc(P, sizeof(int));
    if (!dst || !ix || !sendbuf || !recvbuf || !scount || !sdispl || !rcount ||
        !rdispl || !pos)
        oc_app_mpi_die(&m, "cannot allocate round buffers of %llu updates",
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
            oc_app_slot(oc_app_hash_k(key, base + k), P, T, &d, &ix[k]);
            dst[k] = d;
            scount[d]++;
        }
        int off = 0;
        for (uint32_t d = 0; d < P; d++) {
            sdispl[d] = pos[d] = off;
            off += scount[d];
        }
        for (uint64_t k = 0; k < nb; k++)
            sendbuf[pos[dst[k]]++] = ix[k];

        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        size_t total = 0;
        for (uint32_t d = 0; d < P; d++) {
            rdispl[d] = (int)total;
            total += (size_t)rcount[d];
        }
        if (total > recvcap) {
            free(recvbuf);
            recvcap = total;
            recvbuf = malloc(recvcap * sizeof *recvbuf);
            if (recvbuf == NULL)
                oc_app_mpi_die(&m, "cannot grow the receive buffer to %zu", total);
        }
        MPI_Alltoallv(sendbuf, scount, sdispl, MPI_UINT64_T, recvbuf, rcount,
                      rdispl, MPI_UINT64_T, MPI_COMM_WORLD);
        for (size_t k = 0; k < total; k++) {
            uint64_t x = recvbuf[k];
            if (__builtin_expect(x >= T, 0)) {
                bad++;
                continue;
            }
            table[x]++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;

    oc_app_json_t j;
    if (m.rank == 0)
        hist_json(&j, &m, &o, "mpi", seconds);
    bool verified = hist_verify(&m, &o, table, bad);
    if (m.rank == 0) {
        oc_app_json_u64(&j, "batch_per_rank", B);
        oc_app_json_bool(&j, "verified", verified);
        oc_app_json_print(&j);
    }

    free(dst);
    free(ix);
    free(sendbuf);
    free(recvbuf);
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
    free(pos);
    oc_app_mpi_free(req, 1);
    return oc_app_mpi_finish(verified);
}
