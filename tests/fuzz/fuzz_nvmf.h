/*
 * fuzz_nvmf.h — what the NVMe/TCP fuzz target (fuzz_nvmf.c), its seed
 * generator (nvmf_seeds.c) and its replay driver (fuzz_nvmf_main.c) share.
 * Input layout: fuzz_nvmf.c.
 */
#ifndef OC_TESTS_FUZZ_NVMF_H
#define OC_TESTS_FUZZ_NVMF_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_NVMF_PREFIX 1

/** PDUs accepted so far. */
extern unsigned long fuzz_nvmf_accepted;
/** Whether the last input was a stream of whole, accepted PDUs. */
extern int fuzz_nvmf_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_nvmf_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                  int valid);

/** Generate the seed corpus: sessions as the Linux host sends them (ICReq,
 *  Connect with in-capsule data, commands, H2CData), with and without
 *  digests, and near misses.  @return the number of seeds. */
unsigned fuzz_nvmf_seeds(fuzz_nvmf_seed_fn fn, void *arg);

#endif
