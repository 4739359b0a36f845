/*
 * test_dp_tenant.c — offcore-dp's tenant directives
 * (src/dp/tenant/tenant_conf.c): a two-tenant config parses into what it
 * says; every mistake is refused with file:line and nothing is applied.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp/dp.h"
#include "dp/tenant/tenant_int.h"

#define BASE                                                                   \
    "threads 1\n"                                                              \
    "attach a host=h0 wire=w0\n"                                               \
    "attach b host=h1 wire=w1\n"
#define TA                                                                     \
    "tenant A vni=100 attach=a mac=02:00:00:00:00:a1 ip=10.0.0.1 "             \
    "local=192.168.0.1 local_mac=02:00:00:00:01:01 remote=192.168.0.2 "        \
    "remote_mac=02:00:00:00:01:02 rate=100 burst=20000\n"
#define TB                                                                     \
    "tenant B vni=200 attach=b mac=02:00:00:00:00:b1 ip=10.0.0.1 "             \
    "local=192.168.1.1 local_mac=02:00:00:00:02:01 remote=192.168.1.2 "        \
    "remote_mac=02:00:00:00:02:02\n"

static oc_status_t parse(const char *text, oc_dp_conf_t *c, oc_conf_errors_t *e)
{
    oc__dp_conf_defaults(c);
    memset(e, 0, sizeof(*e));
    return oc__dp_conf_parse(text, strlen(text), "t.conf", NULL, false, c, e);
}

static void test_two_tenants(void **state)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    const char *text = BASE TA TB
        "tenant_rule A ingress id=1 action=allow proto=tcp dport=80\n"
        "tenant_rule A egress id=1 action=deny dst=10.0.0.9\n"
        "conntrack flows=1000 tcp_established=3600 udp=10\n";
    (void)state;

    /* several workers: frames go to the worker owning their flow */
    assert_int_equal(parse("threads 2\nattach a host=h0 wire=w0\n" TA, &c, &e),
                     OC_OK);
    assert_int_equal(c.threads, 2);
    oc__dp_conf_free(&c);
    assert_int_equal(parse(text, &c, &e), OC_OK);
    assert_int_equal(c.tenants.ntenants, 2);
    assert_string_equal(c.tenants.t[0].name, "A");
    assert_int_equal(c.tenants.t[0].vni, 100);
    assert_int_equal(c.tenants.t[0].ip[0], 0x0a000001);
    assert_int_equal(c.tenants.t[0].mac[0][5], 0xa1);
    assert_int_equal(c.tenants.t[0].natt, 1);
    assert_int_equal(c.tenants.t[0].tun.remote_ip, 0xc0a80002);
    assert_int_equal(c.tenants.t[0].rate, 100000000 / 8);
    assert_int_equal(c.tenants.t[0].burst, 20000);
    assert_int_equal(c.tenants.t[1].rate, 0);
    assert_int_equal(c.tenants.nrules, 2);
    assert_int_equal(c.tenants.r[0].ingress, 1);
    assert_int_equal(c.tenants.r[0].r.dport_lo, 80);
    assert_int_equal(c.tenants.r[1].ingress, 0);
    assert_int_equal(c.tenants.r[1].action, OC_ACL_DENY);
    assert_int_equal(c.tenants.ct_flows, 1000);
    assert_int_equal(c.tenants.ct_to.tcp[OC_CT_TCP_ESTABLISHED], 3600);
    assert_int_equal(c.tenants.ct_to.udp_unreplied, 10);
    oc__dp_conf_free(&c);

    /* the rule of a tenant_rule is the text after its direction word,
     * wherever that word also stands in the line (a tenant named
     * "ingress1" took the rule from inside its own name once); trailing
     * comments are comments */
    assert_int_equal(
        parse("attach a host=h0 wire=w0\n"
              "tenant ingress1 vni=100 attach=a mac=02:00:00:00:00:a1 "
              "ip=10.0.0.1 local=192.168.0.1 local_mac=02:00:00:00:01:01 "
              "remote=192.168.0.2 remote_mac=02:00:00:00:01:02  # tenant\n"
              "tenant_rule ingress1 ingress id=7 action=deny dport=22 # ssh\n",
              &c, &e),
        OC_OK);
    assert_int_equal(c.tenants.nrules, 1);
    assert_int_equal(c.tenants.r[0].r.id, 7);
    assert_int_equal(c.tenants.r[0].r.dport_lo, 22);
    oc__dp_conf_free(&c);
}

