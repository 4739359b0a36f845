/*
 * test_route.c — the route function of offcored (oc__route_hop, hop.c):
 * direct routing is one hop; on the grid every message arrives in at most
 * two hops, each agent sends only along its row and column (O(sqrt(n))
 * next hops), and a short last row never routes through a node that does
 * not exist — for every cluster size up to 70 and every pair of nodes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/router/router.h"

static void test_direct(void **state)
{
    (void)state;
    for (uint32_t n = 1; n < 20; n++)
        for (uint32_t a = 0; a < n; a++)
            for (uint32_t b = 0; b < n; b++)
                assert_int_equal(oc__route_hop(0, n, a, b), b);
}

static uint32_t cols_of(uint32_t n)
{
    uint32_t c = 1;
    while (c * c < n)
        c++;
    return c;
}

static void test_grid_two_hops(void **state)
{
    (void)state;
    for (uint32_t n = 1; n <= 70; n++) {
        const uint32_t cols = cols_of(n);
        for (uint32_t a = 0; a < n; a++) {
            uint8_t used[70];
            uint32_t distinct = 0;
            memset(used, 0, sizeof used);
            for (uint32_t b = 0; b < n; b++) {
                uint32_t h = oc__route_hop(1, n, a, b);
                assert_true(h < n);
                if (a == b) {
                    assert_int_equal(h, b);
                    continue;
                }
                assert_int_not_equal(h, a); /* progress */
                /* a's row or a's column, or b itself */
                assert_true(h == b || h / cols == a / cols ||
                            h % cols == a % cols);
                if (h != b)
                    assert_int_equal(oc__route_hop(1, n, h, b), b);
                if (!used[h]) {
                    used[h] = 1;
                    distinct++;
                }
            }
            /* next hops: the row, the column (and the corner fix-ups of a
             * short last row stay among them or b) */
            assert_true(distinct <= 2 * cols + 1);
        }
    }
}

static void test_grid_examples(void **state)
{
    (void)state;
    /* 9 nodes, 3x3: 0 -> 8 goes along row 0 to column 2 (node 2) */
    assert_int_equal(oc__route_hop(1, 9, 0, 8), 2);
    assert_int_equal(oc__route_hop(1, 9, 2, 8), 8);
    /* same column: straight */
    assert_int_equal(oc__route_hop(1, 9, 1, 7), 7);
    /* 7 nodes, 3 columns, last row only node 6: 2 -> 6 cannot use node
     * 8 (a's row, b's column is 0: node 0), 8 -> does not exist */
    assert_int_equal(oc__route_hop(1, 7, 2, 6), 0);
    /* 6 -> 2: row 2 has no column 2 (node 8): the other corner, node 0 */
    assert_int_equal(oc__route_hop(1, 7, 6, 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct),
        cmocka_unit_test(test_grid_two_hops),
        cmocka_unit_test(test_grid_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
