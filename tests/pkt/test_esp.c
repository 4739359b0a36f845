/*
 * test_esp.c — unit tests of src/pkt/esp.c: known-answer vectors computed
 * independently (tests/pkt/esp_kat.py, python3 cryptography's AESGCM and
 * the RFC 4303/4106 layout written out there), both directions; the
 * anti-replay window; ICV failures; sequence-number overflow; malformed
 * packets (short, bad padding, bad next header, bad inner) that carry a
 * valid ICV; key-file permission checks; the MSS clamp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "esp_kat.h"
#include "dp/dp.h"
#include "pkt/esp.h"

#define LOCAL 0xc0000201u /* 192.0.2.1 */
#define PEER  0xc0000202u
#define HR    128

static void sa_pair(oc_esp_sa_t *out, oc_esp_sa_t *in, oc_esp_ctx_t *xo,
                    oc_esp_ctx_t *xi)
{
    oc_esp_sa_conf_t c = {.spi = 0x1001, .local = LOCAL, .peer = PEER,
                          .outbound = true};
    memcpy(c.key, kat_key, 32);
    memcpy(c.salt, kat_salt, 4);
    oc__esp_sa_init(out, &c);
    c.outbound = false;
    c.local = PEER; /* the receiving DPU's view */
    c.peer = LOCAL;
    oc__esp_sa_init(in, &c);
    memset(xo, 0, sizeof(*xo));
    memset(xi, 0, sizeof(*xi));
    assert_int_equal(oc__esp_ctx_key(xo, out), OC_OK);
    assert_int_equal(oc__esp_ctx_key(xi, in), OC_OK);
}

static void kat_one(const uint8_t *in, size_t inlen, const uint8_t *out,
                    size_t outlen, uint32_t seq)
{
    oc_esp_sa_t so, si;
    oc_esp_ctx_t xo, xi;
    uint8_t buf[HR + 2048], *o, *inner;
    uint32_t olen, ilen;

    sa_pair(&so, &si, &xo, &xi);
    so.seq = seq - 1;
    memcpy(buf + HR, in, inlen);
    assert_int_equal(oc__esp_encap(&so, &xo, buf + HR, (uint32_t)inlen, HR,
                                  sizeof(buf) - HR - inlen, 0, &o, &olen),
                     OC_ESP_OK);
    assert_int_equal(olen, outlen);
    assert_memory_equal(o, out, outlen);
    /* the receiving side, from the vector itself (with Ethernet padding
     * behind it, which must be ignored) */
    memcpy(buf, out, outlen);
    memset(buf + outlen, 0xee, 10);
    assert_int_equal(oc__esp_decap(&si, &xi, buf, (uint32_t)outlen + 10, &inner,
                                  &ilen), OC_ESP_OK);
    assert_int_equal(ilen, inlen);
    assert_memory_equal(inner, in, inlen);
    oc__esp_ctx_free(&xo);
    oc__esp_ctx_free(&xi);
}

static void test_kat(void **state)
{
    (void)state;
    kat_one(kat_in0, sizeof(kat_in0), kat_out0, sizeof(kat_out0), kat_seq0);
    kat_one(kat_in1, sizeof(kat_in1), kat_out1, sizeof(kat_out1), kat_seq1);
    kat_one(kat_in2, sizeof(kat_in2), kat_out2, sizeof(kat_out2), kat_seq2);
}

/* encapsulate kat_in0 with sequence number @p seq into @p pkt */
static uint32_t seal_seq(oc_esp_sa_t *so, oc_esp_ctx_t *xo, uint64_t seq,
                         uint8_t *pkt)
{
    uint8_t buf[HR + 256], *o;
    uint32_t olen;
    so->seq = seq - 1;
    memcpy(buf + HR, kat_in0, sizeof(kat_in0));
    assert_int_equal(oc__esp_encap(so, xo, buf + HR, sizeof(kat_in0), HR, 128,
                                  0, &o, &olen), OC_ESP_OK);
    memcpy(pkt, o, olen);
    return olen;
}

