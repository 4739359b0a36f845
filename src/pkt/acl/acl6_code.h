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

typedef struct {     /* the reader's code map of a field */
    uint32_t cnt;
    u128 *start;     /* ascending; start[0] == 0 */
    uint32_t *code;  /* of addresses in [start[i], start[i + 1]) */
    /* an index on the ib bits after the skip bits every start but the
     * first shares (common): idx[j] = the first start at or past bucket
     * j's first address; addresses outside the common prefix search all */
    unsigned skip, ib;
    u128 common;     /* the shared prefix, right-aligned */
    uint32_t *idx;   /* 2^ib + 1 entries */
    uint32_t *bcode; /* per bucket: its code when one interval covers it */
    uint64_t *multi; /* per bucket, a bit: it needs the search */
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

/* The bucket of address @p a in @p m, or UINT32_MAX when @p a is outside
 * the prefix every interval shares (it prefetches the bucket's lines:
 * oc__acl6_map_code() comes later, so a burst overlaps the misses). */
static inline uint32_t oc__acl6_map_bucket(const map_t *m, u128 a)
{
    uint32_t j;
    if (m->skip != 0 && (a >> (128 - m->skip)) != m->common)
        return UINT32_MAX;
    j = (uint32_t)((a << m->skip) >> (128 - m->ib));
    __builtin_prefetch(&m->bcode[j]);
    __builtin_prefetch(&m->multi[j / 64]);
    return j;
}

/* The code of address @p a in bucket @p j (oc__acl6_map_bucket()): the
 * last interval starting at or before a.  start[lo] <= a always (start[0]
 * == 0, or a start before a's bucket), and the answer is below idx[j + 1]
 * (the first start past the bucket). */
static inline uint32_t oc__acl6_map_code(const map_t *m, u128 a, uint32_t j)
{
    const u128 *s = m->start;
    uint32_t n = m->cnt;
    if (j != UINT32_MAX) {
        uint32_t lo;
        if (!(m->multi[j / 64] >> (j % 64) & 1))
            return m->bcode[j];
        lo = m->idx[j] > 0 ? m->idx[j] - 1 : 0;
        s += lo;
        n = m->idx[j + 1] - lo;
    }
    while (n > 1) {
        uint32_t half = n / 2;
        s = s[half] <= a ? s + half : s;
        n -= half;
    }
    return m->code[s - m->start];
}

/* Build field @p f from the source (@p which 0) or destination (1)
 * prefixes of @p n rules and assign codes.  @return OC_OK,
 * OC_ERR_NO_MEMORY, OC_ERR_UNSUPPORTED (logged: they nest too deeply). */
oc_status_t oc__acl6_field_build(field_t *f, const oc_acl6_rule_t *rules,
                                 size_t n, int which);
void oc__acl6_fields_free(field_t f[2]);
/* The code map of @p f, or NULL (no memory). */
map_t *oc__acl6_map_build(const field_t *f);
void oc__acl6_map_free(map_t *m); /* NULL: no-op */
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
