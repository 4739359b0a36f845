/*
 * fuzz_acl.c — libFuzzer target for the ClassBench rule and trace parsers
 * (src/pkt/acl/acl_parse.c: operator files) and, behind
 * them, the classifier's tree builder and lookups.
 *
 * Input: byte 0 bit 0 picks the parser (clear: rules, set: trace); the
 * rest is the file's text, parsed from an exact-size heap copy.
 * Invariants: a rejected file gives "fuzz.rules:LINE: reason" with LINE
 * within the file and nothing returned; an accepted rule file has one rule
 * per non-blank line, each passing oc__acl_rule_check, ids = priorities =
 * line order, prefixes masked, and printing a rule back and parsing it
 * gives the same rule; for up to 64 rules the cutting trees are built and
 * keys at every rule's corners are classified by the fast and the scalar
 * lookups exactly as by the linear oracle.  A broken invariant aborts.
 */
#include "fuzz_acl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pkt/acl/acl.h"
#include "pkt/acl/acl_tree.h"

unsigned long fuzz_acl_accepted;
int fuzz_acl_last_valid;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_acl.c:%d: invariant broken: %s\n",           \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static size_t count_lines(const char *b, size_t n, size_t *nonblank)
{
    size_t lines = 0, nb = 0;
    const char *p = b, *e = b + n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        const char *end = nl ? nl : e;
        int blank = 1;
        for (const char *q = p; q < end; q++)
            if (*q != ' ' && *q != '\t' && *q != '\r')
                blank = 0;
        nb += !blank;
        lines++;
        p = nl ? nl + 1 : e;
    }
    *nonblank = nb;
    return lines;
}

static void check_error(const char *err, const char *name, size_t lines)
{
    size_t nl = strlen(name);
    unsigned long line;
    char *end;
    CHECK(strncmp(err, name, nl) == 0 && err[nl] == ':');
    line = strtoul(err + nl + 1, &end, 10);
    CHECK(line >= 1 && line <= lines && *end == ':' && end[1] == ' ' && end[2]);
}

static void round_trip(const oc_acl_rule_t *r)
{
    char text[160];
    oc_acl_rule_t *back;
    size_t n;
    char err[160];
    int len = snprintf(text, sizeof(text),
                       "@%u.%u.%u.%u/%u\t%u.%u.%u.%u/%u\t%u : %u\t%u : %u\t0x%02X/0x%02X\n",
                       r->src_ip >> 24, r->src_ip >> 16 & 255, r->src_ip >> 8 & 255,
                       r->src_ip & 255, r->src_len, r->dst_ip >> 24,
                       r->dst_ip >> 16 & 255, r->dst_ip >> 8 & 255,
                       r->dst_ip & 255, r->dst_len, r->sport_lo, r->sport_hi,
                       r->dport_lo, r->dport_hi, r->proto, r->proto_mask);
    CHECK(oc__acl_parse_rules(text, (size_t)len, "rt", &back, &n, err,
                             sizeof(err)) == OC_OK);
    CHECK(n == 1);
    CHECK(back[0].src_ip == r->src_ip && back[0].src_len == r->src_len &&
          back[0].dst_ip == r->dst_ip && back[0].dst_len == r->dst_len &&
          back[0].sport_lo == r->sport_lo && back[0].sport_hi == r->sport_hi &&
          back[0].dport_lo == r->dport_lo && back[0].dport_hi == r->dport_hi &&
          back[0].proto == r->proto && back[0].proto_mask == r->proto_mask);
    free(back);
}

