/*
 * mc_common.c — flags, mesh, physics and verification shared by the offcore
 * and MPI Monte-Carlo proxies (see mc_common.h, and mcproxy.c for the model).
 */
#include "mc_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mc_parse(mc_opts_t *o, int argc, char **argv, const char *prog,
              bool offcore)
{
    *o = (mc_opts_t){.nx = 24, .ny = 24, .nz = 24, .groups = 230,
                     .particles = 100000, .cycles = 2, .seed = 1,
                     .poll_interval = 64};
    oc_app_flag_t flags[9] = {
        {"nx", OC_APP_FLAG_U64, &o->nx, 1, MAX_DIM,
         "cells along x (split across ranks: at least the rank count)"},
        {"ny", OC_APP_FLAG_U64, &o->ny, 1, MAX_DIM, "cells along y"},
        {"nz", OC_APP_FLAG_U64, &o->nz, 1, MAX_DIM, "cells along z"},
        {"groups", OC_APP_FLAG_U64, &o->groups, 1, 65535,
         "energy groups (cross-section table: 16 bytes per cell and group)"},
        {"particles", OC_APP_FLAG_SIZE, &o->particles, 0,
         UINT64_C(1) << 32, "particles sourced per rank per cycle"},
        {"cycles", OC_APP_FLAG_U64, &o->cycles, 1, 1000, "cycles"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX,
         "seed of the particles and the cross sections"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: add to one tally of the last rank after the run, to check that"
         " verification fails (exit 1)"},
    };
    size_t nflags = 8; /* the offcore version adds a ninth */
    if (offcore)
        flags[nflags++] = (oc_app_flag_t){
            "poll-interval", OC_APP_FLAG_SIZE, &o->poll_interval, 1,
            UINT64_C(1) << 27, "oc_poll() once every this many particles"};
    oc_app_parse_flags(argc, argv, prog,
                       offcore
                           ? "Monte-Carlo particle transport proxy over"
                             " liboffcore: particles crossing to\nanother rank's"
                             " cells are 72-byte messages; verified by exact"
                             " conservation and\na serial replay of every"
                             " history."
                           : "Monte-Carlo particle transport proxy over plain"
                             " MPI: particles crossing to\nanother rank's cells"
                             " are exchanged in rounds of MPI_Alltoallv; verified"
                             "\nby exact conservation and a serial replay of"
                             " every history.",
                       flags, nflags);
}

/* ---- the physics, shared by the run and the replay ----------------- */

static inline double u01(uint64_t h) /* (0, 1] */
{
    return (double)((h >> 11) + 1) * 0x1.0p-53;
}

/* The cross sections of cell @p c, group @p g: a material per cell from
 * three concentric regions, perturbed per cell and group. */
static mc_xs_t mc_xs_of(const mc_opts_t *o, uint64_t c, uint64_t g)
{
    static const double base_t[3] = {1.5, 0.8, 2.5};
    static const double base_a[3] = {0.10, 0.25, 0.05};
    uint64_t ix = c / (o->ny * o->nz), iy = c / o->nz % o->ny, iz = c % o->nz;
    double dx = (ix + 0.5) / o->nx - 0.5, dy = (iy + 0.5) / o->ny - 0.5,
           dz = (iz + 0.5) / o->nz - 0.5;
    double r2 = dx * dx + dy * dy + dz * dz;
    int mat = r2 < 0.04 ? 0 : r2 < 0.16 ? 1 : 2;
    uint64_t h = oc_app_hash(o->seed ^ 0x5853u, c, g);
    return (mc_xs_t){base_t[mat] * (0.5 + u01(h)),
                     base_a[mat] * (0.5 + u01(oc_app_mix64(h)))};
}

static void mc_isotropic(uint64_t h1, uint64_t h2, double dir[3])
{
    double mu = 2.0 * u01(h1) - 1.0, phi = 2.0 * M_PI * u01(h2);
    double s = sqrt(fmax(0.0, 1.0 - mu * mu));
    dir[0] = mu;
    dir[1] = s * cos(phi);
    dir[2] = s * sin(phi);
}

