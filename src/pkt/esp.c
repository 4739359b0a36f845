/*
 * esp.c — ESP tunnel mode with AES-256-GCM (esp.h): encapsulation,
 * decapsulation, the anti-replay window and the MSS clamp (key files and
 * the SA syntax: esp_conf.c).
 *
 * Crypto is OpenSSL EVP (never hand-written AES or GHASH): the context is
 * keyed once per thread per SA and only the nonce changes per packet.
 * Layout (RFC 4303 figure 2 with RFC 4106 section 3):
 *
 *   outer IPv4 (20) | SPI (4) | seq (4) | IV (8) | inner packet | padding
 *   (0..3, bytes 1,2,3) | pad length (1) | next header (1) | ICV (16)
 *
 * nonce = salt (4) | IV (8); AAD = SPI | seq (no extended sequence
 * numbers); the ciphertext covers the inner packet through next header.
 * Threading and trust model: esp.h.
 */
#include "pkt/esp.h"

#include "util/bytes.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

static const char *const result_names[OC_ESP_E_MAX] = {
    [OC_ESP_OK] = "ok",
    [OC_ESP_E_SHORT] = "short",
    [OC_ESP_E_MALFORMED] = "malformed",
    [OC_ESP_E_UNKNOWN_SPI] = "unknown_spi",
    [OC_ESP_E_REPLAY] = "replay",
    [OC_ESP_E_ICV] = "icv",
    [OC_ESP_E_BAD_PAD] = "bad_padding",
    [OC_ESP_E_BAD_NEXT_HDR] = "bad_next_header",
    [OC_ESP_E_BAD_INNER] = "bad_inner",
    [OC_ESP_E_DUMMY] = "dummy",
    [OC_ESP_E_SEQ_OVERFLOW] = "seq_overflow",
    [OC_ESP_E_TOO_BIG] = "too_big",
    [OC_ESP_E_NO_ROOM] = "no_room",
    [OC_ESP_E_CRYPTO] = "crypto",
};

const char *oc__esp_result_name(oc_esp_result_t r)
{
    return (unsigned)r < OC_ESP_E_MAX ? result_names[r] : "?";
}


