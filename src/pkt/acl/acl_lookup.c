/*
 * acl_lookup.c — leaf blocks, tree walks and the side part's scan: the
 * classifier's read side (acl_tree.h).
 *
 * Read-only on immutable trees; any number of threads (the writer only
 * flips tombstone bytes and appends side slots, see acl.c).  The fast path
 * walks groups of keys level by level with prefetches, so that the memory
 * latency of one key's walk overlaps the others', and tests leaf blocks
 * with AVX-512 (F, BW, VL) when the CPU has it, chosen at start-up;
 * oc__acl_tree_lookup_scalar and the scalar block test are its reference.
 */
#include "acl_tree.h"
#include "util/cpu.h"

#include <stddef.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static inline void key_fields(const oc_acl_key_t *k, uint32_t f[NFIELDS])
{
    f[0] = k->src_ip;
    f[1] = k->dst_ip;
    f[2] = k->sport;
    f[3] = k->dport;
    f[4] = k->proto;
}

/* ---------------------------------------------------------------- blocks */

void oc__acl_blk_clear(oc__acl_blk_t *b)
{
    memset(b, 0, sizeof(*b));
    for (unsigned i = 0; i < OC__ACL_LANES; i++) {
        b->pv[i] = 0xff; /* (proto & 0) != 0xff: never matches */
        b->rank[i] = OC__ACL_NONE;
    }
}

void oc__acl_blk_set(oc__acl_blk_t *b, unsigned lane, const oc_acl_rule_t *r,
                     uint32_t rank)
{
    const unsigned d = OC__ACL_LANES + lane;
    b->ip[lane] = r->src_ip & oc__acl_prefix_mask(r->src_len);
    b->ip[d] = r->dst_ip & oc__acl_prefix_mask(r->dst_len);
    b->shift[lane] = (uint8_t)(32 - r->src_len);
    b->shift[d] = (uint8_t)(32 - r->dst_len);
    b->plo[lane] = r->sport_lo;
    b->phi[lane] = r->sport_hi;
    b->plo[d] = r->dport_lo;
    b->phi[d] = r->dport_hi;
    b->pm[lane] = r->proto_mask;
    b->rank[lane] = rank;
    /* last: the lane goes live when its protocol value becomes reachable */
    __atomic_store_n(&b->pv[lane], (uint8_t)(r->proto & r->proto_mask),
                     __ATOMIC_RELEASE);
}

static inline int prefix_ok(uint32_t key, uint32_t ip, uint8_t shift)
{
    return ((uint64_t)(key ^ ip) >> shift) == 0; /* 64-bit: shift 32 is fine */
}

uint32_t oc__acl_blk_match_scalar(const oc__acl_blk_t *b, const oc_acl_key_t *k)
{
    uint32_t m = 0;
    for (unsigned i = 0, d = OC__ACL_LANES; i < OC__ACL_LANES; i++, d++) {
        int ok = prefix_ok(k->src_ip, b->ip[i], b->shift[i]) &&
                 prefix_ok(k->dst_ip, b->ip[d], b->shift[d]) &&
                 k->sport >= b->plo[i] && k->sport <= b->phi[i] &&
                 k->dport >= b->plo[d] && k->dport <= b->phi[d] &&
                 (k->proto & b->pm[i]) == b->pv[i];
        m |= (uint32_t)ok << i;
    }
    return m;
}

#if defined(__x86_64__)
int oc__acl_have_avx512, oc__acl_have_avx2;

static int best_path(void)
{
    return oc__acl_have_avx512 ? OC__ACL_PATH_AVX512
           : oc__acl_have_avx2 ? OC__ACL_PATH_AVX2
                               : OC__ACL_PATH_SCALAR;
}

__attribute__((constructor)) static void detect_cpu(void)
{
    const unsigned want = OC__CPU_AVX512BW | OC__CPU_AVX512VL | OC__CPU_BMI;
    unsigned f = oc__cpu_features();

    /* BMI1/2 too: acl6_map.c's AVX-512 burst is compiled for them (every
     * CPU with AVX-512 F/BW/VL has them; a hypervisor may still mask one) */
    oc__acl_have_avx512 = (f & want) == want;
    oc__acl_have_avx2 = (f & OC__CPU_AVX2) != 0;
    oc__acl_path = best_path();
}

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* the key, spread the way a block's lines are laid out */
typedef struct {
    __m512i ip;   /* 16 x u32: src x8, dst x8 */
    __m512i p;    /* 32 x u16: sport x8, dport x8, sport x8, dport x8 */
    __m128i pr;   /* 16 x u8 */
} vkey_t;

