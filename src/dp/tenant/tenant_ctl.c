/*
 * tenant_ctl.c — the `conntrack` and `tenant` control commands of a
 * running offcore-dp (docs/tenants.md): list the tenants, count, list and
 * flush tracked flows (asked of the workers, tenant.c), change a tenant's
 * security groups live; `tenant add` and `tenant del` are tenant_live.c's.
 *
 * Threading: control thread only (the security groups' writer); dp->lock
 * keeps the metrics thread off the slots while they change.
 */
#include "tenant_int.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

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
            oc_ct_flow_t *list =
                cmd == 2 ? malloc(OC_DP_CT_LIST_MAX * sizeof(*list)) : NULL;
            if (cmd == 2 && list == NULL) {
                fprintf(out, "error: out of memory\n");
                return 1;
            }
            fprintf(out, "ok\n");
            if (cmd == 2)
                fprintf(out, "# at most %u flows per worker are shown\n",
                        OC_DP_CT_LIST_MAX);
            for (uint32_t q = 0; q < dp->nthreads; q++) {
                struct oc_dp_tw *tw = dp->w[q].tw;
                tw->list = list;
                if (oc__dp_tenant_ask(dp, tw, cmd == 1 ? 1 : cmd == 2 ? 2 : 3, zone) != 0) {
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
