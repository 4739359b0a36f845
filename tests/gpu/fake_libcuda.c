/*
 * fake_libcuda.c — a test double of the CUDA driver (libcuda.so.1) for
 * machines without a GPU, loaded by liboffcore through OC_LIBCUDA.
 *
 * "Device memory" is address space reserved with no access (PROT_NONE),
 * backed by a private host copy: code that touches a device pointer
 * directly crashes instead of passing.  Asynchronous copies are queued on
 * their stream and run only when the stream or an event recorded after
 * them is queried or synchronized (FAKE_CUDA_LAG=N: only after N
 * queries), so code that reads a staging buffer before its event says
 * done sees stale bytes.  Async copies must use pinned memory from
 * cuMemHostAlloc, and the stream's context must be current.
 *
 * The legacy default stream, as the driver documents it: a synchronous
 * cuMemcpyHtoD from pageable memory returns once the source is staged,
 * its write to device memory still pending; that write lands before the
 * next operation on the legacy stream (a synchronous copy) and before any
 * copy enqueued afterwards on a blocking stream (flags 0) runs, but a
 * stream made with CU_STREAM_NON_BLOCKING does not wait for it: a copy
 * queued there reads the device memory as it was (FAKE_CUDA_PAGEABLE=
 * sync: the write lands at once, as in doubles of old).
 *
 * Failures on demand (FAKE_CUDA_FAIL, read at each call):
 *   init      cuInit fails (CUDA_ERROR_NO_DEVICE)
 *   ptr       pointer queries on device memory fail
 *             (CUDA_ERROR_INVALID_CONTEXT): memory the driver lost
 *   copy:N    the N-th async copy (1, 2, ...) of the process fails when
 *             it runs (CUDA_ERROR_ILLEGAL_ADDRESS, from the event query)
 *   hostalloc cuMemHostAlloc fails (CUDA_ERROR_OUT_OF_MEMORY)
 * FAKE_CUDA_DEVICES: how many devices (default 1).
 * Extra entry points for tests and bench/gpu_coll.c: cuCtxCreate_v2,
 * cuCtxDestroy_v2, cuDevicePrimaryCtxRetain, cuCtxSetCurrent,
 * cuMemAlloc_v2, cuMemFree_v2, cuMemcpyHtoD_v2, cuMemcpyDtoH_v2, and
 * fake_cuda_copies() (async copies run so far), fake_cuda_enqueued()
 * (async copies queued so far: copy:N counts these).
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define API __attribute__((visibility("default")))

enum { OK = 0, E_INVALID_VALUE = 1, E_OOM = 2, E_NO_DEVICE = 100,
       E_INVALID_DEVICE = 101, E_INVALID_CONTEXT = 201, E_INVALID_HANDLE = 400,
       E_NOT_READY = 600, E_ILLEGAL_ADDRESS = 700 };

struct CUctx_st { int dev; };
typedef struct CUctx_st *CUcontext;

typedef struct range {
    uintptr_t base;
    size_t len;
    uint8_t *shadow; /* device memory's bytes; NULL for pinned host */
    CUcontext cx;
    struct range *next;
} range_t;

typedef struct op {
    int kind; /* 0 copy d2h, 1 copy h2d, 2 event */
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
    int fail;
    CUresult status; /* an event's: a failed copy before it */
    unsigned gen;    /* an event's: which of its records */
    struct CUevent_st *ev;
    struct op *next;
} op_t;

struct CUstream_st { CUcontext cx; op_t *head, *tail; int lag; int nonblocking; };
struct CUevent_st { CUresult status; int pending; unsigned gen; struct CUstream_st *s; };
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static range_t *ranges;
static struct CUctx_st primary[8];
static __thread CUcontext stack[16];
static __thread int depth;
static unsigned long ncopies, nrun;

static void legacy_flush(void);

static const char *fail_mode(void)
{
    const char *f = getenv("FAKE_CUDA_FAIL");
    return f != NULL ? f : "";
}

static int ndev(void)
{
    const char *d = getenv("FAKE_CUDA_DEVICES");
    int n = d != NULL ? atoi(d) : 1;
    return n < 0 ? 0 : n > 8 ? 8 : n;
}

