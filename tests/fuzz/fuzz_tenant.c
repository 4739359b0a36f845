/*
 * fuzz_tenant.c — libFuzzer target over the tenant stages' packet paths:
 * VXLAN decapsulation (src/pkt/tenant.c), anti-spoofing, and connection
 * tracking (src/pkt/ct.c) over a stream of packets into one small table,
 * so that the TCP state machine and eviction see sequences, not only
 * single packets.
 *
 * Input: records of [flags][len hi][len lo][len bytes of Ethernet frame].
 * flags bit 0: the frame comes from the fabric (the ARP responder on a
 * copy, decapsulate, then track the inner IPv4 packet without opening
 * flows); else from a host (spoof
 * check, track with opening allowed, encapsulate and check the round
 * trip); bits 1-3: milliseconds x 2^k to advance the clock; bits 4-7: the
 * tenant zone.  IPv6 frames take the IPv6 anti-spoofing (neighbor
 * discovery included) and an IPv6 table of their own.  Invariants (abort on failure): decap(encap(x)) == x, the
 * flow count never exceeds the capacity, flush empties the table, an ARP
 * answer is a reply from our address to the asker, of the same length.
 *
 * Then the same input again, differentially: runs of up to 32 records
 * with the same side and zone become bursts, tracked by
 * oc__ct_track_burst() in one table and by oc__ct_track() one at a time in
 * another; results, infos and counters must be equal.
 */
#include "fuzz_tenant.h"

#include "pkt/ct.h"
#include "pkt/tenant.h"

#include <stdlib.h>
#include <string.h>

#define CAP 8 /* small: eviction and the full table are reached */

unsigned long fuzz_tenant_accepted;

static const uint8_t MAC[6] = {2, 0, 0, 0, 0, 1};
#define IP 0x0a000001u

/* tables 0-2 IPv4, 3-5 IPv6 */
static oc_ct_t *table_n(int k)
{
    static oc_ct_t *tables[6];
    oc_ct_t *ct = tables[k];
    if (ct == NULL) {
        oc_ct_conf_t c = {.capacity = CAP, .ipv6 = k >= 3};
        oc__ct_timeouts_default(&c.to);
        c.to.tcp[OC_CT_TCP_SYN_SENT] = 1; /* expiry reached within an input */
        c.to.udp_unreplied = 1;
        if (oc__ct_create(&c, &ct) != OC_OK)
            abort();
        tables[k] = ct;
    }
    return ct;
}

static oc_ct_t *table(void)
{
    return table_n(0);
}

static int one(oc_ct_t *ct, uint8_t flags, const uint8_t *f, uint32_t n,
               uint64_t now)
{
    static uint8_t buf[OC_VXLAN_OVERHEAD + 70000];
    uint16_t zone = flags >> 4;
    oc_pkt_meta_t m;
    oc_ct_info_t info;
    oc_ct_result_t r;
    int ok = 0;

    if ((flags & 1) && n <= sizeof(buf)) {
        memcpy(buf, f, n);
        if (oc__arp_answer(buf, n, MAC, IP)) {
            /* op 2, sender us, target the asker (its hardware address
             * where the request had its sender's) */
            if (n < 42 || buf[20] != 0 || buf[21] != 2 ||
                memcmp(buf + 22, MAC, 6) || memcmp(buf + 32, f + 22, 6) ||
                memcmp(buf, f + 22, 6) || memcmp(buf + 38, f + 28, 4))
                abort();
            ok = 1;
        }
    }
    if (flags & 1) {
        oc_vxlan_rx_t rx;
        if (oc__vxlan_decap(f, n, 0, &rx) != OC_VXLAN_OK)
            return ok;
        if ((uint64_t)rx.inner_off + rx.inner_len > n)
            abort();
        f += rx.inner_off;
        n = rx.inner_len;
        ok = 1;
    }
    if (oc__pkt_parse(f, n, 65535, &m) == OC_PKT_R_IPV4) {
        if (!(flags & 1))
            (void)oc__spoof_check(f, n, &m, MAC, IP);
        r = oc__ct_track(ct, zone, f + m.l3_off, n - m.l3_off, now,
                        !(flags & 1), &info);
        if ((unsigned)r >= OC_CT_NRESULTS || oc__ct_count(ct) > CAP)
            abort();
        ok |= r == OC_CT_NEW || r == OC_CT_EST || r == OC_CT_RELATED;
    } else if (m.reason == OC_PKT_R_IPV6) {
        static oc_ip6_set_t own = {.n = 1, .a = {{0xfd, [15] = 1}}};
        const uint8_t *tgt;
        int type = oc__icmp6_type(f, n, &m, &tgt);
        oc__ip6_set_ll(&own, MAC);
        if (tgt != NULL && (tgt < f || tgt + 16 > f + n))
            abort();
        if (!(flags & 1))
            ok |= oc__spoof_check6(f, n, &m, MAC, &own) == OC_SPOOF_OK &&
                  type >= 0;
        r = oc__ct_track(table_n(3), zone, f + m.l3_off, n - m.l3_off, now,
                        !(flags & 1), &info);
        if ((unsigned)r >= OC_CT_NRESULTS || oc__ct_count(table_n(3)) > CAP)
            abort();
        ok |= r == OC_CT_NEW || r == OC_CT_EST || r == OC_CT_RELATED;
    } else if (!(flags & 1)) {
        (void)oc__spoof_check(f, n, &m, MAC, IP);
    }
    if (!(flags & 1) && n >= 14 && n <= 65000) {
        oc_vxlan_tun_t t = {.local_ip = 1, .remote_ip = 2};
        oc_vxlan_rx_t rx;
        uint8_t *inner = buf + OC_VXLAN_OVERHEAD, *o;
        memcpy(inner, f, n);
        o = oc__vxlan_encap(inner, n, &t, zone, m.hash);
        if (oc__vxlan_decap(o, n + OC_VXLAN_OVERHEAD, 2, &rx) != OC_VXLAN_OK ||
            rx.vni != zone || rx.inner_len != n || memcmp(o + rx.inner_off, f, n))
            abort();
    }
    return ok;
}

