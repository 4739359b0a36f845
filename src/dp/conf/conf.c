/*
 * conf.c — offcore-dp's configuration file and rule syntax (dp.h).
 *
 * The whole file is parsed and checked before anything starts: every error
 * is collected with file, line and reason, and the configuration is taken
 * only when there is none.  Strict: unknown directives and keys, trailing
 * garbage, out-of-range numbers and duplicates are errors.  Pure except
 * for reading rule files and (check_system) asking the kernel whether an
 * interface exists.  Words, keys and the error list: util/kv.h; the
 * directives: one table (directives[]).  Fuzzed by tests/fuzz/fuzz_pkt.c.
 */
#include "util/defaults.h"
#include "dp.h"
#include "tenant/tenant_int.h"
#include "metrics/metrics.h"
#include "util/file.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void oc__dp_conf_defaults(oc_dp_conf_t *c)
{
    memset(c, 0, sizeof(*c));
    c->threads = 1;
    c->burst = 64;
    c->ring_size = 2048;
    c->max_rules = 65536;
    c->max_frame = 1518 + 8; /* 1500 MTU, Ethernet header, two VLAN tags */
    c->default_action = OC_ACL_ALLOW;
    snprintf(c->control, sizeof(c->control), "%s", OC_DEFAULT_DP_ADDR);
    snprintf(c->metrics, sizeof(c->metrics), "off");
    c->esp_mtu = 1500;
    c->flow_table = 65536;
    c->flow_idle_s = 15;
    c->flow_active_s = 60;
    c->ipfix_domain = 1;
    c->ipfix_template_s = 30;
    for (int r = 0; r < OC_PKT_R_MAX; r++)
        c->policy[r] = (uint8_t)oc__pkt_default_policy((oc_pkt_reason_t)r);
    oc__dp_tenants_defaults(&c->tenants);
}

void oc__dp_conf_free(oc_dp_conf_t *c)
{
    if (c == NULL)
        return;
    free(c->rules);
    c->rules = NULL;
    c->nrules = 0;
    memset(c->sa, 0, sizeof(c->sa));
    c->nsa = 0;
}

/* ------------------------------------------------------------ rule files */

static oc_status_t read_rules(const char *path, char **buf, size_t *len,
                             oc_conf_errors_t *err)
{
    char msg[512];
    oc_status_t st = oc__acl_read_file(path, buf, len, msg, sizeof(msg));
    if (st != OC_OK)
        oc__conf_error(err, NULL, 0, "%s", msg);
    return st;
}

oc_status_t oc__dp_rules_file(const char *path, oc_acl_action_t action,
                             uint32_t id_base, oc_dp_rule_t **rules_out,
                             size_t *n_out, oc_conf_errors_t *err)
{
    char *buf = NULL;
    size_t len = 0, n = 0, cap = 0;
    oc_dp_rule_t *rules = NULL;
    oc_status_t st;
    const char *p;
    unsigned errs_before = err->count;

    st = read_rules(path, &buf, &len, err);
    if (st != OC_OK)
        return st;
    p = buf;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p == '@') {
        oc_acl_rule_t *cb = NULL;
        char msg[512];
        st = oc__acl_parse_rules(buf, len, path, &cb, &n, msg, sizeof(msg));
        if (st == OC_ERR_CONFIG)
            oc__conf_error(err, path, 0, "%s", msg);
        if (st != OC_OK)
            goto out;
        if (n > 0 && (uint64_t)id_base + n - 1 > UINT32_MAX) {
            oc__conf_error(err, path, 0, "id_base %u + %zu rules passes "
                          "4294967295", id_base, n);
            free(cb);
            st = OC_ERR_CONFIG;
            goto out;
        }
        rules = calloc(n ? n : 1, sizeof(*rules));
        if (rules == NULL) {
            free(cb);
            st = OC_ERR_NO_MEMORY;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            rules[i].r = cb[i];
            rules[i].r.id = id_base + (uint32_t)i;
            rules[i].r.priority = id_base + (uint32_t)i;
            rules[i].action = action;
            rules[i].fam = OC_DP_FAM_V4;
        }
        free(cb);
        goto out;
    }
    /* our syntax, one rule a line */
    {
        unsigned line = 0;
        size_t pos = 0;
        char text[OC_DP_LINE_MAX], why[160];
        int got;
        while ((got = oc__kv_next_line(buf, len, &pos, text, sizeof(text), path,
                                      &line, err)) != 0) {
            const char *t;
            if (got < 0)
                continue; /* the error is added */
            t = text + strspn(text, " \t");
            if (!strncmp(t, "rule", 4) && (t[4] == ' ' || t[4] == '\t'))
                t += 4;
            if (*t == '\0' || *t == '#')
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                oc_dp_rule_t *g = realloc(rules, nc * sizeof(*g));
                if (g == NULL) {
                    st = OC_ERR_NO_MEMORY;
                    goto out;
                }
                rules = g;
                cap = nc;
            }
            if (oc__dp_rule_parse(t, &rules[n], why, sizeof(why)) != 0)
                oc__conf_error(err, path, line, "%s", why);
            else
                n++;
        }
        if (err->count != errs_before)
            st = OC_ERR_CONFIG;
    }
