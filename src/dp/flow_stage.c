/*
 * flow_stage.c — offcore-dp's flow telemetry and IPFIX exporter.
 *
 * Each worker accounts the IPv4 packets it forwards (inner packets: after
 * ESP decryption, before encryption) in its own biflow table (src/pkt/
 * flow.c), expires flows on its own clock ticks, and pushes the records
 * into its own bounded single-producer ring.  One exporter thread drains
 * the rings every 100 ms into IPFIX messages (src/pkt/ipfix.c) and sends
 * each to every collector over UDP from non-blocking sockets.  The data
 * path never waits on the exporter: a full ring drops the record (counted:
 * records{result="queue_full"}); a collector that is down or slow costs its
 * messages (counted per collector), never packets.
 *
 * Ended flows go into per-tenant and per-attachment Prometheus histograms
 * (handshake RTT, timestamp RTT samples per direction, duration, bytes).
 *
 * `offcore dp flows`: the control thread asks for a snapshot; each worker
 * publishes its top flows (by octets) under its snapshot lock at its next
 * tick, so the table itself is only ever touched by its worker.
 *
 * Threads: workers (update, expire, push, snapshot), the exporter (pop,
 * encode, send), the control thread (snapshot request, metrics reads).
 */
#include "dp_int.h"
#include "tenant/tenant_int.h"
#include "metrics/metrics.h"
#include "pkt/flow.h"
#include "util/bytes.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/counter.h"
#include "util/spsc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RING      4096          /* records per worker queue (power of two) */
#define TOPN      32
#define TICK_MS   100
#define MSG_MAX   1400          /* IPFIX message bytes (fits a 1500 MTU) */
#define RTT_BUCKETS 12
#define HB        12            /* buckets of the per-tenant/port histograms */
#define TH_MAX    64            /* tenants (name, VNI) with histograms */

static const double rtt_le[RTT_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001,
                                           0.0025, 0.005,   0.01,   0.025,
                                           0.05,   0.1,     0.25,   1.0};

/* Per-tenant and per-attachment histograms of ended flows (flow_hist()):
 * handshake RTT (TCP), duration (first to last packet) and bytes (both
 * directions, whole flow: records after an active timeout are deltas, the
 * histogram takes the flow once, when it ends). */
enum { H_RTT, H_DUR, H_BYTES, H_N };
static const double hist_le[H_N][HB] = {
    {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
     0.25, 1.0},
    {0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600},
    {64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
     67108864, 268435456}};
static const char *const hist_fam[2][H_N] = {
    {"offcore_dp_tenant_flow_tcp_handshake_rtt_seconds",
     "offcore_dp_tenant_flow_duration_seconds",
     "offcore_dp_tenant_flow_bytes"},
    {"offcore_dp_attach_flow_tcp_handshake_rtt_seconds",
     "offcore_dp_attach_flow_duration_seconds",
     "offcore_dp_attach_flow_bytes"}};
static const char *const hist_help[H_N] = {
    ("TCP handshake RTT of ended flows (initiator's SYN to its ACK, as the "
     "DPU sees it)"),
    "duration of ended flows, first to last packet",
    "bytes of ended flows, both directions (IP total lengths)"};

_Static_assert(HB == OC_FLOW_RTT_BUCKETS, "RTT buckets: flow.h's");

typedef struct {
    uint64_t b[HB + 1]; /* per bucket; the exporter writes, metrics read */
    double   sum;
} hist_t;

/* Round-trip times from TCP timestamps (flow.h): every sample of an ended
 * flow, per direction: toward the responder / the initiator.  Buckets:
 * oc_flow_rtt_le_us (the flow table keeps per-bucket counts). */
static const char *const rtt_fam[2] = {"offcore_dp_tenant_flow_tcp_rtt_seconds",
                                       "offcore_dp_attach_flow_tcp_rtt_seconds"};
static const char *const rtt_toward[2] = {"responder", "initiator"};
#define RTT_HELP                                                               \
    ("round-trip times of ended TCP flows from their timestamps option "      \
     "(every sample; toward: from the DPU to that endpoint and back)")

