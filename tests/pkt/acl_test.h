/*
 * acl_test.h — what the IPv4 and IPv6 classifier tests (test_acl.c,
 * test_acl6.c) share: the data directory and the "slow" switch from the
 * command line and the build, their random numbers, and the comparison of
 * every lookup path this CPU has with the scalar walk and the wanted
 * answers.  Single-threaded set-up; acl_rnd() is not thread-safe.
 */
#ifndef OC_TESTS_PKT_ACL_TEST_H
#define OC_TESTS_PKT_ACL_TEST_H

#include <stddef.h>
#include <stdint.h>

/** The ClassBench files' folder (argv[1], else data/classbench). */
extern const char *acl_datadir;
/** Nonzero under ASan or an emulator (MESON_EXE_WRAPPER): sample the
 *  oracle checks and run fewer rounds where every instruction is dear. */
extern int acl_slow;

/** Read argv and the environment into acl_datadir and acl_slow, seed
 *  acl_rnd() with @p seed, register this thread as a classifier reader
 *  and take it offline (it goes online only around its lookups). */
void acl_test_init(int argc, char **argv, uint64_t seed);

/** The next of a xorshift sequence (reproducible from the seed). */
uint32_t acl_rnd(void);

/** One classifier's burst lookup, typed away so both families share the
 *  comparison below. */
typedef uint32_t (*acl_burst_fn)(void *acl, const void *keys, uint32_t n,
                                 uint32_t *out);

/** Look up the @p nk keys (each @p key_size bytes) through every lookup
 *  path this CPU has, in odd bursts that end groups mid-way, and compare
 *  each answer with @p scalar (the scalar walk's) and @p want; a path the
 *  CPU lacks is skipped, said once.  Restores the "auto" path.
 *  @return the number of mismatches (the first 5 are printed). */
size_t acl_check_paths(void *acl, const void *keys, size_t key_size, size_t nk,
                       acl_burst_fn burst, const uint32_t *scalar,
                       const uint32_t *want);

#endif
