/*
 * coll_agent_check.c — the collectives without MPI, for runs where the
 * ranks are started one by one (network namespaces, fault tests): rank
 * and size from OC_RANK / OC_SIZE, every input a function of (rank,
 * element), so each rank computes the expected result itself.
 *
 *   coll_agent_check check       allreduce (int64 sum, float64 sum bitwise
 *                                equal to a serial rank-order sum when
 *                                OC_COLL_REPRODUCIBLE=y), all-to-all(v),
 *                                bcast, barrier at 0, 1, 1001 elements
 *                                and 1 MiB
 *   coll_agent_check badbuf      agent placement, by memory: rank 0 hands
 *                                the agent a send buffer, then a receive
 *                                buffer, whose second half it may not
 *                                read (then write): rank 0 must get
 *                                OC_ERR_COLL_MEMORY, the others
 *                                OC_ERR_COLL_PEER_FAILED, no byte outside
 *                                the buffers may change, and an allreduce
 *                                after them must work; then the same two
 *                                faults in an all-to-all (by memory too)
 *   coll_agent_check wait VICTIM every rank but VICTIM starts a 1 MiB
 *                                allreduce and waits; VICTIM prints
 *                                "ready" and sleeps (the script kills it,
 *                                or the agent); each waiter prints
 *                                "rank R: STATUS at MS" (CLOCK_REALTIME)
 *   coll_agent_check planted KIND [N]  collectives 1 and 3 (an int64
 *                                allreduce, or an all-to-all, or a bcast:
 *                                KIND, N elements per rank, 1001) must
 *                                verify, collective 2 (the same) must fail
 *                                on every rank: run with OC_COLL_FAULT and
 *                                OC_COLL_FAULT_AT=2 on one rank, which plants
 *                                a fault there; prints "rank R: STATUS"
 *   coll_agent_check time BYTES ITERS [KIND]  latency of an allreduce
 *                                (or KIND: bcast from rank 0, alltoall of
 *                                BYTES per rank, barrier)
 *
 * Exit 0 PASS, 1 FAIL.  Single-threaded; trusts its environment.
 */
#include <offcore/coll.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int g_fail;
static uint32_t g_rank, g_size;

