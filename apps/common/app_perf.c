/*
 * app_perf.c — see app_perf.h.  Tries the generic last-level-cache read
 * misses first (PERF_COUNT_HW_CACHE_LL), then the architecture's preferred
 * "cache-misses" event, which on most x86 cores counts LLC misses too.
 */
#include "app_perf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_event(uint32_t type, uint64_t config)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.disabled = 1;
    a.inherit = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

void oc_app_perf_start(oc_app_perf_t *p)
{
    memset(p, 0, sizeof *p);
    p->fd = -1;
    const char *env = getenv("OC_APP_PERF");
    if (env != NULL && strcmp(env, "off") == 0) {
        snprintf(p->why, sizeof p->why, "disabled by OC_APP_PERF=off");
        return;
    }
    static const struct {
        uint32_t type;
        uint64_t config;
        const char *name;
    } ev[] = {
        {PERF_TYPE_HW_CACHE,
         PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
             (PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
         "LLC-load-misses"},
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "cache-misses"},
    };
    int err = 0;
    for (size_t k = 0; k < sizeof ev / sizeof ev[0]; k++) {
        int fd = open_event(ev[k].type, ev[k].config);
        if (fd >= 0) {
            p->fd = fd;
            p->event = ev[k].name;
            break;
        }
        if (k == 0 || err == 0)
            err = errno;
    }
    if (p->fd < 0) {
        const char *hint = "";
        if (err == ENOENT || err == EOPNOTSUPP)
            hint = " (no hardware cache counters: a VM without a virtual PMU?)";
        else if (err == EACCES || err == EPERM)
            hint = " (see /proc/sys/kernel/perf_event_paranoid)";
        snprintf(p->why, sizeof p->why, "perf_event_open: %s%s",
                 strerror(err), hint);
        return;
    }
    if (ioctl(p->fd, PERF_EVENT_IOC_RESET, 0) != 0 ||
        ioctl(p->fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        snprintf(p->why, sizeof p->why, "perf ioctl: %s", strerror(errno));
        close(p->fd);
        p->fd = -1;
    }
}

void oc_app_perf_stop(oc_app_perf_t *p)
{
    if (p->fd < 0)
        return;
    (void)ioctl(p->fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t v = 0;
    if (read(p->fd, &v, sizeof v) != (ssize_t)sizeof v) {
        snprintf(p->why, sizeof p->why, "perf read: %s", strerror(errno));
        close(p->fd);
        p->fd = -1;
        return;
    }
    p->misses = v;
    p->ok = true;
    close(p->fd);
    p->fd = -1;
}
