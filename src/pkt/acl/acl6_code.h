/*
 * acl6_code.h — internal: the prefix codes of the IPv6 classifier, built
 * by acl6_code.c and used by acl6.c (whose header says how they work).
 * Writer side: a field's distinct prefixes, sorted, with their codes and
 * spare codes.  Reader side: a field's immutable code map.  Writer
 * functions are the writer's (one thread); map_code() is pure.
 */
#ifndef OC_PKT_ACL6_CODE_H
#define OC_PKT_ACL6_CODE_H

#include "pkt/acl/acl6.h"

typedef unsigned __int128 u128;

typedef struct {     /* a distinct prefix of a field (writer side) */
    u128 start;      /* the prefix, bits past len zero */
    uint8_t len;     /* 0..128 */
    uint8_t clen;    /* its code's length, bits */
    uint8_t cwlen;   /* length of its codeword under its parent */
    int32_t parent;  /* index, -1 for the root */
    uint32_t code;   /* left-aligned */
    uint32_t cw;     /* its codeword under its parent (right-aligned) */
    uint32_t refs;   /* rules using it */
    uint32_t sp_off, sp_cnt, sp_used; /* its spare child codes (in sp) */
} node_t;

typedef struct {     /* a code free for a new child */
    uint32_t code;
    uint8_t len;
} spare_t;

typedef struct {     /* nodes sorted by (start, len); node 0 is the root */
    node_t *n;
    size_t cnt, cap;
    spare_t *sp;
    size_t nsp, capsp;
} field_t;

typedef struct {     /* the root of a code map's trie (map_t) */
    u128 pfx;        /* the prefix its addresses share, left-aligned */
    u128 mask;       /* its first skip bits */
    uint32_t below;  /* the code of addresses before pfx's range */
    uint32_t above;  /* and of those past it */
    uint32_t base;   /* its 2^ib entries at ent[base] */
    uint8_t skip;    /* its index: the ib address bits after the skip */
    uint8_t ib;
} mnode_t;

/* An entry of a node: a code, a short search or a node below. */
#define MAP_LEAF 0ull    /* low 32 bits: the code */
#define MAP_SEARCH 1ull  /* bits 32..39: n - 1, low 32: lo (below) */
#define MAP_NODE 2ull    /* bits 48..54 skip, 40..47 ib, low 32 base */
#define MAP_KARY 3ull    /* bits 59..61: levels, 32..58: its header in kx,
                            low 32: lo */
#define MAP_KX_MAX (1u << 27) /* words of kx */
#define MAP_KF 16        /* keys per step of a MAP_KARY search: a line */
#define MAP_HDR 3        /* entries before a node's table: prefix, codes */
#define MAP_SEARCH_MAX 4 /* intervals a search covers at most; the start
                            array has MAP_SEARCH_MAX - 1 more (all ones) */

typedef struct {     /* the reader's code map of a field */
    uint32_t cnt;
    u128 *start;     /* ascending; start[0] == 0 */
    uint32_t *code;  /* of addresses in [start[i], start[i + 1]) */
    /* A multibit trie over the intervals, path-compressed: a node skips
     * the bits its starts share (addresses outside them take the code
     * before or after) and indexes the next ib bits; an entry covering
     * one interval holds its code, one covering up to MAP_SEARCH_MAX a
     * branch-free search of start[lo + 1 ..], more a node below (its
     * skip, ib and table: the table's index and the header's prefix test
     * load in parallel).  Type in bits 62-63 of an entry.  ent[nent] and
     * ent[nent + 1] hold the root's codes before and after its prefix. */
    mnode_t root;
    uint64_t *ent;
    uint32_t nent, capent;
    /* An entry covering more intervals whose starts have no bits set
     * 32 past its own prefix (d bits) is a 16-ary search on those 32 bits
     * (MAP_KARY, a static search tree): a header line (d, levels; each
     * level's offset and length) and the levels, top first, in lines of
     * 16 keys: level 0 the keys of start[lo + 1 ..], level l + 1 every
     * 16th key of level l from the 16th.  A step counts the keys of one
     * line at or below the address's 32 bits: a line per level, 256
     * intervals in two (8 keys of 64 bits took three). */
    uint32_t *kx;    /* 64-byte aligned */
    uint32_t nkx, capkx;
} map_t;

static inline u128 to128(const uint32_t a[4])
{
    return (u128)a[0] << 96 | (u128)a[1] << 64 | (u128)a[2] << 32 | a[3];
}

static inline u128 mask128(unsigned len)
{
    return len == 0 ? 0 : ~(u128)0 << (128 - len);
}

static inline u128 last128(const node_t *x) /* its last address */
{
    return x->start | ~mask128(x->len);
}

static inline int holds(const node_t *a, u128 start, unsigned len)
{
    return a->len <= len && ((start ^ a->start) & mask128(a->len)) == 0;
}

static inline int node_cmp(u128 s, unsigned l, const node_t *x)
{
    return s < x->start ? -1 : s > x->start ? 1 : (int)l - (int)x->len;
}

/* The root entry of address @p a in @p m (an index into m->ent), its
 * line prefetched: oc__acl6_map_code() comes later, so a burst overlaps
 * the misses. */
static inline uint32_t oc__acl6_map_bucket(const map_t *m, u128 a)
{
    const mnode_t *r = &m->root;
    uint32_t j;
    if ((a ^ r->pfx) & r->mask)
        return m->nent + (a > r->pfx);
    j = r->base + (uint32_t)((a << r->skip) >> (128 - r->ib));
    __builtin_prefetch(&m->ent[j]);
    return j;
}

