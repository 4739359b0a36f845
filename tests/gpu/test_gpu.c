/*
 * test_gpu.c — src/gpu against the libcuda double (tests/gpu/
 * fake_libcuda.c): which memory a pointer is, the staging pool's copies
 * and their ordering (data is there only once the fence says so), and
 * every error path.  Without an argument the cmocka suite (which first
 * checks that the driver counts only once the program has loaded it);
 * "nolib" and "initfail" check a process whose driver is missing or fails
 * cuInit (loaded once per process, hence their own runs).
 */
#include "gpu/gpu.h"
#include "fake_api.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static fake_api_t fk;
static void *cx0;

static int setup(void **state)
{
    (void)state;
    /* liboffcore finds the driver only once the program has loaded it,
     * and then at once */
    if (oc__gpu_available() || oc__gpu_available() ||
        strstr(oc__gpu_why(), "not loaded") == NULL ||
        fake_api_load(&fk) != 0 || !oc__gpu_available())
        return -1;
    return fk.ctx_create(&cx0, 0, 0);
}

static void test_pointers(void **state)
{
    int on_stack = 1;
    char *heap = malloc(64);
    float host[16] = {0};
    void *dev = fake_dev_alloc(&fk, host, sizeof(host));
    oc__gpu_mem_t m;
    (void)state;

    assert_int_equal(oc__gpu_mem_of(&on_stack, &m), OC_OK);
    assert_int_equal(m.device, -1);
    assert_int_equal(oc__gpu_mem_of(heap, &m), OC_OK);
    assert_int_equal(m.device, -1);
    assert_int_equal(oc__gpu_mem_of(dev, &m), OC_OK);
    assert_int_equal(m.device, 0);
    assert_ptr_equal(m.cuctx, cx0);
    /* inside the range, not only its start */
    assert_int_equal(oc__gpu_mem_of((char *)dev + 60, &m), OC_OK);
    assert_int_equal(m.device, 0);
    assert_true(oc__gpu_driver_version() > 0);
    assert_int_equal(oc__gpu_device_count(), 1);
    assert_string_equal(oc__gpu_why(), "");
    /* memory the driver lost: an error, not "host" */
    setenv("FAKE_CUDA_FAIL", "ptr", 1);
    m.device = 7;
    assert_int_equal(oc__gpu_mem_of(dev, &m), OC_ERR_GPU);
    assert_int_equal(m.device, 7); /* untouched */
    assert_int_equal(oc__gpu_mem_of(heap, &m), OC_OK); /* host stays host */
    assert_int_equal(m.device, -1);
    unsetenv("FAKE_CUDA_FAIL");
    fk.mem_free((uintptr_t)dev);
    free(heap);
}

/* A 1 MiB device buffer through 3 slots of 64 KiB, chunk k in slot k % 3,
 * both ways; the host side of a chunk holds its bytes only once the
 * slot's fence has completed. */