typedef struct {
    char     name[32];
    uint32_t vni;
    hist_t   h[H_N];
    hist_t   rtt[2];    /* toward the responder, the initiator */
} thist_t;

struct oc_dp_flow_w {
    oc_flow_table_t *t;
    uint64_t next_tick;
    uint32_t budget;          /* slots expired per tick: a pass a second */
    /* util/spsc.h ring of records: the worker publishes, the exporter
     * releases; a handle each, on lines of their own */
    oc_spsc_t prod __attribute__((aligned(64)));
    oc_spsc_t cons __attribute__((aligned(64)));
    void     *ring;
    uint64_t queue_full, pushed;
    /* top-flows snapshot */
    pthread_mutex_t snap_lock;
    uint64_t snap_req_seen, snap_gen;
    uint32_t nsnap;
    oc_flow_rec_t snap[TOPN];
    oc_flow_stats_t st;       /* copied at each tick (for the metrics) */
};

typedef struct {
    char     name[OC_DP_PATH_MAX];
    int      fd;
    uint64_t sent, errors;
} collector_t;

struct oc_dp_flow {
    uint32_t ncoll, domain, template_s;
    collector_t coll[OC_DP_MAX_IPFIX];
    pthread_t thread;
    bool      started;
    int       stop;
    uint64_t  seq;           /* data records sent (RFC 7011 sequence) */
    uint64_t  records, messages, templates;
    uint64_t  snap_req;      /* control: requests for a snapshot */
    uint64_t  rtt_bucket[RTT_BUCKETS + 1], rtt_count;
    double    rtt_sum;
    uint32_t  nth;           /* entries of th (release store) */
    thist_t   th[TH_MAX];
    hist_t    ph[OC_DP_MAX_ATTACH][H_N];
    hist_t    prtt[OC_DP_MAX_ATTACH][2];
    uint64_t  hist_untracked; /* flows of a tenant past TH_MAX entries */
};

/* Flow times and the export time are wall-clock (util/clock.h's
 * oc__wall_us()): IPFIX carries them as dates (flowStart/EndMilliseconds,
 * exportTime) and collectors file them so.  What is scheduled here (ticks,
 * template refreshes) runs on the monotonic oc__now_ms(): a wall clock
 * stepped back would stall it. */

/* ------------------------------------------------------------ workers */

static void push(void *arg, const oc_flow_rec_t *r)
{
    struct oc_dp_flow_w *fw = arg;
    uint8_t *slot = oc__spsc_reserve(&fw->prod);
    if (slot == NULL) {
        OC__CTR_INC(fw->queue_full);
        return;
    }
    memcpy(slot, r, sizeof(*r));
    oc__spsc_publish(&fw->prod, sizeof(*r));
    OC__CTR_INC(fw->pushed);
}

void oc__dp_flow_one(oc_dp_worker_t *w, const uint8_t *frame,
                     const oc_pkt_meta_t *m, uint32_t vni, uint32_t a,
                     uint64_t *now)
{
    const uint8_t *ip;
    int fl = -1;
    oc_flow_ts_t ts, *tsp = NULL;

    if (m->reason != OC_PKT_R_IPV4 && m->reason != OC_PKT_R_IPV4_FRAG)
        return;
    if (*now == 0)
        *now = oc__wall_us();
    /* a non-first fragment has no ports: its own flow, as IPFIX exporters
     * without reassembly do.  The parser checked the IPv4 header, its
     * total length and (reason ipv4) the TCP header. */
    ip = frame + m->l3_off;
    if (m->reason == OC_PKT_R_IPV4 && m->key.proto == 6) {
        /* the parser checked the data offset: the options are in the
         * packet */
        const uint8_t *tcp = ip + (ip[0] & 15) * 4;
        fl = tcp[13];
        if (oc__flow_tcp_ts(tcp, (size_t)(tcp[12] >> 4) * 4, &ts))
            tsp = &ts;
    }
    (void)oc__flow_update(w->flow->t, oc__load_be16(ip + 2), fl,
                         m->key.src_ip, m->key.dst_ip, m->key.sport,
                         m->key.dport, m->key.proto, vni, (uint16_t)a, *now,
                         tsp);
}

