/*
 * router_bench.c — router-bench: one routing thread of offcored, in
 * process, fed pre-made stream bundles, against a bare partitioning loop
 * and (optionally) another revision's router, runs interleaved.
 *
 * For each shape and destination count R: R ranks, all local to the one
 * router, each with stream bundles (wire.h, column layout, full bundles)
 * of uniformly random destinations among the R —
 *   oneway:   8-byte items;
 *   reqreply: rounds of 16-byte requests, then the 8-byte replies of each
 *             rank to the requests it received (the reply streams of the
 *             responders, as index-gather's handlers send them).
 * Each kernel (a module built from some tree's router, rb_kernel.h) routes
 * the same feed; its deliveries go to a sink on the routing thread that
 * counts them per destination, and in one untimed run per kernel checks
 * every item: it reached the rank it was sent to, from the rank that sent
 * it, exactly once and in order.  The bare loop is the same scatter of the
 * same items in plain C — per bundle, count per destination, then copy
 * into per-destination arrays of a bundle's size — with no validation,
 * headers, flush policy or credits: what the routing kernel is up against.
 *
 * With --channel shm the bundles reach the router as the apps' do: each
 * rank on its shared-memory channel with offcored, the ranks played by
 * this thread (rb_kernel.c) — written into the ranks' rings, read from
 * their delivery rings — so the routing thread runs rshm.c's path, not
 * the transport seam's.
 *
 * Prints one JSON line per (channel, shape, R) (docs/router.md describes
 * the fields).  Exit 0 when every run verified, 1 otherwise, 2 bad arguments.
 */
#include "rb_kernel.h"

#include "wire/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JOB 7
#define MAX_KERNELS 2

typedef struct {
    uint32_t shape;          /* 0 oneway, 1 reqreply */
    uint32_t R;
    uint8_t *arena;
    rb_bundle_t *pass;       /* one pass of the feed */
    uint64_t npass;
    rb_bundle_t *feed;       /* passes x pass */
    uint64_t nfeed, passes;
    uint64_t items_per_pass; /* items (requests + replies) */
    uint32_t *per_pass[2];   /* [item 8 / 16][src * R + dst]: items */
    uint64_t *exp_dst;       /* items per destination, whole run */
    uint64_t items;          /* whole run */
} work_t;

typedef struct {
    const work_t *w;
    int verify;
    uint64_t total, bundles;
    uint64_t *cnt;           /* [R] */
    uint32_t *next[2];       /* verify: [src * R + dst] items seen */
    uint64_t bad;
    char why[160];
} sink_t;

typedef struct {
    const char *path;
    const rb_kernel_t *ops;
    void *k;
    double rate[64];         /* per second of the routing thread's busy
                                CPU (shm: less its idle turns) */
    double cpu[64];          /* per second of its CPU, idle turns too */
    double wall[64];         /* per second of wall-clock time */
    double per_bundle;       /* items per delivered bundle, last run */
    double turns_per_bundle; /* routing loop turns per bundle in, last run */
    double idle_frac;        /* of those turns, idle, last run */
} kern_t;

static struct {
    uint32_t bundle_size, window, buffers, max_inflight, flush_timeout_us;
    uint64_t items, pool_bundles, seed;
    uint32_t repeats;
    const char *rev;
    uint32_t shm_slots;      /* the rings of --channel shm */
} opt = {8000, 32, 1024, 16, 200, 16000000, 1024, 1, 7, NULL, 64};

static int failed;
static int quiesce_said;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* a uniform destination in [0, R) */
static uint32_t rnd_dst(uint64_t *s, uint32_t R)
{
    return (uint32_t)(((rng_next(s) >> 32) * (uint64_t)R) >> 32);
}

