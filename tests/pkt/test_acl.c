/*
 * test_acl.c — the classifier (src/pkt/acl) against its linear first-match
 * oracle: every lookup of the ClassBench acl1 and fw1 traces, randomized
 * rule sets and packets, random add/del sequences (before and after the
 * background rebuild folds them in), concurrent readers during updates,
 * and the ClassBench parsers' errors.
 *
 * argv[1]: the repository's data/classbench directory.  Single process;
 * one reader thread in the concurrency test.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "acl_test.h"
#include "pkt/acl/acl.h"

/* answer of the oracle as userdata */
static uint32_t oracle(const oc_acl_rule_t *r, size_t n, const oc_acl_key_t *k)
{
    long w = oc__acl_match_linear(r, n, k);
    return w < 0 ? OC_ACL_NO_MATCH : r[w].userdata;
}

static uint32_t burst4(void *acl, const void *keys, uint32_t n, uint32_t *out)
{
    return oc__acl_lookup_burst(acl, keys, n, out);
}

/* every key through every lookup path this CPU has and the scalar reference
 * walk, against the oracle (stride: check every stride-th key with the
 * oracle; the paths are always compared with each other) */
static void check_keys(oc_acl_t *acl, const oc_acl_rule_t *rules, size_t n,
                       const oc_acl_key_t *keys, size_t nk, size_t stride)
{
    uint32_t *b = malloc(nk * sizeof(*b));
    uint32_t *want = malloc(nk * sizeof(*want));
    size_t bad;
    assert_non_null(b);
    assert_non_null(want);
    oc__acl_reader_online();
    assert_int_equal(oc__acl_lookup_burst_scalar(acl, keys, (uint32_t)nk, b), nk);
    oc__acl_reader_offline();
    for (size_t i = 0; i < nk; i++)
        want[i] = i % stride == 0 ? oracle(rules, n, &keys[i]) : b[i];
    bad = acl_check_paths(acl, keys, sizeof(*keys), nk, burst4, b, want);
    free(b);
    free(want);
    assert_int_equal(bad, 0);
}

static void trace_family(const char *fam)
{
    char path[512], err[512];
    oc_acl_rule_t *rules;
    oc_acl_trace_t *tr;
    oc_acl_key_t *keys;
    size_t n, nt;
    oc_acl_t *acl;

    snprintf(path, sizeof(path), "%s/%s_10k.rules.gz", acl_datadir, fam);
    if (oc__acl_load_rules_file(path, &rules, &n, err, sizeof(err)) != OC_OK)
        fail_msg("%s", err);
    snprintf(path, sizeof(path), "%s/%s_10k_mix.trace.gz", acl_datadir, fam);
    if (oc__acl_load_trace_file(path, &tr, &nt, err, sizeof(err)) != OC_OK)
        fail_msg("%s", err);
    assert_int_equal(n, 10000);
    assert_int_equal(nt, 200000);
    keys = malloc(nt * sizeof(*keys));
    assert_non_null(keys);
    for (size_t i = 0; i < nt; i++)
        keys[i] = tr[i].key;
    assert_int_equal(oc__acl_create(20000, &acl), OC_OK);
    assert_int_equal(oc__acl_load(acl, rules, n), OC_OK);
    assert_int_equal(oc__acl_count(acl), n);
    check_keys(acl, rules, n, keys, nt, acl_slow ? 16 : 1);

    /* delete every 7th rule and add 300 copies (new ids, shuffled
     * priorities) live: side part and tombstones, then folded in */
    for (size_t i = 0; i < n; i += 7)
        assert_int_equal(oc__acl_del(acl, rules[i].id), OC_OK);
    {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (i % 7 != 0)
                rules[m++] = rules[i];
        for (size_t i = 0; i < 300; i++) {
            oc_acl_rule_t r = rules[acl_rnd() % m];
            r.id = 100000 + (uint32_t)i;
            r.priority = acl_rnd() % 10000;
            r.userdata = 100000 + (uint32_t)i;
            assert_int_equal(oc__acl_add(acl, &r), OC_OK);
            rules[m++] = r;
        }
        n = m;
    }
    check_keys(acl, rules, n, keys, nt, acl_slow ? 128 : 8);
    assert_int_equal(oc__acl_sync(acl), OC_OK);
    check_keys(acl, rules, n, keys, nt, acl_slow ? 128 : 8);
    oc__acl_destroy(acl);
    free(keys);
    free(tr);
    free(rules);
}

