/*
 * stage.c — the pinned staging pool and its copy engine: slots of pinned
 * host memory, each with a stream and an event of its own, so that the
 * copies of different chunks run on different streams and overlap; a
 * chunk's copies are queued (never waited for) and a fence (an event
 * recorded after them) says when they are done.  No synchronous copy:
 * the caller polls oc__gpu_slot_test() from its progress loop.
 *
 * The streams are blocking ones (CU_STREAM_DEFAULT), not
 * CU_STREAM_NON_BLOCKING: a copy of the caller's buffer then runs after
 * whatever the program queued before the call on the legacy default
 * stream (a kernel that wrote it, a cuMemcpyHtoD from pageable memory,
 * which returns before its data reach the device).  With non-blocking
 * streams the staging read such buffers before they were written (the
 * H200 gave wrong sums at 16-64 KiB; the double models this).  Work on
 * streams of the program's own, or on a per-thread default stream, is
 * not ordered: the program synchronizes them before the call, as for a
 * CUDA-aware MPI.
 *
 * Every call makes the pool's context current for its duration (push,
 * pop): the caller's thread may have another one current, or none.
 * Threading: a pool belongs to one thread at a time.
 */
#include "gpu_int.h"

#include "util/log.h"

#include <stdlib.h>

typedef struct {
    uint8_t *host;
    CUstream stream;
    CUevent  event;
    int      fenced;  /* an event recorded and not yet seen complete */
} slot_t;

struct oc__gpu_pool {
    CUcontext cx;
    int       device;
    size_t    slot_bytes;
    unsigned  nslots;
    slot_t   *slot;
};

static int push(const oc__gpu_pool_t *p)
{
    CUresult r = oc__cuda()->cuCtxPushCurrent(p->cx);
    if (r != CUDA_SUCCESS)
        oc_error(OC_COMP_GPU, "device %d: cannot make the buffers' context "
                 "current: %s", p->device, oc__cuda_err(r));
    return r == CUDA_SUCCESS;
}

static void pop(void)
{
    CUcontext old;
    (void)oc__cuda()->cuCtxPopCurrent(&old);
}

void *oc__gpu_pool_ctx(const oc__gpu_pool_t *p) { return p->cx; }
int oc__gpu_pool_device(const oc__gpu_pool_t *p) { return p->device; }
size_t oc__gpu_pool_slot_bytes(const oc__gpu_pool_t *p) { return p->slot_bytes; }
unsigned oc__gpu_pool_nslots(const oc__gpu_pool_t *p) { return p->nslots; }

uint8_t *oc__gpu_slot_host(oc__gpu_pool_t *p, unsigned slot)
{
    return p->slot[slot].host;
}

