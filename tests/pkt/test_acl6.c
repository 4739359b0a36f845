/*
 * test_acl6.c — the IPv6 classifier (src/pkt/acl/acl6.c) against its
 * linear first-match oracle on every lookup path this CPU has: random rule
 * sets whose prefixes sit on the edges (/0 /1 /31 /32 /33 /63 /64 /65
 * /127 /128 and random lengths, nested around a few base addresses), keys
 * on both sides of every edge, random add/del sequences (in place, and
 * the ones that reassign every code), the API's errors, and ClassBench
 * acl1 and fw1 with their addresses mapped into 2001:db8:a::/(32+L),
 * where the answers must also equal the IPv4 classifier's.
 *
 * argv[1]: the repository's data/classbench directory.  Single process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acl_test.h"
#include "pkt/acl/acl6.h"

static uint32_t burst6(void *acl, const void *keys, uint32_t n, uint32_t *out)
{
    return oc__acl6_lookup_burst(acl, keys, n, out);
}

static uint32_t oracle(const oc_acl6_rule_t *r, size_t n,
                       const oc_acl6_key_t *k)
{
    long w = oc__acl6_match_linear(r, n, k);
    return w < 0 ? OC_ACL_NO_MATCH : r[w].userdata;
}

/* every key through every path and the scalar walk; every stride-th key
 * against the oracle, or against @p want4 (the IPv4 answers) if given */
static void check_keys(oc_acl6_t *acl, const oc_acl6_rule_t *rules, size_t n,
                       const oc_acl6_key_t *keys, size_t nk, size_t stride,
                       const uint32_t *want4)
{
    uint32_t *b = malloc(nk * sizeof(*b));
    uint32_t *want = malloc(nk * sizeof(*want));
    size_t bad = 0;
    assert_non_null(b);
    assert_non_null(want);
    oc__acl_reader_online();
    assert_int_equal(oc__acl6_lookup_burst_scalar(acl, keys, (uint32_t)nk, b),
                     nk);
    oc__acl_reader_offline();
    for (size_t i = 0; i < nk; i++)
        want[i] = want4 ? want4[i]
                  : i % stride == 0 ? oracle(rules, n, &keys[i]) : b[i];
    for (size_t i = 0; want4 && i < nk; i += stride)
        if (oracle(rules, n, &keys[i]) != want4[i] && bad++ < 5)
            print_error("key %zu: IPv4 answer %u, IPv6 oracle %u\n", i,
                        want4[i], oracle(rules, n, &keys[i]));
    bad += acl_check_paths(acl, keys, sizeof(*keys), nk, burst6, b, want);
    free(b);
    free(want);
    assert_int_equal(bad, 0);
}

/* ------------------------------------------------------ random edges */

#define NBASE 6
static uint32_t base[NBASE][4];
static const uint8_t edge[] = {0, 1, 2, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128};

static void set_bases(void)
{
    for (int b = 0; b < NBASE; b++)
        for (int w = 0; w < 4; w++)
            base[b][w] = acl_rnd() ^ acl_rnd() << 16;
    base[1][0] = base[0][0]; /* bases that share long prefixes */
    base[1][1] = base[0][1];
    memcpy(base[2], base[0], sizeof(base[0]));
    base[2][3] ^= 1;
    base[3][0] = 0;          /* the ends of the space */
    memset(base[4], 0xff, sizeof(base[4]));
}

static void flip(uint32_t a[4], unsigned bit) /* bit 0 = most significant */
{
    a[bit / 32] ^= 1u << (31 - bit % 32);
}

