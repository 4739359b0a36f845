/*
 * classifier.c — bench-classifier: offcore's classifier (src/pkt/acl) vs
 * DPDK rte_acl (every classify method this CPU has: scalar, SSE, AVX2,
 * AVX512X16, AVX512X32, the EAL's SIMD width raised to 512 so that the
 * AVX-512 ones are allowed) vs the linear first-match scan, on ClassBench
 * rule sets and traces; then one-rule add/delete latency while another
 * thread keeps looking up.  `make bench-pkt`.
 *
 * Lookups only, one core (the main thread is pinned to one CPU), bursts of
 * BURST keys for every implementation.  Each repeat classifies the whole
 * trace with offcore (its default lookup path, then the others that
 * --offcore-paths names, on the same tables) and with each rte_acl method
 * on the same rte_acl table (the order rotating between repeats, each
 * timed pass right after an untimed warm-up pass), then the linear
 * scan on a prefix; the reported rate is the median of the repeats, every
 * repeat is shown, both per wall-clock second and per second of the
 * thread's CPU time (steadier on a shared machine).  verified = every answer of every timed run equals the
 * linear oracle's (computed once over the whole trace before timing).
 * Memory: mem_bytes = the lookup tables held after the build (offcore:
 * oc__acl_mem_bytes; rte_acl: growth of DPDK's malloc heap by the build);
 * peak_bytes = growth of the process's peak RSS during the build.
 *
 * Output: JSON lines (see --help); exit status 1 if any result is not
 * verified.  The offcore rows (one per path, the default first) name
 * rte_acl's fastest method (highest median per CPU-second), take their
 * ratios against that method, and list every method's medians.  Single process; the update test runs a
 * reader thread (CPU 0) and the writer (CPU 1, with the rebuild thread).
 *
 * --ip 6: the same on IPv6 (src/pkt/acl/include/pkt/acl/acl6.h): each family's prefixes
 * a/L become 2001:db8:a::/(32+L) (the address in the second 32-bit word),
 * each trace key's addresses 2001:db8:a:x:y with random low 64 bits, and
 * rte_acl gets DPDK's IPv6 field layout (protocol, four 32-bit words of
 * each address as MASK fields, the ports); answers are checked against
 * the IPv6 linear oracle.  Every row says "ip":4 or "ip":6.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "median.h"
#include "pkt/acl/acl.h"
#include "pkt/acl/acl6.h"

#ifdef OC_HAVE_DPDK
#include <rte_acl.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#endif

#define BURST 64
#define MAXREP 32

static struct {
    const char *data;
    int repeats;
    size_t linear_keys, keys;
    int update_ops;
    double update_rate;
    const char *families;
    int dpdk;
    const char *paths;
    int ip;
} opt = {"data/classbench", 7, 20000, 0, 4000, 1000.0, "acl1,fw1", 1,
         "avx512-leaf,avx2,scalar", 4};
static int failures; /* verified == false anywhere: exit status 1 */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(void) /* this thread's CPU time: immune to preemption */
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* VmHWM/VmRSS in bytes; reset_peak() makes VmHWM = VmRSS (Linux >= 4.0) */
static size_t status_kb(const char *key)
{
    char line[256];
    size_t v = 0, kl = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0)
            v = strtoull(line + kl + 1, NULL, 10);
    fclose(f);
    return v * 1024;
}

static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f != NULL) {
        fputs("5", f);
        fclose(f);
    }
}

/* the median of runs kept in order (print_runs shows them as run) */
static double median_of(const double *v, int n)
{
    double s[MAXREP];
    memcpy(s, v, (size_t)n * sizeof(*v));
    return median(s, n);
}

static void print_runs(const double *v, int n)
{
    printf("[");
    for (int i = 0; i < n; i++)
        printf("%s%.3f", i ? "," : "", v[i]);
    printf("]");
}

/* ------------------------------------------------------------- rte_acl */

#ifdef OC_HAVE_DPDK
enum { F_PROTO, F_SRC, F_DST, F_SPORT, F_DPORT, NF };
RTE_ACL_RULE_DEF(dpdk_rule, NF);

/* the packet bytes rte_acl reads: network order, offsets below */
typedef struct {
    uint8_t proto, pad[3];
    uint32_t src, dst;
    uint16_t sport, dport;
} dpdk_pkt_t;

static const struct rte_acl_field_def dpdk_defs[NF] = {
    {.type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1, .field_index = F_PROTO,
     .input_index = 0, .offset = 0},
    {.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4, .field_index = F_SRC,
     .input_index = 1, .offset = 4},
    {.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4, .field_index = F_DST,
     .input_index = 2, .offset = 8},
    {.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = F_SPORT,
     .input_index = 3, .offset = 12},
    {.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = F_DPORT,
     .input_index = 3, .offset = 14},
};

/* every classify method rte_acl has on x86, slowest first */
#define DPDK_NALG 5
static const int dpdk_algs[DPDK_NALG] = {
    RTE_ACL_CLASSIFY_SCALAR, RTE_ACL_CLASSIFY_SSE, RTE_ACL_CLASSIFY_AVX2,
    RTE_ACL_CLASSIFY_AVX512X16, RTE_ACL_CLASSIFY_AVX512X32};

static const char *alg_name(int a)
{
    switch (a) {
    case RTE_ACL_CLASSIFY_AVX512X32: return "avx512x32";
    case RTE_ACL_CLASSIFY_AVX512X16: return "avx512x16";
    case RTE_ACL_CLASSIFY_AVX2: return "avx2";
    case RTE_ACL_CLASSIFY_SSE: return "sse";
    default: return "scalar";
    }
}

