/*
 * acl.c — the classifier object (first version: copy-on-write rule array,
 * linear first-match lookups; the read-optimized tables come next).
 *
 * Threading: see acl.h.  Readers follow an RCU pointer to an immutable
 * table; the writer builds a new one and swaps it in, reclaiming the old
 * one after a grace period (liburcu QSBR).
 */
#include "pkt/acl/acl.h"

#include <stdlib.h>
#include <string.h>
#include <urcu-qsbr.h>

typedef struct {
    size_t n;
    oc_acl_rule_t rules[];
} table_t;

struct oc_acl {
    uint32_t max_rules;
    table_t *cur; /* RCU-protected */
};

void oc_acl_reader_register(void) { rcu_register_thread(); }
void oc_acl_reader_unregister(void) { rcu_unregister_thread(); }
void oc_acl_reader_quiescent(void) { rcu_quiescent_state(); }
void oc_acl_reader_offline(void) { rcu_thread_offline(); }
void oc_acl_reader_online(void) { rcu_thread_online(); }

static table_t *table_new(size_t n)
{
    table_t *t = malloc(sizeof(*t) + n * sizeof(oc_acl_rule_t));
    if (t != NULL)
        t->n = n;
    return t;
}

oc_status_t oc_acl_create(uint32_t max_rules, oc_acl_t **out)
{
    oc_acl_t *acl;
    if (max_rules == 0 || max_rules > OC_ACL_MAX_RULES || out == NULL)
        return OC_ERR_INVALID_PARAM;
    acl = calloc(1, sizeof(*acl));
    if (acl == NULL)
        return OC_ERR_NO_MEMORY;
    acl->cur = table_new(0);
    if (acl->cur == NULL) {
        free(acl);
        return OC_ERR_NO_MEMORY;
    }
    acl->max_rules = max_rules;
    *out = acl;
    return OC_OK;
}

void oc_acl_destroy(oc_acl_t *acl)
{
    if (acl == NULL)
        return;
    free(acl->cur);
    free(acl);
}

static void publish(oc_acl_t *acl, table_t *t)
{
    table_t *old = rcu_xchg_pointer(&acl->cur, t);
    synchronize_rcu();
    free(old);
}

oc_status_t oc_acl_add(oc_acl_t *acl, const oc_acl_rule_t *rule)
{
    table_t *old = acl->cur, *t;
    if (oc_acl_rule_check(rule, NULL) != OC_OK)
        return OC_ERR_INVALID_PARAM;
    for (size_t i = 0; i < old->n; i++)
        if (old->rules[i].id == rule->id)
            return OC_ERR_INVALID_PARAM;
    if (old->n >= acl->max_rules)
        return OC_ERR_NO_MEMORY;
    t = table_new(old->n + 1);
    if (t == NULL)
        return OC_ERR_NO_MEMORY;
    memcpy(t->rules, old->rules, old->n * sizeof(oc_acl_rule_t));
    t->rules[old->n] = *rule;
    publish(acl, t);
    return OC_OK;
}

oc_status_t oc_acl_del(oc_acl_t *acl, uint32_t id)
{
    table_t *old = acl->cur, *t;
    size_t k = 0;
    for (size_t i = 0; i < old->n; i++)
        if (old->rules[i].id == id)
            goto found;
    return OC_ERR_INVALID_PARAM;
found:
    t = table_new(old->n - 1);
    if (t == NULL)
        return OC_ERR_NO_MEMORY;
    for (size_t i = 0; i < old->n; i++)
        if (old->rules[i].id != id)
            t->rules[k++] = old->rules[i];
    publish(acl, t);
    return OC_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* whether two of the @p n rules share an id (allocates; -1 on no memory
 * is reported as a duplicate-free answer would be wrong, so it fails) */
static int oc__acl_dup_ids(const oc_acl_rule_t *rules, size_t n)
{
    uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    int dup = 0;
    if (ids == NULL)
        return 1;
    for (size_t i = 0; i < n; i++)
        ids[i] = rules[i].id;
    qsort(ids, n, sizeof(*ids), cmp_u32);
    for (size_t i = 1; i < n && !dup; i++)
        dup = ids[i] == ids[i - 1];
    free(ids);
    return dup;
}

static int cmp_rule(const void *a, const void *b)
{
    const oc_acl_rule_t *x = a, *y = b;
    return oc_acl_rule_before(x, y) ? -1 : oc_acl_rule_before(y, x) ? 1 : 0;
}

oc_status_t oc_acl_load(oc_acl_t *acl, const oc_acl_rule_t *rules, size_t n)
{
    table_t *t;
    if (n > acl->max_rules)
        return OC_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        if (oc_acl_rule_check(&rules[i], NULL) != OC_OK)
            return OC_ERR_INVALID_PARAM;
    t = table_new(n);
    if (t == NULL)
        return OC_ERR_NO_MEMORY;
    memcpy(t->rules, rules, n * sizeof(*rules));
    qsort(t->rules, n, sizeof(*rules), cmp_rule);
    if (oc__acl_dup_ids(rules, n)) {
        free(t);
        return OC_ERR_INVALID_PARAM;
    }
    publish(acl, t);
    return OC_OK;
}

size_t oc_acl_count(const oc_acl_t *acl) { return acl->cur->n; }

size_t oc_acl_rules(const oc_acl_t *acl, oc_acl_rule_t *out, size_t cap)
{
    const table_t *t = acl->cur;
    size_t n = t->n < cap ? t->n : cap;
    memcpy(out, t->rules, n * sizeof(*out));
    qsort(out, n, sizeof(*out), cmp_rule);
    return t->n;
}

uint32_t oc_acl_lookup_burst_scalar(oc_acl_t *acl, const oc_acl_key_t *keys,
                                    uint32_t n, uint32_t *out_userdata)
{
    table_t *t = rcu_dereference(acl->cur);
    for (uint32_t i = 0; i < n; i++) {
        long w = oc_acl_match_linear(t->rules, t->n, &keys[i]);
        out_userdata[i] = w < 0 ? OC_ACL_NO_MATCH : t->rules[w].userdata;
    }
    return n;
}

uint32_t oc_acl_lookup_burst(oc_acl_t *acl, const oc_acl_key_t *keys,
                             uint32_t n, uint32_t *out_userdata)
{
    return oc_acl_lookup_burst_scalar(acl, keys, n, out_userdata);
}

size_t oc_acl_mem_bytes(const oc_acl_t *acl)
{
    return sizeof(table_t) + acl->cur->n * sizeof(oc_acl_rule_t);
}

oc_status_t oc_acl_sync(oc_acl_t *acl) { return OC_OK; }