void oc__dp_flow_burst(oc_dp_worker_t *w, uint32_t a, oc_pkt_t **pkts,
                       uint16_t n)
{
    uint64_t now = 0;
    for (uint16_t i = 0; i < n; i++)
        if (pkts[i]->verdict == OC_DP_V_FORWARD)
            oc__dp_flow_one(w, pkts[i]->data, &w->meta[i], OC_FLOW_NO_VNI, a,
                            &now);
}

static int cmp_octets(const void *a, const void *b)
{
    const oc_flow_rec_t *x = a, *y = b;
    uint64_t ox = x->octets[0] + x->octets[1], oy = y->octets[0] + y->octets[1];
    return ox < oy ? 1 : ox > oy ? -1 : 0;
}

typedef struct {
    oc_flow_rec_t top[TOPN];
    uint32_t n;
} top_t;

static void top_add(void *arg, const oc_flow_rec_t *r)
{
    top_t *t = arg;
    uint64_t o = r->octets[0] + r->octets[1];
    if (t->n < TOPN) {
        t->top[t->n++] = *r;
        qsort(t->top, t->n, sizeof(*r), cmp_octets);
    } else if (o > t->top[TOPN - 1].octets[0] + t->top[TOPN - 1].octets[1]) {
        t->top[TOPN - 1] = *r;
        qsort(t->top, t->n, sizeof(*r), cmp_octets);
    }
}

void oc__dp_flow_tick(oc_dp_worker_t *w)
{
    struct oc_dp_flow_w *fw = w->flow;
    uint64_t now = (uint64_t)oc__now_ms(), req;
    if (now < fw->next_tick)
        return;
    fw->next_tick = now + TICK_MS;
    /* a full pass over the table every ~second; the packets' clock (us) */
    (void)oc__flow_expire(fw->t, oc__wall_us(), fw->budget);
    pthread_mutex_lock(&fw->snap_lock);
    oc__flow_stats(fw->t, &fw->st);
    req = __atomic_load_n(&w->dp->flow->snap_req, __ATOMIC_ACQUIRE);
    if (req != fw->snap_req_seen) {
        static __thread top_t top;
        top.n = 0;
        oc__flow_walk(fw->t, top_add, &top);
        memcpy(fw->snap, top.top, top.n * sizeof(top.top[0]));
        fw->nsnap = top.n;
        fw->snap_req_seen = req;
        fw->snap_gen++;
    }
    pthread_mutex_unlock(&fw->snap_lock);
}

/* ----------------------------------------------------------- exporter */

static void send_all(struct oc_dp_flow *f, const uint8_t *m, size_t len)
{
    for (uint32_t c = 0; c < f->ncoll; c++) {
        collector_t *k = &f->coll[c];
        if (send(k->fd, m, len, MSG_DONTWAIT) == (ssize_t)len)
            OC__CTR_INC(k->sent);
        else
            OC__CTR_INC(k->errors);
    }
    OC__CTR_INC(f->messages);
}

static void rtt_observe(struct oc_dp_flow *f, uint32_t us)
{
    double s = us / 1e6;
    int b = 0;
    while (b < RTT_BUCKETS && s > rtt_le[b])
        b++;
    f->rtt_bucket[b]++;
    f->rtt_count++;
    f->rtt_sum += s;
}

static void hist_observe(hist_t *h, int k, double v)
{
    int b = 0;
    while (b < HB && v > hist_le[k][b])
        b++;
    OC__CTR_INC(h->b[b]);
    h->sum += v;
}

/* The RTT samples of one direction of a flow into @p h. */
static void hist_add_rtt(hist_t *h, const oc_flow_rtt_t *r)
{
    for (int b = 0; b <= HB; b++)
        if (r->b[b])
            OC__CTR_ADD(h->b[b], r->b[b]);
    h->sum += (double)r->sum_us / 1e6;
}

/* The histograms of tenant (name, VNI) of record @p r, or NULL.  The name
 * is the tenant on the record's attachment now, if its VNI is the
 * record's (a tenant deleted since: "-"). */