out:
    free(buf);
    if (st != OC_OK) {
        free(rules);
        return st;
    }
    *rules_out = rules;
    *n_out = n;
    return OC_OK;
}

/* ---------------------------------------------------------- config file */

/* offcore-dp's metrics address, as its HTTP server will parse it */
static bool metrics_addr_ok(const char *s)
{
    char host[256];
    uint16_t port;
    int any;
    return oc__metrics_addr_split(s, host, sizeof(host), &port, &any) == OC_OK;
}

static bool valid_ifname(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= IF_NAMESIZE)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] == '/' || s[i] == ':' || s[i] > '~')
            return false;
    return true;
}

static int add_rules(oc_dp_conf_t *c, size_t *cap, const oc_dp_rule_t *r,
                     size_t n)
{
    if (c->nrules + n > *cap) {
        size_t nc = *cap ? *cap : 64;
        while (nc < c->nrules + n)
            nc *= 2;
        oc_dp_rule_t *g = realloc(c->rules, nc * sizeof(*g));
        if (g == NULL)
            return -1;
        c->rules = g;
        *cap = nc;
    }
    memcpy(c->rules + c->nrules, r, n * sizeof(*r));
    c->nrules += n;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = ((const oc_dp_rule_t *)a)->r.id;
    uint32_t y = ((const oc_dp_rule_t *)b)->r.id;
    return x < y ? -1 : x > y;
}

/* One line of the configuration file being parsed: its words and where
 * what it sets goes. */
typedef struct {
    oc_dp_conf_t     *c;
    size_t           *rcap;     /* c->rules' capacity */
    char            **tok;      /* the words (util/kv.h) */
    int               n;
    const char       *line, *rest; /* split in place; the text as typed */
    const char       *name;     /* the file, for errors */
    unsigned          ln;
    const char       *base_dir; /* relative rule and key files */
    oc_conf_errors_t *e;
    bool             *nomem;
} line_t;

#define ERR(...) oc__conf_error(l->e, l->name, l->ln, __VA_ARGS__)

/* the line's text from word i on, as typed (rule and SA syntax) */
static const char *from(const line_t *l, int i)
{
    return i < l->n ? l->rest + (l->tok[i] - l->line) : "";
}

static void d_default(line_t *l)
{
    oc_acl_action_t a;
    if (oc__dp_parse_action(l->tok[1], &a) != 0 || a == OC_ACL_COUNT)
        ERR("default '%.32s': expected allow or deny", l->tok[1]);
    else
        l->c->default_action = a;
}

static void d_address(line_t *l)
{
    char **tok = l->tok;
    char *dst = tok[0][0] == 'c' ? l->c->control : l->c->metrics;
    if (strlen(tok[1]) >= OC_DP_PATH_MAX)
        ERR("%s: address too long", tok[0]);
    else if (tok[0][0] == 'c' && strncmp(tok[1], "unix:/", 6) != 0 &&
             tok[1][0] != '/')
        ERR("control '%.64s': expected unix:/PATH (a local socket: it "
            "changes the rules)", tok[1]);
    else if (tok[0][0] == 'm' && strcmp(tok[1], "off") != 0 &&
             !metrics_addr_ok(tok[1]))
        ERR("metrics '%.64s': expected HOST:PORT, [IPV6]:PORT, :PORT, "
            "PORT or HOST (ports 0 to 65535), or off", tok[1]);
    else
        snprintf(dst, OC_DP_PATH_MAX, "%s", tok[1]);
}

