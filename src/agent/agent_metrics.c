/*
 * agent_metrics.c — offcored's Prometheus metrics: the callback the /metrics
 * server (src/metrics/http.c) calls on its own thread, once per scrape.  It
 * reads the routers' counters (their own atomics), the copy of the job
 * table and the peers' transports that the control thread publishes under
 * pub_mu, and atomic counters.
 */
#include "agent_int.h"

#include "metrics/names.h"
#include "util/version.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void oc__ag_publish_jobs(agent_t *a)
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

void oc__ag_peer_tr_expect(agent_t *a, uint32_t node, const void *addr,
                           size_t len)
{
    free(a->peer_tr_addr[node]);
    a->peer_tr_addr[node] = NULL;
    if (addr != NULL && (a->peer_tr_addr[node] = malloc(len)) != NULL)
        memcpy(a->peer_tr_addr[node], addr, len);
    pthread_mutex_lock(&a->pub_mu);
    memset(&a->peer_tr[node], 0, sizeof(a->peer_tr[node]));
    pthread_mutex_unlock(&a->pub_mu);
}

/* Local ranks of ready jobs whose endpoint's transport is not known yet:
 * look them up, log and publish what is found. */
static void rank_tr_poll(agent_t *a)
{
    int wanted = 0;

    for (oc_aconn_t *c = a->conns; c != NULL; c = c->next) {
        struct oc_ag_rank_tr t = {0};
        oc_ajob_t *j;
        int found;
        if (c->kind != C_RANK || c->dead || c->tr_known)
            continue;
        j = oc__ajob_find(&a->jobs, c->job);
        if (j == NULL || !j->ready || j->failed)
            continue; /* READY gives the routers the rank: no endpoint yet */
        found = oc__tr_book_lookup(c->addr, &t.cls, t.tls, sizeof(t.tls));
        if (found == 0) {
            wanted = 1; /* the router has not made it yet */
            continue;
        }
        if (found < 0) { /* its router cannot reach it: fail, not hang */
            char why[192];
            snprintf(why, sizeof(why), "the agent cannot reach rank %u "
                     "(%s)", c->rank, t.tls);
            oc__tr_book_forget(c->addr);
            oc__ag_job_fail(a, j, why, 1);
            continue;
        }
        t.job = c->job;
        t.rank = c->rank;
        pthread_mutex_lock(&a->pub_mu);
        if (a->nrank_tr == a->cap_rank_tr) {
            uint32_t cap = a->cap_rank_tr ? 2 * a->cap_rank_tr : 16;
            struct oc_ag_rank_tr *g = realloc(a->rank_tr, cap * sizeof(*g));
            if (g == NULL) {
                pthread_mutex_unlock(&a->pub_mu);
                wanted = 1; /* try again next round */
                continue;
            }
            a->rank_tr = g;
            a->cap_rank_tr = cap;
        }
        a->rank_tr[a->nrank_tr++] = t;
        pthread_mutex_unlock(&a->pub_mu);
        c->tr_known = 1;
        oc_info(OC_COMP_AGENT, "job %u rank %u: via %s (%s)", t.job, t.rank,
                t.tls[0] ? t.tls : "?", oc__tr_class_main(t.cls));
    }
    a->rank_tr_wanted = wanted;
}

void oc__ag_rank_tr_forget(agent_t *a, const oc_aconn_t *c)
{
    if (!c->tr_known)
        return;
    pthread_mutex_lock(&a->pub_mu);
    for (uint32_t i = 0; i < a->nrank_tr; i++)
        if (a->rank_tr[i].job == c->job && a->rank_tr[i].rank == c->rank) {
            a->rank_tr[i] = a->rank_tr[--a->nrank_tr];
            break;
        }
    pthread_mutex_unlock(&a->pub_mu);
}