_Static_assert(sizeof(oc_acl_key_t) == 16 &&
               offsetof(oc_acl_key_t, proto) == 12,
               "vkey and skey permute the key's 16 bytes");

/* the key's 16 bytes, permuted: 32-bit words src 0, dst 1; 16-bit words
 * sport 4, dport 5; byte proto 12 */
AVX512 static inline void vkey(vkey_t *v, const oc_acl_key_t *k)
{
    __m128i x = _mm_loadu_si128((const __m128i *)k);
    __m512i z = _mm512_castsi128_si512(x);
    v->ip = _mm512_permutexvar_epi32(
        _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), z);
    v->p = _mm512_permutexvar_epi16(
        _mm512_set_epi16(5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4,
                         5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4), z);
    v->pr = _mm_shuffle_epi8(x, _mm_set1_epi8(12));
}

AVX512 static inline uint32_t blk_match8(const oc__acl_blk_t *b,
                                         const vkey_t *v)
{
    const __m512i *l = (const __m512i *)b;
    /* addresses: (key ^ ip) >> shift == 0; lanes 0..7 source, 8..15 dest */
    __m512i sh = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)b->shift));
    __mmask16 a = _mm512_cmpeq_epi32_mask(
        _mm512_srlv_epi32(_mm512_xor_si512(l[0], v->ip), sh),
        _mm512_setzero_si512());
    /* ports: lanes 0..15 lower bounds, 16..31 upper ones */
    __mmask32 pl = _mm512_cmp_epu16_mask(l[1], v->p, _MM_CMPINT_LE);
    __mmask32 ph = _mm512_cmp_epu16_mask(v->p, l[1], _MM_CMPINT_LE) >> 16;
    __mmask32 p = pl & ph & a;
    __m128i pvm = _mm_load_si128((const __m128i *)b->pv); /* pv[8] pm[8] */
    __mmask16 pr = _mm_cmpeq_epi8_mask(
        _mm_and_si128(v->pr, _mm_unpackhi_epi64(pvm, pvm)), pvm);
    return (uint32_t)(pr & p & (p >> 8)) & 0xffu;
}

AVX512 uint32_t oc__acl_blk_match_avx512(const oc__acl_blk_t *b,
                                         const oc_acl_key_t *k)
{
    vkey_t v;
    vkey(&v, k);
    return blk_match8(b, &v);
}
#else
int oc__acl_have_avx512, oc__acl_have_avx2;
static int best_path(void) { return OC__ACL_PATH_SCALAR; }
uint32_t oc__acl_blk_match_avx512(const oc__acl_blk_t *b, const oc_acl_key_t *k)
{
    return oc__acl_blk_match_scalar(b, k);
}
#endif

/* ---------------------------------------------------------------- lookup */

/* the child slot of internal node @p ref that key @p kf goes to */
static inline const uint64_t *child_of(const uint64_t *nodes, uint64_t ref,
                                       const uint32_t *kf)
{
    uint32_t h = (uint32_t)(ref >> 32);
    uint32_t v = kf[h & 7] >> ((h >> 3) & 31);
    return &nodes[(uint32_t)ref + (v & (h >> 16))];
}

static inline int is_leaf(uint64_t ref) { return ((uint32_t)ref & REF_LEAF) != 0; }

#define FALLBACK (OC__ACL_NONE - 1) /* a dead covering rule was hit */

/* dead == NULL: no tombstone at all (the common case: no dependent load) */
static inline int is_dead(const uint8_t *dead, uint32_t r)
{
    return dead != NULL && __atomic_load_n(&dead[r], __ATOMIC_RELAXED);
}

/* best live rank of all rules (the slow, always-right answer) */
static uint32_t flat_scan(const oc__acl_tree_t *t, const uint8_t *dead,
                          const oc_acl_key_t *k)
{
    for (size_t i = 0; i < t->nflat; i++) {
        uint32_t m = oc__acl_have_avx512
                         ? oc__acl_blk_match_avx512(&t->flat[i], k)
                         : oc__acl_blk_match_scalar(&t->flat[i], k);
        while (m) {
            uint32_t r = t->flat[i].rank[__builtin_ctz(m)];
            if (!is_dead(dead, r))
                return r;
            m &= m - 1;
        }
    }
    return OC__ACL_NONE;
}

