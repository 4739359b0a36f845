/*
 * agent.c — offcored's control thread: set-up (nodes, routers, listeners,
 * the metrics server), the poll loop that admits connections under the
 * guard (util/guard.h: cap, handshake deadline, accept back-off) and hands
 * their input to session.c, and shut-down.  Data never passes here: once a
 * job is wired up its bundles flow rank -> router -> router -> rank over
 * UCX (router.c).
 */
#include "agent_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- the loop ------------------------------------------------------- */

/* At most this many connections are taken per listener per round, so a
 * burst cannot starve the connections already in (or, evicting, hold many
 * descriptors that are only closed at the end of the round). */
#define ACCEPT_BURST 32

/* How many of the connections have a descriptor numbered below @p lim:
 * the room they have under a lowered limit (oc__guard_fd_short()). */
static uint32_t conns_under(const agent_t *a, uint64_t lim)
{
    uint32_t k = 0;
    for (const oc_aconn_t *c = a->conns; c != NULL; c = c->next)
        if (!c->dead && (uint64_t)oc__ctl_conn_fd(c->cc) < lim)
            k++;
    return k;
}

static uint64_t nofile_now(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t)rl.rlim_cur
                                              : UINT64_MAX;
}

static void accept_some(agent_t *a, oc_ctl_listener_t *l)
{
    char peer[OC_CTL_ADDR_STRLEN];
    int fd;

    for (int k = 0; k < ACCEPT_BURST; k++) {
        oc_status_t st = oc__ctl_accept(l, &a->guard, &fd, peer, sizeof(peer));
        if (st == OC_ERR_NO_RESOURCE) {
            /* Out of descriptors below the cap: the connections under the
             * descriptor limit are the cap now, less a reserve for our own
             * descriptors (UCX opens /proc/PID/stat when a rank's endpoint
             * is made; a rank's shared-memory segment goes out as two):
             * handshakes, oldest first, make room for it, and newcomers
             * then take the place of the oldest handshake under that cap.
             * The oldest handshake always gives its descriptor to the
             * newcomer: a swap uses no more descriptors, and a real rank
             * behind a backlog of hostile connections gets in at once.
             * With none pending, the guard backs off. */
            int e = a->guard.accept_errno;
            uint32_t due;
            oc_guard_slot_t *s;

            if (e != EMFILE && e != ENFILE)
                return; /* out of memory: the guard backs off */
            due = oc__guard_fd_short(&a->guard,
                                     conns_under(a, nofile_now()));
            if ((s = oc__guard_shed(&a->guard)) == NULL)
                return;
            do
                oc__ag_conn_close(a, oc__ag_conn_of(s));
            while (due > 1 && --due > 0 && (s = oc__guard_shed(&a->guard)) != NULL);
            oc__guard_resume(&a->guard);
            continue;
        }
        if (st != OC_OK)
            return; /* nothing more */
        oc__ag_conn_add(a, fd, C_NEW, peer);
    }
}

/* Unlink and drop the connections marked dead. */
static void reap(agent_t *a)
{
    for (oc_aconn_t **pp = &a->conns; *pp != NULL;) {
        oc_aconn_t *c = *pp;
        if (c->dead) {
            *pp = c->next;
            oc__ag_conn_drop(a, c);
        } else {
            pp = &c->next;
        }
    }
}

/* poll() refuses more descriptors than RLIMIT_NOFILE: the limit was
 * lowered under us (prlimit).  The limit becomes the cap, less a reserve
 * (oc__guard_fd_short()): close handshakes, oldest first, down to it,
 * rather than stop serving the authenticated. */
