/*
 * fuzz_acl6.c — libFuzzer target for the IPv6 classifier
 * (src/pkt/acl/acl6.c, acl6_code.c, acl6_map.c, over the IPv4 one).
 *
 * Rules come as text through offcore-dp's rule parser (src/dp/conf/rule.c:
 * the one that reads IPv6 prefixes from the operator), are loaded at once
 * or added one by one, then changed live (delete, re-add, add with new
 * prefix lengths, duplicate ids, sync, reload; fuzz_acl6.h).  After each
 * change, keys on both sides of every rule's edges (and the input's own)
 * are classified by every lookup path this CPU has
 * (oc__acl_set_lookup_path), by the scalar reference walk
 * (oc__acl6_lookup_burst_scalar) and by a linear first match of this
 * file's own (lowest priority, then lowest id), which must agree with
 * oc__acl6_match_linear too; the classifier's count, rule list and status
 * codes must be what a model of the rule set predicts.  A broken
 * invariant aborts.
 */
#include "fuzz_acl6.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp/dp.h"
#include "pkt/acl/acl6.h"
#include "util/bytes.h"

unsigned long fuzz_acl6_accepted;
int fuzz_acl6_last_valid;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_acl6.c:%d: invariant broken: %s\n",          \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAXTEXT 64   /* rules taken from the text */
#define MAXALL 128   /* rules ever offered (text and adds) */
#define MAXOPS 24
#define MAXX 64      /* the input's own keys */
#define PER_RULE 6   /* keys around each rule's edges */
#define MAXKEYS (MAXALL * PER_RULE + MAXX)
#define NEW_ID 0xf0000000u

typedef unsigned __int128 u128;

static struct {
    oc_acl6_t *acl;
    uint32_t max_rules, bs;
    oc_acl6_rule_t all[MAXALL]; /* every rule offered, in order */
    uint8_t live[MAXALL];       /* all[i] is in the classifier */
    size_t nall;
    oc_acl6_key_t x[MAXX];
    size_t nx;
} m;

static const char *const paths[] = {"scalar", "avx512-leaf", "avx512", "avx2"};

/* ------------------------------------------------------------ the model */

static u128 to128(const uint32_t a[4])
{
    return (u128)a[0] << 96 | (u128)a[1] << 64 | (u128)a[2] << 32 | a[3];
}

static void from128(u128 v, uint32_t a[4])
{
    for (int w = 3; w >= 0; w--, v >>= 32)
        a[w] = (uint32_t)v;
}

static u128 pmask(unsigned len)
{
    return len == 0 ? 0 : ~(u128)0 << (128 - len);
}

/* the definition of a match, written apart from acl6.h's */
static int matches(const oc_acl6_rule_t *r, const oc_acl6_key_t *k)
{
    return ((to128(k->src) ^ to128(r->src)) & pmask(r->src_len)) == 0 &&
           ((to128(k->dst) ^ to128(r->dst)) & pmask(r->dst_len)) == 0 &&
           r->sport_lo <= k->sport && k->sport <= r->sport_hi &&
           r->dport_lo <= k->dport && k->dport <= r->dport_hi &&
           ((k->proto ^ r->proto) & r->proto_mask) == 0;
}

static uint32_t oracle(const oc_acl6_key_t *k)
{
    long best = -1;
    for (size_t i = 0; i < m.nall; i++) {
        const oc_acl6_rule_t *r = &m.all[i], *b = &m.all[best < 0 ? 0 : best];
        if (m.live[i] && matches(r, k) &&
            (best < 0 || r->priority < b->priority ||
             (r->priority == b->priority && r->id < b->id)))
            best = (long)i;
    }
    return best < 0 ? OC_ACL_NO_MATCH : m.all[best].userdata;
}

static size_t nlive(void)
{
    size_t n = 0;
    for (size_t i = 0; i < m.nall; i++)
        n += m.live[i];
    return n;
}

static long present(uint32_t id)
{
    for (size_t i = 0; i < m.nall; i++)
        if (m.live[i] && m.all[i].id == id)
            return (long)i;
    return -1;
}

/* the index in all[] of the k-th entry whose live flag is @p want, or -1 */
static long nth(size_t k, int want)
{
    for (size_t i = 0; i < m.nall; i++)
        if (m.live[i] == want && k-- == 0)
            return (long)i;
    return -1;
}

static int cmp_before(const void *a, const void *b)
{
    return oc__acl6_rule_before(a, b) ? -1 : oc__acl6_rule_before(b, a);
}

/* ------------------------------------------------------------ the check */

