/*
 * acl_tree.h — internal: the read-optimized part of the classifier.
 *
 * A small forest of cutting trees (one per rule partition, EffiCuts/CutSplit
 * style: rules whose source prefix is short go to a tree that cuts on the
 * destination, and so on) whose leaves hold rules in 16-lane blocks, laid
 * out column-wise so that one AVX-512 compare tests a field of 16 rules.
 * Rules carry their rank (position in priority order) and the lowest live
 * matching rank wins.  Built once from a snapshot of the rules, then
 * immutable: any number of threads read it; the writer only flips bytes of
 * the separate `dead` array (tombstones).  See README.md.
 */
#ifndef OC_PKT_ACL_TREE_H
#define OC_PKT_ACL_TREE_H

#include <stdint.h>

#include "pkt/acl/acl.h"

#define NFIELDS 5 /* src, dst, sport, dport, proto */
/* References are 64-bit.  An internal node: its offset in `nodes` (bits
 * 0..30) and its cut (field: bits 32..34, shift: 35..39, child index mask:
 * 48..63), so that a walk needs one load per level and can prefetch the
 * exact child.  A leaf (bits 32..63 zero, bit 31 set): bit 30 set: small
 * leaf, bits 27..29 = rules - 1, bits 0..26 = first record; else bits
 * 23..29 = blocks - 1, bits 0..22 = first block.  REF_EMPTY (no rule) is
 * checked first. */
#define REF_EMPTY 0xffffffffu
#define REF_LEAF 0x80000000u
#define REF_SMALL 0x40000000u
#define LEAF_MAXBLK 128u
#define LEAF_MAXIDX (1u << 23)
#define SMALL_MAXIDX (1u << 27)

#define OC__ACL_LANES 8
#define OC__ACL_NONE  UINT32_MAX /* no rank */

/* 8 rules column-wise in three cache lines; a lookup tests all 8 with a
 * handful of AVX-512 compares.  Addresses are prefixes: a key matches when
 * (key ^ ip) >> shift == 0, shift = 32 - prefix length (32: any).  Unused
 * lanes never match (proto mask 0, value 0xff).  ip: source in [0..7],
 * destination in [8..15]; plo/phi: source ports in [0..7], destination in
 * [8..15]; shift likewise. */
typedef struct {
    uint32_t ip[2 * OC__ACL_LANES];                          /* line 0 */
    uint16_t plo[2 * OC__ACL_LANES], phi[2 * OC__ACL_LANES]; /* line 1 */
    uint8_t shift[2 * OC__ACL_LANES];                        /* line 2 */
    uint8_t pv[OC__ACL_LANES], pm[OC__ACL_LANES];
    uint32_t rank[OC__ACL_LANES];
} __attribute__((aligned(64))) oc__acl_blk_t;

/* A rule of a small leaf (at most OC__ACL_SMALL rules, tested one by one:
 * one or two cache lines instead of a 16-lane block). */
#define OC__ACL_SMALL 2
typedef struct {
    uint32_t slo, shi, dlo, dhi;
    uint16_t splo, sphi, dplo, dphi;
    uint8_t pv, pm;
    uint16_t pad;
    uint32_t rank;
} oc__acl_srule_t;

typedef struct {
    uint64_t root;     /* a node reference (see acl_tree.c) */
    uint32_t min_rank; /* no rule of this tree ranks better */
} oc__acl_part_t;

typedef struct {
    uint32_t nrules;
    uint32_t nparts;
    oc__acl_part_t part[4];   /* sorted by min_rank */
    uint64_t *nodes;  /* child references, 2^bits per node */
    oc__acl_blk_t *blk;
    oc__acl_srule_t *small;
    size_t nnodes, nblk, nsmall;
    size_t packed; /* bytes of the one allocation (at nodes) that holds
                      nodes, blk and small, or 0: three allocations */
    /* per rank */
    uint32_t *userdata;
    uint64_t *order; /* priority << 32 | id: compared with the side part */
    uint64_t *seq;   /* the writer's add sequence number of the rule */
    uint8_t *cover;  /* rules after it were dropped from some leaf */
    oc__acl_blk_t *flat; /* every rule in rank order: the fallback */
    size_t nflat;
    size_t mem;      /* bytes of all the above */
    uint32_t max_depth, nleaves, lane_fill; /* build statistics */
} oc__acl_tree_t;

/* Build from @p n rules sorted in priority order (rank = index). */
oc_status_t oc__acl_tree_build(const oc_acl_rule_t *sorted, const uint64_t *seq,
                               size_t n, oc__acl_tree_t **out);
void oc__acl_tree_free(oc__acl_tree_t *t);

/* Fill lane @p lane of @p b from @p r with rank @p rank. */
void oc__acl_blk_set(oc__acl_blk_t *b, unsigned lane, const oc_acl_rule_t *r,
                     uint32_t rank);
