/*
 * interpose.c — liboffcore-mpi.so, a PMPI interposition library: an
 * unmodified MPI program run with LD_PRELOAD=liboffcore-mpi.so gets
 * MPI_Allreduce, MPI_Iallreduce, MPI_Alltoall(v) and MPI_Ialltoall on
 * MPI_COMM_WORLD and its duplicates served by offcore's collectives; every
 * other call goes to MPI unchanged (PMPI_*), said at OC_LOG=info.
 * Non-blocking calls hand back generalized requests, so MPI_Wait/Test and
 * their variants are interposed to progress them.  Correct or loud: what
 * the placement does not serve is passed to MPI before any buffer is
 * touched, and so is what offcore refuses untouched (OC_ERR_UNSUPPORTED);
 * CUDA device buffers are served (offcore stages them, docs/gpu.md); a
 * served call that fails is never MPI_SUCCESS.  How, in full:
 * docs/coll.md, "Unmodified MPI programs".
 *
 * Threading: served only under MPI_THREAD_SERIALIZED or less; with
 * MPI_THREAD_MULTIPLE everything is passed through.
 */
#include "util/log.h"

#include <mpi.h>
#include <offcore/coll.h>
#include <offcore/mpi.h>

#include <sched.h>
#include <stdio.h>
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

/* A served non-blocking collective: the offcore request behind the
 * generalized MPI request the program holds.  On the pending list until
 * the offcore request completes; freed by MPI's free callback, which runs
 * once the program has freed the MPI request and it is complete. */
