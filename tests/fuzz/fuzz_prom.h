/*
 * fuzz_prom.h — what the Prometheus-text fuzz target, its seeds and its
 * replay driver share.  An input is the text itself.
 */
#ifndef OC_TESTS_FUZZ_PROM_H
#define OC_TESTS_FUZZ_PROM_H

#include <stddef.h>
#include <stdint.h>

/** Samples delivered so far; whether the last input parsed. */
extern unsigned long fuzz_prom_samples;
extern int fuzz_prom_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_prom_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                  int valid);
/** The seed corpus: texts like an offcored's, other exporters', every
 *  metric type, escapes, special values, and near misses.  @return how
 *  many. */
unsigned fuzz_prom_seeds(fuzz_prom_seed_fn fn, void *arg);

#endif