static range_t *find(uintptr_t p)
{
    for (range_t *r = ranges; r != NULL; r = r->next)
        if (p >= r->base && p < r->base + r->len)
            return r;
    return NULL;
}

API CUresult cuInit(unsigned flags)
{
    (void)flags;
    if (strcmp(fail_mode(), "init") == 0 || ndev() == 0)
        return E_NO_DEVICE;
    for (int i = 0; i < 8; i++)
        primary[i].dev = i;
    return OK;
}

API CUresult cuDriverGetVersion(int *v) { *v = 12080; return OK; }
API CUresult cuDeviceGetCount(int *n) { *n = ndev(); return OK; }
API CUresult cuDeviceGet(int *d, int ord)
{
    if (ord < 0 || ord >= ndev())
        return E_INVALID_DEVICE;
    *d = ord;
    return OK;
}

API CUresult cuGetErrorString(CUresult e, const char **s)
{
    switch (e) {
    case OK: *s = "no error"; break;
    case E_INVALID_VALUE: *s = "invalid argument"; break;
    case E_OOM: *s = "out of memory"; break;
    case E_NO_DEVICE: *s = "no CUDA-capable device is detected"; break;
    case E_INVALID_CONTEXT: *s = "invalid device context"; break;
    case E_NOT_READY: *s = "device not ready"; break;
    case E_ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered"; break;
    default: return E_INVALID_VALUE;
    }
    return OK;
}

API CUresult cuCtxCreate_v2(CUcontext *cx, unsigned flags, int dev)
{
    (void)flags;
    if (dev < 0 || dev >= ndev())
        return E_INVALID_DEVICE;
    *cx = &primary[dev];
    if (depth == 0)
        stack[depth++] = *cx;
    else
        stack[depth - 1] = *cx;
    return OK;
}

API CUresult cuCtxDestroy_v2(CUcontext cx) { (void)cx; return OK; }

API CUresult cuDevicePrimaryCtxRetain(CUcontext *cx, int dev)
{
    if (dev < 0 || dev >= ndev())
        return E_INVALID_DEVICE;
    *cx = &primary[dev];
    return OK;
}

API CUresult cuCtxSetCurrent(CUcontext cx)
{
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = cx;
    return OK;
}

API CUresult cuCtxPushCurrent_v2(CUcontext cx)
{
    if (cx == NULL || depth >= 16)
        return E_INVALID_CONTEXT;
    stack[depth++] = cx;
    return OK;
}

API CUresult cuCtxPopCurrent_v2(CUcontext *cx)
{
    if (depth == 0)
        return E_INVALID_CONTEXT;
    depth--;
    if (cx != NULL)
        *cx = stack[depth];
    return OK;
}

static CUcontext current(void) { return depth > 0 ? stack[depth - 1] : NULL; }

API CUresult cuCtxGetDevice(int *d)
{
    if (current() == NULL)
        return E_INVALID_CONTEXT;
    *d = current()->dev;
    return OK;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    range_t *r;
    void *a;

    if (current() == NULL)
        return E_INVALID_CONTEXT;
    a = mmap(NULL, n ? n : 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || (r = calloc(1, sizeof(*r))) == NULL)
        return E_OOM;
    if ((r->shadow = calloc(1, n ? n : 1)) == NULL) {
        free(r);
        return E_OOM;
    }
    r->base = (uintptr_t)a, r->len = n ? n : 1, r->cx = current();
    pthread_mutex_lock(&mu);
    r->next = ranges, ranges = r;
    pthread_mutex_unlock(&mu);
    *p = r->base;
    return OK;
}

static CUresult release(uintptr_t p, int host)
{
    pthread_mutex_lock(&mu);
    for (range_t **q = &ranges; *q != NULL; q = &(*q)->next)
        if ((*q)->base == p && ((*q)->shadow == NULL) == host) {
            range_t *r = *q;
            *q = r->next;
            pthread_mutex_unlock(&mu);
            if (host)
                free((void *)r->base);
            else {
                munmap((void *)r->base, r->len);
                free(r->shadow);
            }
            free(r);
            return OK;
        }
    pthread_mutex_unlock(&mu);
    return E_INVALID_VALUE;
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
    legacy_flush(); /* cuMemFree waits for the device's work */
    return release(p, 0);
}

API CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    range_t *r;
    (void)flags;
    if (current() == NULL)
        return E_INVALID_CONTEXT;
    if (strcmp(fail_mode(), "hostalloc") == 0)
        return E_OOM;
    if ((r = calloc(1, sizeof(*r))) == NULL ||
        (*p = malloc(n ? n : 1)) == NULL) {
        free(r);
        return E_OOM;
    }
    r->base = (uintptr_t)*p, r->len = n ? n : 1, r->cx = current();
    pthread_mutex_lock(&mu);
    r->next = ranges, ranges = r;
    pthread_mutex_unlock(&mu);
    return OK;
}

API CUresult cuMemFreeHost(void *p) { return release((uintptr_t)p, 1); }

API CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
    range_t *r;
    pthread_mutex_lock(&mu);
    r = find((uintptr_t)p);
    pthread_mutex_unlock(&mu);
    if (r == NULL)
        return E_INVALID_VALUE; /* not CUDA memory, as the driver says */
    if (r->shadow != NULL && strcmp(fail_mode(), "ptr") == 0)
        return E_INVALID_CONTEXT;
    switch (attr) {
    case 1: *(CUcontext *)data = r->cx; return OK;
    case 2: *(unsigned *)data = r->shadow != NULL ? 2 : 1; return OK;
    case 9: *(int *)data = r->cx->dev; return OK;
    default: return E_INVALID_VALUE;
    }
}

/* The legacy stream's pending writes (pageable cuMemcpyHtoD), in order;
 * each op's src is its own staging copy (freed when it lands). */
static op_t *legacy_head, *legacy_tail;

static void legacy_flush(void)
{
    pthread_mutex_lock(&mu);
    while (legacy_head != NULL) {
        op_t *o = legacy_head;
        legacy_head = o->next;
        memcpy(o->dst, o->src, o->n);
        free((void *)o->src);
        free(o);
    }
    legacy_tail = NULL;
    pthread_mutex_unlock(&mu);
}

/* Synchronous copies, for tests to fill and read device memory. */
API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n)
{
    const char *pg = getenv("FAKE_CUDA_PAGEABLE");
    range_t *r, *hr;
    op_t *o;
    uint8_t *stage;

    legacy_flush(); /* the legacy stream's earlier work first */
    pthread_mutex_lock(&mu);
    r = find(d);
    hr = find((uintptr_t)h);
    pthread_mutex_unlock(&mu);
    if (r == NULL || r->shadow == NULL || d + n > r->base + r->len)
        return E_INVALID_VALUE;
    if ((hr != NULL && hr->shadow == NULL) || /* pinned: synchronous */
        (pg != NULL && strcmp(pg, "sync") == 0) || n == 0) {
        memcpy(r->shadow + (d - r->base), h, n);
        return OK;
    }
    if ((o = calloc(1, sizeof(*o))) == NULL || (stage = malloc(n)) == NULL) {
        free(o);
        return E_OOM;
    }
    memcpy(stage, h, n); /* staged: the caller may reuse its buffer */
    o->kind = 1, o->n = n, o->src = stage;
    o->dst = r->shadow + (d - r->base);
    pthread_mutex_lock(&mu);
    if (legacy_tail != NULL)
        legacy_tail->next = o;
    else
        legacy_head = o;
    legacy_tail = o;
    pthread_mutex_unlock(&mu);
    return OK;
}

API CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n)
{
    range_t *r;

    legacy_flush();
    r = find(d);
    if (r == NULL || r->shadow == NULL || d + n > r->base + r->len)
        return E_INVALID_VALUE;
    memcpy(h, r->shadow + (d - r->base), n);
    return OK;
}

API CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    if (current() == NULL)
        return E_INVALID_CONTEXT;
    if ((*s = calloc(1, sizeof(**s))) == NULL)
        return E_OOM;
    (*s)->cx = current();
    (*s)->nonblocking = (flags & 1) != 0; /* CU_STREAM_NON_BLOCKING */
    return OK;
}

