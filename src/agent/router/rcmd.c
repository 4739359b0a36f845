/*
 * rcmd.c — how the control thread changes a routing thread: commands
 * posted under a mutex (thread-safe, oc_router_add_* / del_*), applied by
 * the router between bundles (apply); and the job maps they carry.  The
 * queue itself: rpost.c.
 */
#include "router_int.h"

#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* ---- job maps --------------------------------------------------------- */

oc_job_map_t *oc__job_map_new(uint32_t job, uint32_t size, uint32_t nnodes)
{
    oc_job_map_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->node_of = calloc(size, sizeof(*m->node_of));
    if (m->node_of == NULL) {
        free(m);
        return NULL;
    }
    m->job = job;
    m->size = size;
    m->nnodes = nnodes;
    m->refs = 1;
    return m;
}

void oc__job_map_put(oc_job_map_t *m)
{
    if (m == NULL)
        return;
    if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free(m->node_of);
        free(m);
    }
}

/* ---- commands --------------------------------------------------------- */

oc_status_t oc__router_add_rank(oc_router_t *r, uint64_t token, uint32_t job,
                               uint32_t rank, const void *addr, size_t len,
                               uint32_t pid, oc_rshm_t *shm, int serves)
{
    cmd_t *c = oc__router_cmd_new(CMD_ADD_RANK, addr, len);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    if (shm != NULL) {
        oc__rshm_get(shm);
        c->shm = shm;
        c->serves = serves;
    }
    c->token = token;
    c->pid = pid;
    c->job = job;
    c->rank = rank;
    return oc__router_post(r, c);
}

