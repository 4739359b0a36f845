/*
 * acl6.c — the IPv6 classifier (acl6.h) on top of the IPv4 one (acl.c).
 *
 * The distinct prefixes of a field (source, destination) nest: any two
 * are disjoint or one holds the other, so they form a tree under the
 * root /0.  Each node gets a 32-bit prefix code: the codewords of its
 * children (and of a few spare codes for children added later) form a
 * prefix-free set under its own code in which the all-zero word means
 * "none of my children", chosen so that the deepest code stays as short
 * as it can (assign()).  An address maps to the code of the deepest
 * prefix holding it, zero-padded: that extends the codes of exactly the
 * prefixes that hold the address (its ancestors); a descendant's codeword
 * is non-zero where the address has zeros, any other node diverges
 * earlier.  So an IPv6 rule is the IPv4-shaped rule on (code, code
 * length) of its prefixes, and matching is unchanged: every lookup path
 * of the IPv4 classifier (scalar, avx512-leaf, avx512) serves IPv6 as it
 * is, and the oracle tests hold it to the IPv6 definition of a match.
 *
 * A lookup maps the key's two addresses with a binary search over the
 * elementary intervals the prefixes cut the address space into (the code
 * map), then runs the IPv4 burst lookup.  The maps and the IPv4 classifier
 * are published together (one RCU pointer to a view), so a reader never
 * mixes codes of two assignments.  Adding a rule whose prefix is new takes
 * a spare code of its parent when there is one (a new map is
 * published first, then the rule is added in place: an address of the new
 * prefix maps to a code that extends its parent's, so until the rule
 * arrives it matches what it matched before); otherwise (no spare code,
 * or the new prefix holds existing ones) every code is assigned afresh and
 * a new IPv4 classifier is built and swapped in, with spare room again.
 * Codes are 32 bits: prefixes that nest more than about 32 deep in one
 * field cannot be coded (OC_ERR_UNSUPPORTED, logged).
 *
 * Threading: acl6.h.  Deleted rules' prefixes keep their codes until the
 * next full assignment (harmless: a code without rules matches nothing).
 */
#include "pkt/acl/acl6.h"

#include <stdlib.h>
#include <string.h>
#include <urcu-qsbr.h>

#include "util/log.h"

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
} map_t;

typedef struct {
    oc_acl_t *acl;   /* the IPv4 classifier on codes */
    map_t *map[2];   /* source, destination */
} view_t;

#define RETIRE_MAX 8

struct oc_acl6 {
    view_t *view;    /* RCU */
    uint32_t max_rules;
    field_t f[2];
    oc_acl6_rule_t *rules; /* present rules, unordered */
    size_t nrules;
    view_t *retired[RETIRE_MAX]; /* views to free (not their acl) */
    unsigned nretired;
    int stale;       /* a node may be missing from the published maps:
                        the next add assigns every code afresh */
};

/* -------------------------------------------------------------- rules */

oc_status_t oc__acl6_rule_check(const oc_acl6_rule_t *r, const char **why)
{
    const char *w = NULL;
    if (r->src_len > 128 || r->dst_len > 128)
        w = "prefix length above 128";
    else if (r->sport_lo > r->sport_hi)
        w = "source port range with lo > hi";
    else if (r->dport_lo > r->dport_hi)
        w = "destination port range with lo > hi";
    else if (r->userdata == OC_ACL_NO_MATCH)
        w = "userdata is the reserved no-match value";
    if (why != NULL)
        *why = w;
    return w == NULL ? OC_OK : OC_ERR_INVALID_PARAM;
}

long oc__acl6_match_linear(const oc_acl6_rule_t *rules, size_t n,
                           const oc_acl6_key_t *key)
{
    long best = -1;
    for (size_t i = 0; i < n; i++)
        if (oc__acl6_rule_matches(&rules[i], key) &&
            (best < 0 || oc__acl6_rule_before(&rules[i], &rules[best])))
            best = (long)i;
    return best;
}

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

