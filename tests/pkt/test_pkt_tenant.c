/*
 * test_pkt_tenant.c — VXLAN encap/decap (round trip, outer headers as RFC 7348
 * and RFC 791 want them, every malformed case), anti-spoofing (MAC, IPv4,
 * ARP replies and gratuitous ARP for an address not owned), the policer
 * (rate and burst over simulated time), the prepared outer headers
 * (byte for byte what a header written field by field is, every length),
 * the tunnel end's ARP responder (answers requests for its address only).
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
#include "pkt_bytes.h"

static const uint8_t MAC_A[6] = {2, 0, 0, 0, 0, 0xa};
static const uint8_t MAC_B[6] = {2, 0, 0, 0, 0, 0xb};
#define IP_A 0x0a000001u
#define IP_B 0x0a000002u


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

    o = oc__vxlan_encap(inner, n, &t, 0x123456, 0xdeadbeef);
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
    assert_int_equal(oc__vxlan_decap(o, n + 50, t.local_ip, &rx), OC_VXLAN_NOT_VXLAN);
    /* as the remote sees it: to its own address */
    assert_int_equal(oc__vxlan_decap(o, n + 50, 0xc0a80002u, &rx), OC_VXLAN_OK);
    assert_int_equal(rx.vni, 0x123456);
    assert_int_equal(rx.inner_off, 50);
    assert_int_equal(rx.inner_len, n);
    assert_int_equal(rx.src_ip, 0xc0a80001u);
    assert_memory_equal(o + rx.inner_off, inner, n);
    /* trailing Ethernet padding after the outer packet is ignored */
    assert_int_equal(oc__vxlan_decap(o, n + 60, 0, &rx), OC_VXLAN_OK);
    assert_int_equal(rx.inner_len, n);
}

/* the outer headers written field by field, checksum summed over the
 * whole header: the reference of the template */
static void outer_ref(uint8_t *o, uint32_t len, const oc_vxlan_tun_t *t,
                      uint32_t vni, uint32_t hash)
{
    uint8_t *ip = o + 14, *udp = ip + 20;
    uint32_t sum = 0;
    memset(o, 0, 50);
    memcpy(o, t->remote_mac, 6);
    memcpy(o + 6, t->local_mac, 6);
    wr16(o + 12, 0x0800);
    ip[0] = 0x45;
    wr16(ip + 2, (uint16_t)(36 + len));
    wr16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = 17;
    wr32(ip + 12, t->local_ip);
    wr32(ip + 16, t->remote_ip);
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    wr16(ip + 10, (uint16_t)~sum);
    wr16(udp, (uint16_t)(49152 + (hash & 0x3fff)));
    wr16(udp + 2, 4789);
    wr16(udp + 4, (uint16_t)(16 + len));
    o[42] = 0x08;
    wr32(o + 46, vni << 8);
}

static void test_vxlan_template(void **state)
{
    static uint8_t buf[70000];
    uint8_t ref[50];
    oc_vxlan_hdr_t h;
    oc_vxlan_tun_t t = tun();
    uint32_t addrs[][2] = {{0xc0a80001u, 0xc0a80002u},
                           {0xffffffffu, 0xfffffffeu},
                           {0, 0},
                           {0x0a000001u, 0xfe00ff01u}};
    (void)state;

    for (size_t a = 0; a < sizeof(addrs) / sizeof(addrs[0]); a++) {
        t.local_ip = addrs[a][0];
        t.remote_ip = addrs[a][1];
        for (uint32_t vni = 0; vni <= 0xffffff; vni += 0x7fff3) {
            oc__vxlan_hdr_init(&h, &t, vni);
            for (uint32_t len = 14; len <= 65535 - 36; len += 7) {
                uint32_t hash = len * 2654435761u;
                uint8_t *o = oc__vxlan_encap_hdr(buf + 256, len, &h, hash);
                outer_ref(ref, len, &t, vni, hash);
                assert_ptr_equal(o, buf + 256 - 50);
                if (memcmp(o, ref, 50) != 0)
                    fail_msg("ip %08x -> %08x vni %u len %u differs", t.local_ip,
                             t.remote_ip, vni, len);
            }
        }
    }
    /* oc__vxlan_encap is the template path too */
    assert_ptr_equal(oc__vxlan_encap(buf + 256, 100, &t, 5, 9), buf + 206);
    outer_ref(ref, 100, &t, 5, 9);
    assert_memory_equal(buf + 206, ref, 50);
}

