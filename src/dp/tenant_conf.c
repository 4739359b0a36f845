/*
 * tenant_conf.c — the tenant directives of offcore-dp's config file
 * (tenant.h; docs/tenants.md):
 *
 *   tenant NAME vni=N attach=ATT mac=MAC ip=A.B.C.D local=A.B.C.D
 *          local_mac=MAC remote=A.B.C.D remote_mac=MAC [rate=MBIT]
 *          [burst=BYTES]
 *   tenant_rule NAME ingress|egress RULE   (RULE: the `rule` syntax)
 *   conntrack [flows=N] [TIMEOUT=SECONDS]...
 *
 * Strict like conf.c: every error with file:line, nothing applied on error.
 * Pure (no system calls).  Fuzzed with the rest of the config parser.
 */
#include "tenant_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void oc__dp_tenants_defaults(oc_dp_tenants_conf_t *tc)
{
    memset(tc, 0, sizeof(*tc));
    /* 1M flows: ~85 MB per worker, mapped at start (bench-conntrack) */
    tc->ct_flows = 1000000;
    oc_ct_timeouts_default(&tc->ct_to);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    char tail;
    if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &tail) != 6 || strlen(s) != 17)
        return -1;
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)v[i];
    return 0;
}

static int parse_ip(const char *s, uint32_t *ip)
{
    struct in_addr a;
    if (inet_pton(AF_INET, s, &a) != 1)
        return -1;
    *ip = ntohl(a.s_addr);
    return 0;
}

static int parse_num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int find(const oc_dp_tenants_conf_t *tc, const char *name)
{
    for (uint32_t i = 0; i < tc->ntenants; i++)
        if (!strcmp(tc->t[i].name, name))
            return (int)i;
    return -1;
}

static const struct {
    const char *key;
    int state; /* TCP state, or -1 udp, -2 udp_stream, -3 icmp, -4 generic */
} timeouts[] = {
    {"tcp_syn_sent", OC_CT_TCP_SYN_SENT}, {"tcp_syn_recv", OC_CT_TCP_SYN_RECV},
    {"tcp_established", OC_CT_TCP_ESTABLISHED},
    {"tcp_fin_wait", OC_CT_TCP_FIN_WAIT}, {"tcp_last_ack", OC_CT_TCP_LAST_ACK},
    {"tcp_time_wait", OC_CT_TCP_TIME_WAIT}, {"tcp_close", OC_CT_TCP_CLOSE},
    {"udp", -1}, {"udp_stream", -2}, {"icmp", -3}, {"generic", -4},
};

