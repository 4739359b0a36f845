/*
 * secret.c — key files (secret.h): the file loader's rules for a key
 * (util/file.h: OC_FILE_PRIVATE), and the hex decoding.
 */
#include "util/secret.h"
#include "util/file.h"

#include <unistd.h>

oc_status_t oc__secret_read(const char *path, uint8_t *buf, size_t cap,
                           size_t *len, char *why, size_t whylen)
{
    const oc_file_rules_t r = {.what = "key file",
                               .max_bytes = cap > 0 ? cap - 1 : 0,
                               .flags = OC_FILE_PRIVATE};
    oc_status_t st;
    int fd;

    st = oc__file_open(path, &r, &fd, why, whylen);
    if (st != OC_OK)
        return st;
    st = oc__file_read_fd(fd, path, &r, buf, cap, len, why, whylen);
    close(fd);
    return st;
}

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

long oc__secret_hex(const uint8_t *s, size_t n, uint8_t *out, size_t cap)
{
    size_t i = 0, nd = 0;

    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        i = 2;
    for (; i < n; i++) {
        int v = hexval(s[i]);
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
            continue;
        if (v < 0)
            return -1;
        if (nd / 2 < cap)
            out[nd / 2] = (uint8_t)(nd % 2 ? out[nd / 2] | v : v << 4);
        nd++;
    }
    return nd % 2 || nd / 2 > cap ? -2 : (long)(nd / 2);
}
