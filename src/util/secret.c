/*
 * secret.c — key files (secret.h): the checks on the open descriptor
 * (what is checked is what is read), then one bounded read.
 */
#include "util/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHY(...) snprintf(why, whylen, __VA_ARGS__)

oc_status_t oc__secret_read(const char *path, uint8_t *buf, size_t cap,
                           size_t *len, char *why, size_t whylen)
{
    oc_status_t st = OC_ERR_CONFIG;
    struct stat sb;
    size_t n = 0;
    int fd;

    /* O_NOFOLLOW: a link could point anywhere; O_NONBLOCK: opening a FIFO
     * for reading must not wait for a writer (fstat refuses it next) */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        WHY("key file %s: %s", path,
            errno == ELOOP ? "a symbolic link (give the file itself)"
                           : strerror(errno));
        return OC_ERR_CONFIG;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        WHY("key file %s: not a regular file (%s)", path,
            S_ISFIFO(sb.st_mode)   ? "a FIFO"
            : S_ISDIR(sb.st_mode)  ? "a directory"
            : S_ISSOCK(sb.st_mode) ? "a socket"
                                   : "a device or other");
        goto out;
    }
    if ((sb.st_mode & 077) != 0) {
        WHY("key file %s: mode %03o lets others read it (chmod 600 %s)", path,
            (unsigned)(sb.st_mode & 0777), path);
        goto out;
    }
    if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
        WHY("key file %s: owned by uid %u, neither root nor this process's "
            "user (uid %u)", path, (unsigned)sb.st_uid, (unsigned)geteuid());
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            WHY("key file %s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            WHY("key file %s: longer than a key (%zu bytes or more)", path,
                cap);
            goto out;
        }
    }
    *len = n;
    st = OC_OK;
out:
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
