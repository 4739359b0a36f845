/* log.c — OC_LOG parsing, the one place that writes log lines (escaped:
 * util/esc.h), and the rate limiter for messages a peer can trigger
 * (log.h).  Thread-safe: the
 * limiters share one mutex (they sit on error paths, never on fast ones). */
#include "util/log.h"
#include "util/esc.h"

#include <pthread.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int oc__log_levels[OC_COMP_MAX] = {-1};

static const char *const comp_names[OC_COMP_MAX] = {
    "util", "wire",    "transport", "runtime", "agent",  "app",   "pkt",
    "dp",   "ctl",     "metrics",   "coll",    "nvmf",   "router",
    "gpu"};
static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

static int level_of(const char *s, size_t n)
{
    for (int i = 0; i < 5; i++)
        if (strlen(level_names[i]) == n && strncasecmp(s, level_names[i], n) == 0)
            return i;
    return -1;
}

int oc__log_parse(const char *spec, int levels[OC_COMP_MAX])
{
    int rc = 0;
    for (int i = 0; i < OC_COMP_MAX; i++)
        levels[i] = OC_LOG_WARN;
    if (spec == NULL)
        return 0;
    while (*spec) {
        size_t n = strcspn(spec, ",");
        const char *colon = memchr(spec, ':', n);
        if (colon == NULL) {
            int l = level_of(spec, n);
            if (l < 0)
                rc = -1;
            else
                for (int i = 0; i < OC_COMP_MAX; i++)
                    levels[i] = l;
        } else {
            int l = level_of(colon + 1, n - (size_t)(colon + 1 - spec));
            int c = -1;
            for (int i = 0; i < OC_COMP_MAX; i++)
                if (strlen(comp_names[i]) == (size_t)(colon - spec) &&
                    strncmp(spec, comp_names[i], (size_t)(colon - spec)) == 0)
                    c = i;
            if (l < 0 || c < 0)
                rc = -1;
            else
                levels[c] = l;
        }
        spec += n;
        if (*spec == ',')
            spec++;
    }
    return rc;
}

int oc__log_set(const char *spec)
{
    int levels[OC_COMP_MAX];

    if (spec == NULL || oc__log_parse(spec, levels) != 0)
        return -1;
    if (oc__log_levels[0] < 0)
        oc__log_init();
    /* from a control thread while others log: each level one aligned
     * store; a reader sees the old or the new one */
    for (int i = OC_COMP_MAX - 1; i >= 0; i--)
        __atomic_store_n(&oc__log_levels[i], levels[i], __ATOMIC_RELAXED);
    return 0;
}

size_t oc__log_describe(char *buf, size_t cap)
{
    size_t n = 0;

    if (oc__log_levels[0] < 0)
        oc__log_init();
    if (cap > 0)
        buf[0] = '\0';
    for (int i = 0; i < OC_COMP_MAX && n < cap; i++) {
        int l = __atomic_load_n(&oc__log_levels[i], __ATOMIC_RELAXED);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s:%s", i ? "," : "",
                              comp_names[i], level_names[l]);
    }
    return n;
}

static void log_init_once(void)
{
    int levels[OC_COMP_MAX];
    const char *spec = getenv("OC_LOG");
    int rc = oc__log_parse(spec, levels);
    for (int i = OC_COMP_MAX - 1; i >= 0; i--) /* [0] last: it is the flag */
        __atomic_store_n(&oc__log_levels[i], levels[i], __ATOMIC_RELEASE);
    if (rc != 0) {
        char comps[160];
        size_t n = 0;
        for (int i = 0; i < OC_COMP_MAX && n < sizeof(comps); i++)
            n += (size_t)snprintf(comps + n, sizeof(comps) - n, "%s%s",
                                  i ? " " : "", comp_names[i]);
        fprintf(stderr,
                "offcore: warning: OC_LOG='%s' not understood; expected "
                "LEVEL or COMPONENT:LEVEL,... (levels error warn info debug "
                "trace; components %s)\n",
                spec, comps);
    }
}