static void d_policy(line_t *l)
{
    char **tok = l->tok;
    int r;
    if (l->n != 3) {
        ERR("policy takes REASON pass|drop");
        return;
    }
    r = oc__pkt_reason_from_name(tok[1]);
    if (r < 0)
        ERR("policy: unknown reason '%.40s' (see offcore-dp --help)", tok[1]);
    else if (!strcmp(tok[2], "pass"))
        l->c->policy[r] = OC_PKT_PASS;
    else if (!strcmp(tok[2], "drop"))
        l->c->policy[r] = OC_PKT_DROP;
    else
        ERR("policy %s '%.32s': expected pass or drop", tok[1], tok[2]);
}

/* attach's key=value words; false (and the error added) on a bad one */
static bool attach_keys(line_t *l, oc_dp_attach_conf_t *a)
{
    static const char *const akeys[] = {"host", "wire", "backend", "xdp",
                                        "zero_copy", NULL};
    static const struct { const char *word; oc_port_xdp_mode_t mode; } xdp[] = {
        {"auto", OC_PORT_XDP_AUTO}, {"native", OC_PORT_XDP_NATIVE},
        {"generic", OC_PORT_XDP_GENERIC}};
    static const struct { const char *word; int b; } be[] = {
        {"xdp", OC_DP_BACKEND_XDP}, {"dpdk-af_xdp", OC_DP_BACKEND_DPDK_AF_XDP},
        {"dpdk-af_packet", OC_DP_BACKEND_DPDK_AF_PACKET}};
    unsigned seen = 0;

    for (int i = 2; i < l->n; i++) {
        char why[160], *eq;
        int k = oc__kv_key(l->tok[i], akeys, &seen, &eq, why, sizeof(why));
        size_t w;
        if (k < 0) {
            ERR("attach %s: %s", a->name, why);
            return false;
        }
        if (k <= 1) {
            if (!valid_ifname(eq)) {
                ERR("attach %s: %s '%.40s' is no interface name", a->name,
                    l->tok[i], eq);
                return false;
            }
            snprintf(k == 0 ? a->host : a->wire, sizeof(a->host), "%s", eq);
        } else if (k == 3) {
            for (w = 0; w < 3 && strcmp(eq, xdp[w].word) != 0; w++)
                ;
            if (w == 3) {
                ERR("attach %s: xdp '%.32s': expected auto, native or "
                    "generic", a->name, eq);
                return false;
            }
            a->xdp_mode = xdp[w].mode;
        } else if (k == 2) {
            for (w = 0; w < 3 && strcmp(eq, be[w].word) != 0; w++)
                ;
            if (w == 3) {
                ERR("attach %s: backend '%.32s': expected xdp, "
                    "dpdk-af_xdp or dpdk-af_packet", a->name, eq);
                return false;
            }
            a->backend = be[w].b;
        } else if (!strcmp(eq, "yes") || !strcmp(eq, "no")) {
            a->zero_copy = eq[0] == 'y';
        } else {
            ERR("attach %s: zero_copy '%.32s': expected yes or no", a->name,
                eq);
            return false;
        }
    }
    return true;
}

static void d_attach(line_t *l)
{
    oc_dp_conf_t *c = l->c;
    oc_dp_attach_conf_t a;

    memset(&a, 0, sizeof(a));
    a.line = l->ln;
    if (l->n < 2) {
        ERR("attach takes NAME host=IF wire=IF");
        return;
    }
    if (strlen(l->tok[1]) >= sizeof(a.name) || strchr(l->tok[1], '=')) {
        ERR("attach: bad name '%.40s'", l->tok[1]);
        return;
    }
    snprintf(a.name, sizeof(a.name), "%s", l->tok[1]);
    if (!attach_keys(l, &a))
        return;
    if (a.host[0] == '\0' || a.wire[0] == '\0') {
        ERR("attach %s: needs host=IF and wire=IF", a.name);
        return;
    }
    if (!strcmp(a.host, a.wire)) {
        ERR("attach %s: host and wire are the same interface", a.name);
        return;
    }
    for (uint32_t i = 0; i < c->nattach; i++) {
        const oc_dp_attach_conf_t *o = &c->attach[i];
        if (!strcmp(o->name, a.name))
            ERR("attach %s: name already used on line %u", a.name, o->line);
        /* a wire port may be shared (one uplink, tenants told apart by
         * VNI: checked with the tenants, src/dp/tenant/tenant_conf.c); a
         * host port belongs to one attachment */
        if (!strcmp(o->host, a.host) || !strcmp(o->wire, a.host) ||
            !strcmp(o->host, a.wire))
            ERR("attach %s: an interface of it is already in attach %s "
                "(line %u)", a.name, o->name, o->line);
    }
    if (c->nattach == OC_DP_MAX_ATTACH)
        ERR("more than %u attachments", OC_DP_MAX_ATTACH);
    else
        c->attach[c->nattach++] = a;
}