oc_status_t oc__gpu_pool_new(void *cuctx, int device, size_t slot_bytes,
                             unsigned nslots, oc__gpu_pool_t **pool_p)
{
    const oc__cuda_t *cu = oc__cuda();
    oc__gpu_pool_t *p;
    CUresult r = CUDA_SUCCESS;
    const char *what = "";

    if (cu == NULL)
        return OC_ERR_UNSUPPORTED;
    if (cuctx == NULL || slot_bytes == 0 || nslots < 2 || pool_p == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return OC_ERR_NO_MEMORY;
    if ((p->slot = calloc(nslots, sizeof(*p->slot))) == NULL) {
        free(p);
        return OC_ERR_NO_MEMORY;
    }
    p->cx = cuctx, p->device = device;
    p->slot_bytes = slot_bytes, p->nslots = nslots;
    if (!push(p)) {
        free(p->slot);
        free(p);
        return OC_ERR_GPU;
    }
    for (unsigned i = 0; i < nslots && r == CUDA_SUCCESS; i++) {
        slot_t *s = &p->slot[i];
        what = "cuMemHostAlloc";
        r = cu->cuMemHostAlloc((void **)&s->host, slot_bytes,
                               CU_MEMHOSTALLOC_PORTABLE);
        if (r == CUDA_SUCCESS) {
            what = "cuStreamCreate";
            r = cu->cuStreamCreate(&s->stream, CU_STREAM_DEFAULT);
        }
        if (r == CUDA_SUCCESS) {
            what = "cuEventCreate";
            r = cu->cuEventCreate(&s->event, CU_EVENT_DISABLE_TIMING);
        }
    }
    pop();
    if (r != CUDA_SUCCESS) {
        oc_error(OC_COMP_GPU, "device %d: %u staging slots of %zu bytes: %s: "
                 "%s (pinned memory counts against RLIMIT_MEMLOCK)", device,
                 nslots, slot_bytes, what, oc__cuda_err(r));
        oc__gpu_pool_free(p);
        return OC_ERR_GPU;
    }
    *pool_p = p;
    return OC_OK;
}

void oc__gpu_pool_drain(oc__gpu_pool_t *p)
{
    if (p == NULL || !push(p))
        return;
    for (unsigned i = 0; i < p->nslots; i++)
        if (p->slot[i].stream != NULL)
            (void)oc__cuda()->cuStreamSynchronize(p->slot[i].stream);
    pop();
}

void oc__gpu_pool_free(oc__gpu_pool_t *p)
{
    const oc__cuda_t *cu = oc__cuda();

    if (p == NULL)
        return;
    oc__gpu_pool_drain(p);
    if (push(p)) {
        for (unsigned i = 0; i < p->nslots; i++) {
            slot_t *s = &p->slot[i];
            if (s->event != NULL)
                (void)cu->cuEventDestroy(s->event);
            if (s->stream != NULL)
                (void)cu->cuStreamDestroy(s->stream);
            if (s->host != NULL)
                (void)cu->cuMemFreeHost(s->host);
        }
        pop();
    }
    free(p->slot);
    free(p);
}

static oc_status_t copy_on(oc__gpu_pool_t *p, slot_t *s, size_t cap,
                           size_t off, void *dev, size_t len, int to_host)
{
    const oc__cuda_t *cu = oc__cuda();
    CUresult r;

    if (off > cap || len > cap - off)
        return OC_ERR_INVALID_PARAM;
    if (len == 0)
        return OC_OK;
    if (!push(p))
        return OC_ERR_GPU;
    r = to_host ? cu->cuMemcpyDtoHAsync(s->host + off,
                                        (CUdeviceptr)(uintptr_t)dev, len,
                                        s->stream)
                : cu->cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dev,
                                        s->host + off, len, s->stream);
    pop();
    if (r != CUDA_SUCCESS) {
        oc_error(OC_COMP_GPU, "device %d: %s of %zu bytes at %p: %s",
                 p->device, to_host ? "copy to the host" : "copy to the device",
                 len, dev, oc__cuda_err(r));
        return OC_ERR_GPU;
    }
    return OC_OK;
}

oc_status_t oc__gpu_slot_d2h(oc__gpu_pool_t *p, unsigned slot, size_t off,
                             const void *dev, size_t len)
{
    if (slot >= p->nslots)
        return OC_ERR_INVALID_PARAM;
    return copy_on(p, &p->slot[slot], p->slot_bytes, off,
                   (void *)(uintptr_t)dev, len, 1);
}

oc_status_t oc__gpu_slot_h2d(oc__gpu_pool_t *p, unsigned slot, void *dev,
                             size_t off, size_t len)
{
    if (slot >= p->nslots)
        return OC_ERR_INVALID_PARAM;
    return copy_on(p, &p->slot[slot], p->slot_bytes, off, dev, len, 0);
}

static oc_status_t fence_on(oc__gpu_pool_t *p, slot_t *s)
{
    CUresult r;

    if (!push(p))
        return OC_ERR_GPU;
    r = oc__cuda()->cuEventRecord(s->event, s->stream);
    pop();
    if (r != CUDA_SUCCESS) {
        oc_error(OC_COMP_GPU, "device %d: cuEventRecord: %s", p->device,
                 oc__cuda_err(r));
        return OC_ERR_GPU;
    }
    s->fenced = 1;
    return OC_OK;
}

oc_status_t oc__gpu_slot_fence(oc__gpu_pool_t *p, unsigned slot)
{
    if (slot >= p->nslots)
        return OC_ERR_INVALID_PARAM;
    return fence_on(p, &p->slot[slot]);
}