static void shed(agent_t *a, size_t n, size_t nl)
{
    static oc_log_limit_t lim = OC_LOG_LIMIT_INIT("descriptor-limit sheds");
    struct rlimit rl;
    size_t closed = 0, want;
    oc_guard_slot_t *s;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= n) {
        poll(NULL, 0, 100); /* not the limit after all: do not spin */
        return;
    }
    {   /* room: under the limit in number, and as a count to poll()
         * beside the @p nl listeners */
        uint32_t room = conns_under(a, rl.rlim_cur);
        if (rl.rlim_cur < nl + room)
            room = rl.rlim_cur > nl ? (uint32_t)(rl.rlim_cur - nl) : 0;
        want = oc__guard_fd_short(&a->guard, room);
    }
    while (closed < want && (s = oc__guard_shed(&a->guard)) != NULL) {
        oc__guard_remove(&a->guard, s);
        oc__ag_conn_of(s)->dead = 1;
        closed++;
    }
    reap(a);
    oc__guard_pause(&a->guard, oc__now_us());
    oc_warn_limited(&lim, OC_COMP_AGENT, "the descriptor limit (%llu) is below "
                    "the %zu descriptors in use: closed %zu connections still "
                    "in their handshake%s", (unsigned long long)rl.rlim_cur, n,
                    closed, closed < want ? " (no more to close: waiting)" : "");
    if (closed < want)
        poll(NULL, 0, (int)a->guard.p.backoff_ms);
}

static void run(agent_t *a)
{
    struct pollfd *pfd = NULL;
    oc_aconn_t **pc = NULL;
    size_t cap = 0;

    while (!g_stop) {
        size_t n = 0, nc = 0;
        int lidx[8], nl = 0, rc, wait = 100;
        uint64_t now = oc__now_us();
        oc_guard_slot_t *s;

        oc__guard_fd_relax(&a->guard, now); /* the limit raised again */
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
        /* out of descriptors: leave the listeners alone for the back-off
         * (a readable listener would wake poll at once, forever) */
        if (oc__guard_listen_ok(&a->guard, now, &wait))
            for (int i = 0; i < a->nlfd; i++) {
                pfd[n].fd = a->lis[i].fd;
                pfd[n].events = POLLIN;
                lidx[nl++] = i;
                pc[n++] = NULL;
            }
        for (oc_aconn_t *c = a->conns; c != NULL; c = c->next) {
            pfd[n].fd = oc__ctl_conn_fd(c->cc);
            pfd[n].events = POLLIN;
            if (oc__ctl_conn_want_write(c->cc))
                pfd[n].events |= POLLOUT;
            pc[n++] = c;
        }
        rc = poll(pfd, n, oc__guard_wait_ms(&a->guard, now, wait));
        if (rc < 0 && errno == EINVAL) {
            shed(a, n, (size_t)nl);
            continue;
        }
        if (rc < 0 && errno != EINTR) {
            oc_error(OC_COMP_AGENT, "poll: %s", strerror(errno));
            break;
        }
        for (size_t i = (size_t)nl; rc > 0 && i < n; i++)
            if (pfd[i].revents != 0)
                oc__ag_conn_io(a, pc[i], pfd[i].revents);
        /* handshakes past their deadline */
        now = oc__now_us();
        while ((s = oc__guard_expired(&a->guard, now)) != NULL)
            oc__ag_conn_expire(a, oc__ag_conn_of(s));
        oc__ag_publish_jobs(a);
        oc__ag_peer_tr_poll(a);
        reap(a); /* after their last words were flushed */
        /* newcomers last: admitting one may close another at once, so no
         * pointer into the list (pc[]) may be used after this */
        for (int i = 0; rc > 0 && i < nl; i++)
            if (pfd[i].revents != 0)
                accept_some(a, &a->lis[lidx[i]]);
        oc__ag_dial_peers(a);
        oc__log_limits_flush();
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
        oc__ag_send(c, &m);
        oc__ctl_conn_flush(c->cc);
    }
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc__router_stop(a->routers[t]); /* all first: see router.h */
    for (uint32_t t = 0; t < a->nrouters; t++)
        oc__router_destroy(a->routers[t]);
    while (a->conns != NULL) {
        oc_aconn_t *c = a->conns;
        a->conns = c->next;
        c->kind = C_NEW; /* no failure reports while leaving */
        oc__ag_conn_drop(a, c);
    }
    while (a->jobs.head != NULL)
        oc__ajob_remove(&a->jobs, a->jobs.head);
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
    a->peer_tr_addr = calloc(n, sizeof(*a->peer_tr_addr));
    a->peer_tr = calloc(n, sizeof(*a->peer_tr));
    if (a->node_addr == NULL || a->peer == NULL || a->next_dial_us == NULL ||
        a->peer_tr_addr == NULL || a->peer_tr == NULL)
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
    char listen[OC_CFG_STRLEN], *p, *tok, *end;
    unsigned long mode = strtoul(a->cfg.socket_mode, &end, 8);

    if (a->cfg.socket_mode[0] < '0' || a->cfg.socket_mode[0] > '7' ||
        *end != '\0' || mode == 0 || mode > 0777) {
        oc_error(OC_COMP_AGENT, "OC_AGENT_SOCKET_MODE '%s': give octal "
                 "permission bits from 1 to 0777, e.g. 0666", a->cfg.socket_mode);
        return OC_ERR_CONFIG;
    }
    snprintf(listen, sizeof(listen), "%s", a->cfg.listen);
    if (listen[strspn(listen, ", \t")] == '\0') {
        oc_error(OC_COMP_AGENT, "no control address: --listen (or "
                 "OC_AGENT_LISTEN) is '%s'; give unix:/PATH and/or "
                 "tcp:HOST:PORT, comma-separated", a->cfg.listen);
        return OC_ERR_CONFIG;
    }
    for (p = listen; p != NULL;) {
        tok = p;
        p = strchr(p, ',');
        if (p != NULL)
            *p++ = '\0';
        if (tok[0] == '\0') {
            oc_error(OC_COMP_AGENT, "--listen '%s': an empty address "
                     "between commas", a->cfg.listen);
            return OC_ERR_CONFIG;
        }
        if (a->nlfd == 8) {
            oc_error(OC_COMP_AGENT, "--listen: at most 8 addresses");
            return OC_ERR_CONFIG;
        }
        if (oc__ctl_listen_mode(tok, (unsigned)mode, &a->lis[a->nlfd]) != OC_OK)
            return OC_ERR_CONFIG; /* logged with the reason */
        oc_info(OC_COMP_AGENT, "listening on %s", a->lis[a->nlfd].addr);
        a->nlfd++;
    }
    return OC_OK;
}

