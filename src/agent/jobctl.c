/*
 * jobctl.c — offcored's jobs across nodes: sending on control connections,
 * job wire-up (every rank's node known -> routers told -> READY), job
 * failure, and the termination waves (counting-based quiescence) run
 * between the ranks and along the agents' tree.  Control thread only.
 */
#include "agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sending -------------------------------------------------------- */

void oc__ag_send(oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    if (c->dead)
        return;
    if (oc__ctl_conn_send(c->cc, m) != OC_OK)
        c->dead = 1;
}

void oc__ag_error(agent_t *a, oc_aconn_t *c, oc_status_t st, const char *text)
{
    oc_ctl_msg_t m;
    char scratch[OC_CTL_MAX_TEXT];
    oc__ctl_set_error(&m, st, text, scratch);
    oc__ag_send(c, &m);
    oc_warn_limited(&a->lim_bad, OC_COMP_AGENT, "%s: %s",
                    oc__ctl_conn_name(c->cc), text);
}

void oc__ag_to_ranks(agent_t *a, oc_ajob_t *j, const oc_ctl_msg_t *m)
{
    for (uint32_t r = 0; r < j->size; r++)
        if (j->local[r] != NULL)
            oc__ag_send(j->local[r], m);
}

void oc__ag_to_peers(agent_t *a, const oc_ctl_msg_t *m)
{
    for (uint32_t n = 0; n < a->nnodes; n++)
        if (a->peer[n] != NULL)
            oc__ag_send(a->peer[n], m);
}

/* ---- jobs ----------------------------------------------------------- */

void oc__ag_job_fail(agent_t *a, oc_ajob_t *j, const char *why, int tell_peers)
{
    oc_ctl_msg_t m;
    if (j->failed)
        return;
    j->failed = 1;
    char text[128], scratch[OC_CTL_MAX_TEXT];
    oc_warn(OC_COMP_AGENT, "job %u failed: %s", j->id, why);
    snprintf(text, sizeof(text), "job %u failed: %s", j->id, why);
    oc__ctl_set_error(&m, OC_ERR_PEER_FAILED, text, scratch);
    oc__ag_to_ranks(a, j, &m);
    if (tell_peers) {
        memset(&m, 0, sizeof(m));
        m.type = OC_CTL_JOB_FAIL;
        m.u.job_fail.job = j->id;
        m.u.job_fail.status = OC_ERR_PEER_FAILED;
        oc__ag_to_peers(a, &m);
    }
}

/* The collectives the agents serve for @p j (OC_CTL_COLL_*), decided from
 * the rank map alone, so that every agent of the job tells its ranks the
 * same: all of them when each node's ranks are contiguous (rcoll.c's
 * chain needs it), none otherwise (the ranks then refuse them up front). */
static uint32_t job_colls(const agent_t *a, const oc_ajob_t *j)
{
    uint8_t *seen = calloc(a->nnodes / 8 + 1, 1);
    uint32_t prev = UINT32_MAX, ok = 1;

    if (seen == NULL)
        return 0;
    for (uint32_t r = 0; r < j->size && ok; r++) {
        uint32_t n = j->node_of[r];
        if (n == prev)
            continue;
        if (n >= a->nnodes || (seen[n / 8] & (1u << (n % 8))))
            ok = 0;
        else
            seen[n / 8] |= (uint8_t)(1u << (n % 8));
        prev = n;
    }
    free(seen);
    if (!ok)
        oc_warn(OC_COMP_AGENT, "job %u: the ranks of a node are not "
                "contiguous: the agents serve none of its collectives (the "
                "ranks refuse them; the MPI interposer passes them to MPI)",
                j->id);
    return ok ? OC_CTL_COLL_ALL : 0;
}

/* Wire-up is complete when every rank's node is known: publish the map to
 * the routers, give them the local ranks, and release the ranks. */
void oc__ag_job_check_ready(agent_t *a, oc_ajob_t *j)
{
    oc_job_map_t *map;
    oc_ctl_msg_t m;

    if (j->ready || j->failed || j->nknown < j->size)
        return;
    map = oc__job_map_new(j->id, j->size, a->nnodes);
    if (map == NULL) {
        oc__ag_job_fail(a, j, "out of memory", 1);
        return;
    }
    memcpy(map->node_of, j->node_of, sizeof(uint32_t) * j->size);
    /* the job and its local ranks in one batch per router: a peer that
     * is ready first may already send for these ranks, and a router that
     * had the job without them would count those messages undeliverable
     * (lost: every rank's quiesce then waits for ever) */
    for (uint32_t t = 0; t < a->nrouters; t++) {
        oc__router_batch_begin(a->routers[t]);
        oc__router_add_job(a->routers[t], map);
        for (uint32_t r = 0; r < j->size; r++) {
            oc_aconn_t *c = j->local[r];
            if (c != NULL)
                oc__router_add_rank(a->routers[t], c->token, j->id, r, c->addr,
                                   c->addr_len, c->pid, c->shm,
                                   t == r % a->nrouters);
        }
        oc__router_batch_end(a->routers[t]);
    }
    oc__job_map_put(map);
    oc__ajob_tree(j, a->node);
    j->ready = 1;
    a->rank_tr_wanted = 1; /* the routers make the ranks' endpoints now */
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_READY;
    m.u.ready.size = j->size;
    m.u.ready.nnodes = j->tree_nodes;
    m.u.ready.coll = job_colls(a, j);
    oc__ag_to_ranks(a, j, &m);
    oc_info(OC_COMP_AGENT, "job %u ready: %u ranks on %u nodes, %u here",
            j->id, j->size, j->tree_nodes, j->nlocal);
}

