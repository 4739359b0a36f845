/*
 * rules.c — offcore-dp's live rule set: the classifier's writer side plus
 * one counter slot per rule (dp_int.h).  Control thread only, except
 * oc__dp_slot_count() and the slot table, which the metrics thread reads
 * under dp->lock.
 */
#include "dp_int.h"
#include "util/bytes.h"
#include "util/log.h"
#include "util/counter.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

oc_status_t oc__dp_slots_init(oc_dp_t *dp)
{
    uint64_t n = 2ull * dp->max_rules + 1; /* a full set live + one quarantined */
    if (n > OC_DP_UD_SLOT_MASK)
        n = OC_DP_UD_SLOT_MASK;
    dp->nslots = (uint32_t)n;
    dp->slots = calloc(n, sizeof(*dp->slots));
    dp->free_slots = malloc(n * sizeof(*dp->free_slots));
    dp->quar = malloc(n * sizeof(*dp->quar));
    dp->quar_seq = calloc(OC_DP_MAX_THREADS, sizeof(*dp->quar_seq));
    if (!dp->slots || !dp->free_slots || !dp->quar || !dp->quar_seq)
        return OC_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < n; i++)
        dp->free_slots[i] = (uint32_t)n - 1 - i;
    dp->nfree = (uint32_t)n;
    return OC_OK;
}

void oc__dp_slots_free(oc_dp_t *dp)
{
    free(dp->slots);
    free(dp->free_slots);
    free(dp->quar);
    free(dp->quar_seq);
}

oc_dp_ctr_t oc__dp_slot_count(const oc_dp_t *dp, uint32_t slot)
{
    oc_dp_ctr_t s = {0, 0};
    for (uint32_t q = 0; q < dp->nthreads && dp->w != NULL; q++) {
        if (dp->w[q].rule == NULL)
            continue;
        s.packets += OC__CTR_GET(dp->w[q].rule[slot].packets);
        s.bytes += OC__CTR_GET(dp->w[q].rule[slot].bytes);
    }
    return s;
}

/* Wait until every worker has finished the burst it is in (or sleeps), so
 * that no lookup result of a deleted rule is still being counted; then
 * the quarantined slots are free.  @return 0, or -1 after 2 s. */
static int reclaim(oc_dp_t *dp)
{
    struct timespec t0, now;

    if (dp->nquar == 0)
        return 0;
    for (uint32_t q = 0; q < dp->nstarted; q++)
        dp->quar_seq[q] = __atomic_load_n(&dp->w[q].seq, __ATOMIC_SEQ_CST);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t q = 0; q < dp->nstarted;) {
        if (__atomic_load_n(&dp->w[q].seq, __ATOMIC_SEQ_CST) != dp->quar_seq[q] ||
            __atomic_load_n(&dp->w[q].asleep, __ATOMIC_SEQ_CST)) {
            q++;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 2) {
            oc_error(OC_COMP_DP, "worker %u makes no progress: rule counter "
                     "slots not reclaimed", q);
            return -1;
        }
        nanosleep(&(struct timespec){0, 20000}, NULL);
    }
    pthread_mutex_lock(&dp->lock);
    for (uint32_t i = 0; i < dp->nquar; i++)
        dp->free_slots[dp->nfree++] = dp->quar[i];
    dp->nquar = 0;
    pthread_mutex_unlock(&dp->lock);
    return 0;
}

static long find_id(const oc_dp_t *dp, uint32_t id)
{
    for (uint32_t s = 0; s < dp->nslots; s++)
        if (dp->slots[s].used && dp->slots[s].rule.r.id == id)
            return s;
    return -1;
}

#define WHY(...) snprintf(why, whylen, __VA_ARGS__)

/* Add @p r (userdata set) to the classifiers of its families; all or
 * nothing. */
static oc_status_t acl_add(oc_dp_t *dp, const oc_dp_rule_t *r)
{
    uint8_t fam = oc__dp_rule_fam(r);
    oc_acl6_rule_t r6;
    oc_status_t st = OC_OK;

    if (fam & OC_DP_FAM_V4)
        st = oc__acl_add(dp->acl, &r->r);
    if (st == OC_OK && (fam & OC_DP_FAM_V6)) {
        oc__dp_rule_acl6(r, r->r.userdata, &r6);
        st = oc__acl6_add(dp->acl6, &r6);
        if (st != OC_OK && (fam & OC_DP_FAM_V4))
            oc__acl_del(dp->acl, r->r.id);
    }
    return st;
}