int oc__dp_tenant_parse(oc_dp_tenants_conf_t *tc, char **tok, int n,
                        const char *file, unsigned ln, oc_dp_errors_t *e)
{
    oc_dp_tenant_conf_t t;
    unsigned have = 0;
    uint64_t v = 0;
    enum { VNI = 1, ATT = 2, MAC = 4, IP = 8, LOC = 16, LMAC = 32, REM = 64,
           RMAC = 128, ALL = 255 };
#define ERR(...) oc_dp_errors_add(e, file, ln, __VA_ARGS__)

    memset(&t, 0, sizeof(t));
    t.line = ln;
    t.burst = 65536;
    if (n < 2 || strlen(tok[1]) >= sizeof(t.name) || strchr(tok[1], '=')) {
        ERR("tenant takes NAME vni=N attach=ATT mac=MAC ip=A.B.C.D local=IP "
            "local_mac=MAC remote=IP remote_mac=MAC [rate=MBIT] [burst=BYTES]");
        return -1;
    }
    snprintf(t.name, sizeof(t.name), "%s", tok[1]);
    for (int i = 2; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        const char *k = tok[i];
        int bad = 0;
        if (eq == NULL) {
            ERR("tenant %s: '%.40s': expected KEY=VALUE", t.name, tok[i]);
            return -1;
        }
        *eq++ = '\0';
        if (!strcmp(k, "vni")) {
            bad = parse_num(eq, 1, OC_VXLAN_VNI_MAX, &v);
            t.vni = (uint32_t)v;
            have |= VNI;
        } else if (!strcmp(k, "attach")) {
            bad = strlen(eq) >= sizeof(t.attach);
            snprintf(t.attach, sizeof(t.attach), "%s", eq);
            have |= ATT;
        } else if (!strcmp(k, "mac")) {
            bad = parse_mac(eq, t.mac);
            have |= MAC;
        } else if (!strcmp(k, "ip")) {
            bad = parse_ip(eq, &t.ip);
            have |= IP;
        } else if (!strcmp(k, "local")) {
            bad = parse_ip(eq, &t.tun.local_ip);
            have |= LOC;
        } else if (!strcmp(k, "local_mac")) {
            bad = parse_mac(eq, t.tun.local_mac);
            have |= LMAC;
        } else if (!strcmp(k, "remote")) {
            bad = parse_ip(eq, &t.tun.remote_ip);
            have |= REM;
        } else if (!strcmp(k, "remote_mac")) {
            bad = parse_mac(eq, t.tun.remote_mac);
            have |= RMAC;
        } else if (!strcmp(k, "rate")) {
            /* Mbit/s, as iperf3 and tc speak; stored in bytes/s */
            bad = parse_num(eq, 0, 400000, &v);
            t.rate = v * 1000000 / 8;
        } else if (!strcmp(k, "burst")) {
            bad = parse_num(eq, 1514, 1u << 30, &v);
            t.burst = v;
        } else {
            ERR("tenant %s: unknown key '%.32s' (vni attach mac ip local "
                "local_mac remote remote_mac rate burst)", t.name, k);
            return -1;
        }
        if (bad) {
            ERR("tenant %s: %s '%.40s' is not valid (vni 1..16777215, MAC "
                "aa:bb:cc:dd:ee:ff, IPv4 dotted, rate 0..400000 Mbit/s, "
                "burst 1514..1073741824 bytes)", t.name, k, eq);
            return -1;
        }
    }
    if (have != ALL) {
        ERR("tenant %s: needs vni= attach= mac= ip= local= local_mac= "
            "remote= remote_mac=", t.name);
        return -1;
    }
    if (find(tc, t.name) >= 0) {
        ERR("tenant %s: defined twice", t.name);
        return -1;
    }
    for (uint32_t i = 0; i < tc->ntenants; i++)
        if (!strcmp(tc->t[i].attach, t.attach)) {
            ERR("tenant %s: attachment %s already belongs to tenant %s", t.name,
                t.attach, tc->t[i].name);
            return -1;
        }
    if (tc->ntenants == OC_DP_MAX_TENANTS) {
        ERR("more than %u tenants", OC_DP_MAX_TENANTS);
        return -1;
    }
    tc->t[tc->ntenants++] = t;
    return 0;
}

