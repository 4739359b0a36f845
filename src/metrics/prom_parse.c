/*
 * prom_parse.c — parser of the Prometheus text exposition format 0.0.4
 * (see metrics.h).  It backs `offcore stat`, which reads whatever answers
 * at the address it is given, so it treats its input as untrusted: every
 * byte is checked and nothing is read past the end.
 */
#include "metrics/metrics.h"
#include "prom_int.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
        if (token_is(t, te, oc__prom_type_name((oc_prom_type_t)i))) {
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

oc_status_t oc__prom_parse(const char *text, size_t len, oc_prom_sample_fn cb,
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