typedef struct greq {
    oc_request_t *oreq;
    MPI_Request   mreq;
    MPI_Comm      comm;  /* the program's, for its error handler */
    oc_status_t   st;
    int           code;  /* MPI error code of st (MPI_SUCCESS when OK) */
    int           f;
    struct greq  *next;
} greq_t;
static greq_t *g_pending;
static int progress_pending(void);
static void idle_turn(unsigned *idle);

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
        oc_info(OC_COMP_COLL, "offcore-mpi: %s %s%s%s", fname[f],
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
        oc_info(OC_COMP_COLL, "offcore-mpi: MPI_THREAD_MULTIPLE: every "
                                 "call passed through to MPI");
        return;
    }
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm) != MPI_SUCCESS)
        return;
    st = oc_init_mpi(&g_comm, &p, &g_ctx);
    if (st != OC_OK) {
        oc_warn(OC_COMP_COLL, "offcore-mpi: oc_init: %s; every call "
                "passed through to MPI", oc_status_string(st));
        g_ctx = NULL;
        return;
    }
    oc_info(OC_COMP_COLL, "offcore-mpi: serving MPI_Allreduce, "
            "MPI_Iallreduce, MPI_Alltoall, MPI_Ialltoall, MPI_Alltoallv on "
            "MPI_COMM_WORLD and congruent communicators (placement %s)",
            oc_placement(g_ctx));
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
    unsigned idle = 0;

    /* requests the program freed or never waited for: every rank started
     * them, so every rank can finish them */
    while (g_pending != NULL)
        if (!progress_pending())
            idle_turn(&idle);
    if (g_ctx != NULL) {
        for (int f = 0; f < F_N; f++)
            oc_info(OC_COMP_COLL, "offcore-mpi: %s: %llu served, %llu "
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

/* The MPI error class closest to an offcore status. */
static int mpi_class(oc_status_t st)
{
    switch (st) {
    case OC_ERR_NO_MEMORY:
        return MPI_ERR_NO_MEM;
    case OC_ERR_COLL_MISMATCH:
        return MPI_ERR_TRUNCATE; /* the peers' amounts disagree */
    case OC_ERR_COLL_COUNT:
        return MPI_ERR_COUNT;
    case OC_ERR_COLL_BUFFER:
    case OC_ERR_COLL_MEMORY:
        return MPI_ERR_BUFFER;
    case OC_ERR_COLL_DTYPE:
        return MPI_ERR_TYPE;
    case OC_ERR_COLL_OP:
        return MPI_ERR_OP;
    case OC_ERR_UNSUPPORTED:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    case OC_ERR_COLL_PEER_FAILED:
    case OC_ERR_PEER_FAILED:
    case OC_ERR_TRANSPORT:
        return MPI_ERR_OTHER; /* a process or link of the job failed */
    case OC_ERR_GPU:
        return MPI_ERR_OTHER; /* the CUDA driver failed on some rank */
    default:
        return MPI_ERR_INTERN;
    }
}

/* An MPI error code for @p st: one added per status the first time it is
 * needed (class mpi_class(st), string "offcore: <status>"), so that
 * MPI_Error_class and MPI_Error_string tell the program what failed; the
 * bare class where MPI cannot add one. */
static int mpi_code(oc_status_t st)
{
    enum { NCODES = 256 }; /* offcore statuses are > -256 */
    static int codes[NCODES];
    int cls = mpi_class(st), i = -(int)st, code;
    char text[MPI_MAX_ERROR_STRING];

    if (i <= 0 || i >= NCODES)
        return cls;
    if (codes[i] != 0)
        return codes[i];
    if (PMPI_Add_error_code(cls, &code) != MPI_SUCCESS)
        return cls;
    snprintf(text, sizeof(text), "offcore: %s", oc_status_string(st));
    (void)PMPI_Add_error_string(code, text);
    return codes[i] = code;
}

/* A served call ended: MPI_SUCCESS, or the error, logged and raised on
 * the program's communicator @p c (its handler may abort). */
static int result(int f, oc_status_t st, MPI_Comm c)
{
    int code;

    if (st == OC_OK)
        return MPI_SUCCESS;
    oc_error(OC_COMP_COLL, "offcore-mpi: %s failed: %s", fname[f],
             oc_status_string(st));
    code = mpi_code(st);
    (void)PMPI_Comm_call_errhandler(c, code);
    return code;
}

/* MPI's callbacks of a generalized request. */
static int greq_query(void *extra, MPI_Status *status)
{
    greq_t *g = extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = g->code;
    return g->code;
}

static int greq_free(void *extra)
{
    free(extra);
    return MPI_SUCCESS;
}

/* A collective cannot be cancelled (MPI calls it erroneous): it runs to
 * its end, and the status says it was not cancelled. */
static int greq_cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS;
}

/* Advance every pending offcore request once; complete the MPI request
 * of each that ended.  @return how many ended. */
static int progress_pending(void)
{
    greq_t **p = &g_pending, *g;
    int n = 0;

    while ((g = *p) != NULL) {
        oc_status_t st = oc_test(&g->oreq);
        if (st == OC_INPROGRESS) {
            p = &g->next;
            continue;
        }
        *p = g->next; /* off the list first: complete may free it */
        g->st = st;
        g->code = MPI_SUCCESS;
        n++;
        if (st != OC_OK) /* raised here, in the call that completes it */
            g->code = result(g->f, st, g->comm);
        PMPI_Grequest_complete(g->mreq);
    }
    return n;
}

/* Hand the program a generalized request for @p oreq (just started). */
static int greq_start(int f, oc_status_t st, oc_request_t *oreq,
                      MPI_Comm c, MPI_Request *req)
{
    greq_t *g;
    int rc;

    if (st != OC_OK)
        return result(f, st, c);
    g = calloc(1, sizeof(*g));
    if (g == NULL) { /* finish it here: nothing may be left behind */
        oc_wait(&oreq);
        return result(f, OC_ERR_NO_MEMORY, c);
    }
    g->oreq = oreq;
    g->comm = c;
    g->f = f;
    rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, g, &g->mreq);
    if (rc != MPI_SUCCESS) {
        oc_wait(&g->oreq);
        free(g);
        return rc;
    }
    g->next = g_pending;
    g_pending = g;
    *req = g->mreq;
    return MPI_SUCCESS;
}

/* Between turns of a wait loop that found nothing done: give the core up
 * now and then (the peers may need it: ranks often outnumber cores). */
static void idle_turn(unsigned *idle)
{
    if (++*idle >= 16) {
        *idle = 0;
        sched_yield();
    }
}

#define NOT_SERVED "the placement does not serve it (the agents said so at " \
                   "oc_init)"

/* offcore refused a call it had taken (OC_ERR_UNSUPPORTED, before any
 * buffer was touched; e.g. the agent refused the kind after all).  Counted and said as a
 * pass-through; @return 1 when @p st is that refusal. */
static int refused(int f, oc_status_t st)
{
    if (st != OC_ERR_UNSUPPORTED)
        return 0;
    g_served[f]--;
    note(f, 0, 5, "offcore refused it (OC_ERR_UNSUPPORTED) before touching "
         "a buffer: MPI gets it (device buffers: MPI must be CUDA-aware)");
    return 1;
}

/* Why an allreduce is not served (for the log; reason number in *r), or
 * NULL when it is: types and op in *d, *op. */
