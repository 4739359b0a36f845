/*
 * tenant.c — offcore-dp's tenant state at run time (tenant.h): start and
 * stop, the per-worker state (a connection-tracking table, policers,
 * counters), the worker's work between bursts (handed frames, the sweep of
 * expired flows, control requests), the control thread's side of those
 * requests and the Prometheus counters.  The stages are tenant_stage.c,
 * the control commands tenant_ctl.c.
 *
 * Threading: a worker's tenant state is written by that worker only; the
 * control thread reads counters with relaxed loads and asks the worker for
 * what touches its table (flush, list) through a request word it waits on.
 * Security groups are per-tenant classifiers (src/pkt/acl) whose writer is
 * the control thread and whose readers are the workers (RCU, as the
 * pipeline's, src/dp/pipeline.c).
 */
#include "tenant_int.h"
#include "metrics/metrics.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/counter.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The sweep of expired flows (between bursts) visits every entry of a
 * table once per SWEEP_PERIOD_US, at least SWEEP_MIN entries at a time
 * (each entry is a cache line the packets have likely not touched) and at
 * most SWEEP_MAX (a bounded pause between two bursts).  Lookups reclaim
 * the expired flows they meet and a full table the ones its eviction scan
 * meets: the sweep only keeps the flow count close to the live flows. */
#define SWEEP_PERIOD_US 10000000ull
#define SWEEP_MIN 64
#define SWEEP_MAX 1024

static const char *const treason[OC_DP_T_NREASONS] = {
    "spoofed", "denied", "no_connection", "invalid", "policed",
    "unknown_vni", "table_full", "malformed_vxlan", "not_vxlan", "not_ipv4",
    "not_ours", "handoff_full"};

const char *oc__dp_treason_name(int r)
{
    return r >= 0 && r < OC_DP_T_NREASONS ? treason[r] : "?";
}

/* ------------------------------------------------------- start, stop */