static void test_trace_acl1(void **state) { trace_family("acl1"); }
static void test_trace_fw1(void **state) { trace_family("fw1"); }

/* ---------------------------------------------------------------- random */

static const uint32_t bases[4] = {0x0a000000u, 0xc0a80000u, 0xac100000u,
                                  0x08080800u};

static void random_rule(oc_acl_rule_t *r, uint32_t id)
{
    static const uint8_t lens[] = {0, 0, 8, 16, 24, 28, 30, 31, 32, 32};
    uint32_t x = acl_rnd();
    memset(r, 0, sizeof(*r));
    r->id = id;
    r->priority = acl_rnd() % 64; /* many ties: the id decides */
    r->src_len = lens[x % 10];
    r->dst_len = lens[(x >> 4) % 10];
    r->src_ip = (bases[acl_rnd() % 4] | (acl_rnd() & 0xffff)) &
                oc__acl_prefix_mask(r->src_len);
    r->dst_ip = (bases[acl_rnd() % 4] | (acl_rnd() & 0xffff)) &
                oc__acl_prefix_mask(r->dst_len);
    switch (acl_rnd() % 4) {
    case 0: r->sport_lo = 0; r->sport_hi = 65535; break;
    case 1:
        r->sport_lo = r->sport_hi = (uint16_t)(acl_rnd() % 1100);
        break;
    case 2: r->sport_lo = 1024; r->sport_hi = 65535; break;
    default:
        r->sport_lo = (uint16_t)(acl_rnd() % 2000);
        r->sport_hi = (uint16_t)(r->sport_lo + acl_rnd() % 3000);
    }
    switch (acl_rnd() % 3) {
    case 0: r->dport_lo = 0; r->dport_hi = 65535; break;
    case 1:
        r->dport_lo = r->dport_hi = (uint16_t)(acl_rnd() % 1100);
        break;
    default:
        r->dport_lo = (uint16_t)(acl_rnd() % 2000);
        r->dport_hi = (uint16_t)(r->dport_lo + acl_rnd() % 100);
    }
    switch (acl_rnd() % 4) {
    case 0: r->proto = 0; r->proto_mask = 0; break;
    case 1: r->proto = 6; r->proto_mask = 0xff; break;
    case 2: r->proto = 17; r->proto_mask = 0xff; break;
    default:
        r->proto = (uint8_t)acl_rnd();
        r->proto_mask = (uint8_t)acl_rnd();
        break;
    }
    r->userdata = id ^ 0x5a5a;
}

static void random_key(oc_acl_key_t *k, const oc_acl_rule_t *rules, size_t n)
{
    memset(k, 0, sizeof(*k));
    if (n > 0 && acl_rnd() % 4 != 0) { /* inside (or at the edge of) a rule */
        const oc_acl_rule_t *r = &rules[acl_rnd() % n];
        k->src_ip = r->src_ip | (acl_rnd() & ~oc__acl_prefix_mask(r->src_len));
        k->dst_ip = r->dst_ip | (acl_rnd() & ~oc__acl_prefix_mask(r->dst_len));
        k->sport = acl_rnd() % 2 ? r->sport_lo : r->sport_hi;
        k->dport = (uint16_t)(r->dport_lo +
                              acl_rnd() % (r->dport_hi - r->dport_lo + 1u));
        k->proto = acl_rnd() % 2 ? r->proto : (uint8_t)acl_rnd();
    } else {
        k->src_ip = bases[acl_rnd() % 4] | (acl_rnd() & 0xffff);
        k->dst_ip = acl_rnd() % 2 ? acl_rnd()
                                  : bases[acl_rnd() % 4] | (acl_rnd() & 0xffff);
        k->sport = (uint16_t)acl_rnd();
        k->dport = (uint16_t)(acl_rnd() % 1200);
        k->proto = acl_rnd() % 2 ? 6 : (uint8_t)acl_rnd();
    }
}