static oc_status_t test_on(oc__gpu_pool_t *p, slot_t *s)
{
    CUresult r;

    if (!s->fenced)
        return OC_OK;
    if (!push(p))
        return OC_ERR_GPU;
    r = oc__cuda()->cuEventQuery(s->event);
    pop();
    if (r == CUDA_ERROR_NOT_READY)
        return OC_INPROGRESS;
    s->fenced = 0;
    if (r != CUDA_SUCCESS) {
        oc_error(OC_COMP_GPU, "device %d: a staged copy failed: %s",
                 p->device, oc__cuda_err(r));
        return OC_ERR_GPU;
    }
    return OC_OK;
}

oc_status_t oc__gpu_slot_test(oc__gpu_pool_t *p, unsigned slot)
{
    if (slot >= p->nslots)
        return OC_ERR_INVALID_PARAM;
    return test_on(p, &p->slot[slot]);
}

/* A lane: one pinned buffer with a stream and an event of its own, in a
 * pool's context, for a copy that is not cut into the pool's slots (the
 * agent placement stages a whole vector). */
struct oc__gpu_lane {
    oc__gpu_pool_t *pool;
    size_t          bytes;
    slot_t          s;
};

oc_status_t oc__gpu_lane_new(oc__gpu_pool_t *p, size_t bytes,
                             oc__gpu_lane_t **lane_p)
{
    const oc__cuda_t *cu = oc__cuda();
    oc__gpu_lane_t *l;
    CUresult r;
    const char *what = "cuMemHostAlloc";

    if (p == NULL || bytes == 0 || lane_p == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((l = calloc(1, sizeof(*l))) == NULL)
        return OC_ERR_NO_MEMORY;
    l->pool = p, l->bytes = bytes;
    if (!push(p)) {
        free(l);
        return OC_ERR_GPU;
    }
    r = cu->cuMemHostAlloc((void **)&l->s.host, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_SUCCESS) {
        what = "cuStreamCreate";
        r = cu->cuStreamCreate(&l->s.stream, CU_STREAM_DEFAULT);
    }
    if (r == CUDA_SUCCESS) {
        what = "cuEventCreate";
        r = cu->cuEventCreate(&l->s.event, CU_EVENT_DISABLE_TIMING);
    }
    pop();
    if (r != CUDA_SUCCESS) {
        oc_error(OC_COMP_GPU, "device %d: a staging buffer of %zu bytes: %s: "
                 "%s (pinned memory counts against RLIMIT_MEMLOCK)", p->device,
                 bytes, what, oc__cuda_err(r));
        oc__gpu_lane_free(l);
        return OC_ERR_GPU;
    }
    *lane_p = l;
    return OC_OK;
}

void oc__gpu_lane_free(oc__gpu_lane_t *l)
{
    const oc__cuda_t *cu = oc__cuda();

    if (l == NULL)
        return;
    if (push(l->pool)) {
        if (l->s.stream != NULL)
            (void)cu->cuStreamSynchronize(l->s.stream);
        if (l->s.event != NULL)
            (void)cu->cuEventDestroy(l->s.event);
        if (l->s.stream != NULL)
            (void)cu->cuStreamDestroy(l->s.stream);
        if (l->s.host != NULL)
            (void)cu->cuMemFreeHost(l->s.host);
        pop();
    }
    free(l);
}

uint8_t *oc__gpu_lane_host(oc__gpu_lane_t *l) { return l->s.host; }
size_t oc__gpu_lane_bytes(const oc__gpu_lane_t *l) { return l->bytes; }

oc_status_t oc__gpu_lane_d2h(oc__gpu_lane_t *l, size_t off, const void *dev,
                             size_t len)
{
    return copy_on(l->pool, &l->s, l->bytes, off, (void *)(uintptr_t)dev, len,
                   1);
}

oc_status_t oc__gpu_lane_h2d(oc__gpu_lane_t *l, void *dev, size_t off,
                             size_t len)
{
    return copy_on(l->pool, &l->s, l->bytes, off, dev, len, 0);
}

oc_status_t oc__gpu_lane_fence(oc__gpu_lane_t *l)
{
    return fence_on(l->pool, &l->s);
}

oc_status_t oc__gpu_lane_test(oc__gpu_lane_t *l)
{
    return test_on(l->pool, &l->s);
}
