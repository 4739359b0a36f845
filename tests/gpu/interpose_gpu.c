/*
 * interpose_gpu.c — an MPI program built without offcore's headers that
 * hands CUDA device buffers (the libcuda double's) to MPI_Allreduce,
 * MPI_Iallreduce, MPI_Alltoall and MPI_Alltoallv, run with liboffcore-mpi.so preloaded:
 * offcore must serve them (Debian's Open MPI is not CUDA-aware, and the
 * double's device memory cannot be read by the CPU: a pass-through would
 * crash) with the results a host computation gives.
 */
#include <mpi.h>

#include "fake_api.h"

#include <stdint.h>
#include <string.h>

int main(int argc, char **argv)
{
    fake_api_t fk;
    void *cx;
    int rank, size, bad = 0, all;
    const int n = 30000;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (fake_api_load(&fk) != 0 || fk.ctx_create(&cx, 0, 0) != 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int32_t *h = malloc(n * sizeof(*h)), *want = malloc(n * sizeof(*h));
    int32_t *got = malloc(n * sizeof(*h));
    for (int i = 0; i < n; i++) {
        h[i] = i * (rank + 1);
        want[i] = i * (size * (size + 1) / 2);
    }
    void *d = fake_dev_alloc(&fk, h, n * sizeof(*h));
    void *dr = fake_dev_alloc(&fk, NULL, n * sizeof(*h));
    MPI_Allreduce(d, dr, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    fk.dtoh(got, (uintptr_t)dr, n * sizeof(*h));
    bad += memcmp(got, want, n * sizeof(*h)) != 0;
    MPI_Request rq;
    fk.htod((uintptr_t)d, h, n * sizeof(*h));
    MPI_Iallreduce(MPI_IN_PLACE, d, n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD,
                   &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    fk.dtoh(got, (uintptr_t)d, n * sizeof(*h));
    bad += memcmp(got, want, n * sizeof(*h)) != 0;
    /* all-to-all: block p of rank r's input is r * 1000 + p */
    int per = n / size;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < per; i++)
            h[p * per + i] = rank * 1000 + p;
    fk.htod((uintptr_t)d, h, (size_t)per * size * sizeof(*h));
    MPI_Alltoall(d, per, MPI_INT32_T, dr, per, MPI_INT32_T, MPI_COMM_WORLD);
    fk.dtoh(got, (uintptr_t)dr, (size_t)per * size * sizeof(*h));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < per; i++)
            bad += got[p * per + i] != p * 1000 + rank;
    /* all-to-allv, the same exchange with explicit counts */
    int *cnts = malloc(4 * (size_t)size * sizeof(int));
    for (int p = 0; p < size; p++) {
        cnts[p] = per, cnts[size + p] = p * per;
        cnts[2 * size + p] = per, cnts[3 * size + p] = p * per;
    }
    MPI_Alltoallv(d, cnts, cnts + size, MPI_INT32_T, dr, cnts + 2 * size,
                  cnts + 3 * size, MPI_INT32_T, MPI_COMM_WORLD);
    fk.dtoh(got, (uintptr_t)dr, (size_t)per * size * sizeof(*h));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < per; i++)
            bad += got[p * per + i] != p * 1000 + rank;
    free(cnts);
    if (bad)
        fprintf(stderr, "FAIL rank %d: %d wrong results\n", rank, bad);
    all = bad;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: device buffers through MPI on %d ranks\n",
               all ? "FAIL" : "PASS", size);
    MPI_Finalize();
    return all ? 1 : 0;
}