static size_t dpdk_heap(void)
{
    struct rte_malloc_socket_stats st;
    if (rte_malloc_get_socket_stats(0, &st) != 0)
        return 0;
    return st.heap_allocsz_bytes;
}

/* rte_acl context over @p n rules (file order = priority); NULL on failure
 * (message printed) */
static struct rte_acl_ctx *dpdk_build(const oc_acl_rule_t *r, size_t n,
                                      const char *name)
{
    struct rte_acl_param prm = {.name = name, .socket_id = 0,
                                .rule_size = RTE_ACL_RULE_SZ(NF),
                                .max_rule_num = (uint32_t)n};
    struct rte_acl_config cfg = {.num_categories = 1, .num_fields = NF};
    struct rte_acl_ctx *ctx = rte_acl_create(&prm);
    if (ctx == NULL) {
        fprintf(stderr, "bench-classifier: rte_acl_create failed\n");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct dpdk_rule d;
        memset(&d, 0, sizeof(d));
        d.data.category_mask = 1;
        d.data.priority = RTE_ACL_MAX_PRIORITY - (int32_t)i; /* higher wins */
        d.data.userdata = (uint32_t)i + 1;                  /* 0 = no match */
        d.field[F_PROTO].value.u8 = r[i].proto;
        d.field[F_PROTO].mask_range.u8 = r[i].proto_mask;
        d.field[F_SRC].value.u32 = r[i].src_ip;
        d.field[F_SRC].mask_range.u32 = r[i].src_len;
        d.field[F_DST].value.u32 = r[i].dst_ip;
        d.field[F_DST].mask_range.u32 = r[i].dst_len;
        d.field[F_SPORT].value.u16 = r[i].sport_lo;
        d.field[F_SPORT].mask_range.u16 = r[i].sport_hi;
        d.field[F_DPORT].value.u16 = r[i].dport_lo;
        d.field[F_DPORT].mask_range.u16 = r[i].dport_hi;
        if (rte_acl_add_rules(ctx, (struct rte_acl_rule *)&d, 1) != 0) {
            fprintf(stderr, "bench-classifier: rte_acl_add_rules failed\n");
            rte_acl_free(ctx);
            return NULL;
        }
    }
    memcpy(cfg.defs, dpdk_defs, sizeof(dpdk_defs));
    if (rte_acl_build(ctx, &cfg) != 0) {
        fprintf(stderr, "bench-classifier: rte_acl_build failed\n");
        rte_acl_free(ctx);
        return NULL;
    }
    return ctx;
}

/* IPv6: DPDK's layout (as its l3fwd and ipsec-secgw examples define it):
 * the protocol byte, each address as four 32-bit MASK fields, the ports */
enum { G_PROTO, G_SRC0, G_DST0 = G_SRC0 + 4, G_SPORT = G_DST0 + 4, G_DPORT,
       NF6 };
RTE_ACL_RULE_DEF(dpdk_rule6, NF6);

typedef struct {
    uint8_t proto, pad[3];
    uint32_t src[4], dst[4];
    uint16_t sport, dport;
} dpdk_pkt6_t;

static struct rte_acl_field_def dpdk_defs6[NF6];

static void dpdk_defs6_init(void)
{
    dpdk_defs6[G_PROTO] = (struct rte_acl_field_def){
        .type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1, .field_index = G_PROTO,
        .input_index = 0, .offset = 0};
    for (int w = 0; w < 8; w++)
        dpdk_defs6[G_SRC0 + w] = (struct rte_acl_field_def){
            .type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
            .field_index = (uint8_t)(G_SRC0 + w), .input_index = (uint8_t)(1 + w),
            .offset = (uint32_t)(4 + 4 * w)};
    dpdk_defs6[G_SPORT] = (struct rte_acl_field_def){
        .type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = G_SPORT,
        .input_index = 9, .offset = 36};
    dpdk_defs6[G_DPORT] = (struct rte_acl_field_def){
        .type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = G_DPORT,
        .input_index = 9, .offset = 38};
}

static unsigned word_len(unsigned len, int w) /* prefix bits in word w */
{
    int l = (int)len - 32 * w;
    return l <= 0 ? 0 : l >= 32 ? 32 : (unsigned)l;
}

static struct rte_acl_ctx *dpdk_build6(const oc_acl6_rule_t *r, size_t n,
                                       const char *name)
{
    struct rte_acl_param prm = {.name = name, .socket_id = 0,
                                .rule_size = RTE_ACL_RULE_SZ(NF6),
                                .max_rule_num = (uint32_t)n};
    struct rte_acl_config cfg = {.num_categories = 1, .num_fields = NF6};
    struct rte_acl_ctx *ctx = rte_acl_create(&prm);
    if (ctx == NULL) {
        fprintf(stderr, "bench-classifier: rte_acl_create failed\n");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct dpdk_rule6 d;
        memset(&d, 0, sizeof(d));
        d.data.category_mask = 1;
        d.data.priority = RTE_ACL_MAX_PRIORITY - (int32_t)i;
        d.data.userdata = (uint32_t)i + 1;
        d.field[G_PROTO].value.u8 = r[i].proto;
        d.field[G_PROTO].mask_range.u8 = r[i].proto_mask;
        for (int w = 0; w < 4; w++) {
            d.field[G_SRC0 + w].value.u32 = r[i].src[w];
            d.field[G_SRC0 + w].mask_range.u32 = word_len(r[i].src_len, w);
            d.field[G_DST0 + w].value.u32 = r[i].dst[w];
            d.field[G_DST0 + w].mask_range.u32 = word_len(r[i].dst_len, w);
        }
        d.field[G_SPORT].value.u16 = r[i].sport_lo;
        d.field[G_SPORT].mask_range.u16 = r[i].sport_hi;
        d.field[G_DPORT].value.u16 = r[i].dport_lo;
        d.field[G_DPORT].mask_range.u16 = r[i].dport_hi;
        if (rte_acl_add_rules(ctx, (struct rte_acl_rule *)&d, 1) != 0) {
            fprintf(stderr, "bench-classifier: rte_acl_add_rules failed\n");
            rte_acl_free(ctx);
            return NULL;
        }
    }
    dpdk_defs6_init();
    memcpy(cfg.defs, dpdk_defs6, sizeof(dpdk_defs6));
    if (rte_acl_build(ctx, &cfg) != 0) {
        fprintf(stderr, "bench-classifier: rte_acl_build failed\n");
        rte_acl_free(ctx);
        return NULL;
    }
    return ctx;
}

