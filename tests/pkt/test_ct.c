/*
 * test_ct.c — connection tracking (src/pkt/ct.c): the TCP state machine
 * with its timeouts and window checks, UDP, ICMP echo pairs and related
 * errors, tenant zones, the eviction policy, hostile lengths.  With
 * --scale: 1,000,000 distinct flows, exact count, memory at its stated
 * bound, flow 1,000,001 evicted (or refused when all are established) and
 * counted.
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

#include "pkt/ct.h"
#include "pkt_bytes.h"

#define A 0x0a000001u /* 10.0.0.1 */
#define B 0x0a000002u


/* IPv4 header at f, @p l4len bytes after it; returns total length */
static uint32_t ip4(uint8_t *f, uint8_t proto, uint32_t s, uint32_t d,
                    uint32_t l4len)
{
    memset(f, 0, 20);
    f[0] = 0x45;
    wr16(f + 2, (uint16_t)(20 + l4len));
    f[8] = 64;
    f[9] = proto;
    wr32(f + 12, s);
    wr32(f + 16, d);
    return 20 + l4len;
}

enum { FIN = 1, SYN = 2, RST = 4, ACK = 16 };

static uint32_t tcp(uint8_t *f, uint32_t s, uint32_t d, uint16_t sp,
                    uint16_t dp, uint8_t flags, uint32_t seq, uint32_t ack,
                    uint16_t win, uint32_t payload)
{
    uint8_t *t = f + 20;
    memset(t, 0, 20 + payload);
    wr16(t, sp);
    wr16(t + 2, dp);
    wr32(t + 4, seq);
    wr32(t + 8, ack);
    t[12] = 5 << 4;
    t[13] = flags;
    wr16(t + 14, win);
    return ip4(f, 6, s, d, 20 + payload);
}

static uint32_t udp(uint8_t *f, uint32_t s, uint32_t d, uint16_t sp,
                    uint16_t dp)
{
    uint8_t *u = f + 20;
    memset(u, 0, 8);
    wr16(u, sp);
    wr16(u + 2, dp);
    wr16(u + 4, 8);
    return ip4(f, 17, s, d, 8);
}

static uint32_t icmp_echo(uint8_t *f, uint32_t s, uint32_t d, uint8_t type,
                          uint16_t id)
{
    uint8_t *c = f + 20;
    memset(c, 0, 8);
    c[0] = type;
    wr16(c + 4, id);
    wr16(c + 6, 1);
    return ip4(f, 1, s, d, 8);
}

static oc_ct_t *mk(uint32_t cap)
{
    oc_ct_conf_t c = {.capacity = cap};
    oc_ct_t *ct;
    oc__ct_timeouts_default(&c.to);
    assert_int_equal(oc__ct_create(&c, &ct), OC_OK);
    return ct;
}

/* track an exact-size heap copy: ASan catches a read past the end */
static oc_ct_result_t trk(oc_ct_t *ct, uint16_t zone, const uint8_t *f,
                          uint32_t n, uint64_t now, bool allow,
                          oc_ct_info_t *info)
{
    uint8_t *c = malloc(n ? n : 1);
    oc_ct_result_t r;
    oc_ct_info_t tmp;
    assert_non_null(c);
    memcpy(c, f, n);
    r = oc__ct_track(ct, zone, c, n, now, allow, info ? info : &tmp);
    free(c);
    return r;
}

