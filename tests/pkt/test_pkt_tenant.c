/*
 * test_pkt_tenant.c — VXLAN encap/decap (round trip, outer headers as RFC 7348
 * and RFC 791 want them, every malformed case), anti-spoofing (MAC, IPv4,
 * ARP replies and gratuitous ARP for an address not owned), the policer
 * (rate and burst over simulated time).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pkt/tenant.h"

static const uint8_t MAC_A[6] = {2, 0, 0, 0, 0, 0xa};
static const uint8_t MAC_B[6] = {2, 0, 0, 0, 0, 0xb};
#define IP_A 0x0a000001u
#define IP_B 0x0a000002u

static void wr16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v)
{
    wr16(p, (uint16_t)(v >> 16));
    wr16(p + 2, (uint16_t)v);
}

/* Ethernet + IPv4 + UDP from (mac, ip) */
static uint32_t udp_frame(uint8_t *f, const uint8_t *mac, uint32_t s,
                          uint32_t d, uint32_t payload)
{
    memset(f, 0, 42 + payload);
    memcpy(f, MAC_B, 6);
    memcpy(f + 6, mac, 6);
    wr16(f + 12, 0x0800);
    f[14] = 0x45;
    wr16(f + 16, (uint16_t)(28 + payload));
    f[22] = 64;
    f[23] = 17;
    wr32(f + 26, s);
    wr32(f + 30, d);
    wr16(f + 34, 1000);
    wr16(f + 36, 2000);
    wr16(f + 38, (uint16_t)(8 + payload));
    return 42 + payload;
}

static uint32_t arp_frame(uint8_t *f, uint16_t op, const uint8_t *eth_src,
                          const uint8_t *sha, uint32_t spa, uint32_t tpa)
{
    memset(f, 0, 42);
    memset(f, 0xff, 6);
    memcpy(f + 6, eth_src, 6);
    wr16(f + 12, 0x0806);
    wr16(f + 14, 1);
    wr16(f + 16, 0x0800);
    f[18] = 6;
    f[19] = 4;
    wr16(f + 20, op);
    memcpy(f + 22, sha, 6);
    wr32(f + 28, spa);
    wr32(f + 38, tpa);
    return 42;
}

static oc_vxlan_tun_t tun(void)
{
    oc_vxlan_tun_t t = {.local_ip = 0xc0a80001u, .remote_ip = 0xc0a80002u};
    memcpy(t.local_mac, MAC_A, 6);
    memcpy(t.remote_mac, MAC_B, 6);
    return t;
}

static void test_vxlan_roundtrip(void **state)
{
    uint8_t buf[2048], *inner = buf + 256, *o;
    oc_vxlan_tun_t t = tun();
    oc_vxlan_rx_t rx;
    uint32_t n = udp_frame(inner, MAC_A, IP_A, IP_B, 100), sum = 0;
    (void)state;

    o = oc_vxlan_encap(inner, n, &t, 0x123456, 0xdeadbeef);
    assert_ptr_equal(o, inner - OC_VXLAN_OVERHEAD);
    /* outer IPv4 checksum verifies to 0xffff */
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(o[14 + i] << 8 | o[15 + i]);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    assert_int_equal(sum, 0xffff);
    assert_int_equal(o[14 + 20 + 2] << 8 | o[14 + 20 + 3], 4789);
    assert_true((o[14 + 20] << 8 | o[14 + 21]) >= 49152);
    assert_int_equal(o[42], 0x08);
    /* addressed to the remote VTEP: not for the local one */
    assert_int_equal(oc_vxlan_decap(o, n + 50, t.local_ip, &rx), OC_VXLAN_NOT_VXLAN);
    /* as the remote sees it: to its own address */
    assert_int_equal(oc_vxlan_decap(o, n + 50, 0xc0a80002u, &rx), OC_VXLAN_OK);
    assert_int_equal(rx.vni, 0x123456);
    assert_int_equal(rx.inner_off, 50);
    assert_int_equal(rx.inner_len, n);
    assert_int_equal(rx.src_ip, 0xc0a80001u);
    assert_memory_equal(o + rx.inner_off, inner, n);
    /* trailing Ethernet padding after the outer packet is ignored */
    assert_int_equal(oc_vxlan_decap(o, n + 60, 0, &rx), OC_VXLAN_OK);
    assert_int_equal(rx.inner_len, n);
}