void oc__log_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, log_init_once);
}

void oc__log_emit(oc_log_comp_t comp, oc_log_level_t lvl, const char *fmt, ...)
{
    char msg[1024], line[1100];
    int n, m;
    va_list ap;

    va_start(ap, fmt);
    m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    if ((size_t)m >= sizeof(msg))
        m = sizeof(msg) - 1;
    n = snprintf(line, sizeof(line), "offcore[%d] %s %s: ", (int)getpid(),
                 comp_names[comp], level_names[lvl]);
    if (n < 0 || (size_t)n >= sizeof(line))
        return;
    /* what a message quotes may come from a peer or a file: no byte of
     * it reaches the log raw (util/esc.h), and one message is one line */
    n += (int)oc__esc(msg, (size_t)m, line + n, sizeof(line) - 1 - (size_t)n);
    line[n++] = '\n';
    (void)!write(2, line, (size_t)n); /* one write: lines do not interleave */
}

/* ---- rate limiting ---------------------------------------------------- */

#define RATE_DEFAULT 10u
#define WINDOW_US    1000000ull

static pthread_mutex_t lim_mu = PTHREAD_MUTEX_INITIALIZER;
static oc_log_limit_t *lim_head;
static unsigned lim_rate = RATE_DEFAULT;

void oc__log_set_rate(unsigned per_second)
{
    __atomic_store_n(&lim_rate, per_second ? per_second : RATE_DEFAULT,
                     __ATOMIC_RELAXED);
}

unsigned oc__log_rate(void)
{
    return __atomic_load_n(&lim_rate, __ATOMIC_RELAXED);
}

static unsigned long long mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ull +
           (unsigned long long)ts.tv_nsec / 1000ull;
}

/* Under lim_mu: close @p lim's window if it is over, printing its summary. */
static unsigned roll(oc_log_limit_t *lim, unsigned long long now)
{
    unsigned printed = 0;

    if (now - lim->window_us < WINDOW_US)
        return 0;
    if (lim->suppressed > 0) {
        oc__log_emit(lim->comp, lim->lvl,
                     "%llu similar message%s suppressed in the last %.1f s "
                     "(%s; at most %u a second)",
                     lim->suppressed, lim->suppressed == 1 ? "" : "s",
                     (double)(now - lim->window_us) / 1e6,
                     lim->what ? lim->what : "rate-limited",
                     oc__log_rate());
        printed = 1;
    }
    lim->window_us = now;
    lim->lines = 0;
    lim->suppressed = 0;
    return printed;
}

void oc__log_emit_limited(oc_log_limit_t *lim, oc_log_comp_t comp,
                          oc_log_level_t lvl, const char *fmt, ...)
{
    unsigned long long now = mono_us();
    char msg[900];
    va_list ap;
    int ok;

    pthread_mutex_lock(&lim_mu);
    if (!lim->registered) {
        lim->registered = 1;
        lim->window_us = now;
        lim->next = lim_head;
        lim_head = lim;
    }
    lim->comp = comp;
    lim->lvl = lvl;
    roll(lim, now);
    ok = lim->lines < oc__log_rate();
    if (ok)
        lim->lines++;
    else {
        lim->suppressed++;
        lim->total_suppressed++;
    }
    pthread_mutex_unlock(&lim_mu);
    if (!ok)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    oc__log_emit(comp, lvl, "%s", msg);
}

unsigned oc__log_limits_flush(void)
{
    unsigned long long now = mono_us();
    unsigned n = 0;

    pthread_mutex_lock(&lim_mu);
    for (oc_log_limit_t *l = lim_head; l != NULL; l = l->next)
        if (l->suppressed > 0)
            n += roll(l, now);
    pthread_mutex_unlock(&lim_mu);
    return n;
}

unsigned long long oc__log_limit_suppressed(const oc_log_limit_t *lim)
{
    unsigned long long n;

    pthread_mutex_lock(&lim_mu);
    n = lim->total_suppressed;
    pthread_mutex_unlock(&lim_mu);
    return n;
}
