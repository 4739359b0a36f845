/*
 * test_flow.c — unit tests of src/pkt/flow.c and ipfix.c: biflow
 * accounting (both directions in one record, forward = first packet's
 * direction), TCP flags and end of flow, idle and active timeouts, a full
 * table (counted, never overwritten), the table against a naive model
 * under random inserts and expiries (backward-shift deletion), and the
 * IPFIX encoding byte by byte (header, template with RFC 5103 reverse
 * elements, one record), and round-trip times from TCP timestamps
 * (exact samples, unknown echoes ignored, TSval wrap-around, no sample
 * from a retransmission) with the option parser on good and bad headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pkt/flow.h"

#define MAXREC 250000
#define US(ms) ((uint64_t)(ms) * 1000) /* the table counts microseconds */
static oc_flow_rec_t recs[MAXREC];
static unsigned nrec;

static void collect(void *arg, const oc_flow_rec_t *r)
{
    (void)arg;
    assert_true(nrec < MAXREC);
    recs[nrec++] = *r;
}

static oc_flow_table_t *table(uint32_t cap)
{
    oc_flow_conf_t c = {.capacity = cap, .idle_ms = 2000, .active_ms = 10000,
                        .emit = collect};
    oc_flow_table_t *t;
    nrec = 0;
    assert_int_equal(oc__flow_table_create(&c, &t), OC_OK);
    return t;
}

static void test_biflow(void **state)
{
    oc_flow_table_t *t = table(1024);
    oc_flow_stats_t st;
    (void)state;

    /* a TCP connection: SYN, SYN-ACK, ACK, data both ways, FINs */
    assert_true(oc__flow_update(t, 60, 0x02, 1, 2, 5000, 80, 6, OC_FLOW_NO_VNI, 0, US(1000), NULL));
    assert_true(oc__flow_update(t, 60, 0x12, 2, 1, 80, 5000, 6, OC_FLOW_NO_VNI, 0, US(1001), NULL));
    assert_true(oc__flow_update(t, 52, 0x10, 1, 2, 5000, 80, 6, OC_FLOW_NO_VNI, 0, US(1003), NULL));
    assert_true(oc__flow_update(t, 1000, 0x18, 2, 1, 80, 5000, 6, OC_FLOW_NO_VNI, 0, US(1004), NULL));
    assert_true(oc__flow_update(t, 52, 0x11, 1, 2, 5000, 80, 6, OC_FLOW_NO_VNI, 0, US(1005), NULL));
    assert_true(oc__flow_update(t, 52, 0x11, 2, 1, 80, 5000, 6, OC_FLOW_NO_VNI, 0, US(1006), NULL));
    /* another flow, UDP, the lower address second */
    assert_true(oc__flow_update(t, 100, -1, 9, 3, 53, 4000, 17, 42, 7, US(1002), NULL));
    /* its reply on another port: the flow keeps its first packet's port */
    assert_true(oc__flow_update(t, 80, -1, 3, 9, 4000, 53, 17, 42, 9, US(1002), NULL));
    oc__flow_stats(t, &st);
    assert_int_equal(st.active, 2);
    /* FINs both ways: ends after a second of quiet, not before */
    assert_int_equal(oc__flow_expire(t, US(1500), 1024), 0);
    assert_int_equal(oc__flow_expire(t, US(2006), 1024), 1);
    assert_int_equal(nrec, 1);
    assert_int_equal(recs[0].src, 1);
    assert_int_equal(recs[0].sport, 5000);
    assert_int_equal(recs[0].dport, 80);
    assert_int_equal(recs[0].packets[0], 3);
    assert_int_equal(recs[0].packets[1], 3);
    assert_int_equal(recs[0].octets[0], 164);
    assert_int_equal(recs[0].octets[1], 1112);
    assert_int_equal(recs[0].flags[0], 0x13);
    assert_int_equal(recs[0].flags[1], 0x1b);
    assert_int_equal(recs[0].end_reason, OC_FLOW_END_EOF);
    assert_int_equal(recs[0].start_ms, 1000);
    assert_int_equal(recs[0].end_ms, 1006);
    assert_int_equal(recs[0].rtt_us, 3000); /* SYN at 1000 ms, ACK at 1003 ms */
    /* the UDP flow: idle timeout; forward is its first packet's direction */
    assert_int_equal(oc__flow_expire(t, US(3002), 1024), 1);
    assert_int_equal(recs[1].src, 9);
    assert_int_equal(recs[1].sport, 53);
    assert_int_equal(recs[1].vni, 42);
    assert_int_equal(recs[1].port, 7);
    assert_int_equal(recs[1].first_ms, 1002);
    assert_int_equal(recs[1].total_octets, 180);
    assert_int_equal(recs[0].total_octets, 164 + 1112);
    assert_int_equal(recs[1].end_reason, OC_FLOW_END_IDLE);
    oc__flow_stats(t, &st);
    assert_int_equal(st.active, 0);
    assert_int_equal(st.ended, 2);
    oc__flow_table_destroy(t);
    assert_int_equal(nrec, 2);
}

