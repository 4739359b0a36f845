/*
 * fuzz_colld.h — what the collective-descriptor fuzz target
 * (fuzz_colld.c) and its replay driver (fuzz_colld_main.c) share.
 */
#ifndef OC_TESTS_FUZZ_COLLD_H
#define OC_TESTS_FUZZ_COLLD_H

#include <stddef.h>
#include <stdint.h>

/** Descriptors accepted (for the replay driver's seed check). */
extern unsigned long fuzz_colld_accepted;
/** The job sizes the first input byte picks from (its low 3 bits). */
extern const uint32_t fuzz_colld_sizes[8];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
