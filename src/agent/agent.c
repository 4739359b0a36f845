/*
 * agent.c — offcored's control thread: accepts ranks and peer agents on
 * the control socket, authenticates them, wires jobs up across nodes,
 * runs termination waves, and reports failures.  Data never passes here:
 * once a job is wired up its bundles flow rank -> router -> router ->
 * rank over UCX (router.c).
 */
#include "agent.h"

#include "ctl/ctl.h"
#include "ctl/derive.h"
#include "jobs.h"
#include "metrics/metrics.h"
#include "util/log.h"
#include "util/clock.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { C_NEW, C_RANK_AUTH, C_RANK, C_PEER_HELLO, C_PEER_AUTH, C_PEER };

typedef struct oc_aconn {
    oc_ctl_conn_t   *cc;
    int              kind;
    int              dead;
    /* rank */
    uint32_t         job, rank, size;
    uint8_t          cnonce[16], snonce[32];
    uint8_t         *addr;        /* its UCX worker address */
    size_t           addr_len;
    uint64_t         token;
    int              said_bye;
    /* peer */
    uint32_t         node;
    uint8_t          my_nonce[32], peer_nonce[32];
    int              authed, info_sent;
    uint64_t         recv_token;  /* what its bundles to us carry */
    struct oc_aconn *next;
} oc_aconn_t;

typedef struct {
    oc_agent_config_t cfg;
    uint32_t          node, nnodes;
    char            **node_addr;    /* [nnodes] peers' addresses by node */
    oc_ctl_key_t      cluster_key;
    oc_router_t      *routers[OC_AGENT_MAX_THREADS];
    uint32_t          nrouters;
    oc_ctl_listener_t lis[8];
    int               nlfd;
    oc_aconn_t       *conns;
    oc_aconn_t      **peer;         /* [nnodes] authenticated peer conn */
    uint64_t         *next_dial_us; /* [nnodes] */
    oc_ajobs_t        jobs;
    uint64_t          start_us;
    oc_metrics_server_t *metrics;
    _Atomic uint64_t  rejects_ctl;
    /* what the HTTP thread may read of the jobs: a copy under a lock */
    pthread_mutex_t   pub_mu;
    struct { uint32_t job, size, nlocal; } pub[64];
    uint32_t          npub;
} agent_t;

static void publish_jobs(agent_t *a)
{
    uint32_t n = 0;
    pthread_mutex_lock(&a->pub_mu);
    for (oc_ajob_t *j = a->jobs.head; j != NULL && n < 64; j = j->next, n++) {
        a->pub[n].job = j->id;
        a->pub[n].size = j->size;
        a->pub[n].nlocal = j->nlocal;
    }
    a->npub = n;
    pthread_mutex_unlock(&a->pub_mu);
}

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- sending -------------------------------------------------------- */

static void csend(oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    if (c->dead)
        return;
    if (oc_ctl_conn_send(c->cc, m) != OC_OK)
        c->dead = 1;
}

static void send_error(oc_aconn_t *c, oc_status_t st, const char *text)
{
    oc_ctl_msg_t m;
    char scratch[OC_CTL_MAX_TEXT];
    oc_ctl_set_error(&m, st, text, scratch);
    csend(c, &m);
    oc_warn(OC_COMP_AGENT, "%s: %s", oc_ctl_conn_name(c->cc), text);
}

static void to_local_ranks(agent_t *a, oc_ajob_t *j, const oc_ctl_msg_t *m)
{
    for (uint32_t r = 0; r < j->size; r++)
        if (j->local[r] != NULL)
            csend(j->local[r], m);
}

static void to_peers(agent_t *a, const oc_ctl_msg_t *m)
{
    for (uint32_t n = 0; n < a->nnodes; n++)
        if (a->peer[n] != NULL)
            csend(a->peer[n], m);
}

/* ---- jobs ----------------------------------------------------------- */

static void job_fail(agent_t *a, oc_ajob_t *j, const char *why, int tell_peers)
{
    oc_ctl_msg_t m;
    if (j->failed)
        return;
    j->failed = 1;
    char text[128], scratch[OC_CTL_MAX_TEXT];
    oc_warn(OC_COMP_AGENT, "job %u failed: %s", j->id, why);
    snprintf(text, sizeof(text), "job %u failed: %s", j->id, why);
    oc_ctl_set_error(&m, OC_ERR_PEER_FAILED, text, scratch);
    to_local_ranks(a, j, &m);
    if (tell_peers) {
        memset(&m, 0, sizeof(m));
        m.type = OC_CTL_JOB_FAIL;
        m.u.job_fail.job = j->id;
        m.u.job_fail.status = OC_ERR_PEER_FAILED;
        to_peers(a, &m);
    }
}

/* Wire-up is complete when every rank's node is known: publish the map to
 * the routers, give them the local ranks, and release the ranks. */
static void job_check_ready(agent_t *a, oc_ajob_t *j)
{
    oc_job_map_t *map;
    oc_ctl_msg_t m;

    if (j->ready || j->failed || j->nknown < j->size)
        return;
    map = oc_job_map_new(j->id, j->size, a->nnodes);
    if (map == NULL) {
        job_fail(a, j, "out of memory", 1);
        return;
    }
    memcpy(map->node_of, j->node_of, sizeof(uint32_t) * j->size);
    for (uint32_t t = 0; t < a->nrouters; t++) {
        oc_router_add_job(a->routers[t], map);
        for (uint32_t r = 0; r < j->size; r++) {
            oc_aconn_t *c = j->local[r];
            if (c != NULL)
                oc_router_add_rank(a->routers[t], c->token, j->id, r, c->addr,
                                   c->addr_len);
        }
    }
    oc_job_map_put(map);
    oc_ajob_tree(j, a->node);
    j->ready = 1;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_READY;
    m.u.ready.size = j->size;
    m.u.ready.nnodes = j->tree_nodes;
    to_local_ranks(a, j, &m);
    oc_info(OC_COMP_AGENT, "job %u ready: %u ranks on %u nodes, %u here",
            j->id, j->size, j->tree_nodes, j->nlocal);
}

