/*
 * test_ct_burst.c — oc__ct_track_burst() (src/pkt/ct_track.c) against its
 * oracle, oc__ct_track() on each packet in turn: two tables fed the same
 * random streams (TCP handshakes, data, FIN/RST closing, out-of-window
 * and impossible segments, UDP and ICMP echo both ways, ICMP errors
 * quoting tracked flows, other protocols, fragments, truncated headers),
 * bursts of 0..100 packets with two zones, time jumps that expire flows,
 * a table smaller than the flows so that eviction and `full` happen, and
 * callers that allow, refuse or decide per packet whether a flow may be
 * opened.  After every burst: the same results, infos, counters; at the
 * end the same flows.  The callback's contract is checked too: asked only
 * for packets that open a flow or are refused one, in packet order.
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
#include "pkt_bytes.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11) % n;
}


static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

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
#define NFLOWS 48

/* a flow of the stream and where its script is */
typedef struct {
    uint32_t a, b; /* originator, responder */
    uint16_t pa, pb;
    uint8_t proto; /* 6, 17, 1 (echo), 47 */
    uint8_t step;
    uint32_t seq[2]; /* next sequence number of each side */
} flow_t;

static flow_t fl[NFLOWS];

static void flows_init(void)
{
    static const uint8_t protos[] = {6, 6, 6, 6, 17, 17, 1, 47};
    for (uint32_t i = 0; i < NFLOWS; i++) {
        fl[i] = (flow_t){.a = 0x0a000000u + rnd(4),
                         .b = 0x0a010000u + rnd(4),
                         .pa = (uint16_t)(1024 + rnd(6)),
                         .pb = (uint16_t)(80 + rnd(3)),
                         .proto = protos[rnd(8)],
                         .seq = {rnd(1u << 31), rnd(1u << 31)}};
    }
}

/* TCP segment from side @p side (0 originator) of flow @p f */
static uint32_t tcp_seg(uint8_t *p, flow_t *f, int side, uint8_t flags,
                        uint32_t payload, bool wscale)
{
    uint8_t *t = p + 20;
    uint32_t doff = wscale ? 24 : 20;
    memset(t, 0, doff + payload);
    wr16(t, side ? f->pb : f->pa);
    wr16(t + 2, side ? f->pa : f->pb);
    wr32(t + 4, f->seq[side]);
    wr32(t + 8, f->seq[!side]);
    t[12] = (uint8_t)((doff / 4) << 4);
    t[13] = flags;
    wr16(t + 14, (uint16_t)(1000 + rnd(60000)));
    if (wscale) {
        t[20] = 3, t[21] = 3, t[22] = (uint8_t)rnd(15), t[23] = 1;
    }
    f->seq[side] += payload + !!(flags & SYN) + !!(flags & FIN);
    return ip4(p, 6, side ? f->b : f->a, side ? f->a : f->b, doff + payload);
}

/* the next packet of flow @p f, mostly along its script */
static uint32_t next_pkt(uint8_t *p, flow_t *f)
{
    int side = (int)rnd(2);
    uint32_t n;

    switch (f->proto) {
    case 6: {
        static const uint8_t script[][2] = {
            {0, SYN}, {1, SYN | ACK}, {0, ACK}, {0, ACK},       {1, ACK},
            {0, ACK}, {0, FIN | ACK}, {1, ACK}, {1, FIN | ACK}, {0, ACK}};
        const uint8_t *s = script[f->step % 10];
        uint8_t flags = s[1];
        if (rnd(10) == 0)
            flags = (uint8_t)rnd(32); /* impossible or out of order */
        if (rnd(20) == 0)
            flags = RST | ACK;
        if (rnd(12) == 0)
            f->seq[s[0]] += rnd(1u << 31); /* out of window */
        n = tcp_seg(p, f, s[0], flags, rnd(3) ? rnd(1200) : 0,
                    (flags & SYN) && rnd(2));
        f->step++;
        return n;
    }
    case 17:
        memset(p + 20, 0, 8);
        wr16(p + 20, side ? f->pb : f->pa);
        wr16(p + 22, side ? f->pa : f->pb);
        wr16(p + 24, 8);
        return ip4(p, 17, side ? f->b : f->a, side ? f->a : f->b, 8);
    case 1:
        memset(p + 20, 0, 8);
        p[20] = side ? 0 : 8; /* reply, request */
        wr16(p + 24, f->pa);
        return ip4(p, 1, side ? f->b : f->a, side ? f->a : f->b, 8);
    default:
        memset(p + 20, 0, 8);
        return ip4(p, f->proto, side ? f->b : f->a, side ? f->a : f->b, 8);
    }
}

/* a packet of the stream: a flow's next one, or something hostile */
static uint32_t gen(uint8_t *p)
{
    flow_t *f = &fl[rnd(NFLOWS)];
    uint32_t n = next_pkt(p, f), k = rnd(40);

    if (k == 0)
        return rnd(n); /* truncated */
    if (k == 1)
        p[0] = 0x65; /* version 6 */
    if (k == 2)
        p[7] = (uint8_t)(1 + rnd(200)); /* a non-first fragment */
    if (k == 3 || k == 4) {
        /* an ICMP error (unreachable, time exceeded) quoting this packet */
        uint8_t q[64];
        uint32_t ql = n < 28 ? n : 28 + rnd(8);
        memcpy(q, p, ql);
        memset(p + 20, 0, 8);
        p[20] = k == 3 ? 3 : 11;
        memcpy(p + 28, q, ql);
        return ip4(p, 1, 0x0a090909u, rd32(q + 12), 8 + ql);
    }
    if (k == 5) {
        memset(p + 20, 0, 8);
        p[20] = 13; /* timestamp: not tracked */
        return ip4(p, 1, f->a, f->b, 8);
    }
    return n;
}

