/*
 * cores.c — whether a local rank may run on the router thread's cores
 * (router.h, oc__router_cpus_shared): the router's idle policy gives its
 * core up (sched_yield) only for ranks that could use it.  Reads two
 * affinity masks; any thread; no state.
 */
#include "router.h"

#include <sched.h>

int oc__router_cpus_shared(uint32_t pid)
{
    cpu_set_t mine, its;

    if (pid == 0)
        return 1;
    CPU_ZERO(&mine);
    CPU_ZERO(&its);
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0 ||
        sched_getaffinity((pid_t)pid, sizeof(its), &its) != 0)
        return 1;
    CPU_AND(&its, &its, &mine);
    return CPU_COUNT(&its) > 0;
}