/* An expiry clock a little behind the last packet's (a coarser tick, a
 * stepped-back CLOCK_REALTIME) ends nothing: the difference must not wrap
 * (a TCP SYN's flow was ended as idle 0.5 ms after it began, and the
 * SYN-ACK started another flow without a handshake RTT). */
static void test_clock_behind(void **state)
{
    oc_flow_table_t *t = table(1024);
    oc_flow_stats_t st;
    (void)state;

    assert_true(oc__flow_update(t, 60, 0x02, 1, 2, 5000, 80, 6, OC_FLOW_NO_VNI,
                               0, US(1000) + 500, NULL));
    assert_int_equal(oc__flow_expire(t, US(1000), 1024), 0);
    assert_int_equal(oc__flow_expire(t, 0, 1024), 0);
    assert_true(oc__flow_update(t, 60, 0x12, 2, 1, 80, 5000, 6, OC_FLOW_NO_VNI,
                               0, US(1001), NULL));
    assert_true(oc__flow_update(t, 52, 0x10, 1, 2, 5000, 80, 6, OC_FLOW_NO_VNI,
                               0, US(1002), NULL));
    oc__flow_stats(t, &st);
    assert_int_equal(st.active, 1);
    assert_int_equal(nrec, 0);
    oc__flow_table_destroy(t);
    assert_int_equal(nrec, 1);
    assert_int_equal(recs[0].packets[0], 2);
    assert_int_equal(recs[0].packets[1], 1);
    assert_true(recs[0].rtt_us > 0);
}

static void test_active_and_forced(void **state)
{
    oc_flow_table_t *t = table(1024);
    (void)state;
    for (uint64_t ms = 0; ms <= 25000; ms += 500)
        assert_true(oc__flow_update(t, 100, -1, 1, 2, 1, 2, 17, OC_FLOW_NO_VNI, 0, US(ms), NULL));
    /* expiry runs as the traffic goes on: delta records every 10 s */
    for (uint64_t ms = 0; ms <= 25000; ms += 100) {
        if (ms % 500 == 0)
            assert_true(oc__flow_update(t, 100, -1, 1, 2, 1, 2, 17,
                                       OC_FLOW_NO_VNI, 0, US(30000 + ms), NULL));
        oc__flow_expire(t, US(30000 + ms), 1024);
    }
    assert_true(nrec >= 2);
    for (unsigned i = 0; i < nrec; i++)
        assert_int_equal(recs[i].end_reason, OC_FLOW_END_ACTIVE);
    oc__flow_table_destroy(t);
    assert_int_equal(recs[nrec - 1].end_reason, OC_FLOW_END_FORCED);
    /* every packet is in exactly one record */
    uint64_t p = 0;
    for (unsigned i = 0; i < nrec; i++)
        p += recs[i].packets[0];
    assert_int_equal(p, 51 + 51);
    /* delta records; the last one still knows the whole flow */
    assert_int_equal(recs[nrec - 1].first_ms, 0);
    assert_int_equal(recs[nrec - 1].total_octets, 100 * (51 + 51));
}

