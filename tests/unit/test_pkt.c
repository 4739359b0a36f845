/*
 * test_pkt.c — unit tests of src/pkt (the parser, every reason and its
 * policy; the buffer pool) and of offcore-dp's rule and config parsers
 * (src/dp/conf/conf.c).  The frames come from tests/fuzz/pkt_seeds.c's
 * builders.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../fuzz/fuzz_pkt.h"
#include "dp/dp.h"
#include "pkt/pkt.h"

#define MAXF 1526

static oc_pkt_reason_t parse(const uint8_t *f, size_t n, oc_pkt_meta_t *m)
{
    /* an exact-size heap copy: ASan catches any read past the end */
    uint8_t *c = malloc(n ? n : 1);
    oc_pkt_reason_t r;
    assert_non_null(c);
    memcpy(c, f, n);
    r = oc__pkt_parse(c, (uint32_t)n, MAXF, m);
    free(c);
    return r;
}

static void test_ipv4(void **state)
{
    uint8_t f[2048];
    oc_pkt_meta_t m;
    size_t n;

    for (int vlans = 0; vlans <= 2; vlans++) {
        n = fuzz_pkt_ipv4(f, vlans, 6, 1234, 80, 0, 10);
        assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV4);
        assert_int_equal(m.vlans, vlans);
        assert_int_equal(m.l3_off, 14 + 4 * vlans);
        assert_int_equal(m.key.src_ip, 0x0a000001);
        assert_int_equal(m.key.dst_ip, 0x0a000002);
        assert_int_equal(m.key.sport, 1234);
        assert_int_equal(m.key.dport, 80);
        assert_int_equal(m.key.proto, 6);
        assert_int_equal(m.is_fragment, 0);
    }
    n = fuzz_pkt_ipv4(f, 0, 17, 53, 5353, 0, 4);
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV4);
    assert_int_equal(m.key.dport, 5353);
    n = fuzz_pkt_ipv4(f, 0, 1, 0, 0, 0, 0);
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV4);
    assert_int_equal(m.key.proto, 1);
    assert_int_equal(m.key.sport, 0);
    /* Ethernet padding after the IP packet is fine */
    n = fuzz_pkt_ipv4(f, 0, 6, 1, 2, 0, 0);
    memset(f + n, 0, 20);
    assert_int_equal(parse(f, n + 20, &m), OC_PKT_R_IPV4);
}

static void test_hash_symmetric(void **state)
{
    uint8_t f[2048], g[2048];
    oc_pkt_meta_t a, b;
    size_t n = fuzz_pkt_ipv4(f, 0, 6, 1234, 80, 0, 0);
    memcpy(g, f, n);
    /* swap addresses and ports */
    memcpy(g + 26, f + 30, 4);
    memcpy(g + 30, f + 26, 4);
    memcpy(g + 34, f + 36, 2);
    memcpy(g + 36, f + 34, 2);
    assert_int_equal(parse(f, n, &a), OC_PKT_R_IPV4);
    assert_int_equal(parse(g, n, &b), OC_PKT_R_IPV4);
    assert_int_equal(a.key.src_ip, b.key.dst_ip);
    assert_int_equal(a.hash, b.hash);
}

static void test_fragments(void **state)
{
    uint8_t f[2048];
    oc_pkt_meta_t m;
    size_t n = fuzz_pkt_ipv4(f, 0, 6, 7, 8, 0x2000, 0); /* MF, offset 0 */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV4);
    assert_int_equal(m.is_fragment, 1);
    assert_int_equal(m.key.dport, 8);
    n = fuzz_pkt_ipv4(f, 0, 6, 7, 8, 0x0005, 0); /* offset 40 */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV4_FRAG);
    assert_int_equal(m.key.sport, 0);
    assert_int_equal(m.key.dport, 0);
    assert_int_equal(m.key.proto, 6);
    assert_int_equal(oc__pkt_default_policy(OC_PKT_R_IPV4_FRAG), OC_PKT_PASS);
}

