/*
 * metrics.h — the two ends of offcore's metrics path: a writer and a parser
 * of the Prometheus text exposition format 0.0.4 (prom.c), and a small HTTP
 * server that serves the writer's output on GET /metrics (http.c).
 *
 * The agent plugs in one callback, oc_metrics_fill_fn, that writes its live
 * counters with oc__prom_family() / oc__prom_sample(); `offcore stat` fetches
 * the text and reads it back with oc__prom_parse().
 *
 * Format reference: the Prometheus "Exposition formats" page, text format
 * version 0.0.4: one "# HELP name text" and one "# TYPE name type" line per
 * family, then its samples "name{label="value",...} value", one per line,
 * a family's samples contiguous.
 */
#ifndef OC_METRICS_H
#define OC_METRICS_H

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- writer */

/** Longest metric or label name either end accepts, in bytes. */
#define OC_PROM_NAME_MAX 255

typedef enum {
    OC_PROM_COUNTER = 0,
    OC_PROM_GAUGE,
    OC_PROM_HISTOGRAM,
    OC_PROM_SUMMARY,
    OC_PROM_UNTYPED,
} oc_prom_type_t;

/** "counter", "gauge", "histogram", "summary", "untyped"; static string;
 *  "untyped" for an out-of-range value.  Thread-safe. */
const char *oc__prom_type_name(oc_prom_type_t type);

/**
 * A growable byte buffer that the caller owns.  Start it as {0} (or with a
 * malloc'd data and cap of its own to reuse across scrapes); the writer grows
 * it with realloc().  data is NUL-terminated whenever it is non-NULL.
 * Free it with oc__prom_buf_free(), or take data over (it is malloc'd).
 */
typedef struct {
    char  *data;
    size_t len;
    size_t cap;
} oc_prom_buf_t;

/** Free data and zero the buffer.  NULL is a no-op. */
void oc__prom_buf_free(oc_prom_buf_t *buf);

/** One label: name and (unescaped) value.  Both NUL-terminated. */
typedef struct {
    const char *name;
    const char *value;
} oc_prom_label_t;

/** Labels of a sample as the two arguments (array, count) that
 *  oc__prom_sample() takes:
 *    oc__prom_sample(p, "x_total",
 *                   OC_PROM_LABELS({"job", j}, {"dir", "in"}), v);
 */
#define OC_PROM_LABELS(...)                                                    \
    ((const oc_prom_label_t[]){__VA_ARGS__}),                                  \
        (sizeof((const oc_prom_label_t[]){__VA_ARGS__}) /                      \
         sizeof(oc_prom_label_t))

/**
 * Writer state over a caller's buffer; the caller owns the struct (fields
 * are private).  Errors are sticky: after the first one every call returns
 * it and writes nothing, and the buffer ends at the last complete line.
 * Not thread-safe: one writer per thread.
 */
typedef struct {
    oc_prom_buf_t *buf;
    size_t         start;   /* buf->len at oc__prom_init() */
    oc_status_t    status;  /* first error */
    oc_prom_type_t type;    /* of the current family */
    char           family[OC_PROM_NAME_MAX + 1]; /* current family, or "" */
} oc_prom_t;

/** Start writing at the end of @p buf (its contents are kept).  @p buf
 *  must stay valid while @p p is used. */
void oc__prom_init(oc_prom_t *p, oc_prom_buf_t *buf);

/**
 * Start a family: write "# HELP name help" (when @p help is not NULL;
 * backslashes and newlines escaped) and "# TYPE name type".  Calling it
 * again for the family already current is a no-op, so a loop may call it
 * before each sample.  Errors are logged once, here.
 *
 * @param name  [a-zA-Z_:][a-zA-Z0-9_:]*, at most OC_PROM_NAME_MAX bytes
 * @param help  UTF-8 text, or NULL
 * @return OC_OK; OC_ERR_INVALID_PARAM (bad name, help not UTF-8, bad
 *         type); OC_ERR_STATE (the family was already written earlier in
 *         this buffer: a family's samples must be contiguous);
 *         OC_ERR_NO_MEMORY; or the earlier sticky error.
 */
oc_status_t oc__prom_family(oc_prom_t *p, const char *name, const char *help,
                           oc_prom_type_t type);