static oc_esp_result_t open_pkt(oc_esp_sa_t *si, oc_esp_ctx_t *xi,
                                const uint8_t *pkt, uint32_t n)
{
    uint8_t c[512], *inner;
    uint32_t ilen;
    memcpy(c, pkt, n);
    return oc__esp_decap(si, xi, c, n, &inner, &ilen);
}

static void test_replay(void **state)
{
    oc_esp_sa_t so, si;
    oc_esp_ctx_t xo, xi;
    uint8_t p[512];
    uint32_t n;
    (void)state;

    sa_pair(&so, &si, &xo, &xi);
    n = seal_seq(&so, &xo, 5, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_REPLAY);
    /* out of order inside the window: accepted once */
    n = seal_seq(&so, &xo, 3, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_REPLAY);
    /* jump ahead by more than the window: the old ones fall out of it */
    n = seal_seq(&so, &xo, 5 + OC_ESP_WINDOW + 100, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    n = seal_seq(&so, &xo, 4, p); /* never seen, but left of the window */
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_REPLAY);
    n = seal_seq(&so, &xo, 5 + 101, p); /* the window's left edge: new */
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    n = seal_seq(&so, &xo, 5 + 100, p); /* just outside */
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_REPLAY);
    /* slide by less than a word and by several words: bits of the old
     * window positions must not leak into the new ones */
    for (uint64_t s = 2000; s < 2000 + 3 * OC_ESP_WINDOW; s += 37) {
        n = seal_seq(&so, &xo, s, p);
        assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    }
    /* a forged packet (bad ICV) far ahead does not move the window */
    n = seal_seq(&so, &xo, 100000, p);
    p[n - 1] ^= 1;
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_ICV);
    n = seal_seq(&so, &xo, 2000 + 3 * OC_ESP_WINDOW - 5, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    /* sequence number 0 is never valid */
    n = seal_seq(&so, &xo, 1, p);
    p[24] = p[25] = p[26] = p[27] = 0; /* AAD changes too: ICV or replay */
    assert_int_not_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    oc__esp_ctx_free(&xo);
    oc__esp_ctx_free(&xi);
}

static void test_icv(void **state)
{
    oc_esp_sa_t so, si;
    oc_esp_ctx_t xo, xi;
    uint8_t p[512];
    uint32_t n;
    (void)state;

    sa_pair(&so, &si, &xo, &xi);
    for (uint32_t at = 24; at < sizeof(kat_out0); at += 3) {
        uint64_t s = 10 + at;
        n = seal_seq(&so, &xo, s, p);
        p[at] ^= 0x10;
        /* seq (AAD), IV, ciphertext, ICV: every byte is authenticated */
        assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_ICV);
        p[at] ^= 0x10; /* and the failure did not burn the number */
        assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    }
    n = seal_seq(&so, &xo, 9999, p);
    p[20] ^= 1; /* SPI */
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_UNKNOWN_SPI);
    oc__esp_ctx_free(&xo);
    oc__esp_ctx_free(&xi);
}

