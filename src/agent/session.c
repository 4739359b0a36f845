/*
 * session.c — one control connection's life in offcored: the rank
 * handshake (HELLO -> CHALLENGE -> AUTH -> WELCOME) and the agents' mutual
 * one (PEER_HELLO, PEER_AUTH), then what each may say once authenticated.
 * Every message in the wrong state is answered with a named error and the
 * connection is closed.  Until a connection authenticates it is pending
 * in the agent's guard (util/guard.h): deadline, eviction at the cap, and
 * frames of at most OC_CTL_PREAUTH_FRAME_MAX bytes.  Control thread only;
 * peers are untrusted until their MAC checks out.
 */
#include "agent_int.h"
#include "util/version.h"

#include "ctl/derive.h"

#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- ranks ---------------------------------------------------------- */

static const char *state_name(int kind)
{
    static const char *const names[] = {
        "new (expecting HELLO or PEER_HELLO)", "challenged (expecting AUTH)",
        "rank", "dialled (expecting PEER_HELLO)",
        "peer-hello (expecting PEER_AUTH)", "peer"};
    return kind >= 0 && kind <= C_PEER ? names[kind] : "?";
}

/* Authenticated: no deadline, not evictable, full-size frames. */
static void settle(agent_t *a, oc_aconn_t *c)
{
    oc__guard_settle(&a->guard, &c->slot);
    oc__ctl_conn_set_max_frame(c->cc, OC_CTL_FRAME_MAX);
}

static void rank_hello(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    oc_ctl_msg_t r;
    uint32_t pid, uid;

    /* On a Unix socket the kernel says who is calling: a HELLO claiming
     * another process's pid is a lie worth refusing. */
    if (oc__ctl_peer_cred(oc__ctl_conn_fd(c->cc), &pid, &uid) == OC_OK) {
        if (pid != m->u.hello.pid) {
            a->rejects_ctl++;
            oc__ag_error(a, c, OC_ERR_CTL_AUTH,
                         "HELLO: pid is not the caller's");
            c->dead = 1;
            return;
        }
        c->pid = pid; /* the only pid the collectives act on (rcma.c) */
    }
    c->job = m->u.hello.job;
    c->rank = m->u.hello.rank;
    c->want_shm = (m->u.hello.flags & OC_CTL_HELLO_F_SHM) != 0;
    c->size = m->u.hello.size;
    memcpy(c->cnonce, m->u.hello.nonce, sizeof(c->cnonce));
    c->addr = malloc(m->u.hello.addr.len);
    if (c->addr == NULL ||
        oc__ctl_random(c->snonce, sizeof(c->snonce)) != OC_OK) {
        c->dead = 1;
        return;
    }
    memcpy(c->addr, m->u.hello.addr.data, m->u.hello.addr.len);
    c->addr_len = m->u.hello.addr.len;
    memset(&r, 0, sizeof(r));
    r.type = OC_CTL_CHALLENGE;
    memcpy(r.u.challenge.nonce, c->snonce, sizeof(c->snonce));
    oc__ag_send(c, &r);
    c->kind = C_RANK_AUTH;
}

/* A rank on this host that asked for shared memory gets its segment and
 * its router's wake-up eventfd with WELCOME (SCM_RIGHTS): only after it
 * proved the job key, and only over a Unix socket (the same host).
 * Returns 1 when WELCOME went out with them, 0 when it is to go without
 * (the rank then uses UCX). */