/* The methods this CPU and the EAL's SIMD width allow, slowest first, into
 * @p alg; returns how many.  The context is left on the last (fastest). */
static int dpdk_methods(struct rte_acl_ctx *ctx, int alg[DPDK_NALG])
{
    int n = 0;
    for (int a = 0; a < DPDK_NALG; a++)
        if (rte_acl_set_ctx_classify(ctx, dpdk_algs[a]) == 0)
            alg[n++] = dpdk_algs[a];
    return n;
}
#endif

/* ------------------------------------------------------------ the runs */

typedef struct {
    const char *fam;
    oc_acl_rule_t *rules;
    size_t n, nk;
    oc_acl_key_t *keys;
    oc_acl6_rule_t *rules6; /* --ip 6: the rules and keys mapped */
    oc_acl6_key_t *keys6;
    uint32_t *want; /* oracle userdata per key */
    uint32_t *out;
} fam_t;

/* offcore's classifier of either family (--ip) */
typedef struct {
    oc_acl_t *a4;
    oc_acl6_t *a6;
} cls_t;

static int cls_build(cls_t *c, const fam_t *f)
{
    if (opt.ip == 6)
        return oc__acl6_create((uint32_t)f->n * 2, &c->a6) != OC_OK ||
               oc__acl6_load(c->a6, f->rules6, f->n) != OC_OK ? -1 : 0;
    return oc__acl_create((uint32_t)f->n * 2, &c->a4) != OC_OK ||
           oc__acl_load(c->a4, f->rules, f->n) != OC_OK ? -1 : 0;
}

static inline void cls_lookup(cls_t *c, const fam_t *f, size_t i, uint32_t m,
                              uint32_t *out)
{
    if (opt.ip == 6)
        oc__acl6_lookup_burst(c->a6, f->keys6 + i, m, out);
    else
        oc__acl_lookup_burst(c->a4, f->keys + i, m, out);
}

static size_t cls_mem(const cls_t *c)
{
    return opt.ip == 6 ? oc__acl6_mem_bytes(c->a6) : oc__acl_mem_bytes(c->a4);
}

static oc_status_t cls_del(cls_t *c, const fam_t *f, size_t k)
{
    return opt.ip == 6 ? oc__acl6_del(c->a6, f->rules6[k].id)
                       : oc__acl_del(c->a4, f->rules[k].id);
}

static oc_status_t cls_add(cls_t *c, const fam_t *f, size_t k)
{
    return opt.ip == 6 ? oc__acl6_add(c->a6, &f->rules6[k])
                       : oc__acl_add(c->a4, &f->rules[k]);
}

static oc_status_t cls_sync(cls_t *c)
{
    return opt.ip == 6 ? oc__acl6_sync(c->a6) : oc__acl_sync(c->a4);
}

static void cls_destroy(cls_t *c)
{
    oc__acl6_destroy(c->a6);
    oc__acl_destroy(c->a4);
}

/* Wall and CPU seconds spent by one implementation in a repeat. */
typedef struct {
    double wall, cpu;
} acc_t;

/* One contender of the lookup race: offcore or one rte_acl method. */
typedef struct {
    const char *impl, *method;
    int alg;        /* rte_acl: its classify method */
    uint32_t *out;  /* answers of the last timed pass */
    double w[MAXREP], c[MAXREP]; /* M lookups/s per repeat, wall and CPU */
    double build_s;
    size_t mem, peak;
    int ok;         /* every timed pass verified */
} ctd_t;

#define MAXCTD (4 + 5) /* offcore's paths, rte_acl's methods */

/* Keys [a, b) through offcore, time added to @p acc. */
static void slice_offcore(fam_t *f, cls_t *acl, size_t a, size_t b,
                          uint32_t *out, acc_t *acc)
{
    double c0 = cpu_s(), t0 = now_s();
    for (size_t i = a; i < b; i += BURST) {
        uint32_t m = (uint32_t)(b - i < BURST ? b - i : BURST);
        cls_lookup(acl, f, i, m, out + i);
    }
    acc->wall += now_s() - t0;
    acc->cpu += cpu_s() - c0;
    oc__acl_reader_quiescent();
}

static double run_linear(fam_t *f, size_t nk, int *ok, double *cpu)
{
    double c0 = cpu_s(), t0 = now_s(), t1;
    for (size_t i = 0; i < nk; i++) {
        long w = -1;
        if (opt.ip == 6) { /* rules in priority order: the first match */
            for (size_t j = 0; j < f->n && w < 0; j++)
                if (oc__acl6_rule_matches(&f->rules6[j], &f->keys6[i]))
                    w = (long)j;
        } else {
            w = oc__acl_match_first(f->rules, f->n, &f->keys[i]);
        }
        f->out[i] = w < 0 ? OC_ACL_NO_MATCH : f->rules[w].userdata;
    }
    t1 = now_s();
    *cpu = (double)nk / (cpu_s() - c0) / 1e6;
    *ok = memcmp(f->out, f->want, nk * sizeof(uint32_t)) == 0;
    return (double)nk / (t1 - t0) / 1e6;
}

