/*
 * interpose_fault.c — a plain MPI program (no offcore header) for the
 * interposer's "correct or loud" test (interpose-fault-test.sh): one
 * allreduce that must succeed; rank 0 starts an MPI_Iallreduce, then every
 * rank waits until the file argv[2] exists (the test kills the agent
 * meanwhile); then rank 0 waits for its MPI_Iallreduce, the others start
 * and wait for theirs, and all call MPI_Allreduce: none can be right.  argv[1]: "return" sets MPI_ERRORS_RETURN on MPI_COMM_WORLD and
 * each call must return an error code (printed with its class and
 * string); "fatal" keeps MPI_ERRORS_ARE_FATAL, and the job must abort in
 * the first of them.  Prints "WRONG: ..." and exits 1 where a call returned
 * MPI_SUCCESS; "LOUD: ..." for each error returned.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 4096 };
static int rank;

static int loud(const char *what, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int cls = -1, len = 0;

    if (rc == MPI_SUCCESS) {
        printf("WRONG: rank %d: %s returned MPI_SUCCESS after the agent "
               "died\n", rank, what);
        return 1;
    }
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    printf("LOUD: rank %d: %s: class %d: %s\n", rank, what, cls, text);
    return 0;
}

int main(int argc, char **argv)
{
    static int x[N], y[N];
    int size, ret, bad = 0, rc;
    MPI_Request q;
    MPI_Status s;

    if (argc < 3)
        return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ret = strcmp(argv[1], "return") == 0;
    if (ret)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; i++)
        x[i] = rank + i;
    if (MPI_Allreduce(x, y, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD) !=
            MPI_SUCCESS ||
        y[1] != size * (size - 1) / 2 + size) {
        printf("WRONG: rank %d: the first allreduce failed\n", rank);
        return 1;
    }
    /* rank 0's MPI_Iallreduce is in flight when the agent dies: the
     * agent waits for the others', who start theirs only after */
    if (rank == 0 &&
        MPI_Iallreduce(x, y, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q) !=
            MPI_SUCCESS) {
        printf("WRONG: rank 0: MPI_Iallreduce did not start\n");
        return 1;
    }
    if (rank == 0) {
        printf("first allreduce verified\n");
        fflush(stdout);
    }
    while (access(argv[2], F_OK) != 0)
        usleep(20000);
    if (rank != 0)
        rc = MPI_Iallreduce(x, y, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    else
        rc = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        memset(&s, 0, sizeof(s));
        rc = MPI_Wait(&q, &s);
        if (!ret)
            printf("WRONG: rank %d: MPI_Wait returned %d under "
                   "MPI_ERRORS_ARE_FATAL after the agent died\n", rank, rc);
        if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)
            rc = s.MPI_ERROR;
        bad |= loud("MPI_Iallreduce + MPI_Wait", rc);
    } else {
        bad |= loud("MPI_Iallreduce", rc);
    }
    memset(y, 0, sizeof(y));
    rc = MPI_Allreduce(x, y, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!ret)
        printf("WRONG: rank %d: MPI_Allreduce returned %d under "
               "MPI_ERRORS_ARE_FATAL after the agent died\n", rank, rc);
    bad |= !ret || loud("MPI_Allreduce", rc);
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
