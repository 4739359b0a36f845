/*
 * tp_common.h — what the offcore and MPI sparse transposes share: flags,
 * the matrix (apps/common/graph.h), building the transposed CSR from the
 * nonzeros a rank received, and the exact check against a serial
 * transpose, so that the two versions cannot drift apart.
 */
#ifndef OC_TP_COMMON_H
#define OC_TP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "app_mpi.h"
#include "graph.h"

typedef struct {
    uint64_t rows;    /* per rank */
    uint64_t degree;  /* mean nonzeros per row */
    uint64_t seed;
    uint64_t poll_interval; /* offcore only */
    uint64_t corrupt;
} tp_opts_t;

/* One nonzero on its way to its column's owner: 16 bytes. */
typedef struct {
    uint64_t row;  /* global row index */
    uint32_t col;  /* column, local to the receiving rank */
    uint32_t val;
} tp_msg_t;

/* One entry of a transposed row: the original row and the value. */
typedef struct {
    uint64_t row;
    uint32_t val;
    uint32_t pad;
} tp_ent_t;

/** Parse the flags (exits 0 on --help, 2 on a bad flag); @p offcore adds
 *  the offcore-only ones. */
void tp_parse(tp_opts_t *o, int argc, char **argv, const char *prog,
              bool offcore);

/* The value of nonzero @p k of the row with stream key @p key. */
static inline uint32_t tp_value(uint64_t key, uint32_t k)
{
    return (uint32_t)oc_app_mix64(oc_graph_er_word(key, k) ^ OC_APP_GOLDEN);
}

/** Build the CSR of this rank's R transposed rows from the @p n nonzeros
 *  received: off[R + 1], ent[n], each row sorted by (row, value).
 *  @return the bytes of memory it read and wrote (for local_bytes). */
uint64_t tp_build(const tp_msg_t *rx, size_t n, uint64_t R, uint64_t *off,
                  tp_ent_t *ent);

/** Compare (off, ent, n) with a serial transpose of the regenerated
 *  matrix; the first difference on stderr.  Not collective.
 *  @return true when equal. */
bool tp_check(const oc_app_mpi_t *m, const tp_opts_t *o,
              const oc_graph_er_t *g, const uint64_t *off, const tp_ent_t *ent,
              size_t n);

#endif /* OC_TP_COMMON_H */
