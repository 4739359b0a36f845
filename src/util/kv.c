/*
 * kv.c — the tokenizer of configuration text and its error list (kv.h).
 * Written by hand: the syntax is a line of words, which no library we
 * use parses strictly enough (getsubopt(3) takes comma-separated options
 * and neither reports duplicates nor bounds lengths; inih's INI sections
 * are not our format).  Pure; thread-safe on distinct arguments.
 */
#include "util/kv.h"
#include "util/bytes.h"
#include "util/esc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void oc__conf_error(oc_conf_errors_t *e, const char *file, unsigned line,
                   const char *fmt, ...)
{
    char raw[1024], msg[1024];
    size_t used = strnlen(e->text, sizeof(e->text));
    va_list ap;
    int n;

    e->count++;
    n = file == NULL ? 0
        : line       ? snprintf(raw, sizeof(raw), "%s:%u: ", file, line)
                     : snprintf(raw, sizeof(raw), "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof(raw))
        n = 0;
    va_start(ap, fmt);
    vsnprintf(raw + n, sizeof(raw) - (size_t)n, fmt, ap);
    va_end(ap);
    /* the reason quotes the file: its bytes reach a terminal escaped */
    oc__esc(raw, strnlen(raw, sizeof(raw)), msg, sizeof(msg));
    if (e->echo != NULL)
        fprintf(e->echo, "%s\n", msg);
    /* cut whole: a list that ends mid-message would misname the line */
    if (used + strlen(msg) + 2 <= sizeof(e->text))
        snprintf(e->text + used, sizeof(e->text) - used, "%s\n", msg);
}

int oc__kv_next_line(const char *text, size_t len, size_t *pos, char *buf,
                    size_t cap, const char *file, unsigned *line,
                    oc_conf_errors_t *e)
{
    const char *s = text + *pos, *nl;
    size_t l;

    if (*pos >= len)
        return 0;
    nl = memchr(s, '\n', len - *pos);
    l = nl != NULL ? (size_t)(nl - s) : len - *pos;
    *pos += l + 1;
    ++*line;
    if (l > 0 && s[l - 1] == '\r')
        l--;
    if (l >= cap) {
        oc__conf_error(e, file, *line, "line longer than %zu bytes", cap - 1);
        return -1;
    }
    if (memchr(s, '\0', l) != NULL) {
        oc__conf_error(e, file, *line, "NUL byte");
        return -1;
    }
    memcpy(buf, s, l);
    buf[l] = '\0';
    return 1;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int oc__kv_split(char *line, char **word, int max)
{
    int n = 0;
    char *p = line;

    for (;;) {
        while (blank(*p))
            p++;
        if (*p == '\0' || *p == '#')
            return n;
        if (n == max)
            return -1;
        word[n++] = p;
        while (*p != '\0' && !blank(*p))
            p++;
        if (*p != '\0')
            *p++ = '\0';
    }
}

int oc__kv_split_text(const char *text, char *buf, size_t cap, char **word,
                     int max)
{
    size_t n = strcspn(text, "\n");

    if (n >= cap)
        return -2;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return oc__kv_split(buf, word, max);
}

int oc__kv_key(char *word, const char *const *keys, unsigned *seen,
              char **value, char *why, size_t whylen)
{
    char *eq = strchr(word, '=');
    int k;

    if (eq == NULL) {
        snprintf(why, whylen, "'%.64s': expected KEY=VALUE", word);
        return -1;
    }
    *eq = '\0';
    for (k = 0; k < OC_KV_MAX_KEYS && keys[k] != NULL; k++)
        if (!strcmp(word, keys[k]))
            break;
    if (k == OC_KV_MAX_KEYS || keys[k] == NULL) {
        /* name the keys there are: the reader's likely typo is among them */
        int used = snprintf(why, whylen, "unknown key '%.32s' (", word);
        for (int i = 0; i < OC_KV_MAX_KEYS && keys[i] != NULL && used >= 0 &&
                        (size_t)used < whylen; i++)
            used += snprintf(why + used, whylen - (size_t)used, "%s%s",
                             i ? " " : "", keys[i]);
        if (used >= 0 && (size_t)used < whylen)
            snprintf(why + used, whylen - (size_t)used, ")");
        *eq = '=';
        return -1;
    }
    if (seen != NULL) {
        if (*seen & (1u << k)) {
            snprintf(why, whylen, "'%s' given twice", keys[k]);
            *eq = '=';
            return -1;
        }
        *seen |= 1u << k;
    }
    *value = eq + 1;
    return k;
}

int oc__kv_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int oc__kv_ipv4(const char *s, uint32_t *ip)
{
    struct in_addr a;

    if (inet_pton(AF_INET, s, &a) != 1)
        return -1;
    *ip = oc__load_be32(&a.s_addr);
    return 0;
}

int oc__kv_prefix(const char *s, uint32_t *ip, uint8_t *len)
{
    char buf[INET_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    size_t al = slash != NULL ? (size_t)(slash - s) : strlen(s);
    uint64_t l = 32;
    uint32_t a;

    if (!strcmp(s, "any")) {
        *ip = 0;
        *len = 0;
        return 0;
    }
    if (al >= sizeof(buf))
        return -1;
    memcpy(buf, s, al);
    buf[al] = '\0';
    if (oc__kv_ipv4(buf, &a) != 0 ||
        (slash != NULL && oc__kv_u64(slash + 1, 0, 32, &l) != 0))
        return -1;
    *ip = l == 0 ? 0 : a & ~0u << (32 - l);
    *len = (uint8_t)l;
    return 0;
}

int oc__kv_prefix6(const char *s, uint8_t a[16], uint8_t *len)
{
    char buf[INET6_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    size_t al = slash != NULL ? (size_t)(slash - s) : strlen(s);
    uint64_t l = 128;
    uint8_t b[16];

    if (al == 0 || al >= sizeof(buf))
        return -1;
    memcpy(buf, s, al);
    buf[al] = '\0';
    if (inet_pton(AF_INET6, buf, b) != 1 ||
        (slash != NULL && oc__kv_u64(slash + 1, 0, 128, &l) != 0))
        return -1;
    for (unsigned i = (unsigned)l; i < 128; i++) /* host bits: cleared */
        b[i / 8] &= (uint8_t)~(0x80u >> (i % 8));
    memcpy(a, b, 16);
    *len = (uint8_t)l;
    return 0;
}
