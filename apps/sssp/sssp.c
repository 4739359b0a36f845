/*
 * sssp.c — single-source shortest paths by delta-stepping (Meyer and
 * Sanders 2003) over liboffcore (binary `sssp`).
 *
 * A random directed graph (apps/common/graph.h: Erdős–Rényi, Poisson(d)
 * out-edges per vertex, integer weights uniform in [1, W]) is distributed
 * by vertex blocks.  Tentative distances are bucketed by width delta.
 * For the smallest non-empty bucket, ranks relax the light edges (w <=
 * delta) of its vertices — each relaxation a 16-byte message (vertex,
 * distance) to the target's owner, whose handler lowers the distance —
 * until no vertex re-enters the bucket anywhere (oc_quiesce, then a
 * one-word MPI_Allreduce: control, not data); then the heavy edges of
 * every vertex settled in it, once.  The next bucket is the global minimum.
 *
 * Verified exactly: every rank runs a serial Dijkstra (binary heap) on the
 * regenerated graph and compares every distance of its block, unreachable
 * vertices included.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "app_oc.h"
#include "graph.h"

#define INF UINT64_MAX

typedef struct {
    uint64_t vertices; /* per rank */
    uint64_t degree;
    uint64_t max_weight;
    uint64_t delta;    /* 0: max_weight / degree, at least 1 */
    uint64_t source;
    uint64_t seed;
    uint64_t poll_interval;
    uint64_t corrupt;
} ss_opts_t;

/* A graph's out-edges in CSR: targets as global ids. */
typedef struct {
    uint64_t *off;   /* [n + 1] */
    uint64_t *dst;   /* global target */
    uint32_t *w;
} ss_csr_t;

typedef struct { uint64_t v, d; } ss_msg_t; /* v: local to the receiver */

typedef struct {
    uint64_t *dist;      /* [R] */
    uint64_t *stamp;     /* [R]: 1 + last bucket processed in (heavy list) */
    uint8_t  *queued;    /* [R]: in the changed list */
    uint64_t *changed;   /* vertices whose distance dropped, not processed */
    size_t    nchanged, capchanged;
    uint64_t  R, bad, lowered;
    int       oom;
} ss_t;

static void ss_parse(ss_opts_t *o, int argc, char **argv, const char *prog)
{
    *o = (ss_opts_t){.vertices = 500000, .degree = 8, .max_weight = 255,
                     .seed = 1, .poll_interval = 1024};
    oc_app_flag_t flags[] = {
        {"vertices", OC_APP_FLAG_SIZE, &o->vertices, 1, UINT64_C(1) << 32,
         "vertices per rank"},
        {"degree", OC_APP_FLAG_U64, &o->degree, 0, OC_GRAPH_MAX_DEGREE,
         "mean out-degree (Poisson)"},
        {"max-weight", OC_APP_FLAG_U64, &o->max_weight, 1, UINT32_MAX,
         "edge weights are uniform in [1, this] (1: BFS)"},
        {"delta", OC_APP_FLAG_U64, &o->delta, 0, UINT32_MAX,
         "bucket width (0: max-weight / degree, at least 1)"},
        {"source", OC_APP_FLAG_U64, &o->source, 0, UINT64_MAX,
         "source vertex (global id, below ranks x vertices)"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX, "seed of the graph"},
        {"poll-interval", OC_APP_FLAG_SIZE, &o->poll_interval, 1,
         UINT64_C(1) << 27, "oc_poll() once every this many sends"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: change one distance of the last rank after the run, to check"
         " that verification fails (exit 1)"},
    };
    oc_app_parse_flags(argc, argv, prog,
                       "Delta-stepping single-source shortest paths over"
                       " liboffcore: every edge\nrelaxation is a 16-byte message"
                       " to the target's owner; distances verified\nagainst a"
                       " serial Dijkstra.",
                       flags, sizeof flags / sizeof flags[0]);
}

/* The weight of neighbour @p k of the vertex with stream key @p key. */
static inline uint32_t ss_weight(uint64_t key, uint32_t k, uint64_t W)
{
    return 1 + (uint32_t)oc_app_range(oc_app_mix64(oc_graph_er_word(key, k) ^
                                                   OC_APP_GOLDEN), W);
}

