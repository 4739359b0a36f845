/*
 * acl_tree.c — build and walk the cutting trees of acl_tree.h.
 *
 * Build (one thread, no sharing): HiCuts-style equal-size cuts, each node
 * cutting one field into 2^b aligned pieces (b <= 8), b chosen as the
 * largest whose total replication stays within SPFAC x the node's rules,
 * the field as the one leaving the smallest largest child.  A child drops
 * every rule after the first one that covers its whole region (those can
 * never win there), and a child whose rule list equals its left
 * neighbour's shares its subtree.  Leaves hold up to BINTH rules per
 * block, in rank order.
 *
 * Lookup: read-only; any number of threads.  The fast path walks groups of
 * keys level by level with prefetches, so that the memory latency of one
 * key's walk overlaps the others', and tests leaf blocks with AVX-512 when
 * the CPU has it.  oc__acl_tree_lookup_scalar is its reference.
 */
#include "pkt/acl/acl_tree.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define NFIELDS 5
#define BINTH 16
#define MAXB 8
#define SPFAC 4
#define MAX_DEPTH 40
#define TAIL_MAX 16 /* rules kept behind a covering rule, for its deletion */
#define REF_EMPTY 0xffffffffu
#define REF_LEAF 0x80000000u
/* References are 64-bit: an internal node is its offset in `nodes` (bits
 * 0..30) with its cut in bits 32..63 (field 32..34, shift 35..39, child
 * index mask 48..63), so that a walk
 * needs one load per level and can prefetch the exact child.  Leaf
 * references (bits 32..63 zero): bit 31 set; bit 30 set: small leaf, bits 27..29 = rules
 * - 1, bits 0..26 = first srule; else bits 23..29 = blocks - 1, bits 0..22
 * = first block.  REF_EMPTY (all ones) is checked first. */
#define REF_SMALL 0x40000000u
#define LEAF_MAXBLK 128u
#define LEAF_MAXIDX (1u << 23)
#define SMALL_MAXIDX (1u << 27)

static const uint32_t field_max[NFIELDS] = {UINT32_MAX, UINT32_MAX, 0xffff,
                                            0xffff, 0xff};

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
    b->ip[lane] = r->src_ip & oc_acl_prefix_mask(r->src_len);
    b->ip[d] = r->dst_ip & oc_acl_prefix_mask(r->dst_len);
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
int oc__acl_have_avx512;

__attribute__((constructor)) static void detect_cpu(void)
{
    __builtin_cpu_init();
    oc__acl_have_avx512 = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
}

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* the key, spread the way a block's lines are laid out */
typedef struct {
    __m512i ip;   /* 16 x u32: src x8, dst x8 */
    __m512i p;    /* 32 x u16: sport x8, dport x8, sport x8, dport x8 */
    __m128i pr;   /* 16 x u8 */
} vkey_t;