/* Tell one peer (or all) which ranks of @p j are here, in messages of at
 * most 8192 ranks (well under the 64 KiB payload limit). */
static void job_tell_peer(agent_t *a, oc_ajob_t *j, oc_aconn_t *peer)
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
                csend(peer, &m);
            else
                to_peers(a, &m);
            n = 0;
        }
        if (r < j->size && j->local[r] != NULL)
            ranks[n++] = r;
    }
}

static void job_release(agent_t *a, oc_ajob_t *j)
{
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc_router_del_job(a->routers[t], j->id);
    oc_info(OC_COMP_AGENT, "job %u ended", j->id);
    oc_ajob_remove(&a->jobs, j);
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
            csend(a->peer[j->children[i]], &m);
    to_local_ranks(a, j, &m);
    if (done) {
        j->epoch++;
        j->round = 0;
        j->have_prev = 0;
    } else {
        j->round++;
    }
    wave_reset_round(j);
}

static void wave_step(agent_t *a, oc_ajob_t *j)
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
            job_fail(a, j, "the parent agent of its wave is gone", 1);
            return;
        }
        csend(a->peer[j->parent], &m);
        j->sent_up = 1;
    }
    if (j->down.valid && j->down.epoch == j->epoch &&
        j->down.round == j->round) {
        j->down.valid = 0;
        wave_verdict(a, j, j->down_verdict);
    }
}

/* ---- ranks ---------------------------------------------------------- */

static void rank_hello(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    oc_ctl_msg_t r;
    uint32_t pid, uid;

    /* On a Unix socket the kernel says who is calling: a HELLO claiming
     * another process's pid is a lie worth refusing. */
    if (oc_ctl_peer_cred(oc_ctl_conn_fd(c->cc), &pid, &uid) == OC_OK &&
        pid != m->u.hello.pid) {
        a->rejects_ctl++;
        send_error(c, OC_ERR_CTL_AUTH, "HELLO: pid is not the caller's");
        c->dead = 1;
        return;
    }
    c->job = m->u.hello.job;
    c->rank = m->u.hello.rank;
    c->size = m->u.hello.size;
    memcpy(c->cnonce, m->u.hello.nonce, sizeof(c->cnonce));
    c->addr = malloc(m->u.hello.addr.len);
    if (c->addr == NULL ||
        oc_ctl_random(c->snonce, sizeof(c->snonce)) != OC_OK) {
        c->dead = 1;
        return;
    }
    memcpy(c->addr, m->u.hello.addr.data, m->u.hello.addr.len);
    c->addr_len = m->u.hello.addr.len;
    memset(&r, 0, sizeof(r));
    r.type = OC_CTL_CHALLENGE;
    memcpy(r.u.challenge.nonce, c->snonce, sizeof(c->snonce));
    csend(c, &r);
    c->kind = C_RANK_AUTH;
}

static void rank_auth(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    oc_ctl_key_t key;
    uint8_t mac[OC_CTL_MAC_LEN];
    oc_ctl_msg_t r;
    oc_ajob_t *j;
    oc_status_t st;
    uint32_t thread;
    const void *raddr;
    size_t raddr_len;

    oc_ctl_job_key(&a->cluster_key, c->job, &key);
    oc_ctl_rank_mac(&key, c->snonce, c->cnonce, c->job, c->rank, c->size, mac);
    if (!oc_ctl_mac_equal(mac, m->u.auth.mac)) {
        oc_ctl_key_clear(&key);
        a->rejects_ctl++;
        send_error(c, OC_ERR_CTL_AUTH,
                   "authentication failed: OC_JOB_KEY is not this job's key "
                   "(offcore job-key --job ID prints it)");
        c->dead = 1;
        return;
    }
    c->token = oc_ctl_rank_token(&key, c->snonce, c->cnonce);
    oc_ctl_key_clear(&key);
    j = oc_ajob_get(&a->jobs, c->job, c->size, a->nnodes, &st);
    if (j == NULL) {
        send_error(c, st, st == OC_ERR_INVALID_PARAM
                              ? "job size differs from its other ranks'"
                              : "out of memory");
        c->dead = 1;
        return;
    }
    if (j->failed || j->ready || j->local[c->rank] != NULL ||
        oc_ajob_place(j, c->rank, a->node) != OC_OK) {
        send_error(c, OC_ERR_STATE,
                   j->failed ? "job has failed"
                             : "rank already connected (the same OC_RANK "
                               "twice, or a job id still in use)");
        c->dead = 1;
        return;
    }
    j->local[c->rank] = c;
    j->nlocal++;
    c->kind = C_RANK;
    thread = c->rank % a->nrouters;
    oc_router_address(a->routers[thread], &raddr, &raddr_len);
    memset(&r, 0, sizeof(r));
    r.type = OC_CTL_WELCOME;
    r.u.welcome.node = a->node;
    r.u.welcome.thread = thread;
    r.u.welcome.addr.data = raddr;
    r.u.welcome.addr.len = (uint32_t)raddr_len;
    csend(c, &r);
    oc_info(OC_COMP_AGENT, "job %u rank %u/%u joined (router %u)", c->job,
            c->rank, c->size, thread);
    job_tell_peer(a, j, NULL);
    job_check_ready(a, j);
}