/* Particle @p id's birth in a cell of slab [x0, x1). */
void mc_source(const mc_opts_t *o, uint64_t id, uint64_t x0,
                      uint64_t x1, mc_particle_t *p)
{
    uint64_t key = oc_app_stream_key(o->seed, id);
    uint64_t c[3] = {x0 + oc_app_range(oc_app_hash_k(key, 0), x1 - x0),
                     oc_app_range(oc_app_hash_k(key, 1), o->ny),
                     oc_app_range(oc_app_hash_k(key, 2), o->nz)};
    for (int a = 0; a < 3; a++) {
        p->cell[a] = (uint16_t)c[a];
        p->pos[a] = (double)c[a] + u01(oc_app_hash_k(key, 3 + a)) * 0.999;
    }
    mc_isotropic(oc_app_hash_k(key, 6), oc_app_hash_k(key, 7), p->dir);
    p->group = (uint16_t)oc_app_range(oc_app_hash_k(key, 8), o->groups);
    p->weight = (UINT64_C(1) << 24) + (oc_app_hash_k(key, 9) & 0xffffff);
    p->id_ev = id << 24 | 10; /* events 0..9 used at birth */
}

/* Track @p p while it stays in cells for which @p xs_at gives cross
 * sections (cell x in [x0, x1)); tally into @p t (absorbed weight indexed
 * by cell relative to x0).  Returns how the history left: absorbed,
 * escaped, census, or crossed into x outside [x0, x1) (p updated). */
int mc_track(const mc_opts_t *o, const mc_xs_t *xs, uint64_t x0,
                    uint64_t x1, mc_particle_t *p, mc_tally_t *t)
{
    const uint64_t G = o->groups, ny = o->ny, nz = o->nz;
    const uint64_t key = oc_app_stream_key(o->seed, p->id_ev >> 24);
    uint32_t ev = (uint32_t)(p->id_ev & 0xffffff);
    const uint64_t dims[3] = {o->nx, ny, nz};

    for (;;) {
        if (ev >= MAX_EVENTS) {
            t->census++;
            t->census_w += p->weight;
            p->id_ev = (p->id_ev >> 24) << 24 | ev;
            return MC_CENSUS;
        }
        t->segments++;
        uint64_t cell = ((uint64_t)(p->cell[0] - x0) * ny + p->cell[1]) * nz +
                        p->cell[2];
        const mc_xs_t x = xs[cell * G + p->group];
        double d_coll = -log(u01(oc_app_hash_k(key, ev++))) / x.sigma_t;
        /* distance to the nearest face of the unit cell */
        double d_face = INFINITY;
        int axis = 0, step = 0;
        for (int a = 0; a < 3; a++) {
            double d = INFINITY;
            if (p->dir[a] > 0)
                d = ((double)p->cell[a] + 1.0 - p->pos[a]) / p->dir[a];
            else if (p->dir[a] < 0)
                d = ((double)p->cell[a] - p->pos[a]) / p->dir[a];
            if (d < d_face) {
                d_face = d;
                axis = a;
                step = p->dir[a] > 0 ? 1 : -1;
            }
        }
        if (d_coll < d_face) {
            for (int a = 0; a < 3; a++)
                p->pos[a] += d_coll * p->dir[a];
            if (u01(oc_app_hash_k(key, ev++)) <= x.p_abs) {
                t->absorbed++;
                t->absorbed_w[cell] += p->weight;
                return MC_ABSORBED;
            }
            mc_isotropic(oc_app_hash_k(key, ev), oc_app_hash_k(key, ev + 1),
                         p->dir);
            ev += 2;
            p->group = (uint16_t)oc_app_range(oc_app_hash_k(key, ev++), G);
            continue;
        }
        /* move to the face, exactly onto it on the crossing axis */
        for (int a = 0; a < 3; a++)
            if (a != axis)
                p->pos[a] += d_face * p->dir[a];
        int64_t nc = (int64_t)p->cell[axis] + step;
        if (nc < 0 || (uint64_t)nc >= dims[axis]) {
            t->escaped++;
            t->escaped_w += p->weight;
            return MC_ESCAPED;
        }
        p->pos[axis] = step > 0 ? (double)nc : (double)nc + 1.0;
        p->cell[axis] = (uint16_t)nc;
        if (axis == 0 && ((uint64_t)nc < x0 || (uint64_t)nc >= x1)) {
            p->id_ev = (p->id_ev >> 24) << 24 | ev;
            return MC_CROSSED;
        }
    }
}