static uint64_t enc(uint32_t dst, uint32_t src, uint32_t k)
{
    return (uint64_t)dst << 48 | (uint64_t)src << 32 | k;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (p == NULL) {
        fprintf(stderr, "router-bench: out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- the workload ------------------------------------------------------ */

/* Start a column stream bundle of rank @p src at @p at with @p n items of
 * @p isz bytes; returns where its items go (the destinations at at + 40). */
static uint8_t *col_begin(uint8_t *at, uint32_t src, uint32_t n, uint32_t isz,
                          uint64_t seq, uint32_t *len)
{
    oc_wire_hdr_t h;
    const size_t dbytes = oc__wire_col_dst_bytes(n);
    memset(&h, 0, sizeof(h));
    h.flags = OC_WIRE_F_FIXED | OC_WIRE_F_STREAM;
    h.item_size = (uint16_t)isz;
    h.count = n;
    h.length = (uint32_t)(OC_WIRE_HDR_LEN + dbytes + (size_t)n * isz);
    h.job = JOB;
    h.seq = seq;
    h.src = src;
    h.dst = OC_WIRE_RANK_NONE;
    oc__wire_hdr_write(at, &h);
    if (n & 1)
        oc__store_le32(at + OC_WIRE_HDR_LEN + 4 * (size_t)n, 0);
    *len = h.length;
    return at + OC_WIRE_HDR_LEN + dbytes;
}

static uint8_t *arena_take(work_t *w, size_t *used, size_t cap, uint32_t len)
{
    uint8_t *p = w->arena + *used;
    *used += (len + 63) & ~(size_t)63;
    if (*used > cap) {
        fprintf(stderr, "router-bench: arena overflow\n");
        exit(1);
    }
    return p;
}

static void work_build(work_t *w, uint32_t shape, uint32_t R)
{
    const uint32_t cap8 = oc__wire_col_cap(opt.bundle_size, 8);
    const uint32_t cap16 = oc__wire_col_cap(opt.bundle_size, 16);
    uint64_t rng = opt.seed * 0x9e3779b97f4a7c15ull + R * 2 + shape + 1;
    const uint64_t P = opt.pool_bundles / R > 0 ? opt.pool_bundles / R : 1;
    /* bundles of one pass, at most: oneway P x R; reqreply per round R
     * requests and the replies (cap16 x R items in bundles of cap8, plus
     * one partial bundle per rank) */
    const uint64_t maxb = shape == 0 ? P * R
                                     : P * (2 * (uint64_t)R +
                                            (uint64_t)R * cap16 / cap8 + 1);
    size_t used = 0, cap = maxb * ((opt.bundle_size + 63) & ~(size_t)63);
    uint32_t *kq, *kr, *rq = NULL, *off = NULL, *rs = NULL;
    uint64_t seq = 0;

    memset(w, 0, sizeof(*w));
    w->shape = shape;
    w->R = R;
    w->arena = aligned_alloc(64, cap);
    w->pass = xcalloc(maxb, sizeof(*w->pass));
    if (w->arena == NULL) {
        fprintf(stderr, "router-bench: out of memory\n");
        exit(1);
    }
    memset(w->arena, 0, cap);
    w->per_pass[0] = xcalloc((size_t)R * R, sizeof(uint32_t));
    w->per_pass[1] = xcalloc((size_t)R * R, sizeof(uint32_t));
    kq = w->per_pass[shape == 0 ? 0 : 1];
    kr = w->per_pass[0];
    if (shape == 1) { /* a round's requests (their destinations), then
                         * the requesters by responder (a stable sort) */
        rq = xcalloc((size_t)R * cap16, sizeof(uint32_t));
        rs = xcalloc((size_t)R * cap16, sizeof(uint32_t));
        off = xcalloc((size_t)R + 1, sizeof(uint32_t));
    }
    for (uint64_t j = 0; j < P; j++) {
        const uint32_t n = shape == 0 ? cap8 : cap16;
        const uint32_t isz = shape == 0 ? 8 : 16;
        for (uint32_t s = 0; s < R; s++) {
            uint32_t len;
            uint8_t *b = w->arena + used;
            uint8_t *items = col_begin(b, s, n, isz, seq++, &len);
            arena_take(w, &used, cap, len);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t d = rnd_dst(&rng, R);
                uint64_t v = enc(d, s, kq[(size_t)s * R + d]++);
                oc__store_le32(b + OC_WIRE_HDR_LEN + 4 * (size_t)i, d);
                oc__store_le64(items + (size_t)i * isz, v);
                if (isz == 16) {
                    oc__store_le64(items + (size_t)i * isz + 8, ~v);
                    rq[(size_t)s * cap16 + i] = d;
                }
            }
            w->pass[w->npass++] = (rb_bundle_t){b, len, s};
            w->items_per_pass += n;
        }
        if (shape == 0)
            continue;
        /* the replies of this round: each responder's stream, in the
         * order its requests came */
        memset(off, 0, ((size_t)R + 1) * sizeof(uint32_t));
        for (size_t i = 0; i < (size_t)R * cap16; i++)
            off[rq[i] + 1]++;
        for (uint32_t d = 0; d < R; d++)
            off[d + 1] += off[d];
        for (size_t i = 0; i < (size_t)R * cap16; i++)
            rs[off[rq[i]]++] = (uint32_t)(i / cap16);
        for (uint32_t d = R; d > 0; d--) /* back to the starts */
            off[d] = off[d - 1];
        off[0] = 0;
        for (uint32_t d = 0; d < R; d++) {
            const uint32_t *rep = rs + off[d], nrep = off[d + 1] - off[d];
            for (uint32_t i = 0; i < nrep;) {
                uint32_t m = nrep - i < cap8 ? nrep - i : cap8, len;
                uint8_t *b = w->arena + used;
                uint8_t *items = col_begin(b, d, m, 8, seq++, &len);
                arena_take(w, &used, cap, len);
                for (uint32_t x = 0; x < m; x++, i++) {
                    uint32_t s = rep[i];
                    oc__store_le32(b + OC_WIRE_HDR_LEN + 4 * (size_t)x, s);
                    oc__store_le64(items + (size_t)x * 8,
                                  enc(s, d, kr[(size_t)d * R + s]++));
                }
                w->pass[w->npass++] = (rb_bundle_t){b, len, d};
                w->items_per_pass += m;
            }
        }
    }
    free(rq);
    free(rs);
    free(off);
    w->passes = (opt.items + w->items_per_pass - 1) / w->items_per_pass;
    if (w->passes == 0)
        w->passes = 1;
    w->nfeed = w->passes * w->npass;
    w->feed = xcalloc(w->nfeed, sizeof(*w->feed));
    for (uint64_t i = 0; i < w->nfeed; i++)
        w->feed[i] = w->pass[i % w->npass];
    w->items = w->passes * w->items_per_pass;
    w->exp_dst = xcalloc(R, sizeof(uint64_t));
    for (int t = 0; t < 2; t++)
        for (uint32_t s = 0; s < R; s++)
            for (uint32_t d = 0; d < R; d++)
                w->exp_dst[d] += w->passes * w->per_pass[t][(size_t)s * R + d];
}

static void work_free(work_t *w)
{
    free(w->arena);
    free(w->pass);
    free(w->feed);
    free(w->per_pass[0]);
    free(w->per_pass[1]);
    free(w->exp_dst);
}

/* messages in the shape's unit: pairs for reqreply */
static double unit_msgs(const work_t *w)
{
    return w->shape == 0 ? (double)w->items : (double)w->items / 2;
}

/* ---- the sink (on the routing thread) ---------------------------------- */

static void sink_fail(sink_t *k, const char *fmt, uint32_t a, uint32_t b)
{
    if (k->bad++ == 0)
        snprintf(k->why, sizeof(k->why), fmt, a, b);
}

static void verify_bundle(sink_t *k, uint32_t rank, const uint8_t *data,
                          uint32_t len)
{
    const work_t *w = k->w;
    oc_wire_check_t chk = {JOB, w->R, rank, OC_WIRE_RANK_NONE, 0};
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t m;

    if (oc__wire_validate(data, len, &chk, &h) != OC_OK) {
        sink_fail(k, "an invalid bundle for rank %u (%u bytes)", rank, len);
        return;
    }
    oc__wire_iter_init(&it, data, &h);
    while (oc__wire_iter_next(&it, &m)) {
        const int t = m.len == 16;
        uint64_t v;
        if ((m.len != 8 && m.len != 16) || (t && w->shape == 0)) {
            sink_fail(k, "a message of %u bytes for rank %u", m.len, rank);
            continue;
        }
        v = oc__load_le64(m.payload);
        const uint32_t d = (uint32_t)(v >> 48), s = (uint32_t)(v >> 32) & 0xffff;
        if (d != rank || s != m.src || s >= w->R) {
            sink_fail(k, "an item for rank %u arrived at rank %u", d, rank);
            continue;
        }
        const size_t idx = (size_t)s * w->R + d;
        const uint32_t pp = w->per_pass[t][idx];
        if (pp == 0 || (uint32_t)v != k->next[t][idx] % pp ||
            (t && oc__load_le64(m.payload + 8) != ~v)) {
            sink_fail(k, "from rank %u to rank %u: lost, repeated or "
                      "reordered", s, d);
            continue;
        }
        k->next[t][idx]++;
    }
}

static int sink_deliver(void *arg, uint32_t rank, const uint8_t *data,
                        uint32_t len)
{
    sink_t *k = arg;
    const uint32_t n = oc__load_le32(data + 8); /* the header's count */

    if (rank >= k->w->R || len < OC_WIRE_HDR_LEN) {
        sink_fail(k, "a bundle for rank %u (%u bytes)", rank, len);
        return 0;
    }
    if (k->verify)
        verify_bundle(k, rank, data, len);
    k->cnt[rank] += n;
    k->bundles++;
    k->total += n;
    return k->total >= k->w->items;
}

static void sink_reset(sink_t *k, const work_t *w, int verify)
{
    k->w = w;
    k->verify = verify;
    k->total = k->bundles = k->bad = 0;
    k->why[0] = 0;
    memset(k->cnt, 0, w->R * sizeof(*k->cnt));
    if (verify)
        for (int t = 0; t < 2; t++)
            memset(k->next[t], 0, (size_t)w->R * w->R * sizeof(uint32_t));
}

/* After a run: every destination got what was sent to it. */
static void sink_check(sink_t *k)
{
    const work_t *w = k->w;
    for (uint32_t d = 0; d < w->R; d++)
        if (k->cnt[d] != w->exp_dst[d])
            sink_fail(k, "rank %u got %u items too many or too few", d,
                      (uint32_t)(k->cnt[d] - w->exp_dst[d]));
    if (!k->verify)
        return;
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < (size_t)w->R * w->R; i++)
            if (k->next[t][i] != w->passes * w->per_pass[t][i])
                sink_fail(k, "from rank %u to rank %u: items missing",
                          (uint32_t)(i / w->R), (uint32_t)(i % w->R));
}

/* ---- the bare partitioning loop ----------------------------------------- */

typedef struct {
    uint32_t  R, cap;        /* bytes per destination array: a bundle's
                                payload room, as one outlet per rank has */
    uint32_t *hist;
    uint32_t *fill;          /* bytes */
    uint8_t  *base;
    uint8_t **pos;
    uint64_t *got;           /* items placed per destination */
    uint64_t  arrays;        /* arrays filled ("bundles") */
} bare_t;

static void bare_init(bare_t *b, uint32_t R)
{
    memset(b, 0, sizeof(*b));
    b->R = R;
    b->cap = opt.bundle_size - OC_WIRE_HDR_LEN;
    b->hist = xcalloc(R, sizeof(uint32_t));
    b->pos = xcalloc(R, sizeof(uint8_t *));
    b->got = xcalloc(R, sizeof(uint64_t));
    b->fill = xcalloc(R, sizeof(uint32_t));
    b->base = aligned_alloc(64, (size_t)R * opt.bundle_size);
    if (b->base == NULL) {
        fprintf(stderr, "router-bench: out of memory\n");
        exit(1);
    }
    memset(b->base, 0, (size_t)R * opt.bundle_size);
}

static void bare_free(bare_t *b)
{
    free(b->hist);
    free(b->pos);
    free(b->got);
    free(b->fill);
    free(b->base);
}

/* One stream bundle: count per destination, make room, copy. */
static inline __attribute__((always_inline)) void
bare_bundle(bare_t *b, const uint8_t *data, const size_t stride)
{
    const uint32_t n = oc__load_le32(data + 8), R = b->R, cap = b->cap;
    const uint8_t *dc = data + OC_WIRE_HDR_LEN;
    const uint8_t *items = dc + oc__wire_col_dst_bytes(n);
    uint32_t *restrict hist = b->hist, *restrict fill = b->fill;
    uint8_t **restrict pos = b->pos;
    uint8_t *const base = b->base;

    for (uint32_t i = 0; i < n; i++) /* count */
        hist[oc__load_le32(dc + 4 * (size_t)i)]++;
    for (uint32_t d = 0; d < R; d++) { /* room, and where each run goes */
        const uint32_t h = hist[d] * (uint32_t)stride;
        if (h == 0)
            continue;
        if (fill[d] + h > cap) { /* full: "delivered" */
            b->arrays++;
            fill[d] = 0;
        }
        pos[d] = base + (size_t)d * opt.bundle_size + fill[d];
        fill[d] += h;
        b->got[d] += hist[d];
        hist[d] = 0;
    }
    for (uint32_t i = 0; i < n; i++) { /* copy */
        const uint32_t d = oc__load_le32(dc + 4 * (size_t)i);
        memcpy(pos[d], items + i * stride, stride);
        pos[d] += stride;
    }
}

/* Returns the seconds of this thread's CPU time it took (and the wall
 * clock's in *wall); b->got[] the items per destination. */
static double bare_run(bare_t *b, const work_t *w, double *wall)
{
    double t0, t1, c0, c1;
    memset(b->fill, 0, w->R * sizeof(uint32_t));
    memset(b->got, 0, w->R * sizeof(uint64_t));
    b->arrays = 0;
    t0 = clock_s(CLOCK_MONOTONIC);
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < w->nfeed; i++) {
        const uint8_t *data = w->feed[i].data;
        if (oc__load_le32(data + 4) >> 16 == 16) /* item_size */
            bare_bundle(b, data, 16);
        else
            bare_bundle(b, data, 8);
    }
    c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    t1 = clock_s(CLOCK_MONOTONIC);
    *wall = t1 - t0;
    return c1 - c0;
}