/* Out-edges of vertices [v0, v0 + n) (global ids). */
static bool ss_build(const oc_graph_er_t *g, uint64_t W, uint64_t v0,
                     uint64_t n, ss_csr_t *c)
{
    c->off = malloc((n + 1) * sizeof *c->off);
    if (c->off == NULL)
        return false;
    c->off[0] = 0;
    for (uint64_t i = 0; i < n; i++)
        c->off[i + 1] = c->off[i] +
                        oc_graph_er_degree(g, oc_graph_er_key(g, v0 + i));
    uint64_t m = c->off[n];
    c->dst = malloc((m ? m : 1) * sizeof *c->dst);
    c->w = malloc((m ? m : 1) * sizeof *c->w);
    if (c->dst == NULL || c->w == NULL) {
        free(c->off);
        free(c->dst);
        free(c->w);
        return false;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t key = oc_graph_er_key(g, v0 + i);
        for (uint64_t e = c->off[i]; e < c->off[i + 1]; e++) {
            uint32_t k = (uint32_t)(e - c->off[i]), owner;
            uint64_t local;
            oc_graph_er_nbr(g, key, k, &owner, &local);
            c->dst[e] = (uint64_t)owner * g->per + local;
            c->w[e] = ss_weight(key, k, W);
        }
    }
    return true;
}

static void ss_free(ss_csr_t *c)
{
    free(c->off);
    free(c->dst);
    free(c->w);
}

static int ss_mark(ss_t *s, uint64_t v)
{
    if (s->queued[v])
        return 0;
    if (s->nchanged == s->capchanged) {
        uint64_t *p = oc_app_grow(s->changed, &s->capchanged, s->nchanged + 1,
                                  sizeof *p);
        if (p == NULL)
            return -1;
        s->changed = p;
    }
    s->queued[v] = 1;
    s->changed[s->nchanged++] = v;
    return 0;
}

static size_t ss_handler(void *arg, uint32_t src, const void *msgs, size_t len,
                         size_t n)
{
    ss_t *s = arg;
    if (len != sizeof(ss_msg_t)) {
        s->bad += n;
        return n;
    }
    const ss_msg_t *m = msgs;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = m[i].v, d = m[i].d;
        if (v >= s->R) {
            s->bad++;
            continue;
        }
        if (d < s->dist[v]) {
            s->dist[v] = d;
            s->lowered++;
            if (ss_mark(s, v) != 0) {
                s->oom = 1;
                s->bad++;
            }
        }
    }
    return n;
}

/* Relax the edges of local vertex @p v with weight in [lo, hi]. */
static void relax(oc_app_burst_t *o, const ss_csr_t *c, const ss_t *s,
                  uint64_t v, uint32_t lo, uint32_t hi, uint64_t *scanned)
{
    uint64_t dv = s->dist[v];
    for (uint64_t e = c->off[v]; e < c->off[v + 1]; e++) {
        uint32_t w = c->w[e];
        if (w < lo || w > hi)
            continue;
        uint64_t t = c->dst[e];
        /* owner and local index of t: blocks of R (one division per edge
         * sent; the ids were built as owner * R + local) */
        ss_msg_t msg = {t % s->R, dv + w};
        oc_app_burst_put(o, (uint32_t)(t / s->R), &msg);
    }
    *scanned += c->off[v + 1] - c->off[v];
}

