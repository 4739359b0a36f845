/*
 * tenant_conf.c — the tenant directives of offcore-dp's config file
 * (tenant.h; docs/tenants.md):
 *
 *   tenant NAME vni=N attach=ATT[,ATT...] mac=MAC[,MAC...]
 *          ip=A.B.C.D[,A.B.C.D...] local=A.B.C.D local_mac=MAC
 *          remote=A.B.C.D remote_mac=MAC [rate=MBIT] [burst=BYTES]
 *          [ip6=ADDR[+ADDR...]|-[,...]]
 *
 *   (several attachments of one tenant: attach=, mac= and ip= are lists
 *   of the same length, the i-th MAC and address being the i-th
 *   attachment's own; ip6=, when given, too: the i-th item the i-th
 *   attachment's IPv6 addresses joined by '+', '-' for none but its
 *   link-local one, which every attachment has)
 *   tenant_rule NAME ingress|egress RULE   (RULE: the `rule` syntax;
 *                                          IPv6 prefixes: tenant_rule6.c)
 *   conntrack [flows=N] [TIMEOUT=SECONDS]...
 *
 * Strict like conf.c: every error with file:line, nothing applied on error.
 * Pure (no system calls).  Fuzzed with the rest of the config parser.
 */
#include "tenant_int.h"
#include "util/kv.h"

#include <arpa/inet.h>
#include <string.h>

