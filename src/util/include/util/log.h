/*
 * log.h — leveled, per-component logging.
 *
 * OC_LOG sets the levels: "warn" (all components), or
 * "transport:debug,runtime:info" (per component), or both:
 * "info,wire:trace".  A component is a module of src/: util, wire, ctl,
 * transport, runtime, coll, agent, router, metrics, pkt, dp, nvmf, and app
 * (the tools); tests/logcomp.py checks that each module logs as itself.  Levels: error, warn, info, debug, trace.  Default warn.
 * Messages go to stderr, one line each, prefixed with the component;
 * every byte of a message outside printable ASCII is written as \xNN
 * (util/esc.h), so a peer's or a file's text quoted in a message cannot
 * split the line or reach the reader's terminal raw.
 * Thread-safe.  Log once, where an error is detected; callers return the
 * status without printing again.
 *
 * Rate limiting: a warning that a peer can trigger at will (a malformed
 * frame, a refused connection) goes through an oc_log_limit_t, one per kind
 * of message: at most oc__log_rate() lines of that kind per second; the rest
 * are counted and summed up in one "N similar messages suppressed" line
 * when the next second's first message comes, or when
 * oc__log_limits_flush() finds the second over.  A flood of a thousand bad
 * peers therefore costs a few lines a second, never a line per peer.
 */
#ifndef OC_UTIL_LOG_H
#define OC_UTIL_LOG_H

#include <stdarg.h>
#include <stddef.h>

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
    OC_COMP_APP,     /* the command-line tools and apps */
    OC_COMP_PKT,     /* src/pkt: ports, buffers, parser */
    OC_COMP_DP,      /* offcore-dp */
    OC_COMP_CTL,     /* src/ctl: the control protocol, keys */
    OC_COMP_METRICS, /* src/metrics: exporters */
    OC_COMP_COLL,    /* src/coll: collectives, the MPI interposer */
    OC_COMP_NVMF,    /* offcore-nvmf */
    OC_COMP_ROUTER,  /* src/agent/router: the agent's routing threads */
    OC_COMP_GPU,     /* src/gpu: the CUDA driver, staging, copies */
    OC_COMP_MAX
} oc_log_comp_t;

extern int oc__log_levels[OC_COMP_MAX];
void oc__log_init(void);
void oc__log_emit(oc_log_comp_t comp, oc_log_level_t lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int oc__log_enabled(oc_log_comp_t comp, oc_log_level_t lvl)
{
    if (__builtin_expect(oc__log_levels[0] < 0, 0))
        oc__log_init();
    /* relaxed: oc__log_set() may change a level under a running thread */
    return (int)lvl <= __atomic_load_n(&oc__log_levels[comp], __ATOMIC_RELAXED);
}

#define oc_log(comp, lvl, ...)                                                 \
    do {                                                                       \
        if (oc__log_enabled(comp, lvl))                                         \
            oc__log_emit(comp, lvl, __VA_ARGS__);                              \
    } while (0)

#define oc_error(comp, ...) oc_log(comp, OC_LOG_ERROR, __VA_ARGS__)
#define oc_warn(comp, ...)  oc_log(comp, OC_LOG_WARN, __VA_ARGS__)
#define oc_info(comp, ...)  oc_log(comp, OC_LOG_INFO, __VA_ARGS__)
#define oc_debug(comp, ...) oc_log(comp, OC_LOG_DEBUG, __VA_ARGS__)
#define oc_trace(comp, ...) oc_log(comp, OC_LOG_TRACE, __VA_ARGS__)

/** One kind of rate-limited message.  Define it static and zeroed
 *  (OC_LOG_LIMIT_INIT); it registers itself at first use.  Thread-safe. */
typedef struct oc_log_limit {
    const char          *what;       /* for the summary line */
    unsigned long long   window_us;  /* start of the current second */
    unsigned             lines;      /* printed in this window */
    unsigned long long   suppressed; /* dropped in this window */
    unsigned long long   total_suppressed;
    oc_log_comp_t        comp;
    oc_log_level_t       lvl;
    int                  registered;
    struct oc_log_limit *next;
} oc_log_limit_t;

#define OC_LOG_LIMIT_INIT(what_) {.what = (what_)}

void oc__log_emit_limited(oc_log_limit_t *lim, oc_log_comp_t comp,
                          oc_log_level_t lvl, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define oc_log_limited(lim, comp, lvl, ...)                                    \
    do {                                                                       \
        if (oc__log_enabled(comp, lvl))                                         \
            oc__log_emit_limited(lim, comp, lvl, __VA_ARGS__);                 \
    } while (0)
#define oc_warn_limited(lim, comp, ...)                                        \
    oc_log_limited(lim, comp, OC_LOG_WARN, __VA_ARGS__)

/** Lines per second each limited kind may print (default 10; 0 keeps the
 *  default).  Set once at start-up (offcored: OC_AGENT_LOG_RATE). */
void oc__log_set_rate(unsigned per_second);
unsigned oc__log_rate(void);

/** Print the summary line of every limiter whose second is over and that
 *  dropped lines.  Event loops call it now and then (cheap: one lock, a
 *  walk of the registered kinds).  @return how many summaries it printed. */
unsigned oc__log_limits_flush(void);

/** Lines dropped by @p lim since start (tests and metrics). */
unsigned long long oc__log_limit_suppressed(const oc_log_limit_t *lim);

/** Parse a level spec like OC_LOG into @p levels.  Returns 0, or -1 on a
 *  bad spec (levels then hold what parsed).  Exposed for tests. */
int oc__log_parse(const char *spec, int levels[OC_COMP_MAX]);

/** Set the levels while the process runs (a daemon's control socket):
 *  @p spec as OC_LOG; components it does not name go back to warn.
 *  Thread-safe against logging threads.  @return 0, or -1 on a bad spec
 *  (nothing changed). */
int oc__log_set(const char *spec);

/** The current levels as one OC_LOG spec ("util:warn,wire:info,...") in
 *  @p buf.  @return its length (truncated to @p cap). */
size_t oc__log_describe(char *buf, size_t cap);

#endif
