/*
 * test_tenant6.c — IPv6 inside tenants, the pure pieces: the IPv6
 * connection-tracking table (src/pkt/ct_track.c with oc_ct_conf_t.ipv6:
 * TCP, UDP, ICMPv6 echo pairs and related errors, extension headers,
 * fragments, full 128-bit address compare, walk, hostile lengths) and the
 * IPv6 / neighbor discovery anti-spoofing (src/pkt/tenant.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pkt/ct.h"
#include "pkt/tenant.h"
#include "pkt_bytes.h"

static const uint8_t A6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t B6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
/* B6 but in its first byte: the same low 32 bits, another address */
static const uint8_t C6[16] = {0xfc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
static const uint8_t MAC_A[6] = {0x02, 0, 0x0a, 0, 0, 0xa1};
static const uint8_t MAC_B[6] = {0x02, 0, 0x0a, 0, 0, 0xb1};


/* IPv6 header at f with next header @p nh and @p plen payload bytes */
static uint32_t ip6(uint8_t *f, uint8_t nh, const uint8_t *s, const uint8_t *d,
                    uint32_t plen)
{
    memset(f, 0, 40);
    f[0] = 0x60;
    wr16(f + 4, (uint16_t)plen);
    f[6] = nh;
    f[7] = 64;
    memcpy(f + 8, s, 16);
    memcpy(f + 24, d, 16);
    return 40 + plen;
}

enum { FIN = 1, SYN = 2, RST = 4, ACK = 16 };

static uint32_t tcp6(uint8_t *f, const uint8_t *s, const uint8_t *d,
                     uint16_t sp, uint16_t dp, uint8_t flags, uint32_t seq,
                     uint32_t ack)
{
    uint8_t *t = f + 40;
    memset(t, 0, 20);
    wr16(t, sp);
    wr16(t + 2, dp);
    wr16(t + 4, (uint16_t)(seq >> 16));
    wr16(t + 6, (uint16_t)seq);
    wr16(t + 8, (uint16_t)(ack >> 16));
    wr16(t + 10, (uint16_t)ack);
    t[12] = 5 << 4;
    t[13] = flags;
    wr16(t + 14, 65535);
    return ip6(f, 6, s, d, 20);
}

static uint32_t icmp6(uint8_t *f, const uint8_t *s, const uint8_t *d,
                      uint8_t type, uint16_t id)
{
    uint8_t *c = f + 40;
    memset(c, 0, 8);
    c[0] = type;
    wr16(c + 4, id);
    return ip6(f, 58, s, d, 8);
}

static oc_ct_t *mk6(uint32_t cap)
{
    oc_ct_conf_t c = {.capacity = cap, .ipv6 = true};
    oc_ct_t *ct;
    oc__ct_timeouts_default(&c.to);
    assert_int_equal(oc__ct_create(&c, &ct), OC_OK);
    return ct;
}

/* track an exact-size heap copy: ASan catches a read past the end */
static oc_ct_result_t trk(oc_ct_t *ct, uint16_t zone, const uint8_t *f,
                          uint32_t n, uint64_t now, bool allow)
{
    uint8_t *c = malloc(n ? n : 1);
    oc_ct_result_t r;
    oc_ct_info_t info;
    assert_non_null(c);
    memcpy(c, f, n);
    r = oc__ct_track(ct, zone, c, n, now, allow, &info);
    free(c);
    return r;
}

static void test_ct6_tcp_icmp(void **state)
{
    uint8_t f[256], e[256];
    uint32_t n, m;
    oc_ct_t *ct = mk6(64);
    (void)state;

    /* the handshake, data, the reply side never allowed to open */
    n = tcp6(f, A6, B6, 40000, 80, SYN, 100, 0);
    assert_int_equal(trk(ct, 0, f, n, 0, false), OC_CT_NO_CONN);
    assert_int_equal(trk(ct, 0, f, n, 0, true), OC_CT_NEW);
    n = tcp6(f, B6, A6, 80, 40000, SYN | ACK, 500, 101);
    assert_int_equal(trk(ct, 0, f, n, 1, false), OC_CT_EST);
    n = tcp6(f, A6, B6, 40000, 80, ACK, 101, 501);
    assert_int_equal(trk(ct, 0, f, n, 2, false), OC_CT_EST);
    /* the same ports and low address bits but another address: no flow */
    n = tcp6(f, C6, A6, 80, 40000, ACK, 501, 101);
    assert_int_equal(trk(ct, 0, f, n, 3, false), OC_CT_NO_CONN);
    /* another zone (tenant): no flow */
    n = tcp6(f, B6, A6, 80, 40000, ACK, 501, 101);
    assert_int_equal(trk(ct, 1, f, n, 3, false), OC_CT_NO_CONN);
    assert_int_equal(trk(ct, 0, f, n, 3, false), OC_CT_EST);
    /* out of window */
    n = tcp6(f, B6, A6, 80, 40000, ACK, 501 + 3000000, 101);
    assert_int_equal(trk(ct, 0, f, n, 3, false), OC_CT_INVALID);

    /* ICMPv6 echo: request opens, reply passes, a reply from the
     * requester is invalid */
    n = icmp6(f, A6, B6, 128, 7);
    assert_int_equal(trk(ct, 0, f, n, 4, true), OC_CT_NEW);
    n = icmp6(f, B6, A6, 129, 7);
    assert_int_equal(trk(ct, 0, f, n, 5, false), OC_CT_EST);
    n = icmp6(f, A6, B6, 129, 7);
    assert_int_equal(trk(ct, 0, f, n, 5, false), OC_CT_INVALID);
    /* an ICMPv6 error quoting the TCP flow is related; quoting an unknown
     * flow is not; ND is not a tracked type */
    n = tcp6(f, A6, B6, 40000, 80, ACK, 101, 501);
    m = ip6(e, 58, C6, A6, 8 + n);
    memset(e + 40, 0, 8);
    e[40] = 1; /* destination unreachable */
    memcpy(e + 48, f, n);
    assert_int_equal(trk(ct, 0, e, m, 6, false), OC_CT_RELATED);
    e[48 + 41] ^= 0x55; /* the quoted source port */
    assert_int_equal(trk(ct, 0, e, m, 6, false), OC_CT_NO_CONN);
    n = icmp6(f, A6, B6, 135, 0);
    assert_int_equal(trk(ct, 0, f, n, 6, true), OC_CT_INVALID);

    /* an IPv4 packet is no IPv6 table's: invalid, nothing created */
    f[0] = 0x45;
    assert_int_equal(trk(ct, 0, f, 40, 6, true), OC_CT_INVALID);
    assert_int_equal(oc__ct_count(ct), 2);
    oc__ct_destroy(ct);
}

static int walk_one(void *arg, const oc_ct_flow_t *fl)
{
    oc_ct_flow_t *out = arg;
    *out = *fl;
    return 0;
}

static void test_ct6_ext_frag_walk(void **state)
{
    uint8_t f[256];
    uint32_t n;
    oc_ct_flow_t fl;
    oc_ct_t *ct = mk6(16);
    (void)state;

    /* UDP behind a hop-by-hop options header */
    n = ip6(f, 0, B6, A6, 8 + 8);
    memset(f + 40, 0, 16);
    f[40] = 17; /* next: UDP; length 0 = 8 bytes */
    wr16(f + 48, 5353);
    wr16(f + 50, 53);
    wr16(f + 52, 8);
    assert_int_equal(trk(ct, 3, f, n, 0, true), OC_CT_NEW);
    assert_int_equal(oc__ct_walk(ct, 3, 0, walk_one, &fl), 1);
    assert_int_equal(fl.family, 6);
    assert_memory_equal(fl.src6, B6, 16);
    assert_memory_equal(fl.dst6, A6, 16);
    assert_int_equal(fl.sport, 5353);
    assert_int_equal(fl.dport, 53);
    assert_int_equal(fl.proto, 17);
    /* a non-first fragment: untracked; a first one: tracked */
    n = ip6(f, 44, B6, A6, 8 + 8);
    f[40] = 17;
    wr16(f + 42, 8 << 3);
    assert_int_equal(trk(ct, 3, f, n, 0, true), OC_CT_UNTRACKED);
    wr16(f + 42, 1); /* offset 0, more fragments */
    assert_int_equal(trk(ct, 3, f, n, 0, true), OC_CT_EST);
    /* an extension header past the packet: malformed */
    n = ip6(f, 0, B6, A6, 8 + 8);
    f[40] = 17;
    f[41] = 200;
    assert_int_equal(trk(ct, 3, f, n, 0, true), OC_CT_INVALID);
    /* every truncation of a SYN: invalid, never read past the end */
    n = tcp6(f, A6, B6, 1, 2, SYN, 1, 0);
    for (uint32_t len = 0; len < n; len++)
        assert_int_equal(trk(ct, 0, f, len, 0, true), OC_CT_INVALID);
    assert_int_equal(oc__ct_flush(ct, -1), 1);
    assert_true(oc__ct_mem_bytes(ct) == oc__ct_mem_for6(16));
    assert_true(oc__ct_mem_for6(16) == oc__ct_mem_for(16) + 16 * 32);
    oc__ct_destroy(ct);
}

/* Ethernet + IPv6 + ICMPv6 of @p type with @p body bytes after the
 * ICMPv6 header's first 4 bytes */
static uint32_t icmp6_frame(uint8_t *f, const uint8_t *smac, const uint8_t *s,
                            const uint8_t *d, uint8_t type, const uint8_t *body,
                            uint32_t blen)
{
    memset(f, 0, 14);
    f[0] = 0x33;
    f[1] = 0x33;
    f[5] = 1;
    memcpy(f + 6, smac, 6);
    wr16(f + 12, 0x86dd);
    ip6(f + 14, 58, s, d, 4 + blen);
    f[14 + 7] = 255;
    memset(f + 54, 0, 4);
    f[54] = type;
    memcpy(f + 58, body, blen);
    return 58 + blen;
}

static oc_spoof_t spoof6(const uint8_t *f, uint32_t n, const oc_ip6_set_t *own)
{
    oc_pkt_meta_t m;
    uint8_t *c = malloc(n);
    oc_spoof_t r;
    assert_non_null(c);
    memcpy(c, f, n);
    oc__pkt_parse(c, n, 1514, &m);
    r = oc__spoof_check6(c, n, &m, MAC_A, own);
    free(c);
    return r;
}

/* an NS / NA body: 4 reserved/flag bytes, the target, then a link-layer
 * option of @p opt (1 source, 2 target; 0 none) with @p mac */
static uint32_t nd_body(uint8_t *b, const uint8_t *tgt, uint8_t opt,
                        const uint8_t *mac)
{
    memset(b, 0, 28);
    memcpy(b + 4, tgt, 16);
    if (opt == 0)
        return 20;
    b[20] = opt;
    b[21] = 1;
    memcpy(b + 22, mac, 6);
    return 28;
}

static void test_spoof6(void **state)
{
    static const uint8_t any[16];
    uint8_t f[256], b[64];
    uint32_t n, bl;
    oc_ip6_set_t own = {.n = 1};
    (void)state;

    memcpy(own.a[0], A6, 16);
    oc__ip6_set_ll(&own, MAC_A);
    /* modified EUI-64: 02:00:0a:00:00:a1 -> fe80::aff:fe00:a1 */
    {
        static const uint8_t ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                       0, 0, 0x0a, 0xff, 0xfe, 0, 0, 0xa1};
        assert_memory_equal(own.ll, ll, 16);
        assert_true(oc__ip6_owns(&own, ll));
        assert_true(oc__ip6_owns(&own, A6));
        assert_false(oc__ip6_owns(&own, B6));
    }
    memset(b, 0, sizeof(b));
    /* echo from its own address and its link-local: fine */
    n = icmp6_frame(f, MAC_A, A6, B6, 128, b, 4);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    n = icmp6_frame(f, MAC_A, own.ll, B6, 128, b, 4);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    /* another source address, another MAC, ::: dropped */
    n = icmp6_frame(f, MAC_A, B6, A6, 128, b, 4);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_SRC_IP);
    n = icmp6_frame(f, MAC_B, A6, B6, 128, b, 4);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_SRC_MAC);
    n = icmp6_frame(f, MAC_A, any, B6, 128, b, 4);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_SRC_IP);
    /* DAD: an NS from :: (no source link-layer option) is fine; an MLDv2
     * report from :: too (RFC 3590) */
    bl = nd_body(b, A6, 0, NULL);
    n = icmp6_frame(f, MAC_A, any, B6, 135, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    memset(b, 0, 8);
    n = icmp6_frame(f, MAC_A, any, B6, 143, b, 4);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    /* NS for another's address with its own MAC: fine; with another MAC
     * in the source link-layer option: dropped */
    bl = nd_body(b, B6, 1, MAC_A);
    n = icmp6_frame(f, MAC_A, A6, B6, 135, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    bl = nd_body(b, B6, 1, MAC_B);
    n = icmp6_frame(f, MAC_A, A6, B6, 135, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    /* NA for its own address: fine; for another's (ND's gratuitous ARP):
     * dropped; its own address with another MAC as the target option:
     * dropped; an option of length 0: dropped */
    bl = nd_body(b, A6, 2, MAC_A);
    n = icmp6_frame(f, MAC_A, A6, B6, 136, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    bl = nd_body(b, own.ll, 2, MAC_A);
    n = icmp6_frame(f, MAC_A, own.ll, B6, 136, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    bl = nd_body(b, B6, 2, MAC_A);
    n = icmp6_frame(f, MAC_A, A6, B6, 136, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    bl = nd_body(b, A6, 2, MAC_B);
    n = icmp6_frame(f, MAC_A, A6, B6, 136, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    bl = nd_body(b, A6, 2, MAC_A);
    b[21] = 0;
    n = icmp6_frame(f, MAC_A, A6, B6, 136, b, bl);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    /* a truncated NA (no whole target): dropped */
    bl = nd_body(b, A6, 0, NULL);
    n = icmp6_frame(f, MAC_A, A6, B6, 136, b, 12);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    /* router advertisement, redirect: a host's never */
    memset(b, 0, sizeof(b));
    n = icmp6_frame(f, MAC_A, own.ll, B6, 134, b, 12);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    n = icmp6_frame(f, MAC_A, own.ll, B6, 137, b, 36);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_ND);
    /* router solicitation with its own MAC: fine */
    b[4] = 1;
    b[5] = 1;
    memcpy(b + 6, MAC_A, 6);
    n = icmp6_frame(f, MAC_A, own.ll, B6, 133, b, 12);
    assert_int_equal(spoof6(f, n, &own), OC_SPOOF_OK);
    /* every truncation of an NA: no read past the end (ASan) */
    bl = nd_body(b, A6, 2, MAC_A);
    n = icmp6_frame(f, MAC_A, A6, B6, 136, b, bl);
    for (uint32_t len = 0; len < n; len++)
        (void)spoof6(f, len, &own);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ct6_tcp_icmp),
        cmocka_unit_test(test_ct6_ext_frag_walk),
        cmocka_unit_test(test_spoof6),
    };
    (void)argc;
    (void)argv;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