static inline int srule_matches(const oc__acl_srule_t *q, const oc_acl_key_t *k)
{
    return k->src_ip >= q->slo && k->src_ip <= q->shi && k->dst_ip >= q->dlo &&
           k->dst_ip <= q->dhi && k->sport >= q->splo && k->sport <= q->sphi &&
           k->dport >= q->dplo && k->dport <= q->dphi &&
           (k->proto & q->pm) == q->pv;
}

/* a small leaf: same contract as leaf_scalar */
static inline uint32_t leaf_small(const oc__acl_tree_t *t, const uint8_t *dead,
                                  uint32_t ref, const oc_acl_key_t *k,
                                  uint32_t best)
{
    const oc__acl_srule_t *q = &t->small[ref & (SMALL_MAXIDX - 1)];
    unsigned n = ((ref >> 27) & 7) + 1;
    for (unsigned i = 0; i < n && q[i].rank < best; i++) {
        if (!srule_matches(&q[i], k))
            continue;
        if (!is_dead(dead, q[i].rank))
            return q[i].rank;
        if (t->cover[q[i].rank])
            return FALLBACK;
    }
    return best;
}

/* best live rank of leaf @p ref, better than @p best */
static inline uint32_t leaf_scalar(const oc__acl_tree_t *t, const uint8_t *dead,
                                   uint32_t ref, const oc_acl_key_t *k,
                                   uint32_t best)
{
    const oc__acl_blk_t *b;
    unsigned nb = ((ref >> 23) & 0x7f) + 1;
    if (ref & REF_SMALL)
        return leaf_small(t, dead, ref, k, best);
    b = &t->blk[ref & (LEAF_MAXIDX - 1)];
    for (unsigned i = 0; i < nb; i++, b++) {
        uint32_t m = oc__acl_blk_match_scalar(b, k);
        if (b->rank[0] >= best)
            return best;
        while (m) {
            uint32_t r = b->rank[__builtin_ctz(m)];
            if (!is_dead(dead, r))
                return r < best ? r : best;
            if (t->cover[r])
                return FALLBACK;
            m &= m - 1;
        }
    }
    return best;
}

void oc__acl_tree_lookup_scalar(const oc__acl_tree_t *t, const uint8_t *dead,
                                const oc_acl_key_t *keys, uint32_t n,
                                uint32_t *rank)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t kf[NFIELDS], best = OC__ACL_NONE;
        key_fields(&keys[i], kf);
        for (unsigned p = 0; p < t->nparts && t->part[p].min_rank < best; p++) {
            uint64_t ref = t->part[p].root;
            while (!is_leaf(ref))
                ref = *child_of(t->nodes, ref, kf);
            if (ref != REF_EMPTY)
                best = leaf_scalar(t, dead, (uint32_t)ref, &keys[i], best);
            if (best == FALLBACK) {
                best = flat_scan(t, dead, &keys[i]);
                break;
            }
        }
        rank[i] = best;
    }
}

#if defined(__x86_64__)
#define GROUP OC__ACL_GROUP

/* Walk the keys in @p active down to their leaves, one level of every key
 * at a time so that their loads overlap; each step prefetches the slot the
 * key's next step reads, the last one the leaf.  Plain integer code: kept
 * out of the AVX-512 function, where the compiler would move the bit masks
 * through mask registers. */
__attribute__((noinline)) static void walk_group(const oc__acl_tree_t *t,
                                                 uint64_t *ref,
                                                 uint32_t (*kf)[NFIELDS],
                                                 uint64_t active)
{
    const uint64_t *nodes = t->nodes;
    const uint64_t *slot[GROUP];
    uint8_t act[GROUP];
    unsigned na = 0;
    while (active) {
        unsigned i = (unsigned)__builtin_ctzll(active);
        active &= active - 1;
        slot[i] = child_of(nodes, ref[i], kf[i]);
        act[na++] = (uint8_t)i;
    }
    while (na > 0) {
        unsigned nn = 0;
        for (unsigned j = 0; j < na; j++) {
            unsigned i = act[j];
            uint64_t r64 = *slot[i];
            uint32_t r = (uint32_t)r64;
            ref[i] = r64;
            if (!(r & REF_LEAF)) { /* exactly the slot the next step reads */
                slot[i] = child_of(nodes, r64, kf[i]);
                _mm_prefetch((const char *)slot[i], _MM_HINT_T0);
                act[nn++] = (uint8_t)i;
            } else {
                oc__acl_prefetch_leaf(t, r);
            }
        }
        na = nn;
    }
}

