/*
 * gpu_coll.c — collectives on CUDA device buffers (docs/gpu.md), float32
 * allreduce (sum) and all-to-all from 4 KiB to 256 MiB, three ways in one
 * job, interleaved per sample:
 *   device  offcore's collective on the device buffers (staged, pipelined)
 *   byhand  what a user does without a CUDA-aware MPI: copy to the host
 *           (cuMemcpyDtoH into pinned memory), MPI_Allreduce/MPI_Alltoall,
 *           copy back (cuMemcpyHtoD), one after the other
 *   host    offcore's collective on host buffers (what staging costs)
 * One JSON line per op and size: the medians, the same-run ratios
 * byhand/device and host/device, every sample, "verified_device",
 * "verified_byhand", "verified_host" (every result of that way, every
 * sample, on every rank: integer-valued floats, exact sums) and
 * "verified" (all three).  Ranks on one
 * host share the GPUs (rank r uses device r % count).
 *
 *   mpirun -np N gpu-coll [--min BYTES] [--max BYTES] [--repeats R]
 *
 * Without a CUDA driver or device it prints one line saying it skipped and
 * why, and exits 0.  OC_LIBCUDA names another driver library (the tests'
 * double).  Exit 1 when a result did not verify.
 */
#include <mpi.h>
#include <offcore/coll.h>
#include <offcore/mpi.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*cu_init_t)(unsigned);
typedef int (*cu_count_t)(int *);
typedef int (*cu_retain_t)(void **, int);
typedef int (*cu_setcur_t)(void *);
typedef int (*cu_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_free_t)(unsigned long long);
typedef int (*cu_htod_t)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_t)(void *, unsigned long long, size_t);
typedef int (*cu_hostalloc_t)(void **, size_t, unsigned);
typedef int (*cu_freehost_t)(void *);

static struct {
    cu_alloc_t alloc;
    cu_free_t free;
    cu_htod_t htod;
    cu_dtoh_t dtoh;
    cu_hostalloc_t hostalloc;
    cu_freehost_t freehost;
} cu;
static int g_rank, g_size, g_bad;

static oc_status_t noop(void *a, uint32_t s, const void *m, size_t l)
{
    (void)a, (void)s, (void)m, (void)l;
    return OC_OK;
}

/* The driver, a device, its primary context.  NULL, or why not. */
static const char *cuda_open(void)
{
    static char why[512];
    const char *lib = getenv("OC_LIBCUDA");
    void *h = dlopen(lib != NULL && lib[0] ? lib : "libcuda.so.1", RTLD_NOW);
    void *cx;
    int n = 0;

    if (h == NULL) {
        snprintf(why, sizeof(why), "no CUDA driver (%s)", dlerror());
        return why;
    }
    cu_init_t init = (cu_init_t)(uintptr_t)dlsym(h, "cuInit");
    cu_count_t count = (cu_count_t)(uintptr_t)dlsym(h, "cuDeviceGetCount");
    cu_retain_t retain = (cu_retain_t)(uintptr_t)dlsym(h, "cuDevicePrimaryCtxRetain");
    cu_setcur_t setcur = (cu_setcur_t)(uintptr_t)dlsym(h, "cuCtxSetCurrent");
    cu.alloc = (cu_alloc_t)(uintptr_t)dlsym(h, "cuMemAlloc_v2");
    cu.free = (cu_free_t)(uintptr_t)dlsym(h, "cuMemFree_v2");
    cu.htod = (cu_htod_t)(uintptr_t)dlsym(h, "cuMemcpyHtoD_v2");
    cu.dtoh = (cu_dtoh_t)(uintptr_t)dlsym(h, "cuMemcpyDtoH_v2");
    cu.hostalloc = (cu_hostalloc_t)(uintptr_t)dlsym(h, "cuMemHostAlloc");
    cu.freehost = (cu_freehost_t)(uintptr_t)dlsym(h, "cuMemFreeHost");
    if (!init || !count || !retain || !setcur || !cu.alloc || !cu.free ||
        !cu.htod || !cu.dtoh || !cu.hostalloc || !cu.freehost)
        return "the CUDA driver lacks an entry point this bench needs";
    if (init(0) != 0 || count(&n) != 0 || n == 0)
        return "no CUDA device (cuInit or cuDeviceGetCount)";
    if (retain(&cx, g_rank % n) != 0 || setcur(cx) != 0)
        return "cannot make the device's primary context current";
    return NULL;
}