void oc__ag_peer_tr_poll(agent_t *a)
{
    if (a->rank_tr_wanted)
        rank_tr_poll(a);
    for (uint32_t n = 0; n < a->nnodes; n++) {
        struct oc_ag_peer_tr t = {0};
        if (a->peer_tr_addr[n] == NULL ||
            !oc__tr_book_lookup(a->peer_tr_addr[n], &t.cls, t.tls,
                               sizeof(t.tls)))
            continue; /* no such peer, or its router has not made it yet */
        free(a->peer_tr_addr[n]);
        a->peer_tr_addr[n] = NULL;
        t.known = 1;
        oc_info(OC_COMP_AGENT, "peer node %u: via %s (%s)", n,
                t.tls[0] ? t.tls : "?", oc__tr_class_main(t.cls));
        pthread_mutex_lock(&a->pub_mu);
        a->peer_tr[n] = t;
        pthread_mutex_unlock(&a->pub_mu);
    }
}

/* ---- metrics -------------------------------------------------------- */

#define LBL(n, v) ((oc_prom_label_t){n, v})

/* Family @p name's pair of samples {KEY="VAL",dir="in"|"out"}: the
 * uint64_t counters at byte offsets @p in and @p out of @p base. */
static void sample_inout(oc_prom_t *p, const char *name, const char *key,
                         const char *val, const void *base, size_t in,
                         size_t out)
{
    oc_prom_label_t l[2] = {LBL(key, val), LBL("dir", "in")};

    oc__prom_sample(p, name, l, 2, *(const uint64_t *)((const char *)base + in));
    l[1] = LBL("dir", "out");
    oc__prom_sample(p, name, l, 2,
                   *(const uint64_t *)((const char *)base + out));
}

/* Node @p n's counters, summed over the routing threads. */
static void peer_sum(const agent_t *a, uint32_t n, oc_router_peer_counters_t *sum)
{
    oc_router_peer_counters_t pc;
    memset(sum, 0, sizeof(*sum));
    for (uint32_t r = 0; r < a->nrouters; r++) {
        oc__router_peer_counters(a->routers[r], n, &pc);
        sum->bundles_in += pc.bundles_in;
        sum->bundles_out += pc.bundles_out;
        sum->bytes_in += pc.bytes_in;
        sum->bytes_out += pc.bytes_out;
        sum->msgs_in += pc.msgs_in;
        sum->msgs_out += pc.msgs_out;
        sum->blocked += pc.blocked;
    }
}

/* Admission (util/guard.h) of both servers: what hostile or careless
 * clients cost, and whether the cap or the deadline bites. */
static void guard_metrics(agent_t *a, oc_prom_t *p)
{
    static const char *const outcome[] = {"accepted", "evicted", "refused",
                                          "expired"};
    oc_guard_counters_t gc[2];
    const char *server[2] = {"control", "metrics"};
    oc_prom_label_t l[2];
    int ns = a->metrics != NULL ? 2 : 1;

    oc__guard_counters(&a->guard, &gc[0]);
    if (ns == 2)
        oc__metrics_server_counters(a->metrics, &gc[1]);
    oc__prom_family(p, OC_M_CONNECTIONS,
                   "Connections to the agent's servers, by outcome: "
                   "accepted; evicted (pending, closed to make room at the "
                   "cap); refused (cap reached); expired (handshake or "
                   "request deadline)", OC_PROM_COUNTER);
    for (int k = 0; k < ns; k++) {
        const uint64_t *v = &gc[k].accepted;
        l[0] = LBL("server", server[k]);
        for (int o = 0; o < 4; o++) {
            l[1] = LBL("outcome", outcome[o]);
            oc__prom_sample(p, OC_M_CONNECTIONS, l, 2, v[o]);
        }
    }
    oc__prom_family(p, OC_M_ACCEPT_BACKOFFS,
                   "Times accept failed for want of descriptors or memory "
                   "and the server paused its listener", OC_PROM_COUNTER);
    for (int k = 0; k < ns; k++) {
        l[0] = LBL("server", server[k]);
        oc__prom_sample(p, OC_M_ACCEPT_BACKOFFS, l, 1,
                       gc[k].backoffs);
    }
}