static void rand_prefix(uint32_t a[4], uint8_t *len)
{
    memcpy(a, base[acl_rnd() % NBASE], 16);
    /* one random length in 32 (deeper nesting than any real set; codes
     * run out past about 32 levels, which test_api_errors covers) */
    *len = acl_rnd() % 32 == 0 ? (uint8_t)(acl_rnd() % 129)
                               : edge[acl_rnd() % sizeof(edge)];
    if (*len > 0 && acl_rnd() % 3 == 0)
        flip(a, acl_rnd() % *len);        /* a sibling of the base's prefix */
    for (unsigned b = *len; b < 128; b++) /* junk past the length */
        if (acl_rnd() % 2)
            flip(a, b);
}

static void rand_rule(oc_acl6_rule_t *r, uint32_t id)
{
    memset(r, 0, sizeof(*r));
    r->id = id;
    r->priority = acl_rnd() % 64;
    rand_prefix(r->src, &r->src_len);
    rand_prefix(r->dst, &r->dst_len);
    if (acl_rnd() % 2) {
        r->sport_hi = 65535;
    } else {
        r->sport_lo = (uint16_t)(acl_rnd() % 2048);
        r->sport_hi = (uint16_t)(r->sport_lo + acl_rnd() % 2048);
    }
    r->dport_lo = (uint16_t)(acl_rnd() % 2 ? 0 : acl_rnd() % 100);
    r->dport_hi = (uint16_t)(r->dport_lo + acl_rnd() % 65436);
    r->proto = acl_rnd() % 2 ? 6 : 17;
    r->proto_mask = acl_rnd() % 3 ? 0xff : 0;
    r->userdata = id * 7 + 1;
}

/* keys on both sides of the rules' edges */
static void rand_key(const oc_acl6_rule_t *rules, size_t n, oc_acl6_key_t *k)
{
    const oc_acl6_rule_t *r = n ? &rules[acl_rnd() % n] : NULL;
    memset(k, 0, sizeof(*k));
    for (int f = 0; f < 2; f++) {
        uint32_t *a = f ? k->dst : k->src;
        uint8_t len = r ? (f ? r->dst_len : r->src_len) : 0;
        memcpy(a,
               r && acl_rnd() % 4 ? (f ? r->dst : r->src)
                                  : base[acl_rnd() % NBASE],
               16);
        if (len > 0 && acl_rnd() % 4 == 0)
            flip(a, len - 1); /* just outside */
        else if (len < 128 && acl_rnd() % 2)
            flip(a, len + acl_rnd() % (128 - len)); /* inside, elsewhere */
    }
    k->sport = (uint16_t)(acl_rnd() % 4096);
    k->dport = (uint16_t)(acl_rnd() % 2 ? acl_rnd() % 200 : acl_rnd());
    k->proto = acl_rnd() % 3 == 0 ? 17 : 6;
}

static void test_random_sets(void **state)
{
    (void)state;
    int rounds = acl_slow ? 4 : 20;
    for (int round = 0; round < rounds; round++) {
        size_t n = round == 0 ? 0 : 1 + acl_rnd() % (round < 10 ? 40 : 600);
        size_t nk = acl_slow ? 2000 : 8000;
        oc_acl6_rule_t *rules = malloc((n ? n : 1) * sizeof(*rules));
        oc_acl6_key_t *keys = malloc(nk * sizeof(*keys));
        oc_acl6_t *acl;
        assert_non_null(rules);
        assert_non_null(keys);
        set_bases();
        for (size_t i = 0; i < n; i++)
            rand_rule(&rules[i], (uint32_t)i * 3);
        for (size_t i = 0; i < nk; i++)
            rand_key(rules, n, &keys[i]);
        assert_int_equal(oc__acl6_create(1024, &acl), OC_OK);
        assert_int_equal(oc__acl6_load(acl, rules, n), OC_OK);
        assert_int_equal(oc__acl6_count(acl), n);
        check_keys(acl, rules, n, keys, nk, 1, NULL);
        oc__acl6_destroy(acl);
        free(rules);
        free(keys);
    }
}