static void rank_counts(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const __typeof__(m->u.counts) *k = &m->u.counts;
    oc_ajob_t *j = oc_ajob_find(&a->jobs, c->job);
    if (j == NULL || k->job != c->job || !j->ready) {
        send_error(c, OC_ERR_STATE, "COUNTS before the job is ready");
        return;
    }
    if (k->epoch != j->epoch || k->round != j->round || j->sent_up) {
        send_error(c, OC_ERR_STATE, "COUNTS out of turn");
        c->dead = 1;
        return;
    }
    j->reported++;
    j->sum_sent += k->sent;
    j->sum_delivered += k->delivered;
    wave_step(a, j);
}

static void rank_gone(agent_t *a, oc_aconn_t *c)
{
    oc_ajob_t *j = oc_ajob_find(&a->jobs, c->job);
    if (c->kind != C_RANK || j == NULL || j->local[c->rank] != c)
        return;
    j->local[c->rank] = NULL;
    j->nlocal--;
    if (j->ready)
        for (uint32_t t = 0; t < a->nrouters; t++)
            oc_router_del_rank(a->routers[t], j->id, c->rank);
    if (!c->said_bye) {
        char why[64];
        snprintf(why, sizeof(why), "rank %u died", c->rank);
        job_fail(a, j, why, 1);
    } else {
        oc_info(OC_COMP_AGENT, "job %u rank %u left", j->id, c->rank);
    }
    if (j->nlocal == 0)
        job_release(a, j);
}

/* ---- peers ---------------------------------------------------------- */

static void peer_send_hello(agent_t *a, oc_aconn_t *c)
{
    oc_ctl_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_PEER_HELLO;
    m.u.peer_hello.node = a->node;
    m.u.peer_hello.cluster = 0;
    memcpy(m.u.peer_hello.nonce, c->my_nonce, sizeof(c->my_nonce));
    csend(c, &m);
}

static void peer_send_auth(agent_t *a, oc_aconn_t *c)
{
    oc_ctl_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_PEER_AUTH;
    oc_ctl_peer_mac(&a->cluster_key, c->peer_nonce, c->my_nonce, a->node,
                    m.u.auth.mac);
    csend(c, &m);
}

static void peer_hello(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    uint32_t node = m->u.peer_hello.node;
    if (node >= a->nnodes || node == a->node || a->peer[node] != NULL ||
        (c->kind == C_PEER_HELLO && node != c->node)) {
        a->rejects_ctl++;
        send_error(c, OC_ERR_CTL_VALUE, "PEER_HELLO: bad or duplicate node");
        c->dead = 1;
        return;
    }
    if (c->kind == C_NEW) /* we were dialled: answer with our nonce */
        oc_ctl_random(c->my_nonce, sizeof(c->my_nonce));
    if (!memcmp(m->u.peer_hello.nonce, c->my_nonce, sizeof(c->my_nonce))) {
        a->rejects_ctl++; /* our own nonce reflected back */
        send_error(c, OC_ERR_CTL_AUTH, "PEER_HELLO: reflected nonce");
        c->dead = 1;
        return;
    }
    c->node = node;
    memcpy(c->peer_nonce, m->u.peer_hello.nonce, sizeof(c->peer_nonce));
    if (c->kind == C_NEW)
        peer_send_hello(a, c);
    peer_send_auth(a, c);
    c->kind = C_PEER_AUTH;
}

static void peer_auth(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    uint8_t mac[OC_CTL_MAC_LEN];
    oc_ctl_msg_t r;

    oc_ctl_peer_mac(&a->cluster_key, c->my_nonce, c->peer_nonce, c->node, mac);
    if (!oc_ctl_mac_equal(mac, m->u.auth.mac)) {
        a->rejects_ctl++;
        send_error(c, OC_ERR_CTL_AUTH, "peer authentication failed: "
                                       "a different cluster key");
        c->dead = 1;
        return;
    }
    if (a->peer[c->node] != NULL) {
        c->dead = 1;
        return;
    }
    c->authed = 1;
    c->kind = C_PEER;
    a->peer[c->node] = c;
    memset(&r, 0, sizeof(r));
    r.type = OC_CTL_PEER_INFO;
    r.u.peer_info.node = a->node;
    r.u.peer_info.addrs.count = a->nrouters;
    for (uint32_t t = 0; t < a->nrouters; t++) {
        const void *addr;
        size_t len;
        oc_router_address(a->routers[t], &addr, &len);
        r.u.peer_info.addrs.item[t].data = addr;
        r.u.peer_info.addrs.item[t].len = (uint32_t)len;
    }
    csend(c, &r);
    for (oc_ajob_t *j = a->jobs.head; j != NULL; j = j->next)
        job_tell_peer(a, j, c);
    oc_info(OC_COMP_AGENT, "peer node %u authenticated", c->node);
}

static void peer_info(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const oc_ctl_addrs_t *ad = &m->u.peer_info.addrs;
    uint64_t send_token, recv_token;

    if (m->u.peer_info.node != c->node || ad->count == 0) {
        send_error(c, OC_ERR_CTL_VALUE, "PEER_INFO: bad content");
        c->dead = 1;
        return;
    }
    send_token = oc_ctl_peer_token(&a->cluster_key, c->my_nonce, c->peer_nonce,
                                   a->node);
    recv_token = oc_ctl_peer_token(&a->cluster_key, c->peer_nonce, c->my_nonce,
                                   c->node);
    for (uint32_t t = 0; t < a->nrouters; t++) {
        uint32_t k = t % ad->count;
        oc_router_add_peer(a->routers[t], c->node, send_token, recv_token,
                           ad->item[k].data, ad->item[k].len);
    }
}

