/*
 * tenant.c — offcore-dp's tenant stages at run time (tenant.h): the
 * per-worker state (a connection-tracking table, policers, counters), the
 * host->wire and wire->host stages, their Prometheus counters and the
 * `conntrack` / `tenant` control commands.
 *
 * Threading: a worker's tenant state is written by that worker only; the
 * control thread reads counters with relaxed loads and asks the worker for
 * what touches its table (flush, list) through a request word it waits on.
 * Security groups are per-tenant classifiers (src/pkt/acl) whose writer is
 * the control thread and whose readers are the workers (RCU, as dp.c's).
 */
#include "tenant_int.h"
#include "metrics/metrics.h"
#include "util/clock.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIST_MAX 4096   /* flows `conntrack list` shows */
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

/* ------------------------------------------------------------ stages */

/* The stages themselves are tenant_stage.c. */

const oc_dp_tenant_conf_t *oc__dp_tenant_of(const oc_dp_t *dp, uint32_t a)
{
    int t = __atomic_load_n(&dp->att_tenant[a], __ATOMIC_ACQUIRE);
    return t < 0 ? NULL : &dp->ten->t[t];
}

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
    return x->req_n == LIST_MAX;
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
        if (tw->req_n < LIST_MAX) /* list_one stops at LIST_MAX */
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
            s_ += __atomic_load_n(&(expr), __ATOMIC_RELAXED);                  \
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

/* ask every worker to run request @p req on zone @p zone; wait (workers
 * asleep in poll() answer within its 1 s timeout).  After 3 s on the clock
 * (not 3000 sleeps: on a loaded host each takes far longer than 1 ms) an
 * unclaimed request is withdrawn (-1: the caller's list buffer is then
 * never written); one the worker has claimed is waited for to its end,
 * which is short and bounded (a walk of the worker's tables) and writes
 * into that buffer. */
static int ask(oc_dp_t *dp, struct oc_dp_tw *tw, int req, int zone)
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
        rc |= ask(dp, dp->w[q].tw, req, zone);
    return rc;
}

static int zone_of(oc_dp_t *dp, const char *name)
{
    if (name == NULL || *name == '\0')
        return -1;
    for (uint32_t t = 0; t < dp->ten->n; t++)
        if (dp->ten->live[t] && !strcmp(dp->ten->t[t].name, name))
            return (int)t;
    return -2;
}

static void ip_str(uint32_t ip, char *b, size_t cap)
{
    snprintf(b, cap, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255,
             ip & 255);
}

/* whether classifier @p acl holds rule id @p id (control thread) */
static bool acl_has(const oc_acl_t *acl, uint32_t id)
{
    oc_acl_rule_t *r = malloc(OC_DP_MAX_TRULES * sizeof(*r));
    size_t n = r != NULL ? oc__acl_rules(acl, r, OC_DP_MAX_TRULES) : 0;
    bool has = false;

    for (size_t i = 0; i < n && !has; i++)
        has = r[i].id == id;
    free(r);
    return has;
}

/* publish @p l as tenant @p t's IPv6 group of direction @p d; the old one
 * is freed once no worker can be reading it */
static void g6_publish(oc_dp_t *dp, int t, int d, oc_dp_rules6_t *l)
{
    oc_dp_rules6_t *old = dp->ten->g6[t][d];

    __atomic_store_n(&dp->ten->g6[t][d], l, __ATOMIC_RELEASE);
    if (oc__dp_tenant_grace(dp) != 0) {
        oc_error(OC_COMP_DP, "a worker is stuck: the replaced IPv6 group "
                 "is not freed");
        return;
    }
    free(old);
}

/* "add TENANT ingress|egress RULE" / "del TENANT ingress|egress ID": the
 * tenant's groups change live (the control thread is their writer): the
 * classifier for a rule with IPv4 prefixes, the IPv6 list
 * (tenant_rule6.c) for one with IPv6 prefixes, both for one with none;
 * other tenants' groups and every tracked flow are untouched */
