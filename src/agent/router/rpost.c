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

/* This thread's open batch (oc__router_batch_begin): its router, and the
 * commands kept back for it.  Thread-local, so that what other threads
 * post meanwhile (router 0's slices) goes as before. */
static __thread oc_router_t *batch_r;
static __thread cmd_t *batch_head, **batch_tail;

/* Append the list @p head .. @p tail to the router's queue in one hold of
 * its mutex: the router applies all of it or none of it in a turn. */
static void post_list(oc_router_t *r, cmd_t *head, cmd_t **tail)
{
    pthread_mutex_lock(&r->mu);
    *r->cmd_tail = head;
    r->cmd_tail = tail;
    atomic_store_explicit(&r->cmd_pending, 1, memory_order_release);
    pthread_mutex_unlock(&r->mu);
    oc__router_wake(r);
}

oc_status_t oc__router_post(oc_router_t *r, cmd_t *c)
{
    c->next = NULL;
    if (batch_r == r) {
        *batch_tail = c;
        batch_tail = &c->next;
        return OC_OK;
    }
    post_list(r, c, &c->next);
    return OC_OK;
}

void oc__router_batch_begin(oc_router_t *r)
{
    if (batch_r != NULL)
        oc__router_batch_end(batch_r);
    batch_r = r;
    batch_head = NULL;
    batch_tail = &batch_head;
}

void oc__router_batch_end(oc_router_t *r)
{
    if (batch_r != r)
        return;
    batch_r = NULL;
    if (batch_head != NULL)
        post_list(r, batch_head, batch_tail);
    batch_head = NULL;
    batch_tail = NULL;
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