/* one uplink: two tenants' attachments over one wire port, with ESP
 * between the DPUs and flow export (they combine with tenants) */
#define SHARED                                                                 \
    "threads 1\n"                                                              \
    "attach a host=h0 wire=up0\n"                                              \
    "attach b host=h1 wire=up0\n"
#define TB_UP                                                                  \
    "tenant B vni=200 attach=b mac=02:00:00:00:00:b1 ip=10.0.0.1 "             \
    "local=192.168.0.1 local_mac=02:00:00:00:01:01 remote=192.168.0.2 "        \
    "remote_mac=02:00:00:00:01:02\n"

static void test_shared_wire(void **state)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    (void)state;

    assert_int_equal(parse(SHARED TA TB_UP "esp on\nipfix 127.0.0.1:4739\n",
                           &c, &e), OC_OK);
    assert_int_equal(c.nattach, 2);
    assert_string_equal(c.attach[0].wire, c.attach[1].wire);
    assert_int_equal(c.tenants.ntenants, 2);
    assert_true(c.esp);
    assert_true(c.flows);
    oc__dp_conf_free(&c);
}

/* several attachments of one tenant: attach=, mac=, ip= lists, the i-th
 * of each the i-th attachment's; on one uplink with another tenant */
#define MULTI                                                                  \
    "threads 1\n"                                                              \
    "attach a host=h0 wire=up0\n"                                              \
    "attach a2 host=h2 wire=up0\n"                                             \
    "attach b host=h1 wire=up0\n"
#define TA2                                                                    \
    "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,02:00:00:00:00:a2 "    \
    "ip=10.0.0.1,10.0.0.2 local=192.168.0.1 local_mac=02:00:00:00:01:01 "      \
    "remote=192.168.0.2 remote_mac=02:00:00:00:01:02 rate=10\n"

static void test_multi_attach(void **state)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    (void)state;

    assert_int_equal(parse(MULTI TA2 TB_UP, &c, &e), OC_OK);
    assert_int_equal(c.tenants.ntenants, 2);
    assert_int_equal(c.tenants.t[0].natt, 2);
    assert_string_equal(c.tenants.t[0].attach[0], "a");
    assert_string_equal(c.tenants.t[0].attach[1], "a2");
    assert_int_equal(c.tenants.t[0].mac[0][5], 0xa1);
    assert_int_equal(c.tenants.t[0].mac[1][5], 0xa2);
    assert_int_equal(c.tenants.t[0].ip[0], 0x0a000001);
    assert_int_equal(c.tenants.t[0].ip[1], 0x0a000002);
    assert_int_equal(c.tenants.t[0].rate, 10000000 / 8);
    assert_int_equal(c.tenants.t[1].natt, 1);
    oc__dp_conf_free(&c);
    /* the lists may also give each attachment its own wire port */
    assert_int_equal(
        parse("attach a host=h0 wire=w0\nattach a2 host=h2 wire=w2\n" TA2, &c,
              &e), OC_OK);
    assert_int_equal(c.tenants.t[0].natt, 2);
    oc__dp_conf_free(&c);
}

static void refused(const char *text, const char *want)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    assert_int_equal(parse(text, &c, &e), OC_ERR_CONFIG);
    if (strstr(e.text, want) == NULL)
        fail_msg("want '%s' in:\n%s", want, e.text);
    assert_int_equal(c.tenants.ntenants, 0); /* nothing applied */
    oc__dp_conf_free(&c);
}