oc_status_t oc__dp_tenants_start(oc_dp_t *dp, const oc_dp_conf_t *c)
{
    const oc_dp_tenants_conf_t *tc = &c->tenants;
    struct oc_dp_tenants *ten;
    uint64_t now;
    oc_status_t st;

    for (uint32_t a = 0; a < OC_DP_MAX_ATTACH; a++)
        dp->att_tenant[a] = -1;
    if (tc->ntenants == 0 && !tc->enabled)
        return OC_OK;
    ten = calloc(1, sizeof(*ten));
    if (ten == NULL)
        return OC_ERR_NO_MEMORY;
    dp->ten = ten;
    ten->n = tc->ntenants;
    memcpy(ten->t, tc->t, sizeof(ten->t));
    memset(ten->live, 1, ten->n);
    for (uint32_t t = 0; t < ten->n; t++) {
        for (uint32_t a = 0; a < c->nattach; a++)
            for (uint32_t i = 0; i < tc->t[t].natt; i++)
                if (!strcmp(c->attach[a].name, tc->t[t].attach[i])) {
                    dp->att_tenant[a] = (int)t;
                    ten->att_idx[a] = (uint8_t)i;
                }
        for (int d = 0; d < 2; d++) {
            st = oc__acl_create(OC_DP_MAX_TRULES, &ten->acl[t][d]);
            if (st != OC_OK)
                return st;
        }
    }
    for (uint32_t i = 0; i < tc->nrules; i++) {
        oc_acl_rule_t r = tc->r[i].r;
        oc_dp_rules6_t **g6 = &ten->g6[tc->r[i].tenant][tc->r[i].ingress];
        r.userdata = tc->r[i].action;
        st = tc->r[i].six ? OC_OK
                          : oc__acl_add(ten->acl[tc->r[i].tenant]
                                                [tc->r[i].ingress], &r);
        if (st == OC_OK && oc__dp_trule_v6(&tc->r[i])) {
            oc_dp_rules6_t *l = oc__dp_rules6_make(*g6, &tc->r[i], -1);
            if (l == NULL)
                return OC_ERR_NO_MEMORY;
            free(*g6); /* no worker runs yet */
            *g6 = l;
        }
        if (st != OC_OK) {
            oc_error(OC_COMP_DP, "tenant %s: rule id %u refused by the "
                     "classifier", tc->t[tc->r[i].tenant].name, r.id);
            return st;
        }
    }
    now = oc__now_ns();
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        oc_ct_conf_t cc = {.capacity = tc->ct_flows, .to = tc->ct_to};
        oc_ct_conf_t cc6 = {.capacity = oc__dp_ct_flows6(tc), .to = tc->ct_to,
                            .ipv6 = true};
        struct oc_dp_tw *tw = calloc(1, sizeof(*tw));
        if (tw == NULL)
            return OC_ERR_NO_MEMORY;
        dp->w[q].tw = tw;
        tw->cap = tc->ct_flows;
        tw->cap6 = cc6.capacity;
        tw->sw[0].us = tw->sw[1].us = now / 1000;
        st = oc__ct_create(&cc, &tw->ct);
        if (st != OC_OK) {
            oc_error(OC_COMP_DP, "conntrack: no memory for %u flows (%zu "
                     "bytes)", tc->ct_flows, oc__ct_mem_for(tc->ct_flows));
            return st;
        }
        st = oc__ct_create(&cc6, &tw->ct6);
        if (st != OC_OK) {
            oc_error(OC_COMP_DP, "conntrack: no memory for %u IPv6 flows "
                     "(%zu bytes)", cc6.capacity, oc__ct_mem_for6(cc6.capacity));
            return st;
        }
        for (uint32_t a = 0; a < c->nattach; a++)
            for (int d = 0; d < 2 && dp->att_tenant[a] >= 0; d++)
                oc__policer_init(&tw->pol[a][d],
                                tc->t[dp->att_tenant[a]].rate,
                                tc->t[dp->att_tenant[a]].burst, now);
    }
    st = oc__dp_hand_create(dp);
    if (st != OC_OK)
        return st;
    oc_info(OC_COMP_DP, "%u tenants; conntrack %u flows per worker, %zu "
            "bytes (%.1f per flow); IPv6 %u flows, %zu bytes (%.1f per flow)",
            ten->n, tc->ct_flows, oc__ct_mem_for(tc->ct_flows),
            (double)oc__ct_mem_for(tc->ct_flows) / tc->ct_flows,
            oc__dp_ct_flows6(tc), oc__ct_mem_for6(oc__dp_ct_flows6(tc)),
            (double)oc__ct_mem_for6(oc__dp_ct_flows6(tc)) /
                oc__dp_ct_flows6(tc));
    return OC_OK;
}

void oc__dp_tenants_stop(oc_dp_t *dp)
{
    oc__dp_hand_free(dp);
    if (dp->w != NULL)
        for (uint32_t q = 0; q < dp->nthreads; q++)
            if (dp->w[q].tw != NULL) {
                oc__ct_destroy(dp->w[q].tw->ct);
                oc__ct_destroy(dp->w[q].tw->ct6);
                free(dp->w[q].tw);
                dp->w[q].tw = NULL;
            }
    if (dp->ten != NULL)
        for (uint32_t t = 0; t < dp->ten->n; t++)
            for (int d = 0; d < 2; d++) {
                oc__acl_destroy(dp->ten->acl[t][d]);
                free(dp->ten->g6[t][d]);
            }
    free(dp->ten);
    dp->ten = NULL;
}

/* --------------------------------------------- between bursts, requests */

static int count_one(void *arg, const oc_ct_flow_t *f)
{
    (void)arg;
    (void)f;
    return 0;
}

static int list_one(void *arg, const oc_ct_flow_t *f)
{
    struct oc_dp_tw *x = arg;
    x->list[x->req_n++] = *f;
    return x->req_n == OC_DP_CT_LIST_MAX;
}

