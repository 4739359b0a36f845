/*
 * tenant_rule6.c — the security groups IPv6 packets meet (tenant.h,
 * docs/tenants.md "IPv6 in tenants"): a tenant rule applies to IPv6 when
 * it names no address, or IPv6 prefixes (`src=fd00::/64`, which the
 * IPv4 classifier cannot hold: its keys are 32-bit).  Each tenant and
 * direction has one immutable list of those rules sorted by priority and
 * id, so the first match is the winner; a change builds a new list, which
 * the control thread publishes and frees the old one after every worker
 * has passed a loop (tenant_live.c's grace period).  The scan is linear:
 * written by hand because the classifier (src/pkt/acl) is IPv4-only; its
 * cost grows with the group (a few rules each, as security groups go), and
 * it is asked for IPv6 packets only (egress: each packet; ingress: those
 * that would open a flow).
 *
 * Threading: lists are read by the workers (acquire loads), replaced by
 * the control thread.  Rules come from the operator: parsed strictly.
 */
#include "tenant_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

int oc__dp_trule_parse(const char *text, oc_dp_trule_t *out, char *why,
                       size_t whylen)
{
    char rest[OC_DP_LINE_MAX], tok[OC_DP_LINE_MAX];
    const char *p = text;
    oc_dp_rule_t r;
    oc_dp_trule_t t;
    size_t used = 0;
    unsigned seen = 0; /* IPv6 src=, dst= */
    int n;

    memset(&t, 0, sizeof(t));
    rest[0] = '\0';
    /* src= / dst= with an IPv6 prefix come out here; the rest is the
     * `rule` syntax */
    while (sscanf(p, "%4095s%n", tok, &n) == 1) {
        bool s = !strncmp(tok, "src=", 4), d = !strncmp(tok, "dst=", 4);
        p += n;
        if ((s || d) && strchr(tok, ':') != NULL) {
            unsigned bit = s ? 1 : 2;
            if ((seen & bit) ||
                oc__kv_prefix6(tok + 4, s ? t.src6 : t.dst6,
                        s ? &t.src6_len : &t.dst6_len) != 0) {
                snprintf(why, whylen, "'%.80s': an IPv6 prefix is "
                         "ADDR[/0..128], given once", tok);
                return -1;
            }
            seen |= bit;
            continue;
        }
        used += (size_t)snprintf(rest + used, sizeof(rest) - used, "%s%s",
                                 used ? " " : "", tok);
        if (used >= sizeof(rest)) {
            snprintf(why, whylen, "rule too long");
            return -1;
        }
    }
    if (oc__dp_rule_parse(rest, &r, why, whylen) != 0)
        return -1;
    if (seen && (r.r.src_len != 0 || r.r.dst_len != 0)) {
        snprintf(why, whylen, "a rule has IPv4 or IPv6 prefixes, not both "
                 "(two rules)");
        return -1;
    }
    t.six = seen != 0;
    t.r = r.r;
    t.action = r.action;
    *out = t;
    return 0;
}

bool oc__dp_trule_v6(const oc_dp_trule_t *t)
{
    return t->six || oc__dp_trule_is_both(&t->r);
}

static int before(const void *a, const void *b)
{
    const oc_dp_trule_t *x = a, *y = b;
    if (oc__acl_rule_before(&x->r, &y->r))
        return -1;
    return oc__acl_rule_before(&y->r, &x->r) ? 1 : 0;
}

oc_dp_rules6_t *oc__dp_rules6_make(const oc_dp_rules6_t *old,
                                   const oc_dp_trule_t *add, int64_t del_id)
{
    uint32_t n = old != NULL ? old->n : 0, k = 0;
    oc_dp_rules6_t *l = malloc(sizeof(*l) + (n + 1) * sizeof(l->r[0]));

    if (l == NULL)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        if ((int64_t)old->r[i].r.id != del_id)
            l->r[k++] = old->r[i];
    if (add != NULL)
        l->r[k++] = *add;
    l->n = k;
    qsort(l->r, k, sizeof(l->r[0]), before);
    return l;
}

bool oc__dp_rules6_has(const oc_dp_rules6_t *l, uint32_t id)
{
    for (uint32_t i = 0; l != NULL && i < l->n; i++)
        if (l->r[i].r.id == id)
            return true;
    return false;
}

static bool in_prefix(const uint8_t *a, const uint8_t *p, uint8_t len)
{
    uint32_t full = len / 8u, bits = len % 8u;
    if (memcmp(a, p, full) != 0)
        return false;
    return bits == 0 ||
           ((a[full] ^ p[full]) & (uint8_t)(0xff00u >> bits)) == 0;
}

int oc__dp_group6(const oc_dp_rules6_t *l, const oc_acl_key_t *k,
                  const uint8_t *src, const uint8_t *dst)
{
    for (uint32_t i = 0; l != NULL && i < l->n; i++) {
        const oc_dp_trule_t *t = &l->r[i];
        /* the rule's own address fields are 0/0: only proto and ports */
        if (!oc__acl_rule_matches(&t->r, k))
            continue;
        if (t->six && (!in_prefix(src, t->src6, t->src6_len) ||
                       !in_prefix(dst, t->dst6, t->dst6_len)))
            continue;
        return t->action == OC_ACL_DENY ? 0 : 1;
    }
    return -1;
}