/* the key, spread the way a small leaf's record is laid out (twice: a leaf
 * of two records is one 64-byte load) */
AVX512 static inline __m512i skey(const oc_acl_key_t *k)
{
    /* 16-bit words of the key: src 0-1, dst 2-3, sport 4, dport 5, proto 6
     * (the byte above it is padding, never compared) */
    const __m512i idx = _mm512_set_epi16(7, 7, 7, 6, 5, 5, 4, 4, 3, 2, 3, 2, 1, 0, 1, 0,
                                         7, 7, 7, 6, 5, 5, 4, 4, 3, 2, 3, 2, 1, 0, 1, 0);
    return _mm512_permutexvar_epi16(
        idx, _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)k)));
}

_Static_assert(OC__ACL_SMALL <= 2 && sizeof(oc__acl_srule_t) == 32,
               "small_match tests up to two 32-byte records in one load");

/* records of small leaf @p q (@p n of them) matching @p sk (bit i: record
 * i), branch-free: lows <= key <= highs, (proto & pm) == pv */
AVX512 static inline uint32_t small_match(const oc__acl_srule_t *q, unsigned n,
                                          __m512i sk)
{
    __m512i rec = _mm512_maskz_loadu_epi32(n > 1 ? 0xffff : 0x00ff, q);
    uint32_t a = (uint32_t)((_mm512_cmp_epu32_mask(rec, sk, _MM_CMPINT_LE) & 0x0505) |
                            (_mm512_cmp_epu32_mask(sk, rec, _MM_CMPINT_LE) & 0x0a0a));
    uint32_t p = (uint32_t)((_mm512_cmp_epu16_mask(rec, sk, _MM_CMPINT_LE) & 0x05000500u) |
                            (_mm512_cmp_epu16_mask(sk, rec, _MM_CMPINT_LE) & 0x0a000a00u));
    uint64_t pr = _mm512_cmpeq_epi8_mask(
        _mm512_and_si512(_mm512_srli_epi16(rec, 8), sk), rec); /* pm & proto == pv */
    uint32_t ma = (a & 0xf) == 0xf && (p >> 8 & 0xf) == 0xf && (pr >> 24 & 1);
    uint32_t mb = (a >> 8 & 0xf) == 0xf && (p >> 24 & 0xf) == 0xf && (pr >> 56 & 1);
    return (ma | mb << 1) & (n > 1 ? 3u : 1u);
}

/* a small leaf by small_match: same contract as leaf_small */
AVX512 static inline uint32_t leaf_small_avx512(const oc__acl_tree_t *t,
                                                const uint8_t *dead, uint32_t ref,
                                                const oc_acl_key_t *k,
                                                uint32_t best)
{
    const oc__acl_srule_t *q = &t->small[ref & (SMALL_MAXIDX - 1)];
    unsigned n = ((ref >> 27) & 7) + 1;
    uint32_t m = small_match(q, n, skey(k));
    while (m) {
        uint32_t r = q[__builtin_ctz(m)].rank;
        if (r >= best)
            return best;
        if (!is_dead(dead, r))
            return r;
        if (t->cover[r])
            return FALLBACK;
        m &= m - 1;
    }
    return best;
}

/* Best live rank of leaf @p r for key @p k, better than @p best, or
 * FALLBACK (a dead covering rule was hit): leaf_scalar with AVX-512 tests
 * (@p vsmall: small leaves too). */
