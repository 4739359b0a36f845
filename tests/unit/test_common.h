/*
 * test_common.h — what the cmocka unit tests share instead of copying it:
 * a status assertion that names both statuses when it fails, and the fake
 * job the wire tests build bundles for.
 */
#ifndef OC_TESTS_UNIT_TEST_COMMON_H
#define OC_TESTS_UNIT_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "offcore/status.h"

/* Fail with both names (oc_status_string) when @p got is not @p want;
 * each argument is evaluated once. */
#define assert_status(got, want)                                               \
    do {                                                                       \
        oc_status_t g_ = (got), w_ = (want);                                   \
        if (g_ != w_)                                                          \
            fail_msg("got %s, want %s", oc_status_string(g_),                  \
                     oc_status_string(w_));                                    \
    } while (0)

/* The same in a table-driven test: the failure also names the table
 * (@p what, a string) and the case's index @p i. */
#define assert_status_in(got, want, what, i)                                   \
    do {                                                                       \
        oc_status_t g_ = (got), w_ = (want);                                   \
        if (g_ != w_)                                                          \
            fail_msg("%s, case %zu: got %s, want %s", (what), (size_t)(i),     \
                     oc_status_string(g_), oc_status_string(w_));              \
    } while (0)

/* The fake job of the wire tests: its id and its number of ranks. */
#define JOB    0x5eed1234u
#define NRANKS 16u

/* Initializer of an oc_wire_check_t (wire/wire.h) for a receiver of that
 * job that accepts any destination from any source. */
#define CHK_ANY_INIT {JOB, NRANKS, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 0}

#endif
