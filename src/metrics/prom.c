/*
 * prom.c — writer and parser of the Prometheus text exposition format 0.0.4
 * (see metrics.h).  The writer backs the agent's /metrics; the parser backs
 * `offcore stat`, which reads whatever answers at the address it is given,
 * so the parser treats its input as untrusted: every byte is checked and
 * nothing is read past the end.
 */
#include "metrics/metrics.h"
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

const char *oc_prom_type_name(oc_prom_type_t type)
{
    if ((unsigned)type > OC_PROM_UNTYPED)
        return "untyped";
    return type_names[type];
}

static int is_alpha_(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int metric_char(int c, int first)
{
    return is_alpha_(c) || c == ':' || (!first && is_digit(c));
}

static int label_char(int c, int first)
{
    return is_alpha_(c) || (!first && is_digit(c));
}

/* Well-formed UTF-8 (RFC 3629): no overlong forms, surrogates, or code
 * points past U+10FFFF. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xbf;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else
            return 0;
        if (n - i - 1 < k)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xbf)
                return 0;
        i += k + 1;
    }
    return 1;
}

/* ------------------------------------------------------------ writer */

void oc_prom_buf_free(oc_prom_buf_t *buf)
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

/* Append @p s escaping backslash, newline and, when @p quote, '"'. */
static int buf_put_escaped(oc_prom_buf_t *b, const char *s, int quote)
{
    const char *run = s;

    for (;; s++) {
        const char *esc = NULL;

        if (*s == '\\')
            esc = "\\\\";
        else if (*s == '\n')
            esc = "\\n";
        else if (*s == '"' && quote)
            esc = "\\\"";
        else if (*s != '\0')
            continue;
        if (buf_put(b, run, (size_t)(s - run)) < 0)
            return -1;
        if (esc == NULL)
            return 0;
        if (buf_put(b, esc, 2) < 0)
            return -1;
        run = s + 1;
    }
}

void oc_prom_init(oc_prom_t *p, oc_prom_buf_t *buf)
{
    p->buf = buf;
    p->start = buf->len;
    p->status = OC_OK;
    p->type = OC_PROM_UNTYPED;
    p->family[0] = '\0';
}

oc_status_t oc_prom_status(const oc_prom_t *p)
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
    oc_error(OC_COMP_AGENT, "metrics: %s", msg);
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

oc_status_t oc_prom_family(oc_prom_t *p, const char *name, const char *help,
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
        if (lv == NULL || !utf8_valid((const unsigned char *)lv, strlen(lv)))
            return fail(p, OC_ERR_INVALID_PARAM, "%s: value of label %s is %s",
                        name, ln, lv ? "not UTF-8" : "NULL");
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

oc_status_t oc_prom_sample(oc_prom_t *p, const char *name,
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

oc_status_t oc_prom_sample_f64(oc_prom_t *p, const char *name,
                               const oc_prom_label_t *labels, size_t nlabels,
                               double value)
{
    char v[40];

    format_double(v, sizeof(v), value);
    return sample(p, name, labels, nlabels, v);
}

/* ------------------------------------------------------------ parser */

typedef struct {
    const char *text;
    size_t len;
    oc_prom_sample_fn cb;
    void *arg;
    oc_prom_error_t *err;
    unsigned lineno;
    const char *line; /* start of the current line */
    char *scratch;
    size_t scap;
    char fam[OC_PROM_NAME_MAX + 1]; /* current family or "" */
    oc_prom_type_t famtype;
    int fam_typed, fam_samples;
    char *help; /* current family's help, or NULL */
    size_t hcap;
    oc_prom_label_t labels[OC_PROM_MAX_LABELS];
} parser_t;

static oc_status_t perr(parser_t *ps, const char *at, const char *msg)
{
    if (ps->err != NULL) {
        ps->err->line = ps->lineno;
        ps->err->column = (unsigned)(at - ps->line) + 1;
        snprintf(ps->err->msg, sizeof(ps->err->msg), "%s", msg);
    }
    return OC_ERR_INVALID_PARAM;
}

static int grow(char **buf, size_t *cap, size_t need)
{
    char *d;

    if (need <= *cap)
        return 0;
    d = realloc(*buf, need);
    if (d == NULL)
        return -1;
    *buf = d;
    *cap = need;
    return 0;
}

static const char *skip_blank(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    return s;
}

static const char *token_end(const char *s, const char *end)
{
    while (s < end && *s != ' ' && *s != '\t')
        s++;
    return s;
}

static const char *metric_name_end(const char *s, const char *end)
{
    const char *b = s;

    while (s < end && metric_char((unsigned char)*s, s == b))
        s++;
    return s;
}

static int token_is(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);

    return (size_t)(e - s) == n && strncasecmp(s, word, n) == 0;
}

/* Decimal float, NaN, [+-]Inf(inity): what Go's strconv.ParseFloat, which
 * Prometheus uses, takes, minus hex floats and underscores. */
static int parse_value(const char *s, const char *e, double *v, uint64_t *u,
                       int *is_u)
{
    char tmp[128];
    const char *c = s;
    size_t n = (size_t)(e - s);
    int digits = 0;
    char *end;

    *is_u = 0;
    if (token_is(s, e, "nan")) {
        *v = NAN;
        return 0;
    }
    if (n > 0 && (*c == '+' || *c == '-'))
        c++;
    if (token_is(c, e, "inf") || token_is(c, e, "infinity")) {
        *v = *s == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    while (c < e && is_digit(*c))
        c++, digits++;
    if (c < e && *c == '.')
        for (c++; c < e && is_digit(*c); c++)
            digits++;
    if (digits == 0)
        return -1;
    if (c < e && (*c == 'e' || *c == 'E')) {
        c++;
        if (c < e && (*c == '+' || *c == '-'))
            c++;
        if (c == e || !is_digit(*c))
            return -1;
        while (c < e && is_digit(*c))
            c++;
    }
    if (c != e || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    errno = 0;
    *v = strtod(tmp, &end);
    if (end != tmp + n || (errno == ERANGE && isinf(*v)))
        return -1;

    /* exact integer: digits only, below 2^64 */
    uint64_t x = 0;
    for (c = s; c < e && is_digit(*c); c++) {
        unsigned d = (unsigned)(*c - '0');
        if (x > (UINT64_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    if (c == e) {
        *u = x;
        *is_u = 1;
    }
    return 0;
}

static int parse_i64(const char *s, const char *e, int64_t *out)
{
    int neg = 0;
    uint64_t x = 0, lim;

    if (s < e && (*s == '+' || *s == '-'))
        neg = *s++ == '-';
    if (s == e)
        return -1;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; s < e; s++) {
        unsigned d;
        if (!is_digit(*s))
            return -1;
        d = (unsigned)(*s - '0');
        if (x > (lim - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *out = neg ? (x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x)
               : (int64_t)x;
    return 0;
}

/* Unescape a HELP text (\\ and \n) into ps->help. */
static oc_status_t set_help(parser_t *ps, const char *s, const char *e)
{
    char *o;

    if (grow(&ps->help, &ps->hcap, (size_t)(e - s) + 1) < 0)
        return OC_ERR_NO_MEMORY;
    o = ps->help;
    for (; s < e; s++) {
        if (*s != '\\') {
            *o++ = *s;
            continue;
        }
        if (s + 1 == e || (s[1] != '\\' && s[1] != 'n'))
            return perr(ps, s, "invalid escape in HELP (only \\\\ and \\n)");
        *o++ = *++s == 'n' ? '\n' : '\\';
    }
    *o = '\0';
    if (!utf8_valid((unsigned char *)ps->help, (size_t)(o - ps->help)))
        return perr(ps, ps->line, "HELP text is not UTF-8");
    return OC_OK;
}

static void set_family(parser_t *ps, const char *name, size_t n)
{
    if (strlen(ps->fam) == n && memcmp(ps->fam, name, n) == 0)
        return;
    memcpy(ps->fam, name, n);
    ps->fam[n] = '\0';
    ps->famtype = OC_PROM_UNTYPED;
    ps->fam_typed = ps->fam_samples = 0;
    if (ps->help != NULL) {
        free(ps->help);
        ps->help = NULL;
        ps->hcap = 0;
    }
}

static oc_status_t parse_comment(parser_t *ps, const char *s, const char *end)
{
    const char *kw = skip_blank(s + 1, end), *kwe = token_end(kw, end);
    const char *name, *ne;
    int is_help = token_is(kw, kwe, "HELP") && strncmp(kw, "HELP", 4) == 0;
    int is_type = token_is(kw, kwe, "TYPE") && strncmp(kw, "TYPE", 4) == 0;

    if (!is_help && !is_type)
        return OC_OK; /* a plain comment */
    name = skip_blank(kwe, end);
    if (name == end)
        return OC_OK; /* "# HELP" alone: a comment, as Prometheus reads it */
    if (name == kwe)
        return perr(ps, name, "expected a blank after HELP/TYPE");
    ne = metric_name_end(name, end);
    if (ne == name || (ne < end && *ne != ' ' && *ne != '\t'))
        return perr(ps, ne, "invalid metric name in comment");
    if (ne - name > OC_PROM_NAME_MAX)
        return perr(ps, name, "metric name too long");
    set_family(ps, name, (size_t)(ne - name));

    if (is_help) {
        if (ps->help != NULL)
            return perr(ps, kw, "second HELP line for the family");
        return set_help(ps, skip_blank(ne, end), end);
    }
    const char *t = skip_blank(ne, end), *te = token_end(t, end);
    int found = 0;

    if (ps->fam_typed)
        return perr(ps, kw, "second TYPE line for the family");
    if (ps->fam_samples)
        return perr(ps, kw, "TYPE line after samples of the family");
    for (unsigned i = 0; i <= OC_PROM_UNTYPED && !found; i++)
        if (token_is(t, te, type_names[i])) {
            ps->famtype = (oc_prom_type_t)i;
            found = 1;
        }
    if (!found)
        return perr(ps, t, "unknown metric type");
    if (skip_blank(te, end) != end)
        return perr(ps, te, "text after the TYPE");
    ps->fam_typed = 1;
    return OC_OK;
}

static int in_family(const parser_t *ps, const char *name)
{
    size_t fl = strlen(ps->fam);
    const char *suf = name + fl;

    if (fl == 0 || strncmp(name, ps->fam, fl) != 0)
        return 0;
    if (*suf == '\0')
        return 1;
    if (ps->famtype == OC_PROM_HISTOGRAM && !strcmp(suf, "_bucket"))
        return 1;
    return (ps->famtype == OC_PROM_HISTOGRAM ||
            ps->famtype == OC_PROM_SUMMARY) &&
           (!strcmp(suf, "_sum") || !strcmp(suf, "_count"));
}

static oc_status_t parse_sample(parser_t *ps, const char *s, const char *end)
{
    oc_prom_sample_t smp;
    const char *ne = metric_name_end(s, end), *c;
    char *o;
    size_t nl = 0;

    if (ne == s)
        return perr(ps, s, "invalid metric name");
    if (ne - s > OC_PROM_NAME_MAX)
        return perr(ps, s, "metric name too long");
    /* scratch holds the name and each label's name and value, each no
     * longer than in the line, plus their NULs */
    if (grow(&ps->scratch, &ps->scap, 2 * (size_t)(end - s) + 2) < 0)
        return OC_ERR_NO_MEMORY;
    o = ps->scratch;
    memcpy(o, s, (size_t)(ne - s));
    o[ne - s] = '\0';
    smp.name = o;
    o += ne - s + 1;

    c = skip_blank(ne, end);
    if (c < end && *c == '{') {
        c++;
        for (;;) {
            const char *ln, *lne;
            char *v;

            c = skip_blank(c, end);
            if (c < end && *c == '}')
                break;
            ln = c;
            while (c < end && label_char((unsigned char)*c, c == ln))
                c++;
            lne = c;
            if (lne == ln)
                return perr(ps, c, "invalid label name");
            if (lne - ln > OC_PROM_NAME_MAX)
                return perr(ps, ln, "label name too long");
            if (nl == OC_PROM_MAX_LABELS)
                return perr(ps, ln, "too many labels");
            c = skip_blank(c, end);
            if (c == end || *c != '=')
                return perr(ps, c, "expected '=' after the label name");
            c = skip_blank(c + 1, end);
            if (c == end || *c != '"')
                return perr(ps, c, "expected '\"' to open the label value");
            c++;
            memcpy(o, ln, (size_t)(lne - ln));
            o[lne - ln] = '\0';
            for (size_t i = 0; i < nl; i++)
                if (!strcmp(ps->labels[i].name, o))
                    return perr(ps, ln, "label given twice");
            ps->labels[nl].name = o;
            o += lne - ln + 1;
            v = o;
            for (;;) {
                if (c == end)
                    return perr(ps, c, "unterminated label value");
                if (*c == '"')
                    break;
                if (*c == '\\') {
                    if (c + 1 == end ||
                        (c[1] != '\\' && c[1] != '"' && c[1] != 'n'))
                        return perr(ps, c,
                                    "invalid escape in label value "
                                    "(only \\\\, \\\" and \\n)");
                    c++;
                    *o++ = *c == 'n' ? '\n' : *c;
                } else
                    *o++ = *c;
                c++;
            }
            *o++ = '\0';
            if (!utf8_valid((unsigned char *)v, (size_t)(o - 1 - v)))
                return perr(ps, c, "label value is not UTF-8");
            ps->labels[nl++].value = v;
            c = skip_blank(c + 1, end);
            if (c < end && *c == ',') {
                c++;
                continue;
            }
            if (c < end && *c == '}')
                break;
            return perr(ps, c, "expected ',' or '}' after a label");
        }
        c = skip_blank(c + 1, end);
    } else if (c == ne && c < end) {
        return perr(ps, c, "invalid character in metric name");
    }

    const char *v = c, *ve = token_end(v, end);
    if (v == ve)
        return perr(ps, v, "missing value");
    if (parse_value(v, ve, &smp.value, &smp.u64, &smp.is_u64) < 0)
        return perr(ps, v, "invalid value");
    c = skip_blank(ve, end);
    smp.has_timestamp = 0;
    smp.timestamp_ms = 0;
    if (c < end) {
        const char *te = token_end(c, end);
        if (parse_i64(c, te, &smp.timestamp_ms) < 0)
            return perr(ps, c, "invalid timestamp");
        smp.has_timestamp = 1;
        if (skip_blank(te, end) != end)
            return perr(ps, te, "text after the timestamp");
    }

    if (in_family(ps, smp.name)) {
        ps->fam_samples = 1;
        smp.type = ps->famtype;
        smp.help = ps->help;
    } else {
        /* a sample of another name starts a family of its own, untyped: a
         * TYPE for it after this is an error, as Prometheus has it */
        set_family(ps, smp.name, strlen(smp.name));
        ps->fam_samples = 1;
        smp.type = OC_PROM_UNTYPED;
        smp.help = NULL;
    }
    smp.labels = ps->labels;
    smp.nlabels = nl;
    smp.line = ps->lineno;
    if (ps->cb == NULL)
        return OC_OK;
    return ps->cb(ps->arg, &smp);
}

static oc_status_t parse_all(parser_t *ps)
{
    const char *s = ps->text, *stop = ps->text + ps->len;

    ps->lineno = 0;
    set_family(ps, "", 0);
    while (s < stop) {
        const char *nl = memchr(s, '\n', (size_t)(stop - s));
        const char *end = nl ? nl : stop, *c;
        oc_status_t st;

        ps->lineno++;
        ps->line = s;
        c = memchr(s, '\0', (size_t)(end - s));
        if (c != NULL)
            return perr(ps, c, "NUL byte");
        c = skip_blank(s, end);
        if (c == end)
            st = OC_OK;
        else if (*c == '#')
            st = parse_comment(ps, c, end);
        else
            st = parse_sample(ps, c, end);
        if (st != OC_OK)
            return st;
        s = nl ? nl + 1 : stop;
    }
    return OC_OK;
}

oc_status_t oc_prom_parse(const char *text, size_t len, oc_prom_sample_fn cb,
                          void *arg, oc_prom_error_t *err)
{
    parser_t ps;
    oc_status_t st;

    if (text == NULL && len > 0)
        return OC_ERR_INVALID_PARAM;
    memset(&ps, 0, sizeof(ps));
    ps.text = text;
    ps.len = len;
    ps.err = err;
    ps.line = text;
    /* validate everything first, so that a bad text delivers nothing */
    st = parse_all(&ps);
    if (st == OC_OK && cb != NULL) {
        ps.cb = cb;
        ps.arg = arg;
        st = parse_all(&ps);
    }
    free(ps.scratch);
    free(ps.help);
    return st;
}
