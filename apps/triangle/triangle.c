/*
 * triangle.c — triangle counting over liboffcore (binary `triangle`).
 *
 * An undirected graph — Erdős–Rényi, R-MAT (Graph500 parameters) or, for
 * testing, the complete graph — is distributed by vertex blocks.  Two
 * timed phases:
 *   1. build: every generated edge {u, v} is sent as two 16-byte messages,
 *      to the owners of u and of v, who append it; then each rank sorts its
 *      adjacency lists and drops self-loops and duplicates;
 *   2. count: edges are oriented from the lower to the higher vertex id
 *      (ids are scrambled in R-MAT, so hubs fall anywhere); for every
 *      vertex u and every pair v < w of its higher neighbours N+(u), a
 *      query (v, w) goes to v's owner, whose handler counts it when w is in
 *      N+(v) (binary search).  Each triangle u < v < w is found once.
 * Many small messages and little work per message: the study expects this
 * app to be communication-dominated.
 *
 * Verified exactly: rank 0 regenerates every edge, builds the whole graph
 * and counts serially (merge intersection of N+ lists); the triangle,
 * edge and wedge counts must all match.  The complete graph K_n is also
 * checked against n(n-1)(n-2)/6, which tests the serial count itself.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "app_mpi.h"
#include "app_oc.h"
#include "graph.h"

typedef struct {
    const char *graph;   /* er, rmat, complete */
    uint64_t vertices;   /* er/complete: per rank */
    uint64_t degree;     /* er: mean degree */
    uint64_t scale;      /* rmat: 2^scale vertices */
    uint64_t edge_factor;
    uint64_t seed;
    uint64_t poll_interval;
    uint64_t corrupt;
} tc_opts_t;

enum { G_ER, G_RMAT, G_COMPLETE };

typedef struct { uint64_t a, b; } tc_msg_t;

typedef struct {
    int       phase;     /* 1 build, 2 count */
    uint64_t  R;         /* vertices per rank (block) */
    uint64_t  nlocal;    /* this rank's vertices */
    tc_msg_t *rx;        /* phase 1: (local u, global v) */
    size_t    nrx, caprx;
    uint64_t *off;       /* CSR [nlocal + 1] */
    uint64_t *adj;
    uint64_t *plus;      /* [nlocal]: where N+(u) starts in adj */
    uint64_t  found, queries, probes, bad;
    int       oom;
} tc_t;

static void tc_parse(tc_opts_t *o, int argc, char **argv, const char *prog)
{
    *o = (tc_opts_t){.graph = "rmat", .vertices = 100000, .degree = 16,
                     .scale = 17, .edge_factor = 8, .seed = 1,
                     .poll_interval = 1024};
    oc_app_flag_t flags[] = {
        {"graph", OC_APP_FLAG_STRING, &o->graph, 0, 0,
         "er (Erdős–Rényi), rmat (R-MAT, Graph500 a,b,c = .57,.19,.19), or"
         " complete (K_n: a test with a known answer)"},
        {"vertices", OC_APP_FLAG_SIZE, &o->vertices, 1, UINT64_C(1) << 32,
         "er and complete: vertices per rank"},
        {"degree", OC_APP_FLAG_U64, &o->degree, 0, OC_GRAPH_MAX_DEGREE,
         "er: mean degree (each vertex draws Poisson(degree / 2) edges)"},
        {"scale", OC_APP_FLAG_U64, &o->scale, 1, 40,
         "rmat: 2^scale vertices in all"},
        {"edge-factor", OC_APP_FLAG_U64, &o->edge_factor, 1, 1024,
         "rmat: edges = edge-factor x 2^scale"},
        {"seed", OC_APP_FLAG_U64, &o->seed, 0, UINT64_MAX, "seed of the graph"},
        {"poll-interval", OC_APP_FLAG_SIZE, &o->poll_interval, 1,
         UINT64_C(1) << 27, "oc_poll() once every this many sends"},
        {"corrupt-for-test", OC_APP_FLAG_U64, &o->corrupt, 0, 1,
         "1: add one to the last rank's count after the run, to check that"
         " verification fails (exit 1)"},
    };
    oc_app_parse_flags(argc, argv, prog,
                       "Triangle counting over liboffcore: edges routed to"
                       " their endpoints' owners,\nthen one 16-byte query per"
                       " wedge; the count is verified against a serial count.",
                       flags, sizeof flags / sizeof flags[0]);
}

/* ---- the input --------------------------------------------------------- */

typedef struct {
    int      kind;
    uint64_t N;          /* vertices in all */
    uint64_t M;          /* edges to generate in all (rmat); per-vertex for er */
    oc_graph_er_t er;
    const tc_opts_t *o;
} tc_gen_t;