static void peer_job_ranks(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const __typeof__(m->u.job_ranks) *jr = &m->u.job_ranks;
    oc_status_t st;
    oc_ajob_t *j;

    if (jr->node != c->node) {
        send_error(c, OC_ERR_INVALID_PARAM, "JOB_RANKS for another node");
        return;
    }
    j = oc_ajob_get(&a->jobs, jr->job, jr->size, a->nnodes, &st);
    if (j == NULL) {
        send_error(c, st, "JOB_RANKS: job size disagrees");
        return;
    }
    for (uint32_t i = 0; i < jr->ranks.count; i++)
        if (oc_ajob_place(j, oc_ctl_u32s_get(&jr->ranks, i), c->node) !=
            OC_OK) {
            job_fail(a, j, "a rank joined on two nodes", 1);
            return;
        }
    job_check_ready(a, j);
}

static void peer_wave(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const __typeof__(m->u.counts) *k = &m->u.counts;
    oc_ajob_t *j = oc_ajob_find(&a->jobs, m->type == OC_CTL_QUIESCE_DONE
                                              ? m->u.quiesce_done.job
                                              : k->job);
    uint32_t idx;
    if (j == NULL)
        return;
    if (m->type == OC_CTL_COUNTS && oc_ajob_is_child(j, c->node, &idx)) {
        j->child[idx].valid = 1;
        j->child[idx].epoch = k->epoch;
        j->child[idx].round = k->round;
        j->child[idx].sent = k->sent;
        j->child[idx].delivered = k->delivered;
    } else if (c->node == j->parent && m->type == OC_CTL_COUNTS_REQ) {
        j->down.valid = 1;
        j->down.epoch = k->epoch;
        j->down.round = k->round - 1;
        j->down_verdict = 0;
    } else if (c->node == j->parent && m->type == OC_CTL_QUIESCE_DONE) {
        j->down.valid = 1;
        j->down.epoch = m->u.quiesce_done.epoch;
        j->down.round = j->round;
        j->down_verdict = 1;
    } else {
        send_error(c, OC_ERR_STATE, "wave message from a node not adjacent");
        return;
    }
    wave_step(a, j);
}

static void peer_gone(agent_t *a, oc_aconn_t *c)
{
    char why[64];
    if (c->kind != C_PEER || a->peer[c->node] != c)
        return;
    a->peer[c->node] = NULL;
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc_router_del_peer(a->routers[t], c->node);
    snprintf(why, sizeof(why), "the agent of node %u went away", c->node);
    for (oc_ajob_t *j = a->jobs.head; j != NULL; j = j->next)
        if (j->node_ranks[c->node] > 0)
            job_fail(a, j, why, 0);
    a->next_dial_us[c->node] = oc_now_us() + 1000000;
    oc_warn(OC_COMP_AGENT, "%s", why);
}

/* ---- dispatch ------------------------------------------------------- */

static void on_message(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    oc_ajob_t *j;

    switch (c->kind) {
    case C_NEW:
        if (m->type == OC_CTL_HELLO)
            rank_hello(a, c, m);
        else if (m->type == OC_CTL_PEER_HELLO)
            peer_hello(a, c, m);
        else
            goto unexpected;
        return;
    case C_RANK_AUTH:
        if (m->type != OC_CTL_AUTH)
            goto unexpected;
        rank_auth(a, c, m);
        return;
    case C_RANK:
        if (m->type == OC_CTL_COUNTS)
            rank_counts(a, c, m);
        else if (m->type == OC_CTL_BYE)
            c->said_bye = 1;
        else
            goto unexpected;
        return;
    case C_PEER_HELLO:
        if (m->type != OC_CTL_PEER_HELLO)
            goto unexpected;
        peer_hello(a, c, m);
        return;
    case C_PEER_AUTH:
        if (m->type != OC_CTL_PEER_AUTH)
            goto unexpected;
        peer_auth(a, c, m);
        return;
    case C_PEER:
        switch (m->type) {
        case OC_CTL_PEER_INFO: peer_info(a, c, m); return;
        case OC_CTL_JOB_RANKS: peer_job_ranks(a, c, m); return;
        case OC_CTL_COUNTS:
        case OC_CTL_COUNTS_REQ:
        case OC_CTL_QUIESCE_DONE: peer_wave(a, c, m); return;
        case OC_CTL_JOB_FAIL:
            if ((j = oc_ajob_find(&a->jobs, m->u.job_fail.job)) != NULL)
                job_fail(a, j, "failed on another node", 0);
            return;
        case OC_CTL_BYE: return;
        default: goto unexpected;
        }
    }
unexpected:
    a->rejects_ctl++;
    send_error(c, OC_ERR_STATE, "unexpected control message");
    c->dead = 1;
}

static oc_aconn_t *conn_add(agent_t *a, int fd, int kind, const char *name)
{
    oc_aconn_t *c = calloc(1, sizeof(*c));
    if (c == NULL || oc_ctl_conn_create(fd, name, &c->cc) != OC_OK) {
        free(c);
        close(fd);
        return NULL;
    }
    c->kind = kind;
    c->next = a->conns;
    a->conns = c;
    return c;
}

static void conn_drop(agent_t *a, oc_aconn_t *c)
{
    if (c->kind == C_RANK)
        rank_gone(a, c);
    else if (c->kind == C_PEER)
        peer_gone(a, c);
    oc_ctl_conn_destroy(c->cc);
    free(c->addr);
    free(c);
}