#define CHECK(c, ...)                                                         \
    do {                                                                      \
        if (!(c) && g_fail++ < 10) {                                          \
            fprintf(stderr, "rank %u: FAIL line %d: ", g_rank, __LINE__);     \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

static oc_status_t noop(void *a, uint32_t s, const void *m, size_t l)
{
    (void)a, (void)s, (void)m, (void)l;
    return OC_OK;
}

static double fin(uint32_t r, size_t i)
{
    return (double)((r * 2654435761u + i * 40503u) % 100003) / 7.0 + 1e-3 * r;
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static float h2f(uint16_t h, int bf)
{
    uint32_t u;
    float f;
    if (bf) {
        u = (uint32_t)h << 16;
        memcpy(&f, &u, 4);
        return f;
    }
    /* binary16 with small integer values only (the inputs below) */
    int e = (h >> 10) & 31, m = h & 1023;
    f = e == 0 ? m / 16777216.0f : (1.0f + m / 1024.0f) * (float)(1 << e) / 32768.0f;
    return (h & 0x8000) ? -f : f;
}

/* Every type x op on @p n elements, inputs small integers (exact in every
 * type), results compared exactly with a serial rank-order reduction. */
static void check_types(oc_context_t *ctx, size_t n)
{
    static const uint16_t f16[8] = {0x3c00, 0x4000, 0x4200, 0x4400,
                                    0x4500, 0x4600, 0x4700, 0x4800}; /* 1..8 */
    static const uint16_t b16[8] = {0x3f80, 0x4000, 0x4040, 0x4080,
                                    0x40a0, 0x40c0, 0x40e0, 0x4100};
    for (int dt = 0; dt < oc_dtype_count(); dt++)
        for (int op = 0; op < oc_op_count(); op++) {
            size_t es = oc_dtype_size((oc_dtype_t)dt);
            int isf = dt == OC_FLOAT32 || dt == OC_FLOAT64 || dt >= OC_BFLOAT16;
            if (op == OC_PROD && isf)
                continue;
            uint8_t *in = malloc(n * es + 1), *out = malloc(n * es + 1);
            for (size_t i = 0; i < n; i++) {
                int v = (int)((g_rank * 3 + i) % 8); /* 0..7 */
                switch (dt) {
                case OC_INT32: ((int32_t *)in)[i] = v - 3; break;
                case OC_INT64: ((int64_t *)in)[i] = v - 3; break;
                case OC_UINT64: ((uint64_t *)in)[i] = (uint64_t)v + 1; break;
                case OC_FLOAT32: ((float *)in)[i] = (float)v - 3; break;
                case OC_FLOAT64: ((double *)in)[i] = v - 3; break;
                case OC_BFLOAT16: ((uint16_t *)in)[i] = b16[v]; break;
                default: ((uint16_t *)in)[i] = f16[v]; break;
                }
            }
            oc_status_t st = oc_allreduce(ctx, in, out, n, (oc_dtype_t)dt,
                                          (oc_op_t)op);
            CHECK(st == OC_OK, "type %d op %d n %zu: %s", dt, op, n,
                  oc_status_string(st));
            for (size_t i = 0; i < n && st == OC_OK; i++) {
                double acc = 0, got = 0;
                for (uint32_t r = 0; r < g_size; r++) {
                    int v = (int)((r * 3 + i) % 8);
                    double x = dt == OC_UINT64 ? v + 1
                               : dt >= OC_BFLOAT16 ? v + 1 : v - 3;
                    acc = r == 0 ? x
                          : op == OC_SUM ? acc + x
                          : op == OC_PROD ? acc * x
                          : op == OC_MIN ? (x < acc ? x : acc)
                                         : (x > acc ? x : acc);
                }
                switch (dt) {
                case OC_INT32: got = ((int32_t *)out)[i]; break;
                case OC_INT64: got = (double)((int64_t *)out)[i]; break;
                case OC_UINT64: got = (double)((uint64_t *)out)[i]; break;
                case OC_FLOAT32: got = ((float *)out)[i]; break;
                case OC_FLOAT64: got = ((double *)out)[i]; break;
                case OC_BFLOAT16: got = h2f(((uint16_t *)out)[i], 1); break;
                default: got = h2f(((uint16_t *)out)[i], 0); break;
                }
                if (got != acc) {
                    CHECK(0, "type %d op %d n %zu element %zu: %g != %g", dt,
                          op, n, i, got, acc);
                    break;
                }
            }
            free(in), free(out);
        }
}

static void check(oc_context_t *ctx, int repro)
{
    check_types(ctx, 1);
    check_types(ctx, 1001);
    const size_t sizes[] = {0, 1, 1001, 131072}; /* 131072 x 8 B = 1 MiB */
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        int64_t *a = malloc(8 * n + 8), *b = malloc(8 * n + 8);
        double *x = malloc(8 * n + 8), *y = malloc(8 * n + 8);
        for (size_t i = 0; i < n; i++) {
            a[i] = (int64_t)(g_rank + 1) * (int64_t)(i + 3);
            x[i] = fin(g_rank, i);
        }
        oc_status_t st = oc_allreduce(ctx, a, b, n, OC_INT64, OC_SUM);
        CHECK(st == OC_OK, "allreduce int64 %zu: %s", n, oc_status_string(st));
        for (size_t i = 0; i < n && st == OC_OK; i++)
            if (b[i] != (int64_t)(g_size * (g_size + 1) / 2) * (int64_t)(i + 3)) {
                CHECK(0, "allreduce int64 %zu: element %zu", n, i);
                break;
            }
        st = oc_allreduce(ctx, x, y, n, OC_FLOAT64, OC_SUM);
        CHECK(st == OC_OK, "allreduce f64 %zu: %s", n, oc_status_string(st));
        for (size_t i = 0; i < n && st == OC_OK; i++) {
            double e = fin(0, i);
            for (uint32_t r = 1; r < g_size; r++)
                e += fin(r, i);
            if (repro ? memcmp(&e, &y[i], 8) != 0
                      : (y[i] - e > 1e-9 * e || e - y[i] > 1e-9 * e)) {
                CHECK(0, "allreduce f64 %zu: element %zu %.17g != %.17g", n, i,
                      y[i], e);
                break;
            }
        }
        /* all-to-all: n / size elements per pair (at least 1) */
        size_t per = n / g_size + 1;
        /* room for the all-to-all and for the all-to-allv below (at most
         * 2 elements per peer) */
        size_t room = (per > 2 ? per : 2) * g_size;
        int32_t *s = malloc(4 * room), *d = malloc(4 * room);
        for (uint32_t p = 0; p < g_size; p++)
            for (size_t i = 0; i < per; i++)
                s[p * per + i] = (int32_t)(g_rank * 1000003u + p * 1009u + i);
        st = oc_alltoall(ctx, s, d, per, OC_INT32);
        CHECK(st == OC_OK, "alltoall %zu: %s", per, oc_status_string(st));
        for (uint32_t p = 0; p < g_size && st == OC_OK; p++)
            for (size_t i = 0; i < per; i++)
                if (d[p * per + i] != (int32_t)(p * 1000003u + g_rank * 1009u + i)) {
                    CHECK(0, "alltoall from %u element %zu", p, i);
                    p = g_size;
                    break;
                }
        /* all-to-allv: rank r sends (r + p) % 3 elements to p */
        size_t sc[64], sd[64], rc[64], rd[64], so = 0, ro = 0;
        for (uint32_t p = 0; p < g_size; p++) {
            sc[p] = (g_rank + p) % 3, sd[p] = so, so += sc[p];
            rc[p] = (p + g_rank) % 3, rd[p] = ro, ro += rc[p];
        }
        for (size_t i = 0; i < so; i++)
            s[i] = (int32_t)(g_rank * 100 + i);
        st = oc_alltoallv(ctx, s, sc, sd, d, rc, rd, OC_INT32);
        CHECK(st == OC_OK, "alltoallv: %s", oc_status_string(st));
        for (uint32_t p = 0; p < g_size && st == OC_OK; p++) {
            size_t off = 0;
            for (uint32_t q = 0; q < g_rank; q++)
                off += (p + q) % 3;
            for (size_t i = 0; i < rc[p]; i++)
                CHECK(d[rd[p] + i] == (int32_t)(p * 100 + off + i),
                      "alltoallv from %u", p);
        }
        /* bcast from the last rank */
        for (size_t i = 0; i < n; i++)
            a[i] = g_rank == g_size - 1 ? (int64_t)i * 7 : -1;
        st = oc_bcast(ctx, a, n, OC_INT64, g_size - 1);
        CHECK(st == OC_OK, "bcast: %s", oc_status_string(st));
        for (size_t i = 0; i < n && st == OC_OK; i++)
            if (a[i] != (int64_t)i * 7) {
                CHECK(0, "bcast element %zu", i);
                break;
            }
        st = oc_barrier(ctx);
        CHECK(st == OC_OK, "barrier: %s", oc_status_string(st));
        free(a), free(b), free(x), free(y), free(s), free(d);
    }
}

/* Rank 0's buffers are half out of reach of the agent (see the top). */
static void badbuf(oc_context_t *ctx)
{
    const size_t n = 131072, bytes = n * 8; /* 1 MiB: two of rcma.c's calls */
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), all = bytes + 2 * pg;
    const oc_status_t want = g_rank == 0 ? OC_ERR_COLL_MEMORY
                                         : OC_ERR_COLL_PEER_FAILED;
    uint8_t *s = mmap(NULL, all, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *d = mmap(NULL, all, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    oc_status_t st;

    if (s == MAP_FAILED || d == MAP_FAILED) {
        CHECK(0, "mmap");
        return;
    }
    /* [guard page][buffer][guard page], every byte 0x5a */
    memset(s, 0x5a, all), memset(d, 0x5a, all);
    if (g_rank == 0) /* the send buffer's second half: no access */
        CHECK(mprotect(s + pg + bytes / 2, bytes / 2, PROT_NONE) == 0, "mprotect");
    st = oc_allreduce(ctx, s + pg, d + pg, n, OC_INT64, OC_SUM);
    CHECK(st == want, "unreadable send buffer: %s", oc_status_string(st));
    for (size_t i = 0; i < all; i++)
        if (d[i] != 0x5a) { /* the result was never written */
            CHECK(0, "receive buffer byte %zu changed", i);
            break;
        }
    if (g_rank == 0) {
        CHECK(mprotect(s + pg + bytes / 2, bytes / 2, PROT_READ | PROT_WRITE) == 0,
              "mprotect");
        /* the receive buffer's second half read-only */
        CHECK(mprotect(d + pg + bytes / 2, bytes / 2, PROT_READ) == 0, "mprotect");
    }
    st = oc_allreduce(ctx, s + pg, d + pg, n, OC_INT64, OC_SUM);
    if (g_rank == 0) {
        CHECK(st == OC_ERR_COLL_MEMORY, "read-only receive buffer: %s",
              oc_status_string(st));
        for (size_t i = 0; i < pg; i++) /* nothing outside it */
            if (d[i] != 0x5a || d[pg + bytes + i] != 0x5a) {
                CHECK(0, "a guard byte changed");
                break;
            }
    } else { /* the others still get the result: only rank 0's write failed */
        CHECK(st == OC_OK || st == OC_ERR_COLL_PEER_FAILED,
              "read-only receive buffer elsewhere: %s", oc_status_string(st));
    }
    /* all-to-all by memory, the same two faults: the send buffer's second
     * half unreadable (nothing is written anywhere: the agent writes only
     * once every input is read), then the receive buffer's read-only */
    if (g_rank == 0)
        CHECK(mprotect(d + pg + bytes / 2, bytes / 2, PROT_READ | PROT_WRITE) == 0 &&
              mprotect(s + pg + bytes / 2, bytes / 2, PROT_NONE) == 0, "mprotect");
    memset(d, 0x5a, all);
    st = oc_alltoall(ctx, s + pg, d + pg, n / g_size, OC_INT64);
    CHECK(st == want, "all-to-all, unreadable send buffer: %s", oc_status_string(st));
    for (size_t i = 0; i < all; i++)
        if (d[i] != 0x5a) {
            CHECK(0, "all-to-all: receive buffer byte %zu changed", i);
            break;
        }
    if (g_rank == 0)
        CHECK(mprotect(s + pg + bytes / 2, bytes / 2, PROT_READ | PROT_WRITE) == 0 &&
              mprotect(d + pg + bytes / 2, bytes / 2, PROT_READ) == 0, "mprotect");
    st = oc_alltoall(ctx, s + pg, d + pg, n / g_size, OC_INT64);
    if (g_rank == 0) {
        CHECK(st == OC_ERR_COLL_MEMORY, "all-to-all, read-only receive buffer: %s",
              oc_status_string(st));
        for (size_t i = 0; i < pg; i++)
            if (d[i] != 0x5a || d[pg + bytes + i] != 0x5a) {
                CHECK(0, "all-to-all: a guard byte changed");
                break;
            }
    } else {
        CHECK(st == OC_OK || st == OC_ERR_COLL_PEER_FAILED,
              "all-to-all, read-only receive buffer elsewhere: %s",
              oc_status_string(st));
    }
    munmap(s, all), munmap(d, all);
    /* the agent and the job are fine */
    int64_t a = g_rank + 1, b = 0;
    st = oc_allreduce(ctx, &a, &b, 1, OC_INT64, OC_SUM);
    CHECK(st == OC_OK && b == (int64_t)g_size * (g_size + 1) / 2,
          "allreduce after: %s", oc_status_string(st));
}

/* One int64 collective of @p kind on @p n elements (per rank), checked
 * when it says OC_OK.  @return its status. */
static oc_status_t planted_one(oc_context_t *ctx, const char *kind, int no,
                               size_t n)
{
    int64_t *in = malloc(8 * n * g_size), *out = malloc(8 * n * g_size);
    oc_status_t st;
    int bad = 0;

    for (size_t i = 0; i < n * g_size; i++)
        in[i] = (int64_t)(g_rank * 1000003 + i * 7 + (size_t)no);
    memset(out, 0x5a, 8 * n * g_size);
    if (!strcmp(kind, "alltoall")) {
        st = oc_alltoall(ctx, in, out, n, OC_INT64);
        for (size_t s = 0; s < g_size && st == OC_OK; s++)
            for (size_t i = 0; i < n; i++)
                bad |= out[s * n + i] !=
                       (int64_t)(s * 1000003 + (g_rank * n + i) * 7 + (size_t)no);
    } else if (!strcmp(kind, "bcast")) {
        if (g_rank != 0)
            memset(in, 0x5a, 8 * n);
        st = oc_bcast(ctx, in, n, OC_INT64, 0);
        for (size_t i = 0; i < n && st == OC_OK; i++)
            bad |= in[i] != (int64_t)(i * 7 + (size_t)no);
    } else {
        st = oc_allreduce(ctx, in, out, n, OC_INT64, OC_SUM);
        for (size_t i = 0; i < n && st == OC_OK; i++) {
            int64_t want = 0;
            for (uint32_t r = 0; r < g_size; r++)
                want += (int64_t)(r * 1000003 + i * 7 + (size_t)no);
            bad |= out[i] != want;
        }
    }
    CHECK(!bad, "%s %d: OC_OK with a wrong result", kind, no);
    free(in), free(out);
    return st;
}

int main(int argc, char **argv)
{
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER, .handler = noop};
    oc_context_t *ctx;
    oc_status_t st;
    const char *repro = getenv("OC_COLL_REPRODUCIBLE");

    if (argc < 2) {
        fprintf(stderr, "usage: coll_agent_check check | wait VICTIM\n");
        return 2;
    }
    if ((st = oc_init(&p, &ctx)) != OC_OK) {
        fprintf(stderr, "oc_init: %s\n", oc_status_string(st));
        return 1;
    }
    g_rank = oc_rank(ctx), g_size = oc_size(ctx);
    if (g_size > 64) {
        fprintf(stderr, "at most 64 ranks\n");
        return 2;
    }
    if (!strcmp(argv[1], "check")) {
        check(ctx, repro != NULL && repro[0] == 'y');
        printf("%s: rank %u of %u, %s placement, %d failures\n",
               g_fail ? "FAIL" : "PASS", g_rank, g_size, oc_placement(ctx),
               g_fail);
        fflush(stdout);
        oc_finalize(ctx);
        return g_fail != 0;
    }
    if (!strcmp(argv[1], "badbuf")) {
        badbuf(ctx);
        printf("%s: badbuf rank %u of %u, %d failures\n",
               g_fail ? "FAIL" : "PASS", g_rank, g_size, g_fail);
        fflush(stdout);
        oc_finalize(ctx);
        return g_fail != 0;
    }
    if (!strcmp(argv[1], "wait") && argc > 2) {
        uint32_t victim = (uint32_t)atoi(argv[2]);
        size_t n = 131072;
        double *x = calloc(n, 8), *y = calloc(n, 8);
        if (g_rank == victim) {
            printf("rank %u: ready pid %d\n", g_rank, (int)getpid());
            fflush(stdout);
            sleep(60);
            return 1;
        }
        printf("rank %u: ready\n", g_rank);
        fflush(stdout);
        st = oc_allreduce(ctx, x, y, n, OC_FLOAT64, OC_SUM);
        printf("rank %u: %s at %lld\n", g_rank, oc_status_string(st), now_ms());
        fflush(stdout);
        oc_finalize(ctx); /* a failed context: returns at once */
        free(x), free(y);
        return st == OC_ERR_COLL_PEER_FAILED ? 0 : 1;
    }
    if (!strcmp(argv[1], "planted") && argc > 2) {
        size_t n = argc > 3 ? strtoull(argv[3], NULL, 0) : 1001;
        st = planted_one(ctx, argv[2], 1, n);
        CHECK(st == OC_OK, "%s 1: %s", argv[2], oc_status_string(st));
        st = planted_one(ctx, argv[2], 2, n);
        printf("rank %u: %s 2: %s\n", g_rank, argv[2], oc_status_string(st));
        CHECK(st != OC_OK, "%s 2: OC_OK though a fault was planted", argv[2]);
        st = planted_one(ctx, argv[2], 3, n);
        CHECK(st == OC_OK, "%s 3 (after the fault): %s", argv[2],
              oc_status_string(st));
        printf("%s: planted %s rank %u of %u, %d failures\n",
               g_fail ? "FAIL" : "PASS", argv[2], g_rank, g_size, g_fail);
        fflush(stdout);
        oc_finalize(ctx);
        return g_fail != 0;
    }
    if (!strcmp(argv[1], "time") && argc > 3) { /* time BYTES ITERS [KIND] */
        size_t n = strtoull(argv[2], NULL, 0) / 4;
        int it = atoi(argv[3]);
        const char *kind = argc > 4 ? argv[4] : "allreduce";
        float *x = calloc(n + 1, 4), *y = calloc(n + 1, 4);
        struct timespec t0, t1;
        if (!strcmp(kind, "alltoall")) { /* n / size elements per pair */
            n = n / g_size > 0 ? n / g_size : 1;
            free(x), free(y);
            x = calloc(n * g_size + 1, 4), y = calloc(n * g_size + 1, 4);
        }
        oc_barrier(ctx);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int k = 0; k < it; k++) {
            if (!strcmp(kind, "bcast"))
                st = oc_bcast(ctx, x, n, OC_FLOAT32, 0);
            else if (!strcmp(kind, "alltoall"))
                st = oc_alltoall(ctx, x, y, n, OC_FLOAT32);
            else if (!strcmp(kind, "barrier"))
                st = oc_barrier(ctx);
            else
                st = oc_allreduce(ctx, x, y, n, OC_FLOAT32, OC_SUM);
            if (st != OC_OK)
                break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("rank %u: %s, %.1f us per %s of %zu bytes\n", g_rank,
               oc_status_string(st), ((t1.tv_sec - t0.tv_sec) * 1e6 +
               (t1.tv_nsec - t0.tv_nsec) / 1e3) / it, kind, n * 4);
        oc_finalize(ctx);
        free(x), free(y);
        return st != OC_OK;
    }
    fprintf(stderr, "usage: coll_agent_check check | badbuf | wait VICTIM | planted KIND [N] | "
            "time BYTES ITERS [KIND]\n");
    return 2;
}