/**
 * Write one sample of the current family: name{l1="v1",...} value.
 * Label values are escaped (\\, \", \n); uint64 values are printed
 * exactly.  Errors are logged once, here.
 *
 * @param name    the family's name; for a histogram also name_bucket,
 *                name_sum, name_count; for a summary name_sum, name_count
 * @param labels  @p nlabels labels (NULL when 0); names
 *                [a-zA-Z_][a-zA-Z0-9_]* not starting with "__", distinct;
 *                values any UTF-8 string
 * @return OC_OK; OC_ERR_STATE (no family started, or @p name is not of
 *         the current family); OC_ERR_INVALID_PARAM (bad label name,
 *         duplicate label, value NULL or not UTF-8); OC_ERR_NO_MEMORY; or
 *         the earlier sticky error.
 */
oc_status_t oc__prom_sample(oc_prom_t *p, const char *name,
                           const oc_prom_label_t *labels, size_t nlabels,
                           uint64_t value);

/** oc__prom_sample() for a floating-point value (gauges such as seconds).
 *  NaN and infinities are written "NaN", "+Inf", "-Inf"; finite values
 *  with the fewest digits that read back to the same double. */
oc_status_t oc__prom_sample_f64(oc_prom_t *p, const char *name,
                               const oc_prom_label_t *labels, size_t nlabels,
                               double value);

/** Most labels oc__prom_histogram() takes (besides its own `le`). */
#define OC_PROM_HIST_LABELS_MAX 8

/**
 * Write one histogram series of the current family (started with type
 * OC_PROM_HISTOGRAM): name_bucket{labels...,le="B"} cumulative counts for
 * each of the @p nbuckets upper bounds @p le (ascending) and +Inf, then
 * name_sum and name_count.  @p counts holds nbuckets + 1 per-bucket (not
 * cumulative) counts, the last one above every bound.  Errors as
 * oc__prom_sample(); OC_ERR_INVALID_PARAM with more than
 * OC_PROM_HIST_LABELS_MAX labels.
 */
oc_status_t oc__prom_histogram(oc_prom_t *p, const char *name,
                              const oc_prom_label_t *labels, size_t nlabels,
                              const double *le, size_t nbuckets,
                              const uint64_t *counts, double sum);

/** The sticky status: OC_OK while every call succeeded. */
oc_status_t oc__prom_status(const oc_prom_t *p);

/* ---------------------------------------------------------------- parser */

/** Most labels a parsed sample may carry; more is malformed input. */
#define OC_PROM_MAX_LABELS 64

/** One sample as the parser hands it over.  Every pointer is valid only
 *  until the callback returns. */
typedef struct {
    const char            *name;
    const oc_prom_label_t *labels;  /* in the order written, unescaped */
    size_t                 nlabels;
    double                 value;
    uint64_t               u64;     /* exact value when is_u64 */
    int                    is_u64;  /* written as a decimal integer < 2^64 */
    int                    has_timestamp;
    int64_t                timestamp_ms;
    oc_prom_type_t         type;    /* its family's # TYPE, else UNTYPED */
    const char            *help;    /* its family's # HELP, unescaped, or NULL */
    unsigned               line;    /* 1-based */
} oc_prom_sample_t;

/** Called once per sample, in order.  Return OC_OK to go on; any other
 *  value stops the parse, which returns it. */
typedef oc_status_t (*oc_prom_sample_fn)(void *arg, const oc_prom_sample_t *s);

/** Where and why a text was rejected. */
typedef struct {
    unsigned line;    /* 1-based */
    unsigned column;  /* 1-based byte offset in the line */
    char     msg[96];
} oc_prom_error_t;

/**
 * Parse a text exposition.  Blank lines and comments other than HELP and
 * TYPE are skipped; a last line without '\n' is accepted.  Everything else
 * is checked: names, quoting and escapes (only \\, \" and \n), UTF-8,
 * duplicate labels, values (decimal, NaN, +Inf, -Inf), timestamps (int64),
 * NUL bytes.  The whole text is checked before the first callback, so a
 * malformed text delivers no sample at all.  Never reads outside
 * text[0..len).  Thread-safe (no shared state).
 *
 * @param cb   called for each sample; NULL to only validate
 * @param err  filled on OC_ERR_INVALID_PARAM; may be NULL
 * @return OC_OK; OC_ERR_INVALID_PARAM (malformed text, or text NULL with
 *         len > 0); OC_ERR_NO_MEMORY; or what @p cb returned.
 */
oc_status_t oc__prom_parse(const char *text, size_t len, oc_prom_sample_fn cb,
                          void *arg, oc_prom_error_t *err);

/* ----------------------------------------------------------- HTTP server */

#include "util/defaults.h"
#include "util/guard.h"

/** Port the agent serves its metrics on unless told otherwise (the
 *  OpenTelemetry/Prometheus exporter convention). */
