/*
 * reduce.c — the element-wise reduction kernels of the collectives, per
 * datatype and operator, and the 16-bit float conversions.
 *
 * Pure functions on caller buffers; thread-safe.  Integer sums and
 * products are computed in unsigned arithmetic so that overflow wraps
 * instead of being undefined.  bfloat16 and float16 are widened to float32
 * and an ordered reduction over many inputs rounds only once, at the end
 * (round-to-nearest-even), so the 16-bit result does not depend on how
 * many partial results an algorithm would otherwise have rounded.
 */
#include "coll_int.h"

#include <math.h>
#include <string.h>

float oc__bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t oc__f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float oc__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    float f;

    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal: man * 2^-24 is exact in float32 */
        f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    memcpy(&f, &u, 4);
    return f;
}

uint16_t oc__f32_to_f16(float f)
{
    uint32_t u, sign, aexp, man;
    memcpy(&u, &f, 4);
    sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    if (u > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    if (u >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (uint16_t)(sign | 0x7c00u);
    aexp = u >> 23;
    if (aexp < 113) { /* result subnormal or zero: quantum 2^-24 */
        float a, q;
        memcpy(&a, &u, 4);
        q = nearbyintf(ldexpf(a, 24)); /* default mode: ties to even */
        return (uint16_t)(sign | (uint32_t)q);
    }
    man = u & 0x7fffffu;
    uint32_t h = ((aexp - 112u) << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* carries into the exponent correctly, up to infinity */
    return (uint16_t)(sign | h);
}

size_t oc__dtype_size(int dtype)
{
    static const size_t sz[OC_DTYPE_COUNT] = {4, 8, 8, 4, 8, 2, 2};
    return dtype >= 0 && dtype < OC_DTYPE_COUNT ? sz[dtype] : 0;
}

#define RED(T, UT, a, b, op)                                                  \
    ((op) == OC_SUM    ? (T)((UT)(a) + (UT)(b))                               \
     : (op) == OC_PROD ? (T)((UT)(a) * (UT)(b))                               \
     : (op) == OC_MIN  ? ((b) < (a) ? (b) : (a))                              \
                       : ((b) > (a) ? (b) : (a)))

/* Floats: min/max as MPI implementations do (a comparison), sums plain. */
#define REDF(a, b, op)                                                        \
    ((op) == OC_SUM   ? (a) + (b)                                             \
     : (op) == OC_MIN ? ((b) < (a) ? (b) : (a))                               \
                      : ((b) > (a) ? (b) : (a)))

#define ORDERED(T, UT, EXPR)                                                  \
    do {                                                                      \
        T *d = dst;                                                           \
        for (size_t i = 0; i < count; i++) {                                  \
            T acc;                                                            \
            memcpy(&acc, (const T *)srcs[0] + i, sizeof(T));                  \
            for (uint32_t k = 1; k < n; k++) {                                \
                T x;                                                          \
                memcpy(&x, (const T *)srcs[k] + i, sizeof(T));                \
                acc = EXPR;                                                   \
            }                                                                 \
            d[i] = acc;                                                       \
        }                                                                     \
    } while (0)

#define ORDERED16(TO, FROM)                                                   \
    do {                                                                      \
        uint16_t *d = dst;                                                    \
        for (size_t i = 0; i < count; i++) {                                  \
            float acc = FROM(((const uint16_t *)srcs[0])[i]);                 \
            for (uint32_t k = 1; k < n; k++) {                                \
                float x = FROM(((const uint16_t *)srcs[k])[i]);               \
                acc = REDF(acc, x, op);                                       \
            }                                                                 \
            d[i] = TO(acc);                                                   \
        }                                                                     \
    } while (0)

void oc__reduce_ordered(int dtype, int op, void *dst, const void *const *srcs,
                        uint32_t n, size_t count)
{
    switch (dtype) {
    case OC_INT32: ORDERED(int32_t, uint32_t, RED(int32_t, uint32_t, acc, x, op)); break;
    case OC_INT64: ORDERED(int64_t, uint64_t, RED(int64_t, uint64_t, acc, x, op)); break;
    case OC_UINT64: ORDERED(uint64_t, uint64_t, RED(uint64_t, uint64_t, acc, x, op)); break;
    case OC_FLOAT32: ORDERED(float, float, REDF(acc, x, op)); break;
    case OC_FLOAT64: ORDERED(double, double, REDF(acc, x, op)); break;
    case OC_BFLOAT16: ORDERED16(oc__f32_to_bf16, oc__bf16_to_f32); break;
    case OC_FLOAT16: ORDERED16(oc__f32_to_f16, oc__f16_to_f32); break;
    default: break;
    }
}

void oc__reduce2(int dtype, int op, void *dst, const void *a, const void *b,
                 size_t count)
{
    const void *srcs[2] = {a, b};
    oc__reduce_ordered(dtype, op, dst, srcs, 2, count);
}