static void test_random_updates(void **state)
{
    enum { MAXR = 3000, NK = 4000 };
    oc_acl_rule_t *rules = malloc(MAXR * sizeof(*rules));
    oc_acl_key_t *keys = malloc(NK * sizeof(*keys));
    size_t n = 0;
    uint32_t next_id = 1;
    oc_acl_t *acl;
    assert_non_null(rules);
    assert_non_null(keys);
    assert_int_equal(oc__acl_create(MAXR, &acl), OC_OK);

    for (int round = 0; round < (acl_slow ? 12 : 40); round++) {
        int ops = (int)(acl_rnd() % 400);
        if (round % 10 == 0) { /* a bulk load now and then */
            n = 500 + acl_rnd() % 1500;
            for (size_t i = 0; i < n; i++)
                random_rule(&rules[i], next_id++);
            assert_int_equal(oc__acl_load(acl, rules, n), OC_OK);
        }
        for (int o = 0; o < ops; o++) {
            if (n > 0 && (acl_rnd() % 2 || n == MAXR)) {
                size_t i = acl_rnd() % n;
                assert_int_equal(oc__acl_del(acl, rules[i].id), OC_OK);
                assert_int_equal(oc__acl_del(acl, rules[i].id),
                                 OC_ERR_INVALID_PARAM);
                rules[i] = rules[--n];
            } else {
                random_rule(&rules[n],
                            acl_rnd() % 3 == 0 && n > 0 ? next_id : next_id);
                next_id++;
                assert_int_equal(oc__acl_add(acl, &rules[n]), OC_OK);
                assert_int_equal(oc__acl_add(acl, &rules[n]), OC_ERR_INVALID_PARAM);
                n++;
            }
        }
        assert_int_equal(oc__acl_count(acl), n);
        for (size_t i = 0; i < NK; i++)
            random_key(&keys[i], rules, n);
        check_keys(acl, rules, n, keys, NK, 1);
        if (round % 3 == 0) {
            assert_int_equal(oc__acl_sync(acl), OC_OK);
            check_keys(acl, rules, n, keys, NK, 1);
        }
    }
    /* what oc__acl_rules lists is what is present, in priority order */
    {
        oc_acl_rule_t *out = malloc((n + 1) * sizeof(*out));
        assert_non_null(out);
        assert_int_equal(oc__acl_rules(acl, out, n + 1), n);
        for (size_t i = 1; i < n; i++)
            assert_true(oc__acl_rule_before(&out[i - 1], &out[i]));
        free(out);
    }
    oc__acl_destroy(acl);
    free(rules);
    free(keys);
}

/* ----------------------------------------------------------- concurrency */

enum { NSTABLE = 400, NCHURN = 600, CHURN_UD = 0x40000000 };

typedef struct {
    oc_acl_t *acl;
    const oc_acl_rule_t *stable, *churn;
    int stop;
    size_t lookups, errors;
} conc_t;