static void test_tcp_lifecycle(void **state)
{
    uint8_t f[1024];
    oc_ct_info_t in;
    oc_ct_stats_t st;
    oc_ct_t *ct = mk(16);
    uint32_t n, t = 1000;
    (void)state;

    /* a data segment before any SYN opens nothing */
    n = tcp(f, A, B, 40000, 80, ACK, 100, 1, 1000, 10);
    assert_int_equal(trk(ct, 0, f, n, t, true, NULL), OC_CT_NO_CONN);
    /* the wire side may not open (default deny) */
    n = tcp(f, A, B, 40000, 80, SYN, 100, 0, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, false, NULL), OC_CT_NO_CONN);
    assert_int_equal(oc__ct_count(ct), 0);

    assert_int_equal(trk(ct, 0, f, n, t, true, &in), OC_CT_NEW);
    assert_int_equal(in.state, OC_CT_TCP_SYN_SENT);
    /* an ACK before the SYN+ACK is invalid */
    n = tcp(f, A, B, 40000, 80, ACK, 101, 1, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, true, &in), OC_CT_INVALID);
    assert_int_equal(in.why, OC_CT_WHY_FLAGS);
    n = tcp(f, B, A, 80, 40000, SYN | ACK, 5000, 101, 2000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, false, &in), OC_CT_EST);
    assert_int_equal(in.reply, 1);
    assert_int_equal(in.state, OC_CT_TCP_SYN_RECV);
    n = tcp(f, A, B, 40000, 80, ACK, 101, 5001, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, true, &in), OC_CT_EST);
    assert_int_equal(in.state, OC_CT_TCP_ESTABLISHED);
    assert_int_equal(in.reply, 0);
    /* data both ways */
    n = tcp(f, A, B, 40000, 80, ACK, 101, 5001, 1000, 100);
    assert_int_equal(trk(ct, 0, f, n, t, true, NULL), OC_CT_EST);
    n = tcp(f, B, A, 80, 40000, ACK, 5001, 201, 2000, 500);
    assert_int_equal(trk(ct, 0, f, n, t, false, &in), OC_CT_EST);
    assert_int_equal(in.reply, 1);
    /* far outside the window: counted, state untouched */
    n = tcp(f, B, A, 80, 40000, ACK, 5001 + 1000000, 201, 2000, 10);
    assert_int_equal(trk(ct, 0, f, n, t, false, &in), OC_CT_INVALID);
    assert_int_equal(in.why, OC_CT_WHY_WINDOW);
    n = tcp(f, A, B, 40000, 80, ACK, 101 - 100000, 5501, 1000, 10);
    assert_int_equal(trk(ct, 0, f, n, t, true, &in), OC_CT_INVALID);
    oc__ct_stats(ct, &st);
    assert_int_equal(st.out_of_window, 2);
    /* established lives 5 days (432000 s) */
    n = tcp(f, A, B, 40000, 80, ACK, 201, 5501, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, t + 431999000ull, true, NULL), OC_CT_EST);
    t += 431999000ull;
    /* close: FIN, FIN, ACK -> TIME_WAIT (120 s) */
    n = tcp(f, A, B, 40000, 80, FIN | ACK, 201, 5501, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, true, &in), OC_CT_EST);
    assert_int_equal(in.state, OC_CT_TCP_FIN_WAIT);
    n = tcp(f, B, A, 80, 40000, FIN | ACK, 5501, 202, 2000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, false, &in), OC_CT_EST);
    assert_int_equal(in.state, OC_CT_TCP_LAST_ACK);
    n = tcp(f, A, B, 40000, 80, ACK, 202, 5502, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, t, true, &in), OC_CT_EST);
    assert_int_equal(in.state, OC_CT_TCP_TIME_WAIT);
    /* the reply path still works until the TIME_WAIT timeout, then stops */
    n = tcp(f, B, A, 80, 40000, ACK, 5502, 202, 2000, 0);
    assert_int_equal(trk(ct, 0, f, n, t + 119000, false, NULL), OC_CT_EST);
    assert_int_equal(trk(ct, 0, f, n, t + 119000 + 120000, false, NULL),
                     OC_CT_NO_CONN);
    assert_int_equal(oc__ct_count(ct), 0);
    oc__ct_stats(ct, &st);
    assert_int_equal(st.expired, 1);
    oc__ct_destroy(ct);
}

