/*
 * xts.h — AES-256-XTS over whole requests: N consecutive data units of one
 * size, unit i's tweak the little-endian number first + i (the LBA), in
 * place.  VAES/AVX-512 when the CPU has it, OpenSSL's EVP otherwise
 * (and as the tests' oracle).  No ciphertext stealing: the unit size is a
 * multiple of 16 bytes.
 *
 * Threading: an oc__nvmf_xts_t is one worker's (the EVP fallback keeps
 * the IV in its contexts); create and free it outside the I/O path.
 */
#ifndef OC_NVMF_XTS_H
#define OC_NVMF_XTS_H

#include <stdint.h>

typedef struct oc__nvmf_xts oc__nvmf_xts_t;

enum {
    OC__NVMF_XTS_AUTO = 0, /* vectorised when the CPU allows, else EVP */
    OC__NVMF_XTS_EVP  = 1, /* always EVP (tests, benches) */
};

/** Expand @p key (key1 | key2, 32 bytes each; the caller has refused
 * equal halves) once.  The key schedule lives in *out until
 * oc__nvmf_xts_free wipes it; @p key is not kept.
 * @return 0, or -1 when OpenSSL refuses the key or memory is short
 * (*out untouched). */
int oc__nvmf_xts_new(const uint8_t key[64], int path, oc__nvmf_xts_t **out);

/** A copy of @p x for another worker (the expanded schedule copied, not
 * the key re-read).  @return 0, or -1 out of memory or OpenSSL refused
 * (*out untouched). */
int oc__nvmf_xts_dup(const oc__nvmf_xts_t *x, oc__nvmf_xts_t **out);

/** Wipe the key schedule and free; NULL is a no-op. */
void oc__nvmf_xts_free(oc__nvmf_xts_t *x);

/** Encrypt (@p dec 0) or decrypt @p n units of @p unit bytes at @p buf
 * in place, unit i with the tweak @p first + i.
 * @return 0; -1 when @p unit is not a multiple of 16 in 16..2^24 (nothing
 * touched), or when OpenSSL fails (EVP path). */
int oc__nvmf_xts_run(oc__nvmf_xts_t *x, uint8_t *buf, uint32_t unit,
                     uint32_t n, uint64_t first, int dec);

/** 1 when @p x runs the VAES/AVX-512 code, 0 when EVP. */
int oc__nvmf_xts_vector(const oc__nvmf_xts_t *x);

#endif