/* The agent itself: who it is, since when, the jobs it serves. */
static void agent_metrics(agent_t *a, oc_prom_t *p)
{
    char node[16], v[32];
    oc_prom_label_t l[2];

    snprintf(node, sizeof(node), "%u", a->node);
    oc__prom_family(p, OC_M_AGENT_INFO, "This agent", OC_PROM_GAUGE);
    l[0] = LBL("node", node);
    l[1] = LBL("version", oc__version());
    oc__prom_sample(p, OC_M_AGENT_INFO, l, 2, 1);
    oc__prom_family(p, OC_M_AGENT_UPTIME, "Seconds since start",
                   OC_PROM_GAUGE);
    oc__prom_sample_f64(p, OC_M_AGENT_UPTIME, NULL, 0,
                       (double)(oc__now_us() - a->start_us) / 1e6);
    oc__prom_family(p, OC_M_JOB_RANKS, "Ranks of the job on this node",
                   OC_PROM_GAUGE);
    pthread_mutex_lock(&a->pub_mu);
    for (uint32_t i = 0; i < a->npub; i++) {
        snprintf(v, sizeof(v), "%u", a->pub[i].job);
        l[0] = LBL("job", v);
        oc__prom_sample(p, OC_M_JOB_RANKS, l, 1, a->pub[i].nlocal);
    }
    pthread_mutex_unlock(&a->pub_mu);
}

/* Per job, summed over the routing threads. */
static void job_metrics(agent_t *a, oc_prom_t *p)
{
    oc_router_job_counters_t jc[64];
    struct { uint32_t job; oc_router_job_counters_t s; } jobs[64];
    uint32_t nj = 0;
    char v[32];
    oc_prom_label_t l[1];

    for (uint32_t r = 0; r < a->nrouters; r++) {
        uint32_t n = oc__router_job_counters(a->routers[r], jc, 64);
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
        {OC_M_JOB_MESSAGES, "Messages routed for the job",
         offsetof(oc_router_job_counters_t, msgs_in),
         offsetof(oc_router_job_counters_t, msgs_out)},
        {OC_M_JOB_BYTES, "Bundle bytes of the job",
         offsetof(oc_router_job_counters_t, bytes_in),
         offsetof(oc_router_job_counters_t, bytes_out)},
        {OC_M_JOB_BUNDLES, "Bundles of the job",
         offsetof(oc_router_job_counters_t, bundles_in),
         offsetof(oc_router_job_counters_t, bundles_out)},
    };
    for (size_t f = 0; f < 3; f++) {
        oc__prom_family(p, jf[f].name, jf[f].help, OC_PROM_COUNTER);
        for (uint32_t k = 0; k < nj; k++) {
            snprintf(v, sizeof(v), "%u", jobs[k].job);
            sample_inout(p, jf[f].name, "job", v, &jobs[k].s, jf[f].in,
                         jf[f].out);
        }
    }
    oc__prom_family(p, OC_M_JOB_REJECTS,
                   "Bundles of the job rejected", OC_PROM_COUNTER);
    for (uint32_t k = 0; k < nj; k++) {
        snprintf(v, sizeof(v), "%u", jobs[k].job);
        l[0] = LBL("job", v);
        oc__prom_sample(p, OC_M_JOB_REJECTS, l, 1, jobs[k].s.rejects);
    }
}

/* Per peer node, summed over the routing threads: what crossed the
 * network. */