static uint16_t ip_csum(const uint8_t *h, unsigned n)
{
    uint32_t s = 0;
    for (unsigned i = 0; i + 1 < n; i += 2)
        s += oc__load_be16(h + i);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

void oc__esp_sa_init(oc_esp_sa_t *sa, const oc_esp_sa_conf_t *c)
{
    memset(sa, 0, sizeof(*sa));
    sa->c = *c;
}

oc_status_t oc__esp_ctx_key(oc_esp_ctx_t *x, const oc_esp_sa_t *sa)
{
    if (x->ctx == NULL) {
        x->ctx = EVP_CIPHER_CTX_new();
        if (x->ctx == NULL)
            return OC_ERR_NO_MEMORY;
    }
    if (EVP_CipherInit_ex(x->ctx, EVP_aes_256_gcm(), NULL, sa->c.key, NULL,
                          sa->c.outbound ? 1 : 0) != 1)
        return OC_ERR_NO_MEMORY;
    return OC_OK;
}

void oc__esp_ctx_free(oc_esp_ctx_t *x)
{
    EVP_CIPHER_CTX_free(x->ctx);
    x->ctx = NULL;
}

static void nonce_of(uint8_t nonce[12], const oc_esp_sa_t *sa, const uint8_t *iv)
{
    memcpy(nonce, sa->c.salt, 4);
    memcpy(nonce + 4, iv, 8);
}

oc_esp_result_t oc__esp_encap(oc_esp_sa_t *sa, oc_esp_ctx_t *x, uint8_t *ip,
                             uint32_t len, uint32_t headroom,
                             uint32_t tailroom, uint32_t mtu,
                             uint8_t **out_ip, uint32_t *out_len)
{
    EVP_CIPHER_CTX *ctx = x->ctx;
    uint8_t nonce[12], *o, *p;
    uint32_t pad, plen, total;
    uint64_t seq;
    int n;

    if (len < 20 || ((ip[0] >> 4) != 4 && (ip[0] >> 4) != 6))
        return OC_ESP_E_BAD_INNER;
    pad = (4 - (len + 2) % 4) % 4;
    plen = len + pad + 2;
    total = OC_ESP_HEAD + plen + OC_ESP_ICV_LEN;
    if (total > 65535 || (mtu != 0 && total > mtu))
        return OC_ESP_E_TOO_BIG;
    if (headroom < OC_ESP_HEAD || tailroom < pad + 2 + OC_ESP_ICV_LEN)
        return OC_ESP_E_NO_ROOM;
    /* one atomic add per packet; a value past 2^32-1 is never sent (and
     * the counter stays past it: every later packet is refused too) */
    seq = __atomic_add_fetch(&sa->seq, 1, __ATOMIC_RELAXED);
    if (seq > UINT32_MAX)
        return OC_ESP_E_SEQ_OVERFLOW;

    o = ip - OC_ESP_HEAD;
    /* outer IPv4: DSCP/ECN copied from an IPv4 inner header, DF set (the
     * inner packet is never fragmented: see TOO_BIG), ID 0 (RFC 6864) */
    o[0] = 0x45;
    o[1] = (ip[0] >> 4) == 4 ? ip[1] : (uint8_t)((oc__load_be16(ip) >> 4) & 0xff);
    oc__store_be16(o + 2, (uint16_t)total);
    oc__store_be16(o + 4, 0);
    oc__store_be16(o + 6, 0x4000);
    o[8] = 64;
    o[9] = 50;
    oc__store_be16(o + 10, 0);
    oc__store_be32(o + 12, sa->c.local);
    oc__store_be32(o + 16, sa->c.peer);
    oc__store_be16(o + 10, ip_csum(o, 20));
    /* ESP header and IV (= the 64-bit sequence number: unique per key) */
    oc__store_be32(o + 20, sa->c.spi);
    oc__store_be32(o + 24, (uint32_t)seq);
    oc__store_be32(o + 28, (uint32_t)(seq >> 32));
    oc__store_be32(o + 32, (uint32_t)seq);
    /* trailer */
    p = ip + len;
    for (uint32_t i = 0; i < pad; i++)
        p[i] = (uint8_t)(i + 1);
    p[pad] = (uint8_t)pad;
    p[pad + 1] = (ip[0] >> 4) == 4 ? 4 : 41;

    nonce_of(nonce, sa, o + 28);
    if (EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, nonce) != 1 ||
        EVP_EncryptUpdate(ctx, NULL, &n, o + 20, 8) != 1 ||
        EVP_EncryptUpdate(ctx, ip, &n, ip, (int)plen) != 1 ||
        EVP_EncryptFinal_ex(ctx, ip + plen, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, OC_ESP_ICV_LEN,
                            ip + plen) != 1)
        return OC_ESP_E_CRYPTO;
    *out_ip = o;
    *out_len = total;
    return OC_ESP_OK;
}

/* Outer header checks shared by peek and decap: @return the ESP offset. */
static oc_esp_result_t outer(const uint8_t *ip, uint32_t len, uint32_t *hl,
                             uint32_t *tot)
{
    if (len < 20)
        return OC_ESP_E_SHORT;
    *hl = (uint32_t)(ip[0] & 15) * 4;
    *tot = oc__load_be16(ip + 2);
    if ((ip[0] >> 4) != 4 || *hl < 20 || *hl > len || *tot < *hl ||
        *tot > len)
        return OC_ESP_E_MALFORMED;
    /* fragments are not reassembled: the sender's DF and our MTU rules
     * mean a fragmented ESP packet is never one of ours */
    if ((oc__load_be16(ip + 6) & 0x3fff) != 0 || ip[9] != 50)
        return OC_ESP_E_MALFORMED;
    if (*tot - *hl < OC_ESP_HDR_LEN + OC_ESP_IV_LEN + 2 + OC_ESP_ICV_LEN)
        return OC_ESP_E_SHORT;
    return OC_ESP_OK;
}