/* ---- kernels -------------------------------------------------------------- */

static int kern_load(kern_t *k, const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    rb_kernel_fn fn;
    memset(k, 0, sizeof(*k));
    k->path = path;
    if (h == NULL) {
        fprintf(stderr, "router-bench: %s\n", dlerror());
        return -1;
    }
    fn = (rb_kernel_fn)(uintptr_t)dlsym(h, RB_KERNEL_SYMBOL);
    if (fn == NULL || (k->ops = fn()) == NULL || k->ops->abi != RB_KERNEL_ABI) {
        fprintf(stderr, "router-bench: %s: no kernel of ABI %d\n", path,
                RB_KERNEL_ABI);
        return -1;
    }
    return 0;
}

static int kern_run(kern_t *k, const work_t *w, sink_t *s, int verify,
                    uint32_t rep, const char *label)
{
    rb_sink_t rs = {sink_deliver, s};
    rb_run_t r;

    sink_reset(s, w, verify);
    if (k->ops->run(k->k, w->feed, w->nfeed, &rs, 120000, &r) != 0) {
        fprintf(stderr, "router-bench: %s: the run did not complete (%" PRIu64
                " of %" PRIu64 " items delivered)\n", label, s->total,
                w->items);
        exit(1); /* the routing thread still holds the feed */
    }
    sink_check(s);
    if (r.rejects || r.undeliverable)
        sink_fail(s, "the router rejected %u bundles, dropped %u messages",
                  (uint32_t)r.rejects, (uint32_t)r.undeliverable);
    if (s->bad) {
        fprintf(stderr, "router-bench: %s, %s, %u destinations: %s (%" PRIu64
                " errors)\n", label, w->shape ? "reqreply" : "oneway", w->R,
                s->why, s->bad);
        failed = 1;
        return -1;
    }
    k->rate[rep] = unit_msgs(w) / (r.busy_cpu_ns * 1e-9);
    k->cpu[rep] = unit_msgs(w) / (r.cpu_ns * 1e-9);
    k->idle_frac = r.turns ? (double)r.idle_turns / (double)r.turns : 0;
    k->wall[rep] = unit_msgs(w) / (r.ns * 1e-9);
    k->per_bundle = r.bundles_out ? (double)w->items / r.bundles_out : 0;
    k->turns_per_bundle = (double)r.turns / (double)w->nfeed;
    return 0;
}

