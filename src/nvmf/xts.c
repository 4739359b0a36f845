/*
 * xts.c — AES-256-XTS over a whole request (xts.h): one call per NVMe
 * command instead of one EVP call per block.  Written here because
 * Debian 12's libcrypto (OpenSSL 3.0) has no VAES/AVX-512 XTS (about
 * 3.5 GB/s on one core) and neither OpenSSL >= 3.2 nor isa-l_crypto is
 * packaged for Debian 12 (apt-cache policy: libssl-dev 3.0.x; libisal-dev
 * is ISA-L without the crypto half).
 *
 * The vector path: AES-NI key expansion once per object; VAES encrypts 4
 * blocks per 512-bit register, W (4) registers in flight (8 measured no
 * faster here: VAES throughput is the limit); the tweaks of a
 * register are T*a^j..T*a^(j+3) and the next register's are those times
 * a^4 in GF(2^128) (a shift by 4 per 64-bit half, the carry between
 * halves, and the bits shifted out of the top folded back by a carry-less
 * multiply with 0x87).  EVP is the fallback on other CPUs and the oracle
 * the unit test compares with, bit for bit.
 */
#include "xts.h"
#include "util/bytes.h"
#include "util/cpu.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define OC_XTS_X86 1
#endif

struct oc__nvmf_xts {
    /* AES-256 round keys: key1 encrypt, key1 decrypt (aesimc'd, in
     * reverse), key2 encrypt (the tweak) */
    uint8_t rk1e[15][16], rk1d[15][16], rk2e[15][16];
    int vector;
    EVP_CIPHER_CTX *enc, *dec; /* the EVP path's; NULL on the vector path */
};

#ifdef OC_XTS_X86

#define AESNI __attribute__((target("aes,sse4.1")))
#define VAES  __attribute__((target("aes,sse4.1,avx512f,avx512bw,vaes,vpclmulqdq")))

AESNI static inline __m128i key_mix(__m128i a)
{
    a = _mm_xor_si128(a, _mm_slli_si128(a, 4));
    a = _mm_xor_si128(a, _mm_slli_si128(a, 4));
    return _mm_xor_si128(a, _mm_slli_si128(a, 4));
}

/* FIPS-197's AES-256 key expansion with aeskeygenassist (its round
 * constant must be an immediate, hence the macro) */
#define KEY_EVEN(i, rcon)                                                    \
    rk[i] = _mm_xor_si128(key_mix(rk[(i) - 2]),                             \
                          _mm_shuffle_epi32(                                 \
                              _mm_aeskeygenassist_si128(rk[(i) - 1], rcon),  \
                              0xff))
#define KEY_ODD(i)                                                           \
    rk[i] = _mm_xor_si128(key_mix(rk[(i) - 2]),                             \
                          _mm_shuffle_epi32(                                 \
                              _mm_aeskeygenassist_si128(rk[(i) - 1], 0),     \
                              0xaa))

AESNI static void expand(const uint8_t key[32], uint8_t out[15][16])
{
    __m128i rk[15];

    rk[0] = _mm_loadu_si128((const __m128i *)key);
    rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
    KEY_EVEN(2, 0x01);  KEY_ODD(3);
    KEY_EVEN(4, 0x02);  KEY_ODD(5);
    KEY_EVEN(6, 0x04);  KEY_ODD(7);
    KEY_EVEN(8, 0x08);  KEY_ODD(9);
    KEY_EVEN(10, 0x10); KEY_ODD(11);
    KEY_EVEN(12, 0x20); KEY_ODD(13);
    KEY_EVEN(14, 0x40);
    for (int i = 0; i < 15; i++)
        _mm_storeu_si128((__m128i *)out[i], rk[i]);
    OPENSSL_cleanse(rk, sizeof(rk));
}

AESNI static void invert(uint8_t e[15][16], uint8_t d[15][16])
{
    memcpy(d[0], e[14], 16);
    for (int i = 1; i < 14; i++)
        _mm_storeu_si128((__m128i *)d[i], _mm_aesimc_si128(
                             _mm_loadu_si128((const __m128i *)e[14 - i])));
    memcpy(d[14], e[0], 16);
}