static void test_malformed(void **state)
{
    uint8_t f[2048];
    oc_pkt_meta_t m;
    size_t n;

    n = fuzz_pkt_ipv4(f, 0, 6, 1, 2, 0, 0);
    for (size_t cut = 0; cut < 14; cut++)
        assert_int_equal(parse(f, cut, &m), OC_PKT_R_RUNT);
    for (size_t cut = 14; cut < n; cut++) {
        oc_pkt_reason_t r = parse(f, cut, &m);
        assert_true(r == OC_PKT_R_BAD_IP_HDR_LEN || r == OC_PKT_R_BAD_IP_TOTAL_LEN);
    }
    f[14] = 0x44; /* IHL 4 */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_IP_HDR_LEN);
    f[14] = 0x4f; /* IHL 15: 60 bytes, past the packet */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_IP_HDR_LEN);
    f[14] = 0x65;
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_IP_VERSION);
    f[14] = 0x45;
    f[17] = (uint8_t)(n - 14 + 1); /* total length one past the frame */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_IP_TOTAL_LEN);
    f[17] = (uint8_t)(n - 14);
    f[14 + 32] = 4 << 4; /* TCP data offset 4 */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_L4);
    f[14 + 32] = 15 << 4; /* 60 bytes, past the segment */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_L4);
    n = fuzz_pkt_ipv4(f, 0, 17, 1, 2, 0, 0);
    f[14 + 25] = 7; /* UDP length 7 */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_L4);
    /* three VLAN tags */
    n = fuzz_pkt_ipv4(f, 2, 6, 1, 2, 0, 0);
    memmove(f + 16, f + 12, n - 12);
    f[12] = 0x81, f[13] = 0, f[14] = 0, f[15] = 1;
    assert_int_equal(parse(f, n + 4, &m), OC_PKT_R_VLAN_DEPTH);
    /* a VLAN tag cut short */
    n = fuzz_pkt_ipv4(f, 1, 6, 1, 2, 0, 0);
    assert_int_equal(parse(f, 16, &m), OC_PKT_R_RUNT);
    /* unknown ethertype, oversized */
    f[12] = 0x88, f[13] = 0xcc;
    assert_int_equal(parse(f, 60, &m), OC_PKT_R_UNKNOWN_ETHERTYPE);
    memset(f, 0, sizeof(f));
    assert_int_equal(parse(f, MAXF + 1, &m), OC_PKT_R_OVERSIZED);
    for (int r = OC_PKT_R_RUNT; r < OC_PKT_R_MAX; r++)
        assert_int_equal(oc__pkt_default_policy(r), OC_PKT_DROP);
}

static void test_ipv6_arp(void **state)
{
    uint8_t f[2048];
    oc_pkt_meta_t m;
    size_t n;

    n = fuzz_pkt_ipv6(f, 0, 6, 443);
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV6);
    n = fuzz_pkt_ipv6(f, 3, 17, 53);
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV6);
    assert_int_equal(parse(f, n - 1, &m), OC_PKT_R_BAD_IP_TOTAL_LEN);
    f[14 + 40 + 1] = 200; /* extension header longer than the packet */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_IPV6_EXT);
    n = fuzz_pkt_ipv6(f, 0, 17, 53);
    f[14 + 40 + 5] = 100; /* UDP length past the packet */
    assert_int_equal(parse(f, n, &m), OC_PKT_R_BAD_L4);
    n = fuzz_pkt_arp(f);
    assert_int_equal(parse(f, n, &m), OC_PKT_R_ARP);
    for (int r = 0; r < OC_PKT_R_MAX; r++)
        assert_int_equal(oc__pkt_reason_from_name(oc__pkt_reason_name(r)), r);
    assert_int_equal(oc__pkt_reason_from_name("nope"), -1);
}

static void test_pool(void **state)
{
    oc_pkt_pool_t *p;
    oc_pkt_t *a[64];

    assert_int_equal(oc__pkt_pool_create(16, 1000, &p), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__pkt_pool_create(16, 2048, &p), OC_OK);
    assert_int_equal(oc__pkt_pool_max_frame(p), 2048 - OC_PKT_HEADROOM);
    assert_int_equal(oc__pkt_alloc_bulk(p, a, 10), 10);
    assert_int_equal(oc__pkt_alloc_bulk(p, a + 10, 10), 6); /* 16 in all */
    assert_int_equal(oc__pkt_pool_avail(p), 0);
    for (int i = 0; i < 16; i++) {
        memset(a[i]->data, i, oc__pkt_pool_max_frame(p)); /* owns its bytes */
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(a[i]->data, a[j]->data);
    }
    oc__pkt_free_bulk(p, a, 16);
    assert_int_equal(oc__pkt_pool_avail(p), 16);
    oc__pkt_pool_destroy(p);
    oc__pkt_pool_destroy(NULL);
}

