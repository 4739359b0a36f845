/*
 * test_hugemem.c — unit tests of util/hugemem.h: regions are zeroed,
 * writable end to end, present at return (the packet path never faults),
 * 2 MB-aligned when large; whether the kernel gave huge pages is printed,
 * not asserted (THP may be "never" on the machine running the tests).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/hugemem.h"

/* every page of [p, p+len) resident (mincore) */
static void assert_present(uint8_t *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
    unsigned char *v = malloc(n);
    size_t missing = 0;

    assert_non_null(v);
    assert_int_equal(mincore(p, len, v), 0);
    for (size_t i = 0; i < n; i++)
        missing += !(v[i] & 1);
    free(v);
    assert_int_equal(missing, 0);
}

static void check_region(size_t len)
{
    uint8_t *p = oc__huge_map(len);
    size_t nonzero = 0;

    assert_non_null(p);
    assert_int_equal((uintptr_t)p % (size_t)sysconf(_SC_PAGESIZE), 0);
    if (len >= (1u << 20))
        assert_int_equal((uintptr_t)p % (2u << 20), 0);
    assert_present(p, len);
    for (size_t i = 0; i < len; i += 61)
        nonzero += p[i] != 0;
    assert_int_equal(nonzero, 0);
    p[0] = 1;
    p[len - 1] = 2;
    assert_int_equal(p[0] + p[len - 1], 3);
    oc__huge_unmap(p, len);
}

static void test_small(void **state)
{
    (void)state;
    check_region(4096);
    check_region(100000); /* not a page multiple */
}

static void test_large(void **state)
{
    (void)state;
    check_region(2u << 20);
    check_region((5u << 20) + 12345); /* the tail rounds up to 2 MB */
}

/* what a packet pool of offcore-dp is: 8,320 buffers of 2 KB */
static void test_pool_sized(void **state)
{
    size_t len = 8320u * 2048u;
    uint8_t *p = oc__huge_map(len);
    char line[256];
    long huge_kb = -1;
    FILE *f;

    (void)state;
    assert_non_null(p);
    assert_present(p, len);
    f = fopen("/proc/self/smaps_rollup", "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "AnonHugePages: %ld kB", &huge_kb) == 1)
            break;
    if (f != NULL)
        fclose(f);
    printf("# a %zu-byte region: AnonHugePages %ld kB in this process\n", len,
           huge_kb);
    oc__huge_unmap(p, len);
}

static void test_edges(void **state)
{
    (void)state;
    assert_null(oc__huge_map(0));
    oc__huge_unmap(NULL, 12345); /* a no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_pool_sized),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests_name("hugemem", tests, NULL, NULL);
}