AVX512 static inline void vkey(vkey_t *v, const oc_acl_key_t *k)
{
    __m256i p = _mm256_set_m128i(_mm_set1_epi16((short)k->dport),
                                 _mm_set1_epi16((short)k->sport));
    v->ip = _mm512_mask_blend_epi32(0xff00, _mm512_set1_epi32((int)k->src_ip),
                                    _mm512_set1_epi32((int)k->dst_ip));
    v->p = _mm512_inserti64x4(_mm512_castsi256_si512(p), p, 1);
    v->pr = _mm_set1_epi8((char)k->proto);
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
int oc__acl_have_avx512;
uint32_t oc__acl_blk_match_avx512(const oc__acl_blk_t *b, const oc_acl_key_t *k)
{
    return oc__acl_blk_match_scalar(b, k);
}
#endif

/* ----------------------------------------------------------------- build */

typedef struct {
    uint32_t lo[NFIELDS], hi[NFIELDS];
} box_t;

typedef struct {
    oc__acl_tree_t *t;
    const oc_acl_rule_t *rules;
    box_t *rb; /* per rank */
    size_t ncap, bcap, scap;
    oc_status_t st;
} build_t;

static int grow(void **p, size_t *cap, size_t need, size_t elem, size_t align)
{
    size_t nc;
    void *np;
    if (need <= *cap)
        return 0;
    nc = *cap ? *cap : 1024;
    while (nc < need)
        nc *= 2;
    if (align) {
        if (posix_memalign(&np, align, nc * elem) != 0)
            return -1;
        if (*p != NULL)
            memcpy(np, *p, *cap * elem);
        free(*p);
    } else {
        np = realloc(*p, nc * elem);
        if (np == NULL)
            return -1;
    }
    *p = np;
    *cap = nc;
    return 0;
}

static uint32_t make_small(build_t *b, const uint32_t *list, size_t n)
{
    oc__acl_tree_t *t = b->t;
    if (t->nsmall + n > SMALL_MAXIDX) {
        b->st = OC_ERR_UNSUPPORTED;
        return REF_EMPTY;
    }
    if (grow((void **)&t->small, &b->scap, t->nsmall + n,
             sizeof(oc__acl_srule_t), 64) != 0) {
        b->st = OC_ERR_NO_MEMORY;
        return REF_EMPTY;
    }
    for (size_t i = 0; i < n; i++) {
        const oc_acl_rule_t *r = &b->rules[list[i]];
        oc__acl_srule_t *q = &t->small[t->nsmall + i];
        uint32_t sm = oc_acl_prefix_mask(r->src_len);
        uint32_t dm = oc_acl_prefix_mask(r->dst_len);
        memset(q, 0, sizeof(*q));
        q->slo = r->src_ip & sm;
        q->shi = q->slo | ~sm;
        q->dlo = r->dst_ip & dm;
        q->dhi = q->dlo | ~dm;
        q->splo = r->sport_lo;
        q->sphi = r->sport_hi;
        q->dplo = r->dport_lo;
        q->dphi = r->dport_hi;
        q->pv = r->proto & r->proto_mask;
        q->pm = r->proto_mask;
        q->rank = list[i];
    }
    t->nleaves++;
    t->lane_fill += (uint32_t)n;
    t->nsmall += n;
    return REF_LEAF | REF_SMALL | (uint32_t)(n - 1) << 27 |
           (uint32_t)(t->nsmall - n);
}

static uint32_t make_leaf(build_t *b, const uint32_t *list, size_t n)
{
    oc__acl_tree_t *t = b->t;
    size_t nb = (n + OC__ACL_LANES - 1) / OC__ACL_LANES;
    if (n <= OC__ACL_SMALL)
        return make_small(b, list, n);
    if (nb > LEAF_MAXBLK || t->nblk + nb > LEAF_MAXIDX) {
        b->st = OC_ERR_UNSUPPORTED;
        return REF_EMPTY;
    }
    if (grow((void **)&t->blk, &b->bcap, t->nblk + nb, sizeof(oc__acl_blk_t),
             64) != 0) {
        b->st = OC_ERR_NO_MEMORY;
        return REF_EMPTY;
    }
    for (size_t i = 0; i < nb; i++)
        oc__acl_blk_clear(&t->blk[t->nblk + i]);
    for (size_t i = 0; i < n; i++)
        oc__acl_blk_set(&t->blk[t->nblk + i / OC__ACL_LANES],
                        i % OC__ACL_LANES, &b->rules[list[i]], list[i]);
    t->nleaves++;
    t->lane_fill += (uint32_t)n;
    t->nblk += nb;
    return REF_LEAF | (uint32_t)(nb - 1) << 23 | (uint32_t)(t->nblk - nb);
}

static int covers(const box_t *r, const box_t *reg, const oc_acl_rule_t *rule)
{
    for (int f = 0; f < 4; f++)
        if (r->lo[f] > reg->lo[f] || r->hi[f] < reg->hi[f])
            return 0;
    return rule->proto_mask == 0 ||
           (reg->lo[4] == reg->hi[4] && r->lo[4] <= reg->lo[4] &&
            r->hi[4] >= reg->hi[4]);
}

static inline unsigned width_bits(const box_t *reg, int f)
{
    uint64_t w = (uint64_t)reg->hi[f] - reg->lo[f] + 1;
    return (unsigned)__builtin_ctzll(w); /* regions are aligned 2^k */
}

static uint64_t build_node(build_t *b, const uint32_t *list, size_t n,
                           const box_t *reg, unsigned depth)
{
    int best_f = -1;
    unsigned best_b = 0;
    size_t best_max, best_tot = 0, all = n;
    int32_t cnt[(1u << MAXB) + 1];

    if (n == 0)
        return REF_EMPTY;
    /* decide on the head: the rules up to the first that covers the whole
     * region; the tail behind it only matters once that rule is deleted */
    for (size_t i = 0; i < n; i++)
        if (covers(&b->rb[list[i]], reg, &b->rules[list[i]])) {
            n = i + 1;
            if (all > n + TAIL_MAX) {
                all = n + TAIL_MAX;
                b->t->cover[list[i]] = 1;
            }
            break;
        }
    best_max = n;
    if (n <= BINTH || depth >= MAX_DEPTH)
        return make_leaf(b, list, all);

    for (int f = 0; f < NFIELDS; f++) {
        unsigned wb = width_bits(reg, f);
        unsigned bmax = wb < MAXB ? wb : MAXB;
        unsigned fb = 0;
        size_t fmax = 0, ftot = 0;
        for (unsigned nb = 1; nb <= bmax; nb++) {
            unsigned sh = wb - nb, np = 1u << nb;
            size_t tot = 0, mx = 0;
            long run = 0;
            memset(cnt, 0, sizeof(cnt[0]) * (np + 1));
            for (size_t i = 0; i < n; i++) {
                const box_t *r = &b->rb[list[i]];
                uint32_t lo = r->lo[f] > reg->lo[f] ? r->lo[f] : reg->lo[f];
                uint32_t hi = r->hi[f] < reg->hi[f] ? r->hi[f] : reg->hi[f];
                uint32_t j0 = (uint32_t)(((uint64_t)lo - reg->lo[f]) >> sh);
                uint32_t j1 = (uint32_t)(((uint64_t)hi - reg->lo[f]) >> sh);
                cnt[j0]++;
                cnt[j1 + 1]--;
                tot += j1 - j0 + 1;
            }
            for (unsigned j = 0; j < np; j++) {
                run += cnt[j];
                if ((size_t)run > mx)
                    mx = (size_t)run;
            }
            if (nb > 1 && tot + np > (size_t)SPFAC * n)
                break;
            fb = nb;
            fmax = mx;
            ftot = tot;
        }
        if (fb > 0 && (fmax < best_max || (fmax == best_max && best_f >= 0 &&
                                           ftot < best_tot))) {
            best_f = f;
            best_b = fb;
            best_max = fmax;
            best_tot = ftot;
        }
    }
    if (best_f < 0) /* no cut separates any rule */
        return make_leaf(b, list, all);

    {
        oc__acl_tree_t *t = b->t;
        unsigned wb = width_bits(reg, best_f), sh = wb - best_b;
        unsigned np = 1u << best_b;
        size_t node = t->nnodes, prev_n = 0;
        uint32_t *prev = NULL;
        uint64_t prev_ref = REF_EMPTY, hdr;
        uint32_t *child = malloc(all * sizeof(*child) * 2);
        int ok = child != NULL;

        if (!ok || node + np >= REF_LEAF ||
            grow((void **)&t->nodes, &b->ncap, node + np, sizeof(uint64_t),
                 0) != 0) {
            free(child);
            b->st = OC_ERR_NO_MEMORY;
            return REF_EMPTY;
        }
        t->nnodes += np;
        /* field, shift, and the mask of the child index (not its width) */
        hdr = (uint64_t)((uint32_t)best_f | sh << 3 | (np - 1) << 16) << 32;
        for (unsigned j = 0; j < np && b->st == OC_OK; j++) {
            box_t cr = *reg;
            size_t cn = 0;
            uint32_t *cl = prev == child ? child + all : child;
            size_t tail = 0, cover = SIZE_MAX;
            uint64_t ref;
            cr.lo[best_f] = reg->lo[best_f] + (uint32_t)((uint64_t)j << sh);
            cr.hi[best_f] = cr.lo[best_f] + (uint32_t)((1ull << sh) - 1);
            for (size_t i = 0; i < all; i++) {
                const box_t *r = &b->rb[list[i]];
                if (r->hi[best_f] < cr.lo[best_f] || r->lo[best_f] > cr.hi[best_f])
                    continue;
                if (cover != SIZE_MAX && ++tail > TAIL_MAX) {
                    /* lookups that find it dead must scan everything */
                    t->cover[list[cover]] = 1;
                    break;
                }
                cl[cn++] = list[i];
                if (cover == SIZE_MAX && covers(r, &cr, &b->rules[list[i]]))
                    cover = i;
            }
            if (prev != NULL && cn == prev_n &&
                memcmp(cl, prev, cn * sizeof(*cl)) == 0)
                ref = prev_ref;
            else
                ref = build_node(b, cl, cn, &cr, depth + 1);
            /* nodes may have moved while the child was built */
            b->t->nodes[node + j] = ref;
            prev = cl;
            prev_n = cn;
            prev_ref = ref;
        }
        if (depth + 1 > t->max_depth)
            t->max_depth = depth + 1;
        free(child);
        return hdr | node;
    }
}

static void rule_box(const oc_acl_rule_t *r, box_t *b)
{
    uint32_t sm = oc_acl_prefix_mask(r->src_len);
    uint32_t dm = oc_acl_prefix_mask(r->dst_len);
    b->lo[0] = r->src_ip & sm;
    b->hi[0] = b->lo[0] | ~sm;
    b->lo[1] = r->dst_ip & dm;
    b->hi[1] = b->lo[1] | ~dm;
    b->lo[2] = r->sport_lo;
    b->hi[2] = r->sport_hi;
    b->lo[3] = r->dport_lo;
    b->hi[3] = r->dport_hi;
    b->lo[4] = r->proto_mask == 0xff ? r->proto : 0;
    b->hi[4] = r->proto_mask == 0xff ? r->proto : 0xff;
}

/* Partition: 0 = short source prefix (cut on destination), 1 = short
 * destination, 2 = both short; rules specific in both go with 0. */
#define PREFIX_SHORT 16
#define MIN_PART 64
static int part_of(const oc_acl_rule_t *r)
{
    int s = r->src_len < PREFIX_SHORT, d = r->dst_len < PREFIX_SHORT;
    return s && d ? 2 : d ? 1 : 0;
}

/* Move what lookups walk (nodes, blocks, small leaves) into one region on
 * transparent huge pages where the kernel allows: a walk then costs no TLB
 * misses.  Best effort: on failure the arrays stay where they are. */
#define HUGE_SZ (2u << 20)
static void pack_hot(oc__acl_tree_t *t)
{
    size_t nb = t->nnodes * sizeof(uint64_t), bb = t->nblk * sizeof(oc__acl_blk_t);
    size_t sb = t->nsmall * sizeof(oc__acl_srule_t);
    size_t off_b = (nb + 63) & ~(size_t)63, off_s = off_b + bb;
    size_t len = (off_s + sb + HUGE_SZ - 1) & ~(size_t)(HUGE_SZ - 1);
    char *p;
    /* small tables stay in the cache anyway: not worth 2 MB */
    if (off_s + sb < HUGE_SZ / 2 || posix_memalign((void **)&p, HUGE_SZ, len) != 0)
        return;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);
#endif
    if (nb > 0)
        memcpy(p, t->nodes, nb);
    if (bb > 0)
        memcpy(p + off_b, t->blk, bb);
    if (sb > 0)
        memcpy(p + off_s, t->small, sb);
    free(t->nodes);
    free(t->blk);
    free(t->small);
    t->nodes = (uint64_t *)p;
    t->blk = (oc__acl_blk_t *)(p + off_b);
    t->small = (oc__acl_srule_t *)(p + off_s);
    t->packed = len;
}