AVX512 static inline uint32_t leaf_avx512(const oc__acl_tree_t *t,
                                          const uint8_t *dead, uint32_t r,
                                          const oc_acl_key_t *k, uint32_t best,
                                          int vsmall)
{
    const oc__acl_blk_t *b;
    unsigned nb;
    vkey_t v;
    if (r == REF_EMPTY)
        return best;
    if (r & REF_SMALL)
        return vsmall ? leaf_small_avx512(t, dead, r, k, best)
                      : leaf_small(t, dead, r, k, best);
    b = &t->blk[r & (LEAF_MAXIDX - 1)];
    nb = ((r >> 23) & 0x7f) + 1;
    vkey(&v, k);
    for (unsigned j = 0; j < nb; j++, b++) {
        uint32_t m = blk_match8(b, &v);
        if (b->rank[0] >= best)
            break;
        while (m) {
            uint32_t rk = b->rank[__builtin_ctz(m)];
            if (!is_dead(dead, rk))
                return rk < best ? rk : best;
            if (t->cover[rk])
                return FALLBACK;
            m &= m - 1;
        }
    }
    return best;
}

/* the avx512-leaf path: walk_group's scalar walks, tree by tree */
AVX512 static void lookup_avx512_leaf(const oc__acl_tree_t *t,
                                      const uint8_t *dead,
                                      const oc_acl_key_t *keys, uint32_t n,
                                      uint32_t *rank)
{
    for (uint32_t g = 0; g < n; g += GROUP) {
        uint32_t gn = n - g < GROUP ? n - g : GROUP;
        uint32_t kf[GROUP][NFIELDS], best[GROUP];
        uint64_t fb = 0;
        uint64_t ref[GROUP];
        const oc_acl_key_t *k = keys + g;

        for (uint32_t i = 0; i < gn; i++) {
            key_fields(&k[i], kf[i]);
            best[i] = OC__ACL_NONE;
        }
        for (unsigned p = 0; p < t->nparts; p++) {
            uint64_t active = 0;
            uint64_t root = t->part[p].root;
            for (uint32_t i = 0; i < gn; i++) {
                ref[i] = root;
                if (t->part[p].min_rank < best[i] && !is_leaf(root))
                    active |= 1ull << i;
                else if (t->part[p].min_rank >= best[i])
                    ref[i] = REF_EMPTY;
            }
            walk_group(t, ref, kf, active);
            for (uint32_t i = 0; i < gn; i++) {
                uint32_t x;
                if (fb >> i & 1)
                    continue;
                x = leaf_avx512(t, dead, (uint32_t)ref[i], &k[i], best[i], 0);
                if (x == FALLBACK) {
                    fb |= 1ull << i;
                    best[i] = 0; /* no other tree is walked */
                } else {
                    best[i] = x;
                }
            }
        }
        for (uint32_t i = 0; i < gn; i++)
            rank[g + i] = fb >> i & 1 ? flat_scan(t, dead, &k[i]) : best[i];
    }
}

/* the avx512 path: every tree walked for the whole group by the gather walk
 * first (a key that an earlier tree answers better than a later tree's
 * min_rank still walks it: walks are cheap, and every leaf is prefetched
 * when its walk ends, long before its test), then each key's leaves in
 * tree order, as far as they can improve on the best so far */
AVX512 static void lookup_gather(const oc__acl_tree_t *t, const uint8_t *dead,
                                 const oc_acl_key_t *keys, uint32_t n,
                                 uint32_t *rank)
{
    unsigned np = t->nparts;
    for (uint32_t g = 0; g < n; g += GROUP) {
        uint32_t gn = n - g < GROUP ? n - g : GROUP;
        uint64_t kq[NFIELDS][GROUP]; /* the keys' fields, field by field */
        uint64_t ref[4][GROUP];
        const oc_acl_key_t *k = keys + g;

        for (uint32_t i = 0; i < gn; i++) {
            kq[0][i] = k[i].src_ip;
            kq[1][i] = k[i].dst_ip;
            kq[2][i] = k[i].sport;
            kq[3][i] = k[i].dport;
            kq[4][i] = k[i].proto;
        }
        for (unsigned p = 0; p < np; p++) {
            uint64_t root = t->part[p].root;
            for (uint32_t i = 0; i < gn; i++)
                ref[p][i] = root;
            if (!is_leaf(root))
                oc__acl_walk_avx512(t, (const uint64_t(*)[GROUP])kq, ref[p], gn);
            else
                oc__acl_prefetch_leaf(t, (uint32_t)root);
        }
        for (uint32_t i = 0; i < gn; i++) {
            uint32_t best = OC__ACL_NONE;
            for (unsigned p = 0; p < np && t->part[p].min_rank < best; p++) {
                best = leaf_avx512(t, dead, (uint32_t)ref[p][i], &k[i], best, 1);
                if (best == FALLBACK) {
                    best = flat_scan(t, dead, &k[i]);
                    break;
                }
            }
            rank[g + i] = best;
        }
    }
}

