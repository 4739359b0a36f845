/*
 * app_mpi.h — MPI-side helpers shared by the apps: start-up, collective
 * allocation with a memory check, and small reductions.  Every function
 * here is collective over MPI_COMM_WORLD unless it says otherwise.
 */
#ifndef OC_APP_MPI_H
#define OC_APP_MPI_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "app.h"
#include "app_perf.h"

typedef struct {
    const char *prog;
    int         rank, size;
    int         local_rank, local_size; /**< among ranks sharing this node */
} oc_app_mpi_t;

/** MPI_Init and fill @p m.  Exits 1 with a message if MPI cannot start. */
void oc_app_mpi_init(oc_app_mpi_t *m, const char *prog, int *argc, char ***argv);

/** One array to allocate with oc_app_mpi_alloc(). */
typedef struct {
    const char *what;  /**< for messages: "table", "targets" */
    uint64_t    n;     /**< number of uint64_t */
    uint64_t  **out;
} oc_app_alloc_t;

/**
 * Allocate every array of @p req (zeroed, huge pages where possible, pages
 * already faulted in) on every rank.  First checks that all the ranks on
 * this node together fit in MemAvailable, so that a table too big for the
 * machine gives a clear message instead of the OOM killer.
 * @return true when every rank got every array; false (all arrays freed,
 *         a message on stderr saying what did not fit) otherwise, on every
 *         rank alike.
 */
bool oc_app_mpi_alloc(const oc_app_mpi_t *m, oc_app_alloc_t *req, int nreq);
void oc_app_mpi_free(oc_app_alloc_t *req, int nreq);

/** Sum of @p v over all ranks. */
uint64_t oc_app_mpi_sum(uint64_t v);
/** True when @p ok on every rank. */
bool oc_app_mpi_all(bool ok);
/** Element-wise sum of @p n uint64_t into @p out on rank 0 only. */
void oc_app_mpi_reduce_u64(const uint64_t *in, uint64_t *out, int n);

/**
 * Write the last-level-cache misses of the timed region, summed over ranks,
 * into rank 0's JSON line: "llc_miss_bytes" (misses x 64) and "perf_event";
 * or, when any rank could not count, "perf_unavailable" with rank 0's
 * reason (or "on some ranks") and no number.  Collective.
 */
void oc_app_mpi_json_perf(const oc_app_mpi_t *m, const oc_app_perf_t *p,
                          oc_app_json_t *j);

/** MPI_Finalize and return the exit status for @p verified. */
int oc_app_mpi_finish(bool verified);

/** Print a message prefixed with the program and rank on stderr. */
void oc_app_mpi_err(const oc_app_mpi_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** MPI_Abort after a message: for failures that would otherwise hang the
 *  other ranks in a collective. */
void oc_app_mpi_die(const oc_app_mpi_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/**
 * A bulk exchange of fixed-size items, the way plain-MPI versions of the
 * apps exchange a batch (their baseline: no aggregation library): count
 * the items per destination, counting-sort them into a send buffer,
 * MPI_Alltoall the counts, MPI_Alltoallv the items.  The buffers are kept
 * from one exchange to the next, allocated pre-faulted (as the offcore
 * versions' buffers are) and grown when a round needs more.
 */
typedef struct {
    size_t       item;                     /**< bytes per item */
    uint32_t     P;
    MPI_Datatype type;                     /**< @c item bytes, contiguous */
    int         *scount, *sdispl, *rcount, *rdispl; /**< [P], last round */
    uint8_t     *sendbuf, *recvbuf;
    size_t       scap, rcap;               /**< items they hold */
} oc_app_a2a_t;

/** Set up for items of @p item bytes, buffers for @p cap items each way.
 *  Not collective.  Dies on no memory. */
void oc_app_a2a_init(oc_app_a2a_t *x, const oc_app_mpi_t *m, size_t item,
                     size_t cap);

/**
 * Exchange: item k of the @p n at @p items goes to rank dests[k].
 * @return the number of items received; *recv points at them (valid until
 *         the next exchange), grouped by source rank in rank order, each
 *         source's in the order it sent them (x->rcount / x->rdispl give
 *         the groups).  Collective.  Dies (MPI_Abort, with a message) when a
 *         count passes MPI's int or memory runs out, which would otherwise
 *         leave the other ranks waiting.
 */
size_t oc_app_a2a(oc_app_a2a_t *x, const oc_app_mpi_t *m, const void *items,
                  const uint32_t *dests, size_t n, const void **recv);

void oc_app_a2a_free(oc_app_a2a_t *x);

#endif /* OC_APP_MPI_H */
