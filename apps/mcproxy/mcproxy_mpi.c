/*
 * mcproxy_mpi.c — the same Monte-Carlo transport proxy over plain MPI
 * (binary `mcproxy-mpi`), written the way such codes are written without a
 * messaging library: track every local particle; those crossing into
 * another rank's slab are packed per destination; exchange them in rounds
 * (MPI_Alltoall of counts, MPI_Alltoallv of 72-byte particles) until no
 * rank has any left.  The physics and the verification are the offcore
 * version's (mc_common.c), so the histories, tallies and checks are
 * identical.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "mc_common.h"

int main(int argc, char **argv)
{
    static const char prog[] = "mcproxy-mpi";
    mc_opts_t o;
    mc_parse(&o, argc, argv, prog, false);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    mc_t s;
    int rc = mc_setup(&m, &o, prog, &s);
    if (rc != 0)
        return rc;

    /* outgoing particles and their destinations, exchanged in bulk */
    size_t capo = 1024, nout = 0;
    mc_particle_t *out = malloc(capo * sizeof *out);
    uint32_t *dest = malloc(capo * sizeof *dest);
    if (out == NULL || dest == NULL)
        oc_app_mpi_die(&m, "cannot allocate the exchange buffers");
    oc_app_a2a_t x;
    oc_app_a2a_init(&x, &m, sizeof(mc_particle_t), capo);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = oc_app_now();
    uint64_t rounds = 0;
    for (uint64_t cy = 0; cy < o.cycles; cy++) {
        for (uint64_t i = 0; i < o.particles; i++) {
            mc_particle_t p;
            mc_source(&o, (cy * P + me) * o.particles + i, s.x0, s.x1, &p);
            if (mc_push(&s, &p, 1) != 0)
                oc_app_mpi_die(&m, "cannot queue the source particles");
        }
        for (;;) {
            /* track everything local; keep the ones that cross */
            nout = 0;
            while (s.nq > 0) {
                mc_particle_t p = s.q[--s.nq];
                if (mc_track(&o, s.xs, s.x0, s.x1, &p, &s.t) != MC_CROSSED)
                    continue;
                s.t.crossings++;
                if (nout == capo) {
                    capo *= 2;
                    out = realloc(out, capo * sizeof *out);
                    dest = realloc(dest, capo * sizeof *dest);
                    if (out == NULL || dest == NULL)
                        oc_app_mpi_die(&m, "cannot grow the outgoing particles");
                }
                dest[nout] = s.owner_of_x[p.cell[0]];
                out[nout++] = p;
            }
            /* bucket by destination, exchange */
            const void *recv;
            size_t total = oc_app_a2a(&x, &m, out, dest, nout, &recv);
            rounds++;
            if (total > 0 && mc_push(&s, (const mc_particle_t *)recv, total) != 0)
                oc_app_mpi_die(&m, "cannot queue the received particles");
            s.handled += total;
            if (oc_app_mpi_sum(total) == 0)
                break;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    uint64_t segs = oc_app_mpi_sum(s.t.segments);
    uint64_t cross = oc_app_mpi_sum(s.t.crossings);

    oc_app_json_t j;
    if (m.rank == 0) {
        oc_app_json_begin(&j);
        oc_app_json_str(&j, "app", "mcproxy");
        oc_app_json_str(&j, "placement", "mpi");
        oc_app_json_u64(&j, "ranks", P);
        oc_app_json_u64(&j, "nx", o.nx);
        oc_app_json_u64(&j, "ny", o.ny);
        oc_app_json_u64(&j, "nz", o.nz);
        oc_app_json_u64(&j, "groups", o.groups);
        oc_app_json_u64(&j, "particles_per_rank_cycle", o.particles);
        oc_app_json_u64(&j, "cycles", o.cycles);
        oc_app_json_u64(&j, "segments", segs);
        oc_app_json_u64(&j, "crossings", cross);
        oc_app_json_u64(&j, "rounds", rounds);
        oc_app_json_dbl(&j, "seconds", seconds);
        oc_app_json_dbl(&j, "rate", seconds > 0 ? (double)segs / seconds : 0);
        oc_app_json_str(&j, "rate_unit", "segments/s");
    }
    const char *how;
    bool verified = mc_verify(&m, &o, &s, &how);
    if (m.rank == 0) {
        oc_app_json_str(&j, "verify", how);
        oc_app_json_bool(&j, "verified", verified);
        oc_app_json_print(&j);
    }
    oc_app_a2a_free(&x);
    free(out);
    free(dest);
    mc_free(&s);
    return oc_app_mpi_finish(verified);
}