/* Call @p f(arg, u, v) for every generated edge of generator slice
 * @p part of @p parts (ER and complete: by source vertex block; R-MAT: by
 * edge index). */
static void tc_edges(const tc_gen_t *g, uint32_t part, uint32_t parts,
                     void (*f)(void *, uint64_t, uint64_t), void *arg)
{
    if (g->kind == G_RMAT) {
        uint64_t e0 = g->M * part / parts, e1 = g->M * (part + 1) / parts;
        for (uint64_t e = e0; e < e1; e++) {
            uint64_t u, v;
            oc_graph_rmat_edge(g->o->seed, (unsigned)g->o->scale, e, &u, &v);
            f(arg, u, v);
        }
        return;
    }
    uint64_t v0 = g->N * part / parts, v1 = g->N * (part + 1) / parts;
    for (uint64_t u = v0; u < v1; u++) {
        if (g->kind == G_COMPLETE) {
            for (uint64_t v = u + 1; v < g->N; v++)
                f(arg, u, v);
            continue;
        }
        uint64_t key = oc_graph_er_key(&g->er, u);
        uint32_t deg = oc_graph_er_degree(&g->er, key);
        for (uint32_t k = 0; k < deg; k++)
            f(arg, u, oc_app_range(oc_graph_er_word(key, k), g->N));
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Adjacency lists from (local u, v) pairs: counting sort, sort each list,
 * drop self-loops (@p base: global id of local 0) and duplicates.  Sets
 * off/adj/plus.  Returns the bytes it read and wrote. */
static uint64_t tc_csr(const tc_msg_t *e, size_t n, uint64_t nlocal,
                       uint64_t base, uint64_t **off_p, uint64_t **adj_p,
                       uint64_t **plus_p)
{
    uint64_t *off = calloc(nlocal + 1, sizeof *off);
    uint64_t *adj = malloc((n ? n : 1) * sizeof *adj);
    uint64_t *plus = malloc((nlocal ? nlocal : 1) * sizeof *plus);
    if (off == NULL || adj == NULL || plus == NULL) {
        free(off);
        free(adj);
        free(plus);
        *off_p = NULL;
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        off[e[k].a + 1]++;
    for (uint64_t u = 0; u < nlocal; u++)
        off[u + 1] += off[u];
    for (size_t k = 0; k < n; k++)
        adj[off[e[k].a]++] = e[k].b;
    memmove(off + 1, off, nlocal * sizeof *off);
    off[0] = 0;
    uint64_t w = 0, sorted = 0;
    for (uint64_t u = 0; u < nlocal; u++) {
        uint64_t a = off[u], b = off[u + 1];
        qsort(adj + a, b - a, sizeof *adj, u64_cmp);
        sorted += (b - a) * 8 * 2;
        off[u] = w;
        uint64_t self = base + u;
        for (uint64_t k = a; k < b; k++)
            if (adj[k] != self && (w == off[u] || adj[w - 1] != adj[k]))
                adj[w++] = adj[k];
        /* N+(u): the first neighbour above u */
        uint64_t lo = off[u], hi = w;
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (adj[mid] > self)
                hi = mid;
            else
                lo = mid + 1;
        }
        plus[u] = lo;
    }
    off[nlocal] = w;
    *off_p = off;
    *adj_p = adj;
    *plus_p = plus;
    return (uint64_t)n * (16 + 16 + 8 + 16) + sorted;
}

/* ---- the distributed run ---------------------------------------------- */

static size_t tc_handler(void *arg, uint32_t src, const void *msgs, size_t len,
                         size_t n)
{
    tc_t *t = arg;
    const tc_msg_t *m = msgs;
    if (len != sizeof(tc_msg_t)) {
        t->bad += n;
        return n;
    }
    if (t->phase == 1) {
        tc_msg_t *p = oc_app_grow(t->rx, &t->caprx, t->nrx + n, sizeof *p);
        if (p == NULL) {
            t->oom = 1;
            t->bad += n;
            return n;
        }
        t->rx = p;
        for (size_t i = 0; i < n; i++) {
            if (m[i].a >= t->nlocal) {
                t->bad++;
                continue;
            }
            t->rx[t->nrx++] = m[i];
        }
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v = m[i].a, w = m[i].b;
        if (v >= t->nlocal) {
            t->bad++;
            continue;
        }
        uint64_t lo = t->plus[v], hi = t->off[v + 1];
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            t->probes++;
            if (t->adj[mid] < w)
                lo = mid + 1;
            else
                hi = mid;
        }
        t->found += lo < t->off[v + 1] && t->adj[lo] == w;
    }
    t->queries += n;
    return n;
}

/* Message (local index of @p to, @p b) to @p to's owner: blocks of R. */
static inline void out_put(oc_app_burst_t *o, uint64_t R, uint64_t to,
                           uint64_t b)
{
    tc_msg_t msg = {to % R, b};
    oc_app_burst_put(o, (uint32_t)(to / R), &msg);
}

typedef struct {
    oc_app_burst_t out;
    uint64_t       R;
} tc_sender_t;

static void send_edge(void *arg, uint64_t u, uint64_t v)
{
    tc_sender_t *o = arg;
    out_put(&o->out, o->R, u, v);
    out_put(&o->out, o->R, v, u);
}

/* ---- the serial reference --------------------------------------------- */

typedef struct {
    tc_msg_t *e;
    size_t    n, cap;
    int       oom;
} tc_list_t;

static void list_edge(void *arg, uint64_t u, uint64_t v)
{
    tc_list_t *l = arg;
    tc_msg_t *p = oc_app_grow(l->e, &l->cap, l->n + 2, sizeof *p);
    if (p == NULL) {
        l->oom = 1;
        return;
    }
    l->e = p;
    l->e[l->n++] = (tc_msg_t){u, v};
    l->e[l->n++] = (tc_msg_t){v, u};
}

/* Triangles, wedges (pairs in N+ lists) and undirected edges of the whole
 * graph, serially.  @return false when it cannot allocate. */
static bool tc_serial(const tc_gen_t *g, uint64_t *tri, uint64_t *wedges,
                      uint64_t *edges)
{
    tc_list_t l = {0};
    tc_edges(g, 0, 1, list_edge, &l);
    if (l.oom) {
        free(l.e);
        return false;
    }
    uint64_t *off, *adj, *plus;
    tc_csr(l.e, l.n, g->N, 0, &off, &adj, &plus);
    free(l.e);
    if (off == NULL)
        return false;
    uint64_t t = 0, w = 0;
    for (uint64_t u = 0; u < g->N; u++) {
        uint64_t d = off[u + 1] - plus[u];
        w += d * (d ? d - 1 : 0) / 2;
        for (uint64_t i = plus[u]; i < off[u + 1]; i++) {
            uint64_t v = adj[i];
            /* |N+(u) ∩ N+(v)| restricted to w > v: merge */
            uint64_t a = i + 1, b = plus[v];
            while (a < off[u + 1] && b < off[v + 1]) {
                if (adj[a] < adj[b])
                    a++;
                else if (adj[a] > adj[b])
                    b++;
                else {
                    t++;
                    a++;
                    b++;
                }
            }
        }
    }
    *tri = t;
    *wedges = w;
    *edges = off[g->N] / 2;
    free(off);
    free(adj);
    free(plus);
    return true;
}

int main(int argc, char **argv)
{
    static const char prog[] = "triangle";
    tc_opts_t o;
    tc_parse(&o, argc, argv, prog);
    int kind = strcmp(o.graph, "er") == 0         ? G_ER
               : strcmp(o.graph, "rmat") == 0     ? G_RMAT
               : strcmp(o.graph, "complete") == 0 ? G_COMPLETE
                                                  : -1;
    if (kind < 0) {
        if (oc_app_env_rank0())
            fprintf(stderr, "%s: --graph %s: not er, rmat or complete (try"
                    " --help)\n", prog, o.graph);
        return OC_APP_EXIT_USAGE;
    }

    oc_app_mpi_t m;
    oc_app_mpi_init(&m, prog, &argc, &argv);
    const uint32_t P = (uint32_t)m.size, me = (uint32_t)m.rank;
    tc_gen_t g = {.kind = kind, .o = &o};
    g.N = kind == G_RMAT ? UINT64_C(1) << o.scale : o.vertices * P;
    g.M = kind == G_RMAT ? o.edge_factor << o.scale : 0;
    oc_graph_er_init(&g.er, o.seed, 1, g.N, (double)o.degree / 2);
    if (kind == G_COMPLETE && g.N > 4000) {
        if (m.rank == 0)
            fprintf(stderr, "%s: --graph complete is a test: at most 4000"
                    " vertices in all (try --help)\n", prog);
        MPI_Finalize();
        return OC_APP_EXIT_USAGE;
    }
    tc_t t = {.R = (g.N + P - 1) / P};
    uint64_t base = (uint64_t)me * t.R;
    t.nlocal = base >= g.N ? 0 : (g.N - base < t.R ? g.N - base : t.R);

    oc_context_t *ctx = oc_app_oc_init_burst(&m, tc_handler, &t);
    tc_sender_t snd = {.R = t.R};
    oc_app_burst_init(&snd.out, &m, ctx, sizeof(tc_msg_t), o.poll_interval);

    oc_app_perf_t perf;
    MPI_Barrier(MPI_COMM_WORLD);
    oc_app_perf_start(&perf);
    double t0 = oc_app_now();
    /* phase 1: the graph */
    t.phase = 1;
    tc_edges(&g, me, P, send_edge, &snd);
    oc_app_burst_flush(&snd.out);
    oc_app_quiesce(&m, ctx);
    uint64_t local = t.nrx * 16 +
                     tc_csr(t.rx, t.nrx, t.nlocal, base, &t.off, &t.adj, &t.plus);
    if (t.off == NULL)
        oc_app_mpi_die(&m, "cannot allocate the adjacency lists");
    free(t.rx);
    t.rx = NULL;
    uint64_t edge_msgs = snd.out.sent;
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = oc_app_now();
    /* phase 2: one query per wedge */
    t.phase = 2;
    snd.out.sent = 0;
    for (uint64_t u = 0; u < t.nlocal; u++) {
        for (uint64_t i = t.plus[u]; i < t.off[u + 1]; i++)
            for (uint64_t k = i + 1; k < t.off[u + 1]; k++)
                out_put(&snd.out, t.R, t.adj[i], t.adj[k]);
        /* N+(u) is read from memory once; its pairs come from cache */
        local += 8 * (t.off[u + 1] - t.plus[u]) + 16;
    }
    oc_app_burst_flush(&snd.out);
    oc_app_quiesce(&m, ctx);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = oc_app_now(), seconds = t2 - t0;
    oc_app_perf_stop(&perf);
    local += t.probes * 8;

    if (o.corrupt && me == P - 1)
        t.found++;
    uint64_t tri = oc_app_mpi_sum(t.found), wedges = oc_app_mpi_sum(snd.out.sent);
    uint64_t edges = oc_app_mpi_sum(t.off[t.nlocal]) / 2;
    uint64_t local_bytes = oc_app_mpi_sum(local);
    uint64_t routed = oc_app_mpi_sum(edge_msgs);

    oc_app_json_t j;
    oc_counters_t sum;
    if (m.rank == 0) {
        oc_app_json_head(&j, &m, ctx);
        oc_app_json_str(&j, "graph", o.graph);
        oc_app_json_u64(&j, "vertices", g.N);
        if (kind == G_RMAT) {
            oc_app_json_u64(&j, "scale", o.scale);
            oc_app_json_u64(&j, "edge_factor", o.edge_factor);
        } else if (kind == G_ER) {
            oc_app_json_u64(&j, "degree", o.degree);
        }
        oc_app_json_u64(&j, "edges", edges);
        oc_app_json_u64(&j, "edge_messages", routed);
        oc_app_json_u64(&j, "wedge_queries", wedges);
        oc_app_json_u64(&j, "triangles", tri);
        oc_app_json_dbl(&j, "build_seconds", t1 - t0);
        oc_app_json_dbl(&j, "count_seconds", t2 - t1);
        oc_app_json_dbl(&j, "seconds", seconds);
        oc_app_json_dbl(&j, "rate",
                        seconds > 0 ? (double)(wedges + routed) / seconds : 0);
        oc_app_json_str(&j, "rate_unit", "messages/s (edges routed + wedge queries)");
    }
    oc_app_json_counters(&m, ctx, &j, &sum);
    oc_app_mpi_json_perf(&m, &perf, &j);

    /* ---- verification (not timed) ---- */
    bool ok = true;
    if (t.bad != 0 || t.oom) {
        oc_app_mpi_err(&m, "%" PRIu64 " malformed messages%s", t.bad,
                       t.oom ? " (out of memory)" : "");
        ok = false;
    }
    if (m.rank == 0) {
        uint64_t st, sw, se;
        if (!tc_serial(&g, &st, &sw, &se)) {
            oc_app_mpi_err(&m, "cannot allocate the serial count's graph");
            ok = false;
        } else {
            if (st != tri || sw != wedges || se != edges) {
                oc_app_mpi_err(&m, "triangles %" PRIu64 ", wedges %" PRIu64
                               ", edges %" PRIu64 "; the serial count has %"
                               PRIu64 ", %" PRIu64 ", %" PRIu64, tri, wedges,
                               edges, st, sw, se);
                ok = false;
            }
            uint64_t n = g.N;
            if (kind == G_COMPLETE && st != n * (n - 1) * (n - 2) / 6) {
                oc_app_mpi_err(&m, "K_%" PRIu64 " has %" PRIu64 " triangles,"
                               " the serial count says %" PRIu64, n,
                               n * (n - 1) * (n - 2) / 6, st);
                ok = false;
            }
        }
    }
    if (m.rank == 0)
        oc_app_json_u64(&j, "local_bytes", local_bytes);
    bool verified = oc_app_oc_end(&m, ctx, &j, ok);
    free(t.off);
    free(t.adj);
    free(t.plus);
    return oc_app_mpi_finish(verified);
}