static void *reader_main(void *arg)
{
    conc_t *c = arg;
    oc_acl_key_t keys[64];
    uint32_t out[64];
    uint64_t r = 0x1234567;
    oc__acl_reader_register();
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < 64; i++) { /* a private generator */
            const oc_acl_rule_t *src;
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            src = (r >> 33) % 2 ? &c->stable[(r >> 40) % NSTABLE]
                                : &c->churn[(r >> 40) % NCHURN];
            keys[i].src_ip = src->src_ip | ((uint32_t)(r >> 7) & ~oc__acl_prefix_mask(src->src_len));
            keys[i].dst_ip = src->dst_ip | ((uint32_t)(r >> 17) & ~oc__acl_prefix_mask(src->dst_len));
            keys[i].sport = src->sport_lo;
            keys[i].dport = src->dport_hi;
            keys[i].proto = src->proto;
            memset(keys[i].pad, 0, sizeof(keys[i].pad));
        }
        oc__acl_lookup_burst(c->acl, keys, 64, out);
        for (int i = 0; i < 64; i++) {
            uint32_t want = oracle(c->stable, NSTABLE, &keys[i]);
            int ok;
            if (want != OC_ACL_NO_MATCH) /* stable rules always win */
                ok = out[i] == want;
            else if (out[i] == OC_ACL_NO_MATCH)
                ok = 1;
            else /* some churn rule that matches */
                ok = (out[i] & CHURN_UD) && (out[i] & ~CHURN_UD) < NCHURN &&
                     oc__acl_rule_matches(&c->churn[out[i] & ~CHURN_UD], &keys[i]);
            c->errors += !ok;
        }
        c->lookups += 64;
        oc__acl_reader_quiescent();
    }
    oc__acl_reader_unregister();
    return NULL;
}