static void edge_keys(const oc_acl6_rule_t *r, oc_acl6_key_t *k)
{
    u128 ms = pmask(r->src_len), md = pmask(r->dst_len);
    u128 ls = to128(r->src) & ms, hs = ls | ~ms;
    u128 ld = to128(r->dst) & md, hd = ld | ~md;
    u128 junk = (u128)(r->id * 0x9e3779b97f4a7c15ull) << 64 | r->userdata;
    const struct {
        u128 s, d;
        uint16_t sp, dp;
        uint8_t pr;
    } e[PER_RULE] = {
        {ls, ld, r->sport_lo, r->dport_lo, r->proto},
        {hs, hd, r->sport_hi, r->dport_hi, (uint8_t)(r->proto | ~r->proto_mask)},
        {ls - 1, hd, (uint16_t)(r->sport_lo - 1), r->dport_hi, r->proto},
        {hs + 1, ld - 1, (uint16_t)(r->sport_hi + 1), (uint16_t)(r->dport_lo - 1),
         (uint8_t)(r->proto ^ 1)},
        {ls, hd + 1, r->sport_lo, (uint16_t)(r->dport_hi + 1), r->proto},
        {ls | (junk & ~ms), ld | (~junk & ~md),
         (uint16_t)((r->sport_lo + r->sport_hi) / 2),
         (uint16_t)((r->dport_lo + r->dport_hi) / 2), r->proto},
    };
    for (int i = 0; i < PER_RULE; i++) {
        memset(&k[i], 0, sizeof(k[i]));
        from128(e[i].s, k[i].src);
        from128(e[i].d, k[i].dst);
        k[i].sport = e[i].sp;
        k[i].dport = e[i].dp;
        k[i].proto = e[i].pr;
    }
}

static void report(const char *what, size_t i, const oc_acl6_key_t *k,
                   uint32_t got, uint32_t want)
{
    fprintf(stderr,
            "fuzz_acl6: %s: key %zu %08x:%08x:%08x:%08x -> %08x:%08x:%08x:%08x "
            "%u -> %u proto %u: %u, the linear match %u\n",
            what, i, k->src[0], k->src[1], k->src[2], k->src[3], k->dst[0],
            k->dst[1], k->dst[2], k->dst[3], k->sport, k->dport, k->proto, got,
            want);
}

static void check(void)
{
    static oc_acl6_rule_t cur[MAXALL], got[MAXALL];
    static oc_acl6_key_t keys[MAXKEYS];
    static uint32_t want[MAXKEYS], out[MAXKEYS];
    size_t n = 0, nk = 0;
    int bad = 0;

    for (size_t i = 0; i < m.nall; i++) {
        if (m.live[i])
            cur[n++] = m.all[i];
        edge_keys(&m.all[i], &keys[nk]); /* deleted rules' edges too */
        nk += PER_RULE;
    }
    memcpy(&keys[nk], m.x, m.nx * sizeof(m.x[0]));
    nk += m.nx;

    CHECK(oc__acl6_count(m.acl) == n);
    qsort(cur, n, sizeof(cur[0]), cmp_before);
    CHECK(oc__acl6_rules(m.acl, got, MAXALL) == n);
    CHECK(n == 0 || memcmp(cur, got, n * sizeof(cur[0])) == 0);

    for (size_t i = 0; i < nk; i++) {
        long w = oc__acl6_match_linear(cur, n, &keys[i]);
        want[i] = oracle(&keys[i]);
        CHECK(want[i] == (w < 0 ? OC_ACL_NO_MATCH : cur[w].userdata));
    }

    oc__acl_reader_online();
    CHECK(oc__acl6_lookup_burst_scalar(m.acl, keys, (uint32_t)nk, out) == nk);
    for (size_t i = 0; i < nk; i++)
        if (out[i] != want[i] && bad++ < 5)
            report("scalar reference", i, &keys[i], out[i], want[i]);
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        oc_status_t st = oc__acl_set_lookup_path(paths[p]);
        static uint8_t said[sizeof(paths) / sizeof(paths[0])];
        if (st == OC_ERR_UNSUPPORTED) {
            if (!said[p] && (said[p] = 1))
                fprintf(stderr, "fuzz_acl6: lookup path %s: this CPU lacks "
                        "it, not checked\n", paths[p]);
            continue;
        }
        CHECK(st == OC_OK);
        memset(out, 0xa5, nk * sizeof(out[0]));
        for (size_t i = 0; i < nk; i += m.bs) {
            uint32_t c = (uint32_t)(nk - i < m.bs ? nk - i : m.bs);
            CHECK(oc__acl6_lookup_burst(m.acl, &keys[i], c, &out[i]) == c);
        }
        for (size_t i = 0; i < nk; i++)
            if (out[i] != want[i] && bad++ < 5)
                report(paths[p], i, &keys[i], out[i], want[i]);
    }
    oc__acl_reader_offline();
    CHECK(oc__acl_set_lookup_path("auto") == OC_OK);
    CHECK(bad == 0);
}

