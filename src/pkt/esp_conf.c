/*
 * esp_conf.c — ESP key files and the SA syntax (esp.h): what offcore-dp's
 * config file (`sa ...`) and control socket (`sa add ...`) read.  No
 * OpenSSL here, so that the config parser and its fuzz target link it
 * alone.  The operator's input, parsed strictly; key bytes are zeroed
 * after use on the stack and never appear in a message.
 */
#include "pkt/esp.h"
#include "util/kv.h"
#include "util/secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

oc_status_t oc__esp_key_file(const char *path, uint8_t key[OC_ESP_KEY_LEN],
                            uint8_t salt[OC_ESP_SALT_LEN], char *why,
                            size_t whylen)
{
    uint8_t buf[256], raw[OC_ESP_KEY_LEN + OC_ESP_SALT_LEN];
    oc_status_t st;
    size_t got = 0;
    long n;

    st = oc__secret_read(path, buf, sizeof(buf), &got, why, whylen);
    if (st != OC_OK)
        goto out;
    n = oc__secret_hex(buf, got, raw, sizeof(raw));
    if (n < 0) {
        snprintf(why, whylen, "key file %s: expected %zu hex digits (32-byte "
                 "key, 4-byte salt)", path, 2 * sizeof(raw));
        st = OC_ERR_CONFIG;
        goto out;
    }
    if (n != (long)sizeof(raw)) {
        snprintf(why, whylen, "key file %s: expected %zu hex digits (32-byte "
                 "key, 4-byte salt), found %ld", path, 2 * sizeof(raw), 2 * n);
        st = OC_ERR_CONFIG;
        goto out;
    }
    memcpy(key, raw, OC_ESP_KEY_LEN);
    memcpy(salt, raw + OC_ESP_KEY_LEN, OC_ESP_SALT_LEN);
out:
    memset(raw, 0, sizeof(raw));
    memset(buf, 0, sizeof(buf));
    return st;
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

int oc__esp_sa_parse(const char *text, const char *base_dir,
                    oc_esp_sa_spec_t *out, char *why, size_t whylen)
{
    static const char *const keys[] = {"spi", "local", "peer", "key",
                                       "match", NULL};
    enum { SPI, LOCAL, PEER, KEY, MATCH };
    oc_esp_sa_spec_t s;
    char line[1024], *tok[MATCH + 3];
    unsigned seen = 0;
    int n;

    memset(&s, 0, sizeof(s));
    n = oc__kv_split_text(text, line, sizeof(line), tok,
                         (int)(sizeof(tok) / sizeof(tok[0])));
    if (n == -2)
        return WHY("longer than %zu bytes", sizeof(line) - 1);
    if (n < 0) /* in|out and a word a key: the loop names the extra one */
        n = (int)(sizeof(tok) / sizeof(tok[0]));
    if (n == 0)
        return WHY("expected in|out spi=N local=A.B.C.D peer=A.B.C.D key=FILE "
                   "[match=PREFIX]");
    if (!strcmp(tok[0], "out"))
        s.sa.outbound = true;
    else if (strcmp(tok[0], "in") != 0)
        return WHY("'%.32s': expected in or out first", tok[0]);
    for (int i = 1; i < n; i++) {
        char *val;
        int k = oc__kv_key(tok[i], keys, &seen, &val, why, whylen);
        if (k < 0)
            return -1;
        if (k == SPI) {
            char *end;
            unsigned long long v;
            errno = 0;
            v = strtoull(val, &end, 0);
            if (val[0] < '0' || val[0] > '9' || *end != '\0' || errno != 0 ||
                v < 256 || v > UINT32_MAX)
                return WHY("spi '%.32s': expected 256..4294967295 (1..255 are "
                           "reserved, RFC 4303)", val);
            s.sa.spi = (uint32_t)v;
        } else if (k == LOCAL || k == PEER) {
            if (oc__kv_ipv4(val, k == LOCAL ? &s.sa.local : &s.sa.peer) != 0)
                return WHY("%s '%.40s': expected an IPv4 address", tok[i], val);
        } else if (k == KEY) {
            int l = val[0] == '/' || base_dir == NULL
                        ? snprintf(s.key_path, sizeof(s.key_path), "%s", val)
                        : snprintf(s.key_path, sizeof(s.key_path), "%s/%s",
                                   base_dir, val);
            if (val[0] == '\0' || l < 0 || (size_t)l >= sizeof(s.key_path))
                return WHY("key: expected a file name (at most %zu bytes)",
                           sizeof(s.key_path) - 1);
        } else if (oc__kv_prefix(val, &s.match_ip, &s.match_len) != 0) {
            return WHY("match '%.40s': expected A.B.C.D[/0..32] or any", val);
        }
    }
    if (!(seen & 1u << SPI))
        return WHY("missing spi=N");
    if (!(seen & 1u << LOCAL) || !(seen & 1u << PEER))
        return WHY("missing local= or peer= (the tunnel's two wire addresses)");
    if (!(seen & 1u << KEY))
        return WHY("missing key=FILE");
    if ((seen & 1u << MATCH) && !s.sa.outbound)
        return WHY("match= is for out SAs (which traffic they protect)");
    if (oc__esp_key_file(s.key_path, s.sa.key, s.sa.salt, why, whylen) != OC_OK)
        return -1;
    *out = s;
    memset(&s, 0, sizeof(s));
    return 0;
}

static void fmt_ip(char *b, size_t cap, uint32_t ip)
{
    snprintf(b, cap, "%u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255,
             ip & 255);
}

int oc__esp_sa_format(const oc_esp_sa_spec_t *s, char *buf, size_t cap)
{
    char l[16], p[16], m[24];
    fmt_ip(l, sizeof(l), s->sa.local);
    fmt_ip(p, sizeof(p), s->sa.peer);
    if (s->match_len == 0)
        snprintf(m, sizeof(m), "any");
    else {
        fmt_ip(m, sizeof(m), s->match_ip);
        snprintf(m + strlen(m), sizeof(m) - strlen(m), "/%u", s->match_len);
    }
    if (s->sa.outbound)
        return snprintf(buf, cap, "out spi=0x%08x local=%s peer=%s key=%s "
                        "match=%s", s->sa.spi, l, p, s->key_path, m);
    return snprintf(buf, cap, "in spi=0x%08x local=%s peer=%s key=%s",
                    s->sa.spi, l, p, s->key_path);
}