static void peer_metrics(agent_t *a, oc_prom_t *p)
{
    static const struct { const char *name, *help; size_t in, out; } pf[] = {
        {OC_M_PEER_BUNDLES, "Bundles exchanged with the peer node",
         offsetof(oc_router_peer_counters_t, bundles_in),
         offsetof(oc_router_peer_counters_t, bundles_out)},
        {OC_M_PEER_BYTES, "Bundle bytes exchanged with the peer node",
         offsetof(oc_router_peer_counters_t, bytes_in),
         offsetof(oc_router_peer_counters_t, bytes_out)},
        {OC_M_PEER_MESSAGES, "Messages exchanged with the peer node",
         offsetof(oc_router_peer_counters_t, msgs_in),
         offsetof(oc_router_peer_counters_t, msgs_out)},
    };
    oc_router_peer_counters_t pc;
    char v[32];
    oc_prom_label_t l[1];

    for (size_t f = 0; f < 3; f++) {
        oc__prom_family(p, pf[f].name, pf[f].help, OC_PROM_COUNTER);
        for (uint32_t n = 0; n < a->nnodes; n++) {
            if (n == a->node)
                continue;
            peer_sum(a, n, &pc);
            snprintf(v, sizeof(v), "%u", n);
            sample_inout(p, pf[f].name, "peer", v, &pc, pf[f].in, pf[f].out);
        }
    }
    oc__prom_family(p, OC_M_PEER_BLOCKLIST,
                   "Next hops toward the peer node blocked now", OC_PROM_GAUGE);
    for (uint32_t n = 0; n < a->nnodes; n++) {
        if (n == a->node)
            continue;
        peer_sum(a, n, &pc);
        snprintf(v, sizeof(v), "%u", n);
        l[0] = LBL("peer", v);
        oc__prom_sample(p, OC_M_PEER_BLOCKLIST, l, 1, pc.blocked);
    }
}

/* The transports UCX picked, toward peer agents and local ranks (what the
 * control thread published under pub_mu). */
static void transport_metrics(agent_t *a, oc_prom_t *p)
{
    char v[32];

    oc__prom_family(p, OC_M_PEER_TRANSPORT,
                   "The transports UCX picked for active messages to the "
                   "peer node's agent (1 per connected peer; the labels "
                   "name them)", OC_PROM_GAUGE);
    pthread_mutex_lock(&a->pub_mu);
    for (uint32_t n = 0; n < a->nnodes; n++) {
        oc_prom_label_t tl[3];
        if (n == a->node || !a->peer_tr[n].known)
            continue;
        snprintf(v, sizeof(v), "%u", n);
        tl[0] = LBL("peer", v);
        tl[1] = LBL("transport", a->peer_tr[n].tls[0] ? a->peer_tr[n].tls
                                                      : "unknown");
        tl[2] = LBL("class", oc__tr_class_main(a->peer_tr[n].cls));
        oc__prom_sample(p, OC_M_PEER_TRANSPORT, tl, 3, 1);
    }
    pthread_mutex_unlock(&a->pub_mu);

    oc__prom_family(p, OC_M_PEER_AUTH_FAILURES,
                   "Handshakes with the peer node's agent refused either "
                   "way for a wrong proof: another cluster key",
                   OC_PROM_COUNTER);
    pthread_mutex_lock(&a->pub_mu);
    for (uint32_t n = 0; n < a->nnodes; n++) {
        oc_prom_label_t pl[1];
        if (n == a->node)
            continue;
        snprintf(v, sizeof(v), "%u", n);
        pl[0] = LBL("peer", v);
        oc__prom_sample(p, OC_M_PEER_AUTH_FAILURES, pl, 1,
                        a->peer_tr[n].auth_fail);
    }
    pthread_mutex_unlock(&a->pub_mu);

    oc__prom_family(p, OC_M_RANK_TRANSPORT,
                   "The transports UCX picked for active messages between "
                   "the agent and the local rank (the agent's endpoint to "
                   "the rank's worker; 1 per rank of a ready job; the labels "
                   "name them)", OC_PROM_GAUGE);
    pthread_mutex_lock(&a->pub_mu);
    for (uint32_t i = 0; i < a->nrank_tr; i++) {
        const struct oc_ag_rank_tr *rt = &a->rank_tr[i];
        oc_prom_label_t tl[4];
        char rk[16];
        snprintf(v, sizeof(v), "%u", rt->job);
        snprintf(rk, sizeof(rk), "%u", rt->rank);
        tl[0] = LBL("job", v);
        tl[1] = LBL("rank", rk);
        tl[2] = LBL("transport", rt->tls[0] ? rt->tls : "unknown");
        tl[3] = LBL("class", oc__tr_class_main(rt->cls));
        oc__prom_sample(p, OC_M_RANK_TRANSPORT, tl, 4, 1);
    }
    pthread_mutex_unlock(&a->pub_mu);
}