static thist_t *tenant_hist(oc_dp_t *dp, const oc_flow_rec_t *r)
{
    struct oc_dp_flow *f = dp->flow;
    const char *name = "-";
    int t = r->port < dp->nattach
                ? __atomic_load_n(&dp->att_tenant[r->port], __ATOMIC_ACQUIRE)
                : -1;
    thist_t *e;

    if (t >= 0 && dp->ten->t[t].vni == r->vni)
        name = dp->ten->t[t].name;
    for (uint32_t i = 0; i < f->nth; i++)
        if (f->th[i].vni == r->vni && !strcmp(f->th[i].name, name))
            return &f->th[i];
    if (f->nth == TH_MAX) {
        OC__CTR_INC(f->hist_untracked);
        return NULL;
    }
    e = &f->th[f->nth];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->vni = r->vni;
    __atomic_store_n(&f->nth, f->nth + 1, __ATOMIC_RELEASE);
    return e;
}

/* An ended flow (not an active-timeout delta) into its attachment's and
 * its tenant's histograms.  Exporter thread. */
static void flow_hist(oc_dp_t *dp, const oc_flow_rec_t *r)
{
    struct oc_dp_flow *f = dp->flow;
    hist_t *h[2] = {NULL, NULL}, *rh[2] = {NULL, NULL};
    double v[H_N] = {r->rtt_us / 1e6,
                     r->end_ms >= r->first_ms
                         ? (double)(r->end_ms - r->first_ms) / 1e3 : 0,
                     (double)r->total_octets};
    thist_t *e;

    if (r->end_reason == OC_FLOW_END_ACTIVE)
        return;
    if (r->port < dp->nattach) {
        h[0] = f->ph[r->port];
        rh[0] = f->prtt[r->port];
    }
    if (r->vni != OC_FLOW_NO_VNI && dp->ten != NULL &&
        (e = tenant_hist(dp, r)) != NULL) {
        h[1] = e->h;
        rh[1] = e->rtt;
    }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < H_N && h[i] != NULL; k++)
            if (k != H_RTT || r->rtt_us != 0)
                hist_observe(&h[i][k], k, v[k]);
    for (int i = 0; i < 2; i++)
        for (int d = 0; d < 2 && rh[i] != NULL; d++)
            if (r->rtt[d].n)
                hist_add_rtt(&rh[i][d], &r->rtt[d]);
}

/* Finish data message @p msg (@p len bytes, @p nrec records: the set
 * header's id and length, the message header stamped @p export_s, wall
 * seconds) and send it. */
static void send_records(struct oc_dp_flow *f, uint8_t *msg, size_t len,
                         uint32_t nrec, uint32_t export_s)
{
    msg[16] = OC_IPFIX_TEMPLATE_ID >> 8;
    msg[17] = OC_IPFIX_TEMPLATE_ID & 255;
    msg[18] = (uint8_t)((len - 16) >> 8);
    msg[19] = (uint8_t)(len - 16);
    oc__ipfix_header(msg, (uint16_t)len, export_s, (uint32_t)f->seq,
                    f->domain);
    if (f->ncoll)
        send_all(f, msg, len);
    f->seq += nrec;
    OC__CTR_ADD(f->records, nrec);
}

static void export_pass(oc_dp_t *dp, uint64_t *next_template, bool final)
{
    struct oc_dp_flow *f = dp->flow;
    uint8_t msg[MSG_MAX];
    size_t len = 0;
    uint32_t nrec = 0;
    uint64_t now = (uint64_t)oc__now_ms();
    uint32_t export_s = (uint32_t)(oc__wall_us() / 1000000u);

    if (now >= *next_template || final) {
        size_t tl = oc__ipfix_template_set(msg + 16);
        oc__ipfix_header(msg, (uint16_t)(16 + tl), export_s,
                        (uint32_t)f->seq, f->domain);
        if (f->ncoll)
            send_all(f, msg, 16 + tl);
        OC__CTR_INC(f->templates);
        *next_template = now + (uint64_t)f->template_s * 1000;
    }
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        struct oc_dp_flow_w *fw = dp->w[q].flow;
        uint32_t left = oc__spsc_count(&fw->cons), rlen;
        for (; left > 0; left--) {
            /* read in place: slots are OC_SPSC_ALIGN-aligned */
            const oc_flow_rec_t *r =
                (const oc_flow_rec_t *)oc__spsc_peek(&fw->cons, &rlen);
            if (r == NULL)
                break; /* counted, so not without a broken ring */
            if (len == 0)
                len = 20; /* message header + set header */
            oc__ipfix_record(msg + len, r);
            len += OC_IPFIX_REC_LEN;
            nrec++;
            if (r->rtt_us)
                rtt_observe(f, r->rtt_us);
            flow_hist(dp, r);
            oc__spsc_release(&fw->cons);
            if (len + OC_IPFIX_REC_LEN > MSG_MAX) {
                send_records(f, msg, len, nrec, export_s);
                len = 0;
                nrec = 0;
            }
        }
    }
    if (nrec > 0)
        send_records(f, msg, len, nrec, export_s);
}