void oc__acl_tree_free(oc__acl_tree_t *t)
{
    if (t == NULL)
        return;
    free(t->nodes);
    if (!t->packed) {
        free(t->blk);
        free(t->small);
    }
    free(t->userdata);
    free(t->order);
    free(t->seq);
    free(t->cover);
    free(t->flat);
    free(t);
}

oc_status_t oc__acl_tree_build(const oc_acl_rule_t *sorted, const uint64_t *seq,
                               size_t n, oc__acl_tree_t **out)
{
    build_t b = {0};
    oc__acl_tree_t *t = calloc(1, sizeof(*t));
    uint32_t *list = malloc((n ? n : 1) * sizeof(*list));
    size_t psize[3] = {0, 0, 0};
    int big = 0;
    box_t full;

    b.st = OC_OK;
    b.rules = sorted;
    b.rb = malloc((n ? n : 1) * sizeof(*b.rb));
    if (t != NULL) {
        t->userdata = malloc((n ? n : 1) * sizeof(uint32_t));
        t->order = malloc((n ? n : 1) * sizeof(uint64_t));
        t->seq = malloc((n ? n : 1) * sizeof(uint64_t));
        t->cover = calloc(n ? n : 1, 1);
        t->nflat = (n + OC__ACL_LANES - 1) / OC__ACL_LANES;
        if (posix_memalign((void **)&t->flat, 64,
                           (t->nflat ? t->nflat : 1) * sizeof(oc__acl_blk_t)))
            t->flat = NULL;
    }
    if (t == NULL || list == NULL || b.rb == NULL || t->userdata == NULL ||
        t->order == NULL || t->seq == NULL || t->cover == NULL ||
        t->flat == NULL)
        goto err_mem;
    for (size_t i = 0; i < t->nflat; i++)
        oc__acl_blk_clear(&t->flat[i]);
    for (size_t i = 0; i < n; i++)
        oc__acl_blk_set(&t->flat[i / OC__ACL_LANES], i % OC__ACL_LANES,
                        &sorted[i], (uint32_t)i);
    b.t = t;
    t->nrules = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        rule_box(&sorted[i], &b.rb[i]);
        t->userdata[i] = sorted[i].userdata;
        t->order[i] = (uint64_t)sorted[i].priority << 32 | sorted[i].id;
        t->seq[i] = seq != NULL ? seq[i] : 0;
    }
    for (int f = 0; f < NFIELDS; f++) {
        full.lo[f] = 0;
        full.hi[f] = field_max[f];
    }
    /* a partition too small to pay for its own walk joins the largest */
    for (size_t i = 0; i < n; i++)
        psize[part_of(&sorted[i])]++;
    for (int p = 1; p < 3; p++)
        if (psize[p] > psize[big])
            big = p;
    for (int p = 0; p < 3; p++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            int q = part_of(&sorted[i]);
            if (psize[q] < MIN_PART && q != big)
                q = big;
            if (q == p)
                list[k++] = (uint32_t)i;
        }
        if (k == 0)
            continue;
        t->part[t->nparts].min_rank = list[0];
        t->part[t->nparts].root = build_node(&b, list, k, &full, 0);
        if (b.st != OC_OK)
            goto err;
        t->nparts++;
    }
    /* visit the partition holding the best rule first */
    for (unsigned i = 1; i < t->nparts; i++)
        for (unsigned j = i; j > 0 && t->part[j].min_rank < t->part[j - 1].min_rank; j--) {
            oc__acl_part_t x = t->part[j];
            t->part[j] = t->part[j - 1];
            t->part[j - 1] = x;
        }
    pack_hot(t);
    t->mem = sizeof(*t) +
             (t->packed ? t->packed
                        : t->nnodes * sizeof(uint64_t) +
                              t->nblk * sizeof(oc__acl_blk_t) +
                              t->nsmall * sizeof(oc__acl_srule_t)) +
             n * (sizeof(uint32_t) + 2 * sizeof(uint64_t) + 1) +
             t->nflat * sizeof(oc__acl_blk_t);
    free(list);
    free(b.rb);
    *out = t;
    return OC_OK;