oc_status_t oc__dp_rule_add(oc_dp_t *dp, const oc_dp_rule_t *r, char *why,
                           size_t whylen)
{
    oc_dp_rule_t nr = *r;
    const char *bad = NULL;
    uint32_t slot;
    oc_status_t st;

    if (dp->nrules >= dp->max_rules) {
        WHY("%u rules already: max_rules reached", dp->nrules);
        return OC_ERR_NO_RESOURCE;
    }
    if (find_id(dp, r->r.id) >= 0) {
        WHY("a rule with id %u exists (del it first)", r->r.id);
        return OC_ERR_INVALID_PARAM;
    }
    if (dp->nfree == 0 && reclaim(dp) != 0) {
        WHY("no free counter slot (a worker is stuck)");
        return OC_ERR_NO_RESOURCE;
    }
    slot = dp->free_slots[dp->nfree - 1];
    nr.r.userdata = (uint32_t)r->action << OC_DP_UD_ACTION_SHIFT | slot;
    if (oc__acl_rule_check(&nr.r, &bad) != OC_OK) {
        WHY("invalid rule: %s", bad ? bad : "?");
        return OC_ERR_INVALID_PARAM;
    }
    if (oc__dp_rule_fam(&nr) & OC_DP_FAM_V6) {
        oc_acl6_rule_t r6;
        oc__dp_rule_acl6(&nr, nr.r.userdata, &r6);
        if (oc__acl6_rule_check(&r6, &bad) != OC_OK) {
            WHY("invalid rule: %s", bad ? bad : "?");
            return OC_ERR_INVALID_PARAM;
        }
    }
    pthread_mutex_lock(&dp->lock);
    dp->nfree--;
    dp->slots[slot].base = oc__dp_slot_count(dp, slot);
    dp->slots[slot].rule = nr;
    dp->slots[slot].used = true;
    pthread_mutex_unlock(&dp->lock);
    st = acl_add(dp, &nr);
    pthread_mutex_lock(&dp->lock);
    if (st != OC_OK) {
        dp->slots[slot].used = false;
        dp->free_slots[dp->nfree++] = slot;
        WHY("the classifier refused it: %s", oc_status_string(st));
    } else {
        dp->nrules++;
        dp->rule_ops++;
    }
    pthread_mutex_unlock(&dp->lock);
    return st;
}

oc_status_t oc__dp_rule_del(oc_dp_t *dp, uint32_t id, char *why, size_t whylen)
{
    long s = find_id(dp, id);
    oc_status_t st;

    if (s < 0) {
        WHY("no rule with id %u", id);
        return OC_ERR_INVALID_PARAM;
    }
    {
        uint8_t fam = oc__dp_rule_fam(&dp->slots[s].rule);
        st = OC_OK;
        if (fam & OC_DP_FAM_V6)
            st = oc__acl6_del(dp->acl6, id);
        if (st == OC_OK && (fam & OC_DP_FAM_V4))
            st = oc__acl_del(dp->acl, id);
    }
    if (st != OC_OK) {
        WHY("the classifier refused: %s", oc_status_string(st));
        return st;
    }
    pthread_mutex_lock(&dp->lock);
    dp->slots[s].used = false;
    dp->quar[dp->nquar++] = (uint32_t)s;
    dp->nrules--;
    dp->rule_ops++;
    pthread_mutex_unlock(&dp->lock);
    return OC_OK;
}

