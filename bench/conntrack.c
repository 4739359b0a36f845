/*
 * conntrack.c — bench-conntrack: connection-tracking inserts and lookups
 * per second on one core with a table of N flows (default 1,000,000), and
 * the table's bytes per flow.  Baseline in the same run: the packet parser
 * (oc__pkt_parse, the stage before conntrack in offcore-dp) over the same
 * frames in the same order, so the ratio says what tracking costs next to
 * reading the headers at all.
 *
 * Each repeat: parse all N frames (baseline); flush the table and insert
 * the N flows (first packets, shuffled order); look every flow up once
 * with its reply packet (another shuffled order) — one packet at a time
 * with oc__ct_track(), then the same again in bursts of B packets with
 * oc__ct_track_burst() (what offcore-dp's tenant stage calls: a burst's
 * hashes first, its index slots and entries prefetched, then the packets
 * in order).  JSON line per repeat, then the medians.  Wall and
 * thread-CPU rates both (the machine is shared: CPU time is the steadier
 * one).
 *
 * With --ipv6 the same over an IPv6 table (oc_ct_conf_t.ipv6: what
 * offcore-dp keeps IPv6 flows in) and IPv6/UDP frames; its lines are
 * `conntrack6`.
 *
 * Usage: bench-conntrack [--flows N] [--repeats R] [--burst B] [--ipv6]
 */
#include "pkt/ct.h"
#include "pkt/pkt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "median.h"

#define STRIDE 64
#define BURST_MAX 256

/* the frames' lengths: whole, and from the IP header (IPv4 or IPv6) */
static uint32_t flen = 42, l3len = 28;

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wr16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v)
{
    wr16(p, (uint16_t)(v >> 16));
    wr16(p + 2, (uint16_t)v);
}

/* Ethernet + IPv4 + UDP, 42 bytes */
static void frame(uint8_t *f, uint32_t s, uint32_t d, uint16_t sp, uint16_t dp)
{
    memset(f, 0, STRIDE);
    f[12] = 0x08;
    f[14] = 0x45;
    wr16(f + 16, 28);
    f[22] = 64;
    f[23] = 17;
    wr32(f + 26, s);
    wr32(f + 30, d);
    wr16(f + 34, sp);
    wr16(f + 36, dp);
    wr16(f + 38, 8);
}