static void dial_peers(agent_t *a)
{
    uint64_t now = oc_now_us();
    /* The lower node dials: one connection per pair. */
    for (uint32_t n = a->node + 1; n < a->nnodes; n++) {
        int fd;
        oc_aconn_t *c;
        int pending = 0;
        if (a->peer[n] != NULL || now < a->next_dial_us[n])
            continue;
        for (c = a->conns; c != NULL; c = c->next)
            if ((c->kind == C_PEER_HELLO || c->kind == C_PEER_AUTH) &&
                c->node == n)
                pending = 1;
        if (pending)
            continue;
        a->next_dial_us[n] = now + 1000000;
        if (oc_ctl_connect(a->node_addr[n], 200, &fd) != OC_OK)
            continue; /* retried each second */
        c = conn_add(a, fd, C_PEER_HELLO, a->node_addr[n]);
        if (c == NULL)
            continue;
        c->node = n;
        oc_ctl_random(c->my_nonce, sizeof(c->my_nonce));
        peer_send_hello(a, c);
    }
}

static void conn_io(agent_t *a, oc_aconn_t *c, short revents)
{
    oc_ctl_msg_t m;
    oc_status_t st;

    if (revents & POLLOUT)
        if (oc_ctl_conn_flush(c->cc) < 0)
            c->dead = 1;
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        for (;;) {
            st = oc_ctl_conn_read(c->cc, &m);
            if (st == OC_INPROGRESS)
                break;
            if (st != OC_OK) {
                if (st != OC_ERR_PEER_FAILED) {
                    a->rejects_ctl++;
                    oc_warn(OC_COMP_AGENT, "control: malformed message "
                            "dropped the connection: %s", oc_status_string(st));
                }
                c->dead = 1;
                break;
            }
            on_message(a, c, &m);
            if (c->dead)
                break;
        }
    }
    oc_ctl_conn_flush(c->cc);
}

/* ---- the loop ------------------------------------------------------- */

static void run(agent_t *a)
{
    struct pollfd *pfd = NULL;
    oc_aconn_t **pc = NULL;
    size_t cap = 0;

    while (!g_stop) {
        size_t n = 0, nc = 0;
        int rc;

        for (oc_aconn_t *c = a->conns; c != NULL; c = c->next)
            nc++;
        if (nc + (size_t)a->nlfd > cap) {
            cap = (nc + (size_t)a->nlfd) * 2 + 16;
            pfd = realloc(pfd, cap * sizeof(*pfd));
            pc = realloc(pc, cap * sizeof(*pc));
            if (pfd == NULL || pc == NULL) {
                oc_error(OC_COMP_AGENT, "out of memory");
                break;
            }
        }
        for (int i = 0; i < a->nlfd; i++) {
            pfd[n].fd = a->lis[i].fd;
            pfd[n].events = POLLIN;
            pc[n++] = NULL;
        }
        for (oc_aconn_t *c = a->conns; c != NULL; c = c->next) {
            pfd[n].fd = oc_ctl_conn_fd(c->cc);
            pfd[n].events = POLLIN;
            if (oc_ctl_conn_want_write(c->cc))
                pfd[n].events |= POLLOUT;
            pc[n++] = c;
        }
        rc = poll(pfd, n, 100);
        if (rc < 0 && errno != EINTR) {
            oc_error(OC_COMP_AGENT, "poll: %s", strerror(errno));
            break;
        }
        for (size_t i = 0; rc > 0 && i < n; i++) {
            if (pfd[i].revents == 0)
                continue;
            if (pc[i] == NULL) {
                int fd;
                char peer[OC_CTL_ADDR_STRLEN];
                oc_ctl_listener_t *l = &a->lis[i];
                while (oc_ctl_accept(l, &fd, peer, sizeof(peer)) == OC_OK)
                    conn_add(a, fd, C_NEW, peer);
            } else {
                conn_io(a, pc[i], pfd[i].revents);
            }
        }
        publish_jobs(a);
        /* drop dead connections (after their last words were flushed) */
        for (oc_aconn_t **pp = &a->conns; *pp != NULL;) {
            oc_aconn_t *c = *pp;
            if (c->dead) {
                *pp = c->next;
                conn_drop(a, c);
            } else {
                pp = &c->next;
            }
        }
        dial_peers(a);
    }
    free(pfd);
    free(pc);
}

/* SIGTERM: tell every rank, flush the routers, leave. */
static void shutdown_all(agent_t *a)
{
    oc_ctl_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_BYE;
    m.u.bye.reason = 1;
    for (oc_aconn_t *c = a->conns; c != NULL; c = c->next) {
        csend(c, &m);
        oc_ctl_conn_flush(c->cc);
    }
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc_router_destroy(a->routers[t]);
    while (a->conns != NULL) {
        oc_aconn_t *c = a->conns;
        a->conns = c->next;
        c->kind = C_NEW; /* no failure reports while leaving */
        conn_drop(a, c);
    }
    while (a->jobs.head != NULL)
        oc_ajob_remove(&a->jobs, a->jobs.head);
}

/* ---- set-up --------------------------------------------------------- */

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Node indices: the sorted list of every agent's TCP address (ours and
 * the peers'), identical on every agent, unless --node says otherwise. */
