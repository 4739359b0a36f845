/*
 * acl.h — the packet classifier: IPv4 5-tuple rules, first match by
 * priority, burst lookups that run while rules are added and removed.
 *
 * Threading: the writer calls (oc__acl_add/del/load/rules) one thread at a
 * time, never blocking readers; oc__acl_lookup_burst() on any number of
 * registered reader threads, which report quiescent states (RCU, QSBR) and
 * go offline around blocking waits; no reader inside a lookup at destroy.
 * Create it from the control thread (the rebuild thread inherits its
 * affinity).  The full model: src/pkt/acl/README.md, "Threading".
 * Trust: rules come from the operator, validated but trusted to be wanted;
 * keys come from packets, any value valid.  oc__acl_match_linear() is the
 * oracle the tests compare every optimized lookup against.
 */
#ifndef OC_PKT_ACL_H
#define OC_PKT_ACL_H

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>

/** out_userdata value of a key that matched no rule. */
#define OC_ACL_NO_MATCH UINT32_MAX

/** Rule actions.  The classifier itself does not interpret userdata; these
 *  are for callers (offcore-dp) that encode an action in it. */
typedef enum {
    OC_ACL_ALLOW = 0,
    OC_ACL_DENY  = 1,
    OC_ACL_COUNT = 2, /**< count the packet (per-rule counters), then allow */
} oc_acl_action_t;

/** One rule.  Everything in host byte order.  A key matches when every
 *  field matches; among matching rules the lowest priority value wins,
 *  ties go to the lowest id. */
typedef struct {
    uint32_t id;        /**< caller's, unique within a classifier */
    uint32_t priority;  /**< lower value wins */
    uint32_t src_ip;    /**< prefix; bits past src_len are ignored */
    uint32_t dst_ip;
    uint8_t  src_len;   /**< 0..32 (0 = any) */
    uint8_t  dst_len;
    uint8_t  proto;     /**< matches when (key.proto & proto_mask) == (proto & proto_mask) */
    uint8_t  proto_mask;/**< 0 = any protocol, 0xff = exactly proto */
    uint16_t sport_lo, sport_hi; /**< inclusive range, lo <= hi */
    uint16_t dport_lo, dport_hi;
    uint32_t userdata;  /**< returned on match; must not be OC_ACL_NO_MATCH */
} oc_acl_rule_t;

/** A lookup key (the packet's 5-tuple), host byte order. */
typedef struct {
    uint32_t src_ip;
    uint32_t dst_ip;
    uint16_t sport;
    uint16_t dport;
    uint8_t  proto;
    uint8_t  pad[3];
} oc_acl_key_t;

typedef struct oc_acl oc_acl_t;

/** Largest max_rules oc__acl_create() accepts. */
#define OC_ACL_MAX_RULES (1u << 22)

/** Bits of a prefix of length @p len (0..32). */
static inline uint32_t oc__acl_prefix_mask(uint8_t len)
{
    return len == 0 ? 0 : len >= 32 ? UINT32_MAX : ~(UINT32_MAX >> len);
}

/** Whether @p r matches @p k (the definition of a match; scalar). */
static inline int oc__acl_rule_matches(const oc_acl_rule_t *r,
                                      const oc_acl_key_t *k)
{
    uint32_t sm = oc__acl_prefix_mask(r->src_len);
    uint32_t dm = oc__acl_prefix_mask(r->dst_len);
    return ((k->src_ip ^ r->src_ip) & sm) == 0 &&
           ((k->dst_ip ^ r->dst_ip) & dm) == 0 && k->sport >= r->sport_lo &&
           k->sport <= r->sport_hi && k->dport >= r->dport_lo &&
           k->dport <= r->dport_hi &&
           ((k->proto ^ r->proto) & r->proto_mask) == 0;
}

/** Whether @p a wins over @p b (lower priority, then lower id). */
static inline int oc__acl_rule_before(const oc_acl_rule_t *a,
                                     const oc_acl_rule_t *b)
{
    return a->priority < b->priority ||
           (a->priority == b->priority && a->id < b->id);
}

/** Check a rule: prefix lengths <= 32, lo <= hi, userdata !=
 *  OC_ACL_NO_MATCH.  @return OC_OK or OC_ERR_INVALID_PARAM; @p why (may be
 *  NULL) gets a static reason string. */
oc_status_t oc__acl_rule_check(const oc_acl_rule_t *r, const char **why);