static void d_rule(line_t *l)
{
    oc_dp_rule_t r;
    char why[160];
    if (oc__dp_rule_parse(from(l, 1), &r, why, sizeof(why)) != 0)
        ERR("rule: %s", why);
    else if (add_rules(l->c, l->rcap, &r, 1) != 0)
        *l->nomem = true;
}

static void d_rules(line_t *l)
{
    char **tok = l->tok;
    oc_acl_action_t action;
    uint32_t id_base;
    char path[PATH_MAX], why[160];
    oc_dp_rule_t *rules = NULL;
    size_t nr = 0;
    unsigned before = l->e->count;
    oc_status_t st;

    if (l->n < 2) {
        ERR("rules takes FILE [action=allow|deny|count] [id_base=N]");
        return;
    }
    if (oc__dp_rules_opts(tok + 2, l->n - 2, &action, &id_base, why,
                          sizeof(why)) != 0) {
        ERR("rules %s: %s", tok[1], why);
        return;
    }
    if (tok[1][0] == '/' || l->base_dir == NULL)
        snprintf(path, sizeof(path), "%s", tok[1]);
    else
        snprintf(path, sizeof(path), "%s/%s", l->base_dir, tok[1]);
    st = oc__dp_rules_file(path, action, id_base, &rules, &nr, l->e);
    if (st == OC_ERR_NO_MEMORY)
        *l->nomem = true;
    else if (st != OC_OK && l->e->count == before)
        ERR("rules %s: cannot be read", path);
    else if (st != OC_OK)
        ERR("rules %s: not loaded (errors above)", path);
    else if (add_rules(l->c, l->rcap, rules, nr) != 0)
        *l->nomem = true;
    free(rules);
}

/* tenant, tenant_rule, conntrack (src/dp/tenant/tenant_conf.c) */
static void d_tenant(line_t *l)
{
    (void)oc__dp_tenant_directive(l->c, l->tok, l->n, from(l, 3), l->name,
                                  l->ln, l->e);
}

static void d_sa(line_t *l)
{
    oc_dp_conf_t *c = l->c;
    oc_esp_sa_spec_t sa;
    char why[320];

    if (oc__esp_sa_parse(from(l, 1), l->base_dir, &sa, why, sizeof(why)) != 0) {
        ERR("sa: %s", why);
        return;
    }
    for (uint32_t i = 0; i < c->nsa; i++)
        if (c->sa[i].sa.spi == sa.sa.spi &&
            c->sa[i].sa.outbound == sa.sa.outbound) {
            ERR("sa: %s spi 0x%08x defined twice",
                sa.sa.outbound ? "out" : "in", sa.sa.spi);
            memset(&sa, 0, sizeof(sa));
            return;
        }
    if (c->nsa == OC_DP_MAX_SA)
        ERR("sa: more than %u SAs", OC_DP_MAX_SA);
    else {
        c->sa[c->nsa++] = sa;
        c->esp = true;
    }
    memset(&sa, 0, sizeof(sa)); /* the key */
}

static void d_ipfix(line_t *l)
{
    oc_dp_conf_t *c = l->c;
    const char *s = l->tok[1], *colon = strrchr(s, ':');
    uint64_t v;

    if (strlen(s) >= OC_DP_PATH_MAX || colon == NULL || colon == s ||
        oc__kv_u64(colon + 1, 1, 65535, &v) != 0)
        ERR("ipfix '%.64s': expected HOST:PORT (UDP)", s);
    else if (c->nipfix == OC_DP_MAX_IPFIX)
        ERR("ipfix: more than %u collectors", OC_DP_MAX_IPFIX);
    else {
        snprintf(c->ipfix[c->nipfix++], OC_DP_PATH_MAX, "%s", s);
        c->flows = true;
    }
}

