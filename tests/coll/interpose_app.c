/*
 * interpose_app.c — a plain MPI program (no offcore header) for the
 * interposer test: allreduce, alltoall and alltoallv on MPI_COMM_WORLD and
 * on a duplicate, in place and not, plus calls the interposer must pass
 * through (a split communicator, a type it does not serve), and the
 * non-blocking MPI_Iallreduce / MPI_Ialltoall completed by MPI_Wait,
 * MPI_Waitall (mixed with MPI's own point-to-point requests), MPI_Waitany,
 * MPI_Waitsome, MPI_Testall and MPI_Test loops.  Rank 0 prints every
 * result; run with and without
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

/* Non-blocking collectives completed every way a program may complete
 * them; data integer-valued, so any summation order gives the same. */
static void nonblocking(MPI_Comm dup, MPI_Comm half)
{
    enum { N = 100000, M = 48 };
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    double s1[M], r1[M], s2[M], r2[M], s3[M], r3[M], tok = rank, got = -1;
    MPI_Request q[5];
    int flag = 0, idx, out, ids[5], per = M / size;

    for (int i = 0; i < N; i++)
        x[i] = (i % 17) * (rank + 1);
    for (int i = 0; i < M; i++) {
        s1[i] = rank * 10 + i % 7;
        s2[i] = rank * 1000 + i;
        s3[i] = (rank + 2) * (i % 5);
    }
    /* a Test loop, on a vector large enough to take several turns */
    MPI_Iallreduce(x, y, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    while (!flag)
        MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE);
    show("iallreduce-test-loop", y + N - 8, 8);
    /* Waitall over offcore's requests and MPI's own (a ring exchange) */
    MPI_Iallreduce(s1, r1, M, MPI_DOUBLE, MPI_MAX, dup, &q[0]);
    MPI_Ialltoall(s2, per, MPI_DOUBLE, r2, per, MPI_DOUBLE, MPI_COMM_WORLD, &q[1]);
    MPI_Irecv(&got, 1, MPI_DOUBLE, (rank + size - 1) % size, 7, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(&tok, 1, MPI_DOUBLE, (rank + 1) % size, 7, MPI_COMM_WORLD, &q[3]);
    MPI_Iallreduce(s3, r3, M, MPI_DOUBLE, MPI_SUM, half, &q[4]); /* passed through */
    MPI_Waitall(5, q, MPI_STATUSES_IGNORE);
    show("iallreduce-max-dup-waitall", r1, M);
    show("ialltoall-waitall", r2, per * size);
    show("ring-waitall", &got, 1);
    show("iallreduce-split-waitall", r3, M);
    /* Waitany and Waitsome until all are done, Testall */
    MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s2, per, MPI_DOUBLE, dup, &q[0]);
    MPI_Iallreduce(MPI_IN_PLACE, s1, M, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD, &q[1]);
    for (int k = 0; k < 2; k++)
        MPI_Waitany(2, q, &idx, MPI_STATUS_IGNORE);
    MPI_Waitany(2, q, &idx, MPI_STATUS_IGNORE); /* none left: MPI_UNDEFINED */
    show("ialltoall-inplace-waitany", s2, per * size);
    show("iallreduce-min-inplace-waitany", s1, M);
    printf("%s", rank == 0 && idx == MPI_UNDEFINED ? "waitany-none: undefined\n" : "");
    MPI_Iallreduce(s3, r3, M, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Ialltoall(s3, per, MPI_DOUBLE, r2, per, MPI_DOUBLE, dup, &q[1]);
    for (int done = 0; done < 2; done += out)
        MPI_Waitsome(2, q, &out, ids, MPI_STATUSES_IGNORE);
    show("iallreduce-waitsome", r3, M);
    show("ialltoall-waitsome", r2, per * size);
    MPI_Iallreduce(s1, r1, M, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    for (flag = 0; !flag;)
        MPI_Testall(1, q, &flag, MPI_STATUSES_IGNORE);
    show("iallreduce-testall", r1, M);
    free(x);
    free(y);
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
    show("iallreduce-wait", r, 40);
    nonblocking(dup, half);
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
