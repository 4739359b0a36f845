/*
 * coll_bench.c — offcore's collectives against Open MPI's in one job:
 * allreduce (float32 sum), all-to-all and broadcast (from rank 0) latency
 * per message size, and the
 * OSU-style overlap of oc_iallreduce vs MPI_Iallreduce.
 *
 *   mpirun -np N coll_bench [--min BYTES] [--max BYTES] [--repeats R]
 *                           [--overlap BYTES,...] [--tts FACTORS|none]
 *
 * Latency: per size, R interleaved samples (offcore, then MPI, then
 * offcore...), each the mean of `iters` back-to-back collectives (iters
 * shrinks with size so a sample moves at most ~64 MiB); the JSON line
 * gives the median of each side and every sample.  Times are rank 0's
 * after a barrier, maximum over ranks.  Overlap (OSU): t_pure = start +
 * wait; t_compute = fixed work calibrated to t_pure, timed alone; t_both
 * = start, the same work, wait; overlap% = 100 * (1 - (t_both -
 * t_compute) / t_pure), clamped to [0, 100], per rank from its own times,
 * the lowest over the ranks reported; t_compute is measured under the same
 * core sharing as t_both (see overlap()).  The compute loop calls no
 * progress function, as OSU's benchmarks by default.  Time to solution
 * (at each overlap size, for each factor of --tts, default 0.5,1,2): a
 * step of a compute loop whose compute lasts that factor times Open MPI's
 * allreduce time at the size, `compute + MPI_Allreduce` against offcore's
 * `oc_iallreduce, compute, oc_wait`; "gain" is the first over the second
 * (> 1: offloading pays).  BENCH_COLL_VERBOSE
 * set: every rank prints its calibration and its t_pure, t_compute and
 * t_both to stderr.  Every result is verified (integer-valued floats: sums
 * are exact).  Exit 0 when every result verified.
 */
#include <mpi.h>
#include <sched.h>
#include <offcore/coll.h>
#include <offcore/mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size, g_bad;

static oc_status_t noop(void *a, uint32_t s, const void *m, size_t l)
{
    return OC_OK;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    double t[256];
    memcpy(t, v, n * sizeof(double));
    qsort(t, n, sizeof(double), cmpd);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static double maxall(double x)
{
    double m;
    MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static void fill(float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        in[i] = (float)((g_rank + i) % 7);
}

static int verify_sum(const float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float e = 0;
        for (int r = 0; r < g_size; r++)
            e += (float)((r + i) % 7);
        if (out[i] != e)
            return 0;
    }
    return 1;
}

/* Broadcast: rank 0's buffer, every other rank's zeroed before a sample. */
static void fill_bcast(float *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = g_rank == 0 ? (float)(i % 1000 + 1) : 0;
}

static int verify_bcast(const float *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != (float)(i % 1000 + 1))
            return 0;
    return 1;
}

static int verify_a2a(const float *out, size_t per)
{
    for (int s = 0; s < g_size; s++)
        for (size_t i = 0; i < per; i++)
            if (out[s * per + i] != (float)(s * 1000 + (g_rank * per + i) % 1000))
                return 0;
    return 1;
}

enum { OP_ALLREDUCE, OP_ALLTOALL, OP_BCAST, OP_COUNT };
static const char *const op_name[OP_COUNT] = {"allreduce", "alltoall",
                                              "bcast"};

/* One sample: mean microseconds of iters collectives (a broadcast goes
 * from rank 0 to @p out on every rank). */
static double sample(oc_context_t *ctx, int mpi, int op, float *in, float *out,
                     size_t n, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; k++) {
        int ok;
        if (op == OP_BCAST)
            ok = mpi ? MPI_Bcast(out, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD) ==
                           MPI_SUCCESS
                     : oc_bcast(ctx, out, n, OC_FLOAT32, 0) == OC_OK;
        else if (op == OP_ALLTOALL)
            ok = mpi ? MPI_Alltoall(in, (int)(n / g_size), MPI_FLOAT, out,
                                    (int)(n / g_size), MPI_FLOAT,
                                    MPI_COMM_WORLD) == MPI_SUCCESS
                     : oc_alltoall(ctx, in, out, n / g_size, OC_FLOAT32) == OC_OK;
        else
            ok = mpi ? MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM,
                                     MPI_COMM_WORLD) == MPI_SUCCESS
                     : oc_allreduce(ctx, in, out, n, OC_FLOAT32, OC_SUM) == OC_OK;
        if (!ok)
            g_bad++;
    }
    return maxall((MPI_Wtime() - t0) * 1e6 / iters);
}