static void test_full_and_model(void **state)
{
    oc_flow_table_t *t = table(1024);
    oc_flow_stats_t st;
    static uint64_t model[4096]; /* packets per flow id, 0 = absent */
    uint64_t seen = 0, rng = 12345;
    (void)state;

    /* fill: at most 7/8 of the table, the rest counted */
    for (uint32_t i = 0; i < 1000; i++)
        oc__flow_update(t, 40, -1, 100 + i, 7, 1, 1, 17, OC_FLOW_NO_VNI, 0, US(0), NULL);
    oc__flow_stats(t, &st);
    assert_int_equal(st.active, 896);
    assert_int_equal(st.no_room, 1000 - 896);
    oc__flow_table_destroy(t);
    assert_int_equal(nrec, 896);

    /* random traffic over 4096 flow ids with random expiries: every
     * packet ends up in exactly one record of its own flow */
    t = table(4096);
    memset(model, 0, sizeof(model));
    uint64_t now = 0;
    for (int step = 0; step < 200000; step++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        uint32_t id = (uint32_t)(rng % 3000);
        now += rng % 3;
        if (oc__flow_update(t, 40, -1, id, 0x0a000001, 7, 9, 17, OC_FLOW_NO_VNI, 0, US(now), NULL)) {
            model[id]++;
            seen++;
        }
        if (step % 97 == 0)
            oc__flow_expire(t, US(now), 300);
    }
    oc__flow_table_destroy(t);
    memset(model + 3000, 0, 8);
    uint64_t sum = 0;
    static uint64_t got[4096];
    memset(got, 0, sizeof(got));
    for (unsigned i = 0; i < nrec; i++) {
        assert_true(recs[i].src < 3000);
        got[recs[i].src] += recs[i].packets[0] + recs[i].packets[1];
        sum += recs[i].packets[0] + recs[i].packets[1];
    }
    assert_int_equal(sum, seen);
    for (int i = 0; i < 3000; i++)
        assert_int_equal(got[i], model[i]);
}

static void test_ipfix(void **state)
{
    uint8_t m[16], s[256], r[OC_IPFIX_REC_LEN];
    oc_flow_rec_t rec = {.start_ms = 0x0102030405060708ull, .end_ms = 2,
                         .src = 0x0a000001, .dst = 0x0a000002, .sport = 5000,
                         .dport = 80, .proto = 6, .end_reason = 3,
                         .flags = {0x1b, 0x12}, .vni = 5001,
                         .packets = {3, 4}, .octets = {164, 1112}};
    size_t n;
    (void)state;

    oc__ipfix_header(m, 100, 0x5f000000, 7, 77);
    static const uint8_t hm[16] = {0, 10, 0, 100, 0x5f, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 77};
    assert_memory_equal(m, hm, 16);
    n = oc__ipfix_template_set(s);
    /* set 2; template 256 with 15 fields, 3 of them enterprise (8 bytes) */
    assert_int_equal(n, 4 + 4 + 12 * 4 + 3 * 8);
    assert_int_equal(s[0] << 8 | s[1], 2);
    assert_int_equal(s[2] << 8 | s[3], n);
    assert_int_equal(s[4] << 8 | s[5], 256);
    assert_int_equal(s[6] << 8 | s[7], 15);
    /* the first reverse element: octetDeltaCount | enterprise, 8, 29305 */
    static const uint8_t rev[8] = {0x80, 1, 0, 8, 0, 0, 0x72, 0x79};
    assert_memory_equal(s + 8 + 12 * 4, rev, 8);
    /* the record's field lengths add up to OC_IPFIX_REC_LEN */
    unsigned sum = 0;
    for (size_t o = 8; o < n;) {
        sum += (unsigned)(s[o + 2] << 8 | s[o + 3]);
        o += (s[o] & 0x80) ? 8 : 4;
    }
    assert_int_equal(sum, OC_IPFIX_REC_LEN);
    oc__ipfix_record(r, &rec);
    assert_int_equal(r[0], 1);
    assert_int_equal(r[7], 8);
    assert_int_equal(r[16] << 24 | r[17] << 16 | r[18] << 8 | r[19], 0x0a000001);
    assert_int_equal(r[24] << 8 | r[25], 5000);
    assert_int_equal(r[28], 6);
    assert_int_equal(r[29] << 8 | r[30], 0x1b);
    assert_int_equal(r[31], 3);
    assert_int_equal(r[32], 1); /* layer2SegmentId: VXLAN */
    assert_int_equal(r[37] << 16 | r[38] << 8 | r[39], 5001);
    assert_int_equal(r[47], 164);
    assert_int_equal(r[55], 3);
    assert_int_equal(r[62] << 8 | r[63], 1112);
    assert_int_equal(r[71], 4);
    assert_int_equal(r[72] << 8 | r[73], 0x12);
}