/* the first tweak of a unit: AES(key2, number as 16 bytes LE) */
AESNI static __m128i tweak0(const uint8_t rk[15][16], uint64_t num)
{
    __m128i t = _mm_set_epi64x(0, (long long)num);

    t = _mm_xor_si128(t, _mm_loadu_si128((const __m128i *)rk[0]));
    for (int i = 1; i < 14; i++)
        t = _mm_aesenc_si128(t, _mm_loadu_si128((const __m128i *)rk[i]));
    return _mm_aesenclast_si128(t, _mm_loadu_si128((const __m128i *)rk[14]));
}

/* T * a, IEEE 1619's doubling (little-endian 128-bit number) */
AESNI static __m128i mul_a(__m128i t)
{
    uint64_t lo = (uint64_t)_mm_cvtsi128_si64(t);
    uint64_t hi = (uint64_t)_mm_extract_epi64(t, 1);
    uint64_t c = hi >> 63;

    hi = hi << 1 | lo >> 63;
    lo = lo << 1 ^ (0x87 & (0 - c));
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

/* each lane times a^4 */
VAES static inline __m512i mul_a4(__m512i t, __m512i poly)
{
    __m512i top = _mm512_srli_epi64(t, 60);

    return _mm512_ternarylogic_epi64(
        _mm512_slli_epi64(t, 4), _mm512_bslli_epi128(top, 8),
        _mm512_clmulepi64_epi128(top, poly, 0x01), 0x96);
}

/* W registers (4 blocks each) in flight */
#define W 4

/* one function per direction, so that the round loop has no branch */
#define XTS_UNITS(name, OP, OPLAST)                                          \
    VAES static void name(const uint8_t rk1[15][16],                         \
                          const uint8_t rk2[15][16], uint8_t *buf,           \
                          uint32_t nblk, uint32_t n, uint64_t first)         \
    {                                                                        \
        const __m512i poly = _mm512_set_epi64(0, 0x87, 0, 0x87, 0, 0x87,     \
                                              0, 0x87);                      \
        __m512i k[15];                                                       \
        for (int r = 0; r < 15; r++)                                         \
            k[r] = _mm512_broadcast_i32x4(                                   \
                _mm_loadu_si128((const __m128i *)rk1[r]));                   \
        for (uint32_t u = 0; u < n; u++) {                                   \
            uint8_t *p = buf + (size_t)u * nblk * 16;                        \
            __m128i t0 = tweak0(rk2, first + u), t1 = mul_a(t0);             \
            __m128i t2 = mul_a(t1), t3 = mul_a(t2);                          \
            __m512i t = _mm512_castsi128_si512(t0);                          \
            uint32_t i = 0;                                                  \
            t = _mm512_inserti32x4(t, t1, 1);                                \
            t = _mm512_inserti32x4(t, t2, 2);                                \
            t = _mm512_inserti32x4(t, t3, 3);                                \
            for (; i + 4 * W <= nblk; i += 4 * W, p += 64 * W) {         \
                __m512i tw[W], x[W];                                     \
                tw[0] = t;                                               \
                for (int j = 1; j < W; j++)                              \
                    tw[j] = mul_a4(tw[j - 1], poly);                     \
                for (int j = 0; j < W; j++)                              \
                    x[j] = _mm512_ternarylogic_epi64(                    \
                        _mm512_loadu_si512(p + 64 * j), tw[j], k[0], 0x96); \
                for (int r = 1; r < 14; r++)                             \
                    for (int j = 0; j < W; j++)                          \
                        x[j] = OP(x[j], k[r]);                           \
                for (int j = 0; j < W; j++)                              \
                    _mm512_storeu_si512(p + 64 * j, _mm512_xor_si512(    \
                        OPLAST(x[j], k[14]), tw[j]));                    \
                t = mul_a4(tw[W - 1], poly);                             \
            }                                                            \
            for (; i < nblk; i += 4, p += 64) {                              \
                /* 1..3 blocks left: masked (2 qwords a block) */            \
                __mmask8 m = nblk - i >= 4 ? 0xff                            \
                                           : (__mmask8)((1u << 2 * (nblk - i)) - 1); \
                __m512i a = _mm512_maskz_loadu_epi64(m, p);                  \
                a = _mm512_ternarylogic_epi64(a, t, k[0], 0x96);             \
                for (int r = 1; r < 14; r++)                                 \
                    a = OP(a, k[r]);                                         \
                _mm512_mask_storeu_epi64(p, m,                               \
                    _mm512_xor_si512(OPLAST(a, k[14]), t));                  \
                t = mul_a4(t, poly);                                         \
            }                                                                \
        }                                                                    \
    }

XTS_UNITS(units_enc, _mm512_aesenc_epi128, _mm512_aesenclast_epi128)
XTS_UNITS(units_dec, _mm512_aesdec_epi128, _mm512_aesdeclast_epi128)
#endif /* OC_XTS_X86 */

int oc__nvmf_xts_new(const uint8_t key[64], int path, oc__nvmf_xts_t **out)
{
    oc__nvmf_xts_t *x = calloc(1, sizeof(*x));

    if (!x)
        return -1;
#ifdef OC_XTS_X86
    const unsigned need = OC__CPU_AES | OC__CPU_AVX512BW | OC__CPU_VAES;

    if (path == OC__NVMF_XTS_AUTO && (oc__cpu_features() & need) == need) {
        expand(key, x->rk1e);
        invert(x->rk1e, x->rk1d);
        expand(key + 32, x->rk2e);
        x->vector = 1;
        *out = x;
        return 0;
    }
#else
    (void)path;
#endif
    x->enc = EVP_CIPHER_CTX_new();
    x->dec = EVP_CIPHER_CTX_new();
    if (!x->enc || !x->dec ||
        !EVP_EncryptInit_ex(x->enc, EVP_aes_256_xts(), NULL, key, NULL) ||
        !EVP_DecryptInit_ex(x->dec, EVP_aes_256_xts(), NULL, key, NULL)) {
        oc__nvmf_xts_free(x);
        return -1;
    }
    *out = x;
    return 0;
}

int oc__nvmf_xts_dup(const oc__nvmf_xts_t *x, oc__nvmf_xts_t **out)
{
    oc__nvmf_xts_t *y = malloc(sizeof(*y));

    if (!y)
        return -1;
    memcpy(y, x, sizeof(*y));
    y->enc = y->dec = NULL;
    if (x->enc && (!(y->enc = EVP_CIPHER_CTX_new()) ||
                   !(y->dec = EVP_CIPHER_CTX_new()) ||
                   !EVP_CIPHER_CTX_copy(y->enc, x->enc) ||
                   !EVP_CIPHER_CTX_copy(y->dec, x->dec))) {
        oc__nvmf_xts_free(y);
        return -1;
    }
    *out = y;
    return 0;
}

void oc__nvmf_xts_free(oc__nvmf_xts_t *x)
{
    if (!x)
        return;
    EVP_CIPHER_CTX_free(x->enc); /* wipes its own key schedule */
    EVP_CIPHER_CTX_free(x->dec);
    OPENSSL_cleanse(x, sizeof(*x));
    free(x);
}

int oc__nvmf_xts_vector(const oc__nvmf_xts_t *x)
{
    return x->vector;
}

int oc__nvmf_xts_run(oc__nvmf_xts_t *x, uint8_t *buf, uint32_t unit,
                     uint32_t n, uint64_t first, int dec)
{
    EVP_CIPHER_CTX *ctx = dec ? x->dec : x->enc;

    /* IEEE 1619 allows 2^20 blocks a unit; without ciphertext stealing
     * the unit is whole blocks */
    if (unit < 16 || unit % 16 || unit > (1u << 24))
        return -1;
#ifdef OC_XTS_X86
    if (x->vector) {
        if (dec)
            units_dec(x->rk1d, x->rk2e, buf, unit / 16, n, first);
        else
            units_enc(x->rk1e, x->rk2e, buf, unit / 16, n, first);
        return 0;
    }
#endif
    for (uint32_t i = 0; i < n; i++) {
        uint8_t iv[16] = {0}, *p = buf + (size_t)i * unit;
        int outl = 0;

        oc__store_le64(iv, first + i);
        if (!EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, -1) ||
            !EVP_CipherUpdate(ctx, p, &outl, p, (int)unit) ||
            outl != (int)unit)
            return -1;
    }
    return 0;
}
