/*
 * test_coll_reduce.c — unit tests (cmocka) of src/coll/reduce.c: the
 * 16-bit float conversions (exhaustive round trips, round-to-nearest-even
 * ties, overflow, subnormals), the ordered reduction kernels (rank
 * order, wrapping integers, one rounding for 16-bit types), and the fast
 * blocked kernel bit for bit against the scalar reference (every type,
 * operator, 1-9 sources, counts around the block size, dst being each
 * source in turn).
 */
#include "coll/reduce.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_f16_roundtrip(void **s)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = oc__f16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) { /* NaN stays NaN */
            assert_true(isnan(f));
            assert_true((oc__f32_to_f16(f) & 0x7fff) > 0x7c00);
            continue;
        }
        assert_int_equal(oc__f32_to_f16(f), h);
    }
    assert_true(oc__f16_to_f32(0x3c00) == 1.0f);
    assert_true(oc__f16_to_f32(0x0001) == ldexpf(1, -24));
    assert_true(oc__f16_to_f32(0x7bff) == 65504.0f);
}

static void test_f16_rounding(void **s)
{
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1) */
    assert_int_equal(oc__f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);
    /* 1 + 3 * 2^-11 is halfway between odd 0x3c01 and even 0x3c02 */
    assert_int_equal(oc__f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3c02);
    /* just above half rounds up */
    assert_int_equal(oc__f32_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)),
                     0x3c01);
    assert_int_equal(oc__f32_to_f16(65519.0f), 0x7bff);  /* below the tie */
    assert_int_equal(oc__f32_to_f16(65520.0f), 0x7c00);  /* tie: to inf */
    assert_int_equal(oc__f32_to_f16(-1e10f), 0xfc00);
    assert_int_equal(oc__f32_to_f16(ldexpf(1, -25)), 0x0000); /* tie to 0 */
    assert_int_equal(oc__f32_to_f16(ldexpf(3, -25)), 0x0002); /* tie to even */
    assert_int_equal(oc__f32_to_f16(ldexpf(1023, -24) + ldexpf(1, -25)),
                     0x0400); /* largest subnormal + half: normal, even */
    assert_int_equal(oc__f32_to_f16(-0.0f), 0x8000);
}

static void test_bf16(void **s)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = oc__bf16_to_f32((uint16_t)h);
        if (isnan(f))
            continue;
        assert_int_equal(oc__f32_to_bf16(f), h);
    }
    assert_int_equal(oc__f32_to_bf16(f_of(0x3f808000u)), 0x3f80); /* tie even */
    assert_int_equal(oc__f32_to_bf16(f_of(0x3f818000u)), 0x3f82); /* tie even */
    assert_int_equal(oc__f32_to_bf16(f_of(0x3f808001u)), 0x3f81);
    assert_true(isnan(oc__bf16_to_f32(oc__f32_to_bf16(NAN))));
}

static void test_ordered(void **s)
{
    int32_t a[2] = {INT32_MAX, 5}, b[2] = {1, -7}, c[2] = {3, 2}, out[2];
    const void *srcs[3] = {a, b, c};
    oc__reduce_ordered(OC_INT32, OC_SUM, out, srcs, 3, 2);
    assert_int_equal(out[0], INT32_MIN + 3); /* wraps */
    assert_int_equal(out[1], 0);
    oc__reduce_ordered(OC_INT32, OC_PROD, out, srcs, 3, 2);
    assert_int_equal(out[1], -70);
    oc__reduce_ordered(OC_INT32, OC_MIN, out, srcs, 3, 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], -7);

    /* float: (1 + 2^-24) + 2^-24 in order loses both halves; a different
     * order would not: the kernel must keep rank order */
    float x[1] = {1.0f}, y[1] = {ldexpf(1, -24)}, z[1] = {ldexpf(1, -24)}, fo;
    const void *fs[3] = {x, y, z};
    oc__reduce_ordered(OC_FLOAT32, OC_SUM, &fo, fs, 3, 1);
    assert_true(fo == 1.0f);
    const void *fs2[3] = {y, z, x};
    oc__reduce_ordered(OC_FLOAT32, OC_SUM, &fo, fs2, 3, 1);
    assert_true(fo == 1.0f + ldexpf(1, -23));

    /* 16-bit: 2048 + 1 + 1 in float16 rounded per step would stay 2048;
     * reduced in float32 and rounded once it is 2050 */
    uint16_t h1 = oc__f32_to_f16(2048.0f), h2 = oc__f32_to_f16(1.0f), ho;
    const void *hs[3] = {&h1, &h2, &h2};
    oc__reduce_ordered(OC_FLOAT16, OC_SUM, &ho, hs, 3, 1);
    assert_true(oc__f16_to_f32(ho) == 2050.0f);
    assert_int_equal(oc__dtype_size(OC_BFLOAT16), 2);
    assert_int_equal(oc__dtype_size(99), 0);
}

/* Random bits, NaNs, infinities and signed zeros included (floats). */
static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static void test_fast_vs_ref(void **s)
{
    static const size_t counts[] = {0, 1, 7, 1023, 1024, 1025, 3000};
    enum { MAXN = 9, MAXC = 3000 };
    uint8_t *in[MAXN], *own = malloc(MAXC * 8), *ref = malloc(MAXC * 8);
    uint64_t x = 88172645463325252ull;
    (void)s;
    for (int k = 0; k < MAXN; k++) {
        in[k] = malloc(MAXC * 8);
        for (size_t i = 0; i < MAXC * 8; i++)
            in[k][i] = (uint8_t)rnd(&x);
        if (k % 3 == 1) /* small values too: sums that do not overflow */
            for (size_t i = 0; i < MAXC * 8; i += 8)
                memset(in[k] + i + 2, 0, 5);
    }
    for (int dt = 0; dt < OC__DTYPE_COUNT; dt++)
        for (int op = 0; op < OC__OP_COUNT; op++)
            for (uint32_t n = 1; n <= MAXN; n++)
                for (size_t ci = 0; ci < sizeof(counts) / sizeof(*counts); ci++)
                    for (int32_t a = -1; a < (int32_t)n; a++) {
                        size_t c = counts[ci], es = oc__dtype_size(dt);
                        const void *srcs[MAXN];
                        if (op == OC_PROD && dt >= OC_FLOAT32)
                            continue; /* refused by the API (OC_ERR_COLL_OP) */
                        for (uint32_t k = 0; k < n; k++)
                            srcs[k] = in[k];
                        oc__reduce_ordered_ref(dt, op, ref, srcs, n, c);
                        /* dst is source a (in place), or its own buffer */
                        if (a >= 0) {
                            memcpy(own, in[a], MAXC * 8);
                            srcs[a] = own;
                        }
                        oc__reduce_ordered(dt, op, own, srcs, n, c);
                        if (memcmp(own, ref, c * es) != 0)
                            fail_msg("dtype %d op %d n %u count %zu dst=src %d",
                                     dt, op, n, c, a);
                    }
    for (int k = 0; k < MAXN; k++)
        free(in[k]);
    free(own);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_roundtrip),
        cmocka_unit_test(test_f16_rounding),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_ordered),
        cmocka_unit_test(test_fast_vs_ref),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
