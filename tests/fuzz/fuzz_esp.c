/*
 * fuzz_esp.c — libFuzzer target over ESP decapsulation (src/pkt/esp.c),
 * the path that reads hostile packets from the wire.  The first input
 * byte chooses how the rest is used:
 *   even: the rest is an outer IPv4 packet handed to oc__esp_decap();
 *   odd:  the rest is a plaintext (inner packet + trailer) sealed under the
 *         SA's key first, so that the checks behind the ICV (padding, next
 *         header, inner lengths) see arbitrary authenticated bytes.
 * Invariants beyond "no crash, no read outside the input": an accepted
 * packet's inner packet lies inside it and starts with IP version 4 or 6;
 * an unsealed input almost never passes the ICV (it would need a forgery).
 * The SA (and its window) is fresh for every input: runs repeat.
 */
#include "fuzz_esp.h"
#include "pkt/esp.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

unsigned long fuzz_esp_accepted;

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
                                25, 26, 27, 28, 29, 30, 31, 32};

static void sa_conf(oc_esp_sa_conf_t *c, bool out)
{
    memset(c, 0, sizeof(*c));
    c->spi = FUZZ_ESP_SPI;
    c->local = out ? FUZZ_ESP_A : FUZZ_ESP_B;
    c->peer = out ? FUZZ_ESP_B : FUZZ_ESP_A;
    memcpy(c->key, key, 32);
    memcpy(c->salt, "salt", 4);
    c->outbound = out;
}

size_t fuzz_esp_seal(const uint8_t *pt, size_t ptlen, uint32_t seq,
                     uint8_t *p, size_t cap)
{
    static EVP_CIPHER_CTX *c;
    uint8_t nonce[12];
    size_t tot = 36 + ptlen + 16;
    int n;

    if (tot > cap || tot > 65535)
        return 0;
    if (c == NULL) {
        c = EVP_CIPHER_CTX_new();
        CHECK(c != NULL);
    }
    memset(p, 0, 36);
    p[0] = 0x45;
    p[2] = (uint8_t)(tot >> 8), p[3] = (uint8_t)tot;
    p[9] = 50;
    for (int i = 0; i < 4; i++) {
        p[12 + i] = (uint8_t)(FUZZ_ESP_A >> (24 - 8 * i));
        p[16 + i] = (uint8_t)(FUZZ_ESP_B >> (24 - 8 * i));
        p[20 + i] = (uint8_t)(FUZZ_ESP_SPI >> (24 - 8 * i));
        p[24 + i] = p[32 + i] = (uint8_t)(seq >> (24 - 8 * i));
    }
    memcpy(nonce, "salt", 4);
    memcpy(nonce + 4, p + 28, 8);
    CHECK(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, nonce) == 1);
    CHECK(EVP_EncryptUpdate(c, NULL, &n, p + 20, 8) == 1);
    CHECK(EVP_EncryptUpdate(c, p + 36, &n, pt, (int)ptlen) == 1);
    CHECK(EVP_EncryptFinal_ex(c, p + 36 + ptlen, &n) == 1);
    CHECK(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, p + 36 + ptlen) == 1);
    return tot;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static oc_esp_ctx_t x;
    static uint8_t sealed[70000];
    oc_esp_sa_conf_t c;
    oc_esp_sa_t sa;
    uint8_t *buf, *inner;
    uint32_t ilen;
    size_t n;
    oc_esp_result_t r;

    if (size < 1)
        return 0;
    sa_conf(&c, false);
    oc__esp_sa_init(&sa, &c);
    if (x.ctx == NULL)
        CHECK(oc__esp_ctx_key(&x, &sa) == OC_OK);
    if (data[0] & 1) {
        n = fuzz_esp_seal(data + 1, size - 1, 1, sealed, sizeof(sealed));
        if (n == 0)
            return 0;
        buf = malloc(n); /* exact size: ASan sees any read past the end */
        CHECK(buf != NULL);
        memcpy(buf, sealed, n);
    } else {
        n = size - 1;
        buf = malloc(n ? n : 1);
        CHECK(buf != NULL);
        memcpy(buf, data + 1, n);
    }
    r = oc__esp_decap(&sa, &x, buf, (uint32_t)n, &inner, &ilen);
    CHECK((unsigned)r < OC_ESP_E_MAX);
    if (r == OC_ESP_OK) {
        CHECK(inner >= buf && inner + ilen <= buf + n);
        CHECK((inner[0] >> 4) == 4 || (inner[0] >> 4) == 6);
        fuzz_esp_accepted++;
    }
    if (!(data[0] & 1))
        CHECK(r != OC_ESP_OK || n >= 52); /* nothing shorter opens */
    free(buf);
    return 0;
}