static int rule_ctl(oc_dp_t *dp, const char *args, FILE *out)
{
    char verb[8], name[40], dir[10];
    int used = 0, t, ingress;
    oc_acl_t *acl;
    oc_dp_rules6_t *l;

    if (sscanf(args, "%7s %39s %9s %n", verb, name, dir, &used) != 3 ||
        used == 0 || (strcmp(verb, "add") && strcmp(verb, "del")) ||
        (strcmp(dir, "ingress") && strcmp(dir, "egress"))) {
        fprintf(out, "error: tenant rule add TENANT ingress|egress RULE, "
                     "tenant rule del TENANT ingress|egress ID\n");
        return 1;
    }
    t = zone_of(dp, name);
    if (t < 0) {
        fprintf(out, "error: no tenant '%s'\n", name);
        return 1;
    }
    ingress = dir[0] == 'i';
    acl = dp->ten->acl[t][ingress];
    if (verb[0] == 'a') {
        oc_dp_trule_t r;
        oc_dp_rule_t r4;
        char why[200];
        size_t k;
        if (oc__dp_trule_parse(args + used, &r, why, sizeof(why)) != 0) {
            fprintf(out, "error: %s\n", why);
            return 1;
        }
        r.r.userdata = r.action;
        if (oc__dp_rules6_has(dp->ten->g6[t][ingress], r.r.id) ||
            (r.six && acl_has(acl, r.r.id)) ||
            (oc__dp_trule_v6(&r) && dp->ten->g6[t][ingress] != NULL &&
             dp->ten->g6[t][ingress]->n >= OC_DP_MAX_TRULES)) {
            fprintf(out, "error: tenant %s %s: rule id %u exists or the group "
                         "is full (%u rules)\n", name, dir, r.r.id,
                    OC_DP_MAX_TRULES);
            return 1;
        }
        if (!r.six && oc__acl_add(acl, &r.r) != OC_OK) {
            fprintf(out, "error: tenant %s %s: rule id %u exists or the group "
                         "is full (%u rules)\n", name, dir, r.r.id,
                    OC_DP_MAX_TRULES);
            return 1;
        }
        if (oc__dp_trule_v6(&r)) {
            l = oc__dp_rules6_make(dp->ten->g6[t][ingress], &r, -1);
            if (l == NULL) {
                if (!r.six)
                    (void)oc__acl_del(acl, r.r.id);
                fprintf(out, "error: out of memory\n");
                return 1;
            }
            g6_publish(dp, t, ingress, l);
        }
        r4.r = r.r;
        r4.action = r.action;
        oc__dp_rule_format(&r4, why, sizeof(why));
        k = strlen(why);
        if (r.six) {
            char a[48], b[48];
            inet_ntop(AF_INET6, r.src6, a, sizeof(a));
            inet_ntop(AF_INET6, r.dst6, b, sizeof(b));
            snprintf(why + k, sizeof(why) - k, " (IPv6 src=%s/%u dst=%s/%u)",
                     a, r.src6_len, b, r.dst6_len);
        }
        oc_info(OC_COMP_DP, "tenant %s %s rule added: %s", name, dir, why);
        fprintf(out, "ok\nadded %s %s %s\n", name, dir, why);
    } else {
        char *end;
        unsigned long id = strtoul(args + used, &end, 10);
        bool in6;
        if (args[used] < '0' || args[used] > '9' || *end != '\0' ||
            id > UINT32_MAX) {
            fprintf(out, "error: tenant rule del takes a rule id\n");
            return 1;
        }
        in6 = oc__dp_rules6_has(dp->ten->g6[t][ingress], (uint32_t)id);
        if (oc__acl_del(acl, (uint32_t)id) != OC_OK && !in6) {
            fprintf(out, "error: tenant %s %s has no rule id %lu\n", name,
                    dir, id);
            return 1;
        }
        if (in6) {
            l = oc__dp_rules6_make(dp->ten->g6[t][ingress], NULL,
                                   (int64_t)id);
            if (l == NULL) {
                fprintf(out, "error: out of memory (IPv6 rule %lu kept)\n",
                        id);
                return 1;
            }
            g6_publish(dp, t, ingress, l);
        }
        oc_info(OC_COMP_DP, "tenant %s %s rule %lu deleted", name, dir, id);
        fprintf(out, "ok\ndeleted %s %s id=%lu\n", name, dir, id);
    }
    return 1;
}