/* ip6=: one item per attachment ('-' for none), addresses joined by '+';
 * every attachment has its link-local address; flows6= */
static void test_ip6(void **state)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    static const uint8_t a1[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 1};
    static const uint8_t ll2[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0xff, 0xfe, 0, 0, 0xa2};
    (void)state;

#define TAIL6 " local=1.1.1.1 local_mac=02:00:00:00:00:01 remote=1.1.1.2 " \
              "remote_mac=02:00:00:00:00:02"
    assert_int_equal(parse(MULTI "tenant A vni=100 attach=a,a2 "
                           "mac=02:00:00:00:00:a1,02:00:00:00:00:a2 "
                           "ip=10.0.0.1,10.0.0.2 ip6=fd00::1+fd00:1::1,-" TAIL6
                           "\n" TB_UP "conntrack flows=1000 flows6=300\n",
                           &c, &e), OC_OK);
    assert_int_equal(c.tenants.t[0].ip6[0].n, 2);
    assert_memory_equal(c.tenants.t[0].ip6[0].a[0], a1, 16);
    assert_int_equal(c.tenants.t[0].ip6[1].n, 0);
    assert_memory_equal(c.tenants.t[0].ip6[1].ll, ll2, 16);
    assert_true(oc__ip6_owns(&c.tenants.t[0].ip6[1], ll2));
    assert_int_equal(c.tenants.t[0].natt, 2);
    assert_int_equal(c.tenants.ct_flows6, 300);
    /* without ip6=: link-local only */
    assert_int_equal(parse(BASE TA, &c, &e), OC_OK);
    assert_int_equal(c.tenants.t[0].ip6[0].n, 0);
    assert_int_equal(c.tenants.t[0].ip6[0].ll[0], 0xfe);

    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.2 ip6=fd00::1" TAIL6 "\n",
            "t.conf:5: tenant A: 2 attachments but 1 ip6= items");
    refused(MULTI "tenant A vni=100 attach=a,a2 ip6=fd00::1,fd00::zz\n",
            "t.conf:5: tenant A: ip6 'fd00::1,fd00::zz' is not valid");
    refused(MULTI "tenant A vni=100 attach=a ip6=ff02::1\n",
            "t.conf:5: tenant A: ip6 'ff02::1' is not valid");
    refused(MULTI "tenant A vni=100 attach=a ip6=::\n",
            "t.conf:5: tenant A: ip6 '::' is not valid");
    refused(MULTI "tenant A vni=100 attach=a ip6=fd00::1+fd00::1\n",
            "t.conf:5: tenant A: ip6 'fd00::1+fd00::1' is not valid");
    refused(MULTI "tenant A vni=100 attach=a ip6=fd00::1++fd00::2\n",
            "is not valid");
    refused(MULTI "tenant A vni=100 attach=a ip6=1::1+2::2+3::3+4::4+5::5\n",
            "is not valid");
    refused(MULTI "tenant A vni=100 attach=a ip=fd00::1\n",
            "t.conf:5: tenant A: ip= takes IPv4 addresses; IPv6 ones go in ip6=");
    /* two attachments with one address, or one's link-local as the
     * other's listed address */
    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.2 ip6=fd00::1,fd00::1" TAIL6
            "\n", "t.conf:5: tenant A: attachments a2 and a both have IPv6 "
            "address fd00::1");
    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.2 ip6=fe80::ff:fe00:a2,-"
            TAIL6 "\n", "t.conf:5: tenant A: attachments a2 and a both have "
            "IPv6 address fe80::ff:fe00:a2");
    refused(BASE TA "conntrack flows6=0\n", "t.conf:5: conntrack flows6");
#undef TAIL6
}

/* tenant rules for IPv6: src=/dst= take IPv6 prefixes (the rule then
 * applies to IPv6 only); an address-less rule applies to both; the IPv6
 * group is the first match by priority, then id */
