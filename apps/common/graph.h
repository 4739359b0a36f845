/*
 * graph.h — seeded random inputs for the graph apps (transpose, triangle,
 * sssp), generated from the counter-based stream of app.h so that any rank
 * can regenerate any part of the input without communicating it.
 *
 * Vertices (or matrix rows) are distributed in blocks of `per` per rank:
 * global vertex g = owner * per + local.  Neighbours are drawn as (owner,
 * local) pairs with oc_app_slot, so no division is needed on hot paths.
 *
 * - Erdős–Rényi G(n, p) with p = d / n: vertex v's out-degree is Poisson(d)
 *   (the limit of Binomial(n, d/n)), drawn by inversion from element 0 of
 *   v's stream; its k-th neighbour is uniform, from element k + 1.
 * - R-MAT (Chakrabarti, Zhan, Faloutsos 2004) with the Graph500 parameters
 *   a, b, c = 0.57, 0.19, 0.19: edge e's endpoints are chosen bit by bit
 *   from elements of the stream of (seed, e).
 */
#ifndef OC_APP_GRAPH_H
#define OC_APP_GRAPH_H

#include <math.h>
#include <stdint.h>

#include "app.h"

/* Largest mean degree the Poisson inversion handles (exp(-d) must not
 * underflow): the flags of the apps cap --degree here. */
#define OC_GRAPH_MAX_DEGREE 500

typedef struct {
    uint64_t seed;
    uint32_t P;      /* ranks */
    uint64_t per;    /* vertices per rank */
    double   d;      /* mean degree */
    double   emd;    /* exp(-d) */
} oc_graph_er_t;

static inline void oc_graph_er_init(oc_graph_er_t *g, uint64_t seed,
                                    uint32_t P, uint64_t per, double d)
{
    g->seed = seed;
    g->P = P;
    g->per = per;
    g->d = d;
    g->emd = exp(-d);
}

/** Key of vertex @p v's stream: pass it to the two functions below. */
static inline uint64_t oc_graph_er_key(const oc_graph_er_t *g, uint64_t v)
{
    return oc_app_stream_key(g->seed ^ 0x4552475241504831ull, v);
}

/** Out-degree of the vertex with stream key @p key: Poisson(d). */
static inline uint32_t oc_graph_er_degree(const oc_graph_er_t *g, uint64_t key)
{
    double u = (double)(oc_app_hash_k(key, 0) >> 11) * 0x1.0p-53;
    double p = g->emd, F = p;
    uint32_t k = 0;
    while (u > F && k < 16 * OC_GRAPH_MAX_DEGREE) {
        k++;
        p *= g->d / k;
        F += p;
    }
    return k;
}

/** The raw random word of neighbour @p k (0-based) of the vertex with
 *  stream key @p key; oc_graph_er_nbr splits it. */
static inline uint64_t oc_graph_er_word(uint64_t key, uint32_t k)
{
    return oc_app_hash_k(key, (uint64_t)k + 1);
}

/** Neighbour @p k of the vertex with stream key @p key, as (owner, local). */
static inline void oc_graph_er_nbr(const oc_graph_er_t *g, uint64_t key,
                                   uint32_t k, uint32_t *owner, uint64_t *local)
{
    oc_app_slot(oc_graph_er_word(key, k), g->P, g->per, owner, local);
}

/* ---- R-MAT ------------------------------------------------------------ */

/** Endpoints of R-MAT edge @p e on 2^@p scale vertices (global ids). */
static inline void oc_graph_rmat_edge(uint64_t seed, unsigned scale,
                                      uint64_t e, uint64_t *u, uint64_t *v)
{
    /* a = 0.57, b = 0.19, c = 0.19, d = 0.05 as 16-bit thresholds */
    const uint32_t A = 37355, AB = 49807, ABC = 62259;
    uint64_t key = oc_app_stream_key(seed ^ 0x524d415447524148ull, e);
    uint64_t x = 0, y = 0, h = 0;
    for (unsigned l = 0; l < scale; l++) {
        if ((l & 3) == 0)
            h = oc_app_hash_k(key, l >> 2);
        uint32_t r = (uint32_t)(h & 0xffff);
        h >>= 16;
        uint64_t bx = r >= AB, by = (r >= A && r < AB) || r >= ABC;
        x = (x << 1) | bx;
        y = (y << 1) | by;
    }
    /* scramble the ids so that high degree is not concentrated on rank 0
     * (a bijection of [0, 2^scale): multiply by an odd constant, mask) */
    const uint64_t mask = scale >= 64 ? ~0ull : (1ull << scale) - 1;
    *u = (x * 0x9e3779b97f4a7c15ull) & mask;
    *v = (y * 0x9e3779b97f4a7c15ull) & mask;
}

#endif /* OC_APP_GRAPH_H */
