/*
 * ig_common.h — what the offcore and MPI index-gathers share: flags, the
 * table contents, the request stream and the verification.
 *
 * Rank q owns T values; value l of rank q is ig_value(seed, q * T + l), a
 * function of the global index only.  Request i of rank r reads global slot
 * g = range(hash(seed, r, i), P*T); after the run tgt[i] must equal
 * ig_value(seed, g).
 */
#ifndef OC_IG_COMMON_H
#define OC_IG_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "app_mpi.h"

typedef struct {
    uint64_t requests;      /**< per rank, < 2^32 */
    uint64_t table;         /**< values per rank, < 2^32 */
    uint64_t seed;
    uint64_t poll_interval; /**< offcore only */
    uint64_t batch;         /**< MPI only */
    uint64_t corrupt;       /**< testing: spoil one result before verifying */
} ig_opts_t;

/* Key of the value function: a stream no rank's requests use. */
#define IG_VALUE_SALT 0x5bd1e9955bd1e995ull

static inline uint64_t ig_value_key(uint64_t seed)
{
    return oc_app_stream_key(seed ^ IG_VALUE_SALT, 0);
}

/** Value stored at global index @p g (ig_value_key(seed) hoisted). */
static inline uint64_t ig_value(uint64_t vkey, uint64_t g)
{
    return oc_app_hash_k(vkey, g);
}

void ig_parse(ig_opts_t *o, int argc, char **argv, const char *prog,
              bool offcore);

/** Fill this rank's @p table with its values. */
void ig_fill(const oc_app_mpi_t *m, const ig_opts_t *o, uint64_t *table);

/**
 * Check every tgt[i] against the value of the slot request i read.
 * @p replies is how many replies this rank received (must be N) and
 * @p bad_local how many messages it rejected (must be 0); pass
 * UINT64_MAX as @p replies when the version does not count them.
 * With o->corrupt, first spoils one read of the last rank (testing).
 * Collective.  Prints the first mismatch.  @return true on every rank
 * when every rank verified.
 */
bool ig_verify(const oc_app_mpi_t *m, const ig_opts_t *o, uint64_t *tgt,
               uint64_t replies, uint64_t bad_local);

void ig_json(oc_app_json_t *j, const oc_app_mpi_t *m, const ig_opts_t *o,
             const char *placement, double seconds);

#endif /* OC_IG_COMMON_H */