/* The directives, in the order `unknown directive` lists them.  A number
 * or a choice of two words is set from the table; the others have their
 * function.  one: the directive takes exactly one value. */
enum { NUM, NUM_POW2, WORDS, FN };
static const struct directive {
    const char *name;
    uint8_t kind;
    bool one;
    size_t off;          /* NUM: a uint32_t of oc_dp_conf_t; WORDS: a bool */
    uint64_t min, max;   /* NUM */
    const char *unit;    /* NUM: said before the range */
    const char *word[2]; /* WORDS: the first sets the bool to 'first' */
    bool first;
    void (*fn)(line_t *l); /* FN */
} directives[] = {
#define OFF(f) offsetof(oc_dp_conf_t, f)
#define NUMBER(n, f, lo, hi, unit) {n, NUM, true, OFF(f), lo, hi, unit, {0}, 0, 0}
#define POW2(n, f, lo, hi) \
    {n, NUM_POW2, true, OFF(f), lo, hi, "a power of two, ", {0}, 0, 0}
#define CHOICE(n, f, w0, w1, first) \
    {n, WORDS, true, OFF(f), 0, 0, NULL, {w0, w1}, first, 0}
#define CALL(n, one, fn) {n, FN, one, 0, 0, 0, NULL, {0}, 0, fn}
    NUMBER("threads", threads, 1, OC_DP_MAX_THREADS, ""),
    NUMBER("burst", burst, 1, 256, ""),
    POW2("ring", ring_size, 64, 16384),
    NUMBER("max_rules", max_rules, 1, OC_ACL_MAX_RULES, ""),
    NUMBER("max_frame", max_frame, 64, 2048 - OC_PKT_HEADROOM, ""),
    CHOICE("stages", bare, "classifier", "none", false),
    CALL("default", true, d_default),
    CALL("control", true, d_address),
    CALL("metrics", true, d_address),
    CALL("policy", false, d_policy),
    CALL("attach", false, d_attach),
    CALL("rule", false, d_rule),
    CALL("rules", false, d_rules),
    CALL("tenant", false, d_tenant),
    CALL("tenant_rule", false, d_tenant),
    CALL("conntrack", false, d_tenant),
    CALL("sa", false, d_sa),
    CHOICE("esp", esp, "on", "off", true),
    CHOICE("esp_clear", esp_clear, "allow", "deny", true),
    NUMBER("esp_mtu", esp_mtu, 576, 9000, ""),
    CHOICE("flows", flows, "on", "off", true),
    POW2("flow_table", flow_table, 1024, 1u << 24),
    NUMBER("flow_idle", flow_idle_s, 1, 86400, "seconds, "),
    NUMBER("flow_active", flow_active_s, 1, 86400, "seconds, "),
    CALL("ipfix", true, d_ipfix),
    NUMBER("ipfix_domain", ipfix_domain, 0, UINT32_MAX, ""),
    NUMBER("ipfix_template", ipfix_template_s, 1, 86400, "seconds, "),
#undef CALL
#undef CHOICE
#undef POW2
#undef NUMBER
#undef OFF
};
#define NDIRECTIVES (sizeof(directives) / sizeof(directives[0]))

static void unknown(line_t *l)
{
    char list[512];
    size_t o = 0;

    for (size_t i = 0; i < NDIRECTIVES && o < sizeof(list); i++)
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? " " : "",
                              directives[i].name);
    ERR("unknown directive '%.40s' (%s)", l->tok[0], list);
}