/* the classifier's trees against the oracle, keys at the rules' corners */
static void check_tree(const oc_acl_rule_t *rules, size_t n)
{
    oc__acl_tree_t *t;
    oc_acl_key_t keys[2 * 64];
    uint32_t a[2 * 64], b[2 * 64];
    size_t nk = 0;
    CHECK(oc__acl_tree_build(rules, NULL, n, &t) == OC_OK);
    for (size_t i = 0; i < n; i++) {
        const oc_acl_rule_t *r = &rules[i];
        oc_acl_key_t lo = {r->src_ip, r->dst_ip, r->sport_lo, r->dport_lo,
                           r->proto, {0, 0, 0}};
        oc_acl_key_t hi = {r->src_ip | ~oc__acl_prefix_mask(r->src_len),
                           r->dst_ip | ~oc__acl_prefix_mask(r->dst_len),
                           r->sport_hi, r->dport_hi,
                           (uint8_t)(r->proto | ~r->proto_mask), {0, 0, 0}};
        keys[nk++] = lo;
        keys[nk++] = hi;
    }
    oc__acl_tree_lookup(t, NULL, keys, (uint32_t)nk, a);
    oc__acl_tree_lookup_scalar(t, NULL, keys, (uint32_t)nk, b);
    for (size_t i = 0; i < nk; i++) {
        long w = oc__acl_match_linear(rules, n, &keys[i]);
        CHECK(a[i] == b[i]);
        CHECK(a[i] == (w < 0 ? OC__ACL_NONE : (uint32_t)w));
    }
    oc__acl_tree_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    const char *text;
    size_t len, lines, nonblank, n = 0;

    fuzz_acl_last_valid = 0;
    if (size < FUZZ_ACL_PREFIX)
        return 0;
    text = (const char *)data + FUZZ_ACL_PREFIX;
    len = size - FUZZ_ACL_PREFIX;
    lines = count_lines(text, len, &nonblank);
    err[0] = '\0';
    if (!(data[0] & FUZZ_ACL_TRACE)) {
        oc_acl_rule_t *r = NULL;
        oc_status_t st = oc__acl_parse_rules(text, len, "fuzz.rules", &r, &n,
                                            err, sizeof(err));
        if (st != OC_OK) {
            CHECK(st == OC_ERR_CONFIG && r == NULL);
            check_error(err, "fuzz.rules", lines);
            return 0;
        }
        CHECK(n == nonblank);
        for (size_t i = 0; i < n; i++) {
            CHECK(oc__acl_rule_check(&r[i], NULL) == OC_OK);
            CHECK(r[i].id == i && r[i].priority == i && r[i].userdata == i);
            CHECK((r[i].src_ip & ~oc__acl_prefix_mask(r[i].src_len)) == 0);
            CHECK((r[i].dst_ip & ~oc__acl_prefix_mask(r[i].dst_len)) == 0);
            if (i < 8)
                round_trip(&r[i]);
        }
        if (n > 0 && n <= 64)
            check_tree(r, n);
        free(r);
    } else {
        oc_acl_trace_t *t = NULL;
        oc_status_t st = oc__acl_parse_trace(text, len, "fuzz.trace", &t, &n,
                                            err, sizeof(err));
        if (st != OC_OK) {
            CHECK(st == OC_ERR_CONFIG && t == NULL);
            check_error(err, "fuzz.trace", lines);
            return 0;
        }
        CHECK(n == nonblank);
        free(t);
    }
    fuzz_acl_accepted += n;
    fuzz_acl_last_valid = 1;
    return 0;
}

/* ------------------------------------------------------------------ seeds */

static void seed(fuzz_acl_seed_fn fn, void *arg, uint8_t mode, const char *s,
                 int valid)
{
    uint8_t buf[4096];
    size_t n = strlen(s);
    buf[0] = mode;
    memcpy(buf + FUZZ_ACL_PREFIX, s, n);
    fn(arg, buf, FUZZ_ACL_PREFIX + n, valid);
}

unsigned fuzz_acl_seeds(fuzz_acl_seed_fn fn, void *arg)
{
    static const struct {
        uint8_t mode;
        const char *text;
        int valid;
    } s[] = {
        {0, "@86.227.43.109/32\t25.24.148.6/32\t0 : 65535\t1521 : 1521\t0x06/0xFF\t0x1000/0x1000\t\n", 1},
        {0, "@23.67.154.112/28\t125.68.109.16/28\t53 : 53\t25 : 25\t0x11/0xFF\t0x0000/0x0000\t\n"
            "@0.0.0.0/0\t14.248.173.240/28\t0 : 65535\t88 : 88\t0x00/0x00\n"
            "\n"
            "@12.239.100.80/28 0.0.0.0/0 1024 : 65535 0 : 65535 0x06/0xF0\r\n", 1},
        {0, "@10.0.0.0/8 10.0.0.0/8 0 : 0 65535 : 65535 0xff/0xff\n"
            "@10.1.0.0/16 10.0.0.0/8 0 : 10 20 : 30 0x06/0xff\n"
            "@10.1.2.0/24 0.0.0.0/0 5 : 5 25 : 25 0x11/0xff\n"
            "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x00/0x00\n", 1},
        {0, "@1.2.3.4/33 1.2.3.4/32 0 : 1 0 : 1 0x06/0xFF\n", 0},
        {0, "@1.2.3.4/32 1.2.3.4/32 9 : 1 0 : 1 0x06/0xFF\n", 0},
        {0, "@1.2.3.4/32 1.2.3.4/32 0 : 1 0 : 1 0x06\n", 0},
        {1, "4269060508\t1251737886\t65535\t20\t6\t4294967295\t3951\n"
            "1963606324\t825174867\t23158\t161\t7\t0\t-1\n", 1},
        {1, "1 2 3 4 5\n1 2 3 4 5 6\n", 1},
        {1, "1 2 3 4\n", 0},
        {1, "1 2 3 65536 6 0 1\n", 0},
    };
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
        seed(fn, arg, s[i].mode, s[i].text, s[i].valid);
    return (unsigned)(sizeof(s) / sizeof(s[0]));
}