err_mem:
    b.st = OC_ERR_NO_MEMORY;
err:
    free(list);
    free(b.rb);
    oc__acl_tree_free(t);
    return b.st;
}

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
#define GROUP 64

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
            } else if (r == REF_EMPTY) {
            } else if (r & REF_SMALL) {
                const char *sp = (const char *)&t->small[r & (SMALL_MAXIDX - 1)];
                _mm_prefetch(sp, _MM_HINT_T0);
                _mm_prefetch(sp + 64, _MM_HINT_T0);
            } else { /* the three lines of the first block */
                const char *bp = (const char *)&t->blk[r & (LEAF_MAXIDX - 1)];
                _mm_prefetch(bp, _MM_HINT_T0);
                _mm_prefetch(bp + 64, _MM_HINT_T0);
                _mm_prefetch(bp + 128, _MM_HINT_T0);
            }
        }
        na = nn;
    }
}

AVX512 static void lookup_avx512(const oc__acl_tree_t *t, const uint8_t *dead,
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
                uint32_t r = (uint32_t)ref[i];
                const oc__acl_blk_t *b;
                unsigned nb;
                vkey_t v;
                if (r == REF_EMPTY)
                    continue;
                if (r & REF_SMALL) {
                    uint32_t x = leaf_small(t, dead, r, &k[i], best[i]);
                    if (x == FALLBACK) {
                        fb |= 1ull << i;
                        best[i] = 0;
                    } else {
                        best[i] = x;
                    }
                    continue;
                }
                b = &t->blk[r & (LEAF_MAXIDX - 1)];
                nb = ((r >> 23) & 0x7f) + 1;
                vkey(&v, &k[i]);
                for (unsigned j = 0; j < nb; j++, b++) {
                    uint32_t m = blk_match8(b, &v);
                    if (b->rank[0] >= best[i])
                        break;
                    while (m) {
                        uint32_t rk = b->rank[__builtin_ctz(m)];
                        if (!is_dead(dead, rk)) {
                            if (rk < best[i])
                                best[i] = rk;
                            goto next_key;
                        }
                        if (t->cover[rk]) {
                            fb |= 1ull << i;
                            best[i] = 0; /* no other tree is walked */
                            goto next_key;
                        }
                        m &= m - 1;
                    }
                }
            next_key:;
            }
        }
        for (uint32_t i = 0; i < gn; i++)
            rank[g + i] = fb >> i & 1 ? flat_scan(t, dead, &k[i]) : best[i];
    }
}
#endif

void oc__acl_tree_lookup(const oc__acl_tree_t *t, const uint8_t *dead,
                         const oc_acl_key_t *keys, uint32_t n, uint32_t *rank)
{
#if defined(__x86_64__)
    if (oc__acl_have_avx512) {
        lookup_avx512(t, dead, keys, n, rank);
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

static void side_scalar(const oc__acl_side_view_t *sv, const oc_acl_key_t *keys,
                        uint32_t n, uint64_t *best, uint32_t *ud)
{
    uint32_t nb = (sv->cnt + OC__ACL_LANES - 1) / OC__ACL_LANES;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t b = 0; b < nb; b++)
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
        vkey_t v;
        vkey(&v, &keys[i]);
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t m;
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
    if (!scalar && oc__acl_have_avx512) {
        side_avx512(sv, keys, n, best, ud);
        return;
    }
#endif
    side_scalar(sv, keys, n, best, ud);
}