/* the callback: a decision per packet that depends on nothing but its
 * index, and a log of the questions asked */
typedef struct {
    int mode; /* 0 allow all, 1 refuse all, 2 by index */
    uint32_t asked[128], nasked;
} may_t;

static bool may_decide(const may_t *m, uint32_t i)
{
    return m->mode == 0 || (m->mode == 2 && (i * 2654435761u) >> 30 != 0);
}

static bool may_open(void *arg, uint32_t i)
{
    may_t *m = arg;
    m->asked[m->nasked++] = i;
    return may_decide(m, i);
}

typedef struct {
    oc_ct_flow_t f[64];
    uint32_t n;
} walk_t;

static int walk_one(void *arg, const oc_ct_flow_t *f)
{
    walk_t *w = arg;
    w->f[w->n++] = *f;
    return 0;
}

static void test_burst_equals_scalar(void **state)
{
    oc_ct_conf_t c = {.capacity = 24};
    oc_ct_t *one, *bur;
    uint8_t *pk[128];
    uint32_t len[128];
    oc_ct_result_t r1[128], rb[128];
    oc_ct_info_t i1[128], ib[128];
    uint64_t now = 1000, seen[OC_CT_NRESULTS] = {0};
    (void)state;

    oc__ct_timeouts_default(&c.to);
    c.to.tcp[OC_CT_TCP_TIME_WAIT] = 2;
    assert_int_equal(oc__ct_create(&c, &one), OC_OK);
    assert_int_equal(oc__ct_create(&c, &bur), OC_OK);
    flows_init();
    for (uint32_t b = 0; b < 3000; b++) {
        uint32_t n = b % 50 == 0 ? 0 : 1 + rnd(b % 7 == 0 ? 100 : 40);
        uint16_t zone = (uint16_t)rnd(2);
        may_t m = {.mode = (int)rnd(3)};
        oc_ct_stats_t s1, sb;
        uint8_t buf[1500];

        now += rnd(4) == 0 ? rnd(200000) : rnd(2000);
        for (uint32_t i = 0; i < n; i++) {
            len[i] = gen(buf);
            /* exact-size copies: ASan sees any read past a packet */
            pk[i] = malloc(len[i] ? len[i] : 1);
            assert_non_null(pk[i]);
            memcpy(pk[i], buf, len[i]);
        }
        for (uint32_t i = 0; i < n; i++)
            r1[i] = oc__ct_track(one, zone, pk[i], len[i], now,
                                may_decide(&m, i), &i1[i]);
        oc__ct_track_burst(bur, zone, (const uint8_t *const *)pk, len, n, now,
                          m.mode == 0 && rnd(2) ? NULL : may_open, &m, rb, ib);
        for (uint32_t i = 0; i < n; i++) {
            if (r1[i] != rb[i] || memcmp(&i1[i], &ib[i], sizeof(ib[i])) != 0)
                fail_msg("burst %u packet %u: %s (why %u) vs %s (why %u) "
                         "one by one",
                         b, i, oc__ct_result_name(rb[i]), ib[i].why,
                         oc__ct_result_name(r1[i]), i1[i].why);
            seen[r1[i]]++;
        }
        /* asked in packet order, only where a flow was opened or refused */
        for (uint32_t k = 0; k < m.nasked; k++) {
            uint32_t i = m.asked[k];
            assert_true(k == 0 || i > m.asked[k - 1]);
            assert_true(rb[i] == OC_CT_NEW || rb[i] == OC_CT_FULL ||
                        rb[i] == OC_CT_NO_CONN);
        }
        for (uint32_t i = 0, k = 0; i < n && m.mode != 0; i++)
            if (rb[i] == OC_CT_NEW) {
                while (k < m.nasked && m.asked[k] < i)
                    k++;
                assert_true(k < m.nasked && m.asked[k] == i);
            }
        oc__ct_stats(one, &s1);
        oc__ct_stats(bur, &sb);
        assert_memory_equal(&s1, &sb, sizeof(s1));
        for (uint32_t i = 0; i < n; i++)
            free(pk[i]);
    }
    {
        walk_t w1 = {0}, wb = {0};
        oc__ct_walk(one, -1, now, walk_one, &w1);
        oc__ct_walk(bur, -1, now, walk_one, &wb);
        assert_int_equal(w1.n, wb.n);
        assert_memory_equal(w1.f, wb.f, w1.n * sizeof(w1.f[0]));
    }
    /* the stream reached every result: the comparison covered them */
    for (int r = 0; r < OC_CT_NRESULTS; r++) {
        printf("# %s: %llu\n", oc__ct_result_name((oc_ct_result_t)r),
               (unsigned long long)seen[r]);
        assert_true(seen[r] > 0);
    }
    oc__ct_destroy(one);
    oc__ct_destroy(bur);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_burst_equals_scalar),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