/* the avx2 path (CPUs without AVX-512): the gather walk of lookup_gather
 * with AVX2 (acl_walk2.c), then the scalar leaf tests */
static void lookup_gather2(const oc__acl_tree_t *t, const uint8_t *dead,
                           const oc_acl_key_t *keys, uint32_t n, uint32_t *rank)
{
    unsigned np = t->nparts;
    for (uint32_t g = 0; g < n; g += GROUP) {
        uint32_t gn = n - g < GROUP ? n - g : GROUP;
        uint64_t kq[NFIELDS][GROUP];
        uint64_t ref[4][GROUP];
        const oc_acl_key_t *k = keys + g;

        for (uint32_t i = 0; i < gn; i++) {
            kq[0][i] = k[i].src_ip;
            kq[1][i] = k[i].dst_ip;
            kq[2][i] = k[i].sport;
            kq[3][i] = k[i].dport;
            kq[4][i] = k[i].proto;
        }
        for (uint32_t i = gn; i < GROUP; i++) /* whole vectors are loaded */
            for (unsigned f = 0; f < NFIELDS; f++)
                kq[f][i] = 0;
        for (unsigned p = 0; p < np; p++) {
            uint64_t root = t->part[p].root;
            for (uint32_t i = 0; i < gn; i++)
                ref[p][i] = root;
            if (!is_leaf(root))
                oc__acl_walk_avx2(t, (const uint64_t(*)[GROUP])kq, ref[p], gn);
            else
                oc__acl_prefetch_leaf(t, (uint32_t)root);
        }
        for (uint32_t i = 0; i < gn; i++) {
            uint32_t best = OC__ACL_NONE;
            for (unsigned p = 0; p < np && t->part[p].min_rank < best; p++) {
                if (ref[p][i] != REF_EMPTY)
                    best = leaf_scalar(t, dead, (uint32_t)ref[p][i], &k[i], best);
                if (best == FALLBACK) {
                    best = flat_scan(t, dead, &k[i]);
                    break;
                }
            }
            rank[g + i] = best;
        }
    }
}
#endif

int oc__acl_path = OC__ACL_PATH_SCALAR; /* detect_cpu() picks the best */

static const char *const path_name[OC__ACL_NPATHS] = {"scalar", "avx512-leaf",
                                                      "avx512", "avx2"};

const char *oc__acl_lookup_method(void)
{
    return path_name[__atomic_load_n(&oc__acl_path, __ATOMIC_RELAXED)];
}

oc_status_t oc__acl_set_lookup_path(const char *name)
{
    int p = -1;
    if (name == NULL || strcmp(name, "auto") == 0)
        p = best_path();
    for (int i = 0; i < OC__ACL_NPATHS && p < 0; i++)
        if (strcmp(name, path_name[i]) == 0)
            p = i;
    if (p < 0)
        return OC_ERR_INVALID_PARAM;
    if ((p == OC__ACL_PATH_AVX2 && !oc__acl_have_avx2) ||
        ((p == OC__ACL_PATH_AVX512 || p == OC__ACL_PATH_AVX512_LEAF) &&
         !oc__acl_have_avx512))
        return OC_ERR_UNSUPPORTED;
    __atomic_store_n(&oc__acl_path, p, __ATOMIC_RELAXED);
    return OC_OK;
}

void oc__acl_tree_lookup(const oc__acl_tree_t *t, const uint8_t *dead,
                         const oc_acl_key_t *keys, uint32_t n, uint32_t *rank)
{
#if defined(__x86_64__)
    int p = __atomic_load_n(&oc__acl_path, __ATOMIC_RELAXED);
    if (p != OC__ACL_PATH_SCALAR) {
        if (p == OC__ACL_PATH_AVX512)
            lookup_gather(t, dead, keys, n, rank);
        else if (p == OC__ACL_PATH_AVX2)
            lookup_gather2(t, dead, keys, n, rank);
        else
            lookup_avx512_leaf(t, dead, keys, n, rank);
        return;
    }
#endif
    oc__acl_tree_lookup_scalar(t, dead, keys, n, rank);
}