static void test_rule_syntax(void **state)
{
    oc_dp_rule_t r;
    char why[160], out[256];
    static const char *const bad[] = {
        "action=deny",                     /* no id */
        "id=1",                            /* no action */
        "id=1 action=maybe",
        "id=1 action=deny dport=70000",
        "id=1 action=deny dport=9-8",
        "id=1 action=deny src=10.0.0.0/33",
        "id=1 action=deny src=10.0.0",
        "id=1 action=deny proto=300",
        "id=1 action=deny id=2",
        "id=1 action=deny colour=blue",
        "id=1 action=deny dport",
        "id=-1 action=deny",
        "id=4294967296 action=deny",
    };
    assert_int_equal(oc__dp_rule_parse("id=7 action=deny proto=tcp dport=80",
                                      &r, why, sizeof(why)), 0);
    assert_int_equal(r.r.id, 7);
    assert_int_equal(r.r.priority, 7); /* prio defaults to id */
    assert_int_equal(r.action, OC_ACL_DENY);
    assert_int_equal(r.r.proto, 6);
    assert_int_equal(r.r.proto_mask, 0xff);
    assert_int_equal(r.r.dport_lo, 80);
    assert_int_equal(r.r.dport_hi, 80);
    assert_int_equal(r.r.sport_lo, 0);
    assert_int_equal(r.r.sport_hi, 65535);
    assert_int_equal(r.r.src_len, 0);
    assert_int_equal(oc__dp_rule_parse("  id=8 prio=3 action=count "
                                      "src=10.1.2.3/16 dport=1000-2000  ",
                                      &r, why, sizeof(why)), 0);
    assert_int_equal(r.r.src_ip, 0x0a010000); /* host bits cleared */
    assert_int_equal(r.r.src_len, 16);
    oc__dp_rule_format(&r, out, sizeof(out));
    assert_string_equal(out, "id=8 prio=3 action=count proto=any "
                             "src=10.1.0.0/16 dst=any sport=any dport=1000-2000");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        assert_int_equal(oc__dp_rule_parse(bad[i], &r, why, sizeof(why)), -1);
        assert_true(why[0] != '\0');
    }
    /* IPv6 prefixes; the family of a rule that names no address is both */
    assert_int_equal(oc__dp_rule_parse("id=9 action=deny proto=tcp "
                                      "src=2001:db8:a::1/48 dst=::1 dport=22",
                                      &r, why, sizeof(why)), 0);
    assert_int_equal(r.fam, OC_DP_FAM_V6);
    assert_int_equal(r.src6_len, 48);
    assert_int_equal(r.dst6_len, 128);
    assert_int_equal(r.src6[5], 0x0a);
    assert_int_equal(r.src6[15], 0); /* host bits cleared */
    oc__dp_rule_format(&r, out, sizeof(out));
    assert_string_equal(out, "id=9 prio=9 action=deny proto=tcp "
                             "src=2001:db8:a::/48 dst=::1/128 sport=any dport=22");
    assert_int_equal(oc__dp_rule_parse("id=10 action=allow src=::/0", &r, why,
                                      sizeof(why)), 0);
    assert_int_equal(r.fam, OC_DP_FAM_V6);
    oc__dp_rule_format(&r, out, sizeof(out));
    assert_string_equal(out, "id=10 prio=10 action=allow proto=any "
                             "src=::/0 dst=any sport=any dport=any");
    assert_int_equal(oc__dp_rule_parse("id=11 action=allow dport=53", &r, why,
                                      sizeof(why)), 0);
    assert_int_equal(r.fam, OC_DP_FAM_BOTH);
    assert_int_equal(oc__dp_rule_parse("id=12 action=allow src=10.0.0.0/8 "
                                      "dst=fd00::/8", &r, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "one IPv4 and one IPv6"));
    assert_int_equal(oc__dp_rule_parse("id=12 action=allow src=fd00::/129",
                                      &r, why, sizeof(why)), -1);
    assert_string_equal(why, "src: expected an IPv6 ADDR[/0..128]");
    assert_int_equal(oc__dp_rule_parse("id=12 action=allow dst=fd00:::1",
                                      &r, why, sizeof(why)), -1);
}