/* Run the stream's queue up to and including @p upto (NULL: all). */
static void run(CUstream s, CUevent upto)
{
    const char *lag = getenv("FAKE_CUDA_LAG");
    int need = lag != NULL ? atoi(lag) : 0;

    if (s->lag++ < need)
        return;
    s->lag = 0;
    while (s->head != NULL) {
        op_t *o = s->head;
        s->head = o->next;
        if (s->head == NULL)
            s->tail = NULL;
        if (o->kind == 2) {
            if (o->gen == o->ev->gen) { /* its latest record */
                o->ev->status = o->status;
                o->ev->pending = 0;
            }
        } else if (o->fail) {
            /* the error surfaces at the next event of the stream */
            for (op_t *e = s->head; e != NULL; e = e->next)
                if (e->kind == 2) {
                    e->status = E_ILLEGAL_ADDRESS;
                    break;
                }
        } else {
            memcpy(o->dst, o->src, o->n);
            nrun++;
        }
        int stop = o->kind == 2 && o->ev == upto && o->gen == upto->gen;
        free(o);
        if (stop)
            return;
    }
}

API CUresult cuStreamDestroy_v2(CUstream s)
{
    run(s, NULL);
    free(s);
    return OK;
}

API CUresult cuStreamQuery(CUstream s)
{
    run(s, NULL);
    return s->head == NULL ? OK : E_NOT_READY;
}

API CUresult cuStreamSynchronize(CUstream s)
{
    s->lag = 1 << 30;
    run(s, NULL);
    return OK;
}

static CUresult enqueue(CUstream s, op_t *o)
{
    if (current() != s->cx) {
        free(o);
        return E_INVALID_CONTEXT;
    }
    if (!s->nonblocking)
        legacy_flush(); /* a blocking stream waits for the legacy stream */
    if (s->tail != NULL)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    return OK;
}

/* An async copy: @p host must be pinned, @p dev device memory. */
static CUresult copy_async(uint8_t *host, CUdeviceptr dev, size_t n,
                           CUstream s, int to_host)
{
    range_t *h, *d;
    op_t *o;
    unsigned long nth = 0;
    const char *f = fail_mode();

    pthread_mutex_lock(&mu);
    h = find((uintptr_t)host);
    d = find(dev);
    pthread_mutex_unlock(&mu);
    if (h == NULL || h->shadow != NULL || (uintptr_t)host + n > h->base + h->len ||
        d == NULL || d->shadow == NULL || dev + n > d->base + d->len)
        return E_INVALID_VALUE;
    if ((o = calloc(1, sizeof(*o))) == NULL)
        return E_OOM;
    o->kind = to_host ? 0 : 1;
    o->n = n;
    o->dst = to_host ? host : d->shadow + (dev - d->base);
    o->src = to_host ? d->shadow + (dev - d->base) : host;
    ncopies++;
    if (strncmp(f, "copy:", 5) == 0)
        nth = strtoul(f + 5, NULL, 10);
    o->fail = nth != 0 && ncopies == nth;
    return enqueue(s, o);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n,
                                  CUstream s)
{
    return copy_async(dst, src, n, s, 1);
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
                                  CUstream s)
{
    return copy_async((uint8_t *)(uintptr_t)src, dst, n, s, 0);
}

API CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    (void)flags;
    if ((*e = calloc(1, sizeof(**e))) == NULL)
        return E_OOM;
    return OK;
}

API CUresult cuEventDestroy_v2(CUevent e) { free(e); return OK; }

API CUresult cuEventRecord(CUevent e, CUstream s)
{
    op_t *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return E_OOM;
    o->kind = 2, o->ev = e, o->gen = ++e->gen;
    e->pending = 1, e->status = OK, e->s = s;
    return enqueue(s, o);
}

API CUresult cuEventQuery(CUevent e)
{
    if (e->pending)
        run(e->s, e);
    return e->pending ? E_NOT_READY : e->status;
}

API unsigned long fake_cuda_copies(void) { return nrun; }
API unsigned long fake_cuda_enqueued(void) { return ncopies; }