int mc_push(mc_t *s, const mc_particle_t *p, size_t n)
{
    if (s->nq + n > s->capq) {
        mc_particle_t *q = oc_app_grow(s->q, &s->capq, s->nq + n, sizeof *q);
        if (q == NULL)
            return -1;
        s->q = q;
    }
    memcpy(s->q + s->nq, p, n * sizeof *p);
    s->nq += n;
    return 0;
}

uint64_t cells_of(const mc_opts_t *o, uint64_t x0, uint64_t x1)
{
    return (x1 - x0) * o->ny * o->nz;
}

/* Fill the cross sections of slab [x0, x1). */
static mc_xs_t *mc_fill_xs(const mc_opts_t *o, uint64_t x0, uint64_t x1)
{
    uint64_t n = cells_of(o, x0, x1) * o->groups;
    mc_xs_t *xs = (mc_xs_t *)oc_app_alloc_table(2 * n);
    if (xs == NULL)
        return NULL;
    uint64_t c0 = x0 * o->ny * o->nz;
    for (uint64_t c = 0; c < cells_of(o, x0, x1); c++)
        for (uint64_t g = 0; g < o->groups; g++)
            xs[c * o->groups + g] = mc_xs_of(o, c0 + c, g);
    return xs;
}

/* ---- verification ------------------------------------------------------ */

/* Replay every particle this rank sourced, serially on the whole mesh,
 * into @p r (absorbed_w over every cell). */
static bool mc_replay(const mc_opts_t *o, const mc_t *s, mc_tally_t *r)
{
    mc_xs_t *xs = mc_fill_xs(o, 0, o->nx);
    uint64_t ncells = cells_of(o, 0, o->nx);
    memset(r, 0, sizeof *r);
    r->absorbed_w = calloc(ncells, sizeof *r->absorbed_w);
    if (xs == NULL || r->absorbed_w == NULL) {
        if (xs != NULL)
            oc_app_free_table((uint64_t *)xs, 2 * ncells * o->groups);
        free(r->absorbed_w);
        return false;
    }
    for (uint64_t cy = 0; cy < o->cycles; cy++) {
        for (uint64_t i = 0; i < o->particles; i++) {
            uint64_t id = (cy * s->P + s->me) * o->particles + i;
            mc_particle_t p;
            mc_source(o, id, s->x0, s->x1, &p);
            int how = mc_track(o, xs, 0, o->nx, &p, r);
            (void)how; /* never crosses: the whole mesh is "local" */
        }
    }
    oc_app_free_table((uint64_t *)xs, 2 * ncells * o->groups);
    return true;
}