static oc_status_t setup_nodes(agent_t *a)
{
    char *list[OC_AGENT_MAX_NODES], *mine = NULL, *save, *tok;
    char peers[OC_CFG_STRLEN], listen[OC_CFG_STRLEN];
    uint32_t n = 0;

    snprintf(listen, sizeof(listen), "%s", a->cfg.listen);
    for (tok = strtok_r(listen, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strncmp(tok, "unix:", 5) != 0 && mine == NULL)
            mine = strdup(tok);
    snprintf(peers, sizeof(peers), "%s", a->cfg.peers);
    for (tok = strtok_r(peers, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (n + 1 < OC_AGENT_MAX_NODES)
            list[n++] = strdup(tok);
    if (n > 0 && mine == NULL) {
        oc_error(OC_COMP_AGENT, "--peers needs a TCP address in --listen "
                                "for the peers to reach this agent");
        return OC_ERR_CONFIG;
    }
    list[n++] = mine ? mine : strdup("local");
    qsort(list, n, sizeof(list[0]), cmp_str);
    a->nnodes = n;
    a->node_addr = calloc(n, sizeof(*a->node_addr));
    a->peer = calloc(n, sizeof(*a->peer));
    a->next_dial_us = calloc(n, sizeof(*a->next_dial_us));
    if (a->node_addr == NULL || a->peer == NULL || a->next_dial_us == NULL)
        return OC_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        a->node_addr[i] = list[i];
        if (list[i] == mine || (mine == NULL && !strcmp(list[i], "local")))
            a->node = i;
    }
    if (a->cfg.node != UINT32_MAX) {
        if (a->cfg.node >= n) {
            oc_error(OC_COMP_AGENT, "--node %llu: only %u agents listed",
                     (unsigned long long)a->cfg.node, n);
            return OC_ERR_CONFIG;
        }
        a->node = (uint32_t)a->cfg.node;
    }
    return OC_OK;
}

static oc_status_t setup_listen(agent_t *a)
{
    char listen[OC_CFG_STRLEN], *save, *tok;
    snprintf(listen, sizeof(listen), "%s", a->cfg.listen);
    for (tok = strtok_r(listen, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (a->nlfd == 8)
            return OC_ERR_CONFIG;
        if (oc_ctl_listen(tok, &a->lis[a->nlfd]) != OC_OK)
            return OC_ERR_CONFIG;
        a->nlfd++;
        oc_info(OC_COMP_AGENT, "listening on %s", tok);
    }
    return a->nlfd > 0 ? OC_OK : OC_ERR_CONFIG;
}

/* ---- metrics -------------------------------------------------------- */

#define LBL(n, v) ((oc_prom_label_t){n, v})

/* Node @p n's counters, summed over the routing threads. */
static void peer_sum(const agent_t *a, uint32_t n, oc_router_peer_counters_t *sum)
{
    oc_router_peer_counters_t pc;
    memset(sum, 0, sizeof(*sum));
    for (uint32_t r = 0; r < a->nrouters; r++) {
        oc_router_peer_counters(a->routers[r], n, &pc);
        sum->bundles_in += pc.bundles_in;
        sum->bundles_out += pc.bundles_out;
        sum->bytes_in += pc.bytes_in;
        sum->bytes_out += pc.bytes_out;
        sum->msgs_in += pc.msgs_in;
        sum->msgs_out += pc.msgs_out;
        sum->blocked += pc.blocked;
    }
}

static oc_status_t fill_metrics(void *arg, oc_prom_t *p)
{
    agent_t *a = arg;
    oc_router_counters_t rc[OC_AGENT_MAX_THREADS];
    oc_router_job_counters_t jc[64];
    char node[16], v[32], t[16];
    oc_prom_label_t l[2];

    snprintf(node, sizeof(node), "%u", a->node);
    oc_prom_family(p, "offcore_agent_info", "This agent", OC_PROM_GAUGE);
    l[0] = LBL("node", node);
    l[1] = LBL("version", "0.1");
    oc_prom_sample(p, "offcore_agent_info", l, 2, 1);
    oc_prom_family(p, "offcore_agent_uptime_seconds", "Seconds since start",
                   OC_PROM_GAUGE);
    oc_prom_sample_f64(p, "offcore_agent_uptime_seconds", NULL, 0,
                       (double)(oc_now_us() - a->start_us) / 1e6);
    oc_prom_family(p, "offcore_job_ranks", "Ranks of the job on this node",
                   OC_PROM_GAUGE);
    pthread_mutex_lock(&a->pub_mu);
    for (uint32_t i = 0; i < a->npub; i++) {
        snprintf(v, sizeof(v), "%u", a->pub[i].job);
        l[0] = LBL("job", v);
        oc_prom_sample(p, "offcore_job_ranks", l, 1, a->pub[i].nlocal);
    }
    pthread_mutex_unlock(&a->pub_mu);

    /* per job, summed over routers */
    struct { uint32_t job; oc_router_job_counters_t s; } jobs[64];
    uint32_t nj = 0;
    for (uint32_t r = 0; r < a->nrouters; r++) {
        uint32_t n = oc_router_job_counters(a->routers[r], jc, 64);
        for (uint32_t i = 0; i < n && i < 64; i++) {
            uint32_t k = 0;
            while (k < nj && jobs[k].job != jc[i].job)
                k++;
            if (k == nj) {
                if (nj == 64)
                    continue;
                memset(&jobs[nj], 0, sizeof(jobs[nj]));
                jobs[nj++].job = jc[i].job;
            }
            jobs[k].s.msgs_in += jc[i].msgs_in;
            jobs[k].s.msgs_out += jc[i].msgs_out;
            jobs[k].s.bytes_in += jc[i].bytes_in;
            jobs[k].s.bytes_out += jc[i].bytes_out;
            jobs[k].s.bundles_in += jc[i].bundles_in;
            jobs[k].s.bundles_out += jc[i].bundles_out;
            jobs[k].s.rejects += jc[i].rejects;
        }
    }
    static const struct { const char *name, *help; size_t in, out; } jf[] = {
        {"offcore_job_messages_total", "Messages routed for the job",
         offsetof(oc_router_job_counters_t, msgs_in),
         offsetof(oc_router_job_counters_t, msgs_out)},
        {"offcore_job_bytes_total", "Bundle bytes of the job",
         offsetof(oc_router_job_counters_t, bytes_in),
         offsetof(oc_router_job_counters_t, bytes_out)},
        {"offcore_job_bundles_total", "Bundles of the job",
         offsetof(oc_router_job_counters_t, bundles_in),
         offsetof(oc_router_job_counters_t, bundles_out)},
    };
    for (size_t f = 0; f < 3; f++) {
        oc_prom_family(p, jf[f].name, jf[f].help, OC_PROM_COUNTER);
        for (uint32_t k = 0; k < nj; k++) {
            snprintf(v, sizeof(v), "%u", jobs[k].job);
            l[0] = LBL("job", v);
            l[1] = LBL("dir", "in");
            oc_prom_sample(p, jf[f].name, l, 2,
                           *(uint64_t *)((char *)&jobs[k].s + jf[f].in));
            l[1] = LBL("dir", "out");
            oc_prom_sample(p, jf[f].name, l, 2,
                           *(uint64_t *)((char *)&jobs[k].s + jf[f].out));
        }
    }
    oc_prom_family(p, "offcore_job_rejects_total",
                   "Bundles of the job rejected", OC_PROM_COUNTER);
    for (uint32_t k = 0; k < nj; k++) {
        snprintf(v, sizeof(v), "%u", jobs[k].job);
        l[0] = LBL("job", v);
        oc_prom_sample(p, "offcore_job_rejects_total", l, 1, jobs[k].s.rejects);
    }

    /* per peer node, summed over routers: what crossed the network */
    static const struct { const char *name, *help; size_t in, out; } pf[] = {
        {"offcore_peer_bundles_total", "Bundles exchanged with the peer node",
         offsetof(oc_router_peer_counters_t, bundles_in),
         offsetof(oc_router_peer_counters_t, bundles_out)},
        {"offcore_peer_bytes_total", "Bundle bytes exchanged with the peer node",
         offsetof(oc_router_peer_counters_t, bytes_in),
         offsetof(oc_router_peer_counters_t, bytes_out)},
        {"offcore_peer_messages_total", "Messages exchanged with the peer node",
         offsetof(oc_router_peer_counters_t, msgs_in),
         offsetof(oc_router_peer_counters_t, msgs_out)},
    };
    oc_router_peer_counters_t pc;
    for (size_t f = 0; f < 3; f++) {
        oc_prom_family(p, pf[f].name, pf[f].help, OC_PROM_COUNTER);
        for (uint32_t n = 0; n < a->nnodes; n++) {
            if (n == a->node)
                continue;
            peer_sum(a, n, &pc);
            snprintf(v, sizeof(v), "%u", n);
            l[0] = LBL("peer", v);
            l[1] = LBL("dir", "in");
            oc_prom_sample(p, pf[f].name, l, 2,
                           *(uint64_t *)((char *)&pc + pf[f].in));
            l[1] = LBL("dir", "out");
            oc_prom_sample(p, pf[f].name, l, 2,
                           *(uint64_t *)((char *)&pc + pf[f].out));
        }
    }
    oc_prom_family(p, "offcore_peer_blocklist_depth",
                   "Next hops toward the peer node blocked now", OC_PROM_GAUGE);
    for (uint32_t n = 0; n < a->nnodes; n++) {
        if (n == a->node)
            continue;
        peer_sum(a, n, &pc);
        snprintf(v, sizeof(v), "%u", n);
        l[0] = LBL("peer", v);
        oc_prom_sample(p, "offcore_peer_blocklist_depth", l, 1, pc.blocked);
    }

    /* per routing thread */
    for (uint32_t r = 0; r < a->nrouters; r++)
        oc_router_counters(a->routers[r], &rc[r]);
    oc_prom_family(p, "offcore_thread_messages_total",
                   "Messages routed by the thread", OC_PROM_COUNTER);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        oc_prom_sample(p, "offcore_thread_messages_total", l, 1, rc[r].msgs);
    }
    oc_prom_family(p, "offcore_thread_bundles_total",
                   "Bundles received and sent by the thread", OC_PROM_COUNTER);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        l[1] = LBL("dir", "in");
        oc_prom_sample(p, "offcore_thread_bundles_total", l, 2, rc[r].bundles_in);
        l[1] = LBL("dir", "out");
        oc_prom_sample(p, "offcore_thread_bundles_total", l, 2, rc[r].bundles_out);
    }
    oc_prom_family(p, "offcore_thread_undeliverable_total",
                   "Messages for a local rank that had left its (failing) "
                   "job, dropped", OC_PROM_COUNTER);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        oc_prom_sample(p, "offcore_thread_undeliverable_total", l, 1,
                       rc[r].undeliverable);
    }
    oc_prom_family(p, "offcore_thread_bundles_forwarded_total",
                   "Bundles sent on whole (all for one rank), not "
                   "re-aggregated", OC_PROM_COUNTER);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        oc_prom_sample(p, "offcore_thread_bundles_forwarded_total", l, 1,
                       rc[r].bundles_forwarded);
    }
    oc_prom_family(p, "offcore_thread_sleeps_total",
                   "Times the thread, idle, slept on its UCX worker's event fd",
                   OC_PROM_COUNTER);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        oc_prom_sample(p, "offcore_thread_sleeps_total", l, 1, rc[r].sleeps);
    }
    oc_prom_family(p, "offcore_thread_flushes_total",
                   "Bundles flushed, by reason", OC_PROM_COUNTER);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        static const char *const why[] = {"full", "timeout", "idle", "explicit"};
        const uint64_t *cnt = &rc[r].flush_full;
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        for (int k = 0; k < 4; k++) {
            l[1] = LBL("reason", why[k]);
            oc_prom_sample(p, "offcore_thread_flushes_total", l, 2, cnt[k]);
        }
    }
    oc_prom_family(p, "offcore_thread_blocklist_depth",
                   "Next hops held back by back-pressure", OC_PROM_GAUGE);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        oc_prom_sample(p, "offcore_thread_blocklist_depth", l, 1,
                       rc[r].blocklist_depth);
    }
    oc_prom_family(p, "offcore_thread_backlog_bundles",
                   "Bundles received and not yet routed", OC_PROM_GAUGE);
    for (uint32_t r = 0; r < a->nrouters; r++) {
        snprintf(t, sizeof(t), "%u", r);
        l[0] = LBL("thread", t);
        oc_prom_sample(p, "offcore_thread_backlog_bundles", l, 1, rc[r].backlog);
    }

    /* rejects by reason, over all threads */
    oc_prom_family(p, "offcore_rejects_total",
                   "Bundles and control messages rejected, by reason",
                   OC_PROM_COUNTER);
    for (int k = 0; k < 16; k++) {
        uint64_t sum = 0;
        const char *name = oc_status_string((oc_status_t)(OC_ERR_WIRE_TRUNCATED - k));
        char reason[48];
        for (uint32_t r = 0; r < a->nrouters; r++)
            sum += rc[r].reject_wire[k];
        if (strncmp(name, "OC_ERR_WIRE", 11) != 0)
            continue;
        snprintf(reason, sizeof(reason), "%.*s", (int)strcspn(name, ":"), name);
        l[0] = LBL("reason", reason);
        oc_prom_sample(p, "offcore_rejects_total", l, 1, sum);
    }
    {
        uint64_t sum = 0;
        for (uint32_t r = 0; r < a->nrouters; r++)
            sum += rc[r].reject_unknown_sender;
        l[0] = LBL("reason", "unknown_sender");
        oc_prom_sample(p, "offcore_rejects_total", l, 1, sum);
        l[0] = LBL("reason", "control");
        oc_prom_sample(p, "offcore_rejects_total", l, 1,
                       atomic_load(&a->rejects_ctl));
    }
    return oc_prom_status(p);
}

