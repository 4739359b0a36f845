/*
 * fuzz_esp.h — what the ESP fuzz target (fuzz_esp.c) and its replay
 * driver (fuzz_esp_main.c) share.
 */
#ifndef OC_TESTS_FUZZ_ESP_H
#define OC_TESTS_FUZZ_ESP_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_ESP_SPI 0x2002u
#define FUZZ_ESP_A   0xc0000201u /* 192.0.2.1, the sender */
#define FUZZ_ESP_B   0xc0000202u

/** Inputs that decapsulated (for the replay driver's seed check). */
extern unsigned long fuzz_esp_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** Seal plaintext @p pt as an ESP packet A -> B with sequence @p seq into
 *  @p p (EVP directly).  @return its length, 0 when it does not fit. */
size_t fuzz_esp_seal(const uint8_t *pt, size_t ptlen, uint32_t seq,
                     uint8_t *p, size_t cap);

#endif
