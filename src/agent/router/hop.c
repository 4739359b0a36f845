/*
 * hop.c — the route function (router.h, oc__route_hop): which node a
 * message goes to next, direct or along a grid of nodes.  Pure; any
 * thread.
 */
#include "router.h"

uint32_t oc__route_hop(int grid, uint32_t nnodes, uint32_t a, uint32_t b)
{
    uint32_t cols, h;
    if (!grid || a == b)
        return b;
    cols = 1;
    while (cols * cols < nnodes)
        cols++;
    h = (a / cols) * cols + b % cols;     /* a's row, b's column */
    if (h == a)                           /* same column: straight down */
        return b;
    if (h < nnodes)
        return h;
    h = (b / cols) * cols + a % cols;     /* the other corner */
    return h < nnodes && h != b ? h : b;
}
