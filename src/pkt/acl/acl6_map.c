/*
 * acl6_map.c — the code maps' burst lookup (acl6_code.h): the codes of a
 * burst's addresses, the same as oc__acl6_map_code() gives one by one.
 *
 * Every root entry first (prefetched), then the addresses sorted by their
 * entry's kind (a code; a search of up to 4 intervals; a 16-ary search of
 * one or of two levels; anything else) and each kind in a loop of its own.  A branch per address on its
 * entry's kind mispredicts about every other address on ClassBench sets,
 * and each miss throws away the overlap of the addresses after it; a loop
 * of one kind predicts, and its searches overlap.  The AVX-512 and AVX2
 * variants count a line's 16 keys with one or two compares; they are
 * compiled only for x86 (`target` attributes) and called only where the
 * CPU has AVX-512 F/BW/VL with BMI1/2, or AVX2 (acl6.c picks by the
 * lookup path).
 *
 * Read-only on the map; any number of threads.
 */
#include "acl6_code.h"

#define INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__)
#include <immintrin.h>
/* BMI1/2 beside AVX-512: in the 128-bit shifts by a variable count (the
 * root index, a k-ary search's 32 bits) the shl/shr halves through %cl
 * become shlx/shrx (flags untouched); this burst's code then equals
 * -march=native's on an AVX-512 Xeon but for AVX512DQ encodings.
 * acl_lookup.c's CPU check requires BMI1/2 with AVX-512 F/BW/VL (every
 * CPU with those has them). */
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,bmi,bmi2")))
#define AVX2 __attribute__((target("avx2")))

AVX512 static inline uint32_t count_avx512(const uint32_t *b, uint32_t ka)
{
    __mmask16 le = _mm512_cmple_epu32_mask(_mm512_load_si512(b),
                                           _mm512_set1_epi32((int)ka));
    return (uint32_t)__builtin_popcount(le);
}

/* AVX2 has no unsigned compare: b <= ka where max(b, ka) == ka */
AVX2 static inline uint32_t count_avx2(const uint32_t *b, uint32_t ka)
{
    __m256i k = _mm256_set1_epi32((int)ka);
    __m256i lo = _mm256_load_si256((const __m256i *)b);
    __m256i hi = _mm256_load_si256((const __m256i *)(b + 8));
    lo = _mm256_cmpeq_epi32(_mm256_max_epu32(lo, k), k);
    hi = _mm256_cmpeq_epi32(_mm256_max_epu32(hi, k), k);
    return (uint32_t)__builtin_popcount(
        (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(lo)) |
        (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(hi)) << 8);
}
#endif

enum { SCALAR, SIMD_AVX2, SIMD_AVX512 };

/* oc__acl6_map_kary() with the line count @p simd picks */
INLINE uint32_t kary(const map_t *m, u128 a, uint64_t e, unsigned nlev,
                     int simd)
{
    const uint32_t *h = &m->kx[(e >> 32) & (MAP_KX_MAX - 1)];
    unsigned d = h[0] & 0xff;
    uint32_t ka = (uint32_t)((a << d) >> 96);
    uint32_t g = 0;
    for (unsigned l = nlev; l-- > 0;) {
        const uint32_t *b = &m->kx[h[2 + 2 * l] + MAP_KF * g];
        uint32_t c, len = h[3 + 2 * l];
#if defined(__x86_64__)
        c = simd == SIMD_AVX512 ? count_avx512(b, ka)
            : simd == SIMD_AVX2 ? count_avx2(b, ka)
                                : oc__acl6_map_count(b, ka);
#else
        (void)simd;
        c = oc__acl6_map_count(b, ka);
#endif
        g = MAP_KF * g + c;
        g = g < len ? g : len; /* the padding (all ones) */
    }
    return m->code[(uint32_t)e + g];
}

/* the code of @p a from its MAP_SEARCH entry @p e (oc__acl6_map_entry()) */
INLINE uint32_t search(const map_t *m, u128 a, uint64_t e)
{
    const u128 *s = &m->start[(uint32_t)e];
    uint32_t n1 = (uint32_t)(e >> 32) & 0xff, c;
    c = (uint32_t)(s[1] <= a) + (uint32_t)(s[2] <= a) + (uint32_t)(s[3] <= a);
    return m->code[(uint32_t)e + (c < n1 ? c : n1)];
}

INLINE void burst(const map_t *m, const u128 *a, uint32_t n, uint32_t *code,
                  int simd)
{
    uint64_t e[MAP_BURST];
    uint8_t k1[MAP_BURST], k2[MAP_BURST], ks[MAP_BURST], ko[MAP_BURST];
    uint32_t n1 = 0, n2 = 0, ns = 0, no = 0;

    for (uint32_t i = 0; i < n; i++)
        e[i] = oc__acl6_map_bucket(m, a[i]);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = m->ent[e[i]];
        unsigned t = (unsigned)(x >> 62), nl = (unsigned)(x >> 59) & 7;
        unsigned is1 = t == MAP_KARY && nl == 1, is2 = t == MAP_KARY && nl == 2;
        e[i] = x;
        code[i] = (uint32_t)x;
        k1[n1] = (uint8_t)i;
        n1 += is1;
        k2[n2] = (uint8_t)i;
        n2 += is2;
        ks[ns] = (uint8_t)i;
        ns += t == MAP_SEARCH;
        ko[no] = (uint8_t)i;
        no += (t == MAP_NODE) | (t == MAP_KARY && !is1 && !is2);
    }
    for (uint32_t x = 0; x < ns; x++)
        code[ks[x]] = search(m, a[ks[x]], e[ks[x]]);
    for (uint32_t x = 0; x < n1; x++)
        code[k1[x]] = kary(m, a[k1[x]], e[k1[x]], 1, simd);
    for (uint32_t x = 0; x < n2; x++)
        code[k2[x]] = kary(m, a[k2[x]], e[k2[x]], 2, simd);
    for (uint32_t x = 0; x < no; x++)
        code[ko[x]] = oc__acl6_map_entry(m, a[ko[x]], e[ko[x]]);
}

void oc__acl6_map_burst(const map_t *m, const u128 *a, uint32_t n,
                        uint32_t *code)
{
    burst(m, a, n, code, SCALAR);
}

#if defined(__x86_64__)
AVX512 void oc__acl6_map_burst_avx512(const map_t *m, const u128 *a,
                                      uint32_t n, uint32_t *code)
{
    burst(m, a, n, code, SIMD_AVX512);
}

AVX2 void oc__acl6_map_burst_avx2(const map_t *m, const u128 *a, uint32_t n,
                                  uint32_t *code)
{
    burst(m, a, n, code, SIMD_AVX2);
}
#endif
