/*
 * interpose_app.c — a plain MPI program (no offcore header) for the
 * interposer test: allreduce, alltoall and alltoallv on MPI_COMM_WORLD and
 * on a duplicate, in place and not, plus calls the interposer must pass
 * through (a split communicator, a type it does not serve, a non-blocking
 * allreduce).  Rank 0 prints every result; run with and without
 * LD_PRELOAD=liboffcore-mpi.so the output must be identical (the data are
 * integer-valued, so every summation order gives the same doubles).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

static void show(const char *what, const double *v, int n)
{
    double *all = rank == 0 ? malloc(sizeof(double) * n * size) : NULL;
    MPI_Gather((void *)v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s:", what);
        for (int i = 0; i < n * size; i++)
            printf(" %g", all[i]);
        printf("\n");
        free(all);
    }
}

int main(int argc, char **argv)
{
    MPI_Comm dup, half;
    double a[40], r[40], b[64], rb[64];
    long l[5], rl[5];
    int ic[16], idp[16], rc[16], rdp[16];
    short s = 1, rs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    for (int i = 0; i < 40; i++)
        a[i] = (rank + 1) * (i % 9) - 3;
    MPI_Allreduce(a, r, 40, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    show("allreduce-sum", r, 40);
    MPI_Allreduce(a, r, 40, MPI_DOUBLE, MPI_MAX, dup);
    show("allreduce-max-dup", r, 40);
    for (int i = 0; i < 5; i++)
        l[i] = rank * 3 + i + 1;
    MPI_Allreduce(l, rl, 5, MPI_LONG, MPI_PROD, MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++)
        r[i] = (double)rl[i];
    show("allreduce-prod-long", r, 5);
    for (int i = 0; i < 40; i++)
        r[i] = a[i];
    MPI_Allreduce(MPI_IN_PLACE, r, 40, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    show("allreduce-min-inplace", r, 40);
    MPI_Allreduce(a, r, 40, MPI_DOUBLE, MPI_SUM, half);
    show("allreduce-split", r, 40);
    MPI_Allreduce(&s, &rs, 1, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
    r[0] = rs;
    show("allreduce-short", r, 1);
    MPI_Request q;
    MPI_Iallreduce(a, r, 40, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    show("iallreduce", r, 40);
    int per = 64 / size;
    for (int i = 0; i < 64; i++)
        b[i] = rank * 100 + i;
    MPI_Alltoall(b, per, MPI_DOUBLE, rb, per, MPI_DOUBLE, MPI_COMM_WORLD);
    show("alltoall", rb, per * size);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, per, MPI_DOUBLE, dup);
    show("alltoall-inplace-dup", b, per * size);
    int so = 0, ro = 0;
    for (int d = 0; d < size; d++) {
        ic[d] = (rank + d) % 3, idp[d] = so, so += ic[d];
        rc[d] = (d + rank) % 3, rdp[d] = ro, ro += rc[d];
    }
    for (int i = 0; i < 64; i++)
        b[i] = rank * 1000 + i, rb[i] = -1;
    MPI_Alltoallv(b, ic, idp, MPI_DOUBLE, rb, rc, rdp, MPI_DOUBLE, MPI_COMM_WORLD);
    show("alltoallv", rb, 3 * size < 64 ? 3 * size : 64);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
