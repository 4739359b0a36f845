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
#include "coll/reduce.h"

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
    static const size_t sz[OC__DTYPE_COUNT] = {4, 8, 8, 4, 8, 2, 2};
    return dtype >= 0 && dtype < OC__DTYPE_COUNT ? sz[dtype] : 0;
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

void oc__reduce_ordered_ref(int dtype, int op, void *dst,
                            const void *const *srcs, uint32_t n, size_t count)
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

/*
 * The fast form: the same operations on every element in the same order
 * ((x0 op x1) op x2 ...), so the results are bitwise those of the
 * reference, but done as passes over blocks of OC__RED_BLOCK elements,
 * d = x0 op x1, then d = d op x2 ..., with the operator fixed per loop: each
 * pass is a plain element-wise loop the compiler vectorises (SIMD lanes
 * round each element alone, as the scalar code does), and the block stays
 * in L1 between passes.  The reference's loop, with the source loop inside
 * and the operator chosen per element, ran 2.5-30x slower here (2M float32,
 * two sources).  A source may be dst itself (in place); its block is
 * copied aside before the passes overwrite it.
 */
#define OC__RED_BLOCK 1024

#define IADD(UT, a, b) ((UT)(a) + (UT)(b))
#define IMUL(UT, a, b) ((UT)(a) * (UT)(b))
#define FADD(UT, a, b) ((a) + (b))
#define VMIN(UT, a, b) ((b) < (a) ? (b) : (a))
#define VMAX(UT, a, b) ((b) > (a) ? (b) : (a))

#define PASSES(T, UT, F)                                                      \
    do {                                                                      \
        T save[OC__RED_BLOCK];                                                \
        for (size_t b0 = 0; b0 < count; b0 += OC__RED_BLOCK) {                \
            size_t m = count - b0 < OC__RED_BLOCK ? count - b0 : OC__RED_BLOCK; \
            T *d = (T *)dst + b0;                                             \
            const T *x0 = (const T *)srcs[0] + b0;                            \
            const T *x1 = n > 1 ? (const T *)srcs[1] + b0 : x0;               \
            if (alias >= 2 && alias < n) { /* the passes overwrite it */    \
                memcpy(save, (const T *)srcs[alias] + b0, m * sizeof(T));     \
            }                                                                 \
            if (n == 1) {                                                     \
                if (d != x0)                                                  \
                    memcpy(d, x0, m * sizeof(T));                             \
                continue;                                                     \
            }                                                                 \
            for (size_t i = 0; i < m; i++)                                    \
                d[i] = (T)F(UT, x0[i], x1[i]);                                \
            for (uint32_t k = 2; k < n; k++) {                                \
                const T *xk = k == alias ? save : (const T *)srcs[k] + b0;    \
                for (size_t i = 0; i < m; i++)                                \
                    d[i] = (T)F(UT, d[i], xk[i]);                             \
            }                                                                 \
        }                                                                     \
    } while (0)

#define BY_OP(T, UT, ADD, MUL)                                                \
    do {                                                                      \
        switch (op) {                                                         \
        case OC_SUM: PASSES(T, UT, ADD); break;                               \
        case OC_PROD: PASSES(T, UT, MUL); break;                              \
        case OC_MIN: PASSES(T, UT, VMIN); break;                              \
        default: PASSES(T, UT, VMAX); break;                                  \
        }                                                                     \
    } while (0)

void oc__reduce_ordered(int dtype, int op, void *dst, const void *const *srcs,
                        uint32_t n, size_t count)
{
    uint32_t alias = UINT32_MAX;

    if (n == 0)
        return;
    for (uint32_t k = 0; k < n; k++)
        if (srcs[k] == dst)
            alias = k;
    switch (dtype) {
    case OC_INT32: BY_OP(int32_t, uint32_t, IADD, IMUL); break;
    case OC_INT64: BY_OP(int64_t, uint64_t, IADD, IMUL); break;
    case OC_UINT64: BY_OP(uint64_t, uint64_t, IADD, IMUL); break;
    case OC_FLOAT32: BY_OP(float, float, FADD, FADD); break;
    case OC_FLOAT64: BY_OP(double, double, FADD, FADD); break;
    default: /* 16-bit floats: widened, accumulated, rounded once */
        oc__reduce_ordered_ref(dtype, op, dst, srcs, n, count);
        break;
    }
}

void oc__reduce2(int dtype, int op, void *dst, const void *a, const void *b,
                 size_t count)
{
    const void *srcs[2] = {a, b};
    oc__reduce_ordered(dtype, op, dst, srcs, 2, count);
}
