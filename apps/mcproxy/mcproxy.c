/*
 * mcproxy.c — a Monte-Carlo particle-transport proxy over liboffcore (binary
 * `mcproxy`), in the spirit of LLNL's Quicksilver.
 *
 * A 3-D mesh of unit cells (nx x ny x nz) is split across ranks in slabs
 * along x.  Every cell has a cross-section table: for each of G energy
 * groups the total cross section and the absorption probability (16 bytes
 * a group, so tracking touches memory the way a real code's lookups do).
 * Each cycle every rank sources particles in its own cells; a particle is
 * tracked segment by segment: the distance to collision is sampled from
 * the cell's cross section, compared with the distance to the cell's
 * faces; a collision absorbs it (its weight is tallied in the cell) or
 * scatters it (new direction and group); a face crossing moves it to the
 * next cell, and when that cell is another rank's, the particle (72 bytes)
 * is sent there fire-and-forget.  Leaving the mesh is escape.
 *
 * Every random number of a particle comes from the counter-based stream of
 * (seed, particle id, event number), so a history does not depend on where
 * or in what order it is tracked.  Weights are 64-bit fixed point, so
 * conservation is checked exactly: sourced = absorbed + escaped + census,
 * in count and in weight.  And every rank replays the particles it sourced
 * serially on the whole mesh: the per-cell absorbed weights, escapes and
 * segments must equal the distributed run's exactly.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "app_oc.h"
#include "mc_common.h"

/* ---- the distributed run -------------------------------------------- */

/* Incoming particles join the stack (checked: a cell of this slab). */
static size_t mc_handler(void *arg, uint32_t src, const void *msgs, size_t len,
                         size_t n)
{
    mc_t *s = arg;
    if (len != sizeof(mc_particle_t)) {
        s->bad += n;
        return n;
    }
    const mc_particle_t *p = msgs;
    for (size_t i = 0; i < n; i++) {
        if (p[i].cell[0] < s->x0 || p[i].cell[0] >= s->x1 ||
            p[i].cell[1] >= s->o->ny || p[i].cell[2] >= s->o->nz ||
            p[i].group >= s->o->groups) {
            s->bad++;
            continue;
        }
        if (mc_push(s, &p[i], 1) != 0) {
            s->oom = 1;
            s->bad++;
        }
    }
    s->handled += n;
    return n;
}

/* Track everything on the stack; particles leaving the slab are sent. */
static void mc_drain(const oc_app_mpi_t *m, oc_context_t *ctx, mc_t *s)
{
    uint64_t since_poll = 0;
    while (s->nq > 0) {
        mc_particle_t p = s->q[--s->nq];
        if (mc_track(s->o, s->xs, s->x0, s->x1, &p, &s->t) == MC_CROSSED) {
            s->t.crossings++;
            oc_app_send(m, ctx, s->owner_of_x[p.cell[0]], &p, sizeof p);
        }
        if (++since_poll >= s->o->poll_interval) {
            since_poll = 0;
            oc_app_poll(m, ctx);
        }
    }
}

int main(int argc, char **argv)
{
    static const char prog[] = "mcproxy";
    mc_opts_t o;
    mc_parse(&o, argc, argv, prog, true);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    mc_t s;
    int rc = mc_setup(&m, &o, prog, &s);
    if (rc != 0)
        return rc;
    oc_context_t *ctx = oc_app_oc_init_burst(&m, mc_handler, &s);

    oc_app_perf_t perf;
    MPI_Barrier(MPI_COMM_WORLD);
    oc_app_perf_start(&perf);
    double t0 = oc_app_now();
    uint64_t rounds = 0;
    for (uint64_t cy = 0; cy < o.cycles; cy++) {
        for (uint64_t i = 0; i < o.particles; i++) {
            mc_particle_t p;
            mc_source(&o, (cy * P + me) * o.particles + i, s.x0, s.x1, &p);
            if (mc_push(&s, &p, 1) != 0)
                oc_app_mpi_die(&m, "cannot queue the source particles");
        }
        /* track until no particle is left anywhere */
        for (;;) {
            mc_drain(&m, ctx, &s);
            oc_app_quiesce(&m, ctx);
            rounds++;
            if (oc_app_mpi_sum(s.nq) == 0)
                break;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    oc_app_perf_stop(&perf);

    /* xs entry per segment, tally r/w per absorption, particle state
     * pushed and popped (2 x 72 bytes) per particle sourced or received */
    uint64_t local = s.t.segments * sizeof(mc_xs_t) + s.t.absorbed * 16 +
                     (o.cycles * o.particles + s.handled) * 2 *
                         sizeof(mc_particle_t);
    uint64_t segs = oc_app_mpi_sum(s.t.segments);
    uint64_t cross = oc_app_mpi_sum(s.t.crossings);
    uint64_t local_bytes = oc_app_mpi_sum(local);

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0) {
        oc_app_json_head(&j, &m, ctx);
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
    oc_app_json_counters(&m, ctx, &j, &sum);
    oc_app_mpi_json_perf(&m, &perf, &j);

    const char *how;
    bool ok = mc_verify(&m, &o, &s, &how);
    if (m.rank == 0) {
        oc_app_json_u64(&j, "local_bytes", local_bytes);
        oc_app_json_str(&j, "verify", how);
    }
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    mc_free(&s);
    return oc_app_mpi_finish(verified);
}
