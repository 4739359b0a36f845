/*
 * app_mpi.c — MPI start-up, collective allocation and reductions for the
 * apps (see app_mpi.h).
 */
#include "app_mpi.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- bulk exchange of fixed-size items ---------------------------------- */

/* A pre-faulted buffer of @p items items of @p item bytes (rounded up to
 * whole uint64_t's for oc_app_alloc_table), or NULL. */
static uint8_t *a2a_alloc(size_t items, size_t item)
{
    uint64_t words = ((uint64_t)items * item + 7) / 8;
    return (uint8_t *)oc_app_alloc_table(words ? words : 1);
}

static void a2a_release(uint8_t *p, size_t items, size_t item)
{
    uint64_t words = ((uint64_t)items * item + 7) / 8;
    if (p != NULL)
        oc_app_free_table((uint64_t *)p, words ? words : 1);
}

void oc_app_a2a_init(oc_app_a2a_t *x, const oc_app_mpi_t *m, size_t item,
                     size_t cap)
{
    const uint32_t P = (uint32_t)m->size;
    *x = (oc_app_a2a_t){.item = item, .P = P, .scap = cap, .rcap = cap};
    if (item == 0 || item > INT_MAX)
        oc_app_mpi_die(m, "exchange items of %zu bytes", item);
    x->scount = calloc(P, sizeof(int));
    x->sdispl = calloc(P, sizeof(int));
    x->rcount = calloc(P, sizeof(int));
    x->rdispl = calloc(P, sizeof(int));
    x->sendbuf = a2a_alloc(cap, item);
    x->recvbuf = a2a_alloc(cap, item);
    if (!x->scount || !x->sdispl || !x->rcount || !x->rdispl || !x->sendbuf ||
        !x->recvbuf)
        oc_app_mpi_die(m, "cannot allocate exchange buffers of %zu x %zu bytes",
                       cap, item);
    MPI_Type_contiguous((int)item, MPI_BYTE, &x->type);
    MPI_Type_commit(&x->type);
}

size_t oc_app_a2a(oc_app_a2a_t *x, const oc_app_mpi_t *m, const void *items,
                  const uint32_t *dests, size_t n, const void **recv)
{
    const uint32_t P = x->P;
    const size_t item = x->item;
    const uint8_t *in = items;

    if (n > INT_MAX)
        oc_app_mpi_die(m, "%zu items to send exceed MPI's int counts", n);
    memset(x->scount, 0, P * sizeof(int));
    for (size_t k = 0; k < n; k++)
        x->scount[dests[k]]++;
    int pos = 0;
    for (uint32_t d = 0; d < P; d++) {
        x->sdispl[d] = pos;
        pos += x->scount[d];
    }
    if (n > x->scap) {
        size_t cap = n + n / 4;
        a2a_release(x->sendbuf, x->scap, item);
        x->sendbuf = a2a_alloc(cap, item);
        x->scap = cap;
        if (x->sendbuf == NULL)
            oc_app_mpi_die(m, "cannot grow the send buffer to %zu items", cap);
    }
    /* counting sort: sdispl[d] walks through d's part, then is put back */
    if (item == 8) {
        uint64_t *out = (uint64_t *)x->sendbuf;
        for (size_t k = 0; k < n; k++)
            memcpy(&out[x->sdispl[dests[k]]++], in + 8 * k, 8);
    } else {
        for (size_t k = 0; k < n; k++)
            memcpy(x->sendbuf + (size_t)x->sdispl[dests[k]]++ * item,
                   in + k * item, item);
    }
    for (uint32_t d = 0; d < P; d++)
        x->sdispl[d] -= x->scount[d];

    MPI_Alltoall(x->scount, 1, MPI_INT, x->rcount, 1, MPI_INT, MPI_COMM_WORLD);
    size_t total = 0;
    for (uint32_t d = 0; d < P; d++) {
        if (total > INT_MAX)
            oc_app_mpi_die(m, "more than %d items to receive", INT_MAX);
        x->rdispl[d] = (int)total;
        total += (size_t)x->rcount[d];
    }
    if (total > INT_MAX)
        oc_app_mpi_die(m, "%zu items to receive exceed MPI's int counts", total);
    if (total > x->rcap) {
        size_t cap = total + total / 4;
        a2a_release(x->recvbuf, x->rcap, item);
        x->recvbuf = a2a_alloc(cap, item);
        x->rcap = cap;
        if (x->recvbuf == NULL)
            oc_app_mpi_die(m, "cannot grow the receive buffer to %zu items", cap);
    }
    MPI_Alltoallv(x->sendbuf, x->scount, x->sdispl, x->type, x->recvbuf,
                  x->rcount, x->rdispl, x->type, MPI_COMM_WORLD);
    *recv = x->recvbuf;
    return total;
}

void oc_app_a2a_free(oc_app_a2a_t *x)
{
    if (x->type != MPI_DATATYPE_NULL && x->scount != NULL)
        MPI_Type_free(&x->type);
    a2a_release(x->sendbuf, x->scap, x->item);
    a2a_release(x->recvbuf, x->rcap, x->item);
    free(x->scount);
    free(x->sdispl);
    free(x->rcount);
    free(x->rdispl);
    *x = (oc_app_a2a_t){0};
}
