/*
 * interpose.c — liboffcore-mpi.so, a PMPI interposition library: an
 * unmodified MPI program run with LD_PRELOAD=liboffcore-mpi.so (or linked
 * with it ahead of MPI) gets MPI_Allreduce, MPI_Alltoall and
 * MPI_Alltoallv on MPI_COMM_WORLD, and on communicators congruent with it
 * (its duplicates), served by offcore's collectives; every other call, and
 * these on other communicators or with types/ops offcore lacks, go to the
 * MPI library unchanged (PMPI_*).  MPI_Iallreduce and MPI_Ialltoall are
 * passed through: serving them would mean interposing every MPI_Wait/Test
 * variant on their requests.  What is served and what is passed through is
 * logged once per call and reason at OC_LOG=info, and counted (the counts
 * are logged at MPI_Finalize).
 *
 * Threading: served only when MPI was initialised with at most
 * MPI_THREAD_SERIALIZED (an offcore context is used by one thread at a
 * time); with MPI_THREAD_MULTIPLE everything is passed through.  All ranks
 * must call the served collectives on congruent communicators in one
 * order (they share one offcore context and sequence).
 */
#include "util/log.h"

#include <mpi.h>
#include <offcore/coll.h>
#include <offcore/mpi.h>

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { F_ALLREDUCE, F_ALLTOALL, F_ALLTOALLV, F_IALLREDUCE, F_IALLTOALL, F_N };
static const char *const fname[F_N] = {"MPI_Allreduce", "MPI_Alltoall",
                                       "MPI_Alltoallv", "MPI_Iallreduce",
                                       "MPI_Ialltoall"};
static oc_context_t *g_ctx;
static MPI_Comm g_comm = MPI_COMM_NULL;
static uint64_t g_served[F_N], g_passed[F_N];
static unsigned g_logged[F_N]; /* bit per reason already logged */

static oc_status_t no_msg(void *a, uint32_t s, const void *m, size_t l)
{
    return OC_OK;
}

/* Count and log (first time per function and reason) a decision. */
static void note(int f, int served, unsigned reason, const char *why)
{
    unsigned bit = 1u << (served ? 0 : reason + 1);
    (served ? g_served : g_passed)[f]++;
    if (!(g_logged[f] & bit)) {
        g_logged[f] |= bit;
        oc_info(OC_COMP_RUNTIME, "offcore-mpi: %s %s%s%s", fname[f],
                served ? "served by offcore" : "passed through to MPI",
                why ? ": " : "", why ? why : "");
    }
}

static void setup(int provided)
{
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER | OC_PARAM_NAME,
                             .handler = no_msg, .name = "offcore-mpi"};
    oc_status_t st;

    if (provided == MPI_THREAD_MULTIPLE) {
        oc_info(OC_COMP_RUNTIME, "offcore-mpi: MPI_THREAD_MULTIPLE: every "
                                 "call passed through to MPI");
        return;
    }
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm) != MPI_SUCCESS)
        return;
    st = oc_init_mpi(&g_comm, &p, &g_ctx);
    if (st != OC_OK) {
        oc_warn(OC_COMP_RUNTIME, "offcore-mpi: oc_init: %s; every call "
                "passed through to MPI", oc_status_string(st));
        g_ctx = NULL;
        return;
    }
    oc_info(OC_COMP_RUNTIME, "offcore-mpi: serving MPI_Allreduce, "
            "MPI_Alltoall, MPI_Alltoallv on MPI_COMM_WORLD and congruent "
            "communicators (placement %s)", oc_placement(g_ctx));
}

EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv), provided = MPI_THREAD_SINGLE;
    if (rc == MPI_SUCCESS) {
        PMPI_Query_thread(&provided);
        setup(provided);
    }
    return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required,
                           int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        setup(*provided);
    return rc;
}

EXPORT int MPI_Finalize(void)
{
    if (g_ctx != NULL) {
        for (int f = 0; f < F_N; f++)
            oc_info(OC_COMP_RUNTIME, "offcore-mpi: %s: %llu served, %llu "
                    "passed through", fname[f],
                    (unsigned long long)g_served[f],
                    (unsigned long long)g_passed[f]);
        oc_finalize(g_ctx);
        g_ctx = NULL;
    }
    if (g_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&g_comm);
    return PMPI_Finalize();
}

