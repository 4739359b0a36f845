/*
 * hist_common.h — what the offcore and MPI histograms share: the flags, the
 * update stream and the exact verification, so that the two versions
 * cannot drift apart.
 *
 * Update i of rank r targets global slot g = range(hash(seed, r, i), P*T)
 * of a table distributed as P blocks of T counters; the owner of g
 * increments its counter g % T.
 */
#ifndef OC_HIST_COMMON_H
#define OC_HIST_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "app_mpi.h"

typedef struct {
    uint64_t updates;       /**< per rank */
    uint64_t table;         /**< counters per rank */
    uint64_t seed;
    uint64_t poll_interval; /**< offcore only */
    uint64_t batch;         /**< MPI only */
    uint64_t corrupt;       /**< testing: spoil one result before verifying */
} hist_opts_t;

/** Parse the flags (exits 0 on --help, 2 on a bad flag).  @p offcore
 *  selects the offcore flags (--poll-interval) or the MPI ones (--batch). */
void hist_parse(hist_opts_t *o, int argc, char **argv, const char *prog,
                bool offcore);

/**
 * Verify this rank's @p table exactly, then agree with the others.
 * Collective.  Regenerates every rank's update stream, and
 * checks: the global sum of counters is ranks x updates, and every counter
 * equals the number of updates that target it.  @p bad_local counts
 * messages this rank rejected (malformed, out of range): it must be 0.
 * Destroys the table's contents (counts are subtracted in place, so that
 * verification needs no second table of the same size).
 * With o->corrupt, first adds 1 to one counter of the last rank (testing).
 * Prints the first mismatch on stderr.  @return true on every rank when
 * all ranks verified.
 */
bool hist_verify(const oc_app_mpi_t *m, const hist_opts_t *o, uint64_t *table,
                 uint64_t bad_local);

/** Fill the fields common to both versions into rank 0's JSON line. */
void hist_json(oc_app_json_t *j, const oc_app_mpi_t *m, const hist_opts_t *o,
               const char *placement, double seconds);

#endif /* OC_HIST_COMMON_H */
