/*
 * esp.c — bench-esp: ESP encapsulation and decapsulation rates on one core
 * (src/pkt/esp.c) against the bare OpenSSL EVP AES-256-GCM calls on the
 * same buffers, in the same run (`make bench-pkt`).
 *
 * For each packet size S (inner IPv4 packet bytes: 64, 512, 1500 by
 * default) and each repeat, interleaved: the EVP baseline then offcore's
 * path, for encryption and for decryption, each over --packets buffers
 * (rotating, so the cache sees a ring of packets as a data plane would).
 *   encrypt baseline: per packet set the nonce, AAD (8 bytes), encrypt the
 *     S + trailer bytes in place, get the 16-byte tag: exactly the crypto
 *     oc__esp_encap() does, without its headers, counter and checks.
 *   decrypt baseline: copy the sealed packet into a work buffer, set nonce,
 *     AAD, decrypt in place, set and check the tag; offcore's path copies
 *     the same bytes and calls oc__esp_decap() (outer checks, anti-replay
 *     window under its lock, trailer and inner checks).  The window is
 *     reset between passes over the ring (the same sequence numbers again).
 * Time is the thread's CPU time (the machine is shared: wall time would
 * count other tenants); rates in packets/s and Gbit/s of inner packets.
 * JSON lines: one per measurement, then one per size and op with the
 * medians and the median of the per-repeat ratios.
 */
#include "pkt/esp.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "median.h"

#define HR 128

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *m)
{
    fprintf(stderr, "bench-esp: %s\n", m);
    exit(1);
}

typedef struct {
    uint32_t size, n, stride;
    uint8_t *enc;     /* n buffers for encryption: inner at +HR */
    uint8_t *sealed;  /* n ESP packets from oc__esp_encap (seq 1..n) */
    uint32_t *slen;
    uint8_t *work;    /* decrypt work buffer */
} ring_t;

static void inner_packet(uint8_t *p, uint32_t size, uint32_t k)
{
    memset(p, 0, 20);
    p[0] = 0x45;
    p[2] = (uint8_t)(size >> 8);
    p[3] = (uint8_t)size;
    p[8] = 64;
    p[9] = 17;
    for (uint32_t i = 20; i < size; i++)
        p[i] = (uint8_t)(i * 31 + k);
}