static void test_tcp_rst_reopen_wscale(void **state)
{
    uint8_t f[1024];
    oc_ct_info_t in;
    oc_ct_t *ct = mk(16);
    uint32_t n;
    (void)state;

    /* connection refused: RST+ACK answers the SYN -> CLOSE (10 s) */
    n = tcp(f, A, B, 40001, 81, SYN, 7, 0, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NEW);
    n = tcp(f, B, A, 81, 40001, RST | ACK, 0, 8, 0, 0);
    assert_int_equal(trk(ct, 0, f, n, 0, false, &in), OC_CT_EST);
    assert_int_equal(in.state, OC_CT_TCP_CLOSE);
    /* a new SYN on the same ports reopens it */
    n = tcp(f, A, B, 40001, 81, SYN, 900, 0, 1000, 0);
    assert_int_equal(trk(ct, 0, f, n, 1000, true, &in), OC_CT_NEW);
    assert_int_equal(oc__ct_count(ct), 1);
    /* CLOSE times out after 10 s */
    n = tcp(f, B, A, 81, 40001, RST | ACK, 0, 901, 0, 0);
    assert_int_equal(trk(ct, 0, f, n, 1000, false, NULL), OC_CT_EST);
    assert_int_equal(trk(ct, 0, f, n, 11001, false, NULL), OC_CT_NO_CONN);

    /* window scaling: both SYNs carry wscale 7; a window of 512 << 7 */
    n = tcp(f, A, B, 40002, 82, SYN, 1, 0, 65535, 0);
    f[32] = 6 << 4; /* data offset 24: one option word */
    f[40] = 3; f[41] = 3; f[42] = 7; f[43] = 1;
    wr16(f + 2, 44);
    assert_int_equal(trk(ct, 0, f, 44, 0, true, NULL), OC_CT_NEW);
    n = tcp(f, B, A, 82, 40002, SYN | ACK, 1000, 2, 65535, 0);
    f[32] = 6 << 4;
    f[40] = 3; f[41] = 3; f[42] = 7; f[43] = 1;
    wr16(f + 2, 44);
    assert_int_equal(trk(ct, 0, f, 44, 0, false, NULL), OC_CT_EST);
    n = tcp(f, A, B, 40002, 82, ACK, 2, 1001, 512, 0);
    assert_int_equal(trk(ct, 0, f, n, 0, true, &in), OC_CT_EST);
    assert_int_equal(in.state, OC_CT_TCP_ESTABLISHED);
    /* the responder may send up to 512 << 7 = 65536 bytes past the ack */
    n = tcp(f, B, A, 82, 40002, ACK, 1001 + 60000, 2, 512, 100);
    assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_EST);
    n = tcp(f, B, A, 82, 40002, ACK, 1001 + 70000, 2, 512, 100);
    assert_int_equal(trk(ct, 0, f, n, 0, false, &in), OC_CT_INVALID);
    assert_int_equal(in.why, OC_CT_WHY_WINDOW);
    oc__ct_destroy(ct);
}

static void test_udp_icmp(void **state)
{
    uint8_t f[1024], g[1024];
    oc_ct_info_t in;
    oc_ct_t *ct = mk(16);
    uint32_t n, m;
    (void)state;

    n = udp(f, A, B, 5000, 53);
    assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_NO_CONN);
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NEW);
    /* unanswered: 30 s */
    assert_int_equal(trk(ct, 0, f, n, 29000, true, NULL), OC_CT_EST);
    m = udp(g, B, A, 53, 5000);
    assert_int_equal(trk(ct, 0, g, m, 30000, false, &in), OC_CT_EST);
    assert_int_equal(in.reply, 1);
    /* answered: 120 s */
    assert_int_equal(trk(ct, 0, g, m, 149000, false, NULL), OC_CT_EST);
    assert_int_equal(trk(ct, 0, g, m, 269001, false, NULL), OC_CT_NO_CONN);

    /* ICMP echo: a reply needs its request */
    n = icmp_echo(f, B, A, 0, 77);
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NO_CONN);
    n = icmp_echo(f, A, B, 8, 77);
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NEW);
    n = icmp_echo(f, B, A, 0, 77);
    assert_int_equal(trk(ct, 0, f, n, 0, false, &in), OC_CT_EST);
    assert_int_equal(in.reply, 1);
    /* another id is another flow */
    n = icmp_echo(f, B, A, 0, 78);
    assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_NO_CONN);
    /* the requester may not send a reply on the request's flow */
    n = icmp_echo(f, A, B, 0, 77);
    assert_int_equal(trk(ct, 0, f, n, 0, true, &in), OC_CT_INVALID);
    assert_int_equal(in.why, OC_CT_WHY_ICMP);
    /* expires after 30 s */
    n = icmp_echo(f, B, A, 0, 77);
    assert_int_equal(trk(ct, 0, f, n, 30001, false, NULL), OC_CT_NO_CONN);

    /* an ICMP error quoting a tracked UDP flow is related */
    n = udp(g, A, B, 6000, 7000);
    assert_int_equal(trk(ct, 0, g, n, 0, true, NULL), OC_CT_NEW);
    memset(f, 0, sizeof(f));
    f[20] = 3; /* port unreachable, from B */
    f[21] = 3;
    memcpy(f + 28, g, 28);
    n = ip4(f, 1, B, A, 8 + 28);
    assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_RELATED);
    /* ...of another tenant's zone, it is not */
    assert_int_equal(trk(ct, 1, f, n, 0, false, NULL), OC_CT_NO_CONN);
    /* quoting an untracked flow: no connection */
    wr16(f + 28 + 22, 7001);
    assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_NO_CONN);
    /* a quote too short for ports: malformed */
    n = ip4(f, 1, B, A, 8 + 24);
    assert_int_equal(trk(ct, 0, f, n, 0, false, &in), OC_CT_INVALID);
    assert_int_equal(in.why, OC_CT_WHY_MALFORMED);
    oc__ct_destroy(ct);
}