/* Ethernet + IPv6 + UDP, 62 bytes: fd00::S -> fd00::D */
static void frame6(uint8_t *f, uint32_t s, uint32_t d, uint16_t sp,
                   uint16_t dp)
{
    memset(f, 0, STRIDE);
    f[12] = 0x86;
    f[13] = 0xdd;
    f[14] = 0x60;
    wr16(f + 18, 8);
    f[20] = 17;
    f[21] = 64;
    f[22] = 0xfd;
    wr32(f + 34, s);
    f[38] = 0xfd;
    wr32(f + 50, d);
    wr16(f + 54, sp);
    wr16(f + 56, dp);
    wr16(f + 58, 8);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static void shuffle(uint32_t *p, uint32_t n)
{
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = rnd() % (i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* Track the frames @p order names (their IP headers), @p b at a time;
 * each must come out @p want_new ? new : established. */
static int run_bursts(oc_ct_t *ct, const uint8_t *frames,
                      const uint32_t *order, uint32_t n, uint32_t b,
                      uint64_t now, bool want_new)
{
    const uint8_t *ip[BURST_MAX];
    uint32_t len[BURST_MAX];
    oc_ct_result_t res[BURST_MAX];
    oc_ct_info_t info[BURST_MAX];
    oc_ct_result_t want = want_new ? OC_CT_NEW : OC_CT_EST;

    for (uint32_t i = 0; i < n; i += b) {
        uint32_t k = n - i < b ? n - i : b;
        for (uint32_t j = 0; j < k; j++) {
            ip[j] = frames + (size_t)order[i + j] * STRIDE + 14;
            len[j] = l3len;
        }
        oc__ct_track_burst(ct, 0, ip, len, k, now, NULL, NULL, res, info);
        for (uint32_t j = 0; j < k; j++)
            if (res[j] != want) {
                fprintf(stderr, "bench-conntrack: flow %u: %s in a burst\n",
                        order[i + j], oc__ct_result_name(res[j]));
                return -1;
            }
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t n = 1000000, reps = 5, burst = 64;
    oc_ct_conf_t conf = {0};
    oc_ct_t *ct;
    uint8_t *fwd, *rev;
    uint32_t *ins, *look;
    double r_parse[64], r_ins[64], r_look[64], c_ins[64], c_look[64];
    double r_bins[64], r_blook[64], c_bins[64], c_blook[64];
    uint64_t sink = 0;
    bool v6 = false;
    const char *name = "conntrack";

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--flows") == 0 && i + 1 < argc)
            n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
            reps = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--burst") == 0 && i + 1 < argc)
            burst = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ipv6") == 0)
            v6 = true;
        else {
            fprintf(stderr, "usage: %s [--flows N (1000000)] [--repeats R (5, <= 64)]\n"
                    "       [--burst B (64, offcore-dp's default burst; <= %d)]\n"
                    "       [--ipv6 (an IPv6 table, IPv6 frames)]\n",
                    argv[0], BURST_MAX);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (n == 0 || n > OC_CT_MAX_FLOWS || reps == 0 || reps > 64 ||
        burst == 0 || burst > BURST_MAX) {
        fprintf(stderr, "bench-conntrack: flows 1..%u, repeats 1..64, burst "
                "1..%d\n", OC_CT_MAX_FLOWS, BURST_MAX);
        return 2;
    }
    conf.capacity = n;
    conf.ipv6 = v6;
    if (v6) {
        flen = 62;
        l3len = 48;
        name = "conntrack6";
    }
    oc__ct_timeouts_default(&conf.to);
    if (oc__ct_create(&conf, &ct) != OC_OK) {
        fprintf(stderr, "bench-conntrack: no memory for %u flows\n", n);
        return 1;
    }
    fwd = malloc((size_t)n * STRIDE);
    rev = malloc((size_t)n * STRIDE);
    ins = malloc((size_t)n * sizeof(*ins));
    look = malloc((size_t)n * sizeof(*look));
    if (fwd == NULL || rev == NULL || ins == NULL || look == NULL) {
        fprintf(stderr, "bench-conntrack: no memory for the frames\n");
        return 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = 0x0a000000u + (i >> 12), d = 0x0b000000u + (i & 0xfff);
        uint16_t sp = (uint16_t)(1024 + (i * 7919u) % 60000);
        (v6 ? frame6 : frame)(fwd + (size_t)i * STRIDE, s, d, sp, 4789);
        (v6 ? frame6 : frame)(rev + (size_t)i * STRIDE, d, s, 4789, sp);
        ins[i] = look[i] = i;
    }
    shuffle(ins, n);
    shuffle(look, n);

    for (uint32_t r = 0; r < reps; r++) {
        double t0, t1, c0, c1;
        oc_ct_info_t info;
        oc_pkt_meta_t m;

        t0 = now_s(CLOCK_MONOTONIC);
        for (uint32_t i = 0; i < n; i++)
            sink += oc__pkt_parse(fwd + (size_t)ins[i] * STRIDE, flen, 1514, &m) +
                    m.hash;
        t1 = now_s(CLOCK_MONOTONIC);
        r_parse[r] = n / (t1 - t0);

        oc__ct_flush(ct, -1);
        t0 = now_s(CLOCK_MONOTONIC);
        c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        for (uint32_t i = 0; i < n; i++)
            if (oc__ct_track(ct, 0, fwd + (size_t)ins[i] * STRIDE + 14, l3len, 0,
                            true, &info) != OC_CT_NEW) {
                fprintf(stderr, "bench-conntrack: flow %u not inserted\n", ins[i]);
                return 1;
            }
        c1 = now_s(CLOCK_THREAD_CPUTIME_ID);
        t1 = now_s(CLOCK_MONOTONIC);
        r_ins[r] = n / (t1 - t0);
        c_ins[r] = n / (c1 - c0);

        t0 = now_s(CLOCK_MONOTONIC);
        c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        for (uint32_t i = 0; i < n; i++)
            if (oc__ct_track(ct, 0, rev + (size_t)look[i] * STRIDE + 14, l3len, 1,
                            false, &info) != OC_CT_EST) {
                fprintf(stderr, "bench-conntrack: flow %u not found\n", look[i]);
                return 1;
            }
        c1 = now_s(CLOCK_THREAD_CPUTIME_ID);
        t1 = now_s(CLOCK_MONOTONIC);
        r_look[r] = n / (t1 - t0);
        c_look[r] = n / (c1 - c0);

        /* the same inserts and lookups, a burst at a time */
        oc__ct_flush(ct, -1);
        t0 = now_s(CLOCK_MONOTONIC);
        c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        if (run_bursts(ct, fwd, ins, n, burst, 0, true) != 0)
            return 1;
        c1 = now_s(CLOCK_THREAD_CPUTIME_ID);
        t1 = now_s(CLOCK_MONOTONIC);
        r_bins[r] = n / (t1 - t0);
        c_bins[r] = n / (c1 - c0);
        t0 = now_s(CLOCK_MONOTONIC);
        c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        if (run_bursts(ct, rev, look, n, burst, 1, false) != 0)
            return 1;
        c1 = now_s(CLOCK_THREAD_CPUTIME_ID);
        t1 = now_s(CLOCK_MONOTONIC);
        r_blook[r] = n / (t1 - t0);
        c_blook[r] = n / (c1 - c0);
        printf("{\"bench\":\"%s_run\",\"repeat\":%u,\"flows\":%u,"
               "\"parse_per_s\":%.0f,\"insert_per_s\":%.0f,\"lookup_per_s\":%.0f,"
               "\"insert_per_cpu_s\":%.0f,\"lookup_per_cpu_s\":%.0f,"
               "\"burst\":%u,\"insert_burst_per_s\":%.0f,"
               "\"lookup_burst_per_s\":%.0f,\"insert_burst_per_cpu_s\":%.0f,"
               "\"lookup_burst_per_cpu_s\":%.0f}\n",
               name, r, oc__ct_count(ct), r_parse[r], r_ins[r], r_look[r], c_ins[r],
               c_look[r], burst, r_bins[r], r_blook[r], c_bins[r], c_blook[r]);
        fflush(stdout);
    }
    {
        double mp = median(r_parse, (int)reps), mi = median(r_ins, (int)reps);
        double ml = median(r_look, (int)reps);
        double mbi = median(r_bins, (int)reps), mbl = median(r_blook, (int)reps);
        double cl = median(c_look, (int)reps), cbl = median(c_blook, (int)reps);
        double ci = median(c_ins, (int)reps), cbi = median(c_bins, (int)reps);
        size_t mem = oc__ct_mem_bytes(ct);
        printf("{\"bench\":\"%s\",\"flows\":%u,\"mem_bytes\":%zu,"
               "\"bytes_per_flow\":%.1f,\"repeats\":%u,"
               "\"insert_per_s_core\":%.0f,\"lookup_per_s_core\":%.0f,"
               "\"insert_per_cpu_s\":%.0f,\"lookup_per_cpu_s\":%.0f,"
               "\"burst\":%u,\"insert_burst_per_s_core\":%.0f,"
               "\"lookup_burst_per_s_core\":%.0f,"
               "\"insert_burst_per_cpu_s\":%.0f,\"lookup_burst_per_cpu_s\":%.0f,"
               "\"lookup_burst_vs_single_cpu\":%.2f,"
               "\"insert_burst_vs_single_cpu\":%.2f,"
               "\"baseline\":\"oc__pkt_parse\",\"parse_per_s\":%.0f,"
               "\"lookup_vs_parse\":%.3f,\"insert_vs_parse\":%.3f,"
               "\"lookup_burst_vs_parse\":%.3f,\"insert_burst_vs_parse\":%.3f}\n",
               name, n, mem, (double)mem / n, reps, mi, ml, ci, cl, burst, mbi, mbl,
               cbi, cbl, cbl / cl, cbi / ci, mp, ml / mp, mi / mp, mbl / mp,
               mbi / mp);
    }
    if (sink == 42)
        puts("");
    oc__ct_destroy(ct);
    free(fwd);
    free(rev);
    free(ins);
    free(look);
    return 0;
}