static void test_concurrent(void **state)
{
    oc_acl_rule_t *stable = malloc(NSTABLE * sizeof(*stable));
    oc_acl_rule_t *churn = malloc(NCHURN * sizeof(*churn));
    char *in = calloc(NCHURN, 1);
    conc_t c = {0};
    pthread_t th;
    int ops = acl_slow ? 20000 : 100000;

    assert_non_null(stable);
    assert_non_null(churn);
    assert_non_null(in);
    for (uint32_t i = 0; i < NSTABLE; i++) {
        random_rule(&stable[i], i);
        stable[i].priority = i % 50;
    }
    for (uint32_t i = 0; i < NCHURN; i++) {
        random_rule(&churn[i], 10000 + i);
        churn[i].priority = 100 + i % 50;
        churn[i].userdata = CHURN_UD | i;
    }
    assert_int_equal(oc__acl_create(NSTABLE + NCHURN, &c.acl), OC_OK);
    assert_int_equal(oc__acl_load(c.acl, stable, NSTABLE), OC_OK);
    c.stable = stable;
    c.churn = churn;
    assert_int_equal(pthread_create(&th, NULL, reader_main, &c), 0);
    for (int o = 0; o < ops; o++) {
        uint32_t j = acl_rnd() % NCHURN;
        if (in[j])
            assert_int_equal(oc__acl_del(c.acl, churn[j].id), OC_OK);
        else
            assert_int_equal(oc__acl_add(c.acl, &churn[j]), OC_OK);
        in[j] ^= 1;
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    print_message("concurrent: %d updates, %zu lookups checked alongside\n",
                  ops, c.lookups);
    assert_int_equal(c.errors, 0);
    assert_true(c.lookups > 0);

    /* afterwards: exactly the oracle of what is present */
    {
        oc_acl_rule_t *all = malloc((NSTABLE + NCHURN) * sizeof(*all));
        oc_acl_key_t keys[2000];
        size_t n = 0;
        assert_non_null(all);
        memcpy(all, stable, NSTABLE * sizeof(*all));
        n = NSTABLE;
        for (uint32_t j = 0; j < NCHURN; j++)
            if (in[j])
                all[n++] = churn[j];
        for (int i = 0; i < 2000; i++)
            random_key(&keys[i], all, n);
        check_keys(c.acl, all, n, keys, 2000, 1);
        assert_int_equal(oc__acl_sync(c.acl), OC_OK);
        check_keys(c.acl, all, n, keys, 2000, 1);
        free(all);
    }
    oc__acl_destroy(c.acl);
    free(stable);
    free(churn);
    free(in);
}

/* ---------------------------------------------------------------- parser */

static void expect_rule_error(const char *text, const char *want)
{
    oc_acl_rule_t *r = NULL;
    size_t n = 0;
    char err[256] = "";
    assert_int_equal(oc__acl_parse_rules(text, strlen(text), "t.rules", &r, &n,
                                        err, sizeof(err)),
                     OC_ERR_CONFIG);
    assert_null(r);
    if (strstr(err, want) == NULL)
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_parse(void **state)
{
    const char *good =
        "@10.0.0.0/8\t192.168.1.1/32\t0 : 65535\t80 : 80\t0x06/0xFF\t0x1000/0x1000\n"
        "\n"
        "@0.0.0.0/0 1.2.3.4/30 1024 : 2048 0 : 65535 0x00/0x00\r\n";
    oc_acl_rule_t *r;
    oc_acl_trace_t *t;
    size_t n;
    char err[256];

    assert_int_equal(oc__acl_parse_rules(good, strlen(good), "g", &r, &n, err,
                                        sizeof(err)), OC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].src_ip, 0x0a000000u);
    assert_int_equal(r[0].src_len, 8);
    assert_int_equal(r[0].dst_ip, 0xc0a80101u);
    assert_int_equal(r[0].dport_lo, 80);
    assert_int_equal(r[0].proto, 6);
    assert_int_equal(r[0].proto_mask, 0xff);
    assert_int_equal(r[1].id, 1);
    assert_int_equal(r[1].priority, 1);
    assert_int_equal(r[1].dst_ip, 0x01020304u);
    assert_int_equal(r[1].sport_hi, 2048);
    free(r);

    expect_rule_error("@1.2.3.4/33 1.2.3.4/32 0 : 1 0 : 1 0x06/0xFF\n",
                      "t.rules:1: bad source prefix");
    expect_rule_error("\n@1.2.3.256/3 1.2.3.4/32 0 : 1 0 : 1 0x06/0xFF\n",
                      "t.rules:2: bad source prefix");
    expect_rule_error("@1.2.3.4/3 1.2.3.4/32 5 : 1 0 : 1 0x06/0xFF\n",
                      "lo > hi");
    expect_rule_error("@1.2.3.4/3 1.2.3.4/32 0 : 70000 0 : 1 0x06/0xFF\n",
                      "bad source port range");
    expect_rule_error("@1.2.3.4/3 1.2.3.4/32 0 : 1 0 : 1 0x106/0xFF\n",
                      "bad protocol");
    expect_rule_error("@1.2.3.4/3 1.2.3.4/32 0 : 1 0 : 1 0x06/0xFF 0x0/0x0 x\n",
                      "unexpected text");
    expect_rule_error("1.2.3.4/3 1.2.3.4/32 0 : 1 0 : 1 0x06/0xFF\n",
                      "starts with '@'");
    expect_rule_error("@1.2.3.4/3 1.2.3.4/32 0 : 1\n", "expected whitespace after the source port range");
    expect_rule_error("@1.2.3.4/3", "expected whitespace");

    {
        const char *tr = "1 2 3 4 6 0 17\n4294967295 0 65535 0 255 0 -1\n1 2 3 4 6\n";
        assert_int_equal(oc__acl_parse_trace(tr, strlen(tr), "t", &t, &n, err,
                                            sizeof(err)), OC_OK);
        assert_int_equal(n, 3);
        assert_int_equal(t[0].hint, 17);
        assert_int_equal(t[1].key.src_ip, UINT32_MAX);
        assert_int_equal(t[1].hint, -1);
        assert_int_equal(t[2].hint, -1);
        free(t);
        t = NULL;
        assert_int_equal(oc__acl_parse_trace("1 2 3 4\n", 8, "t", &t, &n, err,
                                            sizeof(err)), OC_ERR_CONFIG);
        assert_non_null(strstr(err, "t:1: a trace line has at least 5"));
        assert_int_equal(oc__acl_parse_trace("1 2 3 70000 6\n", 14, "t", &t, &n,
                                            err, sizeof(err)), OC_ERR_CONFIG);
        assert_null(t);
    }
    assert_int_equal(oc__acl_load_rules_file("/nonexistent/x.rules", &r, &n, err,
                                            sizeof(err)), OC_ERR_CONFIG);
    assert_non_null(strstr(err, "rules file /nonexistent/x.rules: No such"));
    /* the file loader's checks (util/file.h): a device is refused unread
     * (it was read until 4 GiB), a FIFO at once (it waited for a writer),
     * and a small .gz that inflates past the cap is cut there */
    assert_int_equal(oc__acl_load_rules_file("/dev/zero", &r, &n, err,
                                            sizeof(err)), OC_ERR_CONFIG);
    assert_non_null(strstr(err, "not a regular file (a character device)"));
    {
        char fifo[] = "/tmp/oc-acl-fifo-XXXXXX", path[64];
        gzFile gz;
        static char zeros[1 << 20];
        assert_non_null(mkdtemp(fifo));
        snprintf(path, sizeof(path), "%s/f", fifo);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(oc__acl_load_rules_file(path, &r, &n, err,
                                                sizeof(err)), OC_ERR_CONFIG);
        assert_non_null(strstr(err, "not a regular file (a FIFO)"));
        unlink(path);
        snprintf(path, sizeof(path), "%s/bomb.gz", fifo);
        gz = gzopen(path, "wb9");
        assert_non_null(gz);
        for (size_t i = 0; i <= OC_ACL_FILE_MAX >> 20; i++)
            assert_int_equal(gzwrite(gz, zeros, sizeof(zeros)), sizeof(zeros));
        gzclose(gz);
        assert_int_equal(oc__acl_load_rules_file(path, &r, &n, err,
                                                sizeof(err)), OC_ERR_CONFIG);
        assert_non_null(strstr(err, "larger than 64 MiB (uncompressed)"));
        unlink(path);
        rmdir(fifo);
    }
}

static void test_api_errors(void **state)
{
    oc_acl_t *acl;
    oc_acl_rule_t r, two[2];
    assert_int_equal(oc__acl_create(0, &acl), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__acl_create(2, &acl), OC_OK);
    random_rule(&r, 1);
    r.sport_lo = 9;
    r.sport_hi = 8;
    assert_int_equal(oc__acl_add(acl, &r), OC_ERR_INVALID_PARAM);
    random_rule(&r, 1);
    r.userdata = OC_ACL_NO_MATCH;
    assert_int_equal(oc__acl_add(acl, &r), OC_ERR_INVALID_PARAM);
    random_rule(&r, 1);
    assert_int_equal(oc__acl_add(acl, &r), OC_OK);
    r.id = 2;
    assert_int_equal(oc__acl_add(acl, &r), OC_OK);
    r.id = 3;
    assert_int_equal(oc__acl_add(acl, &r), OC_ERR_NO_MEMORY); /* full */
    assert_int_equal(oc__acl_del(acl, 3), OC_ERR_INVALID_PARAM);
    /* load is all or nothing */
    random_rule(&two[0], 7);
    two[1] = two[0];
    assert_int_equal(oc__acl_load(acl, two, 2), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__acl_count(acl), 2);
    assert_int_equal(oc__acl_load(acl, two, 3), OC_ERR_NO_MEMORY);
    assert_int_equal(oc__acl_count(acl), 2);
    oc__acl_destroy(acl);
    oc__acl_destroy(NULL);
    /* lookup paths: unknown names are refused, by the call and by the
     * environment variable (oc__acl_create fails: a typo is never a silent
     * fall-back to another path) */
    assert_int_equal(oc__acl_set_lookup_path("avx9"), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__acl_set_lookup_path("scalar"), OC_OK);
    assert_string_equal(oc__acl_lookup_method(), "scalar");
    setenv("OC_ACL_PATH", "avx9", 1);
    assert_int_equal(oc__acl_create(2, &acl), OC_ERR_CONFIG);
    setenv("OC_ACL_PATH", "auto", 1);
    assert_int_equal(oc__acl_create(2, &acl), OC_OK);
    assert_string_not_equal(oc__acl_lookup_method(), "avx512-leaf");
    oc__acl_destroy(acl);
    unsetenv("OC_ACL_PATH");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_random_updates),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_trace_acl1),
        cmocka_unit_test(test_trace_fw1),
    };
    /* the main thread looks up too: online only inside its lookups */
    acl_test_init(argc, argv, 88172645463325252ull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