/* One TCP packet with timestamps (val, ecr) at @p ms (+ @p us). */
static void tsp(oc_flow_table_t *t, int fwd, int flags, uint32_t val,
                uint32_t ecr, uint64_t us)
{
    oc_flow_ts_t ts = {val, ecr};
    if (fwd)
        assert_true(oc__flow_update(t, 52, flags, 1, 2, 5000, 80, 6,
                                   OC_FLOW_NO_VNI, 0, us, &ts));
    else
        assert_true(oc__flow_update(t, 52, flags, 2, 1, 80, 5000, 6,
                                   OC_FLOW_NO_VNI, 0, us, &ts));
}

static void test_ts_rtt(void **state)
{
    oc_flow_table_t *t = table(1024);
    (void)state;

    tsp(t, 1, 0x02, 100, 0, US(1000));        /* SYN: TSecr ignored */
    tsp(t, 0, 0x12, 7000, 100, US(1003));     /* echo: fwd sample 3 ms */
    tsp(t, 1, 0x10, 101, 7000, US(1004));     /* echo: rev sample 1 ms */
    tsp(t, 0, 0x10, 7001, 55, US(1005));      /* unknown (older) echo */
    tsp(t, 1, 0x18, 101, 7001, US(1006) + 250); /* same TSval; rev 1.25 ms */
    tsp(t, 0, 0x10, 7002, 101, US(1010));     /* first echo of 101: 6 ms */
    /* retransmission of the 101 segment and its duplicate ACK: the TSval
     * is not new, its echo was taken already: no sample */
    tsp(t, 1, 0x18, 101, 7002, US(1020));     /* echoes 7002: rev 10 ms */
    tsp(t, 0, 0x10, 7003, 101, US(1025));
    tsp(t, 0, 0x10, 7003, 101, US(1030));
    /* an echo newer than the pending TSval abandons it (no sample) */
    tsp(t, 1, 0x10, 102, 7003, US(1040));     /* rev: 7003 at 1025: 15 ms */
    tsp(t, 0, 0x10, 7004, 103, US(1041));     /* 103 never seen: passed over */
    tsp(t, 0, 0x10, 7004, 102, US(1042));     /* 102 abandoned: nothing */
    oc__flow_table_destroy(t);
    assert_int_equal(nrec, 1);
    const oc_flow_rtt_t *f = &recs[0].rtt[0], *r = &recs[0].rtt[1];
    assert_int_equal(f->n, 2);
    assert_int_equal(f->min_us, 3000);
    assert_int_equal(f->max_us, 6000);
    assert_int_equal(f->sum_us, 9000);
    assert_int_equal(f->b[5], 1);             /* 3 ms: bucket <= 5 ms */
    assert_int_equal(f->b[6], 1);             /* 6 ms: bucket <= 10 ms */
    assert_int_equal(r->n, 4);
    assert_int_equal(r->min_us, 1000);
    assert_int_equal(r->max_us, 15000);
    assert_int_equal(r->sum_us, 1000 + 1250 + 10000 + 15000);
    assert_int_equal(recs[0].rtt_us, 4000);   /* the handshake RTT too */
}

