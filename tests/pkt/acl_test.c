/*
 * acl_test.c — the classifier tests' shared set-up and path comparison
 * (acl_test.h).
 */
#include "acl_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pkt/acl/acl.h"

#if defined(__SANITIZE_ADDRESS__)
#define SLOW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLOW 1
#endif
#endif
#ifndef SLOW
#define SLOW 0
#endif

const char *acl_datadir = "data/classbench";
int acl_slow = SLOW;
static uint64_t rng;

void acl_test_init(int argc, char **argv, uint64_t seed)
{
    if (argc > 1)
        acl_datadir = argv[1];
    /* a cross build's tests run under qemu-user, which meson names */
    if (getenv("MESON_EXE_WRAPPER") != NULL)
        acl_slow = 1;
    rng = seed;
    oc__acl_reader_register();
    oc__acl_reader_offline();
}

uint32_t acl_rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* every lookup path oc__acl_set_lookup_path names */
static const char *const paths[] = {"scalar", "avx512-leaf", "avx512", "avx2"};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))
static int path_skipped[NPATHS];

size_t acl_check_paths(void *acl, const void *keys, size_t key_size, size_t nk,
                       acl_burst_fn burst, const uint32_t *scalar,
                       const uint32_t *want)
{
    uint32_t *a = malloc(nk * sizeof(*a));
    size_t bad = 0;
    assert_non_null(a);
    for (size_t p = 0; p < NPATHS; p++) {
        oc_status_t st = oc__acl_set_lookup_path(paths[p]);
        if (st == OC_ERR_UNSUPPORTED) {
            if (!path_skipped[p]++)
                print_message("SKIP lookup path %s: this CPU lacks it\n",
                              paths[p]);
            continue;
        }
        assert_int_equal(st, OC_OK);
        assert_string_equal(oc__acl_lookup_method(), paths[p]);
        oc__acl_reader_online();
        /* odd burst sizes on purpose: groups and chunks end mid-way */
        for (size_t i = 0; i < nk; i += 37) {
            uint32_t m = (uint32_t)(nk - i < 37 ? nk - i : 37);
            assert_int_equal(
                burst(acl, (const char *)keys + i * key_size, m, a + i), m);
        }
        oc__acl_reader_offline();
        for (size_t i = 0; i < nk; i++)
            if ((a[i] != want[i] || scalar[i] != want[i]) && bad++ < 5)
                print_error("key %zu: path %s %u scalar walk %u want %u\n", i,
                            paths[p], a[i], scalar[i], want[i]);
    }
    assert_int_equal(oc__acl_set_lookup_path("auto"), OC_OK);
    free(a);
    return bad;
}