int oc__dp_tenant_directive(oc_dp_conf_t *c, char **tok, int n,
                            const char *rest, const char *file, unsigned ln,
                            oc_dp_errors_t *e)
{
    oc_dp_tenants_conf_t *tc = &c->tenants;

    if (!strcmp(tok[0], "tenant")) {
        (void)oc__dp_tenant_parse(tc, tok, n, file, ln, e);
    } else if (!strcmp(tok[0], "tenant_rule")) {
        oc_dp_rule_t r;
        char why[160];
        const char *text;
        int t;
        if (n < 4 || (strcmp(tok[2], "ingress") && strcmp(tok[2], "egress"))) {
            ERR("tenant_rule takes TENANT ingress|egress RULE");
            return 1;
        }
        t = find(tc, tok[1]);
        if (t < 0) {
            ERR("tenant_rule: no tenant '%.32s' defined above", tok[1]);
            return 1;
        }
        text = strstr(rest, tok[2]) + strlen(tok[2]);
        if (oc_dp_rule_parse(text, &r, why, sizeof(why)) != 0) {
            ERR("tenant_rule %s: %s", tok[1], why);
            return 1;
        }
        for (uint32_t i = 0; i < tc->nrules; i++)
            if (tc->r[i].tenant == (uint32_t)t &&
                tc->r[i].ingress == (tok[2][0] == 'i') &&
                tc->r[i].r.id == r.r.id) {
                ERR("tenant_rule %s %s: id %u defined twice", tok[1], tok[2],
                    r.r.id);
                return 1;
            }
        if (tc->nrules == OC_DP_MAX_TRULES) {
            ERR("more than %u tenant rules", OC_DP_MAX_TRULES);
            return 1;
        }
        tc->r[tc->nrules++] = (oc_dp_trule_t){
            .tenant = (uint32_t)t, .ingress = tok[2][0] == 'i', .r = r.r,
            .action = r.action};
    } else if (!strcmp(tok[0], "conntrack")) {
        for (int i = 1; i < n; i++) {
            char *eq = strchr(tok[i], '=');
            uint64_t v;
            size_t k;
            if (eq == NULL) {
                ERR("conntrack: '%.40s': expected KEY=VALUE", tok[i]);
                continue;
            }
            *eq++ = '\0';
            tc->enabled = true;
            if (!strcmp(tok[i], "flows")) {
                if (parse_num(eq, 1, OC_CT_MAX_FLOWS, &v))
                    ERR("conntrack flows '%.32s': expected 1..%u", eq,
                        OC_CT_MAX_FLOWS);
                else
                    tc->ct_flows = (uint32_t)v;
                continue;
            }
            for (k = 0; k < sizeof(timeouts) / sizeof(timeouts[0]); k++)
                if (!strcmp(tok[i], timeouts[k].key))
                    break;
            if (k == sizeof(timeouts) / sizeof(timeouts[0])) {
                ERR("conntrack: unknown key '%.32s' (flows tcp_syn_sent "
                    "tcp_syn_recv tcp_established tcp_fin_wait tcp_last_ack "
                    "tcp_time_wait tcp_close udp udp_stream icmp generic)",
                    tok[i]);
                continue;
            }
            if (parse_num(eq, 1, 30 * 86400, &v)) {
                ERR("conntrack %s '%.32s': expected 1..2592000 seconds",
                    tok[i], eq);
                continue;
            }
            switch (timeouts[k].state) {
            case -1: tc->ct_to.udp_unreplied = (uint32_t)v; break;
            case -2: tc->ct_to.udp_replied = (uint32_t)v; break;
            case -3: tc->ct_to.icmp = (uint32_t)v; break;
            case -4: tc->ct_to.generic = (uint32_t)v; break;
            default: tc->ct_to.tcp[timeouts[k].state] = (uint32_t)v;
            }
        }
    } else {
        return 0;
    }
    return 1;
#undef ERR
}

void oc__dp_tenants_check(const oc_dp_conf_t *c, const char *file,
                          oc_dp_errors_t *e)
{
    const oc_dp_tenants_conf_t *tc = &c->tenants;

    if (tc->ntenants > 0 && c->threads > 1)
        for (uint32_t a = 0; a < c->nattach; a++)
            if (c->attach[a].backend != OC_DP_BACKEND_XDP) {
                /* handing frames between workers needs each worker's own
                 * pool to send from (tenant_hand.c) */
                oc_dp_errors_add(e, file, tc->t[0].line,
                                 "tenants with threads > 1 need backend=xdp "
                                 "(attach %s)", c->attach[a].name);
                break;
            }
    if (tc->ntenants > 0 && c->bare)
        oc_dp_errors_add(e, file, tc->t[0].line,
                         "tenants need the stages: not with 'stages none'");
    for (uint32_t i = 0; i < tc->ntenants; i++) {
        bool found = false;
        for (uint32_t a = 0; a < c->nattach; a++)
            found |= !strcmp(c->attach[a].name, tc->t[i].attach);
        if (!found)
            oc_dp_errors_add(e, file, tc->t[i].line,
                             "tenant %s: no attachment '%s'", tc->t[i].name,
                             tc->t[i].attach);
    }
}