int oc__dp_tenant_ctl(oc_dp_t *dp, const char *line, FILE *out)
{
    const char *arg;
    int zone;

    if (strncmp(line, "conntrack", 9) != 0 && strncmp(line, "tenant", 6) != 0)
        return 0;
    if (dp->ten == NULL) {
        fprintf(out, "error: no tenant state: start offcore-dp with a tenant "
                     "or a conntrack line in its config file\n");
        return 1;
    }
    if (!strcmp(line, "tenant list")) {
        fprintf(out, "ok\n");
        for (uint32_t t = 0; t < dp->ten->n; t++) {
            const oc_dp_tenant_conf_t *c = &dp->ten->t[t];
            char ip[16], rip[16];
            if (!dp->ten->live[t])
                continue;
            ip_str(c->tun.remote_ip, rip, sizeof(rip));
            fprintf(out, "%s vni=%u attach=", c->name, c->vni);
            for (uint32_t i = 0; i < c->natt; i++)
                fprintf(out, "%s%s", i ? "," : "", c->attach[i]);
            fprintf(out, " ip=");
            for (uint32_t i = 0; i < c->natt; i++) {
                ip_str(c->ip[i], ip, sizeof(ip));
                fprintf(out, "%s%s", i ? "," : "", ip);
            }
            for (uint32_t i = 0; i < c->natt; i++) {
                fprintf(out, i ? "," : " ip6=");
                for (uint32_t x = 0; x < c->ip6[i].n; x++) {
                    char b6[48];
                    inet_ntop(AF_INET6, c->ip6[i].a[x], b6, sizeof(b6));
                    fprintf(out, "%s%s", x ? "+" : "", b6);
                }
                if (c->ip6[i].n == 0)
                    fprintf(out, "-");
            }
            fprintf(out, " remote=%s rate=%llu\n", rip,
                    (unsigned long long)(c->rate * 8 / 1000000));
        }
        return 1;
    }
    if (!strncmp(line, "tenant rule ", 12))
        return rule_ctl(dp, line + 12, out);
    if (!strncmp(line, "tenant add ", 11) || !strncmp(line, "tenant del ", 11))
        return oc__dp_tenant_live_ctl(dp, line, out);
    if (!strncmp(line, "conntrack count", 15) ||
        !strncmp(line, "conntrack flush", 15) ||
        !strncmp(line, "conntrack list", 14)) {
        int cmd = line[10] == 'c' ? 0 : line[10] == 'f' ? 1 : 2;
        uint64_t total = 0;
        arg = line + (cmd == 2 ? 14 : 15);
        while (*arg == ' ')
            arg++;
        zone = zone_of(dp, arg);
        if (zone == -2) {
            fprintf(out, "error: no tenant '%.64s'\n", arg);
            return 1;
        }
        if (cmd == 0 && zone == -1) {
            for (uint32_t q = 0; q < dp->nthreads; q++)
                total += oc__ct_count(dp->w[q].tw->ct) +
                         oc__ct_count(dp->w[q].tw->ct6);
            fprintf(out, "ok\n%llu\n", (unsigned long long)total);
            return 1;
        }
        {
            oc_ct_flow_t *list = cmd == 2 ? malloc(LIST_MAX * sizeof(*list))
                                          : NULL;
            if (cmd == 2 && list == NULL) {
                fprintf(out, "error: out of memory\n");
                return 1;
            }
            fprintf(out, "ok\n");
            if (cmd == 2)
                fprintf(out, "# at most %u flows per worker are shown\n",
                        LIST_MAX);
            for (uint32_t q = 0; q < dp->nthreads; q++) {
                struct oc_dp_tw *tw = dp->w[q].tw;
                tw->list = list;
                if (ask(dp, tw, cmd == 1 ? 1 : cmd == 2 ? 2 : 3, zone) != 0) {
                    fprintf(out, "worker %u did not answer\n", q);
                    continue;
                }
                total += tw->req_n;
                for (uint32_t i = 0; cmd == 2 && i < tw->req_n; i++) {
                    const oc_ct_flow_t *f = &list[i];
                    char s[48], d[48];
                    if (f->family == 6) {
                        inet_ntop(AF_INET6, f->src6, s, sizeof(s));
                        inet_ntop(AF_INET6, f->dst6, d, sizeof(d));
                    } else {
                        ip_str(f->src_ip, s, sizeof(s));
                        ip_str(f->dst_ip, d, sizeof(d));
                    }
                    fprintf(out, "tenant=%s proto=%u src=%s dst=%s sport=%u "
                            "dport=%u state=%s%s expires_ms=%u packets=%u/%u\n",
                            dp->ten->t[f->zone].name, f->proto, s, d, f->sport,
                            f->dport,
                            f->proto == 6 ? oc__ct_tcp_state_name(f->state) : "-",
                            f->assured ? " assured" : "", f->expires_in_ms,
                            f->packets[0], f->packets[1]);
                }
            }
            if (cmd == 1)
                fprintf(out, "flushed %llu\n", (unsigned long long)total);
            else if (cmd == 0)
                fprintf(out, "%llu\n", (unsigned long long)total);
            free(list);
        }
        return 1;
    }
    fprintf(out, "error: conntrack count|list|flush [TENANT], tenant list, "
                 "tenant rule add|del ...\n");
    return 1;
}