static int welcome_shm(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *w,
                       uint32_t thread)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fds[2], memfd;
    oc_status_t st;

    if (!c->want_shm || a->cfg.shm_slots == 0 ||
        getsockname(oc__ctl_conn_fd(c->cc), (struct sockaddr *)&ss, &sl) != 0 ||
        ss.ss_family != AF_UNIX)
        return 0;
    st = oc__rshm_create((uint32_t)a->cfg.shm_slots,
                         (uint32_t)(a->cfg.bundle_size & ~(uint64_t)7),
                         a->nrouters, &c->shm, &memfd);
    if (st != OC_OK) {
        oc_warn(OC_COMP_AGENT, "job %u rank %u: no shared-memory channel "
                "(%s%s): UCX", c->job, c->rank, oc_status_string(st),
                st == OC_ERR_INVALID_PARAM
                    ? ": OC_AGENT_SHM_SLOTS must be a power of two and "
                      "OC_AGENT_SHM_SLOTS x OC_AGENT_BUNDLE_SIZE x (1 + "
                      "threads) fit in memory" : "");
        c->shm = NULL;
        return 0;
    }
    fds[0] = memfd;
    fds[1] = oc__router_rank_wake_fd(a->routers[thread]);
    st = oc__ctl_conn_send_fds(c->cc, w, fds, 2);
    close(memfd);
    if (st != OC_OK) {
        oc_warn(OC_COMP_AGENT, "job %u rank %u: no shared-memory channel "
                "(%s%s): UCX", c->job, c->rank, oc_status_string(st),
                st == OC_ERR_NO_RESOURCE ? ": out of descriptors" : "");
        oc__rshm_put(c->shm);
        c->shm = NULL;
        return 0;
    }
    return 1;
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

    oc__ctl_job_key(&a->cluster_key, c->job, &key);
    oc__ctl_rank_mac(&key, c->snonce, c->cnonce, c->job, c->rank, c->size, mac);
    if (!oc__ctl_mac_equal(mac, m->u.auth.mac)) {
        oc__ctl_key_clear(&key);
        a->rejects_ctl++;
        oc__ag_error(a, c, OC_ERR_CTL_AUTH,
                   "authentication failed: OC_JOB_KEY is not this job's key "
                   "(offcore job-key --job ID prints it)");
        c->dead = 1;
        return;
    }
    c->token = oc__ctl_rank_token(&key, c->snonce, c->cnonce);
    oc__ctl_key_clear(&key);
    j = oc__ajob_get(&a->jobs, c->job, c->size, a->nnodes, &st);
    if (j == NULL) {
        oc__ag_error(a, c, st, st == OC_ERR_INVALID_PARAM
                              ? "job size differs from its other ranks'"
                              : "out of memory");
        c->dead = 1;
        return;
    }
    if (j->failed || j->ready || j->local[c->rank] != NULL ||
        oc__ajob_place(j, c->rank, a->node) != OC_OK) {
        oc__ag_error(a, c, OC_ERR_STATE,
                   j->failed ? "job has failed"
                             : "rank already connected (the same OC_RANK "
                               "twice, or a job id still in use)");
        c->dead = 1;
        return;
    }
    j->local[c->rank] = c;
    j->nlocal++;
    c->kind = C_RANK;
    settle(a, c);
    thread = c->rank % a->nrouters;
    oc__router_address(a->routers[thread], &raddr, &raddr_len);
    memset(&r, 0, sizeof(r));
    r.type = OC_CTL_WELCOME;
    r.u.welcome.node = a->node;
    r.u.welcome.thread = thread;
    r.u.welcome.addr.data = raddr;
    r.u.welcome.addr.len = (uint32_t)raddr_len;
    /* a job's collectives meet in one router (its descriptors and every
     * contribution must reach the same state): router 0, on every agent,
     * so that it is also the router that talks to the peer agents' router
     * 0 (peer_info maps router t to the peer's t % n) */
    r.u.welcome.coll_thread = 0;
    oc__router_address(a->routers[0], &raddr, &raddr_len);
    r.u.welcome.coll_addr.data = raddr;
    r.u.welcome.coll_addr.len = (uint32_t)raddr_len;
    if (!welcome_shm(a, c, &r, thread))
        oc__ag_send(c, &r);
    oc_info(OC_COMP_AGENT, "job %u rank %u/%u joined (router %u, %s)", c->job,
            c->rank, c->size, thread,
            c->shm != NULL ? "shared memory" : "UCX");
    oc__ag_job_tell_peer(a, j, NULL);
    oc__ag_job_check_ready(a, j);
}

static void rank_counts(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const __typeof__(m->u.counts) *k = &m->u.counts;
    oc_ajob_t *j = oc__ajob_find(&a->jobs, c->job);
    if (j == NULL || k->job != c->job || !j->ready) {
        oc__ag_error(a, c, OC_ERR_STATE, "COUNTS before the job is ready");
        return;
    }
    if (k->epoch != j->epoch || k->round != j->round || j->sent_up) {
        oc__ag_error(a, c, OC_ERR_STATE, "COUNTS out of turn");
        c->dead = 1;
        return;
    }
    j->reported++;
    j->sum_sent += k->sent;
    j->sum_delivered += k->delivered;
    oc__ag_wave_step(a, j);
}