static void test_ts_wrap(void **state)
{
    oc_flow_table_t *t = table(1024);
    (void)state;

    tsp(t, 1, 0x10, 0xfffffffeu, 1, US(50));
    tsp(t, 0, 0x10, 2, 0xfffffffeu, US(52));  /* fwd 2 ms */
    tsp(t, 1, 0x10, 3, 2, US(53));            /* wrapped TSval is newer; rev 1 ms */
    tsp(t, 1, 0x10, 0xffffffffu, 2, US(54));  /* older than 3: not pending */
    tsp(t, 0, 0x10, 4, 0xffffffffu, US(55));  /* unknown echo: nothing */
    tsp(t, 0, 0x10, 4, 3, US(57));            /* fwd 4 ms */
    oc__flow_table_destroy(t);
    assert_int_equal(nrec, 1);
    assert_int_equal(recs[0].rtt[0].n, 2);
    assert_int_equal(recs[0].rtt[0].sum_us, 6000);
    assert_int_equal(recs[0].rtt[0].min_us, 2000);
    assert_int_equal(recs[0].rtt[0].max_us, 4000);
    assert_int_equal(recs[0].rtt[1].n, 1);
    assert_int_equal(recs[0].rtt[1].sum_us, 1000);
    /* 2 ms and 4 ms: buckets <= 2.5 ms and <= 5 ms */
    assert_int_equal(recs[0].rtt[0].b[4], 1);
    assert_int_equal(recs[0].rtt[0].b[5], 1);
}

static void test_ts_parse(void **state)
{
    uint8_t h[60];
    oc_flow_ts_t ts;
    (void)state;

    memset(h, 0, sizeof(h));
    h[12] = 8 << 4;
    /* Linux data segment: NOP NOP TS */
    static const uint8_t lin[12] = {1, 1, 8, 10, 0, 0, 1, 2, 0xff, 0, 0, 9};
    memcpy(h + 20, lin, 12);
    assert_true(oc__flow_tcp_ts(h, 32, &ts));
    assert_int_equal(ts.val, 0x102);
    assert_int_equal(ts.ecr, 0xff000009u);
    /* SYN: MSS, SACK permitted, TS, NOP, window scale */
    static const uint8_t syn[20] = {2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 7,
                                    0, 0, 0, 0, 1, 3, 3, 7};
    memset(h + 20, 0, 40);
    memcpy(h + 20, syn, 20);
    assert_true(oc__flow_tcp_ts(h, 40, &ts));
    assert_int_equal(ts.val, 7);
    assert_int_equal(ts.ecr, 0);
    /* the option cut by the header's end, a zero length, a wrong TS
     * length, the end-of-list option before it, no options at all */
    assert_false(oc__flow_tcp_ts(h, 30, &ts));
    h[21] = 0;
    assert_false(oc__flow_tcp_ts(h, 40, &ts));
    memcpy(h + 20, syn, 20);
    h[27] = 9;
    assert_false(oc__flow_tcp_ts(h, 40, &ts));
    memcpy(h + 20, syn, 20);
    h[24] = 0;
    assert_false(oc__flow_tcp_ts(h, 40, &ts));
    assert_false(oc__flow_tcp_ts(h, 20, &ts));
    memset(h + 20, 1, 40); /* only NOPs */
    assert_false(oc__flow_tcp_ts(h, 60, &ts));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_biflow), cmocka_unit_test(test_clock_behind),
        cmocka_unit_test(test_active_and_forced),
        cmocka_unit_test(test_full_and_model), cmocka_unit_test(test_ipfix),
        cmocka_unit_test(test_ts_rtt), cmocka_unit_test(test_ts_wrap),
        cmocka_unit_test(test_ts_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