/* Per routing thread (@p rc, a snapshot of each): one row a family, its
 * samples' second label (none, dir or reason) and the counters they show. */
static void thread_metrics(agent_t *a, oc_prom_t *p,
                           const oc_router_counters_t *rc)
{
    char t[16];
    oc_prom_label_t l[2];

#define RC(f) offsetof(oc_router_counters_t, f)
    static const struct {
        const char *name, *help;
        oc_prom_type_t type;
        const char *label;
        struct { const char *value; size_t off; } v[4];
    } tf[] = {
        {OC_M_THREAD_MESSAGES, "Messages routed by the thread",
         OC_PROM_COUNTER, NULL, {{NULL, RC(msgs)}}},
        {OC_M_THREAD_BUNDLES, "Bundles received and sent by the thread",
         OC_PROM_COUNTER, "dir",
         {{"in", RC(bundles_in)}, {"out", RC(bundles_out)}}},
        {OC_M_THREAD_UNDELIVERABLE, "Messages for a local rank that had "
         "left its (failing) job, or for a next hop (rank or peer agent) "
         "that went away, dropped", OC_PROM_COUNTER, NULL,
         {{NULL, RC(undeliverable)}}},
        {OC_M_THREAD_COLL_CMA, "Allreduce contributions of local ranks "
         "by the way they came: moved by memory (process_vm_readv/writev), "
         "offered by memory and sent back to UCX (refused), or inline in "
         "the descriptor with the result in DONE (small allreduces, "
         "all-to-alls and broadcasts; docs/coll.md)",
         OC_PROM_COUNTER, "path",
         {{"memory", RC(coll_cma)}, {"ucx", RC(coll_cma_fallback)},
          {"inline", RC(coll_inline)}}},
        {OC_M_THREAD_COLL_STATES, "Agent collectives begun, by where their "
         "state came from: allocated, or an ended one of the same job kept "
         "by the thread (steady state: kept only)", OC_PROM_COUNTER, "from",
         {{"new", RC(coll_state_new)}, {"kept", RC(coll_state_kept)}}},
        {OC_M_THREAD_COLL_BUFS, "Data buffers of agent collectives "
         "(contributions, results, all-to-all blocks), by where they came "
         "from: allocated, or kept with an ended state (steady state: kept "
         "only)", OC_PROM_COUNTER, "from",
         {{"new", RC(coll_buf_new)}, {"kept", RC(coll_buf_kept)}}},
        {OC_M_THREAD_COLL_DONES, "Completions (DONE) of agent collectives "
         "sent to local ranks, by path: their shared-memory completion "
         "ring, or UCX (a rank on UCX, or its ring full)", OC_PROM_COUNTER,
         "path", {{"ring", RC(coll_dones_shm)}, {"ucx", RC(coll_dones_ucx)}}},
        {OC_M_THREAD_COLL_DESCS, "Descriptors of agent collectives from "
         "local ranks, by path: their shared-memory descriptor ring, UCX (a "
         "rank on UCX, or its ring full or too short for one), or an empty "
         "one by UCX that woke the thread for the ring (nudge)",
         OC_PROM_COUNTER, "path",
         {{"ring", RC(coll_descs_shm)}, {"ucx", RC(coll_descs_ucx)},
          {"nudge", RC(coll_nudges)}}},
        {OC_M_THREAD_FORWARDED, "Bundles sent on whole (all for one rank), "
         "not re-aggregated", OC_PROM_COUNTER, NULL,
         {{NULL, RC(bundles_forwarded)}}},
        {OC_M_THREAD_SHM_BUNDLES, "Bundles read from and written into "
         "local ranks' shared-memory rings", OC_PROM_COUNTER, "dir",
         {{"in", RC(shm_bundles_in)}, {"out", RC(shm_bundles_out)}}},
        {OC_M_THREAD_SHM_FULL, "Times a local rank's shared-memory ring "
         "was full and its deliveries held", OC_PROM_COUNTER, NULL,
         {{NULL, RC(shm_full)}}},
        {OC_M_THREAD_SHM_WAKES, "Wake-ups of a local rank asleep on its "
         "ring's doorbell", OC_PROM_COUNTER, NULL, {{NULL, RC(shm_wakes)}}},
        {OC_M_THREAD_SLEEPS, "Times the thread, idle, slept on its UCX "
         "worker's event fd (and the ranks' wake-up eventfd)", OC_PROM_COUNTER, NULL, {{NULL, RC(sleeps)}}},
        {OC_M_THREAD_FLUSHES, "Bundles flushed, by reason", OC_PROM_COUNTER,
         "reason", {{"full", RC(flush_full)}, {"timeout", RC(flush_timeout)},
                    {"idle", RC(flush_idle)}, {"explicit", RC(flush_explicit)}}},
        {OC_M_THREAD_BLOCKLIST, "Next hops held back by back-pressure",
         OC_PROM_GAUGE, NULL, {{NULL, RC(blocklist_depth)}}},
        {OC_M_THREAD_BACKLOG, "Bundles received and not yet routed",
         OC_PROM_GAUGE, NULL, {{NULL, RC(backlog)}}},
    };
#undef RC
    for (size_t f = 0; f < sizeof(tf) / sizeof(tf[0]); f++) {
        oc__prom_family(p, tf[f].name, tf[f].help, tf[f].type);
        for (uint32_t r = 0; r < a->nrouters; r++) {
            snprintf(t, sizeof(t), "%u", r);
            l[0] = LBL("thread", t);
            for (int k = 0; k < 4 && (k == 0 || tf[f].v[k].value); k++) {
                l[1] = LBL(tf[f].label, tf[f].v[k].value);
                oc__prom_sample(p, tf[f].name, l, tf[f].label ? 2 : 1,
                               *(const uint64_t *)((const char *)&rc[r] +
                                                   tf[f].v[k].off));
            }
        }
    }
}

