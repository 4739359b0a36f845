/*
 * acl_walk2.c — the AVX2 tree walk (acl_tree.h), for CPUs without
 * AVX-512: the same walk as acl_walk.c with 4 keys per vector (one 64-bit
 * reference per lane) and two vectors a step, 8 keys, stepping in turn
 * over the group so that the gathers' latencies overlap; lanes that reach
 * a leaf stop and prefetch it.  The scalar reference is
 * oc__acl_tree_lookup_scalar (acl_lookup.c).  Read-only; any number of
 * threads.  The loops over the vectors stay loops, as in acl_walk.c.
 */
#include "acl_tree.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define VL 4 /* keys per vector */
#define NV (OC__ACL_GROUP / VL)

/* lanes (bits 0..3) of @p m that are all-ones */
AVX2 static inline unsigned lanes(__m256i m)
{
    return (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m));
}

AVX2 static inline __m256i lane_mask(unsigned m)
{
    return _mm256_set_epi64x(m & 8 ? -1 : 0, m & 4 ? -1 : 0, m & 2 ? -1 : 0,
                             m & 1 ? -1 : 0);
}

AVX2 static inline void prefetch_lanes(const oc__acl_tree_t *t, __m256i r,
                                       unsigned m)
{
    uint64_t x[VL];
    _mm256_storeu_si256((__m256i *)x, r);
    for (; m; m &= m - 1)
        oc__acl_prefetch_leaf(t, (uint32_t)x[__builtin_ctz(m)]);
}

AVX2 void oc__acl_walk_avx2(const oc__acl_tree_t *t,
                            const uint64_t (*kf)[OC__ACL_GROUP], uint64_t *ref,
                            uint32_t n)
{
    const long long *nodes = (const long long *)t->nodes;
    const __m256i leaf = _mm256_set1_epi64x(REF_LEAF);
    const __m256i off = _mm256_set1_epi64x(0x7fffffff);
    const __m256i zero = _mm256_setzero_si256();
    __m256i r[NV];
    unsigned act[NV], any = 0;
    unsigned nv = (n + VL - 1) / VL;

#pragma GCC unroll 1
    for (unsigned v = 0; v < nv; v++) {
        unsigned in = n - v * VL >= VL ? 0xf : (1u << (n - v * VL)) - 1;
        uint64_t x[VL] = {0, 0, 0, 0};
        for (unsigned l = 0; l < VL; l++)
            if (in >> l & 1)
                x[l] = ref[v * VL + l];
        r[v] = _mm256_loadu_si256((const __m256i *)x);
        act[v] = in & lanes(_mm256_cmpeq_epi64(_mm256_and_si256(r[v], leaf), zero));
        if (in & ~act[v])
            prefetch_lanes(t, r[v], in & ~act[v]);
        any |= act[v];
    }
    while (any) {
        any = 0;
#pragma GCC unroll 1
        for (unsigned v = 0; v < nv; v++) {
            __m256i h, fld, val, idx, g;
            unsigned was;
            if (act[v] == 0)
                continue;
            /* the cut: field bits 32..34, shift 35..39, index mask 48..63 */
            h = _mm256_srli_epi64(r[v], 32);
            fld = _mm256_and_si256(h, _mm256_set1_epi64x(7));
            val = _mm256_loadu_si256((const __m256i *)&kf[0][v * VL]);
            for (unsigned f = 1; f < NFIELDS; f++)
                val = _mm256_blendv_epi8(
                    val, _mm256_loadu_si256((const __m256i *)&kf[f][v * VL]),
                    _mm256_cmpeq_epi64(fld, _mm256_set1_epi64x(f)));
            val = _mm256_srlv_epi64(
                val, _mm256_and_si256(_mm256_srli_epi64(h, 3), _mm256_set1_epi64x(31)));
            idx = _mm256_add_epi64(_mm256_and_si256(r[v], off),
                                   _mm256_and_si256(val, _mm256_srli_epi64(h, 16)));
            g = _mm256_mask_i64gather_epi64(r[v], nodes, idx, lane_mask(act[v]), 8);
            r[v] = g;
            was = act[v];
            act[v] = was & lanes(_mm256_cmpeq_epi64(_mm256_and_si256(g, leaf), zero));
            any |= act[v];
            if (was & ~act[v])
                prefetch_lanes(t, r[v], was & ~act[v]);
        }
    }
#pragma GCC unroll 1
    for (unsigned v = 0; v < nv; v++) {
        uint64_t x[VL];
        unsigned in = n - v * VL >= VL ? 0xf : (1u << (n - v * VL)) - 1;
        _mm256_storeu_si256((__m256i *)x, r[v]);
        for (unsigned l = 0; l < VL; l++)
            if (in >> l & 1)
                ref[v * VL + l] = x[l];
    }
}
#endif
