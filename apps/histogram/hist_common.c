/*
 * hist_common.c — flags, verification and output shared by the offcore and
 * MPI histograms (see hist_common.h).  Runs outside the timed region.
 */
#include "hist_common.h"

#include <inttypes.h>
#include <stdio.h>

#define MAX_COUNT (UINT64_C(1) << 40)

void hist_parse(hist_opts_t *o, int argc, char **argv, const char *prog,
                bool offcore)
{
    *o = (hist_opts_t){
        .updates = 1000000, .table = 10000, .seed = 1,
        .poll_interval = 1024, .batch = 65536,
    };
    oc_app_flag_t flags[] = {
        {"updates", OC_APP_FLAG_SIZE, &o->updates, 0, MAX_COUNT,
         "updates issued by each rank"},
        {"table", OC_APP_FLAG_SIZE, &o->table, 1, MAX_COUNT,
         "counters (uint64) owned by each rank"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX,
         "seed of the update streams"},
        {offcore ? "poll-interval" : "batch", OC_APP_FLAG_SIZE,
         offcore ? &o->poll_interval : &o->batch, 1, UINT64_C(1) << 27,
         offcore ? "oc_poll() once every this many sends"
                 : "updates per rank per all-to-all round"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: add 1 to one counter of the last rank after the run, to check"
         " that verification fails (exit 1)"},
    };
    oc_app_parse_flags(argc, argv, prog,
                       offcore
                           ? "Distributed histogram over liboffcore: each update is an"
                             " 8-byte message\nto the counter's owner, aggregated by"
                             " the runtime; verified exactly."
                           : "Distributed histogram over plain MPI: updates bucketed by"
                             " owner, exchanged\nin rounds with MPI_Alltoall(v);"
                             " verified exactly.",
                       flags, sizeof flags / sizeof flags[0]);
}

/* How many updates of all ranks target local slot @p l of rank @p me. */
static uint64_t expected_at(const oc_app_mpi_t *m, const hist_opts_t *o,
                            uint64_t l)
{
    uint64_t c = 0;
    for (int r = 0; r < m->size; r++) {
        uint64_t key = oc_app_stream_key(o->seed, (uint64_t)r);
        for (uint64_t i = 0; i < o->updates; i++) {
            uint32_t owner;
            uint64_t idx;
            oc_app_slot(oc_app_hash_k(key, i), (uint32_t)m->size, o->table,
                        &owner, &idx);
            c += (owner == (uint32_t)m->rank) & (idx == l);
        }
    }
    return c;
}

bool hist_verify(const oc_app_mpi_t *m, const hist_opts_t *o, uint64_t *table,
                 uint64_t bad_local)
{
    bool ok = true;
    const uint64_t T = o->table;
    const uint32_t P = (uint32_t)m->size, me = (uint32_t)m->rank;

    if (o->corrupt && m->rank == m->size - 1)
        table[T / 2]++;
    if (bad_local != 0) {
        oc_app_mpi_err(m, "received %" PRIu64 " malformed or out-of-range"
                          " update messages", bad_local);
        ok = false;
    }

    uint64_t sum = 0;
    for (uint64_t l = 0; l < T; l++)
        sum += table[l];
    uint64_t total = oc_app_mpi_sum(sum);
    uint64_t want = (uint64_t)P * o->updates;
    if (total != want) {
        if (m->rank == 0)
            oc_app_mpi_err(m, "global total of counters is %" PRIu64
                              ", expected %d ranks x %" PRIu64 " updates = %" PRIu64,
                           total, m->size, o->updates, want);
        ok = false;
    }

    /* Subtract every update that targets this rank; a correct table ends
     * all zero.  Branch-free: updates for other ranks subtract 0 from
     * slot 0, which keeps a 1-in-P branch out of a loop of P x N. */
    for (uint32_t r = 0; r < P; r++) {
        uint64_t key = oc_app_stream_key(o->seed, r);
        for (uint64_t i = 0; i < o->updates; i++) {
            uint32_t owner;
            uint64_t idx;
            oc_app_slot(oc_app_hash_k(key, i), P, T, &owner, &idx);
            uint64_t mine = owner == me;
            table[idx & (0 - mine)] -= mine;
        }
    }
    uint64_t nbad = 0, first = 0;
    for (uint64_t l = 0; l < T; l++) {
        if (table[l] != 0) {
            if (nbad++ == 0)
                first = l;
        }
    }
    if (nbad != 0) {
        uint64_t exp = expected_at(m, o, first);
        oc_app_mpi_err(m, "%" PRIu64 " of %" PRIu64 " counters wrong; first bad"
                          " slot %" PRIu64 " (global %" PRIu64 "): expected %"
                          PRIu64 ", got %" PRIu64,
                       nbad, T, first, (uint64_t)me * T + first, exp,
                       exp + table[first]);
        ok = false;
    }
    return oc_app_mpi_all(ok);
}

void hist_json(oc_app_json_t *j, const oc_app_mpi_t *m, const hist_opts_t *o,
               const char *placement, double seconds)
{
    uint64_t total = (uint64_t)m->size * o->updates;
    oc_app_json_begin(j);
    oc_app_json_str(j, "app", "histogram");
    oc_app_json_str(j, "placement", placement);
    oc_app_json_u64(j, "ranks", (uint64_t)m->size);
    oc_app_json_u64(j, "updates_per_rank", o->updates);
    oc_app_json_u64(j, "table_per_rank", o->table);
    oc_app_json_dbl(j, "seconds", seconds);
    oc_app_json_dbl(j, "rate", seconds > 0 ? (double)total / seconds : 0.0);
}