/* ------------------------------------------------------------- updates */

/* offer all[i] to the classifier; the model says what it must answer */
static oc_status_t add(size_t i)
{
    int dup = present(m.all[i].id) >= 0;
    size_t n = nlive();
    oc_status_t st = oc__acl6_add(m.acl, &m.all[i]);

    if (dup)
        CHECK(st == OC_ERR_INVALID_PARAM);
    else if (n >= m.max_rules)
        CHECK(st == OC_ERR_NO_MEMORY);
    else /* UNSUPPORTED: prefixes nest too deeply for 32-bit codes */
        CHECK(st == OC_OK || st == OC_ERR_UNSUPPORTED);
    if (st == OC_OK) {
        m.live[i] = 1;
        fuzz_acl6_accepted++;
    }
    return st;
}

static void load(const oc_acl6_rule_t *r, size_t n, int dup)
{
    oc_status_t st = oc__acl6_load(m.acl, r, n);
    if (n > m.max_rules)
        CHECK(st == OC_ERR_NO_MEMORY);
    else if (dup)
        CHECK(st == OC_ERR_INVALID_PARAM);
    else
        CHECK(st == OC_OK || st == OC_ERR_UNSUPPORTED);
}

/* a new rule in all[] (not offered yet): a copy of @p base with id @p id,
 * priority @p prio, new prefix lengths (kept above 128) and bits set past
 * them, which must not matter */
static oc_acl6_rule_t *derive(const oc_acl6_rule_t *base, uint32_t id,
                              uint8_t prio, uint8_t sl, uint8_t dl)
{
    oc_acl6_rule_t *r = &m.all[m.nall];
    *r = *base;
    r->id = id;
    r->priority = prio;
    r->userdata = (uint32_t)m.nall * 16 + 1;
    r->src_len = sl <= 128 ? sl : r->src_len;
    r->dst_len = dl <= 128 ? dl : r->dst_len;
    from128(to128(r->src) | (~pmask(r->src_len) & (u128)0x5a5a5a5a5a5a5a5aull),
            r->src);
    from128(to128(r->dst) | (~pmask(r->dst_len) & ((u128)sl << 64 | dl)),
            r->dst);
    m.live[m.nall++] = 0;
    return r;
}

static void op(const uint8_t *o)
{
    size_t n = nlive(), gone = m.nall - n;
    uint8_t a = o[1], b = o[2], c = o[3];
    long i;

    switch (o[0] % 8) {
    case FUZZ_ACL6_OP_KEY:
        if (m.nall > 0 && m.nx < MAXX) {
            const oc_acl6_rule_t *r = &m.all[a % m.nall];
            oc_acl6_key_t *k = &m.x[m.nx++];
            memset(k, 0, sizeof(*k));
            from128((to128(r->src) & pmask(r->src_len)) ^ (u128)1 << (127 - b % 128),
                    k->src);
            from128((to128(r->dst) & pmask(r->dst_len)) ^ (u128)1 << (127 - c % 128),
                    k->dst);
            k->sport = (uint16_t)(r->sport_lo + b);
            k->dport = (uint16_t)(r->dport_hi - c);
            k->proto = r->proto;
        }
        return; /* checked with the next change */
    case FUZZ_ACL6_OP_DEL:
        if (n == 0)
            return;
        i = nth(a % n, 1);
        CHECK(oc__acl6_del(m.acl, m.all[i].id) == OC_OK);
        m.live[i] = 0;
        break;
    case FUZZ_ACL6_OP_DEL_ID:
        i = present(NEW_ID + a);
        CHECK(oc__acl6_del(m.acl, NEW_ID + a) ==
              (i >= 0 ? OC_OK : OC_ERR_INVALID_PARAM));
        if (i >= 0)
            m.live[i] = 0;
        break;
    case FUZZ_ACL6_OP_READD:
        if (gone == 0)
            return;
        add((size_t)nth(a % gone, 0));
        break;
    case FUZZ_ACL6_OP_ADD:
        if (m.nall == 0 || m.nall == MAXALL)
            return;
        derive(&m.all[a % m.nall], NEW_ID + (uint32_t)m.nall, a, b, c);
        add(m.nall - 1);
        break;
    case FUZZ_ACL6_OP_ADD_DUP: /* refused, whatever else it holds */
        if (n == 0 || m.nall == MAXALL)
            return;
        i = nth(a % n, 1);
        derive(&m.all[i], m.all[i].id, b, c, 129)->dport_lo = 0;
        CHECK(add(m.nall - 1) == OC_ERR_INVALID_PARAM);
        break;
    case FUZZ_ACL6_OP_SYNC:
        CHECK(oc__acl6_sync(m.acl) == OC_OK);
        break;
    default: { /* RELOAD */
        static oc_acl6_rule_t cur[MAXALL];
        size_t k = 0;
        for (size_t j = 0; j < m.nall; j++)
            if (m.live[j])
                cur[k++] = m.all[j];
        load(cur, k, 0);
        break;
    }
    }
    check();
}