/* Serial Dijkstra over the whole graph @p c of @p n vertices. */
static uint64_t *ss_dijkstra(const ss_csr_t *c, uint64_t n, uint64_t src)
{
    uint64_t *dist = malloc(n * sizeof *dist);
    typedef struct { uint64_t d, v; } item_t;
    size_t cap = 1024, len = 0;
    item_t *h = malloc(cap * sizeof *h);
    if (dist == NULL || h == NULL) {
        free(dist);
        free(h);
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++)
        dist[i] = INF;
    dist[src] = 0;
    h[len++] = (item_t){0, src};
    while (len > 0) {
        item_t top = h[0];
        item_t last = h[--len];
        size_t i = 0; /* sift last down from the root */
        for (;;) {
            size_t l = 2 * i + 1, r = l + 1, k = i;
            item_t best = last;
            if (l < len && h[l].d < best.d) {
                k = l;
                best = h[l];
            }
            if (r < len && h[r].d < best.d)
                k = r;
            if (k == i)
                break;
            h[i] = h[k];
            i = k;
        }
        if (len > 0)
            h[i] = last;
        if (top.d != dist[top.v])
            continue; /* stale */
        for (uint64_t e = c->off[top.v]; e < c->off[top.v + 1]; e++) {
            uint64_t t = c->dst[e], nd = top.d + c->w[e];
            if (nd >= dist[t])
                continue;
            dist[t] = nd;
            if (len == cap) {
                cap *= 2;
                item_t *p = realloc(h, cap * sizeof *h);
                if (p == NULL) {
                    free(h);
                    free(dist);
                    return NULL;
                }
                h = p;
            }
            size_t j = len++; /* sift up */
            while (j > 0 && h[(j - 1) / 2].d > nd) {
                h[j] = h[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            h[j] = (item_t){nd, t};
        }
    }
    free(h);
    return dist;
}

int main(int argc, char **argv)
{
    static const char prog[] = "sssp";
    ss_opts_t o;
    ss_parse(&o, argc, argv, prog);

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    const uint64_t R = o.vertices, N = (uint64_t)P * R;
    if (o.source >= N) {
        if (m.rank == 0)
            fprintf(stderr, "%s: --source %" PRIu64 " is not a vertex (there"
                    " are %" PRIu64 ": ranks x --vertices; try --help)\n", prog,
                    o.source, N);
        MPI_Finalize();
        return OC_APP_EXIT_USAGE;
    }
    const uint64_t delta = o.delta ? o.delta
                           : (o.max_weight / (o.degree ? o.degree : 1)
                                  ? o.max_weight / (o.degree ? o.degree : 1)
                                  : 1);
    oc_graph_er_t g;
    oc_graph_er_init(&g, o.seed, P, R, (double)o.degree);
    ss_csr_t c;
    ss_t s = {.R = R};
    s.dist = malloc(R * sizeof *s.dist);
    s.stamp = calloc(R, sizeof *s.stamp);
    s.queued = calloc(R, 1);
    if (!ss_build(&g, o.max_weight, (uint64_t)me * R, R, &c) ||
        s.dist == NULL || s.stamp == NULL || s.queued == NULL)
        oc_app_mpi_die(&m, "cannot allocate the graph (%" PRIu64 " vertices)", R);
    for (uint64_t v = 0; v < R; v++)
        s.dist[v] = INF;
    uint64_t *settled = malloc(R * sizeof *settled); /* this bucket's */
    uint64_t *front = malloc(R * sizeof *front);
    if (settled == NULL || front == NULL)
        oc_app_mpi_die(&m, "cannot allocate the buckets");

    oc_context_t *ctx = oc_app_oc_init_burst(&m, ss_handler, &s);
    oc_app_burst_t out;
    oc_app_burst_init(&out, &m, ctx, sizeof(ss_msg_t), o.poll_interval);

    oc_app_perf_t perf;
    MPI_Barrier(MPI_COMM_WORLD);
    oc_app_perf_start(&perf);
    double t0 = oc_app_now();
    if (o.source / R == me) {
        s.dist[o.source % R] = 0;
        (void)ss_mark(&s, o.source % R);
    }
    uint64_t bucket = 0, buckets = 0, phases = 0, scanned = 0;
    for (;;) {
        uint64_t nsettled = 0;
        const uint64_t lo = bucket * delta, hi = lo + delta; /* [lo, hi) */
        for (;;) { /* light phases */
            size_t nf = 0, keep = 0;
            for (size_t i = 0; i < s.nchanged; i++) {
                uint64_t v = s.changed[i];
                if (s.dist[v] < hi) {
                    front[nf++] = v;
                    s.queued[v] = 0;
                } else {
                    s.changed[keep++] = v;
                }
            }
            s.nchanged = keep;
            for (size_t i = 0; i < nf; i++) {
                uint64_t v = front[i];
                if (s.stamp[v] != bucket + 1) {
                    s.stamp[v] = bucket + 1;
                    settled[nsettled++] = v;
                }
                relax(&out, &c, &s, v, 0, (uint32_t)(delta < UINT32_MAX ? delta : UINT32_MAX), &scanned);
            }
            oc_app_burst_flush(&out);
            oc_app_quiesce(&m, ctx);
            phases++;
            /* anything (re-)entering this bucket, anywhere? */
            uint64_t again = 0;
            for (size_t i = 0; i < s.nchanged; i++)
                again += s.dist[s.changed[i]] < hi;
            if (oc_app_mpi_sum(again) == 0)
                break;
        }
        /* heavy edges of the settled vertices, once */
        if (delta < UINT32_MAX)
            for (uint64_t i = 0; i < nsettled; i++)
                relax(&out, &c, &s, settled[i], (uint32_t)delta + 1,
                      UINT32_MAX, &scanned);
        oc_app_burst_flush(&out);
        oc_app_quiesce(&m, ctx);
        phases++;
        buckets += nsettled > 0;
        /* the next bucket: the smallest distance still waiting */
        uint64_t mine = INF, next;
        for (size_t i = 0; i < s.nchanged; i++)
            if (s.dist[s.changed[i]] < mine)
                mine = s.dist[s.changed[i]];
        MPI_Allreduce(&mine, &next, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        if (next == INF)
            break;
        bucket = next / delta;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double seconds = oc_app_now() - t0;
    oc_app_perf_stop(&perf);

    /* per edge scanned: weight and target read (12 B); per distance
     * lowered: the distance written and the changed list (24 B) */
    uint64_t local = scanned * 12 + s.lowered * 24;
    uint64_t relaxations = oc_app_mpi_sum(out.sent);
    uint64_t edges = oc_app_mpi_sum(scanned), local_bytes = oc_app_mpi_sum(local);
    uint64_t reached = 0;
    for (uint64_t v = 0; v < R; v++)
        reached += s.dist[v] != INF;
    reached = oc_app_mpi_sum(reached);

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0) {
        oc_app_json_head(&j, &m, ctx);
        oc_app_json_u64(&j, "vertices_per_rank", R);
        oc_app_json_u64(&j, "degree", o.degree);
        oc_app_json_u64(&j, "max_weight", o.max_weight);
        oc_app_json_u64(&j, "delta", delta);
        oc_app_json_u64(&j, "source", o.source);
        oc_app_json_u64(&j, "reached", reached);
        oc_app_json_u64(&j, "buckets", buckets);
        oc_app_json_u64(&j, "phases", phases);
        oc_app_json_u64(&j, "relaxations", relaxations);
        oc_app_json_dbl(&j, "seconds", seconds);
        oc_app_json_dbl(&j, "rate", seconds > 0 ? (double)relaxations / seconds : 0);
        oc_app_json_str(&j, "rate_unit", "relaxations/s");
        oc_app_json_dbl(&j, "teps", seconds > 0 ? (double)edges / seconds : 0);
    }
    oc_app_json_counters(&m, ctx, &j, &sum);
    oc_app_mpi_json_perf(&m, &perf, &j);

    /* ---- verification (not timed) ---- */
    bool ok = true;
    if (s.bad != 0 || s.oom) {
        oc_app_mpi_err(&m, "%" PRIu64 " malformed relaxations%s", s.bad,
                       s.oom ? " (out of memory)" : "");
        ok = false;
    }
    if (o.corrupt && me == P - 1)
        s.dist[R / 2] = s.dist[R / 2] == INF ? 7 : s.dist[R / 2] + 1;
    ss_csr_t all;
    uint64_t *ref = NULL;
    if (ss_build(&g, o.max_weight, 0, N, &all)) {
        ref = ss_dijkstra(&all, N, o.source);
        ss_free(&all);
    }
    if (ref == NULL) {
        oc_app_mpi_err(&m, "cannot allocate the serial Dijkstra's graph");
        ok = false;
    } else {
        uint64_t nbad = 0, first = 0;
        for (uint64_t v = 0; v < R; v++)
            if (s.dist[v] != ref[(uint64_t)me * R + v] && nbad++ == 0)
                first = v;
        if (nbad) {
            uint64_t gv = (uint64_t)me * R + first;
            oc_app_mpi_err(&m, "%" PRIu64 " of %" PRIu64 " distances differ from"
                           " serial Dijkstra; first bad vertex %" PRIu64
                           ": expected %" PRId64 ", got %" PRId64
                           " (-1: unreachable)", nbad, R, gv,
                           ref[gv] == INF ? -1 : (int64_t)ref[gv],
                           s.dist[first] == INF ? -1 : (int64_t)s.dist[first]);
            ok = false;
        }
        free(ref);
    }
    if (m.rank == 0)
        oc_app_json_u64(&j, "local_bytes", local_bytes);
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    ss_free(&c);
    free(s.dist);
    free(s.stamp);
    free(s.queued);
    free(s.changed);
    free(settled);
    free(front);
    return oc_app_mpi_finish(verified);
}
