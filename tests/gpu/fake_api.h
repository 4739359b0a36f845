/*
 * fake_api.h — the libcuda double's extra entry points (fake_libcuda.c),
 * looked up in the library OC_LIBCUDA names, for tests to make contexts
 * and device memory and to fill and read it.
 */
#ifndef OC_TEST_FAKE_API_H
#define OC_TEST_FAKE_API_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int (*ctx_create)(void **cx, unsigned flags, int dev);
    int (*ctx_push)(void *cx);
    int (*ctx_pop)(void **cx);
    int (*mem_alloc)(unsigned long long *p, size_t n);
    int (*mem_free)(unsigned long long p);
    int (*htod)(unsigned long long d, const void *h, size_t n);
    int (*dtoh)(void *h, unsigned long long d, size_t n);
    unsigned long (*copies)(void);
    unsigned long (*enqueued)(void);
} fake_api_t;

/* 0 when the double is loaded (same handle as liboffcore's), -1 else */
static inline int fake_api_load(fake_api_t *f)
{
    const char *lib = getenv("OC_LIBCUDA");
    void *h = lib != NULL ? dlopen(lib, RTLD_NOW) : NULL;

    if (h == NULL) {
        fprintf(stderr, "cannot load the libcuda double (OC_LIBCUDA=%s)\n",
                lib != NULL ? lib : "");
        return -1;
    }
    *(void **)&f->ctx_create = dlsym(h, "cuCtxCreate_v2");
    *(void **)&f->ctx_push = dlsym(h, "cuCtxPushCurrent_v2");
    *(void **)&f->ctx_pop = dlsym(h, "cuCtxPopCurrent_v2");
    *(void **)&f->mem_alloc = dlsym(h, "cuMemAlloc_v2");
    *(void **)&f->mem_free = dlsym(h, "cuMemFree_v2");
    *(void **)&f->htod = dlsym(h, "cuMemcpyHtoD_v2");
    *(void **)&f->dtoh = dlsym(h, "cuMemcpyDtoH_v2");
    *(void **)&f->copies = dlsym(h, "fake_cuda_copies");
    *(void **)&f->enqueued = dlsym(h, "fake_cuda_enqueued");
    return f->copies != NULL && f->dtoh != NULL ? 0 : -1;
}

/* n bytes of device memory on the current context, filled from @p h */
static inline void *fake_dev_alloc(const fake_api_t *f, const void *h, size_t n)
{
    unsigned long long d = 0;
    if (f->mem_alloc(&d, n) != 0 || (h != NULL && f->htod(d, h, n) != 0)) {
        fprintf(stderr, "FAIL: cuMemAlloc/cuMemcpyHtoD of %zu bytes\n", n);
        exit(1);
    }
    return (void *)(uintptr_t)d;
}

#endif