static volatile double g_sink;

static double g_slice_us; /* BENCH_COLL_SLICE_US: see work() */

/* Fixed work, not a wall-clock deadline: a rank that loses its core (two
 * ranks time-sharing one, or a collective taking the rank's CPU) takes
 * longer to finish it, and t_both shows that.  With g_slice_us > 0 it
 * gives up the core every g_slice_us (sched_yield: no progress of any
 * library), so that ranks time-sharing one core interleave finely, as
 * ranks on cores of their own run side by side: without it a rank
 * computes a whole time slice (ms) before the other has even started its
 * collective, which caps any implementation's overlap near 50 %. */
static void work(long units)
{
    double x = 1.0, last = g_slice_us > 0 ? MPI_Wtime() : 0;
    for (long u = 0; u < units; u++) {
        for (int i = 0; i < 64; i++)
            x = x * 1.0000001 + 1e-9;
        if (g_slice_us > 0 && (u & 15) == 0 &&
            (MPI_Wtime() - last) * 1e6 >= g_slice_us) {
            sched_yield();
            last = MPI_Wtime();
        }
    }
    g_sink = x;
}

/* Work units that take @p us on this rank while every rank works at the
 * same time (the sharing of t_compute and t_both): a probe scaled to about
 * @p us, then the median rate of 5 timed runs of it (a loaded machine
 * preempts single runs by whole time slices). */
static long calibrate(double us)
{
    long units = 1000;
    double rate[5];
    for (int k = 0; k < 3; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        work(units);
        double t = (MPI_Wtime() - t0) * 1e6;
        double u = t > 1 ? units * us / t : units * 2.0;
        units = u < 1 ? 1 : u > 1e10 ? (long)1e10 : (long)u;
    }
    for (int k = 0; k < 5; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        work(units);
        double t = (MPI_Wtime() - t0) * 1e6;
        rate[k] = units / (t > 1 ? t : 1);
    }
    double u = us * median(rate, 5);
    if (getenv("BENCH_COLL_VERBOSE") != NULL)
        fprintf(stderr, "# calibrate rank %d: %.0f us: rates %.1f %.1f %.1f %.1f %.1f units/us -> %.0f units\n",
                g_rank, us, rate[0], rate[1], rate[2], rate[3], rate[4], u);
    return u < 1 ? 1 : u > 1e10 ? (long)1e10 : (long)u;
}

/* One OSU-style overlap measurement of one implementation at n floats,
 * computed on each rank from its own times: t_pure = start + wait;
 * t_compute = the fixed work calibrated to t_pure, timed alone; t_both =
 * start, the same work, wait.  t_compute and t_both alternate iteration by
 * iteration and every rank works at the same time in both (a barrier
 * before each), so both are measured under the same sharing of the
 * ranks' cores: with two ranks on one core each gets half of it in both,
 * and the formula measures the collective, not the scheduler.  Returns the
 * lowest overlap over the ranks (*t_pure_p: the highest t_pure). */
