/*
 * gpu.c — the CUDA driver, loaded at run time: dlopen of libcuda.so.1
 * (OC_LIBCUDA names another file: the tests' double), the entry points
 * src/gpu calls, cuInit, and the question every collective asks first:
 * is this buffer device memory, and in which context.
 *
 * Loaded once per process (pthread_once); afterwards read-only, so every
 * function here is thread-safe.
 */
#include "gpu_int.h"

#include "util/config.h"
#include "util/log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const oc_cfg_field_t gpu_config_table[] = {
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

static struct {
    pthread_once_t once;
    int            ok;
    oc__cuda_t     fn;
    const char    *name;
    char           why[512];
    int            version, devices;
} g = {.once = PTHREAD_ONCE_INIT};

static void load_once(void)
{
    const char *env = getenv("OC_LIBCUDA");
    void *h;
    CUresult r;

    g.name = env != NULL && env[0] != '\0' ? env : "libcuda.so.1";
    h = dlopen(g.name, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(g.why, sizeof(g.why), "%s", e != NULL ? e : g.name);
        oc_debug(OC_COMP_GPU, "no CUDA driver: %s", g.why);
        return;
    }
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
    g.ok = 1;
    oc_debug(OC_COMP_GPU, "%s: driver %d, %d device(s)", g.name, g.version,
             g.devices);
}

int oc__gpu_available(void)
{
    pthread_once(&g.once, load_once);
    return g.ok;
}

const char *oc__gpu_why(void)
{
    oc__gpu_available();
    return g.ok ? "" : g.why;
}

const char *oc__gpu_lib_name(void)
{
    oc__gpu_available();
    return g.name;
}

int oc__gpu_driver_version(void)
{
    return oc__gpu_available() ? g.version : 0;
}

int oc__gpu_device_count(void)
{
    return oc__gpu_available() ? g.devices : 0;
}

const oc__cuda_t *oc__cuda(void)
{
    return oc__gpu_available() ? &g.fn : NULL;
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
