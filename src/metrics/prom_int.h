/*
 * prom_int.h — character classes and the UTF-8 check that the Prometheus
 * text writer (prom.c) and parser (prom_parse.c) share.  Private to
 * src/metrics.  Pure functions.
 */
#ifndef OC_METRICS_PROM_INT_H
#define OC_METRICS_PROM_INT_H

#include <stddef.h>

static inline int is_alpha_(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static inline int metric_char(int c, int first)
{
    return is_alpha_(c) || c == ':' || (!first && is_digit(c));
}

static inline int label_char(int c, int first)
{
    return is_alpha_(c) || (!first && is_digit(c));
}

/* Well-formed UTF-8 (RFC 3629): no overlong forms, surrogates, or code
 * points past U+10FFFF. */
static inline int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xbf;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else
            return 0;
        if (n - i - 1 < k)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xbf)
                return 0;
        i += k + 1;
    }
    return 1;
}

#endif