static int count_cb(void *arg, const oc_ct_flow_t *fl)
{
    oc_ct_flow_t *last = arg;
    *last = *fl;
    return 0;
}

static void test_zones_walk_flush(void **state)
{
    uint8_t f[1024];
    oc_ct_flow_t fl;
    oc_ct_t *ct = mk(16);
    uint32_t n;
    (void)state;

    /* overlapping addresses in two tenants are two flows */
    n = udp(f, B, A, 1234, 80); /* B > A: stored swapped */
    assert_int_equal(trk(ct, 1, f, n, 0, true, NULL), OC_CT_NEW);
    assert_int_equal(trk(ct, 2, f, n, 0, true, NULL), OC_CT_NEW);
    assert_int_equal(oc__ct_count(ct), 2);
    /* the walk shows the originator's view */
    assert_int_equal(oc__ct_walk(ct, 2, 0, count_cb, &fl), 1);
    assert_int_equal(fl.src_ip, B);
    assert_int_equal(fl.dst_ip, A);
    assert_int_equal(fl.sport, 1234);
    assert_int_equal(fl.dport, 80);
    assert_int_equal(fl.zone, 2);
    assert_int_equal(fl.expires_in_ms, 30000);
    assert_int_equal(oc__ct_flush(ct, 1), 1);
    assert_int_equal(oc__ct_count(ct), 1);
    assert_int_equal(trk(ct, 1, f, n, 0, false, NULL), OC_CT_NO_CONN);
    assert_int_equal(trk(ct, 2, f, n, 0, false, NULL), OC_CT_EST);
    assert_int_equal(oc__ct_flush(ct, -1), 1);
    assert_int_equal(oc__ct_count(ct), 0);
    oc__ct_destroy(ct);
}

static void test_eviction(void **state)
{
    uint8_t f[1024];
    oc_ct_stats_t st;
    oc_ct_t *ct = mk(64);
    uint32_t n;
    (void)state;

    /* 64 half-open flows fill it: the 65th evicts one of them */
    for (uint16_t i = 0; i < 64; i++) {
        n = tcp(f, A, B, (uint16_t)(1000 + i), 80, SYN, 1, 0, 100, 0);
        assert_int_equal(trk(ct, 0, f, n, i, true, NULL), OC_CT_NEW);
    }
    n = tcp(f, A, B, 2000, 80, SYN, 1, 0, 100, 0);
    assert_int_equal(trk(ct, 0, f, n, 100, true, NULL), OC_CT_NEW);
    oc__ct_stats(ct, &st);
    assert_int_equal(st.flows, 64);
    assert_int_equal(st.evicted, 1);
    /* the earliest to expire (the oldest SYN, port 1000) was the victim */
    n = tcp(f, B, A, 80, 1000, SYN | ACK, 9, 2, 100, 0);
    assert_int_equal(trk(ct, 0, f, n, 100, false, NULL), OC_CT_NO_CONN);
    assert_int_equal(oc__ct_flush(ct, -1), 64);

    /* 64 answered UDP flows: nothing may be evicted, the 65th is refused */
    for (uint16_t i = 0; i < 64; i++) {
        n = udp(f, A, B, (uint16_t)(1000 + i), 53);
        assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NEW);
        n = udp(f, B, A, 53, (uint16_t)(1000 + i));
        assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_EST);
    }
    n = udp(f, A, B, 3000, 53);
    assert_int_equal(trk(ct, 0, f, n, 1000, true, NULL), OC_CT_FULL);
    oc__ct_stats(ct, &st);
    assert_int_equal(st.full, 1);
    assert_int_equal(st.flows, 64);
    /* every established flow is still there */
    for (uint16_t i = 0; i < 64; i++) {
        n = udp(f, B, A, 53, (uint16_t)(1000 + i));
        assert_int_equal(trk(ct, 0, f, n, 1000, false, NULL), OC_CT_EST);
    }
    /* once they expire (120 s), a new flow reclaims one */
    n = udp(f, A, B, 3000, 53);
    assert_int_equal(trk(ct, 0, f, n, 121001, true, NULL), OC_CT_NEW);
    /* and the sweep reclaims the rest */
    assert_int_equal(oc__ct_expire(ct, 121001, 64), 63);
    assert_int_equal(oc__ct_count(ct), 1);
    oc__ct_destroy(ct);
}

