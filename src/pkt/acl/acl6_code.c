/*
 * acl6_code.c — the IPv6 classifier's prefix codes (acl6_code.h): the
 * tree of a field's distinct prefixes, the codes assigned to it (assign(),
 * with spare codes for prefixes added later), in-place inserts, and the
 * code maps lookups search.  Writer side only, except the maps, which are
 * immutable once built.
 */
#include "acl6_code.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* index of the first node not before (s, l) */
static size_t lower(const field_t *f, u128 s, unsigned l)
{
    size_t lo = 0, hi = f->cnt;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (node_cmp(s, l, &f->n[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Codewords for the items of one node (its children, its spares and
 * "none", which gets the all-zero codeword) such that the deepest code
 * below it is as short as it can be: merge the two shallowest items into
 * one a level up until one is left (Golumbic's minimax variant of Huffman's
 * algorithm; two queues, the items sorted).  @p need[j]: bits item j needs
 * below its codeword; item m - 1 is "none".  Sets cw[j], len[j].
 * @return the bits the node needs below its own code. */
typedef struct {
    uint32_t *order, *left, *right, *val;
    uint8_t *none;
    uint32_t *stack, *scw, *slen;
} merge_t;

static uint32_t merge(merge_t *w, const uint32_t *need, uint32_t m,
                      uint32_t *cw, uint8_t *len)
{
    uint32_t qa = 0, qb = m, qe = m, top = 0, root;

    for (uint32_t j = 0; j < m; j++) {
        w->val[j] = need[j];
        w->none[j] = j == m - 1;
    }
    /* counting sort by need (0..32) */
    {
        uint32_t cnt[34] = {0};
        for (uint32_t j = 0; j < m; j++)
            cnt[need[j] + 1]++;
        for (int v = 1; v < 34; v++)
            cnt[v] += cnt[v - 1];
        for (uint32_t j = 0; j < m; j++)
            w->order[cnt[need[j]]++] = j;
    }
    while ((m - qa) + (qe - qb) > 1) {
        uint32_t pick[2];
        for (int k = 0; k < 2; k++) {
            if (qa < m && (qb == qe || w->val[w->order[qa]] <= w->val[qb]))
                pick[k] = w->order[qa++];
            else
                pick[k] = qb++;
        }
        w->left[qe] = pick[0];
        w->right[qe] = pick[1];
        w->val[qe] = (w->val[pick[0]] > w->val[pick[1]] ? w->val[pick[0]]
                                                         : w->val[pick[1]]) + 1;
        w->none[qe] = w->none[pick[0]] | w->none[pick[1]];
        qe++;
    }
    root = qe - 1 >= m ? qe - 1 : w->order[0];
    w->stack[top] = root;
    w->scw[top] = 0;
    w->slen[top++] = 0;
    while (top > 0) {
        uint32_t id = w->stack[--top], c = w->scw[top], l = w->slen[top];
        if (id < m) {
            cw[id] = c;
            len[id] = (uint8_t)l;
            continue;
        }
        uint32_t a = w->left[id], b = w->right[id];
        if (w->none[b]) { /* "none" stays on the zero side */
            uint32_t t = a;
            a = b;
            b = t;
        }
        w->stack[top] = a;
        w->scw[top] = c << 1;
        w->slen[top++] = l + 1;
        w->stack[top] = b;
        w->scw[top] = c << 1 | 1;
        w->slen[top++] = l + 1;
    }
    return w->val[root];
}

/* The code length a prefix of @p len bits gets when bits are left: the
 * IPv4 trees partition rules by prefix length (short: under 16 bits), so
 * an IPv6 prefix of /48 and longer (as specific as an IPv4 /16 in a /32)
 * gets 16 bits or more, a /128 all 32. */
static unsigned pad_to(unsigned len)
{
    return len < 48 ? 0 : 16 + (len - 48) / 5;
}

/* Codes for every node (nodes sorted, parents set), each node with
 * @p slack spare codes per child (at least one) for later inserts.
 * @return 0; -1 when a code would pass 32 bits; -2 out of memory. */
static int assign(field_t *f, int slack)
{
    size_t n = f->cnt, maxm = 1, nsp = 0;
    uint32_t *koff = calloc(n + 1, sizeof(*koff));
    uint32_t *kid = malloc(n * sizeof(*kid)), *need = calloc(n, sizeof(*need));
    uint32_t *fill = calloc(n, sizeof(*fill)), *ineed = NULL, *icw = NULL;
    uint8_t *ilen = NULL;
    merge_t w = {0};
    int rc = -2;

    if (koff == NULL || kid == NULL || need == NULL || fill == NULL)
        goto out;
    for (size_t i = 1; i < n; i++)
        koff[f->n[i].parent + 1]++;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = koff[i + 1];
        uint32_t sp = slack ? (k ? k * (uint32_t)slack : 1) : 0;
        f->n[i].sp_cnt = sp;
        nsp += sp;
        if (k + sp + 1 > maxm)
            maxm = k + sp + 1;
        koff[i + 1] += koff[i];
    }
    for (size_t i = 1; i < n; i++) {
        uint32_t p = (uint32_t)f->n[i].parent;
        kid[koff[p] + fill[p]++] = (uint32_t)i;
    }
    free(f->sp);
    f->sp = malloc((nsp ? nsp : 1) * sizeof(*f->sp));
    f->nsp = 0;
    f->capsp = nsp ? nsp : 1;
    ineed = malloc(maxm * sizeof(*ineed));
    icw = malloc(maxm * sizeof(*icw));
    ilen = malloc(maxm);
    w.order = malloc(maxm * sizeof(uint32_t));
    w.left = malloc(2 * maxm * sizeof(uint32_t));
    w.right = malloc(2 * maxm * sizeof(uint32_t));
    w.val = malloc(2 * maxm * sizeof(uint32_t));
    w.none = malloc(2 * maxm);
    w.stack = malloc(2 * maxm * sizeof(uint32_t));
    w.scw = malloc(2 * maxm * sizeof(uint32_t));
    w.slen = malloc(2 * maxm * sizeof(uint32_t));
    if (f->sp == NULL || ineed == NULL || icw == NULL || ilen == NULL ||
        w.order == NULL || w.left == NULL || w.right == NULL ||
        w.val == NULL || w.none == NULL || w.stack == NULL ||
        w.scw == NULL || w.slen == NULL)
        goto out;
    for (size_t i = n; i-- > 0;) { /* children after parents: bottom-up */
        node_t *x = &f->n[i];
        uint32_t k = koff[i + 1] - koff[i], m = 0;
        for (uint32_t j = 0; j < k; j++)
            ineed[m++] = need[kid[koff[i] + j]];
        for (uint32_t j = 0; j < x->sp_cnt; j++)
            ineed[m++] = 0;
        ineed[m++] = 0; /* none */
        need[i] = m == 1 ? 0 : merge(&w, ineed, m, icw, ilen);
        if (need[i] > 32) {
            rc = -1;
            goto out;
        }
        for (uint32_t j = 0; j < k; j++) {
            f->n[kid[koff[i] + j]].cw = icw[j];
            f->n[kid[koff[i] + j]].cwlen = ilen[j];
        }
        x->sp_off = (uint32_t)f->nsp;
        x->sp_used = 0;
        for (uint32_t j = 0; j < x->sp_cnt; j++) {
            f->sp[f->nsp].code = icw[k + j];
            f->sp[f->nsp++].len = ilen[k + j];
        }
    }
    for (size_t i = 0; i < n; i++) { /* top-down: absolute codes */
        node_t *x = &f->n[i];
        if (i == 0) {
            x->code = 0;
            x->clen = 0;
        } else {
            const node_t *p = &f->n[x->parent];
            unsigned cl = p->clen + x->cwlen, want = pad_to(x->len);
            x->code = p->code | (uint32_t)((uint64_t)x->cw << (32 - cl));
            /* zeros after a codeword change nothing but its length: the
             * trees tell specific rules from wide ones by it */
            if (want > 32 - need[i])
                want = 32 - need[i];
            x->clen = (uint8_t)(cl > want ? cl : want);
        }
        for (uint32_t j = 0; j < x->sp_cnt; j++) {
            spare_t *sp = &f->sp[x->sp_off + j];
            sp->len = (uint8_t)(x->clen + sp->len);
            sp->code = x->code | (uint32_t)((uint64_t)sp->code << (32 - sp->len));
        }
    }
    rc = 0;
out:
    free(koff);
    free(kid);
    free(need);
    free(fill);
    free(ineed);
    free(icw);
    free(ilen);
    free(w.order);
    free(w.left);
    free(w.right);
    free(w.val);
    free(w.none);
    free(w.stack);
    free(w.scw);
    free(w.slen);
    return rc;
}

/* Build field @p f from the prefixes of @p rules (@p which: 0 source,
 * 1 destination) and assign codes.  @return OC_OK, OC_ERR_NO_MEMORY or
 * OC_ERR_UNSUPPORTED (logged). */
static int cmp_node(const void *a, const void *b)
{
    const node_t *x = a;
    return node_cmp(x->start, x->len, b);
}

oc_status_t oc__acl6_field_build(field_t *f, const oc_acl6_rule_t *rules,
                               size_t n, int which)
{
    size_t m = 1, top = 0;
    int32_t *stack;
    int rc;

    f->cap = n + 1;
    f->n = calloc(f->cap, sizeof(*f->n));
    stack = malloc((n + 1) * sizeof(*stack));
    if (f->n == NULL || stack == NULL) {
        free(stack);
        return OC_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        const uint32_t *a = which ? rules[i].dst : rules[i].src;
        unsigned l = which ? rules[i].dst_len : rules[i].src_len;
        node_t *x = &f->n[m++];
        x->len = (uint8_t)l;
        x->start = to128(a) & mask128(l);
        x->refs = 1;
    }
    qsort(f->n + 1, m - 1, sizeof(*f->n), cmp_node);
    /* the root first; merge duplicates into one node with refs */
    f->n[0].parent = -1;
    f->cnt = 1;
    for (size_t i = 1; i < m; i++) {
        node_t *last = &f->n[f->cnt - 1];
        if (f->n[i].len == 0 || (f->cnt > 1 && last->start == f->n[i].start &&
                                 last->len == f->n[i].len)) {
            (f->n[i].len == 0 ? &f->n[0] : last)->refs++;
            continue;
        }
        f->n[f->cnt++] = f->n[i];
    }
    stack[top++] = 0;
    for (size_t i = 1; i < f->cnt; i++) {
        while (!holds(&f->n[stack[top - 1]], f->n[i].start, f->n[i].len))
            top--;
        f->n[i].parent = stack[top - 1];
        stack[top++] = (int32_t)i;
    }
    free(stack);
    rc = assign(f, 1);
    if (rc == -1)
        rc = assign(f, 0); /* no room to spare: every new prefix reassigns */
    if (rc == -2)
        return OC_ERR_NO_MEMORY;
    if (rc == -1) {
        oc_error(OC_COMP_PKT, "IPv6 %s prefixes nest too deeply for the "
                 "classifier's 32-bit prefix codes",
                 which ? "destination" : "source");
        return OC_ERR_UNSUPPORTED;
    }
    return OC_OK;
}

/* The code map of a field: the elementary intervals in address order,
 * and a trie over them (map_t). */

#define MAP_CHILD_BITS 10 /* a node's index below the root, at most */
#define MAP_DENSITY 2     /* index entries per interval, about */

static int map_node(map_t *m, uint32_t i, uint32_t k, unsigned cap,
                    mnode_t *x);

/* A MAP_KARY entry for intervals i..k of a range @p d bits deep (map_t).
 * @return 0, -1 (no memory) or 1 (a start has bits set 32 past d, or
 * too many for six levels). */
static int map_kary(map_t *m, uint32_t i, uint32_t k, unsigned d,
                    uint64_t *e)
{
    uint32_t len[6], off[6], nlev = 0, need = MAP_KF, h;
    uint32_t n = k - i; /* keys: start[i + 1 ..k] */

    for (uint32_t x = i + 1; x <= k && d + 32 < 128; x++)
        if (m->start[x] << (d + 32) != 0)
            return 1;
    for (uint32_t l = n;; l = (l + MAP_KF - 1) / MAP_KF - 1) {
        if (nlev == 6)
            return 1;
        len[nlev++] = l;
        need += (l + MAP_KF - 1) / MAP_KF * MAP_KF;
        if (l <= MAP_KF)
            break;
    }
    for (uint32_t l = nlev, o = MAP_KF; l-- > 0;
         o += (len[l] + MAP_KF - 1) / MAP_KF * MAP_KF)
        off[l] = o; /* relative to the header; the top level first */
    if ((uint64_t)m->nkx + need > MAP_KX_MAX)
        return 1;
    if (m->nkx + need > m->capkx) {
        uint32_t c = (m->nkx + need) * 2;
        uint32_t *nk = realloc(m->kx, (size_t)c * sizeof(*nk));
        if (nk == NULL)
            return -1;
        m->kx = nk;
        m->capkx = c;
    }
    h = m->nkx;
    m->nkx += need;
    memset(&m->kx[h], 0xff, need * sizeof(*m->kx)); /* padding: ones */
    m->kx[h] = d | nlev << 8;
    for (uint32_t l = 0; l < nlev; l++) {
        uint32_t *lv = &m->kx[h + off[l]];
        m->kx[h + 2 + 2 * l] = h + off[l]; /* offset, length */
        m->kx[h + 3 + 2 * l] = len[l];
        for (uint32_t x = 0; x < len[l]; x++)
            lv[x] = l == 0 ? (uint32_t)((m->start[i + 1 + x] << d) >> 96)
                           : m->kx[h + off[l - 1] + MAP_KF * (x + 1)];
    }
    *e = MAP_KARY << 62 | (uint64_t)nlev << 59 | (uint64_t)h << 32 | i;
    return 0;
}

/* The entry of a range of addresses whose intervals are i..k (start[i]
 * at or before its first address, start[k] at or before its last).
 * @return 0 or -1 (no memory, or more than 2^32 entries). */
static int map_ent(map_t *m, uint32_t i, uint32_t k, unsigned depth,
                   uint64_t *e)
{
    mnode_t x;
    if (i == k) {
        *e = MAP_LEAF << 62 | m->code[i];
        return 0;
    }
    if (k - i + 1 <= MAP_SEARCH_MAX) {
        *e = MAP_SEARCH << 62 | (uint64_t)(k - i) << 32 | i;
        return 0;
    }
    switch (map_kary(m, i, k, depth, e)) {
    case 0:
        return 0;
    case -1:
        return -1;
    }
    if (map_node(m, i, k, MAP_CHILD_BITS, &x) != 0)
        return -1;
    *e = MAP_NODE << 62 | (uint64_t)x.skip << 48 | (uint64_t)x.ib << 40 |
         x.base;
    return 0;
}

/* A node over intervals i..k (see map_t): it skips the bits their starts
 * i+1..k share (and those of the range before it) and indexes at most
 * @p cap bits after them, about two entries per interval; its header
 * (prefix, codes before and after) in the three entries before its
 * table.  @return 0 or -1. */
static int map_node(map_t *m, uint32_t i, uint32_t k, unsigned cap,
                    mnode_t *x)
{
    u128 diff = k > i + 1 ? m->start[i + 1] ^ m->start[k] : 0, pfx;
    unsigned skip = 0, ib = 1;
    uint32_t n = k - i + 1, p = i, base;

    while (diff != 0 && !(diff >> (127 - skip) & 1))
        skip++;
    while (ib < cap && ((uint64_t)1 << ib) < MAP_DENSITY * (uint64_t)n)
        ib++;
    if (ib > 128 - skip)
        ib = 128 - skip;
    pfx = m->start[k] & mask128(skip);
    if ((uint64_t)m->nent + ((uint64_t)1 << ib) + MAP_HDR + 2 > UINT32_MAX)
        return -1;
    if (m->nent + (1u << ib) + MAP_HDR + 2 > m->capent) {
        uint32_t c = (m->nent + (1u << ib) + MAP_HDR + 2) * 2;
        uint64_t *ne = realloc(m->ent, (size_t)c * sizeof(*ne));
        if (ne == NULL)
            return -1;
        m->ent = ne;
        m->capent = c;
    }
    base = m->nent + MAP_HDR;
    m->nent = base + (1u << ib);
    m->ent[base - 3] = (uint64_t)(pfx >> 64);
    m->ent[base - 2] = (uint64_t)pfx;
    m->ent[base - 1] = (uint64_t)m->code[k] << 32 | m->code[i];
    *x = (mnode_t){.pfx = pfx, .mask = mask128(skip), .below = m->code[i],
                   .above = m->code[k], .base = base,
                   .skip = (uint8_t)skip, .ib = (uint8_t)ib};
    for (uint32_t j = 0; j < (1u << ib); j++) {
        u128 first = pfx | (u128)j << (128 - skip - ib);
        u128 last = first | ~mask128(skip + ib);
        uint32_t q;
        uint64_t e;
        while (p < k && m->start[p + 1] <= first)
            p++;
        for (q = p; q < k && m->start[q + 1] <= last; q++)
            ;
        if (map_ent(m, p, q, skip + ib, &e) != 0)
            return -1;
        m->ent[base + j] = e;
    }
    return 0;
}

/* The trie of @p m (see map_t).  @return 0 or -1 (no memory). */
static int map_index(map_t *m)
{
    uint32_t *al;
    if (map_node(m, 0, m->cnt - 1, 16, &m->root) != 0)
        return -1;
    /* the search lines on line boundaries */
    al = aligned_alloc(64, ((size_t)m->nkx * sizeof(*al) + 63) / 64 * 64 + 64);
    if (al == NULL)
        return -1;
    if (m->nkx > 0)
        memcpy(al, m->kx, (size_t)m->nkx * sizeof(*al));
    free(m->kx);
    m->kx = al;
    m->ent[m->nent] = MAP_LEAF << 62 | m->root.below;
    m->ent[m->nent + 1] = MAP_LEAF << 62 | m->root.above;
    return 0;
}

size_t oc__acl6_map_bytes(const map_t *m)
{
    return m->cnt * (sizeof(u128) + sizeof(uint32_t)) +
           (m->nent + 2) * sizeof(uint64_t) + (size_t)m->nkx * sizeof(uint32_t);
}

map_t *oc__acl6_map_build(const field_t *f)
{
    map_t *m = calloc(1, sizeof(*m));
    int32_t *stack = calloc(f->cnt, sizeof(*stack));
    size_t top = 0, cap = 2 * f->cnt + 1;

    if (m == NULL || stack == NULL)
        goto err;
    m->start = calloc(cap + MAP_SEARCH_MAX - 1, sizeof(*m->start));
    m->code = malloc(cap * sizeof(*m->code));
    if (m->start == NULL || m->code == NULL)
        goto err;
#define EMIT(s, c)                                                      \
    do {                                                                \
        if (m->cnt > 0 && m->start[m->cnt - 1] == (s))                  \
            m->code[m->cnt - 1] = (c);                                  \
        else {                                                          \
            m->start[m->cnt] = (s);                                     \
            m->code[m->cnt++] = (c);                                    \
        }                                                               \
    } while (0)
#define POP()                                                           \
    do {                                                                \
        const node_t *t = &f->n[stack[--top]];                          \
        if (last128(t) != ~(u128)0)                                     \
            EMIT(last128(t) + 1, f->n[stack[top - 1]].code);            \
    } while (0)
    stack[top++] = 0;
    EMIT((u128)0, f->n[0].code);
    for (size_t i = 1; i < f->cnt; i++) {
        while (!holds(&f->n[stack[top - 1]], f->n[i].start, f->n[i].len))
            POP();
        stack[top++] = (int32_t)i;
        EMIT(f->n[i].start, f->n[i].code);
    }
    while (top > 1)
        POP();
#undef POP
#undef EMIT
    free(stack);
    stack = NULL;
    for (unsigned k = 0; k < MAP_SEARCH_MAX - 1; k++)
        m->start[m->cnt + k] = ~(u128)0; /* map_code()'s padding */
    if (map_index(m) != 0)
        goto err;
    return m;
err:
    free(stack);
    oc__acl6_map_free(m);
    return NULL;
}

void oc__acl6_map_free(map_t *m)
{
    if (m == NULL)
        return;
    free(m->ent);
    free(m->kx);
    free(m->start);
    free(m->code);
    free(m);
}

node_t *oc__acl6_find(const field_t *f, const uint32_t a[4], unsigned l)
{
    u128 s = to128(a) & mask128(l);
    size_t i;
    if (l == 0)
        return (node_t *)&f->n[0];
    i = lower(f, s, l);
    return i < f->cnt && f->n[i].start == s && f->n[i].len == l ? (node_t *)&f->n[i]
                                                                : NULL;
}
void oc__acl6_fields_free(field_t f[2])
{
    free(f[0].n);
    free(f[1].n);
    free(f[0].sp);
    free(f[1].sp);
    memset(f, 0, 2 * sizeof(*f));
}

/* ------------------------------------------------------------- in place */

/* Where prefix (@p a, @p l) of field @p f goes: *idx = its node (return 1),
 * or a new node at *idx under a parent with a spare number (return 0), or
 * it needs a full assignment (return -1). */
int oc__acl6_probe(const field_t *f, const uint32_t a[4], unsigned l,
                 size_t *idx)
{
    u128 s = to128(a) & mask128(l);
    size_t i;
    long p;

    if (l == 0) {
        *idx = 0;
        return 1;
    }
    i = lower(f, s, l);
    if (i < f->cnt && f->n[i].start == s && f->n[i].len == l) {
        *idx = i;
        return 1;
    }
    if (i < f->cnt && holds(&(node_t){.start = s, .len = (uint8_t)l},
                            f->n[i].start, f->n[i].len))
        return -1; /* it would hold existing prefixes */
    for (p = (long)i - 1; p > 0 && !holds(&f->n[p], s, l); p = f->n[p].parent)
        ;
    if (p < 0)
        p = 0;
    if (f->n[p].sp_used == f->n[p].sp_cnt)
        return -1;
    *idx = i;
    return 0;
}

oc_status_t oc__acl6_insert(field_t *f, const uint32_t a[4], unsigned l,
                          size_t i)
{
    u128 s = to128(a) & mask128(l);
    node_t x = {.start = s, .len = (uint8_t)l};
    long p;

    if (f->cnt == f->cap) {
        size_t cap = f->cap * 2 + 16;
        node_t *nn = realloc(f->n, cap * sizeof(*nn));
        if (nn == NULL)
            return OC_ERR_NO_MEMORY;
        f->n = nn;
        f->cap = cap;
    }
    for (p = (long)i - 1; p > 0 && !holds(&f->n[p], s, l); p = f->n[p].parent)
        ;
    if (p < 0)
        p = 0;
    if (f->nsp + 3 > f->capsp) {
        size_t cap = f->capsp * 2 + 16;
        spare_t *ns = realloc(f->sp, cap * sizeof(*ns));
        if (ns == NULL)
            return OC_ERR_NO_MEMORY;
        f->sp = ns;
        f->capsp = cap;
    }
    {
        spare_t *sp = &f->sp[f->n[p].sp_off + f->n[p].sp_used++];
        x.parent = (int32_t)p;
        x.code = sp->code;
        x.clen = sp->len;
    }
    /* room for three children of its own, numbered in two bits */
    x.sp_off = (uint32_t)f->nsp;
    x.sp_cnt = x.clen + 2 <= 32 ? 3 : 0;
    for (uint32_t j = 1; j <= x.sp_cnt; j++) {
        f->sp[f->nsp].len = (uint8_t)(x.clen + 2);
        f->sp[f->nsp++].code =
            x.code | (uint32_t)((uint64_t)j << (32 - x.clen - 2));
    }
    memmove(&f->n[i + 1], &f->n[i], (f->cnt - i) * sizeof(*f->n));
    f->n[i] = x;
    f->cnt++;
    for (size_t j = i + 1; j < f->cnt; j++)
        if (f->n[j].parent >= (int32_t)i)
            f->n[j].parent++;
    return OC_OK;
}