static oc_status_t oc_agent_metrics_start(agent_t *a)
{
    if (!strcmp(a->cfg.metrics, "off"))
        return OC_OK;
    return oc_metrics_server_start(a->cfg.metrics, fill_metrics, a,
                                   &a->metrics);
}

static void oc_agent_metrics_stop(agent_t *a)
{
    oc_metrics_server_stop(a->metrics);
    a->metrics = NULL;
}

int oc_agent_run(const oc_agent_config_t *cfg)
{
    agent_t *a = calloc(1, sizeof(*a));
    struct sigaction sa;
    oc_status_t st;
    int rc = 1;

    if (a == NULL)
        return 1;
    a->cfg = *cfg;
    a->start_us = oc_now_us();
    pthread_mutex_init(&a->pub_mu, NULL);
    /* the environment variable, when set, wins over the file */
    if (oc_ctl_key_load(getenv(OC_CTL_CLUSTER_KEY_ENV) ? NULL
                                                       : cfg->cluster_key,
                        OC_CTL_CLUSTER_KEY_ENV, &a->cluster_key) != OC_OK) {
        fprintf(stderr, "offcored: no cluster key: create one with "
                        "'offcore keygen > FILE; chmod 600 FILE' and pass "
                        "--cluster-key FILE (or set OC_CLUSTER_KEY)\n");
        goto out;
    }
    if ((st = setup_nodes(a)) != OC_OK)
        goto out;
    a->nrouters = (uint32_t)cfg->threads;
    for (uint32_t t = 0; t < a->nrouters; t++) {
        oc_router_params_t p = {t, a->node, a->nnodes, cfg->bundle_size,
                                cfg->buffers, cfg->flush_timeout_us,
                                cfg->max_inflight, cfg->route == 1};
        if ((st = oc_router_create(&p, &a->routers[t])) != OC_OK ||
            (st = oc_router_start(a->routers[t])) != OC_OK) {
            oc_error(OC_COMP_AGENT, "router %u: %s", t, oc_status_string(st));
            a->nrouters = t + (a->routers[t] != NULL);
            goto out;
        }
    }
    if (setup_listen(a) != OC_OK)
        goto out;
    if (oc_agent_metrics_start(a) != OC_OK)
        goto out;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    {
        char murl[OC_CFG_STRLEN + 64] = "";
        if (a->metrics != NULL) {
            char host[OC_CFG_STRLEN];
            snprintf(host, sizeof(host), "%s", cfg->metrics);
            char *colon = strrchr(host, ':');
            if (colon != NULL)
                *colon = '\0';
            snprintf(murl, sizeof(murl), ", metrics http://%s:%u/metrics",
                     host[0] ? host : "0.0.0.0",
                     (unsigned)oc_metrics_server_port(a->metrics));
        }
        fprintf(stderr, "offcored: node %u of %u, %u routing thread%s%s, "
                "ready\n", a->node, a->nnodes, a->nrouters,
                a->nrouters > 1 ? "s" : "", murl);
    }
    run(a);
    fprintf(stderr, "offcored: shutting down\n");
    rc = 0;
out:
    oc_agent_metrics_stop(a);
    shutdown_all(a);
    for (int i = 0; i < a->nlfd; i++)
        oc_ctl_listener_close(&a->lis[i]);
    oc_ctl_key_clear(&a->cluster_key);
    for (uint32_t i = 0; a->node_addr && i < a->nnodes; i++)
        free(a->node_addr[i]);
    free(a->node_addr);
    free(a->peer);
    free(a->next_dial_us);
    free(a);
    return rc;
}