static void test_rules6(void **state)
{
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    oc_dp_trule_t r[4];
    oc_dp_rules6_t *l = NULL, *l2;
    char why[200];
    oc_acl_key_t k = {.proto = 6, .sport = 40000, .dport = 443};
    static const uint8_t in[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 9};
    static const uint8_t out[16] = {0xfd, 0, 0, 1, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 9};
    static const uint8_t me[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 1};
    (void)state;

    assert_int_equal(oc__dp_trule_parse("id=1 prio=10 action=allow "
                                        "proto=tcp src=fd00::5/64 dport=443",
                                        &r[0], why, sizeof(why)), 0);
    assert_int_equal(r[0].six, 1);
    assert_int_equal(r[0].src6_len, 64);
    assert_int_equal(r[0].src6[15], 0); /* host bits cleared */
    assert_int_equal(r[0].dst6_len, 0);
    assert_int_equal(r[0].r.src_len, 0);
    assert_true(oc__dp_trule_v6(&r[0]));
    assert_int_equal(oc__dp_trule_parse("id=2 prio=20 action=deny proto=tcp",
                                        &r[1], why, sizeof(why)), 0);
    assert_int_equal(r[1].six, 0);
    assert_true(oc__dp_trule_v6(&r[1])); /* no address: both */
    assert_int_equal(oc__dp_trule_parse("id=3 prio=5 action=deny "
                                        "src=10.0.0.0/8", &r[2], why,
                                        sizeof(why)), 0);
    assert_false(oc__dp_trule_v6(&r[2])); /* IPv4 prefixes: IPv4 only */
    assert_int_equal(oc__dp_trule_parse("id=4 prio=10 action=deny "
                                        "dst=fd00::1", &r[3], why,
                                        sizeof(why)), 0);
    assert_int_equal(r[3].dst6_len, 128);
    /* refused: a bad prefix, one given twice, both families */
    assert_int_equal(oc__dp_trule_parse("id=5 action=allow src=fd00::/129",
                                        &r[3], why, sizeof(why)), -1);
    assert_non_null(strstr(why, "an IPv6 prefix is ADDR[/0..128]"));
    assert_int_equal(oc__dp_trule_parse("id=5 action=allow src=fd00::1 "
                                        "src=fd00::2", &r[3], why,
                                        sizeof(why)), -1);
    assert_int_equal(oc__dp_trule_parse("id=5 action=allow src=fd00::zz",
                                        &r[3], why, sizeof(why)), -1);
    assert_int_equal(oc__dp_trule_parse("id=5 action=allow src=10.0.0.1 "
                                        "dst=fd00::1", &r[3], why,
                                        sizeof(why)), -1);
    assert_non_null(strstr(why, "not both"));
    assert_int_equal(oc__dp_trule_parse("id=5 action=allow dport=99999 "
                                        "dst=fd00::1", &r[3], why,
                                        sizeof(why)), -1);
    assert_int_equal(oc__dp_trule_parse("id=4 prio=10 action=deny "
                                        "dst=fd00::1", &r[3], why,
                                        sizeof(why)), 0);

    /* the group: rule 1 (prio 10, allow from fd00::/64 to 443), rule 4
     * (prio 10, deny to fd00::1), rule 2 (prio 20, deny tcp) */
    for (int i = 0; i < 4; i++) {
        if (i == 2)
            continue;
        l2 = oc__dp_rules6_make(l, &r[i], -1);
        assert_non_null(l2);
        free(l);
        l = l2;
    }
    assert_int_equal(l->n, 3);
    assert_int_equal(l->r[0].r.id, 1); /* prio 10, id 1 first */
    assert_int_equal(l->r[1].r.id, 4);
    assert_int_equal(l->r[2].r.id, 2);
    assert_true(oc__dp_rules6_has(l, 4));
    assert_false(oc__dp_rules6_has(l, 3));
    assert_int_equal(oc__dp_group6(l, &k, in, me), 1);  /* rule 1 */
    assert_int_equal(oc__dp_group6(l, &k, out, me), 0); /* rule 4 */
    assert_int_equal(oc__dp_group6(l, &k, out, in), 0); /* rule 2 */
    k.proto = 17;
    assert_int_equal(oc__dp_group6(l, &k, out, in), -1); /* no rule */
    assert_int_equal(oc__dp_group6(NULL, &k, out, in), -1);
    l2 = oc__dp_rules6_make(l, NULL, 4);
    assert_int_equal(l2->n, 2);
    k.proto = 6;
    assert_int_equal(oc__dp_group6(l2, &k, out, me), 0); /* now rule 2 */
    free(l);
    free(l2);

    /* in the config file: file:line errors, the rule kept with its
     * prefixes */
    assert_int_equal(parse(BASE TA "tenant_rule A ingress id=1 action=allow "
                           "src=2001:db8::/32 proto=tcp dport=22\n", &c, &e),
                     OC_OK);
    assert_int_equal(c.tenants.nrules, 1);
    assert_int_equal(c.tenants.r[0].six, 1);
    assert_int_equal(c.tenants.r[0].src6_len, 32);
    assert_int_equal(c.tenants.r[0].ingress, 1);
    refused(BASE TA "tenant_rule A ingress id=1 action=allow src=2001:db8::/x\n",
            "t.conf:5: tenant_rule A: 'src=2001:db8::/x': an IPv6 prefix is");
}