/* ---- output ---------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, uint32_t n)
{
    double s[64];
    memcpy(s, v, n * sizeof(*v));
    qsort(s, n, sizeof(*s), cmp_d);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void print_list(const double *v, uint32_t n)
{
    putchar('[');
    for (uint32_t i = 0; i < n; i++)
        printf("%s%.4g", i ? "," : "", v[i]);
    putchar(']');
}

static void bench_one(kern_t *ks, int nk, uint32_t shm, uint32_t shape,
                      uint32_t R)
{
    work_t w;
    bare_t b;
    sink_t s;
    double bare[64], bare_wall[64], l0 = load1(), m_new, m_bare;
    const char *label[MAX_KERNELS] = {"router", "main's router"};
    int ok = 1;
    rb_params_t p = {RB_KERNEL_ABI, R, JOB, opt.bundle_size, opt.buffers,
                     opt.max_inflight, opt.flush_timeout_us, opt.window,
                     shm ? opt.shm_slots : 0};

    work_build(&w, shape, R);
    bare_init(&b, R);
    memset(&s, 0, sizeof(s));
    s.cnt = xcalloc(R, sizeof(*s.cnt));
    for (int t = 0; t < 2; t++)
        s.next[t] = xcalloc((size_t)R * R, sizeof(uint32_t));

    /* each kernel: created, then one untimed run checking every item */
    for (int i = 0; i < nk; i++) {
        if (ks[i].ops->create(&p, &ks[i].k) != 0) {
            fprintf(stderr, "router-bench: %s: cannot create a router of %u "
                    "ranks\n", ks[i].path, R);
            exit(1);
        }
        if (kern_run(&ks[i], &w, &s, 1, 0, label[i]) != 0)
            ok = 0;
    }
    (void)bare_run(&b, &w, &bare_wall[0]); /* warm */

    /* the timed runs: kernels and the bare loop in turn, the order
     * rotated every repeat, each routing thread asleep before any run */
    for (uint32_t rep = 0; rep < opt.repeats && ok; rep++) {
        for (int j = 0; j <= nk && ok; j++) {
            int who = (int)((j + rep) % (uint32_t)(nk + 1));
            for (int i = 0; i < nk; i++)
                if (!ks[i].ops->quiesce(ks[i].k, 1000) && !quiesce_said++)
                    fprintf(stderr, "router-bench: a routing thread did not "
                            "go to sleep within 1 s: its spinning is in the "
                            "figures\n");
            if (who == nk) {
                double sec = bare_run(&b, &w, &bare_wall[rep]);
                for (uint32_t d = 0; d < R; d++)
                    if (b.got[d] != w.exp_dst[d]) {
                        fprintf(stderr, "router-bench: the bare loop lost "
                                "items of rank %u\n", d);
                        ok = 0;
                        failed = 1;
                    }
                bare[rep] = unit_msgs(&w) / sec;
                bare_wall[rep] = unit_msgs(&w) / bare_wall[rep];
            } else if (kern_run(&ks[who], &w, &s, 0, rep, label[who]) != 0) {
                ok = 0;
            }
        }
    }

    const uint32_t n = opt.repeats;
    m_new = ok ? median(ks[0].rate, n) : 0;
    m_bare = ok ? median(bare, n) : 0;
    printf("{\"bench\":\"router\",\"channel\":\"%s\",\"shape\":\"%s\","
           "\"dests\":%u,\"unit\":\"%s\",", shm ? "shm" : "transport",
           shape ? "reqreply" : "oneway", R,
           shape ? "request+reply pairs" : "8-byte messages");
    if (ok)
        printf("\"msgs_per_s\":%.4g,\"ratio_bare\":%.3f,", m_new,
               m_new / m_bare);
    else
        printf("\"msgs_per_s\":null,\"ratio_bare\":null,");
    if (nk > 1 && ok)
        printf("\"ratio_main\":%.3f,", m_new / median(ks[1].rate, n));
    else
        printf("\"ratio_main\":null,");
    printf("\"runs\":");
    print_list(ks[0].rate, ok ? n : 0);
    printf(",\"bare_msgs_per_s\":%.4g,\"bare_runs\":", m_bare);
    print_list(bare, ok ? n : 0);
    if (nk > 1) {
        printf(",\"main_msgs_per_s\":%.4g,\"main_runs\":",
               ok ? median(ks[1].rate, n) : 0);
        print_list(ks[1].rate, ok ? n : 0);
        printf(",\"main_items_per_bundle_out\":%.1f,\"rev\":\"%s\"",
               ks[1].per_bundle, opt.rev ? opt.rev : "");
        if (shm)
            printf(",\"main_turns_per_bundle_in\":%.2f",
                   ks[1].turns_per_bundle);
    }
    if (ok) /* the same, by the wall clock (a busy machine's share) */
        printf(",\"wall_msgs_per_s\":%.4g,\"wall_bare_msgs_per_s\":%.4g",
               median(ks[0].wall, n), median(bare_wall, n));
    if (shm && ok) { /* a thread that waits for the ranks turns idle */
        printf(",\"shm_slots\":%u,\"turns_per_bundle_in\":%.2f,"
               "\"idle_turns\":%.3f,\"cpu_msgs_per_s\":%.4g,\"cpu_runs\":",
               opt.shm_slots, ks[0].turns_per_bundle, ks[0].idle_frac,
               median(ks[0].cpu, n));
        print_list(ks[0].cpu, n);
        if (nk > 1)
            printf(",\"main_idle_turns\":%.3f,\"main_cpu_msgs_per_s\":%.4g",
                   ks[1].idle_frac, median(ks[1].cpu, n));
    }
    printf(",\"clock\":\"%s\",", shm ? "thread CPU time less idle turns"
                                       : "thread CPU time");
    printf("\"items_per_bundle_out\":%.1f,\"items_per_run\":%" PRIu64
           ",\"bundles_per_run\":%" PRIu64 ",\"bundle_size\":%u,"
           "\"window\":%u,\"flush_timeout_us\":%u,\"repeats\":%u,"
           "\"load1_start\":%.2f,"
           "\"load1_end\":%.2f,\"verified\":%s}\n",
           ks[0].per_bundle, w.items, w.nfeed, opt.bundle_size, opt.window,
           opt.flush_timeout_us, n, l0, load1(), ok ? "true" : "false");
    fflush(stdout);

    for (int i = 0; i < nk; i++) {
        ks[i].ops->destroy(ks[i].k);
        ks[i].k = NULL;
    }
    free(s.cnt);
    free(s.next[0]);
    free(s.next[1]);
    bare_free(&b);
    work_free(&w);
}