/* Host rules crowded into one stretch of the code map (its 16-ary
 * searches: one level up to 16 intervals, two up to 256, more past that;
 * starts with bits past the 32 a search compares get a node below): @p
 * nh consecutive /128 hosts at @p step apart, one host far away at bit
 * @p far (it sets where the map's root cuts), every host and its
 * neighbours as keys. */
static void crowded(size_t nh, uint32_t step, unsigned far)
{
    size_t n = nh + 1, nk = 3 * n + 1000;
    oc_acl6_rule_t *rules = calloc(n, sizeof(*rules));
    oc_acl6_key_t *keys = calloc(nk, sizeof(*keys));
    oc_acl6_t *acl;
    assert_non_null(rules);
    assert_non_null(keys);
    set_bases();
    for (size_t i = 0; i < n; i++) {
        oc_acl6_rule_t *r = &rules[i];
        r->id = (uint32_t)i;
        r->priority = (uint32_t)i;
        memcpy(r->src, base[0], 16);
        r->src[3] = (base[0][3] & 0xff000000u) + (uint32_t)i * step;
        if (i == nh)
            flip(r->src, far);
        r->src_len = 128;
        r->sport_hi = r->dport_hi = 65535;
        r->userdata = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < nk; i++) {
        oc_acl6_key_t *k = &keys[i];
        memcpy(k->src, rules[i / 3 % n].src, 16);
        if (i >= 3 * n) /* between the hosts, and around them */
            k->src[3] = rules[acl_rnd() % n].src[3] +
                        acl_rnd() % (2 * step + 1) - step;
        else
            k->src[3] += (uint32_t)(i % 3) - 1;
        memcpy(k->dst, base[acl_rnd() % NBASE], 16);
        k->proto = 6;
    }
    assert_int_equal(oc__acl6_create((uint32_t)n, &acl), OC_OK);
    assert_int_equal(oc__acl6_load(acl, rules, n), OC_OK);
    check_keys(acl, rules, n, keys, nk, 1, NULL);
    oc__acl6_destroy(acl);
    free(rules);
    free(keys);
}

static void test_crowded(void **state)
{
    (void)state;
    crowded(6, 1, 96);     /* a search of up to 4 or one level */
    crowded(100, 3, 96);   /* two levels */
    crowded(600, 1, 96);   /* three */
    crowded(2000, 7, 64);  /* three, and the far host 32 bits higher */
    crowded(300, 1, 1);    /* the root cuts near the top: nodes below */
}

/* ------------------------------------------------------------ updates */

static void test_random_updates(void **state)
{
    (void)state;
    enum { CAP = 400 };
    oc_acl6_rule_t live[CAP], r;
    size_t n = 0, nk = acl_slow ? 500 : 2000;
    uint32_t next_id = 1;
    oc_acl6_key_t *keys = malloc(nk * sizeof(*keys));
    oc_acl6_t *acl;
    int steps = acl_slow ? 300 : 1500;

    assert_non_null(keys);
    set_bases();
    assert_int_equal(oc__acl6_create(CAP, &acl), OC_OK);
    for (int s = 0; s < steps; s++) {
        if (n > 0 && (n == CAP || acl_rnd() % 3 == 0)) {
            size_t i = acl_rnd() % n;
            assert_int_equal(oc__acl6_del(acl, live[i].id), OC_OK);
            live[i] = live[--n];
        } else {
            rand_rule(&r, next_id++);
            assert_int_equal(oc__acl6_add(acl, &r), OC_OK);
            live[n++] = r;
        }
        if (s % 50 == 49 || s == steps - 1) {
            for (size_t i = 0; i < nk; i++)
                rand_key(live, n, &keys[i]);
            check_keys(acl, live, n, keys, nk, 1, NULL);
            if (s % 100 == 99) { /* and once folded into the trees */
                assert_int_equal(oc__acl6_sync(acl), OC_OK);
                check_keys(acl, live, n, keys, nk, 1, NULL);
            }
        }
    }
    assert_int_equal(oc__acl6_count(acl), n);
    oc__acl6_destroy(acl);
    free(keys);
}

