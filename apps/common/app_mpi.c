/*
 * app_mpi.c — MPI start-up, collective allocation and reductions for the
 * apps (see app_mpi.h).
 */
#include "app_mpi.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void oc_app_mpi_init(oc_app_mpi_t *m, const char *prog, int *argc, char ***argv)
{
    m->prog = prog;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Init failed\n", prog);
        exit(OC_APP_EXIT_FAIL);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m->rank,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &m->local_rank);
    MPI_Comm_size(node, &m->local_size);
    MPI_Comm_free(&node);
}

void oc_app_mpi_err(const oc_app_mpi_t *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: rank %d: ", m->prog, m->rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void oc_app_mpi_die(const oc_app_mpi_t *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: rank %d: ", m->prog, m->rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, OC_APP_EXIT_FAIL);
    exit(OC_APP_EXIT_FAIL);
}

bool oc_app_mpi_alloc(const oc_app_mpi_t *m, oc_app_alloc_t *req, int nreq)
{
    char b1[32], b2[32], b3[32];
    oc_app_u128 need = 0;
    for (int k = 0; k < nreq; k++) {
        *req[k].out = NULL;
        need += (oc_app_u128)req[k].n * 8;
    }
    oc_app_u128 node_need128 = need * (oc_app_u128)m->local_size;
    bool fits = node_need128 <= (oc_app_u128)(UINT64_MAX / 2);
    uint64_t node_need = fits ? (uint64_t)node_need128 : UINT64_MAX;
    /* Everyone reads MemAvailable before anyone allocates. */
    uint64_t avail = oc_app_mem_available();
    MPI_Barrier(MPI_COMM_WORLD);
    if (!fits || node_need > avail) {
        if (m->local_rank == 0) {
            fprintf(stderr, "%s: cannot allocate: ", m->prog);
            for (int k = 0; k < nreq; k++)
                fprintf(stderr, "%s%s of %" PRIu64 " entries (%s)",
                        k ? " + " : "", req[k].what, req[k].n,
                        oc_app_fmt_bytes(req[k].n * 8, b1, sizeof b1));
            fprintf(stderr,
                    " per rank x %d ranks on this node needs %s, but only %s"
                    " is available (MemAvailable); use smaller sizes or fewer"
                    " ranks per node\n",
                    m->local_size,
                    fits ? oc_app_fmt_bytes(node_need, b2, sizeof b2) : "> 16 EiB",
                    oc_app_fmt_bytes(avail, b3, sizeof b3));
        }
        fits = false;
    }
    bool ok = fits;
    for (int k = 0; ok && k < nreq; k++) {
        *req[k].out = oc_app_alloc_table(req[k].n);
        if (*req[k].out == NULL) {
            oc_app_mpi_err(m, "cannot allocate %s of %" PRIu64 " entries (%s)",
                           req[k].what, req[k].n,
                           oc_app_fmt_bytes(req[k].n * 8, b1, sizeof b1));
            ok = false;
        }
    }
    if (!oc_app_mpi_all(ok)) {
        oc_app_mpi_free(req, nreq);
        return false;
    }
    return true;
}

void oc_app_mpi_free(oc_app_alloc_t *req, int nreq)
{
    for (int k = 0; k < nreq; k++) {
        oc_app_free_table(*req[k].out, req[k].n);
        *req[k].out = NULL;
    }
}

uint64_t oc_app_mpi_sum(uint64_t v)
{
    uint64_t s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

bool oc_app_mpi_all(bool ok)
{
    int in = ok ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return out == 1;
}

void oc_app_mpi_reduce_u64(const uint64_t *in, uint64_t *out, int n)
{
    MPI_Reduce(in, out, n, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
}

int oc_app_mpi_finish(bool verified)
{
    MPI_Finalize();
    return verified ? OC_APP_EXIT_OK : OC_APP_EXIT_FAIL;
}

void oc_app_mpi_json_perf(const oc_app_mpi_t *m, const oc_app_perf_t *p,
                          oc_app_json_t *j)
{
    bool all = oc_app_mpi_all(p->ok);
    uint64_t misses = oc_app_mpi_sum(p->ok ? p->misses : 0);
    if (m->rank != 0)
        return;
    if (all) {
        oc_app_json_u64(j, "llc_miss_bytes", misses * OC_APP_PERF_LINE);
        oc_app_json_str(j, "perf_event", p->event);
    } else {
        oc_app_json_str(j, "perf_unavailable",
                        p->ok ? "counters failed on some ranks" : p->why);
    }
}