static void test_arp_answer(void **state)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t MAC_C[6] = {2, 0, 0, 0, 0, 0xc};
    uint8_t f[64], g[64];
    uint32_t n;
    (void)state;

    /* B asks who has A (broadcast): A's tunnel end answers B */
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, IP_A);
    assert_true(oc__arp_answer(f, n, MAC_A, IP_A));
    assert_memory_equal(f, MAC_B, 6);       /* to the sender */
    assert_memory_equal(f + 6, MAC_A, 6);   /* from us */
    assert_int_equal(f[12] << 8 | f[13], 0x0806);
    assert_int_equal(f[20] << 8 | f[21], 2); /* reply */
    assert_memory_equal(f + 22, MAC_A, 6);  /* sender: us */
    assert_int_equal((uint32_t)f[28] << 24 | f[29] << 16 | f[30] << 8 | f[31],
                     IP_A);
    assert_memory_equal(f + 32, MAC_B, 6);  /* target: the asker */
    assert_int_equal((uint32_t)f[38] << 24 | f[39] << 16 | f[40] << 8 | f[41],
                     IP_B);
    /* the reply is no request: asked again, no answer */
    memcpy(g, f, n);
    assert_false(oc__arp_answer(g, n, MAC_A, IP_A));
    /* a unicast request to our MAC (the kernel's refresh), a probe from
     * 0.0.0.0 (RFC 5227), a padded frame (padding zeroed) */
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, IP_A);
    memcpy(f, MAC_A, 6);
    assert_true(oc__arp_answer(f, n, MAC_A, IP_A));
    n = arp_frame(f, 1, MAC_B, MAC_B, 0, IP_A);
    assert_true(oc__arp_answer(f, n, MAC_A, IP_A));
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, IP_A);
    memset(f + n, 0xee, 18);
    assert_true(oc__arp_answer(f, 60, MAC_A, IP_A));
    for (int i = 42; i < 60; i++)
        assert_int_equal(f[i], 0);

    /* never answered, frame untouched: a request for an address we do
     * not own */
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, 0x0a000009u);
    memcpy(g, f, n);
    assert_false(oc__arp_answer(f, n, MAC_A, IP_A));
    assert_memory_equal(f, g, n);
    /* a request to another host's MAC */
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, IP_A);
    memcpy(f, MAC_C, 6);
    assert_false(oc__arp_answer(f, n, MAC_A, IP_A));
    /* a gratuitous announcement of our address by another */
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_A, IP_A);
    assert_false(oc__arp_answer(f, n, MAC_A, IP_A));
    /* a multicast or zero sender hardware address */
    n = arp_frame(f, 1, MAC_B, bcast, IP_B, IP_A);
    assert_false(oc__arp_answer(f, n, MAC_A, IP_A));
    n = arp_frame(f, 1, MAC_B, (const uint8_t[6]){0}, IP_B, IP_A);
    assert_false(oc__arp_answer(f, n, MAC_A, IP_A));
    /* wrong hardware type, protocol, lengths; not ARP; truncated */
    for (int k = 0; k < 5; k++) {
        n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, IP_A);
        f[(int[]){15, 17, 18, 19, 13}[k]] ^= 1;
        memcpy(g, f, n);
        assert_false(oc__arp_answer(f, n, MAC_A, IP_A));
        assert_memory_equal(f, g, n);
    }
    n = arp_frame(f, 1, MAC_B, MAC_B, IP_B, IP_A);
    for (uint32_t len = 0; len < 42; len++)
        assert_false(oc__arp_answer(f, len, MAC_A, IP_A));
}

static void test_vxlan_malformed(void **state)
{
    uint8_t buf[2048], *inner = buf + 256, *o;
    oc_vxlan_tun_t t = tun();
    oc_vxlan_rx_t rx;
    uint32_t n = udp_frame(inner, MAC_A, IP_A, IP_B, 0), full = n + 50;
    (void)state;

    o = oc__vxlan_encap(inner, n, &t, 7, 1);
    /* every truncation is counted, none reads past the end (ASan) */
    for (uint32_t len = 0; len < full; len++) {
        uint8_t *c = malloc(len ? len : 1);
        memcpy(c, o, len);
        oc_vxlan_reason_t r = oc__vxlan_decap(c, len, 0, &rx);
        assert_true(r == OC_VXLAN_SHORT || r == OC_VXLAN_BAD_OUTER);
        free(c);
    }
    o[42] = 0; /* I flag clear */
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_FLAGS);
    o[42] = 0x08;
    o[14 + 6] = 0x20; /* MF */
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_OUTER);
    o[14 + 6] = 0x40;
    o[14] = 0x44; /* IHL 4 */
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_OUTER);
    o[14] = 0x45;
    /* UDP length past the IP packet */
    wr16(o + 14 + 20 + 4, (uint16_t)(n + 17));
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_OUTER);
    /* an inner frame of 10 bytes */
    wr16(o + 14 + 20 + 4, 16 + 10);
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_BAD_INNER);
    wr16(o + 14 + 20 + 4, (uint16_t)(16 + n));
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_OK);
    wr16(o + 12, 0x86dd);
    assert_int_equal(oc__vxlan_decap(o, full, 0, &rx), OC_VXLAN_NOT_VXLAN);
}

static oc_spoof_t spoof(const uint8_t *f, uint32_t n)
{
    oc_pkt_meta_t m;
    oc__pkt_parse(f, n, 1514, &m);
    return oc__spoof_check(f, n, &m, MAC_A, IP_A);
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
    oc__policer_init(&p, 1000000, 10000, t);
    for (int i = 0; i < 10; i++)
        assert_true(oc__policer_take(&p, t, 1000));
    assert_false(oc__policer_take(&p, t, 1000));
    assert_false(oc__policer_take(&p, t + 999999, 1000));
    assert_true(oc__policer_take(&p, t + 1000000, 1000));
    /* offered 4x the rate for 10 s of simulated time: ~rate passes */
    oc__policer_init(&p, 1000000, 10000, 0);
    for (uint64_t ns = 0; ns < 10 * 1000000000ull; ns += 250000)
        if (oc__policer_take(&p, ns, 1000))
            sent += 1000;
    assert_true(sent >= 10000000 && sent <= 10000000 + 10000 + 1000);
    /* a long idle gap refills to the burst, never more */
    assert_true(oc__policer_take(&p, 1000ull * 1000000000ull, 10000));
    assert_false(oc__policer_take(&p, 1000ull * 1000000000ull, 1));
    /* rate 0: unlimited */
    oc__policer_init(&p, 0, 0, 0);
    assert_true(oc__policer_take(&p, 0, 65535));
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_vxlan_roundtrip),
        cmocka_unit_test(test_vxlan_malformed),
        cmocka_unit_test(test_vxlan_template),
        cmocka_unit_test(test_arp_answer),
        cmocka_unit_test(test_spoof),
        cmocka_unit_test(test_policer),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