int main(int argc, char **argv)
{
    uint32_t sizes[8] = {64, 512, 1500}, nsizes = 3, npk = 1024;
    int repeats = 7;
    double target = 0.2; /* seconds per measurement */
    uint8_t key[32], salt[4];
    oc_esp_sa_conf_t c;
    oc_esp_sa_t so, si;
    oc_esp_ctx_t xo = {0}, xi = {0};
    EVP_CIPHER_CTX *be, *bd;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--packets") && i + 1 < argc)
            npk = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            target = atof(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *s = argv[++i], *end;
            nsizes = 0;
            while (*s && nsizes < 8) {
                sizes[nsizes++] = (uint32_t)strtoul(s, &end, 10);
                s = *end == ',' ? end + 1 : end;
                if (end == s && *s) die("--sizes: expected N,N,...");
            }
        } else {
            fprintf(stderr, "usage: bench-esp [--sizes 64,512,1500] [--repeats 7] "
                    "[--packets 1024] [--seconds 0.2]\n"
                    "ESP AES-256-GCM encap/decap on one core vs the bare EVP "
                    "calls on the same buffers; JSON lines.\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (repeats < 1 || npk < 1 || npk > OC_ESP_WINDOW)
        die("--repeats >= 1, --packets 1..1024 (the replay window)");
    for (uint32_t i = 0; i < nsizes; i++)
        if (sizes[i] < 28 || sizes[i] > 9000)
            die("sizes 28..9000");
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    memcpy(salt, "\x01\x02\x03\x04", 4);
    memset(&c, 0, sizeof(c));
    c.spi = 0x1001;
    c.local = 0xc0000201u;
    c.peer = 0xc0000202u;
    memcpy(c.key, key, 32);
    memcpy(c.salt, salt, 4);
    c.outbound = true;
    oc__esp_sa_init(&so, &c);
    c.outbound = false;
    c.local = 0xc0000202u;
    c.peer = 0xc0000201u;
    oc__esp_sa_init(&si, &c);
    be = EVP_CIPHER_CTX_new();
    bd = EVP_CIPHER_CTX_new();
    if (!be || !bd || oc__esp_ctx_key(&xo, &so) != OC_OK ||
        oc__esp_ctx_key(&xi, &si) != OC_OK ||
        EVP_EncryptInit_ex(be, EVP_aes_256_gcm(), NULL, key, NULL) != 1 ||
        EVP_DecryptInit_ex(bd, EVP_aes_256_gcm(), NULL, key, NULL) != 1)
        die("OpenSSL init");

    printf("{\"bench\":\"esp\",\"what\":\"config\",\"openssl\":\"%s\","
           "\"packets\":%u,\"repeats\":%d,\"seconds\":%.2f,\"clock\":"
           "\"thread_cputime\"}\n", OpenSSL_version(OPENSSL_VERSION), npk,
           repeats, target);

    for (uint32_t zi = 0; zi < nsizes; zi++) {
        uint32_t size = sizes[zi], stride = (size + HR + 128 + 63) & ~63u;
        uint32_t plen = size + (4 - (size + 2) % 4) % 4 + 2;
        ring_t r = {size, npk, stride, NULL, NULL, NULL, NULL};
        double res[4][64], ratio[2][64];
        unsigned long iters[4] = {1000, 1000, 1000, 1000};
        const char *opname[2] = {"encrypt", "decrypt"};

        if (repeats > 64)
            repeats = 64;
        r.enc = aligned_alloc(64, (size_t)npk * stride);
        r.sealed = aligned_alloc(64, (size_t)npk * stride);
        r.work = aligned_alloc(64, stride);
        r.slen = calloc(npk, sizeof(*r.slen));
        if (!r.enc || !r.sealed || !r.work || !r.slen)
            die("out of memory");
        for (uint32_t k = 0; k < npk; k++) {
            uint8_t *o;
            uint32_t ol;
            inner_packet(r.enc + (size_t)k * stride + HR, size, k);
            inner_packet(r.sealed + (size_t)k * stride + HR, size, k);
            if (oc__esp_encap(&so, &xo, r.sealed + (size_t)k * stride + HR, size,
                             HR, stride - HR - size, 0, &o, &ol) != OC_ESP_OK)
                die("encap");
            memmove(r.sealed + (size_t)k * stride, o, ol);
            r.slen[k] = ol;
        }
        /* the sealed ring must open (a check, not a timing) */
        si.top = 0;
        memset(si.bitmap, 0, sizeof(si.bitmap));
        for (uint32_t k = 0; k < npk; k++) {
            uint8_t *in;
            uint32_t il;
            memcpy(r.work, r.sealed + (size_t)k * stride, r.slen[k]);
            oc_esp_result_t res_ = oc__esp_decap(&si, &xi, r.work, r.slen[k], &in, &il);
            if (res_ != OC_ESP_OK || il != size) {
                fprintf(stderr, "bench-esp: packet %u: %s\n", k, oc__esp_result_name(res_));
                die("decap check");
            }
        }

        for (int rep = 0; rep < repeats; rep++) {
            for (int m = 0; m < 4; m++) {
                /* m: 0 EVP encrypt, 1 ESP encap, 2 EVP decrypt, 3 ESP decap */
                unsigned long done = 0, want = iters[m];
                double t0 = cpu_now(), t;
                uint8_t nonce[12], aad[8] = {0, 0, 0x10, 0x01, 0, 0, 0, 1};
                int n;
                memcpy(nonce, salt, 4);
                so.seq = 0;
                while (done < want) {
                    uint32_t k = (uint32_t)(done % npk);
                    uint8_t *b = r.enc + (size_t)k * stride + HR;
                    const uint8_t *sp = r.sealed + (size_t)k * stride;
                    if (m == 0) {
                        memcpy(nonce + 4, &done, 8);
                        if (EVP_EncryptInit_ex(be, NULL, NULL, NULL, nonce) != 1 ||
                            EVP_EncryptUpdate(be, NULL, &n, aad, 8) != 1 ||
                            EVP_EncryptUpdate(be, b, &n, b, (int)plen) != 1 ||
                            EVP_EncryptFinal_ex(be, b + plen, &n) != 1 ||
                            EVP_CIPHER_CTX_ctrl(be, EVP_CTRL_AEAD_GET_TAG, 16,
                                                b + plen) != 1)
                            die("EVP encrypt");
                    } else if (m == 1) {
                        uint8_t *o;
                        uint32_t ol;
                        b[0] = 0x45; /* the baseline's passes scrambled it */
                        b[2] = (uint8_t)(size >> 8);
                        b[3] = (uint8_t)size;
                        if (oc__esp_encap(&so, &xo, b, size, HR, stride - HR - size,
                                         0, &o, &ol) != OC_ESP_OK)
                            die("encap");
                    } else if (m == 2) {
                        /* the sealed packet's own nonce, AAD and tag */
                        uint32_t ct = r.slen[k] - 36 - 16;
                        memcpy(r.work, sp, r.slen[k]);
                        memcpy(nonce + 4, r.work + 28, 8);
                        if (EVP_DecryptInit_ex(bd, NULL, NULL, NULL, nonce) != 1 ||
                            EVP_DecryptUpdate(bd, NULL, &n, r.work + 20, 8) != 1 ||
                            EVP_DecryptUpdate(bd, r.work + 36, &n, r.work + 36,
                                              (int)ct) != 1 ||
                            EVP_CIPHER_CTX_ctrl(bd, EVP_CTRL_AEAD_SET_TAG, 16,
                                                r.work + 36 + ct) != 1 ||
                            EVP_DecryptFinal_ex(bd, r.work + 36 + ct, &n) != 1)
                            die("EVP decrypt: tag mismatch");
                    } else {
                        uint8_t *in;
                        uint32_t il;
                        if (k == 0) { /* a new pass over the same numbers */
                            si.top = 0;
                            memset(si.bitmap, 0, sizeof(si.bitmap));
                        }
                        memcpy(r.work, sp, r.slen[k]);
                        if (oc__esp_decap(&si, &xi, r.work, r.slen[k], &in, &il) !=
                            OC_ESP_OK)
                            die("decap");
                    }
                    done++;
                    if (done == want && (t = cpu_now() - t0) < target)
                        want = done + (unsigned long)((double)done *
                                                      (target / (t > 1e-4 ? t : 1e-4) - 1)) + 1;
                }
                t = cpu_now() - t0;
                iters[m] = want; /* the next repeat starts at this count */
                res[m][rep] = (double)done / t;
                printf("{\"bench\":\"esp\",\"what\":\"run\",\"size\":%u,\"op\":\"%s\","
                       "\"impl\":\"%s\",\"repeat\":%d,\"packets\":%lu,\"cpu_s\":%.4f,"
                       "\"pps\":%.0f,\"gbit_s\":%.3f}\n",
                       size, opname[m / 2], m % 2 ? "offcore_esp" : "evp_aes_256_gcm",
                       rep, done, t, res[m][rep], res[m][rep] * size * 8 / 1e9);
            }
            ratio[0][rep] = res[1][rep] / res[0][rep];
            ratio[1][rep] = res[3][rep] / res[2][rep];
        }
        for (int op = 0; op < 2; op++) {
            double ev = median(res[2 * op], repeats);
            double es = median(res[2 * op + 1], repeats);
            double rr = median(ratio[op], repeats);
            printf("{\"bench\":\"esp\",\"what\":\"median\",\"size\":%u,\"op\":\"%s\","
                   "\"evp_pps\":%.0f,\"evp_gbit_s\":%.3f,\"esp_pps\":%.0f,"
                   "\"esp_gbit_s\":%.3f,\"ratio\":%.3f,\"repeats\":%d}\n",
                   size, opname[op], ev, ev * size * 8 / 1e9, es,
                   es * size * 8 / 1e9, rr, repeats);
        }
        free(r.enc);
        free(r.sealed);
        free(r.work);
        free(r.slen);
    }
    oc__esp_ctx_free(&xo);
    oc__esp_ctx_free(&xi);
    EVP_CIPHER_CTX_free(be);
    EVP_CIPHER_CTX_free(bd);
    return 0;
}