/* Make every lane of @p b never match. */
void oc__acl_blk_clear(oc__acl_blk_t *b);

/* Best live rank for each key (OC__ACL_NONE if none).  A leaf may have
 * dropped the rules that a covering rule hides; when that rule is dead
 * (deleted, not yet rebuilt) the key is answered from `flat` instead.
 * @p dead may be NULL when no rule of the tree is dead.  Scalar reference and
 * the fast path (AVX-512 when the CPU has it, interleaved across keys). */
void oc__acl_tree_lookup_scalar(const oc__acl_tree_t *t, const uint8_t *dead,
                                const oc_acl_key_t *keys, uint32_t n,
                                uint32_t *rank);
void oc__acl_tree_lookup(const oc__acl_tree_t *t, const uint8_t *dead,
                         const oc_acl_key_t *keys, uint32_t n, uint32_t *rank);

/* The lookup paths (oc__acl_set_lookup_path names them): the scalar
 * reference; groups of keys walked by scalar code with prefetches and leaf
 * blocks tested with AVX-512; the AVX-512 gather walk with the same leaf
 * tests.  oc__acl_path is the one oc__acl_tree_lookup takes. */
enum { OC__ACL_PATH_SCALAR, OC__ACL_PATH_AVX512_LEAF, OC__ACL_PATH_AVX512,
       OC__ACL_PATH_AVX2, OC__ACL_NPATHS };
extern int oc__acl_path;

/* Prefetch the lines of leaf @p r that its test reads first (a small
 * leaf's records, a block leaf's first block). */
static inline void oc__acl_prefetch_leaf(const oc__acl_tree_t *t, uint32_t r)
{
    const char *p;
    if (r == REF_EMPTY)
        return;
    if (r & REF_SMALL) {
        p = (const char *)&t->small[r & (SMALL_MAXIDX - 1)];
        __builtin_prefetch(p, 0, 3);
        __builtin_prefetch(p + 64, 0, 3);
        return;
    }
    p = (const char *)&t->blk[r & (LEAF_MAXIDX - 1)];
    __builtin_prefetch(p, 0, 3);
    __builtin_prefetch(p + 64, 0, 3);
    __builtin_prefetch(p + 128, 0, 3);
}

/* Keys walked together by the fast paths. */
#define OC__ACL_GROUP 64

/* Walk @p n <= OC__ACL_GROUP keys down one tree (acl_walk.c, AVX-512 F):
 * ref[i] holds key i's start (the root, or a leaf such as REF_EMPTY:
 * nothing to walk) and gets its leaf, prefetched; kf[f][i] is field f of
 * key i (src, dst, sport, dport, proto). */
void oc__acl_walk_avx512(const oc__acl_tree_t *t,
                         const uint64_t (*kf)[OC__ACL_GROUP], uint64_t *ref,
                         uint32_t n);
/* The same walk with AVX2 (acl_walk2.c): 4 keys a vector, 8 a step. */
void oc__acl_walk_avx2(const oc__acl_tree_t *t,
                       const uint64_t (*kf)[OC__ACL_GROUP], uint64_t *ref,
                       uint32_t n);

/* The side part of a state (acl.c): @p cnt rules in blocks (lane rank =
 * slot), per slot its order (priority << 32 | id), userdata and tombstone,
 * per block the lowest order in it, and address filters so that a key
 * tests only the blocks that may hold a match. */
#define OC__ACL_SIDE_WORDS 2 /* block bitmaps: up to 128 side blocks */
typedef uint64_t oc__acl_side_filter_t[256][OC__ACL_SIDE_WORDS];

typedef struct {
    const oc__acl_blk_t *blk;
    const uint64_t *order, *blk_min;
    /* per top byte of the source (fsrc) and destination (fdst) address:
     * the side blocks holding a rule whose prefix covers it */
    const oc__acl_side_filter_t *fsrc, *fdst;
    const uint32_t *userdata;
    const uint8_t *dead;
    uint32_t cnt;
} oc__acl_side_view_t;

/* For each key, a live side rule that matches and beats best[i] replaces
 * best[i] (its order) and ud[i] (its userdata). */
void oc__acl_side_lookup(const oc__acl_side_view_t *sv, const oc_acl_key_t *keys,
                         uint32_t n, uint64_t *best, uint32_t *ud, int scalar);

/* Lanes of @p b matching @p k (bit i = lane i), scalar and AVX-512
 * (F, BW, VL). */
uint32_t oc__acl_blk_match_scalar(const oc__acl_blk_t *b, const oc_acl_key_t *k);
extern int oc__acl_have_avx512, oc__acl_have_avx2;
uint32_t oc__acl_blk_match_avx512(const oc__acl_blk_t *b, const oc_acl_key_t *k);

#endif
