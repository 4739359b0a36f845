/*
 * mc_common.h — what the offcore and MPI Monte-Carlo proxies share: flags,
 * the mesh and its cross sections, the physics of one history (the same
 * function tracks a particle in either version and in the serial replay),
 * and the exact verification.  See mcproxy.c for the model.
 */
#ifndef OC_MC_COMMON_H
#define OC_MC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "app_mpi.h"

/* A history longer than this many events ends in census (counted). */
#define MAX_EVENTS 100000u
#define MAX_DIM    4096u

typedef struct {
    uint64_t nx, ny, nz;
    uint64_t groups;
    uint64_t particles; /* sourced per rank per cycle */
    uint64_t cycles;
    uint64_t seed;
    uint64_t poll_interval; /* offcore only */
    uint64_t corrupt;
} mc_opts_t;

/* A particle in flight: the message between ranks.  72 bytes. */
typedef struct {
    double   pos[3];
    double   dir[3];
    uint64_t weight;   /* fixed point */
    uint64_t id_ev;    /* particle id << 24 | events so far */
    uint16_t cell[3];
    uint16_t group;
} mc_particle_t;

/* Cross sections of one cell and group. */
typedef struct {
    double sigma_t;  /* per unit length */
    double p_abs;    /* probability that a collision absorbs */
} mc_xs_t;

/* Tallies: per-cell absorbed weight and global sums. */
typedef struct {
    uint64_t *absorbed_w;  /* [cells of the region tallied] */
    uint64_t  absorbed, escaped, escaped_w, census, census_w;
    uint64_t  segments, crossings;
} mc_tally_t;

typedef struct {
    const mc_opts_t *o;
    uint32_t   P, me;
    uint64_t   x0, x1;        /* this rank's slab [x0, x1) */
    uint16_t  *owner_of_x;    /* [nx] */
    mc_xs_t   *xs;            /* [(x1 - x0) * ny * nz * G] */
    mc_tally_t t;
    mc_particle_t *q;         /* particles to track (a stack) */
    size_t     nq, capq;
    uint64_t   bad;
    int        oom;
    uint64_t   handled;       /* particles received */
} mc_t;


enum { MC_ABSORBED, MC_ESCAPED, MC_CENSUS, MC_CROSSED };

/** Parse the flags (exits 0 on --help, 2 on a bad flag); @p offcore adds
 *  the offcore-only ones. */
void mc_parse(mc_opts_t *o, int argc, char **argv, const char *prog,
              bool offcore);

/** Check the sizes against the rank count and set up this rank's slab
 *  (cross sections, tallies, stack).  Prints why and returns
 *  OC_APP_EXIT_USAGE on bad sizes (MPI already finalized then); 0 when
 *  ready.  Dies when memory is short. */
int mc_setup(const oc_app_mpi_t *m, const mc_opts_t *o, const char *prog,
             mc_t *s);
void mc_free(mc_t *s);

/** Particle @p id's birth in a cell of slab [x0, x1). */
void mc_source(const mc_opts_t *o, uint64_t id, uint64_t x0, uint64_t x1,
               mc_particle_t *p);

/** Track @p p while it stays in slab [x0, x1) (cross sections @p xs,
 *  tallies @p t): MC_ABSORBED, MC_ESCAPED, MC_CENSUS, or MC_CROSSED with
 *  p updated to its state at the face it crossed. */
int mc_track(const mc_opts_t *o, const mc_xs_t *xs, uint64_t x0, uint64_t x1,
             mc_particle_t *p, mc_tally_t *t);

/** Push @p n particles on the stack; -1 when memory is short. */
int mc_push(mc_t *s, const mc_particle_t *p, size_t n);

/** Cells of slab [x0, x1). */
uint64_t cells_of(const mc_opts_t *o, uint64_t x0, uint64_t x1);

/** Conservation and the serial replay of every history, exactly;
 *  @p how says which ("full").  Collective. */
bool mc_verify(const oc_app_mpi_t *m, const mc_opts_t *o, mc_t *s,
               const char **how);

#endif /* OC_MC_COMMON_H */
