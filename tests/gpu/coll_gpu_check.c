/*
 * coll_gpu_check.c — collectives on device buffers (src/coll/staged.c)
 * against the libcuda double, under mpirun: every result compared bit for
 * bit with the same collective on host buffers; then the failures
 * (a copy failing on one rank, a pointer the driver cannot describe)
 * must fail the collective with OC_ERR_GPU on
 * every rank, and the next one must work again.
 * Usage: coll_gpu_check   (OC_LIBCUDA names the double; OC_GPU_CHUNK small
 * enough that the vectors take several chunks)
 */
#include <offcore/coll.h>
#include <offcore/mpi.h>

#include "fake_api.h"

#include <stdint.h>
#include <string.h>

static fake_api_t fk;
static int rank, size, fails;

static oc_status_t noop(void *a, uint32_t s, const void *p, size_t l)
{
    (void)a, (void)s, (void)p, (void)l;
    return OC_OK;
}

static void fill(void *buf, size_t bytes, unsigned seed, oc_dtype_t t)
{
    if (t == OC_FLOAT32) {
        float *f = buf;
        for (size_t i = 0; i < bytes / 4; i++)
            f[i] = (float)((i * 2654435761u + seed * 40503u) % 100003) / 7.0f;
    } else {
        uint8_t *b = buf;
        for (size_t i = 0; i < bytes; i++)
            b[i] = (uint8_t)(i * 31 + seed * 17);
    }
}

static void expect(int ok, const char *what, size_t count)
{
    if (!ok) {
        fprintf(stderr, "FAIL rank %d: %s, count %zu\n", rank, what, count);
        fails++;
    }
}

/* kind 0 allreduce, 1 alltoall, 2 bcast; @p inplace; non-blocking with
 * a host collective in flight beside it, progressed by oc_poll alone */
static void check(oc_context_t *ctx, int kind, oc_dtype_t t, size_t count,
                  int inplace)
{
    size_t es = oc_dtype_size(t);
    size_t bytes = count * es * (kind == 1 ? (size_t)size : 1);
    uint8_t *hs = malloc(bytes), *hr = malloc(bytes), *dr = malloc(bytes);
    uint8_t *side = malloc(64), *side_r = malloc(64);
    void *ds, *drv;
    oc_request_t *rq = NULL, *rq2 = NULL;
    oc_status_t st, st2;

    fill(hs, bytes, (unsigned)rank + 1, t);
    ds = fake_dev_alloc(&fk, hs, bytes);
    drv = inplace || kind == 2 ? ds : fake_dev_alloc(&fk, NULL, bytes);
    memset(side, rank, 64);
    if (kind == 0)
        st = oc_iallreduce(ctx, inplace ? OC_IN_PLACE : ds, drv, count, t,
                           OC_SUM, &rq);
    else if (kind == 1)
        st = oc_ialltoall(ctx, inplace ? OC_IN_PLACE : ds, drv, count, t, &rq);
    else
        st = oc_ibcast(ctx, ds, count, t, (uint32_t)(size - 1), &rq);
    expect(st == OC_OK, "start", count);
    st2 = oc_iallreduce(ctx, side, side_r, 16, OC_INT32,
                        OC_MAX, &rq2);
    (void)st2;
    /* a host collective started after it, on host memory: both finish */
    for (int i = 0; i < 100000 && rq != NULL; i++) {
        oc_poll(ctx);
        if (i % 64 == 63)
            (void)oc_test(&rq);
    }
    st = rq != NULL ? oc_wait(&rq) : OC_OK;
    expect(st == OC_OK, "device collective", count);
    expect(oc_wait(&rq2) == OC_OK, "host collective beside it", count);
    if (kind == 0)
        st = oc_allreduce(ctx, OC_IN_PLACE, hs, count, t, OC_SUM);
    else if (kind == 1)
        st = oc_alltoall(ctx, OC_IN_PLACE, hs, count, t);
    else
        st = oc_bcast(ctx, hs, count, t, (uint32_t)(size - 1));
    expect(st == OC_OK, "host collective", count);
    expect(fk.dtoh(dr, (uintptr_t)drv, bytes) == 0, "cuMemcpyDtoH", count);
    expect(memcmp(dr, hs, bytes) == 0, kind == 0   ? "allreduce differs from the host path"
                                       : kind == 1 ? "alltoall differs from the host path"
                                                   : "bcast differs from the host path",
           count);
    fk.mem_free((uintptr_t)ds);
    if (drv != ds)
        fk.mem_free((uintptr_t)drv);
    free(hs), free(hr), free(dr), free(side), free(side_r);
}

/* All-to-allv with uneven counts and gaps between the blocks (which must
 * stay as they were), against the host path bit for bit. */
static size_t cnt(int from, int to, size_t scale)
{
    return (size_t)((from * 7 + to * 3) % 5) * scale + (size_t)(from == to);
}