static void test_seq_overflow(void **state)
{
    oc_esp_sa_t so, si;
    oc_esp_ctx_t xo, xi;
    uint8_t buf[HR + 256], *o;
    uint32_t olen;
    (void)state;

    sa_pair(&so, &si, &xo, &xi);
    so.seq = UINT32_MAX - 1;
    for (int i = 0; i < 3; i++) {
        memcpy(buf + HR, kat_in0, sizeof(kat_in0));
        assert_int_equal(oc__esp_encap(&so, &xo, buf + HR, sizeof(kat_in0), HR,
                                      128, 0, &o, &olen),
                         i == 0 ? OC_ESP_OK : OC_ESP_E_SEQ_OVERFLOW);
    }
    /* MTU and room */
    so.seq = 0;
    memcpy(buf + HR, kat_in0, sizeof(kat_in0));
    assert_int_equal(oc__esp_encap(&so, &xo, buf + HR, sizeof(kat_in0), HR, 128,
                                  sizeof(kat_in0) + 50, &o, &olen),
                     OC_ESP_E_TOO_BIG);
    assert_int_equal(oc__esp_encap(&so, &xo, buf + HR, sizeof(kat_in0), 30, 128,
                                  0, &o, &olen), OC_ESP_E_NO_ROOM);
    assert_int_equal(oc__esp_encap(&so, &xo, buf + HR, sizeof(kat_in0), HR, 10,
                                  0, &o, &olen), OC_ESP_E_NO_ROOM);
    assert_int_equal(oc__esp_encap(&so, &xo, buf + HR, sizeof(kat_in0), HR,
                                  128, sizeof(kat_in0) + OC_ESP_OVERHEAD, &o,
                                  &olen), OC_ESP_OK);
    oc__esp_ctx_free(&xo);
    oc__esp_ctx_free(&xi);
}

/* An authenticated packet with an arbitrary plaintext @p pt: sealed with
 * EVP directly, so that the trailer can be anything. */
static uint32_t seal_raw(const uint8_t *pt, uint32_t ptlen, uint32_t seq,
                         uint8_t *p)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    uint8_t nonce[12];
    uint32_t tot = 36 + ptlen + 16;
    int n;

    memset(p, 0, 36);
    p[0] = 0x45;
    p[2] = (uint8_t)(tot >> 8);
    p[3] = (uint8_t)tot;
    p[9] = 50;
    p[12] = 192, p[13] = 0, p[14] = 2, p[15] = 1; /* LOCAL -> PEER */
    p[16] = 192, p[17] = 0, p[18] = 2, p[19] = 2;
    p[22] = 0x10, p[23] = 0x01;
    p[24] = (uint8_t)(seq >> 24), p[25] = (uint8_t)(seq >> 16);
    p[26] = (uint8_t)(seq >> 8), p[27] = (uint8_t)seq;
    memcpy(p + 32, p + 24, 4);
    memcpy(nonce, kat_salt, 4);
    memcpy(nonce + 4, p + 28, 8);
    assert_non_null(c);
    assert_int_equal(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, kat_key,
                                        nonce), 1);
    assert_int_equal(EVP_EncryptUpdate(c, NULL, &n, p + 20, 8), 1);
    assert_int_equal(EVP_EncryptUpdate(c, p + 36, &n, pt, (int)ptlen), 1);
    assert_int_equal(EVP_EncryptFinal_ex(c, p + 36 + ptlen, &n), 1);
    assert_int_equal(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
                                         p + 36 + ptlen), 1);
    EVP_CIPHER_CTX_free(c);
    return tot;
}

