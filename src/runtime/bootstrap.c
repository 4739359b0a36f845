/*
 * bootstrap.c — an all-gather through files in a shared directory, for
 * launchers that give only OC_RANK / OC_SIZE (tests, scripts, ssh loops).
 *
 * Call k of rank r writes <dir>/oc-<job>-<k>-<r> atomically (temp file and
 * rename) and waits until every rank's file of call k exists.  A rank
 * removes its file of call k-2 when it starts call k: by then every rank
 * has finished call k-1 and so has read call k-2.  The last two calls'
 * files are removed in oc_finalize after a final exchange.
 */
#include "runtime.h"

#include "util/log.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void path_of(const oc_context_t *ctx, uint32_t call, uint32_t rank,
                    char *buf, size_t n)
{
    snprintf(buf, n, "%s/oc-%u-%u-%u", ctx->cfg.bootstrap_dir,
             (unsigned)ctx->cfg.job, call, rank);
}

static oc_status_t write_file(const char *path, const void *buf, size_t len)
{
    char tmp[OC_CFG_STRLEN + 128];
    int fd;
    ssize_t n;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        goto err;
    n = write(fd, buf, len);
    if (close(fd) != 0 || n < 0 || (size_t)n != len)
        goto err;
    if (rename(tmp, path) != 0)
        goto err;
    return OC_OK;
err:
    oc_error(OC_COMP_RUNTIME, "bootstrap: cannot write %s: %s", path,
             strerror(errno));
    unlink(tmp);
    return OC_ERR_BOOTSTRAP;
}

/* 1 read, 0 not there yet, <0 error. */
static int read_file(const char *path, void *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    ssize_t n;
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    n = read(fd, buf, len);
    close(fd);
    if (n < 0 || (size_t)n != len) {
        oc_error(OC_COMP_RUNTIME,
                 "bootstrap: %s holds %zd bytes, expected %zu (ranks of "
                 "different builds, or a stale directory?)",
                 path, n, len);
        return -1;
    }
    return 1;
}

oc_status_t oc__file_allgather(void *arg, const void *sendbuf, void *recvbuf,
                               size_t len)
{
    oc_context_t *ctx = arg;
    char path[OC_CFG_STRLEN + 64];
    uint32_t call = ctx->bootstrap_seq++;
    uint64_t deadline;
    struct timespec pause = {0, 1000000};

    if (ctx->size == 1) {
        memcpy(recvbuf, sendbuf, len);
        return OC_OK;
    }
    if (call >= 2) {
        path_of(ctx, call - 2, ctx->rank, path, sizeof(path));
        unlink(path);
    }
    path_of(ctx, call, ctx->rank, path, sizeof(path));
    if (write_file(path, sendbuf, len) != OC_OK)
        return OC_ERR_BOOTSTRAP;
    deadline = oc__now_us() + ctx->cfg.bootstrap_timeout_s * 1000000u;
    for (uint32_t r = 0; r < ctx->size; r++) {
        int rc;
        path_of(ctx, call, r, path, sizeof(path));
        while ((rc = read_file(path, (uint8_t *)recvbuf + (size_t)r * len,
                               len)) == 0) {
            if (oc__now_us() > deadline) {
                oc_error(OC_COMP_RUNTIME,
                         "bootstrap: rank %u did not appear in %s within "
                         "%llu s (OC_BOOTSTRAP_TIMEOUT_S)", r,
                         ctx->cfg.bootstrap_dir,
                         (unsigned long long)ctx->cfg.bootstrap_timeout_s);
                return OC_ERR_BOOTSTRAP;
            }
            nanosleep(&pause, NULL);
        }
        if (rc < 0)
            return OC_ERR_BOOTSTRAP;
    }
    return OC_OK;
}

void oc__file_bootstrap_cleanup(oc_context_t *ctx)
{
    char path[OC_CFG_STRLEN + 64];
    if (ctx->allgather != oc__file_allgather || ctx->size == 1)
        return;
    /* The final exchange of oc_finalize was call seq-1: every rank has
     * finished seq-2, but may still read seq-1.  Remove seq-2 only;
     * seq-1 files stay (a few bytes; the directory is per run). */
    if (ctx->bootstrap_seq >= 2) {
        path_of(ctx, ctx->bootstrap_seq - 2, ctx->rank, path, sizeof(path));
        unlink(path);
    }
}