/* expired flows: SWEEP_PERIOD_US's share of table @p ct (@p cap flows)
 * since the last call (owed: entries x microseconds, at most one whole
 * pass) */
static void sweep(oc_ct_t *ct, uint32_t cap, tsweep_t *sw, uint64_t now_us)
{
    uint64_t due, full = (uint64_t)cap * SWEEP_PERIOD_US;

    if (now_us > sw->us) {
        uint64_t dt = now_us - sw->us;
        sw->owed += (dt < SWEEP_PERIOD_US ? dt : SWEEP_PERIOD_US) * cap;
        if (sw->owed > full)
            sw->owed = full;
        sw->us = now_us;
    }
    due = sw->owed / SWEEP_PERIOD_US;
    if (due < SWEEP_MIN && due < cap)
        return;
    if (due > SWEEP_MAX)
        due = SWEEP_MAX;
    (void)oc__ct_expire(ct, now_us / 1000, (uint32_t)due);
    sw->owed -= due * SWEEP_PERIOD_US;
}

uint32_t oc__dp_tenant_idle(oc_dp_worker_t *w)
{
    struct oc_dp_tw *tw = w->tw;
    uint32_t done;
    int req;

    if (tw == NULL)
        return 0;
    done = oc__dp_hand_drain(w);
    if ((w->seq & 63) == 0) { /* the time is its budget: no need to read
                               * the clock on every loop */
        uint64_t now = oc__now_us();
        sweep(tw->ct, tw->cap, &tw->sw[0], now);
        sweep(tw->ct6, tw->cap6, &tw->sw[1], now);
    }
    req = __atomic_load_n(&tw->req, __ATOMIC_SEQ_CST);
    /* claimed, or withdrawn by a control thread that gave up waiting: then
     * its list buffer may be gone, and the request is not run */
    if (req > 0 && !__atomic_compare_exchange_n(&tw->req, &req, -req, false,
                                                __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST))
        req = 0;
    if (req < 0)
        req = 0; /* not ours to run (cannot happen: one worker per tw) */
    if (req == 1) {
        tw->req_n = oc__ct_flush(tw->ct, tw->req_zone) +
                    oc__ct_flush(tw->ct6, tw->req_zone);
    } else if (req == 3) {
        uint64_t now = oc__now_ns() / 1000000;
        tw->req_n = oc__ct_walk(tw->ct, tw->req_zone, now, count_one, NULL) +
                    oc__ct_walk(tw->ct6, tw->req_zone, now, count_one, NULL);
    } else if (req == 2) {
        uint64_t now = oc__now_ns() / 1000000;
        tw->req_n = 0;
        oc__ct_walk(tw->ct, tw->req_zone, now, list_one, tw);
        if (tw->req_n < OC_DP_CT_LIST_MAX) /* list_one stops there */
            oc__ct_walk(tw->ct6, tw->req_zone, now, list_one, tw);
    }
    if (req != 0)
        __atomic_store_n(&tw->req, 0, __ATOMIC_SEQ_CST);
    return done;
}

/* ----------------------------------------------------------- metrics */

#define TSUM(expr)                                                             \
    ({                                                                         \
        uint64_t s_ = 0;                                                       \
        for (uint32_t q_ = 0; q_ < dp->nthreads; q_++) {                       \
            const struct oc_dp_tw *tw = dp->w[q_].tw;                          \
            s_ += OC__CTR_GET(expr);                                             \
        }                                                                      \
        s_;                                                                    \
    })

/* the conntrack families of the IPv4 tables (offcore_dp_conntrack_*) or
 * the IPv6 ones (offcore_dp_conntrack6_*), summed over the workers */