oc_esp_result_t oc__esp_peek(const uint8_t *ip, uint32_t len, uint32_t *spi,
                            uint32_t *src, uint32_t *dst)
{
    uint32_t hl, tot;
    oc_esp_result_t r = outer(ip, len, &hl, &tot);
    *spi = 0;
    if (r != OC_ESP_OK)
        return r;
    *spi = oc__load_be32(ip + hl);
    *src = oc__load_be32(ip + 12);
    *dst = oc__load_be32(ip + 16);
    return OC_ESP_OK;
}

/* The spin-wait hint of each CPU (the DPU's Arm cores build this too). */
static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static void lock(oc_esp_sa_t *sa)
{
    while (__atomic_exchange_n(&sa->lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&sa->lock, __ATOMIC_RELAXED))
            spin_pause();
}

static void unlock(oc_esp_sa_t *sa)
{
    __atomic_store_n(&sa->lock, 0, __ATOMIC_RELEASE);
}

#define BIT(s) (sa->bitmap[((s) / 64) % (OC_ESP_WINDOW / 64)] & (1ull << ((s) % 64)))

/* RFC 4303 3.4.3 (bitmap as a ring, RFC 6479): may @p s be new?  Under lock. */
static bool window_ok(const oc_esp_sa_t *sa, uint64_t s)
{
    if (s == 0)
        return false;
    if (s > sa->top)
        return true;
    if (sa->top - s >= OC_ESP_WINDOW)
        return false;
    return !BIT(s);
}

static void window_set(oc_esp_sa_t *sa, uint64_t s)
{
    if (s > sa->top) {
        /* clear the words between the old top's and the new one's */
        uint64_t from = sa->top / 64 + 1, to = s / 64;
        if (to - from + 1 >= OC_ESP_WINDOW / 64)
            memset(sa->bitmap, 0, sizeof(sa->bitmap));
        else
            for (uint64_t w = from; w <= to && to >= from; w++)
                sa->bitmap[w % (OC_ESP_WINDOW / 64)] = 0;
        sa->top = s;
    }
    sa->bitmap[(s / 64) % (OC_ESP_WINDOW / 64)] |= 1ull << (s % 64);
}