static void test_malformed(void **state)
{
    oc_esp_sa_t so, si;
    oc_esp_ctx_t xo, xi;
    uint8_t pt[256], p[512];
    uint32_t n, il = sizeof(kat_in0), seq = 1;
    (void)state;

    sa_pair(&so, &si, &xo, &xi);
    /* the control: a hand-sealed good packet opens */
    memcpy(pt, kat_in0, il);
    pt[il] = 1, pt[il + 1] = 2, pt[il + 2] = 2, pt[il + 3] = 4;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_OK);
    /* bad padding bytes */
    pt[il + 1] = 7;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_BAD_PAD);
    /* pad length past the data */
    pt[il + 1] = 2, pt[il + 2] = 200;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_BAD_PAD);
    /* next header 17, 59 (dummy) */
    pt[il + 2] = 2, pt[il + 3] = 17;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_BAD_NEXT_HDR);
    pt[il + 3] = 59;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_DUMMY);
    /* inner length past the data; inner version 6 under next header 4 */
    pt[il + 3] = 4;
    pt[3] += 8;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_BAD_INNER);
    pt[3] -= 8;
    pt[0] = 0x65;
    n = seal_raw(pt, il + 4, seq++, p);
    assert_int_equal(open_pkt(&si, &xi, p, n), OC_ESP_E_BAD_INNER);
    /* short: every truncation of a good packet is refused, none crashes */
    pt[0] = 0x45;
    n = seal_raw(pt, il + 4, seq++, p);
    for (uint32_t k = 0; k < n; k++) {
        uint8_t c[512];
        memcpy(c, p, n);
        c[2] = (uint8_t)(k >> 8), c[3] = (uint8_t)k; /* total length k */
        assert_int_not_equal(open_pkt(&si, &xi, c, k), OC_ESP_OK);
    }
    assert_int_equal(open_pkt(&si, &xi, p, 30), OC_ESP_E_MALFORMED);
    p[2] = 0, p[3] = 40;
    assert_int_equal(open_pkt(&si, &xi, p, 40), OC_ESP_E_SHORT);
    assert_int_equal(open_pkt(&si, &xi, p, 10), OC_ESP_E_SHORT);
    oc__esp_ctx_free(&xo);
    oc__esp_ctx_free(&xi);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file(void **state)
{
    char path[] = "/tmp/oc-esp-key-XXXXXX", why[256];
    uint8_t key[32], salt[4];
    const char *hex = "0x202122232425262728292a2b2c2d2e2f"
                      "303132333435363738393a3b3c3d3e3fcafebabe\n";
    int fd = mkstemp(path);
    (void)state;

    assert_true(fd >= 0);
    close(fd);
    write_file(path, hex, 0600);
    assert_int_equal(oc__esp_key_file(path, key, salt, why, sizeof(why)), OC_OK);
    assert_memory_equal(key, kat_key, 32);
    assert_memory_equal(salt, kat_salt, 4);
    write_file(path, hex, 0640);
    assert_int_equal(oc__esp_key_file(path, key, salt, why, sizeof(why)),
                     OC_ERR_CONFIG);
    assert_non_null(strstr(why, "chmod 600"));
    assert_null(strstr(why, "2021")); /* never the key */
    write_file(path, "0x2021\n", 0600);
    assert_int_equal(oc__esp_key_file(path, key, salt, why, sizeof(why)),
                     OC_ERR_CONFIG);
    assert_non_null(strstr(why, "found 4"));
    write_file(path, "zz", 0600);
    assert_int_equal(oc__esp_key_file(path, key, salt, why, sizeof(why)),
                     OC_ERR_CONFIG);
    unlink(path);
    assert_int_equal(oc__esp_key_file(path, key, salt, why, sizeof(why)),
                     OC_ERR_CONFIG);
}

