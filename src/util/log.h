/*
 * log.h — leveled, per-component logging.
 *
 * OC_LOG sets the levels: "warn" (all components), or
 * "transport:debug,runtime:info" (per component), or both:
 * "info,wire:trace".  Levels: error, warn, info, debug, trace.  Default warn.
 * Messages go to stderr, one line each, prefixed with the component.
 * Thread-safe.  Log once, where an error is detected; callers return the
 * status without printing again.
 */
#ifndef OC_UTIL_LOG_H
#define OC_UTIL_LOG_H

#include <stdarg.h>

typedef enum {
    OC_LOG_ERROR = 0,
    OC_LOG_WARN,
    OC_LOG_INFO,
    OC_LOG_DEBUG,
    OC_LOG_TRACE,
} oc_log_level_t;

typedef enum {
    OC_COMP_UTIL = 0,
    OC_COMP_WIRE,
    OC_COMP_TRANSPORT,
    OC_COMP_RUNTIME,
    OC_COMP_AGENT,
    OC_COMP_APP,
    OC_COMP_PKT, /* src/pkt: ports, buffers, parser */
    OC_COMP_DP,  /* offcore-dp */
    OC_COMP_MAX
} oc_log_comp_t;

extern int oc__log_levels[OC_COMP_MAX];
void oc__log_init(void);
void oc__log_emit(oc_log_comp_t comp, oc_log_level_t lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int oc_log_enabled(oc_log_comp_t comp, oc_log_level_t lvl)
{
    if (__builtin_expect(oc__log_levels[0] < 0, 0))
        oc__log_init();
    return (int)lvl <= oc__log_levels[comp];
}

#define oc_log(comp, lvl, ...)                                                 \
    do {                                                                       \
        if (oc_log_enabled(comp, lvl))                                         \
            oc__log_emit(comp, lvl, __VA_ARGS__);                              \
    } while (0)

#define oc_error(comp, ...) oc_log(comp, OC_LOG_ERROR, __VA_ARGS__)
#define oc_warn(comp, ...)  oc_log(comp, OC_LOG_WARN, __VA_ARGS__)
#define oc_info(comp, ...)  oc_log(comp, OC_LOG_INFO, __VA_ARGS__)
#define oc_debug(comp, ...) oc_log(comp, OC_LOG_DEBUG, __VA_ARGS__)
#define oc_trace(comp, ...) oc_log(comp, OC_LOG_TRACE, __VA_ARGS__)

/** Parse a level spec like OC_LOG into @p levels.  Returns 0, or -1 on a
 *  bad spec (levels then hold what parsed).  Exposed for tests. */
int oc_log_parse(const char *spec, int levels[OC_COMP_MAX]);

#endif
