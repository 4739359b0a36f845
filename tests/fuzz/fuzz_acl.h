/*
 * fuzz_acl.h — what the classifier's fuzz target (ClassBench rule and
 * trace parsers, then the tree builder), its seeds and its replay driver
 * share.  Input: FUZZ_ACL_PREFIX bytes ([0] bit 0: FUZZ_ACL_TRACE selects
 * the trace parser), then the file's text.
 */
#ifndef OC_TESTS_FUZZ_ACL_H
#define OC_TESTS_FUZZ_ACL_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_ACL_PREFIX 1
#define FUZZ_ACL_TRACE 0x01

/** Rules and trace lines accepted so far. */
extern unsigned long fuzz_acl_accepted;
/** Whether the last input was accepted. */
extern int fuzz_acl_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_acl_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                 int valid);

/** Valid rule files (acl1 and fw1 style, overlapping prefixes, a default
 *  rule), trace files, and near misses.  @return the number of seeds. */
unsigned fuzz_acl_seeds(fuzz_acl_seed_fn fn, void *arg);

#endif
