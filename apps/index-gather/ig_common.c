/*
 * ig_common.c — flags, table contents, verification and output shared by
 * the offcore and MPI index-gathers (see ig_common.h).
 */
#include "ig_common.h"

#include <inttypes.h>
#include <stdio.h>

#define MAX_32 ((UINT64_C(1) << 32) - 1)

void ig_parse(ig_opts_t *o, int argc, char **argv, const char *prog,
              bool offcore)
{
    *o = (ig_opts_t){
        .requests = 1000000, .table = 10000, .seed = 1,
        .poll_interval = 1024, .batch = 65536,
    };
    oc_app_flag_t flags[] = {
        {"requests", OC_APP_FLAG_SIZE, &o->requests, 0, MAX_32,
         "reads issued by each rank (< 2^32: request ids travel in 32 bits)"},
        {"table", OC_APP_FLAG_SIZE, &o->table, 1, MAX_32,
         "values (uint64) owned by each rank (< 2^32: indices travel in 32 bits)"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX,
         "seed of the request streams and of the table values"},
        {offcore ? "poll-interval" : "batch", OC_APP_FLAG_SIZE,
         offcore ? &o->poll_interval : &o->batch, 1, UINT64_C(1) << 27,
         offcore ? "oc_poll() once every this many sends"
                 : "requests per rank per all-to-all round"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: spoil one read of the last rank after the run, to check that"
         " verification fails (exit 1)"},
    };
    oc_app_parse_flags(argc, argv, prog,
                       offcore
                           ? "Distributed gather over liboffcore: each read is an 8-byte"
                             " request to the\nvalue's owner, whose handler replies"
                             " with 16 bytes; verified exactly."
                           : "Distributed gather over plain MPI: reads bucketed by owner,"
                             " requests and\nreplies exchanged in rounds with"
                             " MPI_Alltoallv; verified exactly.",
                       flags, sizeof flags / sizeof flags[0]);
}

void ig_fill(const oc_app_mpi_t *m, const ig_opts_t *o, uint64_t *table)
{
    const uint64_t vkey = ig_value_key(o->seed);
    const uint64_t base = (uint64_t)m->rank * o->table;
    for (uint64_t l = 0; l < o->table; l++)
        table[l] = ig_value(vkey, base + l);
}

bool ig_verify(const oc_app_mpi_t *m, const ig_opts_t *o, uint64_t *tgt,
               uint64_t replies, uint64_t bad_local)
{
    bool ok = true;
    if (o->corrupt && m->rank == m->size - 1 && o->requests > 0)
        tgt[o->requests / 2] ^= 1;
    if (bad_local != 0) {
        oc_app_mpi_err(m, "rejected %" PRIu64 " malformed or out-of-range"
                          " messages", bad_local);
        ok = false;
    }
    if (replies != UINT64_MAX && replies != o->requests) {
        oc_app_mpi_err(m, "received %" PRIu64 " replies, expected %" PRIu64,
                       replies, o->requests);
        ok = false;
    }
    const uint64_t vkey = ig_value_key(o->seed);
    const uint64_t key = oc_app_stream_key(o->seed, (uint64_t)m->rank);
    const uint32_t P = (uint32_t)m->size;
    uint64_t nbad = 0, first = 0, first_g = 0;
    for (uint64_t i = 0; i < o->requests; i++) {
        uint32_t owner;
        uint64_t idx;
        oc_app_slot(oc_app_hash_k(key, i), P, o->table, &owner, &idx);
        uint64_t g = (uint64_t)owner * o->table + idx;
        if (tgt[i] != ig_value(vkey, g) && nbad++ == 0) {
            first = i;
            first_g = g;
        }
    }
    if (nbad != 0) {
        oc_app_mpi_err(m, "%" PRIu64 " of %" PRIu64 " reads wrong; first: request"
                          " %" PRIu64 " of global slot %" PRIu64 " (rank %" PRIu64
                          " slot %" PRIu64 "): expected 0x%016" PRIx64
                          ", got 0x%016" PRIx64,
                       nbad, o->requests, first, first_g, first_g / o->table,
                       first_g % o->table, ig_value(vkey, first_g), tgt[first]);
        ok = false;
    }
    return oc_app_mpi_all(ok);
}

void ig_json(oc_app_json_t *j, const oc_app_mpi_t *m, const ig_opts_t *o,
             const char *placement, double seconds)
{
    uint64_t total = (uint64_t)m->size * o->requests;
    oc_app_json_begin(j);
    oc_app_json_str(j, "app", "index-gather");
    oc_app_json_str(j, "placement", placement);
    oc_app_json_u64(j, "ranks", (uint64_t)m->size);
    oc_app_json_u64(j, "requests_per_rank", o->requests);
    oc_app_json_u64(j, "table_per_rank", o->table);
    oc_app_json_dbl(j, "seconds", seconds);
    oc_app_json_dbl(j, "rate", seconds > 0 ? (double)total / seconds : 0.0);
}