static const char *allreduce_why(const void *sbuf, const void *rbuf, int count,
                                 MPI_Datatype t, MPI_Op o, MPI_Comm c,
                                 oc_dtype_t *d, oc_op_t *op, unsigned *r)
{
    if (!world_like(c))
        return *r = 0, "communicator not congruent with MPI_COMM_WORLD";
    if (!oc_coll_served(g_ctx, OC_COLL_ALLREDUCE))
        return *r = 4, NOT_SERVED;
    if (!map_type(t, d))
        return *r = 1, "datatype not served";
    if (!map_op(o, *d, op))
        return *r = 2, "op not served";
    if (count < 0 || (count > 0 && (sbuf == NULL || rbuf == NULL)))
        return *r = 3, "arguments MPI reports as errors";
    return NULL;
}

/* The same for an all-to-all. */
static const char *alltoall_why(const void *sbuf, int scount, MPI_Datatype st,
                                const void *rbuf, int rcount, MPI_Datatype rt,
                                MPI_Comm c, oc_dtype_t *d, unsigned *r)
{
    int in_place = sbuf == MPI_IN_PLACE;
    if (!world_like(c))
        return *r = 0, "communicator not congruent with MPI_COMM_WORLD";
    if (!oc_coll_served(g_ctx, OC_COLL_ALLTOALL))
        return *r = 4, NOT_SERVED;
    if (!map_type(rt, d) || (!in_place && (st != rt || scount != rcount)))
        return *r = 1, "datatype not served, or send/receive types differ";
    if (rcount < 0 || (rcount > 0 && rbuf == NULL))
        return *r = 3, "arguments MPI reports as errors";
    return NULL;
}

EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count,
                         MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    oc_dtype_t d = OC_INT32;
    oc_op_t op = OC_SUM;
    unsigned r = 0;
    const char *why = allreduce_why(sbuf, rbuf, count, t, o, c, &d, &op, &r);

    oc_status_t st;

    note(F_ALLREDUCE, why == NULL, r, why);
    if (why != NULL)
        return PMPI_Allreduce(sbuf, rbuf, count, t, o, c);
    st = oc_allreduce(g_ctx, sbuf == MPI_IN_PLACE ? OC_IN_PLACE : sbuf, rbuf,
                      (size_t)count, d, op);
    if (refused(F_ALLREDUCE, st))
        return PMPI_Allreduce(sbuf, rbuf, count, t, o, c);
    return result(F_ALLREDUCE, st, c);
}

EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st,
                        void *rbuf, int rcount, MPI_Datatype rt, MPI_Comm c)
{
    oc_dtype_t d = OC_INT32;
    unsigned r = 0;
    const char *why = alltoall_why(sbuf, scount, st, rbuf, rcount, rt, c, &d,
                                   &r);

    oc_status_t ost;

    note(F_ALLTOALL, why == NULL, r, why);
    if (why != NULL)
        return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, c);
    ost = oc_alltoall(g_ctx, sbuf == MPI_IN_PLACE ? OC_IN_PLACE : sbuf, rbuf,
                      (size_t)rcount, d);
    if (refused(F_ALLTOALL, ost))
        return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, c);
    return result(F_ALLTOALL, ost, c);
}