oc_esp_result_t oc__esp_decap(oc_esp_sa_t *sa, oc_esp_ctx_t *x, uint8_t *ip,
                             uint32_t len, uint8_t **inner,
                             uint32_t *inner_len)
{
    EVP_CIPHER_CTX *ctx = x->ctx;
    uint32_t hl, tot, ctlen, padlen, ilen;
    uint8_t nonce[12], *e, *pt, nh;
    oc_esp_result_t r;
    uint64_t seq;
    bool fresh;
    int n;

    r = outer(ip, len, &hl, &tot);
    if (r != OC_ESP_OK)
        return r;
    e = ip + hl;
    if (oc__load_be32(e) != sa->c.spi || oc__load_be32(ip + 12) != sa->c.peer ||
        oc__load_be32(ip + 16) != sa->c.local)
        return OC_ESP_E_UNKNOWN_SPI;
    seq = oc__load_be32(e + 4);
    lock(sa);
    fresh = window_ok(sa, seq);
    unlock(sa);
    if (!fresh)
        return OC_ESP_E_REPLAY;

    ctlen = tot - hl - OC_ESP_HDR_LEN - OC_ESP_IV_LEN - OC_ESP_ICV_LEN;
    pt = e + OC_ESP_HDR_LEN + OC_ESP_IV_LEN;
    nonce_of(nonce, sa, e + OC_ESP_HDR_LEN);
    if (EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, nonce) != 1 ||
        EVP_DecryptUpdate(ctx, NULL, &n, e, 8) != 1 ||
        EVP_DecryptUpdate(ctx, pt, &n, pt, (int)ctlen) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, OC_ESP_ICV_LEN,
                            pt + ctlen) != 1)
        return OC_ESP_E_CRYPTO;
    if (EVP_DecryptFinal_ex(ctx, pt + ctlen, &n) != 1)
        return OC_ESP_E_ICV;

    /* authenticated: it counts against the window even if malformed
     * inside (RFC 4303 3.4.3: update after the integrity check) */
    lock(sa);
    fresh = window_ok(sa, seq);
    if (fresh)
        window_set(sa, seq);
    unlock(sa);
    if (!fresh)
        return OC_ESP_E_REPLAY; /* another thread took it meanwhile */

    padlen = pt[ctlen - 2];
    nh = pt[ctlen - 1];
    if (padlen + 2 > ctlen)
        return OC_ESP_E_BAD_PAD;
    ilen = ctlen - 2 - padlen;
    for (uint32_t i = 0; i < padlen; i++)
        if (pt[ilen + i] != (uint8_t)(i + 1))
            return OC_ESP_E_BAD_PAD;
    if (nh == 59)
        return OC_ESP_E_DUMMY;
    if (nh == 4) {
        uint32_t il;
        if (ilen < 20 || (pt[0] >> 4) != 4 || (pt[0] & 15) < 5)
            return OC_ESP_E_BAD_INNER;
        il = oc__load_be16(pt + 2);
        if (il < (uint32_t)(pt[0] & 15) * 4 || il > ilen)
            return OC_ESP_E_BAD_INNER;
        ilen = il; /* anything after it is TFC padding (RFC 4303 2.4) */
    } else if (nh == 41) {
        uint32_t il;
        if (ilen < 40 || (pt[0] >> 4) != 6)
            return OC_ESP_E_BAD_INNER;
        il = 40u + oc__load_be16(pt + 4);
        if (il > ilen)
            return OC_ESP_E_BAD_INNER;
        ilen = il;
    } else {
        return OC_ESP_E_BAD_NEXT_HDR;
    }
    *inner = pt;
    *inner_len = ilen;
    return OC_ESP_OK;
}

bool oc__esp_mss_clamp(uint8_t *ip, uint32_t len, uint16_t mss)
{
    uint32_t hl, tot, doff;
    uint8_t *t;

    if (len < 20 || (ip[0] >> 4) != 4 || ip[9] != 6 ||
        (oc__load_be16(ip + 6) & 0x1fff) != 0)
        return false;
    hl = (uint32_t)(ip[0] & 15) * 4;
    tot = oc__load_be16(ip + 2);
    if (hl < 20 || tot > len || tot < hl + 20)
        return false;
    t = ip + hl;
    if (!(t[13] & 0x02)) /* SYN */
        return false;
    doff = (uint32_t)(t[12] >> 4) * 4;
    if (doff < 20 || hl + doff > tot)
        return false;
    for (uint32_t o = 20; o < doff;) {
        uint8_t kind = t[o];
        if (kind == 0)
            break;
        if (kind == 1) {
            o++;
            continue;
        }
        if (o + 1 >= doff || t[o + 1] < 2 || o + t[o + 1] > doff)
            break;
        if (kind == 2 && t[o + 1] == 4) {
            uint16_t old = oc__load_be16(t + o + 2);
            uint32_t s;
            if (old <= mss)
                return false;
            oc__store_be16(t + o + 2, mss);
            /* RFC 1624: HC' = ~(~HC + ~m + m') */
            s = (uint16_t)~oc__load_be16(t + 16) + (uint16_t)~old + mss;
            while (s >> 16)
                s = (s & 0xffff) + (s >> 16);
            oc__store_be16(t + 16, (uint16_t)~s);
            return true;
        }
        o += t[o + 1];
    }
    return false;
}