#ifdef OC_HAVE_DPDK
static void slice_dpdk(struct rte_acl_ctx *ctx, int alg, const uint8_t **ptr,
                       size_t a, size_t b, uint32_t *out, acc_t *acc)
{
    double c0 = cpu_s(), t0 = now_s();
    for (size_t i = a; i < b; i += BURST) {
        uint32_t m = (uint32_t)(b - i < BURST ? b - i : BURST);
        rte_acl_classify_alg(ctx, ptr + i, out + i, m, 1, alg);
    }
    acc->wall += now_s() - t0;
    acc->cpu += cpu_s() - c0;
}

/* rte_acl answered rule index + 1 (0: none): the same as the oracle? */
static int dpdk_verified(const fam_t *f, const uint32_t *out)
{
    for (size_t i = 0; i < f->nk; i++) {
        uint32_t got = out[i] == 0 ? OC_ACL_NO_MATCH : f->rules[out[i] - 1].userdata;
        if (got != f->want[i])
            return 0;
    }
    return 1;
}
#endif

/* Index of the contender with the highest median of @p cpu (per CPU-second,
 * else wall) among @p c[lo..n-1]; -1 when there is none. */
static int fastest(const ctd_t *c, int lo, int n, int nrep, int cpu)
{
    int best = -1;
    for (int i = lo; i < n; i++)
        if (best < 0 ||
            median_of(cpu ? c[i].c : c[i].w, nrep) > median_of(cpu ? c[best].c : c[best].w, nrep))
            best = i;
    return best;
}

/* One JSON line; @p base: the contender the ratios are taken against
 * (NULL: none); @p all/@p nall: the rte_acl methods listed in the row. */
static void result(const char *fam, size_t rules, const ctd_t *x, int nrep,
                   size_t keys, const ctd_t *base, const ctd_t *all, int nall,
                   int is_fastest)
{
    failures += !x->ok;
    printf("{\"bench\":\"classifier\",\"ip\":%d,\"family\":\"%s\",\"impl\":\"%s\","
           "\"rules\":%zu,\"mpps\":%.3f,\"build_s\":%.4f,\"mem_bytes\":%zu,"
           "\"peak_bytes\":%zu,\"verified\":%s,\"keys\":%zu,\"burst\":%d,"
           "\"method\":\"%s\"",
           opt.ip, fam, x->impl, rules, median_of(x->w, nrep), x->build_s, x->mem, x->peak,
           x->ok ? "true" : "false", keys, BURST, x->method);
    printf(",\"mpps_cpu\":%.3f", median_of(x->c, nrep));
    if (is_fastest >= 0)
        printf(",\"fastest\":%s", is_fastest ? "true" : "false");
    if (base != NULL)
        printf(",\"rte_acl_fastest\":\"%s\",\"ratio_vs_rte_acl\":%.3f,"
               "\"ratio_cpu_vs_rte_acl\":%.3f",
               base->method, median_of(x->w, nrep) / median_of(base->w, nrep),
               median_of(x->c, nrep) / median_of(base->c, nrep));
    for (int k = 0; k < 2 && nall > 0; k++) {
        printf(",\"rte_acl_%s\":{", k ? "mpps" : "mpps_cpu");
        for (int i = 0; i < nall; i++)
            printf("%s\"%s\":%.3f", i ? "," : "", all[i].method,
                   median_of(k ? all[i].w : all[i].c, nrep));
        printf("}");
    }
    printf(",\"runs_mpps\":");
    print_runs(x->w, nrep);
    printf(",\"runs_mpps_cpu\":");
    print_runs(x->c, nrep);
    printf("}\n");
    fflush(stdout);
}