EXPORT int MPI_Alltoallv(const void *sbuf, const int *sc, const int *sd,
                         MPI_Datatype st, void *rbuf, const int *rc,
                         const int *rd, MPI_Datatype rt, MPI_Comm c)
{
    oc_dtype_t d = OC_INT32;
    int n = 0, ok = 1;
    size_t *v;

    if (!world_like(c)) {
        note(F_ALLTOALLV, 0, 0, "communicator not congruent with MPI_COMM_WORLD");
    } else if (!oc_coll_served(g_ctx, OC_COLL_ALLTOALL)) {
        note(F_ALLTOALLV, 0, 4, NOT_SERVED);
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
            oc_status_t ost = oc_alltoallv(g_ctx, sbuf, v, v + n, rbuf,
                                           v + 2 * n, v + 3 * n, d);
            free(v);
            if (refused(F_ALLTOALLV, ost))
                return PMPI_Alltoallv(sbuf, sc, sd, st, rbuf, rc, rd, rt, c);
            return result(F_ALLTOALLV, ost, c);
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
    oc_dtype_t d = OC_INT32;
    oc_op_t op = OC_SUM;
    unsigned r = 0;
    const char *why = allreduce_why(sbuf, rbuf, count, t, o, c, &d, &op, &r);
    oc_request_t *oreq = NULL;
    oc_status_t st;

    if (why == NULL && req == NULL)
        why = "arguments MPI reports as errors", r = 3;
    note(F_IALLREDUCE, why == NULL, r, why);
    if (why != NULL)
        return PMPI_Iallreduce(sbuf, rbuf, count, t, o, c, req);
    st = oc_iallreduce(g_ctx, sbuf == MPI_IN_PLACE ? OC_IN_PLACE : sbuf, rbuf,
                       (size_t)count, d, op, &oreq);
    if (refused(F_IALLREDUCE, st))
        return PMPI_Iallreduce(sbuf, rbuf, count, t, o, c, req);
    return greq_start(F_IALLREDUCE, st, oreq, c, req);
}

EXPORT int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype st,
                         void *rbuf, int rcount, MPI_Datatype rt, MPI_Comm c,
                         MPI_Request *req)
{
    oc_dtype_t d = OC_INT32;
    unsigned r = 0;
    const char *why = alltoall_why(sbuf, scount, st, rbuf, rcount, rt, c, &d,
                                   &r);
    oc_request_t *oreq = NULL;
    oc_status_t ost;

    if (why == NULL && req == NULL)
        why = "arguments MPI reports as errors", r = 3;
    note(F_IALLTOALL, why == NULL, r, why);
    if (why != NULL)
        return PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, c, req);
    ost = oc_ialltoall(g_ctx, sbuf == MPI_IN_PLACE ? OC_IN_PLACE : sbuf, rbuf,
                       (size_t)rcount, d, &oreq);
    if (refused(F_IALLTOALL, ost))
        return PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, c, req);
    return greq_start(F_IALLTOALL, ost, oreq, c, req);
}

/* ---- completion: every wait and test advances the pending collectives --- */

EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    if (g_pending != NULL)
        progress_pending();
    return PMPI_Test(req, flag, status);
}

EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    unsigned idle = 0;
    int flag = 0, rc;

    if (g_pending == NULL)
        return PMPI_Wait(req, status);
    for (;;) {
        int ended = progress_pending();
        rc = PMPI_Test(req, &flag, status);
        if (flag || rc != MPI_SUCCESS)
            return rc;
        if (g_pending == NULL) /* nothing of ours left: MPI's own wait */
            return PMPI_Wait(req, status);
        if (!ended)
            idle_turn(&idle);
    }
}

EXPORT int MPI_Testall(int n, MPI_Request reqs[], int *flag,
                       MPI_Status statuses[])
{
    if (g_pending != NULL)
        progress_pending();
    return PMPI_Testall(n, reqs, flag, statuses);
}

EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    unsigned idle = 0;
    int flag = 0, rc;

    for (;;) {
        if (g_pending == NULL)
            return PMPI_Waitall(n, reqs, statuses);
        int ended = progress_pending();
        rc = PMPI_Testall(n, reqs, &flag, statuses);
        if (flag || rc != MPI_SUCCESS)
            return rc;
        if (!ended)
            idle_turn(&idle);
    }
}

EXPORT int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag,
                       MPI_Status *status)
{
    if (g_pending != NULL)
        progress_pending();
    return PMPI_Testany(n, reqs, index, flag, status);
}

EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *index,
                       MPI_Status *status)
{
    unsigned idle = 0;
    int flag = 0, rc;

    for (;;) {
        if (g_pending == NULL)
            return PMPI_Waitany(n, reqs, index, status);
        int ended = progress_pending();
        rc = PMPI_Testany(n, reqs, index, &flag, status);
        if (flag || rc != MPI_SUCCESS)
            return rc;
        if (!ended)
            idle_turn(&idle);
    }
}

EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int *outcount,
                        int indices[], MPI_Status statuses[])
{
    if (g_pending != NULL)
        progress_pending();
    return PMPI_Testsome(n, reqs, outcount, indices, statuses);
}

EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount,
                        int indices[], MPI_Status statuses[])
{
    unsigned idle = 0;
    int rc;

    for (;;) {
        if (g_pending == NULL)
            return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
        int ended = progress_pending();
        rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
        if (*outcount != 0 || rc != MPI_SUCCESS) /* MPI_UNDEFINED: none active */
            return rc;
        if (!ended)
            idle_turn(&idle);
    }
}

EXPORT int MPI_Request_get_status(MPI_Request req, int *flag,
                                  MPI_Status *status)
{
    if (g_pending != NULL)
        progress_pending();
    return PMPI_Request_get_status(req, flag, status);
}