/* a SYN flood (10x the table) against 32 established connections: the
 * half-open flows evict each other, counted; every established flow stays */
static void test_syn_flood(void **state)
{
    uint8_t f[256];
    oc_ct_stats_t st;
    oc_ct_t *ct = mk(128);
    uint32_t n;
    (void)state;

    for (uint16_t i = 0; i < 32; i++) {
        n = tcp(f, A, B, (uint16_t)(2000 + i), 443, SYN, 1, 0, 1000, 0);
        assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NEW);
        n = tcp(f, B, A, 443, (uint16_t)(2000 + i), SYN | ACK, 9, 2, 1000, 0);
        assert_int_equal(trk(ct, 0, f, n, 0, false, NULL), OC_CT_EST);
        n = tcp(f, A, B, (uint16_t)(2000 + i), 443, ACK, 2, 10, 1000, 0);
        assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_EST);
    }
    for (uint32_t i = 0; i < 1280; i++) {
        oc_ct_result_t r;
        n = tcp(f, 0x0b000000u + i, B, 1234, 443, SYN, i, 0, 1000, 0);
        r = trk(ct, 0, f, n, 1 + i, true, NULL);
        assert_true(r == OC_CT_NEW || r == OC_CT_FULL);
    }
    oc__ct_stats(ct, &st);
    assert_int_equal(st.flows, 128);
    /* 96 free entries took the first 96 SYNs; the rest evicted or refused */
    assert_int_equal(st.evicted + st.full, 1280 - 96);
    assert_true(st.evicted > 0);
    for (uint16_t i = 0; i < 32; i++) {
        n = tcp(f, B, A, 443, (uint16_t)(2000 + i), ACK, 10, 2, 1000, 0);
        assert_int_equal(trk(ct, 0, f, n, 2000, false, NULL), OC_CT_EST);
    }
    oc__ct_destroy(ct);
}

static void test_hostile(void **state)
{
    uint8_t f[1024];
    oc_ct_info_t in;
    oc_ct_t *ct = mk(16);
    uint32_t n;
    (void)state;

    n = tcp(f, A, B, 1, 2, SYN, 1, 0, 1, 0);
    for (uint32_t len = 0; len < n; len++) {
        oc_ct_result_t r = trk(ct, 0, f, len, 0, true, &in);
        assert_int_equal(r, OC_CT_INVALID);
        assert_int_equal(in.why, OC_CT_WHY_MALFORMED);
    }
    f[0] = 0x44; /* IHL 4 */
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_INVALID);
    f[0] = 0x65; /* version 6 */
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_INVALID);
    /* a non-first fragment carries no ports: untracked */
    n = udp(f, A, B, 1, 2);
    f[7] = 10;
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_UNTRACKED);
    /* SYN+FIN never opens a flow */
    n = tcp(f, A, B, 1, 2, SYN | FIN, 1, 0, 1, 0);
    assert_int_equal(trk(ct, 0, f, n, 0, true, NULL), OC_CT_NO_CONN);
    assert_int_equal(oc__ct_count(ct), 0);
    oc_ct_conf_t c = {.capacity = 0};
    oc_ct_t *x;
    assert_int_equal(oc__ct_create(&c, &x), OC_ERR_INVALID_PARAM);
    c.capacity = OC_CT_MAX_FLOWS + 1;
    assert_int_equal(oc__ct_create(&c, &x), OC_ERR_INVALID_PARAM);
    oc__ct_destroy(NULL);
    oc__ct_destroy(ct);
}

/* ------------------------------------------------------------- scale */