static oc_status_t field_build(field_t *f, const oc_acl6_rule_t *rules,
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

/* The code map of a field: the elementary intervals in address order. */
static map_t *map_build(const field_t *f)
{
    map_t *m = calloc(1, sizeof(*m));
    int32_t *stack = calloc(f->cnt, sizeof(*stack));
    size_t top = 0, cap = 2 * f->cnt + 1;

    if (m == NULL || stack == NULL)
        goto err;
    m->start = calloc(cap, sizeof(*m->start));
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
    return m;
err:
    free(stack);
    if (m != NULL) {
        free(m->start);
        free(m->code);
    }
    free(m);
    return NULL;
}

static void map_free(map_t *m)
{
    if (m == NULL)
        return;
    free(m->start);
    free(m->code);
    free(m);
}

static inline uint32_t map_code(const map_t *m, u128 a)
{
    /* the last interval starting at or before a (start[0] == 0) */
    const u128 *s = m->start;
    uint32_t n = m->cnt;
    while (n > 1) {
        uint32_t half = n / 2;
        s = s[half] <= a ? s + half : s;
        n -= half;
    }
    return m->code[s - m->start];
}

/* ----------------------------------------------------------- the view */

static void view_free(view_t *v, int with_acl)
{
    if (v == NULL)
        return;
    if (with_acl)
        oc__acl_destroy(v->acl);
    map_free(v->map[0]);
    map_free(v->map[1]);
    free(v);
}

static void flush_retired(oc_acl6_t *acl)
{
    if (acl->nretired == 0)
        return;
    synchronize_rcu();
    for (unsigned i = 0; i < acl->nretired; i++)
        view_free(acl->retired[i], 0);
    acl->nretired = 0;
}

static const node_t *find(const field_t *f, const uint32_t a[4], unsigned l)
{
    u128 s = to128(a) & mask128(l);
    size_t i;
    if (l == 0)
        return &f->n[0];
    i = lower(f, s, l);
    return i < f->cnt && f->n[i].start == s && f->n[i].len == l ? &f->n[i]
                                                                : NULL;
}

static void encode_rule(const oc_acl6_t *acl, const oc_acl6_rule_t *r,
                        oc_acl_rule_t *o)
{
    const node_t *s = find(&acl->f[0], r->src, r->src_len);
    const node_t *d = find(&acl->f[1], r->dst, r->dst_len);
    memset(o, 0, sizeof(*o));
    o->id = r->id;
    o->priority = r->priority;
    o->src_ip = s->code;
    o->src_len = s->clen;
    o->dst_ip = d->code;
    o->dst_len = d->clen;
    o->proto = r->proto;
    o->proto_mask = r->proto_mask;
    o->sport_lo = r->sport_lo;
    o->sport_hi = r->sport_hi;
    o->dport_lo = r->dport_lo;
    o->dport_hi = r->dport_hi;
    o->userdata = r->userdata;
}

static void fields_free(field_t f[2])
{
    free(f[0].n);
    free(f[1].n);
    free(f[0].sp);
    free(f[1].sp);
    memset(f, 0, 2 * sizeof(*f));
}

/* Assign every code afresh for @p rules, build a new IPv4 classifier and
 * views, and swap them in.  All or nothing. */
static oc_status_t rebuild_all(oc_acl6_t *acl, const oc_acl6_rule_t *rules,
                               size_t n)
{
    field_t f[2] = {{0}}, oldf[2];
    view_t *v = calloc(1, sizeof(*v)), *old;
    oc_acl_rule_t *enc = malloc((n ? n : 1) * sizeof(*enc));
    oc_acl6_rule_t *keep = NULL;
    oc_status_t st = OC_ERR_NO_MEMORY;

    if (v == NULL || enc == NULL)
        goto err;
    if ((st = field_build(&f[0], rules, n, 0)) != OC_OK ||
        (st = field_build(&f[1], rules, n, 1)) != OC_OK)
        goto err;
    st = OC_ERR_NO_MEMORY;
    v->map[0] = map_build(&f[0]);
    v->map[1] = map_build(&f[1]);
    keep = malloc((size_t)acl->max_rules * sizeof(*keep));
    if (v->map[0] == NULL || v->map[1] == NULL || keep == NULL)
        goto err;
    memcpy(oldf, acl->f, sizeof(oldf));
    memcpy(acl->f, f, sizeof(f));
    for (size_t i = 0; i < n; i++)
        encode_rule(acl, &rules[i], &enc[i]);
    memcpy(acl->f, oldf, sizeof(oldf));
    if ((st = oc__acl_create(acl->max_rules, &v->acl)) != OC_OK ||
        (st = oc__acl_load(v->acl, enc, n)) != OC_OK)
        goto err;
    if (n > 0)
        memcpy(keep, rules, n * sizeof(*keep));
    old = acl->view;
    rcu_assign_pointer(acl->view, v);
    if (old != NULL) {
        synchronize_rcu(); /* no reader holds old or a retired view now */
        for (unsigned i = 0; i < acl->nretired; i++)
            view_free(acl->retired[i], 0);
        acl->nretired = 0;
        view_free(old, 1);
    }
    acl->stale = 0;
    fields_free(acl->f);
    memcpy(acl->f, f, sizeof(f));
    free(acl->rules);
    acl->rules = keep;
    acl->nrules = n;
    free(enc);
    return OC_OK;
err:
    free(keep);
    free(enc);
    fields_free(f);
    view_free(v, 1);
    return st;
}

/* ------------------------------------------------------------- in place */

/* Where prefix (@p a, @p l) of field @p f goes: *idx = its node (return 1),
 * or a new node at *idx under a parent with a spare number (return 0), or
 * it needs a full assignment (return -1). */
static int probe(const field_t *f, const uint32_t a[4], unsigned l,
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

static oc_status_t insert(field_t *f, const uint32_t a[4], unsigned l,
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

/* ---------------------------------------------------------------- API */

oc_status_t oc__acl6_create(uint32_t max_rules, oc_acl6_t **out)
{
    oc_acl6_t *acl;
    oc_status_t st;

    if (max_rules == 0 || max_rules > OC_ACL_MAX_RULES || out == NULL)
        return OC_ERR_INVALID_PARAM;
    acl = calloc(1, sizeof(*acl));
    if (acl == NULL)
        return OC_ERR_NO_MEMORY;
    acl->max_rules = max_rules;
    st = rebuild_all(acl, NULL, 0);
    if (st != OC_OK) {
        free(acl);
        return st;
    }
    *out = acl;
    return OC_OK;
}

void oc__acl6_destroy(oc_acl6_t *acl)
{
    if (acl == NULL)
        return;
    for (unsigned i = 0; i < acl->nretired; i++)
        view_free(acl->retired[i], 0);
    view_free(acl->view, 1);
    fields_free(acl->f);
    free(acl->rules);
    free(acl);
}

static long find_rule(const oc_acl6_t *acl, uint32_t id)
{
    for (size_t i = 0; i < acl->nrules; i++)
        if (acl->rules[i].id == id)
            return (long)i;
    return -1;
}

oc_status_t oc__acl6_add(oc_acl6_t *acl, const oc_acl6_rule_t *rule)
{
    size_t is, id;
    int ps, pd;
    oc_acl_rule_t enc;
    view_t *v, *old = acl->view;
    oc_status_t st;

    if (oc__acl6_rule_check(rule, NULL) != OC_OK ||
        find_rule(acl, rule->id) >= 0)
        return OC_ERR_INVALID_PARAM;
    if (acl->nrules >= acl->max_rules)
        return OC_ERR_NO_MEMORY;
    ps = probe(&acl->f[0], rule->src, rule->src_len, &is);
    pd = probe(&acl->f[1], rule->dst, rule->dst_len, &id);
    if (ps < 0 || pd < 0 || acl->stale) {
        oc_acl6_rule_t *all = malloc((acl->nrules + 1) * sizeof(*all));
        if (all == NULL)
            return OC_ERR_NO_MEMORY;
        memcpy(all, acl->rules, acl->nrules * sizeof(*all));
        all[acl->nrules] = *rule;
        st = rebuild_all(acl, all, acl->nrules + 1);
        free(all);
        return st;
    }
    if (ps == 0 || pd == 0) { /* new codes: publish the new maps first */
        if (acl->nretired == RETIRE_MAX)
            flush_retired(acl);
        acl->stale = 1; /* until the new maps are out */
        if ((ps == 0 && insert(&acl->f[0], rule->src, rule->src_len, is)) ||
            (pd == 0 && insert(&acl->f[1], rule->dst, rule->dst_len, id)))
            return OC_ERR_NO_MEMORY;
        v = calloc(1, sizeof(*v));
        if (v == NULL)
            return OC_ERR_NO_MEMORY;
        v->acl = old->acl;
        v->map[0] = map_build(&acl->f[0]);
        v->map[1] = map_build(&acl->f[1]);
        if (v->map[0] == NULL || v->map[1] == NULL) {
            view_free(v, 0);
            return OC_ERR_NO_MEMORY;
        }
        acl->stale = 0;
        rcu_assign_pointer(acl->view, v);
        acl->retired[acl->nretired++] = old;
    }
    encode_rule(acl, rule, &enc);
    st = oc__acl_add(acl->view->acl, &enc);
    if (st != OC_OK)
        return st;
    ((node_t *)find(&acl->f[0], rule->src, rule->src_len))->refs++;
    ((node_t *)find(&acl->f[1], rule->dst, rule->dst_len))->refs++;
    acl->rules[acl->nrules++] = *rule;
    return OC_OK;
}

oc_status_t oc__acl6_del(oc_acl6_t *acl, uint32_t id)
{
    long i = find_rule(acl, id);
    const oc_acl6_rule_t *r;
    oc_status_t st;

    if (i < 0)
        return OC_ERR_INVALID_PARAM;
    st = oc__acl_del(acl->view->acl, id);
    if (st != OC_OK)
        return st;
    r = &acl->rules[i];
    ((node_t *)find(&acl->f[0], r->src, r->src_len))->refs--;
    ((node_t *)find(&acl->f[1], r->dst, r->dst_len))->refs--;
    acl->rules[i] = acl->rules[--acl->nrules];
    return OC_OK;
}

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = ((const oc_acl6_rule_t *)a)->id;
    uint32_t y = ((const oc_acl6_rule_t *)b)->id;
    return x < y ? -1 : x > y;
}

oc_status_t oc__acl6_load(oc_acl6_t *acl, const oc_acl6_rule_t *rules,
                          size_t n)
{
    oc_acl6_rule_t *s;
    oc_status_t st = OC_OK;

    if (n > acl->max_rules)
        return OC_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        if (oc__acl6_rule_check(&rules[i], NULL) != OC_OK)
            return OC_ERR_INVALID_PARAM;
    s = malloc((n ? n : 1) * sizeof(*s));
    if (s == NULL)
        return OC_ERR_NO_MEMORY;
    memcpy(s, rules, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_id);
    for (size_t i = 1; i < n; i++)
        if (s[i].id == s[i - 1].id)
            st = OC_ERR_INVALID_PARAM;
    free(s);
    return st != OC_OK ? st : rebuild_all(acl, rules, n);
}

size_t oc__acl6_count(const oc_acl6_t *acl) { return acl->nrules; }

static int cmp_rule(const void *a, const void *b)
{
    return oc__acl6_rule_before(a, b) ? -1 : oc__acl6_rule_before(b, a);
}

size_t oc__acl6_rules(const oc_acl6_t *acl, oc_acl6_rule_t *out, size_t cap)
{
    oc_acl6_rule_t *s = malloc((acl->nrules ? acl->nrules : 1) * sizeof(*s));
    size_t n = acl->nrules < cap ? acl->nrules : cap;

    if (s == NULL) { /* unordered rather than nothing */
        memcpy(out, acl->rules, n * sizeof(*out));
        return acl->nrules;
    }
    memcpy(s, acl->rules, acl->nrules * sizeof(*s));
    qsort(s, acl->nrules, sizeof(*s), cmp_rule);
    memcpy(out, s, n * sizeof(*out));
    free(s);
    return acl->nrules;
}

size_t oc__acl6_mem_bytes(const oc_acl6_t *acl)
{
    const view_t *v = acl->view;
    size_t b = oc__acl_mem_bytes(v->acl);
    for (int i = 0; i < 2; i++)
        b += v->map[i]->cnt * (sizeof(u128) + sizeof(uint32_t));
    return b;
}

oc_status_t oc__acl6_sync(oc_acl6_t *acl)
{
    return oc__acl_sync(acl->view->acl);
}

#define CHUNK 64

static uint32_t lookup(oc_acl6_t *acl, const oc_acl6_key_t *keys, uint32_t n,
                       uint32_t *out, int scalar)
{
    const view_t *v = rcu_dereference(acl->view);
    oc_acl_key_t k4[CHUNK];

    for (uint32_t c = 0; c < n; c += CHUNK) {
        uint32_t cn = n - c < CHUNK ? n - c : CHUNK;
        for (uint32_t i = 0; i < cn; i++) {
            const oc_acl6_key_t *k = &keys[c + i];
            k4[i].src_ip = map_code(v->map[0], to128(k->src));
            k4[i].dst_ip = map_code(v->map[1], to128(k->dst));
            k4[i].sport = k->sport;
            k4[i].dport = k->dport;
            k4[i].proto = k->proto;
        }
        if (scalar)
            oc__acl_lookup_burst_scalar(v->acl, k4, cn, out + c);
        else
            oc__acl_lookup_burst(v->acl, k4, cn, out + c);
    }
    return n;
}

uint32_t oc__acl6_lookup_burst(oc_acl6_t *acl, const oc_acl6_key_t *keys,
                               uint32_t n, uint32_t *out_userdata)
{
    return lookup(acl, keys, n, out_userdata, 0);
}

uint32_t oc__acl6_lookup_burst_scalar(oc_acl6_t *acl,
                                      const oc_acl6_key_t *keys, uint32_t n,
                                      uint32_t *out_userdata)
{
    return lookup(acl, keys, n, out_userdata, 1);
}