static void test_sa_syntax(void **state)
{
    char dir[] = "/tmp/oc-esp-sa-XXXXXX", path[128], why[320], text[512];
    oc_esp_sa_spec_t sa, sa2;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/k", dir);
    write_file(path, "202122232425262728292a2b2c2d2e2f"
                     "303132333435363738393a3b3c3d3e3f cafebabe\n", 0600);
    /* relative key path from the base dir, hex spi, match prefix */
    assert_int_equal(oc__esp_sa_parse("out spi=0x1001 local=192.0.2.1 "
                                     "peer=192.0.2.2 key=k match=10.1.2.3/16",
                                     dir, &sa, why, sizeof(why)), 0);
    assert_true(sa.sa.outbound);
    assert_int_equal(sa.sa.spi, 0x1001);
    assert_int_equal(sa.sa.local, LOCAL);
    assert_int_equal(sa.match_ip, 0x0a010000u);
    assert_int_equal(sa.match_len, 16);
    assert_memory_equal(sa.sa.key, kat_key, 32);
    assert_memory_equal(sa.sa.salt, kat_salt, 4);
    /* format round-trips, and shows no key */
    oc__esp_sa_format(&sa, text, sizeof(text));
    assert_null(strstr(text, "2021"));
    assert_int_equal(oc__esp_sa_parse(text, NULL, &sa2, why, sizeof(why)), 0);
    assert_memory_equal(&sa, &sa2, sizeof(sa));
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "expected in|out"},
        {"both spi=300", "expected in or out"},
        {"in spi=255 local=1.1.1.1 peer=1.1.1.2 key=k", "reserved"},
        {"in spi=0x1 local=1.1.1.1 peer=1.1.1.2 key=k", "reserved"},
        {"in spi=4294967296 local=1.1.1.1 peer=1.1.1.2 key=k", "256.."},
        {"in spi=300 local=1.1.1 peer=1.1.1.2 key=k", "local '1.1.1'"},
        {"in spi=300 peer=1.1.1.2 key=k", "missing local"},
        {"in spi=300 local=1.1.1.1 peer=1.1.1.2", "missing key"},
        {"in spi=300 local=1.1.1.1 peer=1.1.1.2 key=k match=any", "for out"},
        {"out spi=300 local=1.1.1.1 peer=1.1.1.2 key=k match=1.2.3.4/33", "match"},
        {"out spi=300 spi=301", "twice"},
        {"out spi=300 colour=red", "unknown key"},
        {"out spi=300 local=1.1.1.1 peer=1.1.1.2 key=nosuch", "nosuch"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        assert_int_equal(oc__esp_sa_parse(bad[i].text, dir, &sa, why,
                                         sizeof(why)), -1);
        if (strstr(why, bad[i].why) == NULL)
            fail_msg("'%s': reason '%s' lacks '%s'", bad[i].text, why,
                     bad[i].why);
    }
    unlink(path);
    rmdir(dir);
}

/* offcore-dp's config directives for ESP and IPFIX (src/dp/conf/conf.c) */
static void test_conf(void **state)
{
    char dir[] = "/tmp/oc-esp-conf-XXXXXX", path[128], text[1024];
    oc_dp_conf_t c;
    oc_conf_errors_t e;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/k", dir);
    write_file(path, "202122232425262728292a2b2c2d2e2f"
                     "303132333435363738393a3b3c3d3e3fcafebabe\n", 0600);
    snprintf(text, sizeof(text),
             "attach t0 host=h0 wire=w0\n"
             "sa out spi=0x1001 local=192.0.2.1 peer=192.0.2.2 key=k match=10.0.0.0/8\n"
             "sa in spi=0x2002 local=192.0.2.1 peer=192.0.2.2 key=%s\n"
             "esp_clear allow\nesp_mtu 9000\n"
             "ipfix 127.0.0.1:4739\nipfix collector:2055\nflow_idle 5\n"
             "flow_table 4096\nipfix_domain 9\nipfix_template 10\n", path);
    oc__dp_conf_defaults(&c);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(text, strlen(text), "t.conf", dir, false,
                                      &c, &e), OC_OK);
    assert_true(c.esp && c.esp_clear && c.flows);
    assert_int_equal(c.nsa, 2);
    assert_int_equal(c.esp_mtu, 9000);
    assert_int_equal(c.nipfix, 2);
    assert_string_equal(c.ipfix[1], "collector:2055");
    assert_int_equal(c.flow_idle_s, 5);
    assert_int_equal(c.flow_table, 4096);
    assert_int_equal(c.ipfix_domain, 9);
    assert_int_equal(c.ipfix_template_s, 10);
    assert_memory_equal(c.sa[1].sa.key, kat_key, 32);
    oc__dp_conf_free(&c);

    /* every error with file:line, nothing taken */
    snprintf(text, sizeof(text),
             "attach t0 host=h0 wire=w0\n"
             "sa out spi=0x1001 local=192.0.2.1 peer=192.0.2.2 key=k\n"
             "sa out spi=0x1001 local=192.0.2.1 peer=192.0.2.2 key=k\n"
             "sa in spi=12 local=192.0.2.1 peer=192.0.2.2 key=k\n"
             "esp_clear maybe\nesp_mtu 100\nipfix nowhere\nipfix h:99999\n"
             "flow_table 1000\nflow_active 0\n");
    oc__dp_conf_defaults(&c);
    memset(&e, 0, sizeof(e));
    assert_int_equal(oc__dp_conf_parse(text, strlen(text), "t.conf", dir, false,
                                      &c, &e), OC_ERR_CONFIG);
    static const char *const want[] = {
        "t.conf:3: sa: out spi 0x00001001 defined twice",
        "t.conf:4: sa: spi '12'", "t.conf:5: esp_clear 'maybe'",
        "t.conf:6: esp_mtu '100'", "t.conf:7: ipfix 'nowhere'",
        "t.conf:8: ipfix 'h:99999'", "t.conf:9: flow_table '1000'",
        "t.conf:10: flow_active '0'"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(e.text, want[i]) == NULL)
            fail_msg("missing '%s' in:\n%s", want[i], e.text);
    assert_int_equal(c.nsa, 0);
    assert_int_equal(e.count, 8);
    unlink(path);
    rmdir(dir);
}

