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
 * A lookup maps the key's two addresses through a trie over the
 * elementary intervals the prefixes cut the address space into (the code
 * map, acl6_code.h), then runs the IPv4 burst lookup.  The maps and the IPv4 classifier
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
#include "acl6_code.h"
#include "acl_idx.h"
#include "acl_tree.h"

#include <stdlib.h>
#include <string.h>
#include <urcu-qsbr.h>

#include "util/log.h"

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
    uint32_t *hash;  /* id -> 1 + index in rules (0: empty), linear probing */
    size_t hmask;
    view_t *retired[RETIRE_MAX]; /* views to free (not their acl) */
    unsigned nretired;
    int stale;       /* a node may be missing from the published maps:
                        the next add assigns every code afresh */
};

static void hrebuild(oc_acl6_t *acl);

/* -------------------------------------------------------------- rules */

oc_status_t oc__acl6_rule_check(const oc_acl6_rule_t *r, const char **why)
{
    return oc__acl_fields_check(
        r->src_len > 128 || r->dst_len > 128 ? "prefix length above 128" : NULL,
        r->sport_lo, r->sport_hi, r->dport_lo, r->dport_hi, r->userdata, why);
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

/* ----------------------------------------------------------- the view */

static void view_free(view_t *v, int with_acl)
{
    if (v == NULL)
        return;
    if (with_acl)
        oc__acl_destroy(v->acl);
    oc__acl6_map_free(v->map[0]);
    oc__acl6_map_free(v->map[1]);
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

static void encode_rule(const oc_acl6_t *acl, const oc_acl6_rule_t *r,
                        oc_acl_rule_t *o)
{
    const node_t *s = oc__acl6_find(&acl->f[0], r->src, r->src_len);
    const node_t *d = oc__acl6_find(&acl->f[1], r->dst, r->dst_len);
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
    if ((st = oc__acl6_field_build(&f[0], rules, n, 0)) != OC_OK ||
        (st = oc__acl6_field_build(&f[1], rules, n, 1)) != OC_OK)
        goto err;
    st = OC_ERR_NO_MEMORY;
    v->map[0] = oc__acl6_map_build(&f[0]);
    v->map[1] = oc__acl6_map_build(&f[1]);
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
    oc__acl6_fields_free(acl->f);
    memcpy(acl->f, f, sizeof(f));
    free(acl->rules);
    acl->rules = keep;
    acl->nrules = n;
    hrebuild(acl);
    free(enc);
    return OC_OK;
err:
    free(keep);
    free(enc);
    oc__acl6_fields_free(f);
    view_free(v, 1);
    return st;
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
    acl->hmask = 15;
    while (acl->hmask + 1 < 2 * (size_t)max_rules)
        acl->hmask = acl->hmask * 2 + 1;
    acl->hash = calloc(acl->hmask + 1, sizeof(*acl->hash));
    if (acl->hash == NULL) {
        free(acl);
        return OC_ERR_NO_MEMORY;
    }
    st = rebuild_all(acl, NULL, 0);
    if (st != OC_OK) {
        free(acl->hash);
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
    oc__acl6_fields_free(acl->f);
    free(acl->rules);
    free(acl->hash);
    free(acl);
}

/* the id index (acl_idx.h, as acl.c's): rules by id in O(1) for add and del */
static uint32_t rule_id(const void *ctx, uint32_t pos)
{
    return ((const oc_acl6_t *)ctx)->rules[pos].id;
}

static size_t hfind(const oc_acl6_t *acl, uint32_t id) /* slot or SIZE_MAX */
{
    return oc__acl_idx_find(acl->hash, acl->hmask, id, rule_id, acl);
}

static void hput(oc_acl6_t *acl, uint32_t id, uint32_t idx)
{
    oc__acl_idx_put(acl->hash, acl->hmask, id, idx);
}

static void hdel(oc_acl6_t *acl, size_t s)
{
    oc__acl_idx_del(acl->hash, acl->hmask, s, rule_id, acl);
}

static void hrebuild(oc_acl6_t *acl)
{
    memset(acl->hash, 0, (acl->hmask + 1) * sizeof(*acl->hash));
    for (size_t i = 0; i < acl->nrules; i++)
        hput(acl, acl->rules[i].id, (uint32_t)i);
}

static long find_rule(const oc_acl6_t *acl, uint32_t id)
{
    size_t s = hfind(acl, id);
    return s == SIZE_MAX ? -1 : (long)acl->hash[s] - 1;
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
    ps = oc__acl6_probe(&acl->f[0], rule->src, rule->src_len, &is);
    pd = oc__acl6_probe(&acl->f[1], rule->dst, rule->dst_len, &id);
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
        if ((ps == 0 && oc__acl6_insert(&acl->f[0], rule->src, rule->src_len, is)) ||
            (pd == 0 && oc__acl6_insert(&acl->f[1], rule->dst, rule->dst_len, id)))
            return OC_ERR_NO_MEMORY;
        v = calloc(1, sizeof(*v));
        if (v == NULL)
            return OC_ERR_NO_MEMORY;
        v->acl = old->acl;
        v->map[0] = oc__acl6_map_build(&acl->f[0]);
        v->map[1] = oc__acl6_map_build(&acl->f[1]);
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
    (oc__acl6_find(&acl->f[0], rule->src, rule->src_len))->refs++;
    (oc__acl6_find(&acl->f[1], rule->dst, rule->dst_len))->refs++;
    acl->rules[acl->nrules] = *rule;
    hput(acl, rule->id, (uint32_t)acl->nrules++);
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
    (oc__acl6_find(&acl->f[0], r->src, r->src_len))->refs--;
    (oc__acl6_find(&acl->f[1], r->dst, r->dst_len))->refs--;
    hdel(acl, hfind(acl, id));
    if ((size_t)i != --acl->nrules) { /* the last rule moves into i */
        size_t s = hfind(acl, acl->rules[acl->nrules].id);
        acl->rules[i] = acl->rules[acl->nrules];
        acl->hash[s] = (uint32_t)i + 1;
    }
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
        b += oc__acl6_map_bytes(v->map[i]);
    return b;
}

oc_status_t oc__acl6_sync(oc_acl6_t *acl)
{
    return oc__acl_sync(acl->view->acl);
}

#define CHUNK MAP_BURST

static uint32_t lookup(oc_acl6_t *acl, const oc_acl6_key_t *keys, uint32_t n,
                       uint32_t *out, int scalar)
{
    const view_t *v = rcu_dereference(acl->view);
    oc_acl_key_t k4[CHUNK];
    u128 as[CHUNK], ad[CHUNK];
    uint32_t cs[CHUNK], cd[CHUNK];
    void (*burst)(const map_t *, const u128 *, uint32_t, uint32_t *) =
        oc__acl6_map_burst;
#if defined(__x86_64__)
    int p = __atomic_load_n(&oc__acl_path, __ATOMIC_RELAXED);
    if (p == OC__ACL_PATH_AVX512 || p == OC__ACL_PATH_AVX512_LEAF)
        burst = oc__acl6_map_burst_avx512;
    else if (p == OC__ACL_PATH_AVX2)
        burst = oc__acl6_map_burst_avx2;
#endif

    for (uint32_t c = 0; c < n; c += CHUNK) {
        uint32_t cn = n - c < CHUNK ? n - c : CHUNK;
        for (uint32_t i = 0; i < cn; i++) {
            as[i] = to128(keys[c + i].src);
            ad[i] = to128(keys[c + i].dst);
        }
        if (scalar) { /* the reference: one address at a time */
            for (uint32_t i = 0; i < cn; i++) {
                cs[i] = oc__acl6_map_code(v->map[0], as[i],
                                          oc__acl6_map_bucket(v->map[0], as[i]));
                cd[i] = oc__acl6_map_code(v->map[1], ad[i],
                                          oc__acl6_map_bucket(v->map[1], ad[i]));
            }
        } else { /* the path's burst (acl6_map.c) */
            burst(v->map[0], as, cn, cs);
            burst(v->map[1], ad, cn, cd);
        }
        for (uint32_t i = 0; i < cn; i++) {
            const oc_acl6_key_t *k = &keys[c + i];
            k4[i].src_ip = cs[i];
            k4[i].dst_ip = cd[i];
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
