/*
 * fuzz_acl6.h — what the IPv6 classifier's fuzz target (fuzz_acl6.c), its
 * seeds (acl6_seeds.c) and its replay driver share.
 *
 * Input: byte 0 holds flags (FUZZ_ACL6_*), then rules as text in
 * offcore-dp's rule syntax, one a line, up to the first NUL byte (or the
 * end); after the NUL, operations of FUZZ_ACL6_OP_SIZE bytes each:
 * [op, a, b, c] with op % 8 one of FUZZ_ACL6_OP_*.
 */
#ifndef OC_TESTS_FUZZ_ACL6_H
#define OC_TESTS_FUZZ_ACL6_H

#include <stddef.h>
#include <stdint.h>

/* byte 0 */
#define FUZZ_ACL6_LOAD  0x01 /* initial rules through load, else add each */
#define FUZZ_ACL6_SYNC  0x02 /* fold them into the trees before the checks */
#define FUZZ_ACL6_SMALL 0x04 /* max_rules 8 (NO_MEMORY reachable), else 128 */
/* bits 3-5: the burst size the lookups are cut into (a table in the body) */

#define FUZZ_ACL6_OP_SIZE 4
enum {
    FUZZ_ACL6_OP_KEY = 0,   /* a key near rule a: bits b (src), c (dst) flipped */
    FUZZ_ACL6_OP_DEL,       /* delete present rule a */
    FUZZ_ACL6_OP_DEL_ID,    /* delete id 0xf0000000 + a (absent unless added) */
    FUZZ_ACL6_OP_READD,     /* add deleted rule a again, same id */
    FUZZ_ACL6_OP_ADD,       /* a copy of rule a, new id, prio a, lengths b, c
                               (kept when above 128), junk past the prefixes */
    FUZZ_ACL6_OP_ADD_DUP,   /* add a rule with present rule a's id */
    FUZZ_ACL6_OP_SYNC,      /* fold pending changes into the trees */
    FUZZ_ACL6_OP_RELOAD,    /* load the present rules again (all codes anew) */
};

/** Rules accepted by the classifier so far. */
extern unsigned long fuzz_acl6_accepted;
/** Whether the last input was valid as a whole: every line parsed, at
 *  least one rule for IPv6, and all of them accepted. */
extern int fuzz_acl6_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_acl6_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                  int valid);

/** Rule sets with real-looking nested prefixes and port ranges, with and
 *  without live updates, and near misses.  @return the number of seeds. */
unsigned fuzz_acl6_seeds(fuzz_acl6_seed_fn fn, void *arg);

#endif