static void ct_metrics(oc_dp_t *dp, oc_prom_t *p, bool v6)
{
    const char *pre = v6 ? "offcore_dp_conntrack6" : "offcore_dp_conntrack";
    char n[4][64];
    oc_ct_stats_t st, sum;

    snprintf(n[0], sizeof(n[0]), "%s_flows", pre);
    snprintf(n[1], sizeof(n[1]), "%s_capacity", pre);
    snprintf(n[2], sizeof(n[2]), "%s_memory_bytes", pre);
    snprintf(n[3], sizeof(n[3]), "%s_events_total", pre);
    memset(&sum, 0, sizeof(sum));
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        oc__ct_stats(v6 ? dp->w[q].tw->ct6 : dp->w[q].tw->ct, &st);
        for (size_t i = 0; i < sizeof(st) / sizeof(uint64_t); i++)
            ((uint64_t *)&sum)[i] += ((uint64_t *)&st)[i];
    }
    oc__prom_family(p, n[0], v6 ? "tracked IPv6 flows now"
                                : "tracked flows now (IPv4)", OC_PROM_GAUGE);
    oc__prom_sample(p, n[0], NULL, 0, sum.flows);
    oc__prom_family(p, n[1], "flows the tables hold (fixed at start)",
                   OC_PROM_GAUGE);
    oc__prom_sample(p, n[1], NULL, 0, sum.capacity);
    oc__prom_family(p, n[2], "bytes of the tables (mapped at start)",
                   OC_PROM_GAUGE);
    oc__prom_sample(p, n[2], NULL, 0,
                   (uint64_t)oc__ct_mem_bytes(v6 ? dp->w[0].tw->ct6
                                                : dp->w[0].tw->ct) *
                       dp->nthreads);
    oc__prom_family(p, n[3],
                   "flow table events: created, evicted (table full, an "
                   "unestablished flow made room), expired, full (refused), "
                   "closed, out_of_window, invalid, no_connection",
                   OC_PROM_COUNTER);
    {
        const struct { const char *n; uint64_t v; } ev[] = {
            {"created", sum.created}, {"evicted", sum.evicted},
            {"expired", sum.expired}, {"full", sum.full},
            {"closed", sum.closed}, {"out_of_window", sum.out_of_window},
            {"invalid", sum.invalid}, {"no_connection", sum.no_conn}};
        for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
            oc__prom_sample(p, n[3], OC_PROM_LABELS({"event", ev[i].n}),
                           ev[i].v);
    }
}