/* ----------------------------------------------------------- the input */

/* the text's rules into all[]; @return lines that did not parse */
static size_t parse(const char *t, size_t len)
{
    size_t bad = 0;
    const char *p = t, *e = t + len;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t l = (size_t)((nl ? nl : e) - p);
        char *line = malloc(l + 1), why[256] = "";
        oc_dp_rule_t d;
        CHECK(line != NULL);
        memcpy(line, p, l);
        line[l] = '\0';
        p = nl ? nl + 1 : e;
        if (line[strspn(line, " \t\r")] == '\0') { /* blank */
            free(line);
            continue;
        }
        if (oc__dp_rule_parse(line, &d, why, sizeof(why)) != 0) {
            CHECK(why[0] != '\0');
            bad++;
        } else {
            uint8_t fam = oc__dp_rule_fam(&d);
            CHECK(fam >= OC_DP_FAM_V4 && fam <= OC_DP_FAM_BOTH);
            if (fam != OC_DP_FAM_V4 && m.nall < MAXTEXT) { /* IPv6 or both */
                oc__dp_rule_acl6(&d, (uint32_t)m.nall * 16 + 1, &m.all[m.nall]);
                CHECK(oc__acl6_rule_check(&m.all[m.nall], NULL) == OC_OK);
                m.live[m.nall++] = 0;
            }
        }
        free(line);
    }
    return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t bursts[8] = {64, 1, 7, 37, 63, 65, 100, 256};
    static int registered;
    const uint8_t *nul, *ops;
    size_t tlen, bad, nops, ntext;
    int dup = 0;

    fuzz_acl6_last_valid = 0;
    if (size < 1)
        return 0;
    if (!registered) { /* one reader: this thread, online only to look up */
        oc__acl_reader_register();
        oc__acl_reader_offline();
        registered = 1;
    }
    nul = memchr(data + 1, '\0', size - 1);
    tlen = (size_t)((nul ? nul : data + size) - (data + 1));
    ops = nul ? nul + 1 : data + size;
    nops = (size_t)(data + size - ops) / FUZZ_ACL6_OP_SIZE;
    m.nall = m.nx = 0;
    m.max_rules = data[0] & FUZZ_ACL6_SMALL ? 8 : MAXALL;
    m.bs = bursts[data[0] >> 3 & 7];
    CHECK(oc__acl6_create(m.max_rules, &m.acl) == OC_OK);

    bad = parse((const char *)data + 1, tlen);
    ntext = m.nall;
    for (size_t i = 0; i < ntext; i++)
        for (size_t j = 0; j < i; j++)
            dup |= m.all[i].id == m.all[j].id;
    if (data[0] & FUZZ_ACL6_LOAD) {
        load(m.all, ntext, dup);
        if (oc__acl6_count(m.acl) == ntext) {
            memset(m.live, 1, ntext);
            fuzz_acl6_accepted += ntext;
        } else {
            CHECK(oc__acl6_count(m.acl) == 0);
        }
    }
    for (size_t i = 0; i < ntext && nlive() < ntext; i++)
        if (!m.live[i]) /* not loaded: each added instead */
            add(i);
    fuzz_acl6_last_valid = bad == 0 && ntext > 0 && nlive() == ntext;
    if (data[0] & FUZZ_ACL6_SYNC)
        CHECK(oc__acl6_sync(m.acl) == OC_OK);
    check();

    for (size_t i = 0; i < nops && i < MAXOPS; i++)
        op(ops + i * FUZZ_ACL6_OP_SIZE);
    if (nops > 0)
        check(); /* the input's keys after the last change */
    oc__acl6_destroy(m.acl);
    m.acl = NULL;
    return 0;
}