static void test_conf(void **state)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    const char *good =
        "# a comment\n"
        "threads 2\n"
        "attach t0 host=h0 wire=w0 xdp=generic\n"
        "attach t1 host=h1 wire=w1\n"
        "rule id=1 action=deny proto=tcp dport=80\n"
        "rule id=2 action=count\n"
        "policy ipv6 drop\n"
        "default deny\n"
        "stages none\n";
    const char *bad =
        "threads 0\n"                                   /* 1 */
        "attach t0 host=h0 wire=w0\n"                   /* 2 */
        "attach t1 host=h0 wire=w1\n"                   /* 3: h0 reused */
        "rule id=1 action=deny\n"                       /* 4 */
        "rule id=1 action=allow\n"                      /* 5: dup id */
        "frobnicate yes\n"                              /* 6 */
        "policy nosuch drop\n";                         /* 7 */

    oc__dp_conf_defaults(&c);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(good, strlen(good), "good.conf", NULL,
                                      false, &c, &e), OC_OK);
    assert_int_equal(c.threads, 2);
    assert_int_equal(c.nattach, 2);
    assert_string_equal(c.attach[0].host, "h0");
    assert_int_equal(c.attach[0].xdp_mode, OC_PORT_XDP_GENERIC);
    assert_int_equal(c.nrules, 2);
    assert_int_equal(c.policy[OC_PKT_R_IPV6], OC_PKT_DROP);
    assert_int_equal(c.default_action, OC_ACL_DENY);
    assert_true(c.bare);
    oc__dp_conf_free(&c);

    oc__dp_conf_defaults(&c);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(bad, strlen(bad), "bad.conf", NULL,
                                      false, &c, &e), OC_ERR_CONFIG);
    assert_int_equal(e.count, 5);
    assert_non_null(strstr(e.text, "bad.conf:1: threads '0'"));
    assert_non_null(strstr(e.text, "bad.conf:3: attach t1: an interface"));
    assert_non_null(strstr(e.text, "rule id 1 defined twice"));
    assert_non_null(strstr(e.text, "bad.conf:6: unknown directive"));
    assert_non_null(strstr(e.text, "bad.conf:7: policy: unknown reason"));
    /* nothing applied */
    assert_int_equal(c.threads, 1);
    assert_int_equal(c.nattach, 0);
    assert_null(c.rules);

    /* no attachment; an interface that does not exist */
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse("threads 1\n", 10, "x", NULL, false, &c,
                                      &e), OC_ERR_CONFIG);
    assert_non_null(strstr(e.text, "no 'attach"));
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse("attach a host=ocpnone0 wire=ocpnone1\n",
                                      37, "x", NULL, true, &c, &e),
                     OC_ERR_CONFIG);
    assert_int_equal(e.count, 2);
    assert_non_null(strstr(e.text, "x:1: attach a: no interface 'ocpnone0'"));
}

static void test_rule_files(void **state)
{
    char dir[] = "/tmp/ocp-test-pkt.XXXXXX", path[128], conf[512];
    oc_dp_rule_t *rules;
    size_t n;
    oc_conf_errors_t e;
    oc_dp_conf_t c;
    FILE *f;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/cb.rules", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "@10.0.0.0/8\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x06/0xFF\t0x0000/0x0000\n"
               "@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\t0x0000/0x0000\n");
    fclose(f);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_rules_file(path, OC_ACL_COUNT, 100, &rules, &n, &e),
                     OC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(rules[1].r.id, 101);
    assert_int_equal(rules[1].r.priority, 101);
    assert_int_equal(rules[0].action, OC_ACL_COUNT);
    assert_int_equal(rules[0].r.dport_lo, 80);
    free(rules);

    /* a config that loads it twice with overlapping ids is refused */
    snprintf(conf, sizeof(conf),
             "attach a host=h wire=w\nrules cb.rules action=deny\n"
             "rules %s id_base=1\n", path);
    oc__dp_conf_defaults(&c);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(conf, strlen(conf), "c", dir, false, &c,
                                      &e), OC_ERR_CONFIG);
    assert_non_null(strstr(e.text, "rule id 1 defined twice"));
    snprintf(conf, sizeof(conf),
             "attach a host=h wire=w\nrules cb.rules action=deny\n"
             "rules %s id_base=2\nrules nosuch.rules\n", path);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(conf, strlen(conf), "c", dir, false, &c,
                                      &e), OC_ERR_CONFIG);
    assert_non_null(strstr(e.text, "c:4: rules"));
    snprintf(conf, sizeof(conf),
             "attach a host=h wire=w\nrules cb.rules action=deny\n"
             "rules %s id_base=2\n", path);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(conf, strlen(conf), "c", dir, false, &c,
                                      &e), OC_OK);
    assert_int_equal(c.nrules, 4);
    assert_int_equal(c.rules[0].action, OC_ACL_DENY);
    assert_int_equal(c.rules[2].action, OC_ACL_ALLOW);
    oc__dp_conf_free(&c);

    /* our own syntax, with an error on line 2 */
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# rules\nrule id=1 action=nope\nid=2 action=deny\n");
    fclose(f);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_rules_file(path, OC_ACL_ALLOW, 0, &rules, &n, &e),
                     OC_ERR_CONFIG);
    assert_non_null(strstr(e.text, "cb.rules:2: action: expected allow"));
    assert_null(strstr(e.text, "nope")); /* the line is never quoted */

    /* a NUL byte inside a rule line would drop the rest of it unseen (here
     * its port): the file is refused, as the config file is */
    f = fopen(path, "w");
    assert_non_null(f);
    fwrite("id=1 action=allow\0 dport=22\n", 1, 29, f);
    fclose(f);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_rules_file(path, OC_ACL_ALLOW, 0, &rules, &n, &e),
                     OC_ERR_CONFIG);
    assert_non_null(strstr(e.text, "cb.rules:1: NUL byte"));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ipv4),       cmocka_unit_test(test_hash_symmetric),
        cmocka_unit_test(test_fragments),  cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_ipv6_arp),   cmocka_unit_test(test_pool),
        cmocka_unit_test(test_rule_syntax), cmocka_unit_test(test_conf),
        cmocka_unit_test(test_rule_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
