/*
 * rpost.c — the queue of a routing thread's commands: posted under its
 * mutex by any thread (the control thread's oc__router_add_* / del_*,
 * rcmd.c; router 0's slices of a split allreduce, rcsplit.c), applied by
 * the router between bundles (oc__router_apply_commands, rcmd.c).  Apart
 * from rcmd.c so that a router's work for another calls nothing back
 * into the router's loop.
 */
#include "router_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Wake the router if it sleeps (router_sleep). */
void oc__router_wake(oc_router_t *r)
{
    uint64_t one = 1;
    if (r->wake_fd >= 0)
        (void)!write(r->wake_fd, &one, sizeof one);
}

oc_status_t oc__router_post(oc_router_t *r, cmd_t *c)
{
    c->next = NULL;
    pthread_mutex_lock(&r->mu);
    *r->cmd_tail = c;
    r->cmd_tail = &c->next;
    atomic_store_explicit(&r->cmd_pending, 1, memory_order_release);
    pthread_mutex_unlock(&r->mu);
    oc__router_wake(r);
    return OC_OK;
}

cmd_t *oc__router_cmd_new(cmd_kind_t kind, const void *addr, size_t len)
{
    cmd_t *c = calloc(1, sizeof(*c) + len);
    if (c == NULL)
        return NULL;
    c->kind = kind;
    c->addr_len = len;
    if (len)
        memcpy(c->addr, addr, len);
    return c;
}

oc_status_t oc__router_post_run(oc_router_t *r, void (*run)(void *, uint32_t),
                                void *arg, uint32_t k)
{
    cmd_t *c = oc__router_cmd_new(CMD_RUN, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->run = run;
    c->arg = arg;
    c->node = k;
    return oc__router_post(r, c);
}
