/*
 * rule.c — offcore-dp's rule syntax (dp.h): `id=N [prio=N] action=...
 * [proto=..] [src=..] [dst=..] [sport=..] [dport=..]`, parsed strictly and
 * written back in the same syntax (a parsed rule formats to text that
 * parses to the same rule: fuzz_pkt checks it).  Pure; thread-safe.  Used
 * by the config file (conf.c), rule files and the control socket.
 */
#include "dp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *oc_dp_action_name(oc_acl_action_t a)
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

/* Unsigned decimal in [lo, hi], the whole string. */
int oc__dp_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_prefix(const char *s, uint32_t *ip, uint8_t *len)
{
    char buf[32];
    const char *slash = strchr(s, '/');
    struct in_addr a;
    uint64_t l = 32;

    if (!strcmp(s, "any")) {
        *ip = 0;
        *len = 0;
        return 0;
    }
    if (strlen(s) >= sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%.*s",
             (int)(slash ? (size_t)(slash - s) : strlen(s)), s);
    if (inet_pton(AF_INET, buf, &a) != 1)
        return -1;
    if (slash != NULL && oc__dp_parse_u64(slash + 1, 0, 32, &l) != 0)
        return -1;
    *len = (uint8_t)l;
    *ip = ntohl(a.s_addr) & oc_acl_prefix_mask((uint8_t)l);
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
        if (oc__dp_parse_u64(s, 0, 65535, &a) != 0)
            return -1;
        *lo = *hi = (uint16_t)a;
        return 0;
    }
    if ((size_t)(dash - s) >= sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%.*s", (int)(dash - s), s);
    if (oc__dp_parse_u64(buf, 0, 65535, &a) != 0 ||
        oc__dp_parse_u64(dash + 1, 0, 65535, &b) != 0 || a > b)
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
    else if (oc__dp_parse_u64(buf, 0, 255, &v) != 0)
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

int oc_dp_rule_parse(const char *text, oc_dp_rule_t *out, char *why,
                     size_t whylen)
{
    oc_dp_rule_t r;
    char tok[OC_DP_LINE_MAX];
    const char *p = text;
    bool have_id = false, have_prio = false, have_action = false;
    unsigned seen = 0;

    memset(&r, 0, sizeof(r));
    r.r.sport_hi = r.r.dport_hi = 65535;
    for (;;) {
        size_t n;
        char *eq, *val;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '\n' || *p == '#')
            break;
        n = strcspn(p, " \t\n");
        if (n >= sizeof(tok))
            return WHY("token too long");
        memcpy(tok, p, n);
        tok[n] = '\0';
        p += n;
        eq = strchr(tok, '=');
        if (eq == NULL)
            return WHY("'%.64s': expected KEY=VALUE", tok);
        *eq = '\0';
        val = eq + 1;
        static const char *const keys[] = {"id",  "prio",  "action", "proto",
                                           "src", "dst",   "sport",  "dport",
                                           NULL};
        int k = -1;
        for (int i = 0; keys[i] != NULL; i++)
            if (!strcmp(tok, keys[i]))
                k = i;
        if (k < 0)
            return WHY("unknown key '%.32s' (id prio action proto src dst "
                       "sport dport)", tok);
        if (seen & (1u << k))
            return WHY("'%s' given twice", tok);
        seen |= 1u << k;
        uint64_t v;
        switch (k) {
        case 0:
            if (oc__dp_parse_u64(val, 0, UINT32_MAX, &v) != 0)
                return WHY("id '%.32s': expected 0..4294967295", val);
            r.r.id = (uint32_t)v;
            have_id = true;
            break;
        case 1:
            if (oc__dp_parse_u64(val, 0, UINT32_MAX, &v) != 0)
                return WHY("prio '%.32s': expected 0..4294967295", val);
            r.r.priority = (uint32_t)v;
            have_prio = true;
            break;
        case 2:
            if (oc__dp_parse_action(val, &r.action) != 0)
                return WHY("action '%.32s': expected allow, deny or count", val);
            have_action = true;
            break;
        case 3:
            if (parse_proto(val, &r.r.proto, &r.r.proto_mask) != 0)
                return WHY("proto '%.32s': expected tcp, udp, icmp, any or "
                           "0..255, optionally /MASK", val);
            break;
        case 4:
        case 5:
            if (parse_prefix(val, k == 4 ? &r.r.src_ip : &r.r.dst_ip,
                             k == 4 ? &r.r.src_len : &r.r.dst_len) != 0)
                return WHY("%s '%.40s': expected A.B.C.D[/0..32] or any",
                           tok, val);
            break;
        default:
            if (parse_range(val, k == 6 ? &r.r.sport_lo : &r.r.dport_lo,
                            k == 6 ? &r.r.sport_hi : &r.r.dport_hi) != 0)
                return WHY("%s '%.32s': expected PORT, LO-HI (LO <= HI, "
                           "0..65535) or any", tok, val);
            break;
        }
    }
    if (!have_id)
        return WHY("missing id=N");
    if (!have_action)
        return WHY("missing action=allow|deny|count");
    if (!have_prio)
        r.r.priority = r.r.id;
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

int oc_dp_rule_format(const oc_dp_rule_t *r, char *buf, size_t cap)
{
    char src[24], dst[24], sp[16], dp[16], proto[16];
    fmt_prefix(src, sizeof(src), r->r.src_ip, r->r.src_len);
    fmt_prefix(dst, sizeof(dst), r->r.dst_ip, r->r.dst_len);
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
                    r->r.id, r->r.priority, oc_dp_action_name(r->action), proto,
                    src, dst, sp, dp);
}