static void check_v(oc_context_t *ctx, size_t scale)
{
    size_t sc[64], sd[64], rc[64], rd[64], slim = 0, rlim = 0;
    for (int p = 0; p < size; p++) {
        sc[p] = cnt(rank, p, scale), rc[p] = cnt(p, rank, scale);
        sd[p] = slim, rd[p] = rlim;
        slim += sc[p] + 2, rlim += rc[p] + 3; /* gaps */
    }
    float *hs = malloc(slim * 4 + 4), *hr = malloc(rlim * 4 + 4);
    float *got = malloc(rlim * 4 + 4);
    fill(hs, slim * 4, (unsigned)rank + 5, OC_FLOAT32);
    fill(hr, rlim * 4, 99, OC_FLOAT32);
    void *ds = fake_dev_alloc(&fk, hs, slim * 4 + 4);
    void *dr = fake_dev_alloc(&fk, hr, rlim * 4 + 4);
    oc_request_t *rq;
    oc_status_t st = oc_ialltoallv(ctx, ds, sc, sd, dr, rc, rd, OC_FLOAT32, &rq);
    expect(st == OC_OK, "alltoallv start", scale);
    if (st == OC_OK)
        expect(oc_wait(&rq) == OC_OK, "alltoallv on device buffers", scale);
    expect(oc_alltoallv(ctx, hs, sc, sd, hr, rc, rd, OC_FLOAT32) == OC_OK,
           "alltoallv on host buffers", scale);
    fk.dtoh(got, (uintptr_t)dr, rlim * 4);
    expect(memcmp(got, hr, rlim * 4) == 0,
           "alltoallv differs from the host path (or wrote a gap)", scale);
    fk.mem_free((uintptr_t)ds);
    fk.mem_free((uintptr_t)dr);
    free(hs), free(hr), free(got);
}

/* A failure planted on rank @p who by FAKE_CUDA_FAIL=@p spec ("copy": the
 * @p nth copy from now): every rank must get OC_ERR_GPU (@p all), or only
 * @p who, then an allreduce must work again. */
static void check_fail(oc_context_t *ctx, const char *spec, unsigned nth,
                       int who, int all)
{
    const size_t count = 50000;
    float *h = malloc(count * 4);
    void *d;
    char buf[64];
    oc_status_t st;

    fill(h, count * 4, 1, OC_FLOAT32);
    d = fake_dev_alloc(&fk, h, count * 4);
    if (rank == who) {
        if (strcmp(spec, "copy") == 0)
            snprintf(buf, sizeof(buf), "copy:%lu", fk.enqueued() + nth);
        else
            snprintf(buf, sizeof(buf), "%s", spec);
        setenv("FAKE_CUDA_FAIL", buf, 1);
    }
    st = oc_allreduce(ctx, OC_IN_PLACE, d, count, OC_FLOAT32, OC_SUM);
    unsetenv("FAKE_CUDA_FAIL");
    if (st != (all || rank == who ? OC_ERR_GPU : OC_OK)) {
        fprintf(stderr, "FAIL rank %d: %s %u planted on rank %d: %s\n", rank,
                spec, nth, who, oc_status_string(st));
        fails++;
    }
    fk.htod((uintptr_t)d, h, count * 4);
    st = oc_allreduce(ctx, OC_IN_PLACE, d, count, OC_FLOAT32, OC_SUM);
    expect(st == OC_OK, "the allreduce after a failure", count);
    fk.mem_free((uintptr_t)d);
    free(h);
}

