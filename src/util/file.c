/*
 * file.c — the one file loader (file.h): the checks on the open
 * descriptor, then one bounded read.
 */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHY(...) snprintf(why, whylen, __VA_ARGS__)

const char *oc__file_size_str(size_t bytes, char *out, size_t cap)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(out, cap, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(out, cap, "%zu KiB", bytes >> 10);
    else
        snprintf(out, cap, "%zu bytes", bytes);
    return out;
}

static const char *kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "not a plain file";
}

oc_status_t oc__file_open(const char *path, const oc_file_rules_t *r,
                          int *fd_out, char *why, size_t whylen)
{
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    struct stat sb;
    char lim[32];
    int fd;

    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer
     * (fstat refuses it next); O_NOFOLLOW: a key's link could point
     * anywhere */
    if (r->flags & OC_FILE_PRIVATE)
        flags |= O_NOFOLLOW;
    fd = open(path, flags);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP && (r->flags & OC_FILE_PRIVATE))
            WHY("%s %s: a symbolic link (give the file itself)", r->what, path);
        else if (e == EMFILE || e == ENFILE)
            WHY("%s %s: %s (the descriptor limit, ulimit -n, is reached)",
                r->what, path, strerror(e));
        else
            WHY("%s %s: %s", r->what, path, strerror(e));
        return OC_ERR_CONFIG;
    }
    if (fstat(fd, &sb) != 0) {
        WHY("%s %s: %s", r->what, path, strerror(errno));
        goto err;
    }
    if (!S_ISREG(sb.st_mode)) {
        WHY("%s %s: not a regular file (%s)", r->what, path, kind(sb.st_mode));
        goto err;
    }
    if (r->flags & OC_FILE_PRIVATE) {
        if ((sb.st_mode & 077) != 0) {
            WHY("%s %s: mode %03o lets others read it (chmod 600 %s)", r->what,
                path, (unsigned)(sb.st_mode & 0777), path);
            goto err;
        }
        if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
            WHY("%s %s: owned by uid %u, neither root nor this process's "
                "user (uid %u)", r->what, path, (unsigned)sb.st_uid,
                (unsigned)geteuid());
            goto err;
        }
    }
    if ((uint64_t)sb.st_size > r->max_bytes) {
        WHY("%s %s: larger than %s (%llu bytes)", r->what, path,
            oc__file_size_str(r->max_bytes, lim, sizeof(lim)),
            (unsigned long long)sb.st_size);
        goto err;
    }
    *fd_out = fd;
    return OC_OK;
err:
    close(fd);
    return OC_ERR_CONFIG;
}

static oc_status_t too_long(const char *path, const oc_file_rules_t *r,
                            char *why, size_t whylen)
{
    char lim[32];
    WHY("%s %s: larger than %s", r->what, path,
        oc__file_size_str(r->max_bytes, lim, sizeof(lim)));
    return OC_ERR_CONFIG;
}

/* read() into buf[*n, cap) until the end or cap; 1 at the end, 0 full */
static int fill(int fd, const char *path, const oc_file_rules_t *r, char *buf,
                size_t cap, size_t *n, char *why, size_t whylen)
{
    while (*n < cap) {
        ssize_t got = read(fd, buf + *n, cap - *n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            WHY("%s %s: %s", r->what, path, strerror(errno));
            return -1;
        }
        if (got == 0)
            return 1;
        *n += (size_t)got;
    }
    return 0;
}

oc_status_t oc__file_read_fd(int fd, const char *path, const oc_file_rules_t *r,
                             void *buf, size_t cap, size_t *len, char *why,
                             size_t whylen)
{
    size_t n = 0;
    int rc = fill(fd, path, r, buf, cap, &n, why, whylen);

    if (rc < 0)
        return OC_ERR_CONFIG;
    if (rc == 0 || n > r->max_bytes) /* cap bytes or more */
        return too_long(path, r, why, whylen);
    *len = n;
    return OC_OK;
}

oc_status_t oc__file_read(const char *path, const oc_file_rules_t *r,
                          char **buf_out, size_t *len_out, char *why,
                          size_t whylen)
{
    oc_status_t st = OC_ERR_CONFIG;
    struct stat sb;
    char *buf = NULL;
    size_t len = 0, cap;
    int fd, rc;

    st = oc__file_open(path, r, &fd, why, whylen);
    if (st != OC_OK)
        return st;
    st = OC_ERR_CONFIG;
    /* the size fstat gave, then more as the file grows while it is read
     * (or says 0, as /proc files do), up to the cap: max_bytes + 1 is
     * the first byte too many */
    cap = fstat(fd, &sb) == 0 && sb.st_size > 0 ? (size_t)sb.st_size + 1
                                                : 4096;
    for (;;) {
        char *g;
        if (cap > r->max_bytes + 1)
            cap = r->max_bytes + 1;
        g = realloc(buf, cap + 1);
        if (g == NULL) {
            WHY("%s %s: out of memory", r->what, path);
            st = OC_ERR_NO_MEMORY;
            goto out;
        }
        buf = g;
        rc = fill(fd, path, r, buf, cap, &len, why, whylen);
        if (rc < 0)
            goto out;
        if (rc > 0)
            break;
        if (cap == r->max_bytes + 1) {
            st = too_long(path, r, why, whylen);
            goto out;
        }
        cap *= 2;
    }
    buf[len] = '\0';
    *buf_out = buf;
    *len_out = len;
    buf = NULL;
    st = OC_OK;
out:
    free(buf);
    close(fd);
    return st;
}