static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *fp = fopen("/proc/self/statm", "r");
    if (fp == NULL)
        return -1;
    if (fscanf(fp, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    fclose(fp);
    return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

#define SCALE 1000000u

static uint32_t flow_i(uint8_t *f, uint32_t i, bool reply)
{
    /* distinct 5-tuples: 100 source addresses x 10000 ports */
    uint32_t s = 0x0a010000u + i / 10000, d = 0x0a020001u;
    uint16_t sp = (uint16_t)(10000 + i % 10000);
    return reply ? udp(f, d, s, 4789, sp) : udp(f, s, d, sp, 4789);
}

static void test_scale(void **state)
{
    uint8_t f[64];
    oc_ct_stats_t st;
    oc_ct_t *ct = mk(SCALE);
    size_t mem = oc__ct_mem_bytes(ct);
    long rss0, rss1;
    uint32_t n;
    (void)state;

    assert_int_equal(mem, oc__ct_mem_for(SCALE));
    rss0 = rss_kb();
    /* the table was populated at creation: at least its size is resident */
    for (uint32_t i = 0; i < SCALE; i++) {
        n = flow_i(f, i, false);
        if (oc__ct_track(ct, 0, f, n, 0, true, &(oc_ct_info_t){0}) != OC_CT_NEW)
            fail_msg("flow %u not created", i);
    }
    assert_int_equal(oc__ct_count(ct), SCALE);
    rss1 = rss_kb();
    printf("# %u flows: %zu bytes (%.1f per flow); RSS %ld -> %ld kB\n",
           SCALE, mem, (double)mem / SCALE, rss0, rss1);
    /* filling it allocated nothing: RSS grew by less than a MB */
    if (rss0 > 0 && rss1 > 0)
        assert_true(rss1 - rss0 < 1024);
    /* every flow is found */
    for (uint32_t i = 0; i < SCALE; i++) {
        n = flow_i(f, i, false);
        if (oc__ct_track(ct, 0, f, n, 1, true, &(oc_ct_info_t){0}) != OC_CT_EST)
            fail_msg("flow %u lost", i);
    }
    /* flow 1,000,001: an unanswered flow is evicted, counted */
    n = udp(f, 0x0b000001u, 0x0b000002u, 1, 2);
    assert_int_equal(oc__ct_track(ct, 0, f, n, 2, true, &(oc_ct_info_t){0}),
                     OC_CT_NEW);
    oc__ct_stats(ct, &st);
    assert_int_equal(st.flows, SCALE);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.full, 0);

    /* all established: the next new flow is refused and counted, and no
     * established flow is lost */
    assert_int_equal(oc__ct_flush(ct, -1), SCALE);
    for (uint32_t i = 0; i < SCALE; i++) {
        oc_ct_info_t in;
        n = flow_i(f, i, false);
        if (oc__ct_track(ct, 0, f, n, 10, true, &in) != OC_CT_NEW)
            fail_msg("flow %u not created", i);
        n = flow_i(f, i, true);
        if (oc__ct_track(ct, 0, f, n, 10, false, &in) != OC_CT_EST)
            fail_msg("flow %u reply not matched", i);
    }
    n = udp(f, 0x0b000001u, 0x0b000002u, 1, 2);
    for (int k = 0; k < 3; k++)
        assert_int_equal(oc__ct_track(ct, 0, f, n, 11, true, &(oc_ct_info_t){0}),
                         OC_CT_FULL);
    oc__ct_stats(ct, &st);
    assert_int_equal(st.flows, SCALE);
    assert_int_equal(st.full, 3);
    for (uint32_t i = 0; i < SCALE; i++) {
        n = flow_i(f, i, true);
        if (oc__ct_track(ct, 0, f, n, 12, false, &(oc_ct_info_t){0}) != OC_CT_EST)
            fail_msg("established flow %u lost", i);
    }
    assert_int_equal(oc__ct_mem_bytes(ct), mem);
    oc__ct_destroy(ct);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_tcp_lifecycle),
        cmocka_unit_test(test_tcp_rst_reopen_wscale),
        cmocka_unit_test(test_udp_icmp),
        cmocka_unit_test(test_zones_walk_flush),
        cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_syn_flood),
        cmocka_unit_test(test_hostile),
    };
    const struct CMUnitTest scale[] = {
        cmocka_unit_test(test_scale),
    };
    if (argc > 1 && strcmp(argv[1], "--scale") == 0)
        return cmocka_run_group_tests(scale, NULL, NULL);
    return cmocka_run_group_tests(unit, NULL, NULL);
}