/* Rejects by reason, summed over the routing threads (@p rc), and the
 * control thread's. */
static void reject_metrics(agent_t *a, oc_prom_t *p,
                           const oc_router_counters_t *rc)
{
    oc_prom_label_t l[1];

    oc__prom_family(p, OC_M_REJECTS,
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
        oc__prom_sample(p, OC_M_REJECTS, l, 1, sum);
    }
    {
        uint64_t sum = 0;
        for (uint32_t r = 0; r < a->nrouters; r++)
            sum += rc[r].reject_unknown_sender;
        l[0] = LBL("reason", "unknown_sender");
        oc__prom_sample(p, OC_M_REJECTS, l, 1, sum);
        l[0] = LBL("reason", "control");
        oc__prom_sample(p, OC_M_REJECTS, l, 1,
                       atomic_load(&a->rejects_ctl));
    }
}

static oc_status_t fill_metrics(void *arg, oc_prom_t *p)
{
    agent_t *a = arg;
    oc_router_counters_t rc[OC_AGENT_MAX_THREADS];

    agent_metrics(a, p);
    job_metrics(a, p);
    peer_metrics(a, p);
    transport_metrics(a, p);
    for (uint32_t r = 0; r < a->nrouters; r++)
        oc__router_counters(a->routers[r], &rc[r]);
    thread_metrics(a, p, rc);
    reject_metrics(a, p, rc);
    guard_metrics(a, p);
    return oc__prom_status(p);
}

oc_status_t oc__ag_metrics_start(agent_t *a)
{
    if (!strcmp(a->cfg.metrics, "off"))
        return OC_OK;
    oc_guard_params_t gp = {(uint32_t)a->cfg.metrics_max_conns,
                            (uint32_t)a->cfg.handshake_ms,
                            (uint32_t)a->cfg.accept_backoff_ms};
    return oc__metrics_server_start_limited(a->cfg.metrics, &gp, fill_metrics, a,
                                   &a->metrics);
}

void oc__ag_metrics_stop(agent_t *a)
{
    oc__metrics_server_stop(a->metrics);
    a->metrics = NULL;
}