static double overlap(oc_context_t *ctx, int mpi, float *in, float *out,
                      size_t n, int iters, double *t_pure_p)
{
    double tp = 0, tc = 0, tb = 0, twait = 0, ov, worst;
    long units = 0;
    for (int phase = 0; phase < 2; phase++)
        for (int k = 0; k < iters; k++) {
            MPI_Request mr;
            oc_request_t *orq = NULL; /* a start that failed: none to wait on */
            if (phase == 1) { /* compute alone, same sharing */
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                work(units);
                tc += (MPI_Wtime() - t0) * 1e6;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (mpi)
                MPI_Iallreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD, &mr);
            else if (oc_iallreduce(ctx, in, out, n, OC_FLOAT32, OC_SUM, &orq) != OC_OK)
                g_bad++;
            double tw = 0;
            if (phase == 1) {
                work(units);
                tw = MPI_Wtime();
            }
            if (mpi)
                MPI_Wait(&mr, MPI_STATUS_IGNORE);
            else if (oc_wait(&orq) != OC_OK)
                g_bad++;
            double t = (MPI_Wtime() - t0) * 1e6;
            if (phase == 0)
                tp += t;
            else
                tb += t, twait += (MPI_Wtime() - tw) * 1e6;
            if (phase == 0 && k == iters - 1) {
                tp /= iters;
                units = calibrate(tp);
            }
        }
    tc /= iters, tb /= iters;
    ov = 100.0 * (1.0 - (tb - tc) / tp);
    ov = ov < 0 ? 0 : ov > 100 ? 100 : ov;
    if (getenv("BENCH_COLL_VERBOSE") != NULL)
        fprintf(stderr, "# overlap %s rank %d n %zu: t_pure %.1f t_compute "
                "%.1f t_both %.1f (of which the wait %.1f) us: %.1f %%\n",
                mpi ? "mpi" : "offcore", g_rank, n * 4, tp, tc, tb,
                twait / iters, ov);
    MPI_Allreduce(&ov, &worst, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    *t_pure_p = maxall(tp);
    return worst;
}

/* Time to solution of one step of a compute loop at n floats: compute for
 * @p units, then the allreduce of its result.  With MPI the two follow
 * each other (compute + MPI_Allreduce); with offcore the allreduce is
 * started first and waited for after the compute (what a user who
 * offloads it writes, the previous step's data being reduced while this
 * one computes).  Returns the mean per step, highest over the ranks. */
static double tts(oc_context_t *ctx, int mpi, float *in, float *out,
                  size_t n, int iters, long units)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; k++) {
        oc_request_t *orq;
        if (mpi) {
            work(units);
            MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            continue;
        }
        if (oc_iallreduce(ctx, in, out, n, OC_FLOAT32, OC_SUM, &orq) != OC_OK) {
            g_bad++;
            continue;
        }
        work(units);
        if (oc_wait(&orq) != OC_OK)
            g_bad++;
    }
    return maxall((MPI_Wtime() - t0) * 1e6 / iters);
}

/* The time-to-solution rows at n floats: for each compute length (a
 * factor of Open MPI's own allreduce time at this size), R interleaved
 * samples of compute + MPI_Allreduce and of offcore's overlapped step. */
