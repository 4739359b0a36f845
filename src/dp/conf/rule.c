/*
 * rule.c — offcore-dp's rule syntax (dp.h): `id=N [prio=N] action=...
 * [proto=..] [src=..] [dst=..] [sport=..] [dport=..]`, parsed strictly and
 * written back in the same syntax (a parsed rule formats to text that
 * parses to the same rule: fuzz_pkt checks it).  Pure; thread-safe.  Used
 * by the config file (conf.c), rule files and the control socket.
 */
#include "dp.h"
#include "util/kv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *oc__dp_action_name(oc_acl_action_t a)
{
    return a == OC_ACL_ALLOW ? "allow" : a == OC_ACL_DENY ? "deny" : "count";
}

int oc__dp_parse_action(const char *s, oc_acl_action_t *a)
{
    if (!strcmp(s, "allow") || !strcmp(s, "accept") || !strcmp(s, "pass"))
        *a = OC_ACL_ALLOW;
    else if (!strcmp(s, "deny") || !strcmp(s, "drop"))
        *a = OC_ACL_DENY;
    else if (!strcmp(s, "count"))
        *a = OC_ACL_COUNT;
    else
        return -1;
    return 0;
}

static int parse_range(const char *s, uint16_t *lo, uint16_t *hi)
{
    char buf[16];
    const char *dash = strchr(s, '-');
    uint64_t a, b;

    if (!strcmp(s, "any")) {
        *lo = 0;
        *hi = 65535;
        return 0;
    }
    if (dash == NULL) {
        if (oc__kv_u64(s, 0, 65535, &a) != 0)
            return -1;
        *lo = *hi = (uint16_t)a;
        return 0;
    }
    if ((size_t)(dash - s) >= sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%.*s", (int)(dash - s), s);
    if (oc__kv_u64(buf, 0, 65535, &a) != 0 ||
        oc__kv_u64(dash + 1, 0, 65535, &b) != 0 || a > b)
        return -1;
    *lo = (uint16_t)a;
    *hi = (uint16_t)b;
    return 0;
}

static int parse_proto(const char *s, uint8_t *proto, uint8_t *mask)
{
    char buf[16];
    const char *slash = strchr(s, '/');
    uint64_t v, m = 0xff;

    if (!strcmp(s, "any")) {
        *proto = *mask = 0;
        return 0;
    }
    if (strlen(s) >= sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%.*s",
             (int)(slash ? (size_t)(slash - s) : strlen(s)), s);
    if (!strcmp(buf, "tcp"))
        v = 6;
    else if (!strcmp(buf, "udp"))
        v = 17;
    else if (!strcmp(buf, "icmp"))
        v = 1;
    else if (oc__kv_u64(buf, 0, 255, &v) != 0)
        return -1;
    if (slash != NULL) {
        char *end;
        errno = 0;
        m = strtoull(slash + 1, &end, 0);
        if (slash[1] == '\0' || *end != '\0' || errno != 0 || m > 255 ||
            slash[1] == '-' || slash[1] == '+')
            return -1;
    }
    *mask = (uint8_t)m;
    *proto = (uint8_t)(v & m); /* bits outside the mask never matter */
    return 0;
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

int oc__dp_rules_opts(char **tok, int n, oc_acl_action_t *action,
                      uint32_t *id_base, char *why, size_t whylen)
{
    static const char *const keys[] = {"action", "id_base", NULL};
    oc_acl_action_t a = OC_ACL_ALLOW;
    unsigned seen = 0;
    uint64_t v = 0;

    for (int i = 0; i < n; i++) {
        char *val;
        int k = oc__kv_key(tok[i], keys, &seen, &val, why, whylen);
        if (k < 0)
            return -1;
        if (k == 0 && oc__dp_parse_action(val, &a) != 0)
            return WHY("action '%.32s': expected allow, deny or count", val);
        if (k == 1 && oc__kv_u64(val, 0, UINT32_MAX, &v) != 0)
            return WHY("id_base '%.32s': expected 0..4294967295", val);
    }
    *action = a;
    *id_base = (uint32_t)v;
    return 0;
}

/* Word @p i of a rule as one of @p keys.  The reasons name the word's
 * place and our keys, never the word: a rule file read for a control
 * client may be a file it could not read itself (/etc/shadow). */
static int rule_key(char *word, int i, const char *const *keys,
                    unsigned *seen, char **val, char *why, size_t whylen)
{
    char scratch[256];
    int k = oc__kv_key(word, keys, seen, val, scratch, sizeof(scratch));
    size_t kl = strcspn(word, "=");

    if (k >= 0)
        return k;
    if (word[kl] != '=')
        return WHY("word %d: expected KEY=VALUE", i + 1);
    for (k = 0; keys[k] != NULL; k++)
        if (strlen(keys[k]) == kl && !strncmp(word, keys[k], kl))
            return WHY("word %d: '%s' given twice", i + 1, keys[k]);
    return WHY("word %d: unknown key (id prio action proto src dst sport "
               "dport)", i + 1);
}

int oc__dp_rule_parse(const char *text, oc_dp_rule_t *out, char *why,
                     size_t whylen)
{
    static const char *const keys[] = {"id",  "prio", "action", "proto",
                                       "src", "dst",  "sport",  "dport",
                                       NULL};
    enum { ID, PRIO, ACTION, PROTO, SRC, DST, SPORT, DPORT };
    oc_dp_rule_t r;
    char line[OC_DP_LINE_MAX], *tok[DPORT + 2];
    unsigned seen = 0;
    uint8_t fam = 0;
    int n;

    memset(&r, 0, sizeof(r));
    r.r.sport_hi = r.r.dport_hi = 65535;
    n = oc__kv_split_text(text, line, sizeof(line), tok,
                         (int)(sizeof(tok) / sizeof(tok[0])));
    if (n == -2)
        return WHY("longer than %zu bytes", sizeof(line) - 1);
    if (n < 0) /* more words than keys: the loop names the extra one */
        n = (int)(sizeof(tok) / sizeof(tok[0]));
    for (int i = 0; i < n; i++) {
        uint64_t v;
        char *val;
        int k = rule_key(tok[i], i, keys, &seen, &val, why, whylen);
        if (k < 0)
            return -1;
        switch (k) {
        case ID:
            if (oc__kv_u64(val, 0, UINT32_MAX, &v) != 0)
                return WHY("id: expected 0..4294967295");
            r.r.id = (uint32_t)v;
            break;
        case PRIO:
            if (oc__kv_u64(val, 0, UINT32_MAX, &v) != 0)
                return WHY("prio: expected 0..4294967295");
            r.r.priority = (uint32_t)v;
            break;
        case ACTION:
            if (oc__dp_parse_action(val, &r.action) != 0)
                return WHY("action: expected allow, deny or count");
            break;
        case PROTO:
            if (parse_proto(val, &r.r.proto, &r.r.proto_mask) != 0)
                return WHY("proto: expected tcp, udp, icmp, any or 0..255, "
                           "optionally /MASK");
            break;
        case SRC:
        case DST:
            if (strcmp(val, "any") == 0)
                break;
            if (strchr(val, ':') != NULL) {
                if (oc__kv_prefix6(val, k == SRC ? r.src6 : r.dst6,
                                   k == SRC ? &r.src6_len : &r.dst6_len) != 0)
                    return WHY("%s: expected an IPv6 ADDR[/0..128]", keys[k]);
                fam |= OC_DP_FAM_V6;
            } else {
                if (oc__kv_prefix(val, k == SRC ? &r.r.src_ip : &r.r.dst_ip,
                                  k == SRC ? &r.r.src_len : &r.r.dst_len) != 0)
                    return WHY("%s: expected A.B.C.D[/0..32], an IPv6 "
                               "ADDR[/0..128] or any", keys[k]);
                fam |= OC_DP_FAM_V4;
            }
            if (fam == OC_DP_FAM_BOTH)
                return WHY("src and dst: one IPv4 and one IPv6 prefix (a rule "
                           "is for one family, or for both when it names "
                           "no address)");
            break;
        default:
            if (parse_range(val, k == SPORT ? &r.r.sport_lo : &r.r.dport_lo,
                            k == SPORT ? &r.r.sport_hi : &r.r.dport_hi) != 0)
                return WHY("%s: expected PORT, LO-HI (LO <= HI, 0..65535) "
                           "or any", keys[k]);
            break;
        }
    }
    if (!(seen & 1u << ID))
        return WHY("missing id=N");
    if (!(seen & 1u << ACTION))
        return WHY("missing action=allow|deny|count");
    if (!(seen & 1u << PRIO))
        r.r.priority = r.r.id;
    r.fam = fam ? fam : OC_DP_FAM_BOTH;
    *out = r;
    return 0;
}

static void fmt_prefix(char *b, size_t cap, uint32_t ip, uint8_t len)
{
    if (len == 0)
        snprintf(b, cap, "any");
    else
        snprintf(b, cap, "%u.%u.%u.%u/%u", ip >> 24, ip >> 16 & 255,
                 ip >> 8 & 255, ip & 255, len);
}

static void fmt_range(char *b, size_t cap, uint16_t lo, uint16_t hi)
{
    if (lo == 0 && hi == 65535)
        snprintf(b, cap, "any");
    else if (lo == hi)
        snprintf(b, cap, "%u", lo);
    else
        snprintf(b, cap, "%u-%u", lo, hi);
}

/* an IPv6 prefix; "any" when @p len is 0, unless @p force */
static void fmt_prefix6(char *b, size_t cap, const uint8_t a[16], uint8_t len,
                        bool force)
{
    char t[INET6_ADDRSTRLEN];
    if (len == 0 && !force)
        snprintf(b, cap, "any");
    else if (inet_ntop(AF_INET6, a, t, sizeof(t)) != NULL)
        snprintf(b, cap, "%s/%u", t, len);
    else
        snprintf(b, cap, "?");
}

int oc__dp_rule_format(const oc_dp_rule_t *r, char *buf, size_t cap)
{
    char src[INET6_ADDRSTRLEN + 8], dst[INET6_ADDRSTRLEN + 8];
    char sp[16], dp[16], proto[16];
    uint8_t fam = oc__dp_rule_fam(r);
    if (fam == OC_DP_FAM_V6) { /* the family shows in src when both are /0 */
        fmt_prefix6(src, sizeof(src), r->src6, r->src6_len, r->dst6_len == 0);
        fmt_prefix6(dst, sizeof(dst), r->dst6, r->dst6_len, false);
    } else {
        fmt_prefix(src, sizeof(src), r->r.src_ip, r->r.src_len);
        fmt_prefix(dst, sizeof(dst), r->r.dst_ip, r->r.dst_len);
        if (fam == OC_DP_FAM_V4 && r->r.src_len == 0 && r->r.dst_len == 0)
            snprintf(src, sizeof(src), "0.0.0.0/0");
    }
    fmt_range(sp, sizeof(sp), r->r.sport_lo, r->r.sport_hi);
    fmt_range(dp, sizeof(dp), r->r.dport_lo, r->r.dport_hi);
    if (r->r.proto_mask == 0)
        snprintf(proto, sizeof(proto), "any");
    else if (r->r.proto_mask == 0xff)
        snprintf(proto, sizeof(proto), "%s",
                 r->r.proto == 6    ? "tcp"
                 : r->r.proto == 17 ? "udp"
                 : r->r.proto == 1  ? "icmp"
                                    : "");
    if (r->r.proto_mask != 0 &&
        (r->r.proto_mask != 0xff ||
         (r->r.proto != 6 && r->r.proto != 17 && r->r.proto != 1)))
        snprintf(proto, sizeof(proto), "%u/0x%02x", r->r.proto,
                 r->r.proto_mask);
    return snprintf(buf, cap,
                    "id=%u prio=%u action=%s proto=%s src=%s dst=%s sport=%s "
                    "dport=%s",
                    r->r.id, r->r.priority, oc__dp_action_name(r->action), proto,
                    src, dst, sp, dp);
}