static void bench_lookups(fam_t *f)
{
    ctd_t c[MAXCTD];
    double ml[MAXREP], cl[MAXREP];
    size_t nl = f->nk < opt.linear_keys ? f->nk : opt.linear_keys;
    int nc = 0, noc, okl = 1, ok, best;
    char paths[128], *save = NULL, *pn;
    cls_t acl = {0};
    double t0;
#ifdef OC_HAVE_DPDK
    struct rte_acl_ctx *ctx = NULL;
    dpdk_pkt_t *pk = NULL;
    dpdk_pkt6_t *pk6 = NULL;
    const uint8_t **ptr = NULL;
    size_t heap0;
#endif

    memset(c, 0, sizeof(c));
    /* offcore: the default path first, then the others asked for */
    c[nc].impl = "offcore";
    c[nc++].method = oc__acl_lookup_method();
    snprintf(paths, sizeof(paths), "%s", opt.paths);
    for (pn = strtok_r(paths, ",", &save); pn && nc < 4; pn = strtok_r(NULL, ",", &save)) {
        if (strcmp(pn, c[0].method) == 0)
            continue;
        oc_status_t st = oc__acl_set_lookup_path(pn);
        if (st == OC_ERR_UNSUPPORTED) {
            fprintf(stderr, "bench-classifier: offcore path %s: not on this CPU, "
                            "skipped\n", pn);
            continue;
        }
        if (st != OC_OK) {
            fprintf(stderr, "bench-classifier: --offcore-paths: no path %s "
                            "(scalar, avx512-leaf, avx512, avx2)\n", pn);
            exit(2);
        }
        c[nc].impl = "offcore";
        c[nc++].method = oc__acl_lookup_method();
    }
    noc = nc;
    oc__acl_set_lookup_path(c[0].method);
    reset_peak();
    c[0].peak = status_kb("VmRSS:");
    t0 = now_s();
    if (cls_build(&acl, f) != 0) {
        fprintf(stderr, "bench-classifier: offcore build failed\n");
        exit(1);
    }
    c[0].build_s = now_s() - t0;
    c[0].peak = status_kb("VmHWM:") - c[0].peak;
    c[0].mem = cls_mem(&acl);
    for (int i = 1; i < noc; i++) { /* the same tables */
        c[i].build_s = c[0].build_s;
        c[i].peak = c[0].peak;
        c[i].mem = c[0].mem;
    }

#ifdef OC_HAVE_DPDK
    if (opt.dpdk) {
        char name[64];
        int alg[DPDK_NALG], na;
        size_t peak;
        double bd;
        snprintf(name, sizeof(name), "bench_%s", f->fam);
        pk = calloc(f->nk, sizeof(*pk));
        pk6 = calloc(f->nk, sizeof(*pk6));
        ptr = calloc(f->nk, sizeof(*ptr));
        if (pk == NULL || pk6 == NULL || ptr == NULL)
            exit(1);
        for (size_t i = 0; i < f->nk && opt.ip == 6; i++) {
            const oc_acl6_key_t *k = &f->keys6[i];
            pk6[i].proto = k->proto;
            for (int w = 0; w < 4; w++) {
                pk6[i].src[w] = __builtin_bswap32(k->src[w]);
                pk6[i].dst[w] = __builtin_bswap32(k->dst[w]);
            }
            pk6[i].sport = __builtin_bswap16(k->sport);
            pk6[i].dport = __builtin_bswap16(k->dport);
            ptr[i] = (const uint8_t *)&pk6[i];
        }
        for (size_t i = 0; i < f->nk && opt.ip == 4; i++) {
            pk[i].proto = f->keys[i].proto;
            pk[i].src = __builtin_bswap32(f->keys[i].src_ip);
            pk[i].dst = __builtin_bswap32(f->keys[i].dst_ip);
            pk[i].sport = __builtin_bswap16(f->keys[i].sport);
            pk[i].dport = __builtin_bswap16(f->keys[i].dport);
            ptr[i] = (const uint8_t *)&pk[i];
        }
        heap0 = dpdk_heap();
        reset_peak();
        peak = status_kb("VmRSS:");
        t0 = now_s();
        ctx = opt.ip == 6 ? dpdk_build6(f->rules6, f->n, name)
                          : dpdk_build(f->rules, f->n, name);
        bd = now_s() - t0;
        peak = status_kb("VmHWM:") - peak;
        na = ctx != NULL ? dpdk_methods(ctx, alg) : 0;
        for (int a = 0; a < na; a++, nc++) { /* one table, every method */
            c[nc].impl = "rte_acl";
            c[nc].method = alg_name(alg[a]);
            c[nc].alg = alg[a];
            c[nc].build_s = bd;
            c[nc].mem = dpdk_heap() - heap0;
            c[nc].peak = peak;
        }
    }
#endif
    for (int i = 0; i < nc; i++) {
        c[i].ok = 1;
        c[i].out = malloc(f->nk * sizeof(uint32_t));
        if (c[i].out == NULL)
            exit(1);
    }

    for (int r = 0; r < opt.repeats; r++) {
        /* interleaved, each repeat starting with the next contender; each
         * timed pass over the whole trace right after an untimed one, so
         * that none pays for the caches another left behind */
        for (int k = 0; k < nc; k++) {
            int i = (r + k) % nc;
            acc_t a = {0, 0}, warm = {0, 0};
            if (i < noc) {
                oc__acl_set_lookup_path(c[i].method);
                slice_offcore(f, &acl, 0, f->nk, c[i].out, &warm);
                slice_offcore(f, &acl, 0, f->nk, c[i].out, &a);
                c[i].ok &= memcmp(c[i].out, f->want, f->nk * sizeof(uint32_t)) == 0;
            }
#ifdef OC_HAVE_DPDK
            else {
                slice_dpdk(ctx, c[i].alg, ptr, 0, f->nk, c[i].out, &warm);
                slice_dpdk(ctx, c[i].alg, ptr, 0, f->nk, c[i].out, &a);
                c[i].ok &= dpdk_verified(f, c[i].out);
            }
#endif
            c[i].w[r] = (double)f->nk / a.wall / 1e6;
            c[i].c[r] = (double)f->nk / a.cpu / 1e6;
        }
        ml[r] = run_linear(f, nl, &ok, &cl[r]);
        okl &= ok;
        fprintf(stderr, "  %s repeat %d: M lookups/s", f->fam, r + 1);
        for (int i = 0; i < nc; i++)
            fprintf(stderr, " %s %s %.2f", c[i].impl, c[i].method, c[i].w[r]);
        fprintf(stderr, ", linear %.3f\n", ml[r]);
    }
    /* rte_acl at its best: its fastest method per CPU-second, the steadier
     * figure on a shared machine */
    oc__acl_set_lookup_path(c[0].method);
    best = fastest(c, noc, nc, opt.repeats, 1);
    for (int i = 0; i < noc; i++)
        result(f->fam, f->n, &c[i], opt.repeats, f->nk, best >= 0 ? &c[best] : NULL,
               c + noc, nc - noc, -1);
    for (int i = noc; i < nc; i++)
        result(f->fam, f->n, &c[i], opt.repeats, f->nk, &c[best], NULL, 0,
               i == best);
    {
        ctd_t lin = {.impl = "linear", .method = "first-match", .ok = okl,
                     .mem = f->n * sizeof(oc_acl_rule_t)};
        memcpy(lin.w, ml, sizeof(ml));
        memcpy(lin.c, cl, sizeof(cl));
        result(f->fam, f->n, &lin, opt.repeats, nl, best >= 0 ? &c[best] : NULL,
               NULL, 0, -1);
    }

#ifdef OC_HAVE_DPDK
    if (ctx != NULL) { /* what one rule change costs rte_acl: a full rebuild */
        double rb[3];
        for (int i = 0; i < 3; i++) {
            struct rte_acl_ctx *c2;
            char name[64];
            snprintf(name, sizeof(name), "bench_%s_rb%d", f->fam, i);
            t0 = now_s();
            c2 = opt.ip == 6 ? dpdk_build6(f->rules6, f->n - (size_t)(i % 2), name)
                             : dpdk_build(f->rules, f->n - (size_t)(i % 2), name);
            rb[i] = (now_s() - t0) * 1e6;
            rte_acl_free(c2);
        }
        qsort(rb, 3, sizeof(rb[0]), oc_bench_cmp_d);
        printf("{\"bench\":\"classifier-update\",\"ip\":%d,\"family\":\"%s\",\"impl\":\"rte_acl\","
               "\"op\":\"rebuild\",\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
               "\"note\":\"rte_acl has no incremental update: one rule change = full rebuild\"}\n",
               opt.ip, f->fam, rb[1], rb[2], rb[2]);
        rte_acl_free(ctx);
    }
    free(pk);
    free(pk6);
    free(ptr);
#endif
    for (int i = 0; i < nc; i++)
        free(c[i].out);
    cls_destroy(&acl);
}
/* ------------------------------------------------------------- updates */

