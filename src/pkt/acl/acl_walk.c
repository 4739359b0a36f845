/*
 * acl_walk.c — the AVX-512 tree walk (acl_tree.h): a group of keys down
 * one tree of the forest, 8 keys per vector and 8 vectors in flight.
 *
 * Each step of a vector selects every lane's cut field from the keys
 * (laid out field by field), computes the child slots and gathers them in
 * one instruction; the vectors of a group step in turn, so that eight
 * gathers' memory latencies overlap (rte_acl's AVX-512 methods hide theirs
 * the same way).  Lanes that reached a leaf stop loading and prefetch the
 * leaf, whose test comes after the whole group's walk.  The scalar
 * reference is oc__acl_tree_lookup_scalar (acl_lookup.c), which walks the
 * same references one key at a time.  Read-only; any number of threads.
 *
 * The loops over the vectors stay loops (`#pragma GCC unroll 1`): -O3
 * unrolls them completely, the eight vectors then spill to the stack and
 * the walk runs at half the speed (measured, acl1 and fw1).
 */
#include "acl_tree.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define VL 8 /* keys per vector: one 64-bit reference per lane */
#define NV (OC__ACL_GROUP / VL)

/* prefetch the leaves of the lanes in @p m of @p r */
AVX512 static inline void prefetch_lanes(const oc__acl_tree_t *t, __m512i r,
                                         __mmask8 m)
{
    uint64_t x[VL];
    _mm512_storeu_si512(x, r);
    for (unsigned l = m; l; l &= l - 1)
        oc__acl_prefetch_leaf(t, (uint32_t)x[__builtin_ctz(l)]);
}

AVX512 void oc__acl_walk_avx512(const oc__acl_tree_t *t,
                                const uint64_t (*kf)[OC__ACL_GROUP],
                                uint64_t *ref, uint32_t n)
{
    const uint64_t *nodes = t->nodes;
    const __m512i leaf = _mm512_set1_epi64(REF_LEAF);
    const __m512i off = _mm512_set1_epi64(0x7fffffff);
    __m512i r[NV];
    __mmask8 act[NV], any = 0;
    unsigned nv = (n + VL - 1) / VL;

#pragma GCC unroll 1
    for (unsigned v = 0; v < nv; v++) {
        __mmask8 in = n - v * VL >= VL ? 0xff : (__mmask8)((1u << (n - v * VL)) - 1);
        r[v] = _mm512_maskz_loadu_epi64(in, ref + v * VL);
        act[v] = _mm512_mask_testn_epi64_mask(in, r[v], leaf);
        if (in & ~act[v])
            prefetch_lanes(t, r[v], in & ~act[v]);
        any |= act[v];
    }
    while (any) {
        any = 0;
#pragma GCC unroll 1
        for (unsigned v = 0; v < nv; v++) {
            __m512i h, val, idx;
            __mmask8 was;
            if (act[v] == 0)
                continue;
            /* the cut: field bits 32..34, shift 35..39, index mask 48..63 */
            h = _mm512_srli_epi64(r[v], 32);
            val = _mm512_loadu_si512(&kf[0][v * VL]);
            for (unsigned f = 1; f < NFIELDS; f++)
                val = _mm512_mask_loadu_epi64(
                    val,
                    _mm512_cmpeq_epi64_mask(_mm512_and_si512(h, _mm512_set1_epi64(7)),
                                            _mm512_set1_epi64(f)),
                    &kf[f][v * VL]);
            val = _mm512_srlv_epi64(
                val, _mm512_and_si512(_mm512_srli_epi64(h, 3), _mm512_set1_epi64(31)));
            idx = _mm512_add_epi64(_mm512_and_si512(r[v], off),
                                   _mm512_and_si512(val, _mm512_srli_epi64(h, 16)));
            r[v] = _mm512_mask_i64gather_epi64(r[v], act[v], idx, nodes, 8);
            was = act[v];
            act[v] = _mm512_mask_testn_epi64_mask(act[v], r[v], leaf);
            any |= act[v];
            /* leaves reached: their tests come after the whole walk */
            if (was & ~act[v])
                prefetch_lanes(t, r[v], was & ~act[v]);
        }
    }
#pragma GCC unroll 1
    for (unsigned v = 0; v < nv; v++) {
        __mmask8 in = n - v * VL >= VL ? 0xff : (__mmask8)((1u << (n - v * VL)) - 1);
        _mm512_mask_storeu_epi64(ref + v * VL, in, r[v]);
    }
}
#endif