static void parse_line(oc_dp_conf_t *c, size_t *rcap, char *line,
                       const char *name, unsigned ln, const char *base_dir,
                       oc_conf_errors_t *e, bool *nomem)
{
    char rest[OC_DP_LINE_MAX];
    line_t ll = {c, rcap, NULL, 0, line, rest, name, ln, base_dir, e, nomem};
    line_t *l = &ll;
    char *tok[24];
    const struct directive *d = NULL;
    uint64_t v;

    snprintf(rest, sizeof(rest), "%s", line);
    l->tok = tok;
    l->n = oc__kv_split(line, tok, 24);
    if (l->n < 0) {
        ERR("too many words");
        return;
    }
    if (l->n == 0)
        return;
    for (size_t i = 0; i < NDIRECTIVES && d == NULL; i++)
        if (!strcmp(tok[0], directives[i].name))
            d = &directives[i];
    if (d == NULL) {
        unknown(l);
        return;
    }
    if (d->one && l->n != 2) {
        ERR("'%s' takes one value", tok[0]);
        return;
    }
    switch (d->kind) {
    case NUM:
    case NUM_POW2:
        if (oc__kv_u64(tok[1], d->min, d->max, &v) != 0 ||
            (d->kind == NUM_POW2 && (v & (v - 1)) != 0))
            ERR("%s '%.32s': expected %s%llu..%llu", tok[0], tok[1], d->unit,
                (unsigned long long)d->min, (unsigned long long)d->max);
        else
            *(uint32_t *)((char *)c + d->off) = (uint32_t)v;
        break;
    case WORDS:
        if (!strcmp(tok[1], d->word[0]) || !strcmp(tok[1], d->word[1]))
            *(bool *)((char *)c + d->off) =
                !strcmp(tok[1], d->word[0]) ? d->first : !d->first;
        else
            ERR("%s '%.32s': expected %s or %s", tok[0], tok[1], d->word[0],
                d->word[1]);
        break;
    default:
        d->fn(l);
    }
}
#undef ERR

/* Attachments sharing a wire interface (one uplink): the port is opened
 * once and wire->host frames are told apart by VNI
 * (src/dp/tenant/uplink.c), so every attachment on it needs a tenant,
 * their VNIs must differ, and the port's settings must agree. */
static void check_shared_wire(const oc_dp_conf_t *c, const char *name,
                              oc_conf_errors_t *e)
{
    const oc_dp_tenants_conf_t *tc = &c->tenants;

    for (uint32_t a = 0; a < c->nattach; a++) {
        const oc_dp_attach_conf_t *x = &c->attach[a];
        int ta = -1;
        bool shared = false;
        for (uint32_t b = 0; b < c->nattach; b++) {
            const oc_dp_attach_conf_t *y = &c->attach[b];
            if (b == a || strcmp(x->wire, y->wire) != 0)
                continue;
            shared = true;
            if (b < a && (x->backend != y->backend || x->xdp_mode != y->xdp_mode ||
                          x->zero_copy != y->zero_copy))
                oc__conf_error(e, name, x->line, "attach %s shares wire %s "
                                 "with attach %s: backend=, xdp= and "
                                 "zero_copy= must be the same", x->name,
                                 x->wire, y->name);
        }
        if (!shared)
            continue;
        if (x->backend != OC_DP_BACKEND_XDP)
            oc__conf_error(e, name, x->line, "attach %s: a shared wire port "
                             "(%s) needs backend=xdp", x->name, x->wire);
        for (uint32_t t = 0; t < tc->ntenants; t++)
            for (uint32_t i = 0; i < tc->t[t].natt; i++)
                if (!strcmp(tc->t[t].attach[i], x->name))
                    ta = (int)t;
        if (ta < 0) {
            oc__conf_error(e, name, x->line, "attach %s shares wire %s with "
                             "another attachment: it needs a tenant (frames "
                             "from a shared wire are told apart by VNI)",
                             x->name, x->wire);
            continue;
        }
        /* a tenant's own attachments share its VNI; other tenants' not */
        for (uint32_t t = 0; t < (uint32_t)ta; t++) {
            bool same_wire = false;
            for (uint32_t b = 0; b < c->nattach; b++)
                for (uint32_t i = 0; i < tc->t[t].natt; i++)
                    if (!strcmp(c->attach[b].name, tc->t[t].attach[i]) &&
                        !strcmp(c->attach[b].wire, x->wire))
                        same_wire = true;
            if (same_wire && tc->t[t].vni == tc->t[ta].vni)
                oc__conf_error(e, name, tc->t[ta].line, "tenant %s: vni %u "
                                 "is tenant %s's on the same wire %s (tenants "
                                 "sharing a wire need distinct VNIs)",
                                 tc->t[ta].name, tc->t[ta].vni, tc->t[t].name,
                                 x->wire);
        }
    }
}