int main(int argc, char **argv)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    oc_context_t *ctx;
    oc_context_params_t p = {.field_mask = OC_PARAM_HANDLER, .handler = noop};
    void *cx;
    size_t counts[] = {1, 3, 1001, 4099, 20000, 70001};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (fake_api_load(&fk) != 0 || fk.ctx_create(&cx, 0, 0) != 0)
        MPI_Abort(comm, 1);
    if (oc_init_mpi(&comm, &p, &ctx) != OC_OK)
        MPI_Abort(comm, 1);
    unsigned long before = fk.copies();
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        check(ctx, 0, OC_FLOAT32, counts[k], 0);
        check(ctx, 0, OC_FLOAT64, counts[k], 1);
        check(ctx, 0, OC_INT32, counts[k], 0);
        check(ctx, 1, OC_FLOAT32, counts[k] / 4 + 1, 0);
        check(ctx, 1, OC_INT64, counts[k] / 8 + 1, 1);
        check(ctx, 2, OC_FLOAT32, counts[k], 0);
    }
    check_v(ctx, 1);
    check_v(ctx, 3000);
    /* three collectives on device buffers in flight at once, completed in
     * reverse order: they take the slots in turn */
    {
        const size_t n = 40000;
        float *h = malloc(n * 4), *got = malloc(n * 4);
        void *d[3];
        oc_request_t *rq[3];
        fill(h, n * 4, (unsigned)rank + 2, OC_FLOAT32);
        for (int k = 0; k < 3; k++) {
            d[k] = fake_dev_alloc(&fk, h, n * 4);
            expect(oc_iallreduce(ctx, OC_IN_PLACE, d[k], n - (size_t)k * 1000,
                                 OC_FLOAT32, OC_SUM, &rq[k]) == OC_OK,
                   "start of one of three", n);
        }
        for (int k = 2; k >= 0; k--)
            expect(oc_wait(&rq[k]) == OC_OK, "one of three in flight", n);
        expect(oc_allreduce(ctx, OC_IN_PLACE, h, n, OC_FLOAT32, OC_SUM) == OC_OK,
               "host allreduce", n);
        for (int k = 0; k < 3; k++) {
            fk.dtoh(got, (uintptr_t)d[k], (n - (size_t)k * 1000) * 4);
            expect(memcmp(got, h, (n - (size_t)k * 1000) * 4) == 0,
                   "one of three differs from the host path", n);
            fk.mem_free((uintptr_t)d[k]);
        }
        free(h), free(got);
    }
    /* a host send buffer and a device receive buffer, and the other way */
    for (int way = 0; way < 2; way++) {
        const size_t n = 30001;
        float *h = malloc(n * 4), *r = malloc(n * 4), *got = malloc(n * 4);
        fill(h, n * 4, (unsigned)rank + 9, OC_FLOAT32);
        void *d = fake_dev_alloc(&fk, way ? h : NULL, n * 4);
        oc_status_t st = way ? oc_allreduce(ctx, d, r, n, OC_FLOAT32, OC_SUM)
                             : oc_allreduce(ctx, h, d, n, OC_FLOAT32, OC_SUM);
        expect(st == OC_OK, "allreduce host <-> device", n);
        if (!way)
            fk.dtoh(r, (uintptr_t)d, n * 4);
        expect(oc_allreduce(ctx, OC_IN_PLACE, h, n, OC_FLOAT32, OC_SUM) == OC_OK,
               "host allreduce", n);
        expect(memcmp(r, h, n * 4) == 0, "host <-> device differs", n);
        fk.mem_free((uintptr_t)d);
        free(h), free(r), free(got);
    }
    expect(fk.copies() > before, "no copy went through the double", 0);
    const char *pl = getenv("OC_PLACEMENT");
    if (pl != NULL && strcmp(pl, "agent") == 0) {
        /* the rank stages the whole vector: copy 1 in, copy 2 back */
        check_fail(ctx, "copy", 1, size - 1, 1);
        check_fail(ctx, "copy", 2, 0, 0); /* only that rank's result */
    } else { /* chunk 0's copy in; a later chunk's */
        check_fail(ctx, "copy", 1, 0, 1);
        check_fail(ctx, "copy", 3, size - 1, 1);
    }
    check_fail(ctx, "ptr", 0, 1 % size, 1);
    /* FAKE_CUDA_DEVICES=2: rank 0's receive buffer on device 1, its send
     * buffer (and the staging) on device 0: OC_ERR_GPU everywhere */
    const char *nd = getenv("FAKE_CUDA_DEVICES");
    if (nd != NULL && atoi(nd) > 1) {
        float h[4096];
        void *cx1, *d0, *d1 = NULL;
        fill(h, sizeof(h), 3, OC_FLOAT32);
        d0 = fake_dev_alloc(&fk, h, sizeof(h));
        if (rank == 0) {
            fk.ctx_create(&cx1, 0, 1);
            d1 = fake_dev_alloc(&fk, NULL, sizeof(h));
            fk.ctx_create(&cx1, 0, 0);
        }
        oc_status_t st = oc_allreduce(ctx, rank == 0 ? d0 : OC_IN_PLACE,
                                      rank == 0 ? d1 : d0, 4096, OC_FLOAT32,
                                      OC_SUM);
        if (st != OC_ERR_GPU) {
            fprintf(stderr, "FAIL rank %d: a buffer on another device: %s\n",
                    rank, oc_status_string(st));
            fails++;
        }
        expect(oc_allreduce(ctx, OC_IN_PLACE, d0, 4096, OC_FLOAT32, OC_SUM) ==
               OC_OK, "the allreduce after another device's buffer", 4096);
        fk.mem_free((uintptr_t)d0);
        if (d1 != NULL)
            fk.mem_free((uintptr_t)d1);
    }
    int all = fails;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0)
        printf("%s: device-buffer collectives on %d ranks, placement %s "
               "(%lu staged copies on rank 0)\n", all ? "FAIL" : "PASS", size,
               oc_placement(ctx), fk.copies() - before);
    oc_finalize(ctx);
    MPI_Finalize();
    return all ? 1 : 0;
}
