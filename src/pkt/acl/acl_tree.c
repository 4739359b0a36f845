/*
 * acl_tree.c — build the cutting trees of acl_tree.h (one thread, then
 * the tree is immutable).
 *
 * Build (one thread, no sharing): HiCuts-style equal-size cuts, each node
 * cutting one field into 2^b aligned pieces (b <= 8), b chosen as the
 * largest whose total replication stays within SPFAC x the node's rules,
 * the field as the one leaving the smallest largest child.  A child drops
 * every rule after the first one that covers its whole region (those can
 * never win there), and a child whose rule list equals its left
 * neighbour's shares its subtree.  Leaves of up to OC__ACL_SMALL rules are
 * records, bigger ones 8-rule blocks, in rank order; partitions by prefix
 * length (part_of).  The finished tables move to huge pages (pack_hot).
 *
 * Lookups, blocks and the side part: acl_lookup.c.
 */
#include "acl_tree.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BINTH 24
#define MAXB 8
#define MAXB_ROOT 12 /* a root of 4096 slots (32 KB) saves a level */
#define SPFAC 4
#define MAX_DEPTH 40
#define TAIL_MAX 16 /* rules kept behind a covering rule, for its deletion */

static const uint32_t field_max[NFIELDS] = {UINT32_MAX, UINT32_MAX, 0xffff,
                                            0xffff, 0xff};

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
        uint32_t sm = oc__acl_prefix_mask(r->src_len);
        uint32_t dm = oc__acl_prefix_mask(r->dst_len);
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
    static __thread int32_t cnt[(1u << MAXB_ROOT) + 1];
    unsigned maxb = depth == 0 ? MAXB_ROOT : MAXB;

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
        unsigned bmax = wb < maxb ? wb : maxb;
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
    uint32_t sm = oc__acl_prefix_mask(r->src_len);
    uint32_t dm = oc__acl_prefix_mask(r->dst_len);
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