static void rank_gone(agent_t *a, oc_aconn_t *c)
{
    oc_ajob_t *j = oc__ajob_find(&a->jobs, c->job);
    oc__ag_rank_tr_forget(a, c);
    if (c->kind != C_RANK || j == NULL || j->local[c->rank] != c)
        return;
    j->local[c->rank] = NULL;
    j->nlocal--;
    if (j->ready)
        for (uint32_t t = 0; t < a->nrouters; t++)
            oc__router_del_rank(a->routers[t], j->id, c->rank);
    if (!c->said_bye) {
        char why[64];
        snprintf(why, sizeof(why), "rank %u died", c->rank);
        oc__ag_job_fail(a, j, why, 1);
    } else {
        oc_info(OC_COMP_AGENT, "job %u rank %u left", j->id, c->rank);
    }
    if (j->nlocal == 0)
        oc__ag_job_release(a, j);
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
    oc__ag_send(c, &m);
}

static void peer_send_auth(agent_t *a, oc_aconn_t *c)
{
    oc_ctl_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_PEER_AUTH;
    oc__ctl_peer_mac(&a->cluster_key, c->peer_nonce, c->my_nonce, a->node,
                    m.u.auth.mac);
    oc__ag_send(c, &m);
}

static void peer_hello(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    uint32_t node = m->u.peer_hello.node;
    if (node >= a->nnodes || node == a->node || a->peer[node] != NULL ||
        (c->kind == C_PEER_HELLO && node != c->node)) {
        a->rejects_ctl++;
        oc__ag_error(a, c, OC_ERR_CTL_VALUE, "PEER_HELLO: bad or duplicate node");
        c->dead = 1;
        return;
    }
    if (c->kind == C_NEW) /* we were dialled: answer with our nonce */
        oc__ctl_random(c->my_nonce, sizeof(c->my_nonce));
    if (!memcmp(m->u.peer_hello.nonce, c->my_nonce, sizeof(c->my_nonce))) {
        a->rejects_ctl++; /* our own nonce reflected back */
        oc__ag_error(a, c, OC_ERR_CTL_AUTH, "PEER_HELLO: reflected nonce");
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

/* A peer that does not share our cluster key, seen from either end: in
 * the metrics (offcore stat's peers, doctor), not only in the log. */
static void peer_auth_failed(agent_t *a, uint32_t node)
{
    if (node >= a->nnodes || node == a->node)
        return;
    pthread_mutex_lock(&a->pub_mu);
    a->peer_tr[node].auth_fail++;
    pthread_mutex_unlock(&a->pub_mu);
}

/* The peer sent ERROR during the agents' handshake: it refused us. */
static void peer_refused(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    if (m->u.error.status == OC_ERR_CTL_AUTH)
        peer_auth_failed(a, c->node);
    oc_warn_limited(&a->lim_bad, OC_COMP_AGENT, "peer %s refused this "
                    "agent: %.*s", oc__ctl_conn_name(c->cc),
                    (int)m->u.error.text.len,
                    (const char *)m->u.error.text.data);
    c->dead = 1;
}

/* The token peer @p c's bundles carry to this agent's routers. */
static uint64_t peer_recv_token(const agent_t *a, const oc_aconn_t *c)
{
    return oc__ctl_peer_token(&a->cluster_key, c->peer_nonce, c->my_nonce,
                              c->node);
}

static void peer_auth(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    uint8_t mac[OC_CTL_MAC_LEN];
    oc_ctl_msg_t r;

    oc__ctl_peer_mac(&a->cluster_key, c->my_nonce, c->peer_nonce, c->node, mac);
    if (!oc__ctl_mac_equal(mac, m->u.auth.mac)) {
        a->rejects_ctl++;
        peer_auth_failed(a, c->node);
        oc__ag_error(a, c, OC_ERR_CTL_AUTH, "peer authentication failed: "
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
    settle(a, c);
    a->peer[c->node] = c;
    memset(&r, 0, sizeof(r));
    r.type = OC_CTL_PEER_INFO;
    r.u.peer_info.node = a->node;
    /* once it has our routers' addresses the peer may send before its own
     * PEER_INFO is read here: the routers hold its bundles meanwhile */
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc__router_expect_peer(a->routers[t], c->node, peer_recv_token(a, c));
    r.u.peer_info.addrs.count = a->nrouters;
    for (uint32_t t = 0; t < a->nrouters; t++) {
        const void *addr;
        size_t len;
        oc__router_address(a->routers[t], &addr, &len);
        r.u.peer_info.addrs.item[t].data = addr;
        r.u.peer_info.addrs.item[t].len = (uint32_t)len;
    }
    oc__ag_send(c, &r);
    for (oc_ajob_t *j = a->jobs.head; j != NULL; j = j->next)
        oc__ag_job_tell_peer(a, j, c);
    oc_info(OC_COMP_AGENT, "peer node %u authenticated", c->node);
}

static void peer_info(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const oc_ctl_addrs_t *ad = &m->u.peer_info.addrs;
    uint64_t send_token, recv_token;

    if (m->u.peer_info.node != c->node || ad->count == 0) {
        oc__ag_error(a, c, OC_ERR_CTL_VALUE, "PEER_INFO: bad content");
        c->dead = 1;
        return;
    }
    send_token = oc__ctl_peer_token(&a->cluster_key, c->my_nonce, c->peer_nonce,
                                   a->node);
    recv_token = peer_recv_token(a, c);
    oc__ag_peer_tr_expect(a, c->node, ad->item[0].data, ad->item[0].len);
    for (uint32_t t = 0; t < a->nrouters; t++) {
        uint32_t k = t % ad->count;
        oc__router_add_peer(a->routers[t], c->node, send_token, recv_token,
                           ad->item[k].data, ad->item[k].len);
    }
}

static void peer_job_ranks(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const __typeof__(m->u.job_ranks) *jr = &m->u.job_ranks;
    oc_status_t st;
    oc_ajob_t *j;

    if (jr->node != c->node) {
        oc__ag_error(a, c, OC_ERR_INVALID_PARAM, "JOB_RANKS for another node");
        return;
    }
    j = oc__ajob_get(&a->jobs, jr->job, jr->size, a->nnodes, &st);
    if (j == NULL) {
        oc__ag_error(a, c, st, "JOB_RANKS: job size disagrees");
        return;
    }
    for (uint32_t i = 0; i < jr->ranks.count; i++)
        if (oc__ajob_place(j, oc__ctl_u32s_get(&jr->ranks, i), c->node) !=
            OC_OK) {
            oc__ag_job_fail(a, j, "a rank joined on two nodes", 1);
            return;
        }
    oc__ag_job_check_ready(a, j);
}

static void peer_wave(agent_t *a, oc_aconn_t *c, const oc_ctl_msg_t *m)
{
    const __typeof__(m->u.counts) *k = &m->u.counts;
    oc_ajob_t *j = oc__ajob_find(&a->jobs, m->type == OC_CTL_QUIESCE_DONE
                                              ? m->u.quiesce_done.job
                                              : k->job);
    uint32_t idx;
    if (j == NULL)
        return;
    if (m->type == OC_CTL_COUNTS && oc__ajob_is_child(j, c->node, &idx)) {
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
        oc__ag_error(a, c, OC_ERR_STATE, "wave message from a node not adjacent");
        return;
    }
    oc__ag_wave_step(a, j);
}

static void peer_gone(agent_t *a, oc_aconn_t *c)
{
    char why[64];
    if (c->kind != C_PEER || a->peer[c->node] != c)
        return;
    a->peer[c->node] = NULL;
    oc__ag_peer_tr_expect(a, c->node, NULL, 0);
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc__router_del_peer(a->routers[t], c->node);
    snprintf(why, sizeof(why), "the agent of node %u went away", c->node);
    for (oc_ajob_t *j = a->jobs.head; j != NULL; j = j->next)
        if (j->node_ranks[c->node] > 0)
            oc__ag_job_fail(a, j, why, 0);
    a->next_dial_us[c->node] = oc__now_us() + 1000000;
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
        if (m->type == OC_CTL_ERROR) {
            peer_refused(a, c, m);
            return;
        }
        if (m->type != OC_CTL_PEER_HELLO)
            goto unexpected;
        peer_hello(a, c, m);
        return;
    case C_PEER_AUTH:
        if (m->type == OC_CTL_ERROR) {
            peer_refused(a, c, m);
            return;
        }
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
            if ((j = oc__ajob_find(&a->jobs, m->u.job_fail.job)) != NULL)
                oc__ag_job_fail(a, j, "failed on another node", 0);
            return;
        case OC_CTL_BYE: return;
        default: goto unexpected;
        }
    }
unexpected:
    if (m->type == OC_CTL_BYE) {
        /* a client that gave up mid-handshake (its own timeout) says
         * goodbye: nothing unexpected about that */
        oc_debug(OC_COMP_AGENT, "%s: left during its handshake (%s)",
                 oc__ctl_conn_name(c->cc), state_name(c->kind));
        c->dead = 1;
        return;
    }
    a->rejects_ctl++;
    {
        char text[96];
        snprintf(text, sizeof(text), "unexpected %s in state %s",
                 oc__ctl_type_name((int)m->type), state_name(c->kind));
        oc__ag_error(a, c, OC_ERR_STATE, text);
    }
    c->dead = 1;
}

oc_aconn_t *oc__ag_conn_add(agent_t *a, int fd, int kind, const char *name)
{
    oc_guard_slot_t *evict;
    oc_aconn_t *c;

    if (!oc__guard_admit(&a->guard, &evict)) {
        close(fd);
        return NULL;
    }
    if (evict != NULL) /* the oldest pending one makes room, now */
        oc__ag_conn_close(a, oc__ag_conn_of(evict));
    c = calloc(1, sizeof(*c));
    if (c == NULL || oc__ctl_conn_create(fd, name, &c->cc) != OC_OK) {
        free(c);
        close(fd);
        return NULL;
    }
    oc__guard_add(&a->guard, &c->slot, oc__now_us());
    oc__ctl_conn_set_max_frame(c->cc, OC_CTL_PREAUTH_FRAME_MAX);
    c->kind = kind;
    c->next = a->conns;
    a->conns = c;
    return c;
}

void oc__ag_conn_close(agent_t *a, oc_aconn_t *c)
{
    for (oc_aconn_t **pp = &a->conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    oc__ag_conn_drop(a, c);
}

void oc__ag_conn_expire(agent_t *a, oc_aconn_t *c)
{
    char text[96], scratch[OC_CTL_MAX_TEXT];
    oc_ctl_msg_t m;

    snprintf(text, sizeof(text), "handshake not completed within %u ms",
             a->guard.p.deadline_ms);
    oc__ctl_set_error(&m, OC_ERR_CTL_TIMEOUT, text, scratch);
    oc__ag_send(c, &m); /* the guard logged it, rate-limited */
    oc__ctl_conn_flush(c->cc);
    c->dead = 1;
}

void oc__ag_conn_drop(agent_t *a, oc_aconn_t *c)
{
    oc__guard_remove(&a->guard, &c->slot);
    if (c->kind == C_RANK)
        rank_gone(a, c);
    else if (c->kind == C_PEER)
        peer_gone(a, c);
    oc__ctl_conn_destroy(c->cc);
    oc__rshm_put(c->shm); /* the router keeps its own reference */
    free(c->addr);
    free(c);
}

void oc__ag_dial_peers(agent_t *a)
{
    uint64_t now = oc__now_us();
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
        if (oc__ctl_connect(a->node_addr[n], 200, &fd) != OC_OK)
            continue; /* retried each second */
        c = oc__ag_conn_add(a, fd, C_PEER_HELLO, a->node_addr[n]);
        if (c == NULL)
            continue;
        c->node = n;
        oc__ctl_random(c->my_nonce, sizeof(c->my_nonce));
        peer_send_hello(a, c);
    }
}

/* Another release at the other end: both versions in the log, and told
 * to the peer in a frame of its own version (ctl.h). */
static void version_refused(agent_t *a, oc_aconn_t *c)
{
    unsigned theirs = oc__ctl_conn_peer_version(c->cc);
    char text[160];

    a->rejects_ctl++;
    oc_warn_limited(&a->lim_bad, OC_COMP_AGENT,
                    "control: %s speaks control protocol version %u; this "
                    "offcored (%s) speaks %u: another offcore release "
                    "(run one release on every rank and agent), connection "
                    "closed", oc__ctl_conn_name(c->cc), theirs, oc__version(),
                    OC_CTL_VERSION);
    snprintf(text, sizeof(text), "offcored %s speaks control protocol "
             "version %u, not %u: run one offcore release on the node",
             oc__version(), OC_CTL_VERSION, theirs);
    (void)oc__ctl_conn_send_version_error(c->cc, text);
    c->dead = 1;
}

void oc__ag_conn_io(agent_t *a, oc_aconn_t *c, short revents)
{
    oc_ctl_msg_t m;
    oc_status_t st;

    if (c->dead) /* evicted earlier in this round */
        return;
    if (revents & POLLOUT)
        if (oc__ctl_conn_flush(c->cc) < 0)
            c->dead = 1;
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        for (;;) {
            st = oc__ctl_conn_read(c->cc, &m);
            if (st == OC_INPROGRESS)
                break;
            if (st == OC_ERR_WIRE_VERSION) {
                version_refused(a, c);
                break;
            }
            if (st != OC_OK) {
                if (st != OC_ERR_PEER_FAILED) {
                    a->rejects_ctl++;
                    oc_warn_limited(&a->lim_bad, OC_COMP_AGENT,
                                    "control: %s: malformed frame, "
                                    "connection closed: %s",
                                    oc__ctl_conn_name(c->cc),
                                    oc__ctl_reject_reason(st));
                }
                c->dead = 1;
                break;
            }
            on_message(a, c, &m);
            if (c->dead)
                break;
        }
    }
    oc__ctl_conn_flush(c->cc);
}