/** The checks an IPv4 and an IPv6 rule share (oc__acl_rule_check and
 *  oc__acl6_rule_check; only their prefix limits differ): @p prefix_bad,
 *  the caller's static reason when a prefix length is over its limit, else
 *  NULL; then lo <= hi in both port ranges and userdata !=
 *  OC_ACL_NO_MATCH.  @return OC_OK or OC_ERR_INVALID_PARAM; @p why (may be
 *  NULL) gets the first failing check's static reason, NULL on OC_OK. */
oc_status_t oc__acl_fields_check(const char *prefix_bad, uint16_t sport_lo,
                                 uint16_t sport_hi, uint16_t dport_lo,
                                 uint16_t dport_hi, uint32_t userdata,
                                 const char **why);

/**
 * The oracle: linear first-match scan over @p n rules in any order.
 * @return index into @p rules of the winning rule, or -1 if none matches.
 * Thread-safe (pure).
 */
long oc__acl_match_linear(const oc_acl_rule_t *rules, size_t n,
                         const oc_acl_key_t *key);

/** Linear first-match scan over rules already sorted in priority order
 *  (stops at the first match: the classic baseline).  Same answer as
 *  oc__acl_match_linear() on sorted rules.  Thread-safe (pure). */
long oc__acl_match_first(const oc_acl_rule_t *sorted, size_t n,
                        const oc_acl_key_t *key);

/**
 * Create an empty classifier for up to @p max_rules rules (1 ..
 * OC_ACL_MAX_RULES).  Starts its background rebuild thread.
 * @return OC_OK (*out set), OC_ERR_INVALID_PARAM, OC_ERR_NO_MEMORY.
 */
oc_status_t oc__acl_create(uint32_t max_rules, oc_acl_t **out);

/** Stop the rebuild thread, free everything.  NULL is a no-op.  No lookup
 *  may run on @p acl concurrently. */
void oc__acl_destroy(oc_acl_t *acl);

/**
 * Add one rule (copied).  Writer call.  Visible to lookups that start
 * after it returns; never blocks readers, never rebuilds inline.
 * @return OC_OK; OC_ERR_INVALID_PARAM (bad rule, or its id is already
 *         present); OC_ERR_NO_MEMORY (max_rules reached).
 */
oc_status_t oc__acl_add(oc_acl_t *acl, const oc_acl_rule_t *rule);

/**
 * Remove the rule with @p id.  Writer call.  Lookups that start after it
 * returns no longer see it.
 * @return OC_OK; OC_ERR_INVALID_PARAM (no rule with that id).
 */
oc_status_t oc__acl_del(oc_acl_t *acl, uint32_t id);

/**
 * Replace the whole rule set with @p n rules (copied) and build the
 * read-optimized tables before returning (for start-up and bulk loads).
 * Writer call; all or nothing: on error the old rules stay.
 * @return OC_OK; OC_ERR_INVALID_PARAM (a bad rule or duplicate id: nothing
 *         changed); OC_ERR_NO_MEMORY (n > max_rules or allocation failed).
 */
oc_status_t oc__acl_load(oc_acl_t *acl, const oc_acl_rule_t *rules, size_t n);

/** Number of rules present.  Writer call (or after the writer is done). */
size_t oc__acl_count(const oc_acl_t *acl);

/**
 * Copy up to @p cap present rules, in priority order, into @p out.
 * Writer call.  @return the number of rules present (may exceed cap).
 */
size_t oc__acl_rules(const oc_acl_t *acl, oc_acl_rule_t *out, size_t cap);

/**
 * Classify @p n keys: out_userdata[i] = userdata of the first-match rule of
 * keys[i], or OC_ACL_NO_MATCH.  Reader call (registered thread).  Reads the
 * rule set as of some instant during the call; never allocates.
 * @return n (every key is classified).
 */
uint32_t oc__acl_lookup_burst(oc_acl_t *acl, const oc_acl_key_t *keys,
                             uint32_t n, uint32_t *out_userdata);

/** Same answers as oc__acl_lookup_burst(), by the scalar reference walk of
 *  the same tables (no SIMD, no interleaving): the oracle of the fast path.
 *  Reader call. */
uint32_t oc__acl_lookup_burst_scalar(oc_acl_t *acl, const oc_acl_key_t *keys,
                                    uint32_t n, uint32_t *out_userdata);

/** Which path oc__acl_lookup_burst() takes (process-wide): "avx512" (the
 *  AVX-512 gather walk, the default where the CPU has AVX-512 F/BW/VL),
 *  "avx512-leaf" (scalar walk, AVX-512 leaf tests), "avx2" (the gather walk
 *  with AVX2, scalar leaf tests: the default where AVX2 is the best the
 *  CPU has) or "scalar" (static string). */