static void *dev_alloc(size_t n)
{
    unsigned long long d = 0;
    if (cu.alloc(&d, n) != 0) {
        fprintf(stderr, "gpu-coll: cuMemAlloc of %zu bytes failed\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return (void *)(uintptr_t)d;
}

static double tmax(double t)
{
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double t[64];
    memcpy(t, v, (size_t)n * sizeof(*t));
    qsort(t, (size_t)n, sizeof(*t), cmpd);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* input element i of rank r; allreduce: sum over r; all-to-all: element
 * i of block p on rank r comes from rank p's block r */
static float in_ar(size_t i, int r) { return (float)(i % 1000 + (size_t)r); }
static float want_ar(size_t i)
{
    return (float)((i % 1000) * (size_t)g_size +
                   (size_t)g_size * (size_t)(g_size - 1) / 2);
}
static float in_a2a(size_t i, size_t per, int r)
{
    return (float)((size_t)r * 1000 + i / per) + (float)(i % per % 512);
}
static float want_a2a(size_t i, size_t per)
{
    return (float)((i / per) * 1000 + (size_t)g_rank) + (float)(i % per % 512);
}

static int verify(const float *got, size_t n, int a2a, size_t per)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != (a2a ? want_a2a(i, per) : want_ar(i)))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    size_t min = 4096, max = 256u << 20;
    int R = 5;
    MPI_Comm comm = MPI_COMM_WORLD;
    oc_context_t *ctx;
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER, .handler = noop};
    const char *why;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(comm, &g_rank);
    MPI_Comm_size(comm, &g_size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--min"))
            min = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--max"))
            max = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--repeats"))
            R = atoi(argv[i + 1]);
    }
    if (R < 1 || R > 64 || min < 4 || max < min) {
        if (g_rank == 0)
            fprintf(stderr, "gpu-coll: --repeats 1..64, 4 <= --min <= --max\n");
        MPI_Finalize();
        return 2;
    }
    why = cuda_open();
    int ok = why == NULL, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        if (g_rank == 0)
            printf("gpu-coll: skipped: %s\n", why ? why : "a rank has no GPU");
        MPI_Finalize();
        return 0;
    }
    if (oc_init_mpi(&comm, &p, &ctx) != OC_OK) {
        fprintf(stderr, "gpu-coll: oc_init failed\n");
        MPI_Abort(comm, 2);
    }
    for (int a2a = 0; a2a < 2; a2a++)
        for (size_t bytes = min; bytes <= max; bytes *= 4) {
            size_t n = bytes / 4 / (size_t)g_size * (size_t)g_size;
            size_t per = n / (size_t)g_size;
            float *h = malloc(n * 4), *got = malloc(n * 4), *pin = NULL;
            float *hs = malloc(n * 4), *hr = malloc(n * 4);
            void *ds, *dr;
            double t_dev[64], t_hand[64], t_host[64];
            int vd = 1, vh = 1, vo = 1, verified;

            if (n == 0)
                continue;
            if (cu.hostalloc((void **)&pin, n * 4, 0) != 0 || !h || !got ||
                !hs || !hr) {
                fprintf(stderr, "gpu-coll: no memory for %zu bytes\n", bytes);
                MPI_Abort(comm, 2);
            }
            for (size_t i = 0; i < n; i++)
                h[i] = a2a ? in_a2a(i, per, g_rank) : in_ar(i, g_rank);
            ds = dev_alloc(n * 4);
            dr = dev_alloc(n * 4);
            for (int r = 0; r < R; r++) {
                oc_status_t st;
                double t;
                /* offcore on the device buffers */
                cu.htod((uintptr_t)ds, h, n * 4);
                MPI_Barrier(comm);
                t = MPI_Wtime();
                st = a2a ? oc_alltoall(ctx, ds, dr, per, OC_FLOAT32)
                         : oc_allreduce(ctx, ds, dr, n, OC_FLOAT32, OC_SUM);
                t_dev[r] = tmax(MPI_Wtime() - t) * 1e6;
                cu.dtoh(got, (uintptr_t)dr, n * 4);
                vd &= st == OC_OK && verify(got, n, a2a, per);
                /* by hand: copy out, MPI, copy back */
                MPI_Barrier(comm);
                t = MPI_Wtime();
                cu.dtoh(pin, (uintptr_t)ds, n * 4);
                if (a2a)
                    MPI_Alltoall(MPI_IN_PLACE, (int)per, MPI_FLOAT, pin,
                                 (int)per, MPI_FLOAT, comm);
                else
                    MPI_Allreduce(MPI_IN_PLACE, pin, (int)n, MPI_FLOAT,
                                  MPI_SUM, comm);
                cu.htod((uintptr_t)dr, pin, n * 4);
                t_hand[r] = tmax(MPI_Wtime() - t) * 1e6;
                cu.dtoh(got, (uintptr_t)dr, n * 4);
                vh &= verify(got, n, a2a, per);
                /* offcore on host buffers */
                memcpy(hs, h, n * 4);
                MPI_Barrier(comm);
                t = MPI_Wtime();
                st = a2a ? oc_alltoall(ctx, hs, hr, per, OC_FLOAT32)
                         : oc_allreduce(ctx, hs, hr, n, OC_FLOAT32, OC_SUM);
                t_host[r] = tmax(MPI_Wtime() - t) * 1e6;
                vo &= st == OC_OK && verify(hr, n, a2a, per);
            }
            int v[3] = {vd, vh, vo};
            MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MIN, comm);
            verified = v[0] && v[1] && v[2];
            g_bad |= !verified;
            if (g_rank == 0) {
                double md = median(t_dev, R), mh = median(t_hand, R),
                       mo = median(t_host, R);
                printf("{\"bench\":\"gpu-coll\",\"op\":\"%s\",\"ranks\":%d,"
                       "\"bytes\":%zu,\"device_us\":%.2f,\"byhand_us\":%.2f,"
                       "\"host_us\":%.2f,\"ratio_byhand\":%.3f,"
                       "\"ratio_host\":%.3f,\"runs_device_us\":[",
                       a2a ? "alltoall" : "allreduce", g_size, n * 4, md, mh,
                       mo, mh / md, mo / md);
                for (int r = 0; r < R; r++)
                    printf("%s%.2f", r ? "," : "", t_dev[r]);
                printf("],\"runs_byhand_us\":[");
                for (int r = 0; r < R; r++)
                    printf("%s%.2f", r ? "," : "", t_hand[r]);
                printf("],\"runs_host_us\":[");
                for (int r = 0; r < R; r++)
                    printf("%s%.2f", r ? "," : "", t_host[r]);
                printf("],\"verified_device\":%s,\"verified_byhand\":%s,"
                       "\"verified_host\":%s,\"verified\":%s}\n",
                       v[0] ? "true" : "false", v[1] ? "true" : "false",
                       v[2] ? "true" : "false", verified ? "true" : "false");
                fflush(stdout);
            }
            cu.free((uintptr_t)ds);
            cu.free((uintptr_t)dr);
            cu.freehost(pin);
            free(h), free(got), free(hs), free(hr);
        }
    oc_finalize(ctx);
    MPI_Finalize();
    return g_bad ? 1 : 0;
}
