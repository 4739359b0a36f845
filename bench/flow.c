/*
 * flow.c — bench-flow: what round-trip times from TCP timestamps cost the
 * flow table (src/pkt/flow.c) per packet on one core.  Baseline in the
 * same run: the same packets through oc__flow_update without the option
 * (ts NULL: the table's work before RTT sampling existed); measured: the
 * option read from the TCP header (oc__flow_tcp_ts) and oc__flow_update
 * with it, as offcore-dp's flow stage does.
 *
 * Traffic: F bulk TCP flows interleaved, two data segments forward then
 * one ACK back, TSvals ticking every 8 segments, each side echoing the
 * other's latest TSval; a packet every 3 us of virtual time.  Repeats
 * interleave the two modes (fresh table each); each run prints a JSON
 * line with ns per packet (thread CPU time), then the medians and their
 * ratio.  The ts runs must have produced RTT samples (checked: exit 1).
 *
 * Usage: bench-flow [--packets N (2000000)] [--flows F (64)] [--repeats R]
 * Single-threaded; no input but its arguments.
 */
#include "pkt/flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "median.h"

#define REPS_MAX 64

static uint64_t samples;

static void sink(void *arg, const oc_flow_rec_t *r)
{
    (void)arg;
    samples += r->rtt[0].n + r->rtt[1].n;
}

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One run: @p n packets; @p with_ts: read and pass the option.  @return
 * ns per packet (CPU), or -1 when the table could not be made. */
static double run(uint32_t n, uint32_t flows, int with_ts)
{
    oc_flow_conf_t c = {.capacity = 4096, .idle_ms = 1000000,
                        .active_ms = 1000000, .emit = sink};
    oc_flow_table_t *t;
    uint8_t hdr[32] = {0};
    uint64_t now = 1000000;
    double t0, t1;

    if (oc__flow_table_create(&c, &t) != OC_OK)
        return -1;
    hdr[12] = 8 << 4;
    hdr[20] = 1, hdr[21] = 1, hdr[22] = 8, hdr[23] = 10;
    t0 = cpu_s();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t f = i % flows, step = i / flows;
        int rev = step % 3 == 2;
        uint32_t val = step / 8 + (rev ? 5000 : 0);
        uint32_t ecr = rev ? step / 8 : step / 8 + 5000;
        oc_flow_ts_t ts;
        const oc_flow_ts_t *tp = NULL;
        hdr[24] = (uint8_t)(val >> 24), hdr[25] = (uint8_t)(val >> 16);
        hdr[26] = (uint8_t)(val >> 8), hdr[27] = (uint8_t)val;
        hdr[28] = (uint8_t)(ecr >> 24), hdr[29] = (uint8_t)(ecr >> 16);
        hdr[30] = (uint8_t)(ecr >> 8), hdr[31] = (uint8_t)ecr;
        now += 3;
        if (with_ts && oc__flow_tcp_ts(hdr, sizeof(hdr), &ts))
            tp = &ts;
        (void)oc__flow_update(t, 1500, 0x10, rev ? 0x0a000002 : 0x0a100000 + f,
                             rev ? 0x0a100000 + f : 0x0a000002,
                             rev ? 80 : 40000, rev ? 40000 : 80, 6,
                             OC_FLOW_NO_VNI, 0, now, tp);
    }
    t1 = cpu_s();
    oc__flow_table_destroy(t); /* the records: sink() counts samples */
    return (t1 - t0) * 1e9 / n;
}

int main(int argc, char **argv)
{
    uint32_t n = 2000000, flows = 64, reps = 5;
    double base[REPS_MAX], ts[REPS_MAX];

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--packets") && i + 1 < argc)
            n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--flows") && i + 1 < argc)
            flows = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            reps = (uint32_t)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--packets N (2000000)] [--flows F "
                            "(64, <= 3000)] [--repeats R (5, <= 64)]\n",
                    argv[0]);
            return 2;
        }
    }
    if (n < 1000 || flows < 1 || flows > 3000 || reps < 1 || reps > REPS_MAX) {
        fprintf(stderr, "bench-flow: packets >= 1000, flows 1..3000, "
                        "repeats 1..64\n");
        return 2;
    }
    for (uint32_t r = 0; r < reps; r++) {
        uint64_t s0;
        base[r] = run(n, flows, 0);
        s0 = samples;
        ts[r] = run(n, flows, 1);
        if (base[r] < 0 || ts[r] < 0) {
            fprintf(stderr, "bench-flow: no memory for the table\n");
            return 1;
        }
        if (samples == s0) {
            fprintf(stderr, "bench-flow: the ts run took no RTT sample\n");
            return 1;
        }
        printf("{\"bench\":\"flow_ts_run\",\"repeat\":%u,\"packets\":%u,"
               "\"flows\":%u,\"no_ts_ns_per_pkt\":%.2f,\"ts_ns_per_pkt\":%.2f,"
               "\"rtt_samples\":%llu}\n",
               r, n, flows, base[r], ts[r], (unsigned long long)(samples - s0));
        fflush(stdout);
    }
    {
        double mb = median(base, (int)reps), mt = median(ts, (int)reps);
        printf("{\"bench\":\"flow_ts\",\"packets\":%u,\"flows\":%u,"
               "\"repeats\":%u,\"ts_ns_per_pkt\":%.2f,"
               "\"baseline\":\"oc__flow_update without the option\","
               "\"no_ts_ns_per_pkt\":%.2f,\"ts_vs_no_ts\":%.3f}\n",
               n, flows, reps, mt, mb, mt / mb);
    }
    return 0;
}