oc_status_t oc__dp_conf_parse(const char *text, size_t len, const char *name,
                             const char *base_dir, bool check_system,
                             oc_dp_conf_t *out, oc_conf_errors_t *e)
{
    oc_dp_conf_t c = *out;
    size_t rcap = 0;
    unsigned ln = 0, before = e->count;
    bool nomem = false;
    size_t pos = 0;
    char line[OC_DP_LINE_MAX];
    int got;

    c.rules = NULL;
    c.nrules = 0;
    c.nattach = 0;
    c.tenants.ntenants = 0;
    c.tenants.nrules = 0;
    while (!nomem && (got = oc__kv_next_line(text, len, &pos, line,
                                            sizeof(line), name, &ln, e)) != 0)
        if (got > 0)
            parse_line(&c, &rcap, line, name, ln, base_dir, e, &nomem);
    if (nomem) {
        free(c.rules);
        return OC_ERR_NO_MEMORY;
    }
    if (c.nattach == 0)
        oc__conf_error(e, name, 0, "no 'attach NAME host=IF wire=IF' line");
    oc__dp_tenants_check(&c, name, e);
    check_shared_wire(&c, name, e);
    if (c.nrules > c.max_rules)
        oc__conf_error(e, name, 0, "%zu rules, more than max_rules %u",
                      c.nrules, c.max_rules);
    if (c.nrules > 1) {
        /* duplicate ids: sort a copy */
        oc_dp_rule_t *t = malloc(c.nrules * sizeof(*t));
        if (t == NULL) {
            free(c.rules);
            return OC_ERR_NO_MEMORY;
        }
        memcpy(t, c.rules, c.nrules * sizeof(*t));
        qsort(t, c.nrules, sizeof(*t), cmp_id);
        for (size_t i = 1; i < c.nrules; i++)
            if (t[i].r.id == t[i - 1].r.id) {
                oc__conf_error(e, name, 0, "rule id %u defined twice (ids "
                              "must be unique; see id_base=)", t[i].r.id);
                break;
            }
        free(t);
    }
    if (c.esp)
        for (uint32_t i = 0; i < c.nattach; i++)
            if (c.attach[i].backend != OC_DP_BACKEND_XDP)
                oc__conf_error(e, name, c.attach[i].line, "attach %s: ESP "
                              "runs on backend=xdp only", c.attach[i].name);
    if (c.flows && c.bare)
        oc__conf_error(e, name, 0, "flows and ipfix need the stages: not "
                      "'stages none'");
    if (c.esp && c.bare)
        oc__conf_error(e, name, 0, "ESP (sa lines) needs the stages: not "
                      "'stages none'");
    if (check_system)
        for (uint32_t i = 0; i < c.nattach; i++) {
            const char *ifs[2] = {c.attach[i].host, c.attach[i].wire};
            for (int k = 0; k < 2; k++)
                if (if_nametoindex(ifs[k]) == 0)
                    oc__conf_error(e, name, c.attach[i].line,
                                  "attach %s: no interface '%s' here (ip "
                                  "link show)", c.attach[i].name, ifs[k]);
        }
    if (e->count != before) {
        free(c.rules);
        memset(c.sa, 0, sizeof(c.sa));
        return OC_ERR_CONFIG;
    }
    *out = c;
    return OC_OK;
}

oc_status_t oc__dp_conf_load(const char *path, bool check_system,
                            oc_dp_conf_t *c, oc_conf_errors_t *e)
{
    char *buf = NULL, dir[PATH_MAX];
    size_t len = 0;
    const char *slash = strrchr(path, '/');
    oc_status_t st;

    static const oc_file_rules_t r = {.what = "config file",
                                      .max_bytes = OC_DP_CONF_FILE_MAX};
    char msg[512];

    st = oc__file_read(path, &r, &buf, &len, msg, sizeof(msg));
    if (st != OC_OK) {
        oc__conf_error(e, NULL, 0, "%s", msg);
        return st;
    }
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + (slash == path)),
                 path);
    st = oc__dp_conf_parse(buf, len, path, dir, check_system, c, e);
    free(buf);
    return st;
}