static void *exporter_main(void *arg)
{
    oc_dp_t *dp = arg;
    uint64_t next_template = 0;
    while (!__atomic_load_n(&dp->flow->stop, __ATOMIC_ACQUIRE)) {
        export_pass(dp, &next_template, false);
        nanosleep(&(struct timespec){0, TICK_MS * 1000000L}, NULL);
    }
    return NULL;
}

/* ------------------------------------------------------------ control */

/* One `dp flows` cell of TCP-timestamp RTT samples: min/mean/max ms and
 * the sample count, "-" with none. */
static void rtt_cell(const oc_flow_rtt_t *r, FILE *out)
{
    char c[64];
    if (r->n == 0) {
        fprintf(out, "%-23s ", "-");
        return;
    }
    snprintf(c, sizeof(c), "%.3f/%.3f/%.3f:%u", r->min_us / 1000.0,
             (double)r->sum_us / r->n / 1000.0, r->max_us / 1000.0, r->n);
    fprintf(out, "%-23s ", c);
}

void oc__dp_flow_print(oc_dp_t *dp, uint32_t max, FILE *out)
{
    struct oc_dp_flow *f = dp->flow;
    top_t all;
    uint64_t want = __atomic_add_fetch(&f->snap_req, 1, __ATOMIC_ACQ_REL);
    int64_t t0 = oc__now_ms();

    /* wait for every worker's snapshot (a sleeping worker wakes within 1 s) */
    for (uint32_t q = 0; q < dp->nthreads;) {
        struct oc_dp_flow_w *fw = dp->w[q].flow;
        pthread_mutex_lock(&fw->snap_lock);
        bool done = fw->snap_req_seen >= want;
        pthread_mutex_unlock(&fw->snap_lock);
        if (done || oc__now_ms() - t0 > 2000) {
            q++;
            continue;
        }
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    all.n = 0;
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        struct oc_dp_flow_w *fw = dp->w[q].flow;
        pthread_mutex_lock(&fw->snap_lock);
        for (uint32_t i = 0; i < fw->nsnap; i++)
            top_add(&all, &fw->snap[i]);
        pthread_mutex_unlock(&fw->snap_lock);
    }
    fprintf(out, "%-21s %-21s %-5s %10s %12s %10s %12s %8s %-7s %-23s %-23s "
            "%s\n", "source", "destination", "proto", "packets", "bytes",
            "rpackets", "rbytes", "age_s", "rtt_ms", "resp_rtt_ms", "init_rtt_ms",
            "vni");
    for (uint32_t i = 0; i < all.n && i < max; i++) {
        const oc_flow_rec_t *r = &all.top[i];
        char s[32], d[32];
        snprintf(s, sizeof(s), "%u.%u.%u.%u:%u", r->src >> 24, r->src >> 16 & 255,
                 r->src >> 8 & 255, r->src & 255, r->sport);
        snprintf(d, sizeof(d), "%u.%u.%u.%u:%u", r->dst >> 24, r->dst >> 16 & 255,
                 r->dst >> 8 & 255, r->dst & 255, r->dport);
        fprintf(out, "%-21s %-21s %-5u %10llu %12llu %10llu %12llu %8.1f ",
                s, d, r->proto, (unsigned long long)r->packets[0],
                (unsigned long long)r->octets[0],
                (unsigned long long)r->packets[1],
                (unsigned long long)r->octets[1],
                (double)(r->end_ms - r->start_ms) / 1000.0);
        if (r->rtt_us)
            fprintf(out, "%-7.3f ", r->rtt_us / 1000.0);
        else
            fprintf(out, "%-7s ", "-");
        for (int k = 0; k < 2; k++)
            rtt_cell(&r->rtt[k], out);
        /* tenants may use the same addresses: the VNI tells them apart */
        if (r->vni != OC_FLOW_NO_VNI)
            fprintf(out, "%u\n", r->vni);
        else
            fprintf(out, "-\n");
    }
}

