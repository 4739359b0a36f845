/*
 * acl6.h — the IPv6 packet classifier: 5-tuple rules with IPv6 prefixes
 * (any length 0..128), first match by priority, the same burst lookups,
 * live updates and threading model as the IPv4 classifier (acl.h), which
 * it is built on: every distinct prefix of a field gets a 32-bit prefix
 * code (README.md, "IPv6 rules"), rules become IPv4-shaped rules on
 * codes, and a lookup maps each key's addresses to codes first.
 *
 * Threading: as acl.h (writer calls one thread at a time; lookups on
 * registered reader threads, oc__acl_reader_* of acl.h).  Trust: rules
 * from the operator, keys from packets (any value valid).
 * oc__acl6_match_linear() is the oracle.
 */
#ifndef OC_PKT_ACL6_H
#define OC_PKT_ACL6_H

#include "pkt/acl/acl.h"

/** One IPv6 rule.  Addresses are four 32-bit words in host order, word 0
 *  the most significant (2001:db8:: is {0x20010db8, 0, 0, 0}); bits past
 *  the prefix length are ignored.  Other fields as oc_acl_rule_t. */
typedef struct {
    uint32_t id;
    uint32_t priority;
    uint32_t src[4];
    uint32_t dst[4];
    uint8_t  src_len;   /**< 0..128 (0 = any) */
    uint8_t  dst_len;
    uint8_t  proto;
    uint8_t  proto_mask;
    uint16_t sport_lo, sport_hi;
    uint16_t dport_lo, dport_hi;
    uint32_t userdata;  /**< must not be OC_ACL_NO_MATCH */
} oc_acl6_rule_t;

/** An IPv6 lookup key, host order words as in oc_acl6_rule_t. */
typedef struct {
    uint32_t src[4];
    uint32_t dst[4];
    uint16_t sport;
    uint16_t dport;
    uint8_t  proto;
    uint8_t  pad[3];
} oc_acl6_key_t;

typedef struct oc_acl6 oc_acl6_t;

/** Whether the first @p len bits of @p a and @p b agree. */
static inline int oc__acl6_prefix_eq(const uint32_t a[4], const uint32_t b[4],
                                     unsigned len)
{
    for (unsigned w = 0; w < 4 && len > 0; w++) {
        unsigned l = len > 32 ? 32 : len;
        if ((a[w] ^ b[w]) & oc__acl_prefix_mask((uint8_t)l))
            return 0;
        len -= l;
    }
    return 1;
}

/** Whether @p r matches @p k (the definition of a match; scalar). */
static inline int oc__acl6_rule_matches(const oc_acl6_rule_t *r,
                                        const oc_acl6_key_t *k)
{
    return oc__acl6_prefix_eq(k->src, r->src, r->src_len) &&
           oc__acl6_prefix_eq(k->dst, r->dst, r->dst_len) &&
           k->sport >= r->sport_lo && k->sport <= r->sport_hi &&
           k->dport >= r->dport_lo && k->dport <= r->dport_hi &&
           ((k->proto ^ r->proto) & r->proto_mask) == 0;
}

/** Whether @p a wins over @p b (lower priority, then lower id). */
static inline int oc__acl6_rule_before(const oc_acl6_rule_t *a,
                                       const oc_acl6_rule_t *b)
{
    return a->priority < b->priority ||
           (a->priority == b->priority && a->id < b->id);
}

/** Check a rule: prefix lengths <= 128, lo <= hi, userdata not
 *  OC_ACL_NO_MATCH.  @return OC_OK or OC_ERR_INVALID_PARAM; @p why (may be
 *  NULL) gets a static reason. */
oc_status_t oc__acl6_rule_check(const oc_acl6_rule_t *r, const char **why);

/** The oracle: linear first-match scan over @p n rules in any order.
 *  @return the index of the winning rule, or -1.  Thread-safe (pure). */
long oc__acl6_match_linear(const oc_acl6_rule_t *rules, size_t n,
                           const oc_acl6_key_t *key);

/** Create an empty IPv6 classifier for up to @p max_rules rules (1 ..
 *  OC_ACL_MAX_RULES).  @return OC_OK (*out set), OC_ERR_INVALID_PARAM,
 *  OC_ERR_NO_MEMORY, OC_ERR_CONFIG (OC_ACL_PATH names no path here). */
oc_status_t oc__acl6_create(uint32_t max_rules, oc_acl6_t **out);

/** Free everything.  NULL is a no-op.  No lookup may run concurrently. */
void oc__acl6_destroy(oc_acl6_t *acl);

/**
 * Add one rule (copied).  Writer call; visible to lookups that start after
 * it returns; never blocks readers.  A rule whose prefixes already have
 * codes, or fit under an existing prefix's spare codes, is added in place
 * (as in acl.h); otherwise every code is reassigned and the tables rebuilt
 * before it returns (a full build, tens of ms at 10K rules).
 * @return OC_OK; OC_ERR_INVALID_PARAM (bad rule, or its id is present);
 *         OC_ERR_NO_MEMORY (max_rules reached, or allocation);
 *         OC_ERR_UNSUPPORTED (the field's prefixes nest too deeply for
 *         32-bit codes, logged; nothing changed).
 */
oc_status_t oc__acl6_add(oc_acl6_t *acl, const oc_acl6_rule_t *rule);

/** Remove the rule with @p id.  Writer call.
 *  @return OC_OK; OC_ERR_INVALID_PARAM (no rule with that id). */
oc_status_t oc__acl6_del(oc_acl6_t *acl, uint32_t id);

/** Replace the whole rule set (copied), built before it returns.  Writer
 *  call; all or nothing.  @return OC_OK; OC_ERR_INVALID_PARAM (bad rule,
 *  duplicate id); OC_ERR_NO_MEMORY; OC_ERR_UNSUPPORTED (as for add). */
oc_status_t oc__acl6_load(oc_acl6_t *acl, const oc_acl6_rule_t *rules,
                          size_t n);

/** Number of rules present.  Writer call. */
size_t oc__acl6_count(const oc_acl6_t *acl);

/** Copy up to @p cap present rules, in priority order.  Writer call.
 *  @return the number present (may exceed cap). */
size_t oc__acl6_rules(const oc_acl6_t *acl, oc_acl6_rule_t *out, size_t cap);

/** Classify @p n keys (out_userdata[i]: the first match's userdata or
 *  OC_ACL_NO_MATCH), on the path oc__acl_lookup_method() names.  Reader
 *  call; never allocates.  @return n. */
uint32_t oc__acl6_lookup_burst(oc_acl6_t *acl, const oc_acl6_key_t *keys,
                               uint32_t n, uint32_t *out_userdata);

/** Same answers, by the scalar reference walk.  Reader call. */
uint32_t oc__acl6_lookup_burst_scalar(oc_acl6_t *acl,
                                      const oc_acl6_key_t *keys, uint32_t n,
                                      uint32_t *out_userdata);

/** Bytes of lookup tables held (the code maps and the tables). */
size_t oc__acl6_mem_bytes(const oc_acl6_t *acl);

/** Wait until pending updates are in the read-optimized tables (acl.h's
 *  oc__acl_sync).  Writer call.  @return OC_OK or OC_ERR_NO_MEMORY. */
oc_status_t oc__acl6_sync(oc_acl6_t *acl);

#endif
