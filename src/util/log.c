/* log.c — OC_LOG parsing and the one place that writes log lines. */
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int oc__log_levels[OC_COMP_MAX] = {-1};

static const char *const comp_names[OC_COMP_MAX] = {
    "util", "wire", "transport", "runtime", "agent", "app", "pkt", "dp"};
static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

static int level_of(const char *s, size_t n)
{
    for (int i = 0; i < 5; i++)
        if (strlen(level_names[i]) == n && strncasecmp(s, level_names[i], n) == 0)
            return i;
    return -1;
}

int oc_log_parse(const char *spec, int levels[OC_COMP_MAX])
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

static void log_init_once(void)
{
    int levels[OC_COMP_MAX];
    const char *spec = getenv("OC_LOG");
    int rc = oc_log_parse(spec, levels);
    for (int i = OC_COMP_MAX - 1; i >= 0; i--) /* [0] last: it is the flag */
        __atomic_store_n(&oc__log_levels[i], levels[i], __ATOMIC_RELEASE);
    if (rc != 0)
        fprintf(stderr,
                "offcore: warning: OC_LOG='%s' not understood; expected "
                "LEVEL or COMPONENT:LEVEL,... (levels error warn info debug "
                "trace; components util wire transport runtime agent app)\n",
                spec);
}

void oc__log_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, log_init_once);
}

void oc__log_emit(oc_log_comp_t comp, oc_log_level_t lvl, const char *fmt, ...)
{
    char line[1024];
    int n;
    va_list ap;

    n = snprintf(line, sizeof(line), "offcore[%d] %s %s: ", (int)getpid(),
                 comp_names[comp], level_names[lvl]);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    (void)!write(2, line, (size_t)n); /* one write: lines do not interleave */
}