static void hist_copy(const hist_t *h, uint64_t b[HB + 1])
{
    for (int i = 0; i <= HB; i++)
        b[i] = OC__CTR_GET(h->b[i]);
}

/* Per-tenant (label tenant, vni) and per-attachment (label attach)
 * histograms of ended flows. */
static void hist_metrics(oc_dp_t *dp, oc_prom_t *p)
{
    struct oc_dp_flow *f = dp->flow;
    uint32_t nth = __atomic_load_n(&f->nth, __ATOMIC_ACQUIRE);
    uint64_t b[HB + 1];
    char vni[16];

    for (int k = 0; k < H_N && dp->ten != NULL; k++) {
        oc__prom_family(p, hist_fam[0][k], hist_help[k], OC_PROM_HISTOGRAM);
        for (uint32_t i = 0; i < nth; i++) {
            const thist_t *e = &f->th[i];
            snprintf(vni, sizeof(vni), "%u", e->vni);
            hist_copy(&e->h[k], b);
            oc__prom_histogram(p, hist_fam[0][k],
                              OC_PROM_LABELS({"tenant", e->name}, {"vni", vni}),
                              hist_le[k], HB, b, e->h[k].sum);
        }
    }
    if (dp->ten != NULL) {
        oc__prom_family(p, rtt_fam[0], RTT_HELP, OC_PROM_HISTOGRAM);
        for (uint32_t i = 0; i < nth; i++) {
            const thist_t *e = &f->th[i];
            snprintf(vni, sizeof(vni), "%u", e->vni);
            for (int d = 0; d < 2; d++) {
                hist_copy(&e->rtt[d], b);
                oc__prom_histogram(p, rtt_fam[0],
                                  OC_PROM_LABELS({"tenant", e->name},
                                                 {"vni", vni},
                                                 {"toward", rtt_toward[d]}),
                                  hist_le[H_RTT], HB, b, e->rtt[d].sum);
            }
        }
    }
    oc__prom_family(p, rtt_fam[1], RTT_HELP, OC_PROM_HISTOGRAM);
    for (uint32_t a = 0; a < dp->nattach; a++)
        for (int d = 0; d < 2; d++) {
            hist_copy(&f->prtt[a][d], b);
            oc__prom_histogram(p, rtt_fam[1],
                              OC_PROM_LABELS({"attach", dp->att[a].name},
                                             {"toward", rtt_toward[d]}),
                              hist_le[H_RTT], HB, b, f->prtt[a][d].sum);
        }
    for (int k = 0; k < H_N; k++) {
        oc__prom_family(p, hist_fam[1][k], hist_help[k], OC_PROM_HISTOGRAM);
        for (uint32_t a = 0; a < dp->nattach; a++) {
            hist_copy(&f->ph[a][k], b);
            oc__prom_histogram(p, hist_fam[1][k],
                              OC_PROM_LABELS({"attach", dp->att[a].name}),
                              hist_le[k], HB, b, f->ph[a][k].sum);
        }
    }
    if (dp->ten != NULL) {
        oc__prom_family(p, "offcore_dp_tenant_flow_hist_untracked_total",
                       "ended tenant flows not in a histogram (more than 64 "
                       "tenant names and VNIs seen)", OC_PROM_COUNTER);
        oc__prom_sample(p, "offcore_dp_tenant_flow_hist_untracked_total", NULL,
                       0, OC__CTR_GET(f->hist_untracked));
    }
}