oc_status_t oc__router_del_rank(oc_router_t *r, uint32_t job, uint32_t rank)
{
    cmd_t *c = oc__router_cmd_new(CMD_DEL_RANK, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->job = job;
    c->rank = rank;
    return oc__router_post(r, c);
}

oc_status_t oc__router_add_job(oc_router_t *r, oc_job_map_t *map)
{
    cmd_t *c = oc__router_cmd_new(CMD_ADD_JOB, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    __atomic_add_fetch(&map->refs, 1, __ATOMIC_ACQ_REL);
    c->map = map;
    c->job = map->job;
    return oc__router_post(r, c);
}

oc_status_t oc__router_del_job(oc_router_t *r, uint32_t job)
{
    cmd_t *c = oc__router_cmd_new(CMD_DEL_JOB, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->job = job;
    return oc__router_post(r, c);
}

oc_status_t oc__router_add_peer(oc_router_t *r, uint32_t node,
                               uint64_t send_token, uint64_t recv_token,
                               const void *addr, size_t len)
{
    cmd_t *c;
    if (node >= r->p.nnodes)
        return OC_ERR_INVALID_PARAM;
    c = oc__router_cmd_new(CMD_ADD_PEER, addr, len);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->node = node;
    c->token = send_token;
    c->token2 = recv_token;
    return oc__router_post(r, c);
}

oc_status_t oc__router_expect_peer(oc_router_t *r, uint32_t node,
                                  uint64_t recv_token)
{
    cmd_t *c;
    if (node >= r->p.nnodes || recv_token == 0)
        return OC_ERR_INVALID_PARAM;
    c = oc__router_cmd_new(CMD_EXPECT_PEER, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->node = node;
    c->token = recv_token;
    return oc__router_post(r, c);
}

oc_status_t oc__router_del_peer(oc_router_t *r, uint32_t node)
{
    cmd_t *c = oc__router_cmd_new(CMD_DEL_PEER, NULL, 0);
    if (c == NULL)
        return OC_ERR_NO_MEMORY;
    c->node = node;
    return oc__router_post(r, c);
}

static void sender_add(oc_router_t *r, const sender_t *s)
{
    if (r->nsenders == r->senders_cap) {
        uint32_t ncap = r->senders_cap ? r->senders_cap * 2 : 32;
        sender_t *n = realloc(r->senders, ncap * sizeof(*n));
        if (n == NULL) {
            oc_error(OC_COMP_ROUTER, "router %u: out of memory", r->p.index);
            return;
        }
        r->senders = n;
        r->senders_cap = ncap;
    }
    r->senders[r->nsenders++] = *s;
}

static void sender_del(oc_router_t *r, int is_peer, uint32_t job,
                       uint32_t rank, uint32_t node)
{
    for (uint32_t i = 0; i < r->nsenders; i++) {
        sender_t *s = &r->senders[i];
        if (s->is_peer == is_peer &&
            (is_peer ? s->node == node : (s->job == job && s->rank == rank))) {
            r->senders[i] = r->senders[--r->nsenders];
            return;
        }
    }
}

/* An outlet that goes away: flush what it holds, forget it (engine.h). */
static void out_retire(oc_router_t *r, out_t *o)
{
    oc__eng_out_retire(r->eng, &o->eo);
}

void oc__router_job_free(oc_router_t *r, rjob_t *j)
{
    oc__rcoll_job_gone(r, j->map->job);
    for (uint32_t i = 0; i < j->map->size; i++) {
        lrank_t *l = j->local[i];
        if (l == NULL)
            continue;
        out_retire(r, &l->out);
        oc__router_shm_detach(r, l);
        l->out.ep = NULL;
        oc__tr_ep_destroy(r->w, l->ep);
        oc__rcma_rank_fini(l);
        oc__router_rank_cores_fini(r, l);
        free(l);
    }
    for (uint32_t n = 0; n < j->map->nnodes; n++)
        out_retire(r, &j->to_node[n]);
    free(j->local);
    free(j->to_node);
    free(j->hop);
    j->hop = NULL;
    oc__job_map_put(j->map);
    j->map = NULL;
    atomic_store(&j->tag, 0);
}

static void apply(oc_router_t *r, cmd_t *c)
{
    rjob_t *j;
    oc_status_t st;

    switch (c->kind) {
    case CMD_ADD_JOB:
        if (oc__router_job_find(r, c->job) != NULL) {
            oc__job_map_put(c->map);
            break;
        }
        j = NULL;
        for (int i = 0; i < OC_ROUTER_MAX_JOBS && j == NULL; i++)
            if (r->jobs[i].map == NULL)
                j = &r->jobs[i];
        if (j == NULL) {
            oc_error(OC_COMP_ROUTER, "router %u: more than %d jobs", r->p.index,
                     OC_ROUTER_MAX_JOBS);
            oc__job_map_put(c->map);
            break;
        }
        memset(&j->c, 0, sizeof(j->c));
        j->local = calloc(c->map->size, sizeof(*j->local));
        j->to_node = calloc(c->map->nnodes, sizeof(*j->to_node));
        j->hop = calloc(c->map->size, sizeof(*j->hop));
        if (j->local == NULL || j->to_node == NULL || j->hop == NULL) {
            oc_error(OC_COMP_ROUTER, "router %u: out of memory for job %u",
                     r->p.index, c->job);
            free(j->local);
            free(j->to_node);
            free(j->hop);
            j->hop = NULL;
            oc__job_map_put(c->map);
            break;
        }
        /* the routing kernel's one lookup per message: local ranks get
         * theirs as they register */
        oc__eng_out_init(&j->none.eo);
        j->none.none = 1;
        j->none_said = 0;
        for (uint32_t d = 0; d < c->map->size; d++) {
            uint32_t node = c->map->node_of[d];
            j->hop[d] = node != r->p.node
                            ? &j->to_node[oc__route_hop(r->p.grid, r->p.nnodes,
                                                       r->p.node, node)]
                            : &j->none;
        }
        j->map = c->map;
        j->c.job = c->job;
        for (uint32_t n = 0; n < c->map->nnodes; n++) {
            oc__eng_out_init(&j->to_node[n].eo);
            j->to_node[n].eo.job = c->job;
            j->to_node[n].ep = r->peers[n].ep;
            j->to_node[n].token = r->peers[n].send_token;
            j->to_node[n].jc = &j->c;
            j->to_node[n].peer = n != r->p.node ? &r->peers[n] : NULL;
            /* mixed from the first message, packed into runs (rpeer.c):
             * a fixed buffer would leave a quarter full at the first
             * other pair, where runs take every pair at 8 bytes an item */
            j->to_node[n].eo.mixed_only = j->to_node[n].peer != NULL;
        }
        atomic_store(&j->tag, c->job + 1);
        break;
    case CMD_DEL_JOB:
        oc__rcoll_abort(r, c->job, UINT32_MAX);
        if ((j = oc__router_job_find(r, c->job)) != NULL)
            oc__router_job_free(r, j);
        break;
    case CMD_ADD_RANK: {
        lrank_t *l;
        sender_t s = {c->token, 0, c->job, c->rank, r->p.node};
        j = oc__router_job_find(r, c->job);
        if (j == NULL || c->rank >= j->map->size || j->local[c->rank]) {
            oc_error(OC_COMP_ROUTER, "router %u: cannot add rank %u of job %u",
                     r->p.index, c->rank, c->job);
            break;
        }
        l = calloc(1, sizeof(*l));
        if (l == NULL)
            break;
        st = oc__tr_ep_create(r->w, c->addr, 0, &l->ep);
        if (st != OC_OK) {
            free(l);
            break;
        }
        l->token = c->token;
        oc__rcma_rank_init(r, l, c->pid);
        oc__router_rank_cores(r, l, c->pid);
        oc__eng_out_init(&l->out.eo);
        l->out.eo.job = c->job;
        l->out.ep = l->ep;
        l->out.jc = &j->c;
        if (c->shm != NULL &&
            (st = oc__router_shm_attach(r, l, c->shm, c->serves)) != OC_OK)
            oc_error(OC_COMP_ROUTER, "router %u: %s: rank %u of job %u on "
                     "UCX, not shared memory", r->p.index,
                     st == OC_ERR_NO_MEMORY ? "out of memory"
                                            : "no down ring for this thread",
                     c->rank, c->job);
        j->local[c->rank] = l;
        j->hop[c->rank] = &l->out;
        sender_add(r, &s);
        break;
    }
    case CMD_DEL_RANK:
        oc__rcoll_abort(r, c->job, c->rank);
        sender_del(r, 0, c->job, c->rank, 0);
        j = oc__router_job_find(r, c->job);
        if (j != NULL && c->rank < j->map->size && j->local[c->rank]) {
            lrank_t *l = j->local[c->rank];
            l->out.ep = NULL; /* what is buffered for it is dropped */
            out_retire(r, &l->out);
            oc__router_shm_detach(r, l);
            oc__tr_ep_destroy(r->w, l->ep);
            oc__rcma_rank_fini(l);
            oc__router_rank_cores_fini(r, l);
            free(l);
            j->local[c->rank] = NULL;
            j->hop[c->rank] = &j->none;
        }
        break;
    case CMD_ADD_PEER: {
        sender_t s = {c->token2, 1, 0, 0, c->node};
        peer_t *p = &r->peers[c->node];
        if (p->ep != NULL)
            break;
        if (oc__tr_ep_create(r->w, c->addr, 1, &p->ep) != OC_OK)
            break;
        p->send_token = c->token;
        p->recv_token = c->token2;
        p->expect_token = 0;
        p->credits = OC_ROUTER_PEER_WINDOW;
        sender_add(r, &s);
        for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
            if (r->jobs[i].map != NULL) {
                r->jobs[i].to_node[c->node].ep = p->ep;
                r->jobs[i].to_node[c->node].token = p->send_token;
            }
        break;
    }
    case CMD_DEL_PEER: {
        peer_t *p = &r->peers[c->node];
        p->expect_token = 0;
        oc__rcoll_abort(r, UINT32_MAX, UINT32_MAX); /* those across nodes */
        sender_del(r, 1, 0, 0, c->node);
        for (int i = 0; i < OC_ROUTER_MAX_JOBS; i++)
            if (r->jobs[i].map != NULL) {
                r->jobs[i].to_node[c->node].ep = NULL;
                out_retire(r, &r->jobs[i].to_node[c->node]);
            }
        oc__router_peer_drop(r, p);
        oc__eng_out_retire(r->eng, &p->link);
        p->owed = 0;
        oc__tr_ep_destroy(r->w, p->ep);
        p->ep = NULL;
        break;
    }
    case CMD_EXPECT_PEER:
        if (r->peers[c->node].ep == NULL)
            r->peers[c->node].expect_token = c->token;
        break;
    case CMD_RUN:
        /* a stopped router (destroy frees what was left) runs no more
         * work for another: router 0, which posted it, may be gone */
        if (!atomic_load_explicit(&r->stop, memory_order_relaxed))
            c->run(c->arg, c->node);
        break;
    }
}

void oc__router_apply_commands(oc_router_t *r)
{
    cmd_t *c;
    pthread_mutex_lock(&r->mu);
    c = r->cmd_head;
    r->cmd_head = NULL;
    r->cmd_tail = &r->cmd_head;
    atomic_store_explicit(&r->cmd_pending, 0, memory_order_relaxed);
    pthread_mutex_unlock(&r->mu);
    while (c != NULL) {
        cmd_t *next = c->next;
        apply(r, c);
        oc__rshm_put(c->shm); /* the command's reference */
        free(c);
        c = next;
    }
}