static void test_mss(void **state)
{
    /* IPv4 TCP SYN with options MSS 1460, NOP, NOP, SACK-permitted */
    uint8_t p[48] = {0x45, 0, 0, 48, 0, 0, 0x40, 0, 64, 6, 0, 0,
                     10, 1, 0, 1, 10, 1, 0, 2};
    uint8_t *t = p + 20;
    uint32_t s = 0;
    (void)state;

    t[0] = 0x13, t[1] = 0x88, t[2] = 0x1f, t[3] = 0x90;
    t[12] = 7 << 4;
    t[13] = 0x02;
    t[20] = 2, t[21] = 4, t[22] = 0x05, t[23] = 0xb4;
    t[24] = 1, t[25] = 1, t[26] = 4, t[27] = 2;
    /* TCP checksum over the pseudo-header and segment, then compare the
     * incremental update with a recomputation */
    for (int pass = 0; pass < 2; pass++) {
        s = 10 * 256 + 1 + 0 + 1 + 10 * 256 + 1 + 0 + 2 + 6 + 28;
        if (pass == 0)
            t[16] = t[17] = 0;
        for (int i = 0; i < 28; i += 2)
            s += (uint32_t)(t[i] << 8 | t[i + 1]);
        while (s >> 16)
            s = (s & 0xffff) + (s >> 16);
        if (pass == 0) {
            t[16] = (uint8_t)(~s >> 8);
            t[17] = (uint8_t)~s;
        }
    }
    assert_int_equal(s, 0xffff); /* valid before */
    assert_true(oc__esp_mss_clamp(p, sizeof(p), 1360));
    assert_int_equal(t[22] << 8 | t[23], 1360);
    s = 10 * 256 + 1 + 0 + 1 + 10 * 256 + 1 + 0 + 2 + 6 + 28;
    for (int i = 0; i < 28; i += 2)
        s += (uint32_t)(t[i] << 8 | t[i + 1]);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    assert_int_equal(s, 0xffff); /* still valid after */
    assert_false(oc__esp_mss_clamp(p, sizeof(p), 1400)); /* already lower */
    t[13] = 0x10; /* not a SYN */
    assert_false(oc__esp_mss_clamp(p, sizeof(p), 1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kat),          cmocka_unit_test(test_replay),
        cmocka_unit_test(test_icv),          cmocka_unit_test(test_seq_overflow),
        cmocka_unit_test(test_malformed),    cmocka_unit_test(test_key_file),
        cmocka_unit_test(test_sa_syntax),    cmocka_unit_test(test_mss),
        cmocka_unit_test(test_conf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
