/*
 * test_nvmf_xts.c — src/nvmf/xts.c against OpenSSL's EVP AES-256-XTS as
 * the oracle, bit for bit: random keys, unit numbers (LBAs, some near
 * 2^64), unit counts 1..64 and unit sizes 16..4096, both directions; the
 * IEEE 1619-2007 vector 10 (AES-256, 512-byte unit 0xff); refusal of unit
 * sizes that are not whole blocks.  On a CPU without VAES/AVX-512 the
 * vector path is absent and the same checks run on the EVP path (said
 * once on stderr).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "nvmf/xts.h"
#include "util/bytes.h"

static uint32_t rng = 0x9e3779b9u;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)next();
}

/* the oracle: one EVP call per unit, as ns.c did before xts.c */
static void evp_xts(const uint8_t key[64], uint8_t *buf, uint32_t unit,
                    uint32_t n, uint64_t first, int dec)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();

    assert_non_null(c);
    assert_int_equal(EVP_CipherInit_ex(c, EVP_aes_256_xts(), NULL, key,
                                       NULL, !dec), 1);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t iv[16] = {0};
        int outl = 0;
        oc__store_le64(iv, first + i);
        assert_int_equal(EVP_CipherInit_ex(c, NULL, NULL, NULL, iv, -1), 1);
        assert_int_equal(EVP_CipherUpdate(c, buf + (size_t)i * unit, &outl,
                                          buf + (size_t)i * unit,
                                          (int)unit), 1);
        assert_int_equal(outl, (int)unit);
    }
    EVP_CIPHER_CTX_free(c);
}

static void hex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void test_ieee1619_v10(void **state)
{
    static const char *key =
        "2718281828459045235360287471352662497757247093699959574966967627"
        "3141592653589793238462643383279502884197169399375105820974944592";
    static const char *ct =
        "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b"
        "5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd"
        "5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0"
        "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca"
        "2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0"
        "b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f"
        "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec"
        "583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a"
        "84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1"
        "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae"
        "9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29"
        "a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac"
        "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f"
        "645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed4385"
        "1ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa"
        "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151";
    uint8_t k[64], want[512], pt[512], buf[512];

    (void)state;
    hex(key, k, 64);
    hex(ct, want, 512);
    for (int i = 0; i < 512; i++)
        pt[i] = (uint8_t)i;
    for (int path = 0; path < 2; path++) {
        oc__nvmf_xts_t *x = NULL;
        assert_int_equal(oc__nvmf_xts_new(k, path, &x), 0);
        memcpy(buf, pt, 512);
        assert_int_equal(oc__nvmf_xts_run(x, buf, 512, 1, 0xff, 0), 0);
        assert_memory_equal(buf, want, 512);
        assert_int_equal(oc__nvmf_xts_run(x, buf, 512, 1, 0xff, 1), 0);
        assert_memory_equal(buf, pt, 512);
        oc__nvmf_xts_free(x);
    }
    /* the oracle itself agrees */
    memcpy(buf, pt, 512);
    evp_xts(k, buf, 512, 1, 0xff, 0);
    assert_memory_equal(buf, want, 512);
}

static void test_random_vs_evp(void **state)
{
    static const uint32_t units[] = {16, 32, 48, 64, 80, 112, 256, 272,
                                     512, 4096};
    enum { MAXB = 64 * 4096 };
    uint8_t *pt = malloc(MAXB), *a = malloc(MAXB), *b = malloc(MAXB);
    int vector = 0;

    (void)state;
    assert_non_null(pt);
    assert_non_null(a);
    assert_non_null(b);
    for (int iter = 0; iter < 120; iter++) {
        uint8_t key[64];
        oc__nvmf_xts_t *x = NULL;
        uint32_t unit = iter < 60 ? 4096 : units[next() % 10];
        uint32_t n = 1 + next() % 64;
        uint64_t first = (uint64_t)next() << 32 | next();
        size_t len = (size_t)unit * n;

        if (iter % 7 == 0)
            first = UINT64_MAX - next() % 8; /* the unit number wraps */
        fill(key, 64);
        key[0] ^= key[32] == key[0] ? 1 : 0; /* halves differ */
        assert_int_equal(oc__nvmf_xts_new(key, OC__NVMF_XTS_AUTO, &x), 0);
        vector = oc__nvmf_xts_vector(x);
        fill(pt, len);
        for (int dec = 0; dec < 2; dec++) {
            memcpy(a, pt, len);
            memcpy(b, pt, len);
            assert_int_equal(oc__nvmf_xts_run(x, a, unit, n, first, dec), 0);
            evp_xts(key, b, unit, n, first, dec);
            assert_memory_equal(a, b, len);
            assert_memory_not_equal(a, pt, unit);
        }
        /* round trip */
        memcpy(a, pt, len);
        assert_int_equal(oc__nvmf_xts_run(x, a, unit, n, first, 0), 0);
        assert_int_equal(oc__nvmf_xts_run(x, a, unit, n, first, 1), 0);
        assert_memory_equal(a, pt, len);
        oc__nvmf_xts_free(x);
    }
    if (!vector)
        fprintf(stderr, "no VAES/AVX-512 here: the EVP path was tested\n");
    free(pt);
    free(a);
    free(b);
}

static void test_refuses_partial_blocks(void **state)
{
    static const uint32_t bad[] = {0, 8, 15, 17, 520, 4095, (1u << 24) + 16};
    uint8_t key[64], buf[1024], copy[1024];
    oc__nvmf_xts_t *x = NULL;

    (void)state;
    fill(key, 64);
    key[0] = (uint8_t)(key[32] + 1);
    fill(buf, sizeof(buf));
    memcpy(copy, buf, sizeof(buf));
    for (int path = 0; path < 2; path++) {
        assert_int_equal(oc__nvmf_xts_new(key, path, &x), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            assert_int_equal(oc__nvmf_xts_run(x, buf, bad[i], 1, 7, 0), -1);
        assert_memory_equal(buf, copy, sizeof(buf));
        oc__nvmf_xts_free(x);
    }
    oc__nvmf_xts_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ieee1619_v10),
        cmocka_unit_test(test_random_vs_evp),
        cmocka_unit_test(test_refuses_partial_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