#define FSUM(expr)                                                             \
    ({                                                                         \
        uint64_t s_ = 0;                                                       \
        for (uint32_t q_ = 0; q_ < dp->nthreads; q_++) {                       \
            struct oc_dp_flow_w *x = dp->w[q_].flow;                           \
            s_ += OC__CTR_GET(expr);                                             \
        }                                                                      \
        s_;                                                                    \
    })

void oc__dp_flow_metrics(oc_dp_t *dp, void *prom)
{
    oc_prom_t *p = prom;
    struct oc_dp_flow *f = dp->flow;
    uint64_t active = 0, created = 0, no_room = 0;
    if (f == NULL)
        return;
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        struct oc_dp_flow_w *fw = dp->w[q].flow;
        pthread_mutex_lock(&fw->snap_lock);
        active += fw->st.active;
        created += fw->st.created;
        no_room += fw->st.no_room;
        pthread_mutex_unlock(&fw->snap_lock);
    }
    oc__prom_family(p, "offcore_dp_flows", "flows in the tables", OC_PROM_GAUGE);
    oc__prom_sample(p, "offcore_dp_flows", NULL, 0, active);
    oc__prom_family(p, "offcore_dp_flows_created_total", "flows seen",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_dp_flows_created_total", NULL, 0, created);
    oc__prom_family(p, "offcore_dp_flows_untracked_total",
                   "new flows the full table could not take (flow_table)",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_dp_flows_untracked_total", NULL, 0, no_room);
    oc__prom_family(p, "offcore_dp_ipfix_records_total",
                   "flow records: exported, or dropped because the exporter's "
                   "queue was full (the data path never waits)",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_dp_ipfix_records_total",
                   OC_PROM_LABELS({"result", "exported"}),
                   OC__CTR_GET(f->records));
    oc__prom_sample(p, "offcore_dp_ipfix_records_total",
                   OC_PROM_LABELS({"result", "queue_full"}),
                   FSUM(x->queue_full));
    oc__prom_family(p, "offcore_dp_ipfix_messages_total",
                   "IPFIX messages per collector: sent, or failed (down, "
                   "refused, socket buffer full)", OC_PROM_COUNTER);
    for (uint32_t c = 0; c < f->ncoll; c++) {
        oc__prom_sample(p, "offcore_dp_ipfix_messages_total",
                       OC_PROM_LABELS({"collector", f->coll[c].name},
                                      {"result", "sent"}),
                       OC__CTR_GET(f->coll[c].sent));
        oc__prom_sample(p, "offcore_dp_ipfix_messages_total",
                       OC_PROM_LABELS({"collector", f->coll[c].name},
                                      {"result", "failed"}),
                       OC__CTR_GET(f->coll[c].errors));
    }
    oc__prom_family(p, "offcore_dp_ipfix_template_sends_total",
                   "template sets sent (at start, then every ipfix_template s)",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, "offcore_dp_ipfix_template_sends_total", NULL, 0,
                   OC__CTR_GET(f->templates));
    /* the exporter thread writes the histograms; a torn read of one
     * bucket is one observation off, never a crash */
    oc__prom_family(p, "offcore_dp_flow_tcp_handshake_rtt_seconds",
                   "TCP handshake RTT of exported flows, as the DPU sees it "
                   "(initiator's SYN to its ACK)", OC_PROM_HISTOGRAM);
    {
        uint64_t b[RTT_BUCKETS + 1];
        for (int i = 0; i <= RTT_BUCKETS; i++)
            b[i] = OC__CTR_GET(f->rtt_bucket[i]);
        oc__prom_histogram(p, "offcore_dp_flow_tcp_handshake_rtt_seconds", NULL,
                          0, rtt_le, RTT_BUCKETS, b, f->rtt_sum);
    }
    hist_metrics(dp, p);
}

/* ------------------------------------------------------ start and stop */

static int open_collector(const char *hostport, char *why, size_t whylen)
{
    char host[OC_DP_PATH_MAX];
    const char *colon = strrchr(hostport, ':');
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM},
                    *res = NULL;
    int fd, rc;

    if (colon == NULL || colon == hostport) {
        snprintf(why, whylen, "ipfix %s: expected HOST:PORT", hostport);
        return -1;
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
    rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0) {
        snprintf(why, whylen, "ipfix %s: %s", hostport, gai_strerror(rc));
        return -1;
    }
    fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        snprintf(why, whylen, "ipfix %s: %s", hostport, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

oc_status_t oc__dp_flow_init(oc_dp_t *dp, const oc_dp_conf_t *c)
{
    struct oc_dp_flow *f;
    char why[256];

    if (!c->flows)
        return OC_OK;
    f = dp->flow = calloc(1, sizeof(*f));
    if (f == NULL)
        return OC_ERR_NO_MEMORY;
    f->domain = c->ipfix_domain;
    f->template_s = c->ipfix_template_s;
    for (uint32_t i = 0; i < c->nipfix; i++) {
        collector_t *k = &f->coll[f->ncoll];
        k->fd = open_collector(c->ipfix[i], why, sizeof(why));
        if (k->fd < 0) {
            oc_error(OC_COMP_DP, "%s", why);
            return OC_ERR_CONFIG;
        }
        snprintf(k->name, sizeof(k->name), "%s", c->ipfix[i]);
        f->ncoll++;
    }
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        struct oc_dp_flow_w *fw = calloc(1, sizeof(*fw));
        oc_flow_conf_t fc = {.capacity = c->flow_table,
                             .idle_ms = c->flow_idle_s * 1000,
                             .active_ms = c->flow_active_s * 1000,
                             .emit = push};
        size_t bytes = oc__spsc_bytes(RING, sizeof(oc_flow_rec_t));
        if (fw == NULL)
            return OC_ERR_NO_MEMORY;
        dp->w[q].flow = fw;
        if ((fw->ring = aligned_alloc(OC_SPSC_ALIGN, bytes)) == NULL)
            return OC_ERR_NO_MEMORY;
        if (oc__spsc_attach(&fw->prod, fw->ring, bytes, RING,
                            sizeof(oc_flow_rec_t), 1) != OC_OK ||
            oc__spsc_attach(&fw->cons, fw->ring, bytes, RING,
                            sizeof(oc_flow_rec_t), 0) != OC_OK)
            return OC_ERR_INVALID_PARAM;
        fw->budget = c->flow_table / (1000 / TICK_MS) + 1;
        pthread_mutex_init(&fw->snap_lock, NULL);
        fc.arg = fw;
        if (oc__flow_table_create(&fc, &fw->t) != OC_OK)
            return OC_ERR_NO_MEMORY;
    }
    if (pthread_create(&f->thread, NULL, exporter_main, dp) != 0)
        return OC_ERR_NO_MEMORY;
    f->started = true;
    return OC_OK;
}

/* After the workers stopped: every flow still in a table is exported
 * (end reason forced), then the exporter stops. */
void oc__dp_flow_free(oc_dp_t *dp)
{
    struct oc_dp_flow *f = dp->flow;
    uint64_t next = UINT64_MAX;
    if (f == NULL)
        return;
    if (f->started) {
        __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
        pthread_join(f->thread, NULL);
    }
    for (uint32_t q = 0; dp->w != NULL && q < dp->nthreads; q++) {
        struct oc_dp_flow_w *fw = dp->w[q].flow;
        if (fw == NULL)
            continue;
        oc__flow_table_destroy(fw->t); /* pushes the last records */
        fw->t = NULL;
    }
    if (f->started)
        export_pass(dp, &next, false);
    for (uint32_t q = 0; dp->w != NULL && q < dp->nthreads; q++) {
        struct oc_dp_flow_w *fw = dp->w[q].flow;
        if (fw == NULL)
            continue;
        pthread_mutex_destroy(&fw->snap_lock);
        free(fw->ring);
        free(fw);
        dp->w[q].flow = NULL;
    }
    /* what each collector got in all, the last records included: the
     * metrics are gone with the daemon (and a test waits on this line for
     * its capture to hold that many messages) */
    for (uint32_t c = 0; c < f->ncoll; c++) {
        oc_info(OC_COMP_DP, "ipfix %s: %llu messages sent, %llu failed",
                f->coll[c].name, (unsigned long long)f->coll[c].sent,
                (unsigned long long)f->coll[c].errors);
        close(f->coll[c].fd);
    }
    free(f);
    dp->flow = NULL;
}
