/*
 * prom.c — writer of the Prometheus text exposition format 0.0.4 (see
 * metrics.h): it backs the agent's /metrics.  The parser, which treats its
 * input as untrusted, is prom_parse.c.
 */
#include "metrics/metrics.h"
#include "prom_int.h"
#include "util/esc.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ shared */

static const char *const type_names[] = {"counter", "gauge", "histogram",
                                         "summary", "untyped"};

const char *oc__prom_type_name(oc_prom_type_t type)
{
    if ((unsigned)type > OC_PROM_UNTYPED)
        return "untyped";
    return type_names[type];
}

/* ------------------------------------------------------------ writer */

void oc__prom_buf_free(oc_prom_buf_t *buf)
{
    if (buf == NULL)
        return;
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

/* Room for @p extra more bytes and the NUL. */
static int buf_reserve(oc_prom_buf_t *b, size_t extra)
{
    size_t need, cap;
    char *d;

    if (extra > SIZE_MAX - b->len - 1)
        return -1;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    d = realloc(b->data, cap);
    if (d == NULL)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static int buf_put(oc_prom_buf_t *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static int buf_puts(oc_prom_buf_t *b, const char *s)
{
    return buf_put(b, s, strlen(s));
}

/* Append @p s escaping backslash, newline and, when @p quote, '"'; a
 * control byte or a byte >= 0x80 that is not part of a well-formed,
 * non-control UTF-8 character (a label value can be a peer's: an NVMe
 * host's NQN) is written as the text \xNN (util/esc.h), its backslash
 * escaped, so that no reader of /metrics gets it raw. */
static int buf_put_escaped(oc_prom_buf_t *b, const char *s, int quote)
{
    const char *run = s;

    for (;; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = NULL;
        char hex[12];
        size_t u;

        if (c >= 0x80 && (u = oc__esc_utf8(s, strnlen(s, 4))) > 0) {
            s += u - 1;
            continue;
        }
        if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '"' && quote)
            esc = "\\\"";
        else if (c != '\0' && (c < 0x20 || c >= 0x7f)) {
            char one[8];
            oc__esc(s, 1, one, sizeof(one));
            snprintf(hex, sizeof(hex), "\\%s", one); /* \\xNN */
            esc = hex;
        } else if (c != '\0')
            continue;
        if (buf_put(b, run, (size_t)(s - run)) < 0)
            return -1;
        if (esc == NULL)
            return 0;
        if (buf_put(b, esc, strlen(esc)) < 0)
            return -1;
        run = s + 1;
    }
}

void oc__prom_init(oc_prom_t *p, oc_prom_buf_t *buf)
{
    p->buf = buf;
    p->start = buf->len;
    p->status = OC_OK;
    p->type = OC_PROM_UNTYPED;
    p->family[0] = '\0';
}

oc_status_t oc__prom_status(const oc_prom_t *p)
{
    return p->status;
}

/* Record the first error and log it: the single place writer errors are
 * reported. */
__attribute__((format(printf, 3, 4))) static oc_status_t
fail(oc_prom_t *p, oc_status_t st, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    oc_error(OC_COMP_METRICS, "%s", msg);
    p->status = st;
    return st;
}

static oc_status_t no_memory(oc_prom_t *p, size_t line_start)
{
    p->buf->len = line_start;
    if (p->buf->data != NULL)
        p->buf->data[line_start] = '\0';
    return fail(p, OC_ERR_NO_MEMORY, "out of memory writing the exposition");
}

static size_t metric_name_len(const char *s)
{
    size_t n = 0;

    while (s[n] != '\0' && n <= OC_PROM_NAME_MAX) {
        if (!metric_char((unsigned char)s[n], n == 0))
            return 0;
        n++;
    }
    return n <= OC_PROM_NAME_MAX ? n : 0;
}

static int label_name_ok(const char *s)
{
    size_t n = 0;

    if (s == NULL || (s[0] == '_' && s[1] == '_'))
        return 0;
    while (s[n] != '\0' && n <= OC_PROM_NAME_MAX) {
        if (!label_char((unsigned char)s[n], n == 0))
            return 0;
        n++;
    }
    return n > 0 && n <= OC_PROM_NAME_MAX;
}

/* Was "# TYPE name " already written at the start of a line? */
static int family_written(const oc_prom_t *p, const char *name, size_t n)
{
    char needle[OC_PROM_NAME_MAX + 16];
    const char *base, *at;
    size_t len = p->buf->len - p->start, nl;

    if (p->buf->data == NULL)
        return 0;
    base = at = p->buf->data + p->start;
    nl = (size_t)snprintf(needle, sizeof(needle), "# TYPE %.*s ", (int)n, name);
    while ((at = memmem(at, len - (size_t)(at - base), needle, nl)) != NULL) {
        if (at == base || at[-1] == '\n')
            return 1;
        at++;
    }
    return 0;
}

oc_status_t oc__prom_family(oc_prom_t *p, const char *name, const char *help,
                           oc_prom_type_t type)
{
    oc_prom_buf_t *b = p->buf;
    size_t n, line_start = b->len;
    int ok;

    if (p->status != OC_OK)
        return p->status;
    if (name == NULL || (n = metric_name_len(name)) == 0)
        return fail(p, OC_ERR_INVALID_PARAM, "invalid metric name '%s'",
                    name ? name : "(null)");
    if ((unsigned)type > OC_PROM_UNTYPED)
        return fail(p, OC_ERR_INVALID_PARAM, "%s: invalid type %d", name,
                    (int)type);
    if (help != NULL && !utf8_valid((const unsigned char *)help, strlen(help)))
        return fail(p, OC_ERR_INVALID_PARAM, "%s: help text is not UTF-8",
                    name);
    if (strcmp(p->family, name) == 0)
        return OC_OK;
    if (family_written(p, name, n))
        return fail(p, OC_ERR_STATE,
                    "family %s written twice: a family's samples must be "
                    "contiguous",
                    name);

    ok = 1;
    if (help != NULL)
        ok = buf_puts(b, "# HELP ") == 0 && buf_puts(b, name) == 0 &&
             buf_puts(b, " ") == 0 && buf_put_escaped(b, help, 0) == 0 &&
             buf_puts(b, "\n") == 0;
    ok = ok && buf_puts(b, "# TYPE ") == 0 && buf_puts(b, name) == 0 &&
         buf_puts(b, " ") == 0 && buf_puts(b, type_names[type]) == 0 &&
         buf_puts(b, "\n") == 0;
    if (!ok)
        return no_memory(p, line_start);
    memcpy(p->family, name, n + 1);
    p->type = type;
    return OC_OK;
}

/* Does sample @p name belong to the current family? */
static int of_family(const oc_prom_t *p, const char *name)
{
    size_t fl = strlen(p->family);
    const char *suffix;

    if (fl == 0 || strncmp(name, p->family, fl) != 0)
        return 0;
    suffix = name + fl;
    switch (p->type) {
    case OC_PROM_HISTOGRAM:
        return !strcmp(suffix, "_bucket") || !strcmp(suffix, "_sum") ||
               !strcmp(suffix, "_count");
    case OC_PROM_SUMMARY:
        return !*suffix || !strcmp(suffix, "_sum") || !strcmp(suffix, "_count");
    default:
        return !*suffix;
    }
}

static oc_status_t sample(oc_prom_t *p, const char *name,
                          const oc_prom_label_t *labels, size_t nlabels,
                          const char *value)
{
    oc_prom_buf_t *b = p->buf;
    size_t line_start = b->len;
    int ok;

    if (p->status != OC_OK)
        return p->status;
    if (name == NULL || metric_name_len(name) == 0)
        return fail(p, OC_ERR_INVALID_PARAM, "invalid metric name '%s'",
                    name ? name : "(null)");
    if (p->family[0] == '\0')
        return fail(p, OC_ERR_STATE, "sample %s before any family", name);
    if (!of_family(p, name))
        return fail(p, OC_ERR_STATE, "sample %s is not of the family %s (%s)",
                    name, p->family, type_names[p->type]);
    if (nlabels > 0 && labels == NULL)
        return fail(p, OC_ERR_INVALID_PARAM, "%s: labels NULL", name);
    for (size_t i = 0; i < nlabels; i++) {
        const char *ln = labels[i].name, *lv = labels[i].value;

        if (!label_name_ok(ln))
            return fail(p, OC_ERR_INVALID_PARAM, "%s: invalid label name '%s'",
                        name, ln ? ln : "(null)");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(labels[j].name, ln))
                return fail(p, OC_ERR_INVALID_PARAM, "%s: label %s given twice",
                            name, ln);
        /* any bytes: buf_put_escaped() writes what is not UTF-8 as text */
        if (lv == NULL)
            return fail(p, OC_ERR_INVALID_PARAM, "%s: value of label %s is NULL",
                        name, ln);
    }

    ok = buf_puts(b, name) == 0;
    for (size_t i = 0; ok && i < nlabels; i++)
        ok = buf_puts(b, i ? "," : "{") == 0 &&
             buf_puts(b, labels[i].name) == 0 && buf_puts(b, "=\"") == 0 &&
             buf_put_escaped(b, labels[i].value, 1) == 0 &&
             buf_puts(b, "\"") == 0;
    ok = ok && (nlabels == 0 || buf_puts(b, "}") == 0) &&
         buf_puts(b, " ") == 0 && buf_puts(b, value) == 0 &&
         buf_puts(b, "\n") == 0;
    if (!ok)
        return no_memory(p, line_start);
    return OC_OK;
}

oc_status_t oc__prom_sample(oc_prom_t *p, const char *name,
                           const oc_prom_label_t *labels, size_t nlabels,
                           uint64_t value)
{
    char v[24];

    snprintf(v, sizeof(v), "%" PRIu64, value);
    return sample(p, name, labels, nlabels, v);
}

/* Fewest significant digits (15 or 17) that read back to @p x; '.' as the
 * decimal point whatever LC_NUMERIC says. */
static void format_double(char *out, size_t size, double x)
{
    if (isnan(x)) {
        snprintf(out, size, "NaN");
        return;
    }
    if (isinf(x)) {
        snprintf(out, size, x > 0 ? "+Inf" : "-Inf");
        return;
    }
    snprintf(out, size, "%.15g", x);
    for (char *c = out; *c; c++)
        if (*c == ',')
            *c = '.';
    if (strtod(out, NULL) != x) {
        snprintf(out, size, "%.17g", x);
        for (char *c = out; *c; c++)
            if (*c == ',')
                *c = '.';
    }
}

oc_status_t oc__prom_sample_f64(oc_prom_t *p, const char *name,
                               const oc_prom_label_t *labels, size_t nlabels,
                               double value)
{
    char v[40];

    format_double(v, sizeof(v), value);
    return sample(p, name, labels, nlabels, v);
}


oc_status_t oc__prom_histogram(oc_prom_t *p, const char *name,
                              const oc_prom_label_t *labels, size_t nlabels,
                              const double *le, size_t nbuckets,
                              const uint64_t *counts, double sum)
{
    oc_prom_label_t l[OC_PROM_HIST_LABELS_MAX + 1];
    char n[OC_PROM_NAME_MAX + 16], v[40];
    uint64_t cum = 0;
    size_t len = strlen(name);

    if (nlabels > OC_PROM_HIST_LABELS_MAX || len > OC_PROM_NAME_MAX ||
        (nbuckets > 0 && (le == NULL || counts == NULL))) {
        if (p->status == OC_OK)
            p->status = OC_ERR_INVALID_PARAM;
        return p->status;
    }
    if (nlabels > 0)
        memcpy(l, labels, nlabels * sizeof(*l));
    l[nlabels].name = "le";
    l[nlabels].value = v;
    snprintf(n, sizeof(n), "%s_bucket", name);
    for (size_t b = 0; b <= nbuckets; b++) {
        if (b < nbuckets) {
            cum += counts[b];
            format_double(v, sizeof(v), le[b]);
        } else {
            cum += counts != NULL ? counts[b] : 0;
            snprintf(v, sizeof(v), "+Inf");
        }
        (void)oc__prom_sample(p, n, l, nlabels + 1, cum);
    }
    snprintf(n, sizeof(n), "%s_sum", name);
    (void)oc__prom_sample_f64(p, n, labels, nlabels, sum);
    snprintf(n, sizeof(n), "%s_count", name);
    return oc__prom_sample(p, n, labels, nlabels, cum);
}
