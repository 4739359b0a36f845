/*
 * gpu.c — the CUDA driver, loaded at run time: dlopen of libcuda.so.1
 * (OC_LIBCUDA names another file: the tests' double), the entry points
 * src/gpu calls, cuInit, and the question every collective asks first:
 * is this buffer device memory, and in which context.
 *
 * Loaded at most once per process; the entry points are read-only
 * afterwards, so every function here is thread-safe.
 */
#include "gpu_int.h"

#include "util/config.h"
#include "util/log.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const oc_cfg_field_t gpu_config_table[] = {
    {"GPU", OC_CFG_BOOL, "y",
     "Serve CUDA device buffers in the collectives, in a program that has "
     "loaded the driver (liboffcore never loads it itself). The check costs "
     "about 50 ns per collective in a program without CUDA (a look at the "
     "loaded libraries); n: never look, every buffer is host memory.",
     offsetof(oc__gpu_config_t, on), 0, 0, NULL},
    {"GPU_CHUNK", OC_CFG_SIZE, "4M",
     "Bytes of a device buffer staged through pinned host memory at a "
     "time: chunk k is copied to the host while chunk k-1 is reduced or "
     "exchanged and chunk k-2 copied back. Large enough that a copy's "
     "fixed cost (a few us) vanishes, small enough that the first copy "
     "and the last copy-back, which nothing overlaps, stay short. Every "
     "rank must use the same value.",
     offsetof(oc__gpu_config_t, chunk), 4096, 1u << 30, NULL},
    {"GPU_SLOTS", OC_CFG_UINT, "3",
     "Chunks in flight, each in a pinned slot of 2 x OC_GPU_CHUNK bytes "
     "with a stream of its own: 3 lets a copy-in, a collective and a "
     "copy-back run at once. Pinned memory counts against "
     "RLIMIT_MEMLOCK (offcore doctor shows it).",
     offsetof(oc__gpu_config_t, slots), 2, 16, NULL},
    OC_CFG_END,
};

oc_status_t oc__gpu_config(oc__gpu_config_t *cfg)
{
    return oc__config_load(gpu_config_table, cfg);
}

/* The loader's state: written under mu, ok read without it (set last,
 * with release, once the entry points are in place). */
static struct {
    pthread_mutex_t mu;
    int             ok;       /* the driver answers */
    int             final;    /* loaded (or failed to load) for good */
    unsigned long long adds;  /* libraries loaded when we last looked */
    oc__cuda_t      fn;
    const char     *name;
    char            why[512];
    int             version, devices;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* @p h: the library, opened.  Look up the entry points and cuInit. */
static void init_from(void *h)
{
    CUresult r;

    __atomic_store_n(&g.final, 1, __ATOMIC_RELAXED);
#define OC__CUDA_SYM(fn_, sym, args)                                           \
    if ((*(void **)&g.fn.fn_ = dlsym(h, sym)) == NULL) {                       \
        snprintf(g.why, sizeof(g.why), "%s has no %s", g.name, sym);           \
        oc_warn(OC_COMP_GPU, "%s: device buffers are not served", g.why);      \
        return; /* the handle stays: a process loads it at most once */    \
    }
    OC__CUDA_CALLS(OC__CUDA_SYM)
#undef OC__CUDA_SYM
    if ((r = g.fn.cuInit(0)) != CUDA_SUCCESS) {
        snprintf(g.why, sizeof(g.why), "cuInit: %s", oc__cuda_err(r));
        oc_info(OC_COMP_GPU, "%s (%s): device buffers are not served",
                g.why, g.name);
        return;
    }
    if (g.fn.cuDriverGetVersion(&g.version) != CUDA_SUCCESS)
        g.version = 0;
    if (g.fn.cuDeviceGetCount(&g.devices) != CUDA_SUCCESS)
        g.devices = 0;
    oc_debug(OC_COMP_GPU, "%s: driver %d, %d device(s)", g.name, g.version,
             g.devices);
    __atomic_store_n(&g.ok, 1, __ATOMIC_RELEASE);
}

static void name_once(void)
{
    const char *env = getenv("OC_LIBCUDA");
    if (g.name == NULL)
        g.name = env != NULL && env[0] != '\0' ? env : "libcuda.so.1";
}

/* How many times this process has loaded a library (glibc's dlpi_adds:
 * it grows with every dlopen that loads something; 50 ns here). */
static int adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) +
                    sizeof(info->dlpi_adds))
        *(unsigned long long *)arg = info->dlpi_adds;
    return 1; /* the first object says it */
}