oc_status_t oc__dp_tenant_metrics(oc_dp_t *dp, void *prom)
{
    oc_prom_t *p = prom;
    struct oc_dp_tenants *ten = dp->ten;

    if (ten == NULL)
        return OC_OK;
    pthread_mutex_lock(&dp->lock); /* tenant add/del change the slots */
    oc__prom_family(p, "offcore_dp_tenant_dropped_packets_total",
                   "frames of a tenant dropped, by reason", OC_PROM_COUNTER);
    for (uint32_t t = 0; t < ten->n; t++)
        for (int r = 0; r < OC_DP_T_NREASONS && ten->live[t]; r++)
            oc__prom_sample(p, "offcore_dp_tenant_dropped_packets_total",
                           OC_PROM_LABELS({"tenant", ten->t[t].name},
                                          {"reason", treason[r]}),
                           TSUM(tw->c[t].drop[r]));
    oc__prom_family(p, "offcore_dp_tenant_vxlan_malformed_total",
                   "VXLAN frames from the wire refused, by reason",
                   OC_PROM_COUNTER);
    for (uint32_t t = 0; t < ten->n; t++)
        for (int r = 1; r < OC_VXLAN_NREASONS && ten->live[t]; r++)
            oc__prom_sample(p, "offcore_dp_tenant_vxlan_malformed_total",
                           OC_PROM_LABELS({"tenant", ten->t[t].name},
                                          {"reason", oc__vxlan_reason_name(r)}),
                           TSUM(tw->c[t].vxlan[r]));
    oc__prom_family(p, "offcore_dp_tenant_packets_total",
                   "frames of a tenant forwarded: egress encapsulated toward "
                   "the wire, ingress delivered to the host", OC_PROM_COUNTER);
    for (uint32_t t = 0; t < ten->n; t++)
        for (int d = 0; d < 2 && ten->live[t]; d++)
            oc__prom_sample(p, "offcore_dp_tenant_packets_total",
                           OC_PROM_LABELS({"tenant", ten->t[t].name},
                                          {"direction", d ? "ingress" : "egress"}),
                           TSUM(tw->c[t].pkts[d]));
    oc__prom_family(p, "offcore_dp_tenant_ipv6_packets_total",
                   "of offcore_dp_tenant_packets_total, the IPv6 frames",
                   OC_PROM_COUNTER);
    for (uint32_t t = 0; t < ten->n; t++)
        for (int d = 0; d < 2 && ten->live[t]; d++)
            oc__prom_sample(p, "offcore_dp_tenant_ipv6_packets_total",
                           OC_PROM_LABELS({"tenant", ten->t[t].name},
                                          {"direction", d ? "ingress" : "egress"}),
                           TSUM(tw->c[t].pkts6[d]));
    oc__prom_family(p, "offcore_dp_tenant_handoff_packets_total",
                   "frames handed to the worker that owns their flow",
                   OC_PROM_COUNTER);
    for (uint32_t t = 0; t < ten->n; t++)
        if (ten->live[t])
            oc__prom_sample(p, "offcore_dp_tenant_handoff_packets_total",
                           OC_PROM_LABELS({"tenant", ten->t[t].name}),
                           TSUM(tw->c[t].handoff));
    oc__prom_family(p, "offcore_dp_tenant_arp_replies_total",
                   "ARP requests for the tenant's tunnel address (from the "
                   "fabric) answered by the DPU", OC_PROM_COUNTER);
    for (uint32_t t = 0; t < ten->n; t++)
        if (ten->live[t])
            oc__prom_sample(p, "offcore_dp_tenant_arp_replies_total",
                           OC_PROM_LABELS({"tenant", ten->t[t].name}),
                           TSUM(tw->c[t].arp_replies));
    pthread_mutex_unlock(&dp->lock);
    ct_metrics(dp, p, false);
    ct_metrics(dp, p, true);
    return oc__prom_status(p);
}

/* ----------------------------------------------------------- control */

/* ask the worker of @p tw to run request @p req on zone @p zone; wait
 * (a worker asleep in poll() answers within its 1 s timeout).  After 3 s
 * on the clock (not 3000 sleeps: on a loaded host each takes far longer
 * than 1 ms) an unclaimed request is withdrawn (-1: the caller's list
 * buffer is then never written); one the worker has claimed is waited for
 * to its end, which is short and bounded (a walk of the worker's tables)
 * and writes into that buffer. */
int oc__dp_tenant_ask(oc_dp_t *dp, struct oc_dp_tw *tw, int req, int zone)
{
    int64_t end = oc__now_ms() + 3000;
    int expect = req;

    tw->req_zone = zone;
    __atomic_store_n(&tw->req, req, __ATOMIC_SEQ_CST);
    while (oc__now_ms() < end) {
        if (__atomic_load_n(&tw->req, __ATOMIC_SEQ_CST) == 0)
            return 0;
        usleep(1000);
    }
    (void)dp;
    if (__atomic_compare_exchange_n(&tw->req, &expect, 0, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return -1; /* the worker is stuck: withdrawn, report */
    while (__atomic_load_n(&tw->req, __ATOMIC_SEQ_CST) != 0)
        usleep(1000);
    return 0;
}

int oc__dp_tenant_ask_all(oc_dp_t *dp, int req, int zone)
{
    int rc = 0;
    for (uint32_t q = 0; q < dp->nthreads; q++)
        rc |= oc__dp_tenant_ask(dp, dp->w[q].tw, req, zone);
    return rc;
}
