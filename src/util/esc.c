/*
 * esc.c — escaping for logs and terminals (esc.h).
 */
#include "util/esc.h"

#include <stdint.h>
#include <string.h>

static int printable(unsigned char c)
{
    return c >= 0x20 && c < 0x7f;
}

size_t oc__esc(const void *s, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = s;
    size_t o = 0;

    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (printable(p[i])) {
            if (o + 1 >= cap)
                break;
            out[o++] = (char)p[i];
        } else {
            if (o + 4 >= cap)
                break;
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[p[i] >> 4];
            out[o++] = hex[p[i] & 15];
        }
    }
    out[o] = '\0';
    return o;
}

const char *oc__esc_str(const char *s, char *out, size_t cap)
{
    oc__esc(s, strlen(s), out, cap);
    return out;
}

int oc__esc_clean(const void *s, size_t n)
{
    const unsigned char *p = s;

    for (size_t i = 0; i < n; i++)
        if (!printable(p[i]))
            return 0;
    return 1;
}

size_t oc__esc_utf8(const void *s, size_t n)
{
    const unsigned char *p = s;
    uint32_t cp;
    size_t len;

    if (n == 0 || p[0] < 0xc2 || p[0] > 0xf4)
        return 0; /* ASCII, a continuation byte, or an overlong lead */
    len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
    if (n < len)
        return 0;
    cp = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
        return 0;
    return len;
}