/* 0: not ours; why says which reason (for the log). */
static int world_like(MPI_Comm c)
{
    int r;
    if (g_ctx == NULL)
        return 0;
    if (c == MPI_COMM_WORLD)
        return 1;
    return PMPI_Comm_compare(c, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
           (r == MPI_IDENT || r == MPI_CONGRUENT);
}

static int map_type(MPI_Datatype t, oc_dtype_t *d)
{
    if (t == MPI_INT32_T || (t == MPI_INT && sizeof(int) == 4))
        *d = OC_INT32;
    else if (t == MPI_INT64_T || (t == MPI_LONG && sizeof(long) == 8) ||
             (t == MPI_LONG_LONG && sizeof(long long) == 8))
        *d = OC_INT64;
    else if (t == MPI_UINT64_T ||
             (t == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8) ||
             (t == MPI_UNSIGNED_LONG_LONG && sizeof(unsigned long long) == 8))
        *d = OC_UINT64;
    else if (t == MPI_FLOAT)
        *d = OC_FLOAT32;
    else if (t == MPI_DOUBLE)
        *d = OC_FLOAT64;
    else
        return 0;
    return 1;
}

static int map_op(MPI_Op o, oc_dtype_t d, oc_op_t *op)
{
    if (o == MPI_SUM)
        *op = OC_SUM;
    else if (o == MPI_MIN)
        *op = OC_MIN;
    else if (o == MPI_MAX)
        *op = OC_MAX;
    else if (o == MPI_PROD && d != OC_FLOAT32 && d != OC_FLOAT64)
        *op = OC_PROD;
    else
        return 0;
    return 1;
}

static int result(int f, oc_status_t st)
{
    if (st == OC_OK)
        return MPI_SUCCESS;
    oc_error(OC_COMP_RUNTIME, "offcore-mpi: %s failed: %s", fname[f],
             oc_status_string(st));
    return MPI_ERR_INTERN;
}

EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count,
                         MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    oc_dtype_t d;
    oc_op_t op;

    if (!world_like(c))
        note(F_ALLREDUCE, 0, 0, "communicator not congruent with MPI_COMM_WORLD");
    else if (!map_type(t, &d))
        note(F_ALLREDUCE, 0, 1, "datatype not served");
    else if (!map_op(o, d, &op))
        note(F_ALLREDUCE, 0, 2, "op not served");
    else if (count < 0 || (count > 0 && (sbuf == NULL || rbuf == NULL)))
        note(F_ALLREDUCE, 0, 3, "arguments MPI reports as errors");
    else {
        note(F_ALLREDUCE, 1, 0, NULL);
        return result(F_ALLREDUCE,
                      oc_allreduce(g_ctx, sbuf == MPI_IN_PLACE ? OC_IN_PLACE : sbuf,
                                   rbuf, (size_t)count, d, op));
    }
    return PMPI_Allreduce(sbuf, rbuf, count, t, o, c);
}

EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st,
                        void *rbuf, int rcount, MPI_Datatype rt, MPI_Comm c)
{
    oc_dtype_t d;
    int in_place = sbuf == MPI_IN_PLACE;

    if (!world_like(c))
        note(F_ALLTOALL, 0, 0, "communicator not congruent with MPI_COMM_WORLD");
    else if (!map_type(rt, &d) || (!in_place && (st != rt || scount != rcount)))
        note(F_ALLTOALL, 0, 1, "datatype not served, or send/receive types differ");
    else if (rcount < 0 || (rcount > 0 && rbuf == NULL))
        note(F_ALLTOALL, 0, 3, "arguments MPI reports as errors");
    else {
        note(F_ALLTOALL, 1, 0, NULL);
        return result(F_ALLTOALL,
                      oc_alltoall(g_ctx, in_place ? OC_IN_PLACE : sbuf, rbuf,
                                  (size_t)rcount, d));
    }
    return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, c);
}

EXPORT int MPI_Alltoallv(const void *sbuf, const int *sc, const int *sd,
                         MPI_Datatype st, void *rbuf, const int *rc,
                         const int *rd, MPI_Datatype rt, MPI_Comm c)
{
    oc_dtype_t d;
    int n = 0, ok = 1;
    size_t *v;

    if (!world_like(c)) {
        note(F_ALLTOALLV, 0, 0, "communicator not congruent with MPI_COMM_WORLD");
    } else if (sbuf == MPI_IN_PLACE || !map_type(rt, &d) || st != rt) {
        note(F_ALLTOALLV, 0, 1, "datatype or MPI_IN_PLACE not served");
    } else {
        PMPI_Comm_size(c, &n);
        v = malloc(4 * (size_t)n * sizeof(*v));
        for (int i = 0; v != NULL && i < n; i++) {
            if (sc[i] < 0 || sd[i] < 0 || rc[i] < 0 || rd[i] < 0)
                ok = 0;
            v[i] = (size_t)sc[i], v[n + i] = (size_t)sd[i];
            v[2 * n + i] = (size_t)rc[i], v[3 * n + i] = (size_t)rd[i];
        }
        if (v != NULL && ok) {
            note(F_ALLTOALLV, 1, 0, NULL);
            int rcode = result(F_ALLTOALLV,
                               oc_alltoallv(g_ctx, sbuf, v, v + n, rbuf,
                                            v + 2 * n, v + 3 * n, d));
            free(v);
            return rcode;
        }
        free(v);
        note(F_ALLTOALLV, 0, 3, "arguments MPI reports as errors");
    }
    return PMPI_Alltoallv(sbuf, sc, sd, st, rbuf, rc, rd, rt, c);
}

EXPORT int MPI_Iallreduce(const void *sbuf, void *rbuf, int count,
                          MPI_Datatype t, MPI_Op o, MPI_Comm c,
                          MPI_Request *req)
{
    note(F_IALLREDUCE, 0, 0, "non-blocking requests stay MPI's");
    return PMPI_Iallreduce(sbuf, rbuf, count, t, o, c, req);
}

EXPORT int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype st,
                         void *rbuf, int rcount, MPI_Datatype rt, MPI_Comm c,
                         MPI_Request *req)
{
    note(F_IALLTOALL, 0, 0, "non-blocking requests stay MPI's");
    return PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, c, req);
}
