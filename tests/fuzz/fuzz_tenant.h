/*
 * fuzz_tenant.h — what the tenant fuzz target (fuzz_tenant.c), its seeds
 * (tenant_seeds.c) and its replay driver (fuzz_tenant_main.c) share.
 */
#ifndef OC_TESTS_FUZZ_TENANT_H
#define OC_TESTS_FUZZ_TENANT_H

#include <stddef.h>
#include <stdint.h>

/** Inputs in which some packet decapsulated or matched/opened a flow. */
extern unsigned long fuzz_tenant_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_tenant_seed_fn)(void *arg, const uint8_t *data,
                                    size_t size, int valid);
unsigned fuzz_tenant_seeds(fuzz_tenant_seed_fn fn, void *arg);

#endif