/* The guard of the control socket, fitted to the descriptor limit. */
static void setup_guard(agent_t *a)
{
    uint64_t nofile;
    uint32_t cap = oc__guard_fit_nofile((uint32_t)a->cfg.max_conns, &nofile);
    oc_guard_params_t gp = {cap, (uint32_t)a->cfg.handshake_ms,
                            (uint32_t)a->cfg.accept_backoff_ms};

    if (cap < a->cfg.max_conns)
        oc_warn(OC_COMP_AGENT, "the descriptor limit (%llu) leaves room for "
                "%u control connections, fewer than OC_AGENT_MAX_CONNS=%llu:"
                " using %u (raise LimitNOFILE / ulimit -n)",
                (unsigned long long)nofile, cap,
                (unsigned long long)a->cfg.max_conns, cap);
    oc__guard_init(&a->guard, "control", &gp);
    oc__guard_log_as(&a->guard, OC_COMP_AGENT);
    a->lim_bad.what = "malformed or unexpected control messages";
}

int oc__agent_run(const oc_agent_config_t *cfg)
{
    agent_t *a = calloc(1, sizeof(*a));
    struct sigaction sa;
    oc_status_t st;
    char ksrc[OC_CFG_STRLEN + 64] = "";
    int rc = 1;

    if (a == NULL)
        return 1;
    a->cfg = *cfg;
    a->start_us = oc__now_us();
    pthread_mutex_init(&a->pub_mu, NULL);
    oc__log_set_rate((unsigned)cfg->log_rate);
    setup_guard(a);
    /* one order for every tool: ctl.h, oc__ctl_cluster_key_load() */
    if (oc__ctl_cluster_key_load(cfg->key_from_flag ? cfg->cluster_key : NULL,
                                &a->cluster_key, ksrc, sizeof(ksrc)) != OC_OK) {
        fprintf(stderr, "offcored: no cluster key from %s: create one with "
                        "'offcore keygen --out FILE' and pass "
                        "--cluster-key FILE (or set OC_CLUSTER_KEY)\n", ksrc);
        goto out;
    }
    oc_info(OC_COMP_AGENT, "cluster key from %s", ksrc);
    if (strcmp(cfg->metrics, "off") != 0 &&
        cfg->metrics[strspn(cfg->metrics, " \t")] == '\0') {
        fprintf(stderr, "offcored: --metrics (or OC_AGENT_METRICS) is empty: "
                        "give HOST:PORT, :PORT, PORT or off\n");
        goto out;
    }
    if ((st = setup_nodes(a)) != OC_OK)
        goto out;
    oc__tr_book_enable(); /* which transport each endpoint uses */
    a->nrouters = (uint32_t)cfg->threads;
    for (uint32_t t = 0; t < a->nrouters; t++) {
        oc_router_params_t p = {t, a->node, a->nnodes, cfg->bundle_size,
                                cfg->buffers, cfg->flush_timeout_us,
                                cfg->max_inflight, cfg->route == 1,
                                a->nrouters, cfg->coll_cma,
                                a->routers, cfg->coll_split_min};
        if ((st = oc__router_create(&p, &a->routers[t])) != OC_OK ||
            (st = oc__router_start(a->routers[t])) != OC_OK) {
            oc_error(OC_COMP_AGENT, "router %u: %s", t, oc_status_string(st));
            a->nrouters = t + (a->routers[t] != NULL);
            goto out;
        }
    }
    if (setup_listen(a) != OC_OK)
        goto out;
    if (oc__ag_metrics_start(a) != OC_OK)
        goto out;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    {
        /* what is bound, not what was asked: port 0 shows the kernel's */
        char where[8 * OC_CTL_ADDR_STRLEN + 8] = "", murl[160] = "";
        size_t k = 0;
        for (int i = 0; i < a->nlfd && k < sizeof(where); i++)
            k += (size_t)snprintf(where + k, sizeof(where) - k, "%s%s",
                                  i ? "," : "", a->lis[i].addr);
        if (a->metrics != NULL)
            snprintf(murl, sizeof(murl), ", metrics http://%s/metrics",
                     oc__metrics_server_addr(a->metrics));
        fprintf(stderr, "offcored: node %u of %u, %u routing thread%s, "
                "control %s%s, ready\n", a->node, a->nnodes, a->nrouters,
                a->nrouters > 1 ? "s" : "", where, murl);
    }
    run(a);
    fprintf(stderr, "offcored: shutting down\n");
    rc = 0;
out:
    oc__ag_metrics_stop(a);
    shutdown_all(a);
    for (int i = 0; i < a->nlfd; i++)
        oc__ctl_listener_close(&a->lis[i]);
    oc__ctl_key_clear(&a->cluster_key);
    for (uint32_t i = 0; a->node_addr && i < a->nnodes; i++)
        free(a->node_addr[i]);
    free(a->node_addr);
    free(a->peer);
    free(a->next_dial_us);
    for (uint32_t i = 0; a->peer_tr_addr && i < a->nnodes; i++)
        free(a->peer_tr_addr[i]);
    free(a->peer_tr_addr);
    free(a->peer_tr);
    free(a->rank_tr);
    free(a);
    return rc;
}