/* The code of address @p a from its root entry @p j
 * (oc__acl6_map_bucket()): the code of the last interval starting at or
 * before a. */
static inline uint32_t oc__acl6_map_entry(const map_t *m, u128 a, uint64_t e);

static inline uint32_t oc__acl6_map_code(const map_t *m, u128 a, uint32_t j)
{
    return oc__acl6_map_entry(m, a, m->ent[j]);
}

/* The keys of line @p b at or below @p ka.  "GCC unroll 1" keeps the loop
 * a loop: at -O3 (the library's build) GCC 12 otherwise unrolls it
 * completely before the vectorizer runs and emits 16 scalar compares and
 * adds, where -O2 counts with 4 SSE2 compares (src/pkt/acl/README.md,
 * "Measured"); kept a loop, the vectorizer counts the line in 4 (SSE2),
 * 2 (AVX2) or 1 (AVX-512) compares at -O2 and -O3.  Clang needs no hint. */
static inline uint32_t oc__acl6_map_count(const uint32_t *b, uint32_t ka)
{
    uint32_t c = 0;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 1
#endif
    for (unsigned k = 0; k < MAP_KF; k++)
        c += b[k] <= ka;
    return c;
}

/* The code of address @p a from its MAP_KARY entry @p e of @p nlev
 * levels (a constant where the caller knows it: the loops unroll). */
static inline uint32_t oc__acl6_map_kary(const map_t *m, u128 a, uint64_t e,
                                         unsigned nlev)
{
    const uint32_t *h = &m->kx[(e >> 32) & (MAP_KX_MAX - 1)];
    unsigned d = h[0] & 0xff;
    uint32_t ka = (uint32_t)((a << d) >> 96);
    uint32_t g = 0;
    for (unsigned l = nlev; l-- > 0;) {
        const uint32_t *b = &m->kx[h[2 + 2 * l] + MAP_KF * g];
        uint32_t len = h[3 + 2 * l];
        g = MAP_KF * g + oc__acl6_map_count(b, ka);
        g = g < len ? g : len; /* the padding (all ones) */
    }
    return m->code[(uint32_t)e + g];
}

/* The code of address @p a from entry @p e of a node it is in. */
static inline uint32_t oc__acl6_map_entry(const map_t *m, u128 a, uint64_t e)
{
    while (e >> 62 == MAP_NODE) {
        const uint64_t *t = &m->ent[(uint32_t)e];
        unsigned skip = (unsigned)(e >> 48) & 0x7f;
        unsigned ib = (unsigned)(e >> 40) & 0xff;
        u128 pfx = (u128)t[-3] << 64 | t[-2];
        uint64_t next = t[(uint32_t)((a << skip) >> (128 - ib))];
        if (((a ^ pfx) >> 1) >> (127 - skip)) /* outside the prefix */
            return a < pfx ? (uint32_t)t[-1] : (uint32_t)(t[-1] >> 32);
        e = next;
    }
    if (e >> 62 == MAP_SEARCH) {
        /* the starts past the entry's last interval are past a, but
         * for the padding (all ones) when a is too: clamp to n - 1 */
        const u128 *s = &m->start[(uint32_t)e];
        uint32_t n1 = (uint32_t)(e >> 32) & 0xff, c;
        c = (uint32_t)(s[1] <= a) + (uint32_t)(s[2] <= a) +
            (uint32_t)(s[3] <= a);
        return m->code[(uint32_t)e + (c < n1 ? c : n1)];
    }
    if (e >> 62 == MAP_KARY)
        return oc__acl6_map_kary(m, a, e, (unsigned)(e >> 59) & 7);
    return (uint32_t)e;
}

#define MAP_BURST 64

/* The codes of @p n <= MAP_BURST addresses @p a, the same as
 * oc__acl6_map_code() gives (acl6_map.c): generic code, and on x86 with
 * AVX-512 (F, BW, VL) or AVX2, to be called only where the CPU has them. */
void oc__acl6_map_burst(const map_t *m, const u128 *a, uint32_t n,
                        uint32_t *code);
void oc__acl6_map_burst_avx512(const map_t *m, const u128 *a, uint32_t n,
                               uint32_t *code);
void oc__acl6_map_burst_avx2(const map_t *m, const u128 *a, uint32_t n,
                             uint32_t *code);

/* Build field @p f from the source (@p which 0) or destination (1)
 * prefixes of @p n rules and assign codes.  @return OC_OK,
 * OC_ERR_NO_MEMORY, OC_ERR_UNSUPPORTED (logged: they nest too deeply). */
oc_status_t oc__acl6_field_build(field_t *f, const oc_acl6_rule_t *rules,
                                 size_t n, int which);
void oc__acl6_fields_free(field_t f[2]);
/* The code map of @p f, or NULL (no memory). */
map_t *oc__acl6_map_build(const field_t *f);
void oc__acl6_map_free(map_t *m); /* NULL: no-op */
size_t oc__acl6_map_bytes(const map_t *m); /* its tables */
/* The node of prefix (@p a, @p l), or NULL. */
node_t *oc__acl6_find(const field_t *f, const uint32_t a[4], unsigned l);
/* Where prefix (@p a, @p l) goes: its node at *idx (1), a new node at
 * *idx under a parent with a spare code (0), or nowhere without a new
 * assignment of every code (-1). */
int oc__acl6_probe(const field_t *f, const uint32_t a[4], unsigned l,
                   size_t *idx);
/* Insert the new node that probe() placed at @p i.  @return OC_OK or
 * OC_ERR_NO_MEMORY. */
oc_status_t oc__acl6_insert(field_t *f, const uint32_t a[4], unsigned l,
                            size_t i);

#endif