/* ------------------------------------------------------------ side part */

static inline void side_lanes(const oc__acl_side_view_t *sv, uint32_t b,
                              uint32_t m, uint64_t *best, uint32_t *ud)
{
    uint32_t left = sv->cnt - b * OC__ACL_LANES;
    if (left < OC__ACL_LANES)
        m &= (1u << left) - 1;
    while (m) {
        uint32_t slot = b * OC__ACL_LANES + (uint32_t)__builtin_ctz(m);
        m &= m - 1;
        if (sv->order[slot] < *best &&
            !__atomic_load_n(&sv->dead[slot], __ATOMIC_ACQUIRE)) {
            *best = sv->order[slot];
            *ud = sv->userdata[slot];
        }
    }
}

/* bit w*64+j set: side block w*64+j may hold a match for @p k; only
 * blocks below @p nb (published) */
static inline void side_candidates(const oc__acl_side_view_t *sv,
                                   const oc_acl_key_t *k, uint32_t nb,
                                   uint64_t cand[OC__ACL_SIDE_WORDS])
{
    const uint64_t *s = (*sv->fsrc)[k->src_ip >> 24];
    const uint64_t *d = (*sv->fdst)[k->dst_ip >> 24];
    for (unsigned w = 0; w < OC__ACL_SIDE_WORDS; w++) {
        uint32_t lo = w * 64;
        uint64_t m = __atomic_load_n(&s[w], __ATOMIC_RELAXED) &
                     __atomic_load_n(&d[w], __ATOMIC_RELAXED);
        if (nb <= lo)
            m = 0;
        else if (nb - lo < 64)
            m &= (1ull << (nb - lo)) - 1;
        cand[w] = m;
    }
}

static void side_scalar(const oc__acl_side_view_t *sv, const oc_acl_key_t *keys,
                        uint32_t n, uint64_t *best, uint32_t *ud)
{
    uint32_t nb = (sv->cnt + OC__ACL_LANES - 1) / OC__ACL_LANES;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t b = 0; b < nb; b++) /* every block: the reference */
            if (__atomic_load_n(&sv->blk_min[b], __ATOMIC_RELAXED) < best[i])
                side_lanes(sv, b, oc__acl_blk_match_scalar(&sv->blk[b], &keys[i]),
                           &best[i], &ud[i]);
}

#if defined(__x86_64__)
AVX512 static void side_avx512(const oc__acl_side_view_t *sv,
                               const oc_acl_key_t *keys, uint32_t n,
                               uint64_t *best, uint32_t *ud)
{
    uint32_t nb = (sv->cnt + OC__ACL_LANES - 1) / OC__ACL_LANES;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t cand[OC__ACL_SIDE_WORDS];
        vkey_t v;
        side_candidates(sv, &keys[i], nb, cand);
        if ((cand[0] | cand[1]) == 0)
            continue;
        vkey(&v, &keys[i]);
        for (unsigned w = 0; w < OC__ACL_SIDE_WORDS; w++)
            for (uint64_t c = cand[w]; c; c &= c - 1) {
                uint32_t b = w * 64 + (uint32_t)__builtin_ctzll(c), m;
                if (__atomic_load_n(&sv->blk_min[b], __ATOMIC_RELAXED) >= best[i])
                    continue; /* nothing in this block can win */
                m = blk_match8(&sv->blk[b], &v);
                if (m)
                    side_lanes(sv, b, m, &best[i], &ud[i]);
            }
    }
}
#endif

void oc__acl_side_lookup(const oc__acl_side_view_t *sv, const oc_acl_key_t *keys,
                         uint32_t n, uint64_t *best, uint32_t *ud, int scalar)
{
#if defined(__x86_64__)
    int p = __atomic_load_n(&oc__acl_path, __ATOMIC_RELAXED);
    if (!scalar && (p == OC__ACL_PATH_AVX512 || p == OC__ACL_PATH_AVX512_LEAF)) {
        side_avx512(sv, keys, n, best, ud);
        return;
    }
#else
    (void)scalar; /* the scalar scan is the only one */
#endif
    side_scalar(sv, keys, n, best, ud);
}