const char *oc__acl_lookup_method(void);

/** Make oc__acl_lookup_burst() take path @p name ("scalar", "avx512-leaf",
 *  "avx512", "avx2"; "auto" or NULL: the best this CPU has), for every classifier
 *  of the process: for tests and benchmarks that compare the paths.  Not
 *  meant to change while other threads look up (each burst takes one path,
 *  but which one is then a race).  oc__acl_create() applies the environment
 *  variable OC_ACL_PATH the same way (and fails with OC_ERR_CONFIG, logged,
 *  when it names no path of this CPU).
 *  @return OC_OK; OC_ERR_INVALID_PARAM: no such path; OC_ERR_UNSUPPORTED:
 *  this CPU lacks it. */
oc_status_t oc__acl_set_lookup_path(const char *name);

/** Reader-thread registration (wrappers around the reclamation scheme, so
 *  callers need not know it).  Call from the reader thread itself. */
void oc__acl_reader_register(void);
void oc__acl_reader_unregister(void);
/** The calling reader holds no classifier state now (between bursts). */
void oc__acl_reader_quiescent(void);
/** Around a blocking wait: an offline reader is not waited for. */
void oc__acl_reader_offline(void);
void oc__acl_reader_online(void);

/** Bytes of lookup tables currently held (resident, both parts). */
size_t oc__acl_mem_bytes(const oc_acl_t *acl);

/** Wait until pending updates are folded into the read-optimized tables
 *  (the background rebuild has caught up).  Writer call; for tests and
 *  benchmarks.  Not from a reader thread that is online (it would wait
 *  for its own quiescent state).  @return OC_OK or OC_ERR_NO_MEMORY (a rebuild failed; the
 *  classifier still answers correctly from its incremental part). */
oc_status_t oc__acl_sync(oc_acl_t *acl);

/* ---- ClassBench files (acl_parse.c) ---- */

/** A trace line: a key and the generator's rule hint (-1 when absent). */
typedef struct {
    oc_acl_key_t key;
    int64_t hint; /**< the file's last column, not the first-match answer */
} oc_acl_trace_t;

/**
 * Parse ClassBench rules from memory: one rule a line,
 * `@a.b.c.d/len e.f.g.h/len lo : hi lo : hi proto/mask [flags/mask]`.
 * Rule k (0-based, in file order) gets id k, priority k, userdata k.
 * Blank lines are skipped.  @p name is used in error messages.
 * @return OC_OK with *rules (malloc'd, caller frees) and *n set;
 *         OC_ERR_CONFIG with "name:line: reason" in @p err;
 *         OC_ERR_NO_MEMORY.
 */
oc_status_t oc__acl_parse_rules(const char *buf, size_t len, const char *name,
                               oc_acl_rule_t **rules, size_t *n, char *err,
                               size_t errlen);

/** Same for trace lines `SRC DST SPORT DPORT PROTO [FLAGS] [HINT]`
 *  (decimal; with 6 columns the last is the hint). */
oc_status_t oc__acl_parse_trace(const char *buf, size_t len, const char *name,
                               oc_acl_trace_t **trace, size_t *n, char *err,
                               size_t errlen);

/** The largest rule or trace file read, in bytes, after decompression:
 *  64 MiB holds about 800,000 ClassBench rule lines (80 bytes each). */
#define OC_ACL_FILE_MAX ((size_t)64 << 20)

/** Read a whole file, plain or gzip-compressed (through zlib), into a
 *  NUL-terminated buffer, with the loader's checks (util/file.h): a
 *  regular file only (a FIFO is refused, never waited on), at most
 *  OC_ACL_FILE_MAX bytes on disk and uncompressed.
 *  @return OC_OK; OC_ERR_CONFIG (message in @p err, "rules file PATH:
 *  reason"; it never quotes the file); OC_ERR_NO_MEMORY. */
oc_status_t oc__acl_read_file(const char *path, char **buf, size_t *len,
                             char *err, size_t errlen);

/** oc__acl_read_file + oc__acl_parse_rules / oc__acl_parse_trace. */
oc_status_t oc__acl_load_rules_file(const char *path, oc_acl_rule_t **rules,
                                   size_t *n, char *err, size_t errlen);
oc_status_t oc__acl_load_trace_file(const char *path, oc_acl_trace_t **trace,
                                   size_t *n, char *err, size_t errlen);

#endif
