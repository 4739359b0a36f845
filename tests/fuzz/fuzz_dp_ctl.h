/*
 * fuzz_dp_ctl.h — what the offcore-dp control reader's fuzz target
 * (fuzz_dp_ctl.c) and its replay driver (fuzz_dp_ctl_main.c) share.
 */
#ifndef OC_TESTS_FUZZ_DP_CTL_H
#define OC_TESTS_FUZZ_DP_CTL_H

#include <stddef.h>
#include <stdint.h>

/** Inputs whose request line the reader accepted. */
extern unsigned long fuzz_dp_ctl_accepted;
/** Whether the last input's line was accepted. */
extern int fuzz_dp_ctl_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
