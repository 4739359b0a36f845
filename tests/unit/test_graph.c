/*
 * test_graph.c — the seeded graph inputs of the evaluation apps
 * (apps/common/graph.h): the distributions they claim, their ranges, and
 * that they are pure functions of their arguments (any rank regenerates
 * any part of the input).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "app.h"
#include "graph.h"

/* Poisson(d) degrees: mean and variance both d (within 3%), over 200K
 * vertices, for a small, the apps' default and a large mean. */
static void test_er_degree_is_poisson(void **state)
{
    static const double ds[] = {1.0, 8.0, 16.0, 100.0};
    for (size_t t = 0; t < sizeof ds / sizeof ds[0]; t++) {
        oc_graph_er_t g;
        oc_graph_er_init(&g, 7, 4, 50000, ds[t]);
        double sum = 0, sq = 0;
        const int n = 200000;
        for (int v = 0; v < n; v++) {
            double k = oc_graph_er_degree(&g, oc_graph_er_key(&g, (uint64_t)v));
            sum += k;
            sq += k * k;
        }
        double mean = sum / n, var = sq / n - mean * mean;
        assert_true(fabs(mean - ds[t]) < 0.03 * ds[t]);
        assert_true(fabs(var - ds[t]) < 0.05 * ds[t]);
    }
}

/* Degree 0 means no edges at all. */
static void test_er_degree_zero(void **state)
{
    oc_graph_er_t g;
    oc_graph_er_init(&g, 1, 2, 1000, 0.0);
    for (uint64_t v = 0; v < 2000; v++)
        assert_int_equal(oc_graph_er_degree(&g, oc_graph_er_key(&g, v)), 0);
}

/* Neighbours land on every rank, in range, about uniformly; the same
 * arguments give the same neighbours (regeneration). */
static void test_er_neighbours(void **state)
{
    oc_graph_er_t g;
    const uint32_t P = 3;
    const uint64_t per = 1000;
    uint64_t hits[3] = {0};
    oc_graph_er_init(&g, 99, P, per, 16.0);
    for (uint64_t v = 0; v < 30000; v++) {
        uint64_t key = oc_graph_er_key(&g, v);
        for (uint32_t k = 0; k < 16; k++) {
            uint32_t o1, o2;
            uint64_t l1, l2;
            oc_graph_er_nbr(&g, key, k, &o1, &l1);
            oc_graph_er_nbr(&g, oc_graph_er_key(&g, v), k, &o2, &l2);
            assert_true(o1 < P && l1 < per);
            assert_int_equal(o1, o2);
            assert_int_equal(l1, l2);
            hits[o1]++;
        }
    }
    for (uint32_t r = 0; r < P; r++)
        assert_true(fabs((double)hits[r] / (30000.0 * 16 / P) - 1.0) < 0.02);
    /* another seed, another graph */
    oc_graph_er_t h;
    oc_graph_er_init(&h, 100, P, per, 16.0);
    assert_int_not_equal(oc_graph_er_key(&g, 5), oc_graph_er_key(&h, 5));
}

/* R-MAT: endpoints below 2^scale, the first level's quadrants with the
 * Graph500 probabilities a, b, c, d = .57, .19, .19, .05 (the scrambling
 * multiplies by an odd constant, so undo it to see the quadrant: the top
 * bit of x * odd is not x's; check on the unscrambled ids by inverting the
 * multiplier mod 2^scale). */
static void test_rmat(void **state)
{
    const unsigned scale = 12;
    const uint64_t mask = (1ull << scale) - 1;
    /* inverse of the odd multiplier mod 2^64 (Newton's iteration) */
    uint64_t m = 0x9e3779b97f4a7c15ull, inv = m;
    for (int i = 0; i < 6; i++)
        inv *= 2 - m * inv;
    uint64_t q[4] = {0};
    const int n = 400000;
    for (int e = 0; e < n; e++) {
        uint64_t u, v, u2, v2;
        oc_graph_rmat_edge(3, scale, (uint64_t)e, &u, &v);
        oc_graph_rmat_edge(3, scale, (uint64_t)e, &u2, &v2);
        assert_true(u <= mask && v <= mask);
        assert_true(u == u2 && v == v2);
        uint64_t x = (u * inv) & mask, y = (v * inv) & mask;
        q[(x >> (scale - 1)) * 2 + (y >> (scale - 1))]++;
    }
    static const double want[4] = {0.57, 0.19, 0.19, 0.05};
    for (int k = 0; k < 4; k++)
        assert_true(fabs((double)q[k] / n - want[k]) < 0.01);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_er_degree_is_poisson),
        cmocka_unit_test(test_er_degree_zero),
        cmocka_unit_test(test_er_neighbours),
        cmocka_unit_test(test_rmat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