void oc__dp_tenants_defaults(oc_dp_tenants_conf_t *tc)
{
    memset(tc, 0, sizeof(*tc));
    /* 1M flows: ~85 MB per worker, mapped at start (bench-conntrack) */
    tc->ct_flows = 1000000;
    oc__ct_timeouts_default(&tc->ct_to);
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

/* a comma-separated list @p s: each item through @p one (0 good) into
 * item i; @return the count, or -1 (an empty item, more than max) */
static int list(const char *s, int max, int (*one)(const char *, void *, int),
                void *out)
{
    char buf[OC_DP_TENANT_ATT * OC_TENANT_IP6_MAX * 48], *save = NULL, *it;
    int n = 0;
    size_t l = strlen(s);

    if (l == 0 || l >= sizeof(buf) || s[0] == ',' || s[l - 1] == ',' ||
        strstr(s, ",,") != NULL)
        return -1;
    memcpy(buf, s, l + 1);
    for (it = strtok_r(buf, ",", &save); it != NULL;
         it = strtok_r(NULL, ",", &save)) {
        if (n == max || one(it, out, n) != 0)
            return -1;
        n++;
    }
    return n;
}

static int one_att(const char *s, void *out, int i)
{
    char (*att)[32] = out;
    if (strlen(s) >= sizeof(att[i]))
        return -1;
    snprintf(att[i], sizeof(att[i]), "%s", s);
    return 0;
}

static int one_mac(const char *s, void *out, int i)
{
    return parse_mac(s, ((uint8_t (*)[6])out)[i]);
}

static int one_ip(const char *s, void *out, int i)
{
    return oc__kv_ipv4(s, &((uint32_t *)out)[i]);
}

/* one attachment's IPv6 addresses: ADDR[+ADDR...] or '-'; unicast only
 * (not ::, not multicast), each once */
static int one_ip6(const char *s, void *out, int i)
{
    oc_ip6_set_t *set = &((oc_ip6_set_t *)out)[i];
    char buf[OC_TENANT_IP6_MAX * 48], *save = NULL, *it;
    static const uint8_t any[16];
    size_t l = strlen(s);

    set->n = 0;
    if (!strcmp(s, "-"))
        return 0;
    if (l == 0 || l >= sizeof(buf) || s[0] == '+' || s[l - 1] == '+' ||
        strstr(s, "++") != NULL)
        return -1;
    memcpy(buf, s, l + 1);
    for (it = strtok_r(buf, "+", &save); it != NULL;
         it = strtok_r(NULL, "+", &save)) {
        uint8_t a[16];
        if (set->n == OC_TENANT_IP6_MAX || inet_pton(AF_INET6, it, a) != 1 ||
            a[0] == 0xff || !memcmp(a, any, 16))
            return -1;
        for (uint32_t j = 0; j < set->n; j++)
            if (!memcmp(set->a[j], a, 16))
                return -1;
        memcpy(set->a[set->n++], a, 16);
    }
    return 0;
}

static int find(const oc_dp_tenants_conf_t *tc, const char *name)
{
    for (uint32_t i = 0; i < tc->ntenants; i++)
        if (!strcmp(tc->t[i].name, name))
            return (int)i;
    return -1;
}

/* conntrack's keys: flows, flows6, then the timeouts, each with its state in
 * ct_state[] (the TCP state, or -1 udp, -2 udp_stream, -3 icmp, -4
 * generic) */
static const char *const ct_keys[] = {
    "flows", "flows6", "tcp_syn_sent", "tcp_syn_recv", "tcp_established",
    "tcp_fin_wait", "tcp_last_ack", "tcp_time_wait", "tcp_close", "udp",
    "udp_stream", "icmp", "generic", NULL};
static const int ct_state[] = {
    0, 0, OC_CT_TCP_SYN_SENT, OC_CT_TCP_SYN_RECV, OC_CT_TCP_ESTABLISHED,
    OC_CT_TCP_FIN_WAIT, OC_CT_TCP_LAST_ACK, OC_CT_TCP_TIME_WAIT,
    OC_CT_TCP_CLOSE, -1, -2, -3, -4};
_Static_assert(sizeof(ct_keys) / sizeof(ct_keys[0]) ==
                   sizeof(ct_state) / sizeof(ct_state[0]) + 1,
               "one state per conntrack key");

int oc__dp_tenant_parse(oc_dp_tenants_conf_t *tc, char **tok, int n,
                        const char *file, unsigned ln, oc_conf_errors_t *e)
{
    static const char *const keys[] = {
        "vni", "attach", "mac", "ip", "local", "local_mac", "remote",
        "remote_mac", "rate", "burst", "ip6", NULL};
    enum { VNI, ATT, MAC, IP, LOC, LMAC, REM, RMAC, RATE, BURST, IP6 };
    const unsigned needed = (1u << RATE) - 1; /* all before rate */
    oc_dp_tenant_conf_t t;
    unsigned have = 0;
    uint64_t v = 0;
    int nl[4] = {0, 0, 0, -1}; /* items of attach=, mac=, ip=, ip6= */
#define ERR(...) oc__conf_error(e, file, ln, __VA_ARGS__)

    memset(&t, 0, sizeof(t));
    t.line = ln;
    t.burst = 65536;
    if (n < 2 || strlen(tok[1]) >= sizeof(t.name) || strchr(tok[1], '=')) {
        ERR("tenant takes NAME vni=N attach=ATT[,ATT...] mac=MAC[,MAC...] "
            "ip=A.B.C.D[,...] local=IP local_mac=MAC remote=IP remote_mac=MAC "
            "[rate=MBIT] [burst=BYTES] [ip6=ADDR[+ADDR...]|-[,...]]");
        return -1;
    }
    snprintf(t.name, sizeof(t.name), "%s", tok[1]);
    for (int i = 2; i < n; i++) {
        char why[160], *eq;
        const char *k = tok[i];
        int bad = 0;
        switch (oc__kv_key(tok[i], keys, &have, &eq, why, sizeof(why))) {
        case VNI:
            bad = oc__kv_u64(eq, 1, OC_VXLAN_VNI_MAX, &v);
            t.vni = (uint32_t)v;
            break;
        case ATT:
            nl[0] = list(eq, OC_DP_TENANT_ATT, one_att, t.attach);
            bad = nl[0] < 0;
            break;
        case MAC:
            nl[1] = list(eq, OC_DP_TENANT_ATT, one_mac, t.mac);
            bad = nl[1] < 0;
            break;
        case IP:
            if (strchr(eq, ':') != NULL) {
                ERR("tenant %s: ip= takes IPv4 addresses; IPv6 ones go in "
                    "ip6= (one item per attachment: ADDR[+ADDR...] or -)",
                    t.name);
                return -1;
            }
            nl[2] = list(eq, OC_DP_TENANT_ATT, one_ip, t.ip);
            bad = nl[2] < 0;
            break;
        case IP6:
            nl[3] = list(eq, OC_DP_TENANT_ATT, one_ip6, t.ip6);
            if (nl[3] < 0) {
                ERR("tenant %s: ip6 '%.200s' is not valid: one item per "
                    "attachment, comma-separated, each '-' or up to %d "
                    "unicast IPv6 addresses joined by '+' (not ::, not "
                    "ff00::/8, none twice)", t.name, eq, OC_TENANT_IP6_MAX);
                return -1;
            }
            break;
        case LOC: bad = oc__kv_ipv4(eq, &t.tun.local_ip); break;
        case LMAC: bad = parse_mac(eq, t.tun.local_mac); break;
        case REM: bad = oc__kv_ipv4(eq, &t.tun.remote_ip); break;
        case RMAC: bad = parse_mac(eq, t.tun.remote_mac); break;
        case RATE:
            /* Mbit/s, as iperf3 and tc speak; stored in bytes/s */
            bad = oc__kv_u64(eq, 0, 400000, &v);
            t.rate = v * 1000000 / 8;
            break;
        case BURST:
            bad = oc__kv_u64(eq, 1514, 1u << 30, &v);
            t.burst = v;
            break;
        default:
            ERR("tenant %s: %s", t.name, why);
            return -1;
        }
        if (bad) {
            ERR("tenant %s: %.12s '%.60s' is not valid (vni 1..16777215, MAC "
                "aa:bb:cc:dd:ee:ff, IPv4 dotted, attach=/mac=/ip= lists of "
                "1..%d comma-separated items, attachment names under 32 "
                "bytes, rate 0..400000 Mbit/s, burst 1514..1073741824 bytes)",
                t.name, k, eq, OC_DP_TENANT_ATT);
            return -1;
        }
    }
    if ((have & needed) != needed) {
        ERR("tenant %s: needs vni= attach= mac= ip= local= local_mac= "
            "remote= remote_mac=", t.name);
        return -1;
    }
    if (nl[1] != nl[0] || nl[2] != nl[0]) {
        ERR("tenant %s: %d attachments but %d MACs and %d addresses (one mac= "
            "and one ip= item per attach= item, in the same order)", t.name,
            nl[0], nl[1], nl[2]);
        return -1;
    }
    if (nl[3] >= 0 && nl[3] != nl[0]) {
        ERR("tenant %s: %d attachments but %d ip6= items (one per attach= "
            "item, in the same order; '-' for none)", t.name, nl[0], nl[3]);
        return -1;
    }
    t.natt = (uint32_t)nl[0];
    for (uint32_t i = 0; i < t.natt; i++)
        oc__ip6_set_ll(&t.ip6[i], t.mac[i]);
    for (uint32_t i = 0; i < t.natt; i++)
        for (uint32_t j = 0; j < t.natt; j++)
            for (uint32_t x = 0; x < t.ip6[i].n && j != i; x++)
                if (oc__ip6_owns(&t.ip6[j], t.ip6[i].a[x])) {
                    char b[48];
                    inet_ntop(AF_INET6, t.ip6[i].a[x], b, sizeof(b));
                    /* delivery and neighbor discovery tell attachments
                     * apart by their addresses */
                    ERR("tenant %s: attachments %s and %s both have IPv6 "
                        "address %s", t.name, t.attach[j], t.attach[i], b);
                    return -1;
                }
    for (uint32_t i = 0; i < t.natt; i++)
        for (uint32_t j = 0; j < i; j++) {
            const char *what = !strcmp(t.attach[i], t.attach[j]) ? "attachment"
                               : !memcmp(t.mac[i], t.mac[j], 6) ? "MAC"
                               : t.ip[i] == t.ip[j] ? "address" : NULL;
            if (what != NULL) {
                /* anti-spoofing and delivery tell attachments apart by
                 * their own MAC and address */
                ERR("tenant %s: attachments %s and %s have the same %s",
                    t.name, t.attach[j], t.attach[i], what);
                return -1;
            }
        }
    if (find(tc, t.name) >= 0) {
        ERR("tenant %s: defined twice", t.name);
        return -1;
    }
    for (uint32_t i = 0; i < tc->ntenants; i++)
        for (uint32_t x = 0; x < tc->t[i].natt; x++)
            for (uint32_t y = 0; y < t.natt; y++)
                if (!strcmp(tc->t[i].attach[x], t.attach[y])) {
                    ERR("tenant %s: attachment %s already belongs to tenant "
                        "%s", t.name, t.attach[y], tc->t[i].name);
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
                            const char *rule, const char *file, unsigned ln,
                            oc_conf_errors_t *e)
{
    oc_dp_tenants_conf_t *tc = &c->tenants;

    if (!strcmp(tok[0], "tenant")) {
        (void)oc__dp_tenant_parse(tc, tok, n, file, ln, e);
    } else if (!strcmp(tok[0], "tenant_rule")) {
        oc_dp_trule_t r;
        char why[160];
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
        if (oc__dp_trule_parse(rule, &r, why, sizeof(why)) != 0) {
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
        r.tenant = (uint32_t)t;
        r.ingress = tok[2][0] == 'i';
        tc->r[tc->nrules++] = r;
    } else if (!strcmp(tok[0], "conntrack")) {
        unsigned seen = 0;
        for (int i = 1; i < n; i++) {
            char why[256], *eq;
            uint64_t v;
            int k = oc__kv_key(tok[i], ct_keys, &seen, &eq, why, sizeof(why));
            if (k < 0) {
                ERR("conntrack: %s", why);
                continue;
            }
            tc->enabled = true;
            if (k <= 1) {
                if (oc__kv_u64(eq, 1, OC_CT_MAX_FLOWS, &v))
                    ERR("conntrack %s '%.32s': expected 1..%u", ct_keys[k],
                        eq, OC_CT_MAX_FLOWS);
                else if (k == 0)
                    tc->ct_flows = (uint32_t)v;
                else
                    tc->ct_flows6 = (uint32_t)v;
                continue;
            }
            if (oc__kv_u64(eq, 1, 30 * 86400, &v)) {
                ERR("conntrack %s '%.32s': expected 1..2592000 seconds",
                    tok[i], eq);
                continue;
            }
            switch (ct_state[k]) {
            case -1: tc->ct_to.udp_unreplied = (uint32_t)v; break;
            case -2: tc->ct_to.udp_replied = (uint32_t)v; break;
            case -3: tc->ct_to.icmp = (uint32_t)v; break;
            case -4: tc->ct_to.generic = (uint32_t)v; break;
            default: tc->ct_to.tcp[ct_state[k]] = (uint32_t)v;
            }
        }
    } else {
        return 0;
    }
    return 1;
#undef ERR
}

void oc__dp_tenants_check(const oc_dp_conf_t *c, const char *file,
                          oc_conf_errors_t *e)
{
    const oc_dp_tenants_conf_t *tc = &c->tenants;

    if (tc->ntenants > 0 && c->threads > 1)
        for (uint32_t a = 0; a < c->nattach; a++)
            if (c->attach[a].backend != OC_DP_BACKEND_XDP) {
                /* handing frames between workers needs each worker's own
                 * pool to send from (tenant_hand.c) */
                oc__conf_error(e, file, tc->t[0].line,
                              "tenants with threads > 1 need backend=xdp "
                              "(attach %s)", c->attach[a].name);
                break;
            }
    if (tc->ntenants > 0 && c->bare)
        oc__conf_error(e, file, tc->t[0].line,
                      "tenants need the stages: not with 'stages none'");
    for (uint32_t i = 0; i < tc->ntenants; i++)
        for (uint32_t x = 0; x < tc->t[i].natt; x++) {
            bool found = false;
            for (uint32_t a = 0; a < c->nattach; a++)
                found |= !strcmp(c->attach[a].name, tc->t[i].attach[x]);
            if (!found)
                oc__conf_error(e, file, tc->t[i].line,
                              "tenant %s: no attachment '%s'", tc->t[i].name,
                              tc->t[i].attach[x]);
        }
}