static void test_errors(void **state)
{
    (void)state;
    refused("threads 2\nattach a host=h0 wire=w0 backend=dpdk-af_packet\n" TA,
            "t.conf:3: tenants with threads > 1 need backend=xdp (attach a)");
    refused("stages none\n" BASE TA, "t.conf:5: tenants need the stages");
    refused(BASE TA TA, "t.conf:5: tenant A: defined twice");
    refused(BASE TA "tenant C vni=300 attach=a mac=02:00:00:00:00:c1 ip=1.2.3.4 "
            "local=1.1.1.1 local_mac=02:00:00:00:00:01 remote=1.1.1.2 "
            "remote_mac=02:00:00:00:00:02\n",
            "t.conf:5: tenant C: attachment a already belongs to tenant A");
    refused(BASE "tenant A vni=100 attach=zz mac=02:00:00:00:00:a1 ip=10.0.0.1 "
            "local=1.1.1.1 local_mac=02:00:00:00:00:01 remote=1.1.1.2 "
            "remote_mac=02:00:00:00:00:02\n",
            "t.conf:4: tenant A: no attachment 'zz'");
    refused(BASE "tenant A vni=16777216 attach=a\n", "t.conf:4: tenant A: vni");
    refused(BASE "tenant A vni=1 attach=a mac=02:00:00:00:00\n",
            "t.conf:4: tenant A: mac");
    refused(BASE "tenant A vni=1 attach=a\n", "t.conf:4: tenant A: needs");
    refused(BASE "tenant A vni=1 colour=red\n", "unknown key 'colour'");
    refused(BASE TA "tenant_rule Z ingress id=1 action=allow\n",
            "t.conf:5: tenant_rule: no tenant 'Z'");
    refused(BASE TA "tenant_rule A sideways id=1 action=allow\n",
            "t.conf:5: tenant_rule takes");
    refused(BASE TA "tenant_rule A ingress id=1 action=allow dport=99999\n",
            "t.conf:5: tenant_rule A:");
    refused(BASE TA "tenant_rule A ingress id=1 action=allow\n"
            "tenant_rule A ingress id=1 action=deny\n",
            "t.conf:6: tenant_rule A ingress: id 1 defined twice");
    refused(BASE TA "conntrack flows=0\n", "t.conf:5: conntrack flows");
    refused(BASE TA "conntrack tcp_forever=1\n", "unknown key 'tcp_forever'");
    /* a shared wire port: every attachment on it has a tenant, VNIs differ,
     * the port's settings agree; host ports are never shared */
    refused(SHARED TA, "t.conf:3: attach b shares wire up0 with another "
            "attachment: it needs a tenant");
    refused(SHARED TA "tenant B vni=100 attach=b mac=02:00:00:00:00:b1 "
            "ip=10.0.0.1 local=192.168.0.1 local_mac=02:00:00:00:01:01 "
            "remote=192.168.0.2 remote_mac=02:00:00:00:01:02\n",
            "t.conf:5: tenant B: vni 100 is tenant A's on the same wire up0");
    refused("attach a host=h0 wire=up0\nattach b host=h1 wire=up0 xdp=generic\n"
            TA TB_UP, "t.conf:2: attach b shares wire up0 with attach a: "
            "backend=, xdp= and zero_copy= must be the same");
    refused("attach a host=h0 wire=up0\nattach b host=h0 wire=up1\n",
            "t.conf:2: attach b: an interface of it is already in attach a");
    /* several attachments: lists of one length, each item valid, no two
     * attachments with the same name, MAC or address, none another's */
#define TAIL " local=1.1.1.1 local_mac=02:00:00:00:00:01 remote=1.1.1.2 " \
             "remote_mac=02:00:00:00:00:02\n"
    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1 "
            "ip=10.0.0.1,10.0.0.2" TAIL,
            "t.conf:5: tenant A: 2 attachments but 1 MACs and 2 addresses");
    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a2 ip=10.0.0.1" TAIL,
            "t.conf:5: tenant A: 2 attachments but 2 MACs and 1 addresses");
    refused(MULTI "tenant A vni=100 attach=a,,a2\n",
            "t.conf:5: tenant A: attach 'a,,a2' is not valid");
    refused(MULTI "tenant A vni=100 attach=a, mac=x\n",
            "t.conf:5: tenant A: attach 'a,' is not valid");
    refused(MULTI "tenant A vni=100 attach=a,a2 ip=10.0.0.1,10.0.0.300\n",
            "t.conf:5: tenant A: ip '10.0.0.1,10.0.0.300' is not valid");
    refused(MULTI "tenant A vni=100 attach=a,a2,a,b,c,d,e,f,g\n",
            "t.conf:5: tenant A: attach 'a,a2,a,b,c,d,e,f,g' is not valid");
    refused(MULTI "tenant A vni=100 attach=a,a mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.2" TAIL,
            "t.conf:5: tenant A: attachments a and a have the same attachment");
    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a1 ip=10.0.0.1,10.0.0.2" TAIL,
            "t.conf:5: tenant A: attachments a and a2 have the same MAC");
    refused(MULTI "tenant A vni=100 attach=a,a2 mac=02:00:00:00:00:a1,"
            "02:00:00:00:00:a2 ip=10.0.0.1,10.0.0.1" TAIL,
            "t.conf:5: tenant A: attachments a and a2 have the same address");
    refused(MULTI TA2 "tenant B vni=200 attach=b,a2 mac=02:00:00:00:00:b1,"
            "02:00:00:00:00:b2 ip=10.0.0.1,10.0.0.2" TAIL,
            "t.conf:6: tenant B: attachment a2 already belongs to tenant A");
    refused(MULTI TA2 "tenant B vni=100 attach=b mac=02:00:00:00:00:b1 "
            "ip=10.0.0.1" TAIL,
            "t.conf:6: tenant B: vni 100 is tenant A's on the same wire up0");
    refused(MULTI TA2, "t.conf:4: attach b shares wire up0 with another "
            "attachment: it needs a tenant");
    /* a key given twice is a mistake, not "the last one counts" */
    refused(BASE "tenant A vni=1 vni=2\n", "t.conf:4: tenant A: 'vni' given twice");
    refused(BASE TA "conntrack udp=10 udp=20\n",
            "t.conf:5: conntrack: 'udp' given twice");
    refused(BASE TA "tenant_rule A ingress id=1 action=allow id=2\n",
            "t.conf:5: tenant_rule A: word 3: 'id' given twice");
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_two_tenants),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_ip6),
        cmocka_unit_test(test_rules6),
        cmocka_unit_test(test_shared_wire),
        cmocka_unit_test(test_multi_attach),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