#define OC_METRICS_DEFAULT_PORT OC_DEFAULT_METRICS_PORT

/**
 * The syntax of a listen address, without resolving it: "HOST:PORT",
 * "[IPV6]:PORT", ":PORT" or "PORT" (every IPv4 address), "HOST" or
 * "[IPV6]" (the default port); ports 0 to 65535.  What the server below
 * accepts; configuration checkers call it to refuse early.
 * @param host  receives the host part ("" for every address)
 * @param any   set to 1 when every address is meant
 * @return OC_OK; OC_ERR_CONFIG (malformed, port out of range, host longer
 *         than @p cap); OC_ERR_INVALID_PARAM.  Pure, thread-safe.
 */
oc_status_t oc__metrics_addr_split(const char *spec, char *host, size_t cap,
                                   uint16_t *port, int *any);

/** Content-Type of the answer to GET /metrics. */
#define OC_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/**
 * Writes the current metrics into @p p.  Runs on the server's HTTP thread,
 * once per scrape, never concurrently with itself: read counters that other
 * threads update with relaxed atomic loads (or take a snapshot they
 * publish); do not block.  Return OC_OK, or an error the fill did not log:
 * the server logs it and answers 500.  A writer error in @p p (logged by
 * the writer) also gives 500.
 */
typedef oc_status_t (*oc_metrics_fill_fn)(void *arg, oc_prom_t *p);

typedef struct oc_metrics_server oc_metrics_server_t;

/**
 * Serve GET /metrics (and HEAD) on @p listen_addr from one internal thread
 * (libmicrohttpd).  Other paths answer 404, other methods 405.
 *
 * @param listen_addr  "HOST:PORT" binds that address only (IPv4, [IPv6]
 *                     or a name, resolved once); ":PORT" or "PORT" binds
 *                     every IPv4 address; "HOST" takes the default port;
 *                     NULL or "" mean OC_DEFAULT_METRICS_ADDR.  Port 0 (e.g.
 *                     "127.0.0.1:0", or "0") picks a free port: see
 *                     oc__metrics_server_port().
 * @param fill         called for each scrape (see oc_metrics_fill_fn);
 *                     @p arg must stay valid until oc__metrics_server_stop()
 *                     returns
 * @param out          set on success only
 * @return OC_OK; OC_ERR_INVALID_PARAM (fill or out NULL); OC_ERR_CONFIG
 *         (malformed address, unknown host, address in use, not an address
 *         of this host, permission denied: logged with the reason);
 *         OC_ERR_NO_MEMORY (allocation, or libmicrohttpd could not start
 *         its thread).  On error fill is never called.
 */
oc_status_t oc__metrics_server_start(const char *listen_addr,
                                    oc_metrics_fill_fn fill, void *arg,
                                    oc_metrics_server_t **out);

/**
 * The same, with the admission limits (util/guard.h, the policy the
 * agent's control socket uses too): at most limits->max_conns connections
 * (a newcomer over it closes the oldest one whose request is unfinished),
 * each request whole within limits->deadline_ms of the connection opening
 * or of the previous answer (not per byte: a slowloris cannot hold a slot),
 * accept back-off of limits->backoff_ms when out of descriptors.
 * @p limits NULL: 16 connections, 5000 ms, 100 ms.
 */
oc_status_t oc__metrics_server_start_limited(const char *listen_addr,
                                            const oc_guard_params_t *limits,
                                            oc_metrics_fill_fn fill, void *arg,
                                            oc_metrics_server_t **out);

/** The port the server listens on (the one picked when asked for 0).
 *  Thread-safe. */
uint16_t oc__metrics_server_port(const oc_metrics_server_t *srv);

/** The address it is bound to, "HOST:PORT" ("[V6]:PORT"), as the kernel
 *  says (port 0 resolved, "PORT" alone shown as 0.0.0.0:PORT).  Valid until
 *  stop.  Thread-safe. */
const char *oc__metrics_server_addr(const oc_metrics_server_t *srv);

/** Its admission counters (evicted, expired, back-offs...).  Thread-safe. */
void oc__metrics_server_counters(oc_metrics_server_t *srv,
                                oc_guard_counters_t *out);

/** Stop serving: closes the socket and joins the HTTP thread, so fill is
 *  not running and never runs again once this returns.  Frees @p srv.
 *  NULL is a no-op.  Call from any thread but the HTTP thread (not from
 *  fill). */
void oc__metrics_server_stop(oc_metrics_server_t *srv);

#endif