/* ------------------------------------------------------------- errors */

static void test_api_errors(void **state)
{
    (void)state;
    oc_acl6_rule_t r, set[2], got[4];
    oc_acl6_t *acl;
    const char *why = NULL;

    assert_int_equal(oc__acl6_create(0, &acl), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__acl6_create(OC_ACL_MAX_RULES + 1, &acl),
                     OC_ERR_INVALID_PARAM);
    oc__acl6_destroy(NULL);
    assert_int_equal(oc__acl6_create(3, &acl), OC_OK);
    memset(&r, 0, sizeof(r));
    r.sport_hi = r.dport_hi = 65535;
    r.src_len = 129;
    assert_int_equal(oc__acl6_rule_check(&r, &why), OC_ERR_INVALID_PARAM);
    assert_string_equal(why, "prefix length above 128");
    assert_int_equal(oc__acl6_add(acl, &r), OC_ERR_INVALID_PARAM);
    r.src_len = 128;
    r.userdata = OC_ACL_NO_MATCH;
    assert_int_equal(oc__acl6_add(acl, &r), OC_ERR_INVALID_PARAM);
    r.userdata = 5;
    assert_int_equal(oc__acl6_add(acl, &r), OC_OK);
    assert_int_equal(oc__acl6_add(acl, &r), OC_ERR_INVALID_PARAM); /* dup */
    assert_int_equal(oc__acl6_del(acl, 99), OC_ERR_INVALID_PARAM);
    set[0] = set[1] = r;
    assert_int_equal(oc__acl6_load(acl, set, 2), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__acl6_count(acl), 1); /* all or nothing */
    /* 40 prefixes nested in one another, each with a sibling: more than
     * 32 bits of code on the way down */
    {
        oc_acl6_rule_t deep[80];
        oc_acl6_t *big;
        assert_int_equal(oc__acl6_create(100, &big), OC_OK);
        for (int i = 0; i < 80; i++) {
            deep[i] = r;
            deep[i].id = (uint32_t)i;
            memset(deep[i].src, 0, sizeof(deep[i].src));
            deep[i].src_len = (uint8_t)(1 + i / 2);
            if (i % 2)
                flip(deep[i].src, (unsigned)(i / 2)); /* the sibling */
        }
        assert_int_equal(oc__acl6_load(big, deep, 80), OC_ERR_UNSUPPORTED);
        assert_int_equal(oc__acl6_load(big, deep, 20), OC_OK);
        for (int i = 20; i < 80; i++) {
            oc_status_t st = oc__acl6_add(big, &deep[i]);
            if (st != OC_OK) {
                assert_int_equal(st, OC_ERR_UNSUPPORTED);
                assert_int_equal(oc__acl6_count(big), (size_t)i);
                break;
            }
        }
        oc__acl6_destroy(big);
    }
    r.id = 1;
    r.priority = 0;
    assert_int_equal(oc__acl6_add(acl, &r), OC_OK);
    r.id = 2;
    assert_int_equal(oc__acl6_add(acl, &r), OC_OK);
    r.id = 3;
    assert_int_equal(oc__acl6_add(acl, &r), OC_ERR_NO_MEMORY); /* max 3 */
    assert_int_equal(oc__acl6_rules(acl, got, 4), 3);
    assert_int_equal(got[0].id, 0); /* priority, then id order */
    assert_int_equal(got[2].id, 2);
    assert_true(oc__acl6_mem_bytes(acl) > 0);
    oc__acl6_destroy(acl);
}

/* ---------------------------------------------- ClassBench, mapped */

static void map6(uint32_t ip4, uint32_t out[4], uint32_t low)
{
    out[0] = 0x20010db8u;
    out[1] = ip4;
    out[2] = low;
    out[3] = ~low;
}