/*
 * Device memory can exist in this process only once it has loaded the
 * driver (the CUDA runtime, PyTorch, NCCL do): liboffcore looks for a
 * loaded libcuda (RTLD_NOLOAD) and never loads or initializes it itself,
 * so that a job that uses no GPU pays nothing on a GPU node (no cuInit, no
 * driver threads).  It looks again whenever the process has loaded a
 * library since (a program may start CUDA after oc_init), and only then:
 * a dlopen that finds nothing costs tens of us.
 */
int oc__gpu_available(void)
{
    unsigned long long adds = 0;
    void *h;

    if (__atomic_load_n(&g.ok, __ATOMIC_ACQUIRE))
        return 1;
    if (__atomic_load_n(&g.final, __ATOMIC_RELAXED))
        return 0;
    dl_iterate_phdr(adds_cb, &adds);
    if (adds != 0 && adds == __atomic_load_n(&g.adds, __ATOMIC_RELAXED))
        return 0; /* nothing loaded since the last look: no lock */
    pthread_mutex_lock(&g.mu);
    if (!g.final && (adds == 0 || adds != g.adds)) {
        name_once();
        if ((h = dlopen(g.name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) != NULL)
            init_from(h);
        else
            snprintf(g.why, sizeof(g.why), "%s is not loaded in this "
                     "process (it uses no CUDA)", g.name);
        __atomic_store_n(&g.adds, adds, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g.mu);
    return __atomic_load_n(&g.ok, __ATOMIC_ACQUIRE);
}

int oc__gpu_load(void)
{
    void *h;

    if (__atomic_load_n(&g.ok, __ATOMIC_ACQUIRE))
        return 1;
    pthread_mutex_lock(&g.mu);
    if (!g.final) {
        name_once();
        if ((h = dlopen(g.name, RTLD_NOW | RTLD_LOCAL)) != NULL) {
            init_from(h);
        } else {
            const char *e = dlerror();
            __atomic_store_n(&g.final, 1, __ATOMIC_RELAXED);
            snprintf(g.why, sizeof(g.why), "%s", e != NULL ? e : g.name);
            oc_debug(OC_COMP_GPU, "no CUDA driver: %s", g.why);
        }
    }
    pthread_mutex_unlock(&g.mu);
    return __atomic_load_n(&g.ok, __ATOMIC_ACQUIRE);
}

const char *oc__gpu_why(void)
{
    int ok = oc__gpu_available();
    const char *why;

    pthread_mutex_lock(&g.mu);
    why = ok ? "" : g.why;
    pthread_mutex_unlock(&g.mu);
    return why;
}

const char *oc__gpu_lib_name(void)
{
    pthread_mutex_lock(&g.mu);
    name_once();
    pthread_mutex_unlock(&g.mu);
    return g.name;
}

int oc__gpu_driver_version(void)
{
    return __atomic_load_n(&g.ok, __ATOMIC_ACQUIRE) ? g.version : 0;
}

int oc__gpu_device_count(void)
{
    return __atomic_load_n(&g.ok, __ATOMIC_ACQUIRE) ? g.devices : 0;
}

const oc__cuda_t *oc__cuda(void)
{
    return __atomic_load_n(&g.ok, __ATOMIC_ACQUIRE) ? &g.fn : NULL;
}

const char *oc__cuda_err(CUresult err)
{
    static __thread char buf[160];
    const char *s = NULL;

    if (g.fn.cuGetErrorString == NULL ||
        g.fn.cuGetErrorString(err, &s) != CUDA_SUCCESS || s == NULL)
        s = "unknown error";
    snprintf(buf, sizeof(buf), "CUDA error %d: %s", err, s);
    return buf;
}

oc_status_t oc__gpu_mem_of(const void *p, oc__gpu_mem_t *m)
{
    unsigned int type = 0;
    int ordinal = -1;
    CUcontext cx = NULL;
    CUresult r;

    if (!oc__gpu_available() || p == NULL) {
        m->device = -1, m->cuctx = NULL;
        return OC_OK;
    }
    r = g.fn.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_ERROR_INVALID_VALUE || /* memory CUDA does not know */
        (r == CUDA_SUCCESS && type != CU_MEMORYTYPE_DEVICE)) {
        m->device = -1, m->cuctx = NULL;
        return OC_OK;
    }
    if (r == CUDA_SUCCESS)
        r = g.fn.cuPointerGetAttribute(&cx, CU_POINTER_ATTRIBUTE_CONTEXT,
                                       (CUdeviceptr)(uintptr_t)p);
    if (r == CUDA_SUCCESS)
        r = g.fn.cuPointerGetAttribute(&ordinal,
                                       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                       (CUdeviceptr)(uintptr_t)p);
    if (r != CUDA_SUCCESS) {
        oc_error(OC_COMP_GPU, "the driver cannot say what memory %p is: %s",
                 p, oc__cuda_err(r));
        return OC_ERR_GPU;
    }
    m->device = ordinal, m->cuctx = cx;
    return OC_OK;
}