/* Tell one peer (or all) which ranks of @p j are here, in messages of at
 * most 8192 ranks (well under the 64 KiB payload limit). */
void oc__ag_job_tell_peer(agent_t *a, oc_ajob_t *j, oc_aconn_t *peer)
{
    enum { CHUNK = 8192 };
    uint32_t ranks[CHUNK], n = 0;
    oc_ctl_msg_t m;

    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_JOB_RANKS;
    m.u.job_ranks.job = j->id;
    m.u.job_ranks.size = j->size;
    m.u.job_ranks.node = a->node;
    m.u.job_ranks.ranks.host = ranks;
    for (uint32_t r = 0; r <= j->size; r++) {
        if (n > 0 && (r == j->size || n == CHUNK)) {
            m.u.job_ranks.ranks.count = n;
            if (peer != NULL)
                oc__ag_send(peer, &m);
            else
                oc__ag_to_peers(a, &m);
            n = 0;
        }
        if (r < j->size && j->local[r] != NULL)
            ranks[n++] = r;
    }
}

void oc__ag_job_release(agent_t *a, oc_ajob_t *j)
{
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc__router_del_job(a->routers[t], j->id);
    oc_info(OC_COMP_AGENT, "job %u ended", j->id);
    oc__ajob_remove(&a->jobs, j);
}

/* ---- termination waves ----------------------------------------------- */

static void wave_reset_round(oc_ajob_t *j)
{
    j->reported = 0;
    j->sum_sent = j->sum_delivered = 0;
    j->sent_up = 0;
}

static void wave_verdict(agent_t *a, oc_ajob_t *j, int done)
{
    oc_ctl_msg_t m;
    memset(&m, 0, sizeof(m));
    if (done) {
        m.type = OC_CTL_QUIESCE_DONE;
        m.u.quiesce_done.job = j->id;
        m.u.quiesce_done.epoch = j->epoch;
    } else {
        m.type = OC_CTL_COUNTS_REQ;
        m.u.counts.job = j->id;
        m.u.counts.epoch = j->epoch;
        m.u.counts.round = j->round + 1;
    }
    for (uint32_t i = 0; i < j->nchildren; i++)
        if (a->peer[j->children[i]] != NULL)
            oc__ag_send(a->peer[j->children[i]], &m);
    oc__ag_to_ranks(a, j, &m);
    if (done) {
        j->epoch++;
        j->round = 0;
        j->have_prev = 0;
    } else {
        j->round++;
    }
    wave_reset_round(j);
}

void oc__ag_wave_step(agent_t *a, oc_ajob_t *j)
{
    if (!j->ready || j->failed)
        return;
    if (!j->sent_up) {
        uint64_t s = j->sum_sent, d = j->sum_delivered;
        if (j->reported < j->nlocal)
            return;
        for (uint32_t i = 0; i < j->nchildren; i++) {
            oc_wave_slot_t *c = &j->child[i];
            if (!c->valid || c->epoch != j->epoch || c->round != j->round)
                return;
        }
        for (uint32_t i = 0; i < j->nchildren; i++) {
            s += j->child[i].sent;
            d += j->child[i].delivered;
            j->child[i].valid = 0;
        }
        if (j->parent == OC_AJOB_UNKNOWN) {
            int done = s == d && j->have_prev && s == j->prev_sent &&
                       d == j->prev_delivered;
            j->have_prev = 1;
            j->prev_sent = s;
            j->prev_delivered = d;
            wave_verdict(a, j, done);
            return;
        }
        oc_ctl_msg_t m;
        memset(&m, 0, sizeof(m));
        m.type = OC_CTL_COUNTS;
        m.u.counts.job = j->id;
        m.u.counts.epoch = j->epoch;
        m.u.counts.round = j->round;
        m.u.counts.sent = s;
        m.u.counts.delivered = d;
        if (a->peer[j->parent] == NULL) {
            oc__ag_job_fail(a, j, "the parent agent of its wave is gone", 1);
            return;
        }
        oc__ag_send(a->peer[j->parent], &m);
        j->sent_up = 1;
    }
    if (j->down.valid && j->down.epoch == j->epoch &&
        j->down.round == j->round) {
        j->down.valid = 0;
        wave_verdict(a, j, j->down_verdict);
    }
}