static void test_vxlan_malformed(void **state)
{
    uint8_t buf[2048], *inner = buf + 256, *o;
    oc_vxlan_tun_t t = tun();
    oc_vxlan_rx_t rx;
    uint32_t n = udp_frame(inner, MAC_A, IP_A, IP_B, 0), full = n + 50;
    (void)state;

    o = oc_vxlan_encap(inner, n, &t, 7, 1);
    /* every truncation is counted, none reads past the end (ASan) */
    for (uint32_t len = 0; len < full; len++) {
        uint8_t *c = malloc(len ? len : 1);
        memcpy(c, o, len);
        oc_vxlan_reason_t r = oc_vxlan_decap(c, len, 0, &rx);
        assert_true(r == OC_VXLAN_SHORT || r == OC_VXLAN_BAD_OUTER);
        free(c);
    }
    o[42] = 0; /* I flag clear */
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_FLAGS);
    o[42] = 0x08;
    o[14 + 6] = 0x20; /* MF */
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_OUTER);
    o[14 + 6] = 0x40;
    o[14] = 0x44; /* IHL 4 */
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_OUTER);
    o[14] = 0x45;
    /* UDP length past the IP packet */
    wr16(o + 14 + 20 + 4, (uint16_t)(n + 17));
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_OUTER);
    /* an inner frame of 10 bytes */
    wr16(o + 14 + 20 + 4, 16 + 10);
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_INNER);
    wr16(o + 14 + 20 + 4, (uint16_t)(16 + n));
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_OK);
    wr16(o + 12, 0x86dd);
    assert_int_equal(oc_vxlan_decap(o, full, 0, &rx), OC_VXLAN_NOT_VXLAN);
}

static oc_spoof_t spoof(const uint8_t *f, uint32_t n)
{
    oc_pkt_meta_t m;
    oc_pkt_parse(f, n, 1514, &m);
    return oc_spoof_check(f, n, &m, MAC_A, IP_A);
}

static void test_spoof(void **state)
{
    uint8_t f[256];
    uint32_t n;
    (void)state;

    n = udp_frame(f, MAC_A, IP_A, IP_B, 0);
    assert_int_equal(spoof(f, n), OC_SPOOF_OK);
    n = udp_frame(f, MAC_B, IP_A, IP_B, 0);
    assert_int_equal(spoof(f, n), OC_SPOOF_SRC_MAC);
    n = udp_frame(f, MAC_A, IP_B, IP_A, 0);
    assert_int_equal(spoof(f, n), OC_SPOOF_SRC_IP);
    /* ARP request for B from A: fine; a probe (sender 0.0.0.0): fine */
    n = arp_frame(f, 1, MAC_A, MAC_A, IP_A, IP_B);
    assert_int_equal(spoof(f, n), OC_SPOOF_OK);
    n = arp_frame(f, 1, MAC_A, MAC_A, 0, IP_A);
    assert_int_equal(spoof(f, n), OC_SPOOF_OK);
    /* A answers (or announces, gratuitously) B's address: dropped */
    n = arp_frame(f, 2, MAC_A, MAC_A, IP_B, IP_B);
    assert_int_equal(spoof(f, n), OC_SPOOF_ARP);
    /* A claims B's MAC inside ARP */
    n = arp_frame(f, 2, MAC_A, MAC_B, IP_A, IP_B);
    assert_int_equal(spoof(f, n), OC_SPOOF_ARP);
    /* truncated ARP */
    n = arp_frame(f, 1, MAC_A, MAC_A, IP_A, IP_B);
    assert_int_equal(spoof(f, 30), OC_SPOOF_ARP);
    /* IPv6 is not a tenant protocol */
    wr16(f + 12, 0x86dd);
    assert_int_equal(spoof(f, n), OC_SPOOF_OTHER);
}

static void test_policer(void **state)
{
    oc_policer_t p;
    uint64_t t = 1000, sent = 0;
    (void)state;

    /* 1 MB/s, 10 kB burst: the burst goes at once, then 1000 bytes/ms */
    oc_policer_init(&p, 1000000, 10000, t);
    for (int i = 0; i < 10; i++)
        assert_true(oc_policer_take(&p, t, 1000));
    assert_false(oc_policer_take(&p, t, 1000));
    assert_false(oc_policer_take(&p, t + 999999, 1000));
    assert_true(oc_policer_take(&p, t + 1000000, 1000));
    /* offered 4x the rate for 10 s of simulated time: ~rate passes */
    oc_policer_init(&p, 1000000, 10000, 0);
    for (uint64_t ns = 0; ns < 10 * 1000000000ull; ns += 250000)
        if (oc_policer_take(&p, ns, 1000))
            sent += 1000;
    assert_true(sent >= 10000000 && sent <= 10000000 + 10000 + 1000);
    /* a long idle gap refills to the burst, never more */
    assert_true(oc_policer_take(&p, 1000ull * 1000000000ull, 10000));
    assert_false(oc_policer_take(&p, 1000ull * 1000000000ull, 1));
    /* rate 0: unlimited */
    oc_policer_init(&p, 0, 0, 0);
    assert_true(oc_policer_take(&p, 0, 65535));
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_vxlan_roundtrip),
        cmocka_unit_test(test_vxlan_malformed),
        cmocka_unit_test(test_spoof),
        cmocka_unit_test(test_policer),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