oc_status_t oc__dp_rules_replace(oc_dp_t *dp, const oc_dp_rule_t *rules,
                                size_t n, char *why, size_t whylen)
{
    oc_acl_rule_t *ar;
    oc_acl6_rule_t *ar6;
    uint32_t *slot;
    size_t n4 = 0, n6 = 0;
    oc_status_t st;

    if (n > dp->max_rules) {
        WHY("%zu rules, more than max_rules %u", n, dp->max_rules);
        return OC_ERR_NO_RESOURCE;
    }
    if (dp->nfree < n && reclaim(dp) != 0) {
        WHY("no free counter slots (a worker is stuck)");
        return OC_ERR_NO_RESOURCE;
    }
    if (dp->nfree < n) { /* cannot happen: nslots >= 2 * max_rules */
        WHY("out of counter slots");
        return OC_ERR_NO_RESOURCE;
    }
    ar = malloc((n ? n : 1) * sizeof(*ar));
    ar6 = malloc((n ? n : 1) * sizeof(*ar6));
    slot = malloc((n ? n : 1) * sizeof(*slot));
    if (ar == NULL || ar6 == NULL || slot == NULL) {
        free(ar);
        free(ar6);
        free(slot);
        WHY("out of memory");
        return OC_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        const char *bad = NULL;
        uint8_t fam = oc__dp_rule_fam(&rules[i]);
        uint32_t ud =
            (uint32_t)rules[i].action << OC_DP_UD_ACTION_SHIFT | dp->free_slots[dp->nfree - 1 - i];
        slot[i] = dp->free_slots[dp->nfree - 1 - i];
        if (fam & OC_DP_FAM_V4) {
            ar[n4] = rules[i].r;
            ar[n4].userdata = ud;
            if (oc__acl_rule_check(&ar[n4++], &bad) != OC_OK) {
                WHY("rule id %u: %s", rules[i].r.id, bad ? bad : "invalid");
                st = OC_ERR_INVALID_PARAM;
                goto out;
            }
        }
        if (fam & OC_DP_FAM_V6) {
            oc__dp_rule_acl6(&rules[i], ud, &ar6[n6]);
            if (oc__acl6_rule_check(&ar6[n6++], &bad) != OC_OK) {
                WHY("rule id %u: %s", rules[i].r.id, bad ? bad : "invalid");
                st = OC_ERR_INVALID_PARAM;
                goto out;
            }
        }
    }
    /* IPv6 first (it can refuse more); if IPv4 then refuses, the old
     * IPv6 set goes back */
    st = oc__acl6_load(dp->acl6, ar6, n6);
    if (st != OC_OK) {
        WHY("the IPv6 classifier refused the set (%s)%s",
            oc_status_string(st), st == OC_ERR_UNSUPPORTED ?
            ": its prefixes nest too deeply" : ": duplicate ids?");
        goto out;
    }
    st = oc__acl_load(dp->acl, ar, n4);
    if (st != OC_OK) {
        size_t m = 0;
        oc_acl6_rule_t *old = malloc((dp->nrules ? dp->nrules : 1) * sizeof(*old));
        WHY("the classifier refused the set (%s): duplicate ids?",
            oc_status_string(st));
        for (uint32_t s = 0; old && s < dp->nslots && m < dp->nrules; s++)
            if (dp->slots[s].used &&
                (oc__dp_rule_fam(&dp->slots[s].rule) & OC_DP_FAM_V6))
                oc__dp_rule_acl6(&dp->slots[s].rule,
                                 dp->slots[s].rule.r.userdata, &old[m++]);
        if (old == NULL || oc__acl6_load(dp->acl6, old, m) != OC_OK)
            oc_error(OC_COMP_DP, "rules load: the IPv6 rules could not be "
                     "restored after the IPv4 classifier refused the set");
        free(old);
        goto out;
    }
    pthread_mutex_lock(&dp->lock);
    for (uint32_t s = 0; s < dp->nslots; s++)
        if (dp->slots[s].used) {
            dp->slots[s].used = false;
            dp->quar[dp->nquar++] = s;
        }
    dp->nfree -= (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        oc_dp_slot_t *sl = &dp->slots[slot[i]];
        sl->base = oc__dp_slot_count(dp, slot[i]);
        sl->rule = rules[i];
        sl->rule.r.userdata = ar[i].userdata;
        sl->used = true;
    }
    dp->nrules = (uint32_t)n;
    dp->rule_ops++;
    pthread_mutex_unlock(&dp->lock);
out:
    free(ar);
    free(ar6);
    free(slot);
    return st;
}

static int cmp_slot(const void *a, const void *b)
{
    const oc_dp_rule_t *x = &((const oc_dp_slot_t *)a)->rule;
    const oc_dp_rule_t *y = &((const oc_dp_slot_t *)b)->rule;
    return oc__acl_rule_before(&x->r, &y->r) ? -1
           : oc__acl_rule_before(&y->r, &x->r) ? 1
                                              : 0;
}

void oc__dp_rules_print(oc_dp_t *dp, FILE *out)
{
    oc_dp_slot_t *list;
    uint32_t n = 0;

    pthread_mutex_lock(&dp->lock);
    list = malloc((dp->nrules ? dp->nrules : 1) * sizeof(*list));
    if (list == NULL) {
        pthread_mutex_unlock(&dp->lock);
        fprintf(out, "# out of memory\n");
        return;
    }
    for (uint32_t s = 0; s < dp->nslots && n < dp->nrules; s++)
        if (dp->slots[s].used) {
            oc_dp_ctr_t c = oc__dp_slot_count(dp, s);
            list[n] = dp->slots[s];
            list[n].base.packets = c.packets - dp->slots[s].base.packets;
            list[n].base.bytes = c.bytes - dp->slots[s].base.bytes;
            n++;
        }
    pthread_mutex_unlock(&dp->lock);
    qsort(list, n, sizeof(*list), cmp_slot);
    for (uint32_t i = 0; i < n; i++) {
        char text[256];
        oc__dp_rule_format(&list[i].rule, text, sizeof(text));
        fprintf(out, "%s packets=%llu bytes=%llu\n", text,
                (unsigned long long)list[i].base.packets,
                (unsigned long long)list[i].base.bytes);
    }
    free(list);
}