typedef struct {
    cls_t acl;
    fam_t *f;
    int stop, counting, started;
    size_t lookups;
    double t0, t1, c0, c1; /* wall and reader-CPU edges of the window */
} upd_t;

static void *reader_main(void *arg)
{
    upd_t *u = arg;
    uint32_t out[BURST];
    size_t i = 0, cnt = 0;
    int was = 0;
    pin(0);
    oc__acl_reader_register();
    while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
        int c = __atomic_load_n(&u->counting, __ATOMIC_ACQUIRE);
        if (c != was) { /* window edges */
            if (c) {
                cnt = 0;
                u->t0 = now_s();
                u->c0 = cpu_s();
                __atomic_store_n(&u->started, 1, __ATOMIC_RELEASE);
            } else {
                u->t1 = now_s();
                u->c1 = cpu_s();
                __atomic_store_n(&u->lookups, cnt, __ATOMIC_RELEASE);
            }
            was = c;
        }
        if (i + BURST > u->f->nk)
            i = 0;
        cls_lookup(&u->acl, u->f, i, BURST, out);
        i += BURST;
        cnt += BURST;
        oc__acl_reader_quiescent();
    }
    oc__acl_reader_unregister();
    return NULL;
}

/* The reader's counting window: begin returns once the reader has seen
 * it open (so a descheduled reader cannot miss a short window); end returns
 * the reader's lookups per second, wall and per CPU-second (*cpu). */
static void window_begin(upd_t *u)
{
    __atomic_store_n(&u->lookups, (size_t)-1, __ATOMIC_RELEASE);
    __atomic_store_n(&u->started, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&u->counting, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&u->started, __ATOMIC_ACQUIRE))
        sched_yield();
}