static void test_chunks(void **state)
{
    const size_t len = 1 << 20, chunk = 64 << 10;
    uint8_t *src = malloc(len), *back = malloc(len);
    void *din, *dout;
    oc__gpu_pool_t *pool;
    unsigned long before = fk.copies();
    (void)state;

    for (size_t i = 0; i < len; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    din = fake_dev_alloc(&fk, src, len);
    dout = fake_dev_alloc(&fk, NULL, len);
    assert_int_equal(oc__gpu_pool_new(cx0, 0, chunk, 3, &pool), OC_OK);
    assert_int_equal(oc__gpu_pool_nslots(pool), 3);
    assert_int_equal(oc__gpu_pool_slot_bytes(pool), chunk);
    setenv("FAKE_CUDA_LAG", "2", 1); /* each fence needs 3 queries */
    for (size_t k = 0; k < len / chunk; k++) {
        unsigned s = (unsigned)(k % 3);
        uint8_t *h = oc__gpu_slot_host(pool, s);
        int polls = 0;
        while (oc__gpu_slot_test(pool, s) == OC_INPROGRESS)
            ; /* chunk k-3's copy back: the slot is busy until then */
        memset(h, 0xEE, chunk);
        assert_int_equal(oc__gpu_slot_d2h(pool, s, 0, (uint8_t *)din + k * chunk,
                                          chunk), OC_OK);
        assert_int_equal(oc__gpu_slot_fence(pool, s), OC_OK);
        assert_int_equal(h[0], 0xEE); /* queued, not done */
        oc_status_t st;
        while ((st = oc__gpu_slot_test(pool, s)) == OC_INPROGRESS)
            polls++;
        assert_int_equal(st, OC_OK);
        assert_int_equal(polls, 2);
        assert_memory_equal(h, src + k * chunk, chunk);
        assert_int_equal(oc__gpu_slot_h2d(pool, s, (uint8_t *)dout + k * chunk,
                                          0, chunk), OC_OK);
        assert_int_equal(oc__gpu_slot_fence(pool, s), OC_OK);
    }
    unsetenv("FAKE_CUDA_LAG");
    for (unsigned s = 0; s < 3; s++)
        while (oc__gpu_slot_test(pool, s) == OC_INPROGRESS)
            ;
    assert_int_equal(fk.copies() - before, 2 * len / chunk);
    assert_int_equal(fk.dtoh(back, (uintptr_t)dout, len), 0);
    assert_memory_equal(back, src, len);
    oc__gpu_pool_free(pool);
    oc__gpu_pool_free(NULL);
    fk.mem_free((uintptr_t)din);
    fk.mem_free((uintptr_t)dout);
    free(src);
    free(back);
}

static void test_errors(void **state)
{
    oc__gpu_pool_t *pool = NULL;
    char host[64];
    void *dev = fake_dev_alloc(&fk, NULL, 4096);
    (void)state;

    assert_int_equal(oc__gpu_pool_new(cx0, 0, 4096, 1, &pool),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__gpu_pool_new(NULL, 0, 4096, 2, &pool),
                     OC_ERR_INVALID_PARAM);
    setenv("FAKE_CUDA_FAIL", "hostalloc", 1);
    assert_int_equal(oc__gpu_pool_new(cx0, 0, 4096, 2, &pool), OC_ERR_GPU);
    assert_null(pool);
    unsetenv("FAKE_CUDA_FAIL");
    assert_int_equal(oc__gpu_pool_new(cx0, 0, 4096, 2, &pool), OC_OK);
    /* past the slot; a slot that does not exist */
    assert_int_equal(oc__gpu_slot_d2h(pool, 0, 4000, dev, 100),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__gpu_slot_d2h(pool, 2, 0, dev, 1),
                     OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__gpu_slot_test(pool, 9), OC_ERR_INVALID_PARAM);
    /* host memory where device memory belongs: the driver refuses */
    assert_int_equal(oc__gpu_slot_d2h(pool, 0, 0, host, 64), OC_ERR_GPU);
    /* a copy that fails on the device: the fence reports it, once, and
     * the slot serves the next copy */
    char spec[32];
    snprintf(spec, sizeof(spec), "copy:%lu", fk.enqueued() + 1);
    setenv("FAKE_CUDA_FAIL", spec, 1);
    assert_int_equal(oc__gpu_slot_d2h(pool, 1, 0, dev, 64), OC_OK);
    assert_int_equal(oc__gpu_slot_fence(pool, 1), OC_OK);
    assert_int_equal(oc__gpu_slot_test(pool, 1), OC_ERR_GPU);
    assert_int_equal(oc__gpu_slot_test(pool, 1), OC_OK);
    assert_int_equal(oc__gpu_slot_d2h(pool, 1, 0, dev, 64), OC_OK);
    assert_int_equal(oc__gpu_slot_fence(pool, 1), OC_OK);
    assert_int_equal(oc__gpu_slot_test(pool, 1), OC_OK);
    unsetenv("FAKE_CUDA_FAIL");
    oc__gpu_pool_free(pool);
    fk.mem_free((uintptr_t)dev);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "nolib") == 0) {
        int x = 0;
        oc__gpu_mem_t m = {5, NULL};
        oc__gpu_pool_t *p = NULL;
        if (oc__gpu_load() || oc__gpu_why()[0] == '\0' ||
            oc__gpu_mem_of(&x, &m) != OC_OK || m.device != -1 ||
            oc__gpu_pool_new(&x, 0, 4096, 2, &p) != OC_ERR_UNSUPPORTED ||
            oc__gpu_device_count() != 0) {
            printf("FAIL: without a driver\n");
            return 1;
        }
        printf("PASS: no driver (%s): every pointer is host memory\n",
               oc__gpu_why());
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "initfail") == 0) {
        if (oc__gpu_load() || strstr(oc__gpu_why(), "cuInit") == NULL) {
            printf("FAIL: cuInit failing: %s\n", oc__gpu_why());
            return 1;
        }
        printf("PASS: %s\n", oc__gpu_why());
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pointers),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