bool mc_verify(const oc_app_mpi_t *m, const mc_opts_t *o, mc_t *s,
                      const char **how)
{
    bool ok = true;
    const uint64_t slab = cells_of(o, s->x0, s->x1), ncells = cells_of(o, 0, o->nx);
    *how = "full";
    if (s->bad != 0 || s->oom) {
        oc_app_mpi_err(m, "%" PRIu64 " malformed particles received%s", s->bad,
                       s->oom ? " (out of memory queueing)" : "");
        ok = false;
    }
    if (o->corrupt && s->me == s->P - 1 && slab > 0)
        s->t.absorbed_w[slab / 2] += 1;

    /* conservation, exact */
    uint64_t src_n = 0, src_w = 0;
    for (uint64_t cy = 0; cy < o->cycles; cy++)
        for (uint64_t i = 0; i < o->particles; i++) {
            mc_particle_t p;
            mc_source(o, (cy * s->P + s->me) * o->particles + i, s->x0, s->x1, &p);
            src_n++;
            src_w += p.weight;
        }
    uint64_t abs_w = 0;
    for (uint64_t c = 0; c < slab; c++)
        abs_w += s->t.absorbed_w[c];
    uint64_t v[7] = {src_n, src_w, s->t.absorbed, abs_w,
                     s->t.escaped + s->t.census, s->t.escaped_w + s->t.census_w,
                     s->t.segments};
    uint64_t g[7];
    MPI_Allreduce(v, g, 7, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (g[0] != g[2] + g[4] || g[1] != g[3] + g[5]) {
        if (m->rank == 0)
            oc_app_mpi_err(m, "not conserved: sourced %" PRIu64 " particles of"
                           " weight %" PRIu64 "; absorbed %" PRIu64 " (%" PRIu64
                           ") + escaped or census %" PRIu64 " (%" PRIu64 ")",
                           g[0], g[1], g[2], g[3], g[4], g[5]);
        ok = false;
    }

    /* the serial replay, summed over ranks, cell by cell */
    mc_tally_t r;
    if (!mc_replay(o, s, &r)) {
        oc_app_mpi_err(m, "cannot allocate the replay's mesh");
        return oc_app_mpi_all(false);
    }
    uint64_t *all = malloc(ncells * sizeof *all);
    if (all == NULL)
        oc_app_mpi_die(m, "cannot allocate the replay's tallies");
    MPI_Allreduce(r.absorbed_w, all, (int)ncells, MPI_UINT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    uint64_t c0 = s->x0 * o->ny * o->nz, nbad = 0, first = 0;
    for (uint64_t c = 0; c < slab; c++)
        if (all[c0 + c] != s->t.absorbed_w[c] && nbad++ == 0)
            first = c;
    if (nbad) {
        oc_app_mpi_err(m, "%" PRIu64 " of %" PRIu64 " cells' absorbed weight"
                       " differ from the serial replay; first bad cell %" PRIu64
                       ": replay %" PRIu64 ", run %" PRIu64, nbad, slab,
                       c0 + first, all[c0 + first], s->t.absorbed_w[first]);
        ok = false;
    }
    uint64_t rv[4] = {r.escaped, r.escaped_w, r.census, r.segments}, rg[4];
    MPI_Allreduce(rv, rg, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    uint64_t dv[4] = {s->t.escaped, s->t.escaped_w, s->t.census, s->t.segments},
             dg[4];
    MPI_Allreduce(dv, dg, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (memcmp(rg, dg, sizeof rg) != 0) {
        if (m->rank == 0)
            oc_app_mpi_err(m, "replay differs: escaped %" PRIu64 "/%" PRIu64
                           ", escaped weight %" PRIu64 "/%" PRIu64 ", census %"
                           PRIu64 "/%" PRIu64 ", segments %" PRIu64 "/%" PRIu64
                           " (replay/run)", rg[0], dg[0], rg[1], dg[1], rg[2],
                           dg[2], rg[3], dg[3]);
        ok = false;
    }
    free(all);
    free(r.absorbed_w);
    return oc_app_mpi_all(ok);
}

int mc_setup(const oc_app_mpi_t *m, const mc_opts_t *o, const char *prog,
             mc_t *s)
{
    const uint32_t P = (uint32_t)m->size, me = (uint32_t)m->rank;
    /* particle ids share a word with 24 bits of event count */
    if ((double)o->cycles * P * (double)o->particles >= 0x1p40) {
        if (m->rank == 0)
            fprintf(stderr, "%s: --cycles x ranks x --particles must stay below"
                    " 2^40 particles (try --help)\n", prog);
        MPI_Finalize();
        return OC_APP_EXIT_USAGE;
    }
    if (o->nx < P) {
        if (m->rank == 0)
            fprintf(stderr, "%s: --nx %" PRIu64 " is fewer cells than the %u"
                    " ranks that split it (try --help)\n", prog, o->nx, P);
        MPI_Finalize();
        return OC_APP_EXIT_USAGE;
    }

    *s = (mc_t){.o = o, .P = P, .me = me};
    s->x0 = o->nx * me / P;
    s->x1 = o->nx * (me + 1) / P;
    s->owner_of_x = malloc(o->nx * sizeof *s->owner_of_x);
    const uint64_t slab = cells_of(o, s->x0, s->x1);
    s->t.absorbed_w = calloc(slab ? slab : 1, sizeof *s->t.absorbed_w);
    s->xs = mc_fill_xs(o, s->x0, s->x1);
    s->capq = o->particles + 1024;
    s->q = malloc(s->capq * sizeof *s->q);
    if (s->owner_of_x == NULL || s->t.absorbed_w == NULL || s->xs == NULL ||
        s->q == NULL)
        oc_app_mpi_die(m, "cannot allocate the slab (%" PRIu64 " cells x %"
                       PRIu64 " groups)", slab, o->groups);
    for (uint32_t r = 0; r < P; r++)
        for (uint64_t x = o->nx * r / P; x < o->nx * (r + 1) / P; x++)
            s->owner_of_x[x] = (uint16_t)r;

    return 0;
}

void mc_free(mc_t *s)
{
    oc_app_free_table((uint64_t *)s->xs,
                      2 * cells_of(s->o, s->x0, s->x1) * s->o->groups);
    free(s->q);
    free(s->t.absorbed_w);
    free(s->owner_of_x);
}