static double window_end(upd_t *u, double *cpu)
{
    __atomic_store_n(&u->counting, 0, __ATOMIC_RELEASE);
    while (__atomic_load_n(&u->lookups, __ATOMIC_ACQUIRE) == (size_t)-1)
        sched_yield();
    *cpu = (double)u->lookups / (u->c1 - u->c0) / 1e6;
    return (double)u->lookups / (u->t1 - u->t0) / 1e6;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void lat_line(const char *fam, const char *op, uint64_t *ns, int n,
                     const double *rate, int verified)
{
    qsort(ns, (size_t)n, sizeof(*ns), cmp_u64);
    failures += !verified;
    printf("{\"bench\":\"classifier-update\",\"ip\":%d,\"family\":\"%s\",\"impl\":\"offcore\","
           "\"op\":\"%s\",\"p50_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,"
           "\"lookup_mpps_during\":%.3f,\"lookup_mpps_idle\":%.3f,"
           "\"lookup_mpps_cpu_during\":%.3f,\"lookup_mpps_cpu_idle\":%.3f,"
           "\"ops\":%d,\"rate_ops_s\":%.0f,\"verified\":%s}\n",
           opt.ip, fam, op, ns[n / 2] / 1e3, ns[(size_t)n * 99 / 100] / 1e3,
           ns[n - 1] / 1e3, rate[0], rate[1], rate[2], rate[3], n,
           opt.update_rate,
           verified ? "true" : "false");
    fflush(stdout);
}

static void sleep_until(double t)
{
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void *writer_main(void *arg)
{
    fam_t *f = arg;
    upd_t u = {0};
    pthread_t rd;
    int n = opt.update_ops;
    uint64_t *add_ns = malloc((size_t)n * sizeof(uint64_t));
    uint64_t *del_ns = malloc((size_t)n * sizeof(uint64_t));
    double rate[4], period = 1.0 / opt.update_rate, t, tstart;
    uint64_t r = 12345;
    int verified;

    pin(1); /* the rebuild thread, created below, inherits CPU 1 */
    if (add_ns == NULL || del_ns == NULL || cls_build(&u.acl, f) != 0)
        exit(1);
    u.f = f;
    pthread_create(&rd, NULL, reader_main, &u);
    window_begin(&u);
    sleep_until(now_s() + 0.3);
    rate[1] = window_end(&u, &rate[3]);
    window_begin(&u);
    tstart = t = now_s();
    for (int i = 0; i < n; i++) { /* delete a rule, later put it back */
        size_t k;
        double a, b;
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        k = (size_t)(r >> 33) % f->n;
        for (int half = 0; half < 2; half++) {
            t += period;
            sleep_until(t); /* leaves the CPU to the rebuild thread */
            a = now_s();
            if (half == 0 ? cls_del(&u.acl, f, k) != OC_OK
                          : cls_add(&u.acl, f, k) != OC_OK) {
                fprintf(stderr, "bench-classifier: update failed\n");
                exit(1);
            }
            b = now_s();
            (half == 0 ? del_ns : add_ns)[i] = (uint64_t)((b - a) * 1e9);
        }
    }
    rate[0] = window_end(&u, &rate[2]);
    fprintf(stderr, "  %s churn: %d del+add pairs in %.2f s\n", f->fam, n,
            now_s() - tstart);
    __atomic_store_n(&u.stop, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);

    /* the same rules are present again: every trace answer must agree,
     * before and after the rebuild caught up */
    oc__acl_reader_register();
    for (size_t i = 0; i < f->nk; i += BURST)
        cls_lookup(&u.acl, f, i, (uint32_t)(f->nk - i < BURST ? f->nk - i : BURST),
                   f->out + i);
    verified = memcmp(f->out, f->want, f->nk * sizeof(uint32_t)) == 0;
    oc__acl_reader_offline();
    verified &= cls_sync(&u.acl) == OC_OK;
    oc__acl_reader_online();
    for (size_t i = 0; i < f->nk; i += BURST)
        cls_lookup(&u.acl, f, i, (uint32_t)(f->nk - i < BURST ? f->nk - i : BURST),
                   f->out + i);
    verified &= memcmp(f->out, f->want, f->nk * sizeof(uint32_t)) == 0;
    oc__acl_reader_unregister();

    lat_line(f->fam, "add", add_ns, n, rate, verified);
    lat_line(f->fam, "del", del_ns, n, rate, verified);
    cls_destroy(&u.acl);
    free(add_ns);
    free(del_ns);
    return NULL;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *o)
{
    fprintf(o,
        "usage: bench-classifier [options]\n"
        "  --data DIR        ClassBench files (default data/classbench)\n"
        "  --families LIST   comma-separated (default acl1,fw1): DIR/F_10k.rules.gz\n"
        "                    and DIR/F_10k_mix.trace.gz\n"
        "  --repeats N       interleaved repeats, median reported (default 7)\n"
        "  --linear-keys N   keys the linear scan is timed on (default 20000)\n"
        "  --keys N          use the first N trace keys only (default all)\n"
        "  --update-ops N    del+add pairs in the update test (default 4000)\n"
        "  --update-rate R   updates per second, paced (default 1000)\n"
        "  --no-dpdk         skip rte_acl\n"
        "  --ip 4|6          IPv4 rules (default), or each family mapped into\n"
        "                    IPv6: a/L -> 2001:db8:a::/(32+L) (rte_acl: IPv6 layout)\n"
        "  --offcore-paths L offcore's lookup paths timed beside its default one\n"
        "                    (default avx512-leaf,avx2,scalar; those the CPU lacks are\n"
        "                    skipped; \"\" for none)\n"
        "Prints one JSON line per implementation (rte_acl: per method) and family:\n"
        "  {\"bench\":\"classifier\",...,\"mpps\":..,\"verified\":true}\n"
        "  offcore's line: rte_acl_fastest, ratio_vs_rte_acl, ratio_cpu_vs_rte_acl,\n"
        "  rte_acl_mpps_cpu and rte_acl_mpps {method: median, ...}\n"
        "  {\"bench\":\"classifier-update\",...,\"op\":\"add\"|\"del\",\"p99_us\":..}\n");
}

/* --ip 6: a/L -> 2001:db8:a::/(32+L); keys 2001:db8:a:: + random low 64
 * bits (deterministic), from f->keys */
static void addr6(uint32_t a4, uint32_t out[4], uint64_t *r)
{
    *r = *r * 6364136223846793005ull + 1442695040888963407ull;
    out[0] = 0x20010db8u;
    out[1] = a4;
    out[2] = (uint32_t)(*r >> 32);
    out[3] = (uint32_t)*r;
}

static int map6(fam_t *f)
{
    uint64_t r = 42;
    f->rules6 = calloc(f->n, sizeof(*f->rules6));
    f->keys6 = calloc(f->nk, sizeof(*f->keys6));
    if (f->rules6 == NULL || f->keys6 == NULL)
        return -1;
    for (size_t i = 0; i < f->n; i++) {
        const oc_acl_rule_t *a = &f->rules[i];
        oc_acl6_rule_t *b = &f->rules6[i];
        uint64_t zero = 0;
        b->id = a->id;
        b->priority = a->priority;
        addr6(a->src_ip, b->src, &zero);
        addr6(a->dst_ip, b->dst, &zero);
        b->src_len = (uint8_t)(32 + a->src_len);
        b->dst_len = (uint8_t)(32 + a->dst_len);
        b->proto = a->proto;
        b->proto_mask = a->proto_mask;
        b->sport_lo = a->sport_lo;
        b->sport_hi = a->sport_hi;
        b->dport_lo = a->dport_lo;
        b->dport_hi = a->dport_hi;
        b->userdata = a->userdata;
    }
    for (size_t i = 0; i < f->nk; i++) {
        oc_acl6_key_t *k = &f->keys6[i];
        addr6(f->keys[i].src_ip, k->src, &r);
        addr6(f->keys[i].dst_ip, k->dst, &r);
        k->sport = f->keys[i].sport;
        k->dport = f->keys[i].dport;
        k->proto = f->keys[i].proto;
    }
    return 0;
}

static int load_family(fam_t *f, const char *fam)
{
    char path[1024], err[512];
    oc_acl_trace_t *tr;
    f->fam = fam;
    snprintf(path, sizeof(path), "%s/%s_10k.rules.gz", opt.data, fam);
    if (oc__acl_load_rules_file(path, &f->rules, &f->n, err, sizeof(err)) != OC_OK) {
        fprintf(stderr, "bench-classifier: %s\n", err);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s_10k_mix.trace.gz", opt.data, fam);
    if (oc__acl_load_trace_file(path, &tr, &f->nk, err, sizeof(err)) != OC_OK) {
        fprintf(stderr, "bench-classifier: %s\n", err);
        return -1;
    }
    if (opt.keys > 0 && opt.keys < f->nk)
        f->nk = opt.keys;
    f->keys = malloc(f->nk * sizeof(*f->keys));
    f->want = malloc(f->nk * sizeof(uint32_t));
    f->out = malloc(f->nk * sizeof(uint32_t));
    if (f->keys == NULL || f->want == NULL || f->out == NULL)
        return -1;
    for (size_t i = 0; i < f->nk; i++)
        f->keys[i] = tr[i].key;
    if (opt.ip == 6 && map6(f) != 0)
        return -1;
    for (size_t i = 0; i < f->nk; i++) {
        long w;
        w = opt.ip == 6 ? oc__acl6_match_linear(f->rules6, f->n, &f->keys6[i])
                        : oc__acl_match_linear(f->rules, f->n, &f->keys[i]);
        f->want[i] = w < 0 ? OC_ACL_NO_MATCH : f->rules[w].userdata;
    }
    free(tr);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"data", 1, 0, 'd'}, {"families", 1, 0, 'f'}, {"repeats", 1, 0, 'r'},
        {"linear-keys", 1, 0, 'l'}, {"keys", 1, 0, 'k'},
        {"update-ops", 1, 0, 'u'},
        {"update-rate", 1, 0, 'R'}, {"no-dpdk", 0, 0, 'D'},
        {"offcore-paths", 1, 0, 'P'}, {"ip", 1, 0, 'I'}, {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    char fams[256], *save = NULL, *fam;
    int c;

    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'd': opt.data = optarg; break;
        case 'f': opt.families = optarg; break;
        case 'r': opt.repeats = atoi(optarg); break;
        case 'l': opt.linear_keys = strtoull(optarg, NULL, 10); break;
        case 'k': opt.keys = strtoull(optarg, NULL, 10); break;
        case 'u': opt.update_ops = atoi(optarg); break;
        case 'R': opt.update_rate = atof(optarg); break;
        case 'D': opt.dpdk = 0; break;
        case 'P': opt.paths = optarg; break;
        case 'I': opt.ip = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (opt.repeats < 1 || opt.repeats > MAXREP || opt.update_ops < 1 ||
        opt.update_rate <= 0 || opt.linear_keys < 1 ||
        (opt.ip != 4 && opt.ip != 6)) {
        fprintf(stderr, "bench-classifier: --repeats 1..%d, --update-ops >= 1, "
                        "--update-rate > 0, --linear-keys >= 1, --ip 4 or 6\n",
                MAXREP);
        return 2;
    }
#ifdef OC_HAVE_DPDK
    if (opt.dpdk) {
        char prefix[64];
        char *eal[] = {"bench-classifier", "--no-huge", "--no-pci", "-l", "0",
                       "--force-max-simd-bitwidth=512", "-m", "1024",
                       "--no-shconf", prefix, "--log-level=error", NULL};
        /* no shared config, own prefix: runs beside other DPDK programs */
        snprintf(prefix, sizeof(prefix), "--file-prefix=ocbench%d", (int)getpid());
        if (rte_eal_init(11, eal) < 0) {
            fprintf(stderr, "bench-classifier: rte_eal_init failed (%s): "
                            "running without rte_acl\n", strerror(rte_errno));
            opt.dpdk = 0;
        }
    }
#else
    if (opt.dpdk)
        fprintf(stderr, "bench-classifier: built without DPDK (pkg-config "
                        "libdpdk not found): no rte_acl baseline\n");
    opt.dpdk = 0;
#endif
    pin(0);
    oc__acl_reader_register();
    snprintf(fams, sizeof(fams), "%s", opt.families);
    for (fam = strtok_r(fams, ",", &save); fam; fam = strtok_r(NULL, ",", &save)) {
        fam_t f = {0};
        pthread_t w;
        if (load_family(&f, fam) != 0)
            return 1;
        fprintf(stderr, "bench-classifier: %s: %zu rules, %zu keys\n", fam, f.n, f.nk);
        bench_lookups(&f);
        oc__acl_reader_offline();
        pthread_create(&w, NULL, writer_main, &f);
        pthread_join(w, NULL);
        oc__acl_reader_online();
        free(f.rules);
        free(f.keys);
        free(f.rules6);
        free(f.keys6);
        free(f.want);
        free(f.out);
    }
    oc__acl_reader_unregister();
    if (failures)
        fprintf(stderr, "bench-classifier: %d result(s) NOT verified\n", failures);
    return failures ? 1 : 0;
}
