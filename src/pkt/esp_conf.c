/*
 * esp_conf.c — ESP key files and the SA syntax (esp.h): what offcore-dp's
 * config file (`sa ...`) and control socket (`sa add ...`) read.  No
 * OpenSSL here, so that the config parser and its fuzz target link it
 * alone.  The operator's input, parsed strictly; key bytes are zeroed
 * after use on the stack and never appear in a message.
 */
#include "pkt/esp.h"
#include "util/kv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

oc_status_t oc_esp_key_file(const char *path, uint8_t key[OC_ESP_KEY_LEN],
                            uint8_t salt[OC_ESP_SALT_LEN], char *why,
                            size_t whylen)
{
    uint8_t buf[256], raw[OC_ESP_KEY_LEN + OC_ESP_SALT_LEN];
    struct stat st;
    ssize_t got;
    size_t nd = 0, i = 0;
    int fd;

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "key file %s: %s", path, strerror(errno));
        return OC_ERR_CONFIG;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "key file %s: not a regular file", path);
        goto bad;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(why, whylen, "key file %s: mode %03o gives group or others "
                 "access (chmod 600)", path, (unsigned)(st.st_mode & 0777));
        goto bad;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        snprintf(why, whylen, "key file %s: owned by uid %u, neither root nor "
                 "this process's", path, (unsigned)st.st_uid);
        goto bad;
    }
    got = read(fd, buf, sizeof(buf));
    if (got < 0 || (size_t)got == sizeof(buf)) {
        snprintf(why, whylen, "key file %s: %s", path,
                 got < 0 ? strerror(errno) : "longer than a key");
        goto bad;
    }
    if (got >= 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))
        i = 2;
    for (; i < (size_t)got; i++) {
        int v = hexval(buf[i]);
        if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')
            continue;
        if (v < 0 || nd >= 2 * sizeof(raw)) {
            snprintf(why, whylen, "key file %s: expected %zu hex digits "
                     "(32-byte key, 4-byte salt)", path, 2 * sizeof(raw));
            goto bad;
        }
        raw[nd / 2] = (uint8_t)(nd % 2 ? raw[nd / 2] | v : v << 4);
        nd++;
    }
    if (nd != 2 * sizeof(raw)) {
        snprintf(why, whylen, "key file %s: expected %zu hex digits (32-byte "
                 "key, 4-byte salt), found %zu", path, 2 * sizeof(raw), nd);
        goto bad;
    }
    memcpy(key, raw, OC_ESP_KEY_LEN);
    memcpy(salt, raw + OC_ESP_KEY_LEN, OC_ESP_SALT_LEN);
    memset(raw, 0, sizeof(raw));
    memset(buf, 0, sizeof(buf));
    close(fd);
    return OC_OK;
bad:
    memset(raw, 0, sizeof(raw));
    memset(buf, 0, sizeof(buf));
    close(fd);
    return OC_ERR_CONFIG;
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

int oc_esp_sa_parse(const char *text, const char *base_dir,
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
    n = oc_kv_split_text(text, line, sizeof(line), tok,
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
        int k = oc_kv_key(tok[i], keys, &seen, &val, why, whylen);
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
            if (oc_kv_ipv4(val, k == LOCAL ? &s.sa.local : &s.sa.peer) != 0)
                return WHY("%s '%.40s': expected an IPv4 address", tok[i], val);
        } else if (k == KEY) {
            int l = val[0] == '/' || base_dir == NULL
                        ? snprintf(s.key_path, sizeof(s.key_path), "%s", val)
                        : snprintf(s.key_path, sizeof(s.key_path), "%s/%s",
                                   base_dir, val);
            if (val[0] == '\0' || l < 0 || (size_t)l >= sizeof(s.key_path))
                return WHY("key: expected a file name (at most %zu bytes)",
                           sizeof(s.key_path) - 1);
        } else if (oc_kv_prefix(val, &s.match_ip, &s.match_len) != 0) {
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
    if (oc_esp_key_file(s.key_path, s.sa.key, s.sa.salt, why, whylen) != OC_OK)
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

int oc_esp_sa_format(const oc_esp_sa_spec_t *s, char *buf, size_t cap)
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