/* the IPv4 or IPv6 (@p v6 set) packet a record carries (after
 * decapsulation from the fabric), or NULL */
static const uint8_t *inner_ip(uint8_t flags, const uint8_t *f, uint32_t n,
                               uint32_t *len, int *v6)
{
    oc_pkt_meta_t m;
    if (flags & 1) {
        oc_vxlan_rx_t rx;
        if (oc__vxlan_decap(f, n, 0, &rx) != OC_VXLAN_OK)
            return NULL;
        f += rx.inner_off;
        n = rx.inner_len;
    }
    oc__pkt_parse(f, n, 65535, &m);
    if (m.reason != OC_PKT_R_IPV4 && m.reason != OC_PKT_R_IPV6)
        return NULL;
    *v6 = m.reason == OC_PKT_R_IPV6;
    *len = n - m.l3_off;
    return f + m.l3_off;
}

static bool refuse_odd(void *arg, uint32_t i)
{
    (void)arg;
    return (i & 1) == 0;
}

/* a burst of @p k packets through @p bur against one by one through
 * @p one */
static void compare(oc_ct_t *one, oc_ct_t *bur, uint8_t flags,
                    const uint8_t *const *ip, const uint32_t *len, uint32_t k,
                    uint64_t now)
{
    oc_ct_result_t r1[32], rb[32];
    oc_ct_info_t i1[32], ib[32];

    for (uint32_t i = 0; i < k; i++)
        r1[i] = oc__ct_track(one, flags >> 4, ip[i], len[i], now,
                            flags & 1 ? (i & 1) == 0 : true, &i1[i]);
    oc__ct_track_burst(bur, flags >> 4, ip, len, k, now,
                      flags & 1 ? refuse_odd : NULL, NULL, rb, ib);
    for (uint32_t i = 0; i < k; i++)
        if (r1[i] != rb[i] || memcmp(&i1[i], &ib[i], sizeof(ib[i])) != 0)
            abort();
    (void)oc__ct_expire(one, now, 4);
    (void)oc__ct_expire(bur, now, 4);
}

/* oc__ct_track_burst against oc__ct_track over the input's records, each
 * family in its tables */
static void differential(const uint8_t *data, size_t size)
{
    const uint8_t *ip[2][32];
    uint32_t len[2][32];
    oc_ct_stats_t s1, sb;
    uint64_t now = 0;

    for (int t = 1; t <= 5; t++)
        if (t != 3)
            oc__ct_flush(table_n(t), -1);
    while (size >= 3) {
        uint8_t flags = data[0];
        uint32_t k[2] = {0, 0};
        now += 1ull << (((flags >> 1) & 7) * 2);
        /* a run of records of the same side and zone */
        while (size >= 3 && k[0] + k[1] < 32 &&
               (data[0] & 0xf1) == (flags & 0xf1)) {
            size_t n = (size_t)data[1] << 8 | data[2];
            const uint8_t *p;
            uint32_t l;
            int v6 = 0;
            if (n > size - 3)
                n = size - 3;
            p = inner_ip(flags, data + 3, (uint32_t)n, &l, &v6);
            if (p != NULL) {
                ip[v6][k[v6]] = p;
                len[v6][k[v6]++] = l;
            }
            data += 3 + n;
            size -= 3 + n;
        }
        compare(table_n(1), table_n(2), flags, ip[0], len[0], k[0], now);
        compare(table_n(4), table_n(5), flags, ip[1], len[1], k[1], now);
    }
    for (int t = 1; t <= 4; t += 3) {
        oc__ct_stats(table_n(t), &s1);
        oc__ct_stats(table_n(t + 1), &sb);
        if (memcmp(&s1, &sb, sizeof(s1)) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *data0 = data;
    size_t size0 = size;
    oc_ct_t *ct = table();
    uint64_t now = 0;
    int ok = 0;

    oc__ct_flush(ct, -1);
    oc__ct_flush(table_n(3), -1);
    while (size >= 3) {
        uint8_t flags = data[0];
        size_t n = (size_t)data[1] << 8 | data[2];
        if (n > size - 3)
            n = size - 3;
        now += 1ull << (((flags >> 1) & 7) * 2);
        ok |= one(ct, flags, data + 3, (uint32_t)n, now);
        (void)oc__ct_expire(ct, now, 4);
        data += 3 + n;
        size -= 3 + n;
    }
    oc__ct_flush(ct, -1);
    oc__ct_flush(table_n(3), -1);
    if (oc__ct_count(ct) != 0 || oc__ct_count(table_n(3)) != 0)
        abort();
    differential(data0, size0);
    fuzz_tenant_accepted += ok;
    return 0;
}