/* ---- main ------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr,
"usage: router-bench [options]\n"
"  --shape oneway|reqreply|both  (both)\n"
"  --channel transport|shm|both  how bundles reach the router: the\n"
"                      transport seam, or the ranks' shared-memory rings\n"
"                      (offcored's path for local ranks) (transport)\n"
"  --shm-slots N       slots per ring, --channel shm (64, offcored's)\n"
"  --dests LIST        destination ranks, comma-separated (8,64,512)\n"
"  --repeats N         timed runs per kernel and of the bare loop (7)\n"
"  --items N           items routed per run, K/M suffixes (16M)\n"
"  --kernel PATH       the router module to measure (router-kernel.so\n"
"                      beside this program)\n"
"  --main-kernel PATH  another revision's module: ratio_main\n"
"  --rev NAME          what to call it in the output\n"
"  --window N          bundles handed over, not yet routed (32)\n"
"  --pool N            distinct bundles in the feed, about (1024)\n"
"  --bundle-size B     the router's bundles, bytes (8000)\n"
"  --flush-timeout-us N the router's (200, offcored's default; raise it\n"
"                      under valgrind, which runs the clock 50x faster)\n"
"  --seed N            (1)\n");
    return 2;
}

static int num(const char *s, uint64_t *v)
{
    char *e;
    errno = 0;
    unsigned long long x = strtoull(s, &e, 10);
    if (errno || e == s)
        return -1;
    if (*e == 'K' || *e == 'k')
        x *= 1000, e++;
    else if (*e == 'M' || *e == 'm')
        x *= 1000000, e++;
    if (*e != 0)
        return -1;
    *v = x;
    return 0;
}

int main(int argc, char **argv)
{
    const char *kpath = NULL, *mpath = NULL, *dests = "8,64,512";
    int shapes = 3, nk = 1, channels = 1;
    kern_t ks[MAX_KERNELS];
    char self[PATH_MAX], def[PATH_MAX + 32];
    uint64_t v;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        }
        if (val == NULL)
            return usage();
        i++;
        if (strcmp(a, "--shape") == 0) {
            shapes = !strcmp(val, "oneway") ? 1 : !strcmp(val, "reqreply") ? 2
                   : !strcmp(val, "both") ? 3 : 0;
            if (!shapes)
                return usage();
        } else if (strcmp(a, "--channel") == 0) {
            channels = !strcmp(val, "transport") ? 1 : !strcmp(val, "shm") ? 2
                     : !strcmp(val, "both") ? 3 : 0;
            if (!channels)
                return usage();
        } else if (strcmp(a, "--dests") == 0) {
            dests = val;
        } else if (strcmp(a, "--kernel") == 0) {
            kpath = val;
        } else if (strcmp(a, "--main-kernel") == 0) {
            mpath = val;
        } else if (strcmp(a, "--rev") == 0) {
            opt.rev = val;
        } else if (num(val, &v) != 0 || v == 0) {
            return usage();
        } else if (strcmp(a, "--repeats") == 0 && v <= 63) {
            opt.repeats = (uint32_t)v;
        } else if (strcmp(a, "--items") == 0) {
            opt.items = v;
        } else if (strcmp(a, "--window") == 0 && v <= 1u << 20) {
            opt.window = (uint32_t)v;
        } else if (strcmp(a, "--pool") == 0) {
            opt.pool_bundles = v;
        } else if (strcmp(a, "--bundle-size") == 0 && v >= 256 &&
                   v <= 1u << 20 && v % 8 == 0) {
            opt.bundle_size = (uint32_t)v;
        } else if (strcmp(a, "--flush-timeout-us") == 0 && v <= UINT32_MAX) {
            opt.flush_timeout_us = (uint32_t)v;
        } else if (strcmp(a, "--shm-slots") == 0 && v <= 65536 &&
                   (v & (v - 1)) == 0) {
            opt.shm_slots = (uint32_t)v;
        } else if (strcmp(a, "--seed") == 0) {
            opt.seed = v;
        } else {
            return usage();
        }
    }
    if (kpath == NULL) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            return usage();
        self[n] = 0;
        char *slash = strrchr(self, '/');
        *slash = 0;
        snprintf(def, sizeof(def), "%s/router-kernel.so", self);
        kpath = def;
    }
    if (kern_load(&ks[0], kpath) != 0)
        return 1;
    if (mpath != NULL) {
        if (kern_load(&ks[1], mpath) != 0)
            return 1;
        nk = 2;
    }
    for (uint32_t shm = 0; shm < 2; shm++) {
        if (!(channels & (1 << shm)))
            continue;
        for (uint32_t shape = 0; shape < 2; shape++) {
            if (!(shapes & (1 << shape)))
                continue;
            for (const char *d = dests; *d;) {
                char *e;
                unsigned long R = strtoul(d, &e, 10);
                if (e == d || R == 0 || R > 65535 || (*e != ',' && *e != 0))
                    return usage();
                bench_one(ks, nk, shm, shape, (uint32_t)R);
                d = *e ? e + 1 : e;
            }
        }
    }
    return failed;
}