static void tts_rows(oc_context_t *ctx, const char *pl, float *in,
                     float *out, size_t n, int R, const char *factors)
{
    char tmp[128];
    int iters = (int)((32u << 20) / (n * 4));
    iters = iters > 200 ? 200 : iters < 5 ? 5 : iters;
    double lat[256];
    for (int r = 0; r < R; r++)
        lat[r] = sample(ctx, 1, OP_ALLREDUCE, in, out, n, iters);
    double mpi_us = median(lat, R);
    snprintf(tmp, sizeof(tmp), "%s", factors);
    for (char *save = NULL, *f = strtok_r(tmp, ",", &save); f != NULL;
         f = strtok_r(NULL, ",", &save)) {
        double factor = atof(f), us[256], mus[256];
        long units = calibrate(mpi_us * factor);
        for (int r = 0; r < R; r++) {
            fill(in, n);
            memset(out, 0, n * 4);
            us[r] = tts(ctx, 0, in, out, n, iters, units);
            int ver = verify_sum(out, n);
            memset(out, 0, n * 4);
            mus[r] = tts(ctx, 1, in, out, n, iters, units);
            if (!ver || !verify_sum(out, n))
                g_bad++;
        }
        int ver = g_bad == 0, allver;
        MPI_Allreduce(&ver, &allver, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (g_rank == 0) {
            double m = median(us, R), mm = median(mus, R);
            printf("{\"bench\":\"coll\",\"op\":\"allreduce\","
                   "\"measure\":\"time_to_solution\",\"placement\":\"%s\","
                   "\"ranks\":%d,\"bytes\":%zu,\"compute_factor\":%g,"
                   "\"compute_us\":%.1f,\"compute_slice_us\":%.0f,"
                   "\"mpi_allreduce_us\":%.3f,\"us\":%.3f,\"mpi_us\":%.3f,"
                   "\"gain\":%.3f,\"runs_us\":[",
                   pl, g_size, n * 4, factor, mpi_us * factor, g_slice_us,
                   mpi_us, m, mm, mm / m);
            for (int r = 0; r < R; r++) printf("%s%.3f", r ? "," : "", us[r]);
            printf("],\"mpi_runs_us\":[");
            for (int r = 0; r < R; r++) printf("%s%.3f", r ? "," : "", mus[r]);
            printf("],\"verified\":%s}\n", allver ? "true" : "false");
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    size_t min = 8, max = 64u << 20;
    int R = 5;
    char ovl[256] = "65536,1048576", tf[128] = "0.5,1,2";
    MPI_Comm comm = MPI_COMM_WORLD;
    oc_context_t *ctx;
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER, .handler = noop};

    /* before MPI_Init: --help and --version need no job, and a word it
     * does not know is refused before any rank starts measuring */
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: mpirun -np N coll-bench [--min BYTES] [--max BYTES] "
                   "[--repeats R]\n"
                   "                  [--overlap BYTES,...] [--tts FACTORS|none]\n"
                   "offcore's allreduce, all-to-all and broadcast against Open "
                   "MPI's in one job:\nlatency per size (8 B .. 64 MiB by "
                   "default, R = 5 interleaved samples), the\noverlap of "
                   "oc_iallreduce and the time to solution of a compute loop "
                   "(factors\n0.5,1,2 of Open MPI's allreduce time), JSON "
                   "lines on stdout, every result\nverified (exit 1 when one "
                   "is not).  BENCH_COLL_SLICE_US, BENCH_COLL_VERBOSE:\n"
                   "bench/run-coll-bench.sh, which runs it as `make bench` "
                   "does.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("coll-bench (offcore %s)\n", oc_version());
            return 0;
        }
        int known = !strcmp(argv[i], "--min") || !strcmp(argv[i], "--max") ||
                    !strcmp(argv[i], "--repeats") ||
                    !strcmp(argv[i], "--overlap") || !strcmp(argv[i], "--tts");
        if (!known || i + 1 == argc) {
            fprintf(stderr, "coll-bench: %s '%s' (--help)\n",
                    known ? "no value after" : "unknown option", argv[i]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--min")) min = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--max")) max = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--repeats")) R = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--overlap")) snprintf(ovl, sizeof(ovl), "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--tts")) snprintf(tf, sizeof(tf), "%s", argv[i + 1]);
    }
    if (R < 1 || R > 255) R = 5;
    if (getenv("BENCH_COLL_SLICE_US") != NULL)
        g_slice_us = atof(getenv("BENCH_COLL_SLICE_US"));
    MPI_Comm_rank(comm, &g_rank);
    MPI_Comm_size(comm, &g_size);
    if (oc_init_mpi(&comm, &p, &ctx) != OC_OK)
        MPI_Abort(comm, 2);
    const char *pl = oc_placement(ctx);
    size_t cap = max / 4 + g_size;
    { /* room for the overlap sizes too (a run may do only those) */
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s", ovl);
        for (char *s = strtok(tmp, ","); s != NULL; s = strtok(NULL, ","))
            if (strtoull(s, NULL, 0) / 4 + g_size > cap)
                cap = strtoull(s, NULL, 0) / 4 + g_size;
    }
    float *in = malloc(cap * 4), *out = malloc(cap * 4);

    for (int op = 0; op < OP_COUNT; op++)
        for (size_t bytes = min; bytes <= max;
             bytes = bytes < max && bytes * 8 > max ? max : bytes * 8) {
            size_t n = bytes / 4 ? bytes / 4 : 1;
            int a2a = op == OP_ALLTOALL;
            if (a2a)
                n = (n + g_size - 1) / g_size * g_size;
            int iters = (int)((64u << 20) / (n * 4));
            iters = iters > 1000 ? 1000 : iters < 2 ? 2 : iters;
            double us[256], mus[256];
            int ver = 1;
            if (a2a)
                for (int s = 0; s < g_size; s++)
                    for (size_t i = 0; i < n / g_size; i++)
                        in[s * (n / g_size) + i] = (float)(g_rank * 1000 + (s * (n / g_size) + i) % 1000);
            else
                fill(in, n);
            fill_bcast(out, n);
            sample(ctx, 0, op, in, out, n, 1); /* warm-up, both */
            sample(ctx, 1, op, in, out, n, 1);
            for (int r = 0; r < R; r++) {
                if (op == OP_BCAST)
                    fill_bcast(out, n);
                else
                    memset(out, 0, n * 4);
                us[r] = sample(ctx, 0, op, in, out, n, iters);
                ver &= op == OP_BCAST ? verify_bcast(out, n)
                       : a2a          ? verify_a2a(out, n / g_size)
                                      : verify_sum(out, n);
                if (op == OP_BCAST)
                    fill_bcast(out, n);
                else
                    memset(out, 0, n * 4);
                mus[r] = sample(ctx, 1, op, in, out, n, iters);
                if (op == OP_BCAST)
                    ver &= verify_bcast(out, n);
            }
            int allver;
            ver &= g_bad == 0;
            MPI_Allreduce(&ver, &allver, 1, MPI_INT, MPI_LAND, comm);
            if (g_rank == 0) {
                double m = median(us, R), mm = median(mus, R);
                printf("{\"bench\":\"coll\",\"op\":\"%s\",\"placement\":\"%s\","
                       "\"ranks\":%d,\"bytes\":%zu,\"iters\":%d,\"us\":%.3f,"
                       "\"mpi_us\":%.3f,\"ratio\":%.3f,\"runs_us\":[",
                       op_name[op], pl, g_size, n * 4, iters,
                       m, mm, m / mm);
                for (int r = 0; r < R; r++) printf("%s%.3f", r ? "," : "", us[r]);
                printf("],\"mpi_runs_us\":[");
                for (int r = 0; r < R; r++) printf("%s%.3f", r ? "," : "", mus[r]);
                printf("],\"verified\":%s}\n", allver ? "true" : "false");
                fflush(stdout);
            }
            if (!allver)
                g_bad++;
        }

    for (char *s = strtok(ovl, ","); s != NULL; s = strtok(NULL, ",")) {
        size_t bytes = strtoull(s, NULL, 0), n = bytes / 4 ? bytes / 4 : 1;
        if (n > cap)
            continue;
        int iters = (int)((32u << 20) / (n * 4));
        iters = iters > 200 ? 200 : iters < 5 ? 5 : iters;
        double ov[256], mov[256], tp[256], mtp[256];
        fill(in, n);
        for (int r = 0; r < R; r++) {
            ov[r] = overlap(ctx, 0, in, out, n, iters, &tp[r]);
            mov[r] = overlap(ctx, 1, in, out, n, iters, &mtp[r]);
        }
        int ver = verify_sum(out, n) && g_bad == 0, allver;
        MPI_Allreduce(&ver, &allver, 1, MPI_INT, MPI_LAND, comm);
        if (g_rank == 0) {
            /* the fields; "measure" tells these rows (us: t_pure)
             * from the latency rows of the same op */
            printf("{\"bench\":\"coll\",\"op\":\"allreduce\","
                   "\"measure\":\"overlap\","
                   "\"placement\":\"%s\",\"ranks\":%d,\"bytes\":%zu,"
                   "\"us\":%.3f,\"mpi_us\":%.3f,\"overlap_pct\":%.1f,"
                   "\"mpi_overlap_pct\":%.1f,\"compute_slice_us\":%.0f,"
                   "\"overlap_runs\":[",
                   pl, g_size, n * 4, median(tp, R), median(mtp, R),
                   median(ov, R), median(mov, R), g_slice_us);
            for (int r = 0; r < R; r++) printf("%s%.1f", r ? "," : "", ov[r]);
            printf("],\"mpi_overlap_runs\":[");
            for (int r = 0; r < R; r++) printf("%s%.1f", r ? "," : "", mov[r]);
            printf("],\"verified\":%s}\n", allver ? "true" : "false");
            fflush(stdout);
        }
        if (!allver)
            g_bad++;
        if (tf[0] != '\0' && strcmp(tf, "none") != 0)
            tts_rows(ctx, pl, in, out, n, R, tf);
    }
    free(in), free(out);
    oc_finalize(ctx);
    MPI_Finalize();
    return g_bad ? 1 : 0;
}