static void trace_family(const char *fam)
{
    char path[512], err[512];
    oc_acl_rule_t *r4;
    oc_acl_trace_t *tr;
    oc_acl6_rule_t *r6;
    oc_acl_key_t *k4;
    oc_acl6_key_t *k6;
    uint32_t *want;
    size_t n, nt;
    oc_acl_t *acl4;
    oc_acl6_t *acl6;

    snprintf(path, sizeof(path), "%s/%s_10k.rules.gz", acl_datadir, fam);
    if (oc__acl_load_rules_file(path, &r4, &n, err, sizeof(err)) != OC_OK)
        fail_msg("%s", err);
    snprintf(path, sizeof(path), "%s/%s_10k_mix.trace.gz", acl_datadir, fam);
    if (oc__acl_load_trace_file(path, &tr, &nt, err, sizeof(err)) != OC_OK)
        fail_msg("%s", err);
    if (acl_slow)
        nt = 20000;
    r6 = malloc(n * sizeof(*r6));
    k4 = malloc(nt * sizeof(*k4));
    k6 = malloc(nt * sizeof(*k6));
    want = malloc(nt * sizeof(*want));
    assert_non_null(r6);
    assert_non_null(k4);
    assert_non_null(k6);
    assert_non_null(want);
    for (size_t i = 0; i < n; i++) {
        memset(&r6[i], 0, sizeof(r6[i]));
        r6[i].id = r4[i].id;
        r6[i].priority = r4[i].priority;
        map6(r4[i].src_ip, r6[i].src, 0);
        map6(r4[i].dst_ip, r6[i].dst, 0);
        r6[i].src_len = (uint8_t)(32 + r4[i].src_len);
        r6[i].dst_len = (uint8_t)(32 + r4[i].dst_len);
        r6[i].proto = r4[i].proto;
        r6[i].proto_mask = r4[i].proto_mask;
        r6[i].sport_lo = r4[i].sport_lo;
        r6[i].sport_hi = r4[i].sport_hi;
        r6[i].dport_lo = r4[i].dport_lo;
        r6[i].dport_hi = r4[i].dport_hi;
        r6[i].userdata = r4[i].userdata;
    }
    for (size_t i = 0; i < nt; i++) {
        k4[i] = tr[i].key;
        memset(&k6[i], 0, sizeof(k6[i]));
        map6(k4[i].src_ip, k6[i].src, acl_rnd());
        map6(k4[i].dst_ip, k6[i].dst, acl_rnd());
        k6[i].sport = k4[i].sport;
        k6[i].dport = k4[i].dport;
        k6[i].proto = k4[i].proto;
    }
    assert_int_equal(oc__acl_create((uint32_t)n, &acl4), OC_OK);
    assert_int_equal(oc__acl_load(acl4, r4, n), OC_OK);
    oc__acl_reader_online();
    oc__acl_lookup_burst_scalar(acl4, k4, (uint32_t)nt, want);
    oc__acl_reader_offline();
    assert_int_equal(oc__acl6_create((uint32_t)n, &acl6), OC_OK);
    assert_int_equal(oc__acl6_load(acl6, r6, n), OC_OK);
    check_keys(acl6, r6, n, k6, nt, acl_slow ? 997 : 97, want);
    oc__acl6_destroy(acl6);
    oc__acl_destroy(acl4);
    free(r4);
    free(r6);
    free(tr);
    free(k4);
    free(k6);
    free(want);
}

static void test_trace_acl1(void **state)
{
    (void)state;
    trace_family("acl1");
}

static void test_trace_fw1(void **state)
{
    (void)state;
    trace_family("fw1");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_random_sets),
        cmocka_unit_test(test_crowded),
        cmocka_unit_test(test_random_updates),
        cmocka_unit_test(test_trace_acl1),
        cmocka_unit_test(test_trace_fw1),
    };
    int rc;
    acl_test_init(argc, argv, 0x9e3779b97f4a7c15ull);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    oc__acl_reader_unregister();
    return rc;
}
