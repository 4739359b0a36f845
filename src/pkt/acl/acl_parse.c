/*
 * acl_parse.c — ClassBench rule and trace files, and the rule check.
 *
 * Input is untrusted text (a file named by the operator): every line is
 * parsed strictly, the first error stops the parse with "name:line: reason"
 * and nothing is returned.  Buffers need not be NUL-terminated.  Pure
 * functions, thread-safe.  Fuzzed by tests/fuzz/fuzz_acl.c.
 */
#include "pkt/acl/acl.h"
#include "util/file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

oc_status_t oc__acl_fields_check(const char *prefix_bad, uint16_t sport_lo,
                                 uint16_t sport_hi, uint16_t dport_lo,
                                 uint16_t dport_hi, uint32_t userdata,
                                 const char **why)
{
    const char *w = prefix_bad != NULL    ? prefix_bad
                    : sport_lo > sport_hi ? "source port range with lo > hi"
                    : dport_lo > dport_hi
                        ? "destination port range with lo > hi"
                    : userdata == OC_ACL_NO_MATCH
                        ? "userdata is the reserved no-match value"
                        : NULL;
    if (why != NULL)
        *why = w;
    return w == NULL ? OC_OK : OC_ERR_INVALID_PARAM;
}

oc_status_t oc__acl_rule_check(const oc_acl_rule_t *r, const char **why)
{
    return oc__acl_fields_check(
        r->src_len > 32 || r->dst_len > 32 ? "prefix length above 32" : NULL,
        r->sport_lo, r->sport_hi, r->dport_lo, r->dport_hi, r->userdata, why);
}

long oc__acl_match_linear(const oc_acl_rule_t *rules, size_t n,
                         const oc_acl_key_t *key)
{
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (oc__acl_rule_matches(&rules[i], key) &&
            (best < 0 || oc__acl_rule_before(&rules[i], &rules[best])))
            best = (long)i;
    }
    return best;
}

long oc__acl_match_first(const oc_acl_rule_t *sorted, size_t n,
                        const oc_acl_key_t *key)
{
    for (size_t i = 0; i < n; i++)
        if (oc__acl_rule_matches(&sorted[i], key))
            return (long)i;
    return -1;
}

typedef struct {
    const char *p, *end; /* the current line, without its newline */
} cur_t;

static void skip_ws(cur_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int is_ws(cur_t *c)
{
    return c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r');
}

/* unsigned decimal, at most @p max; 0 on failure */
static int get_uint(cur_t *c, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    const char *s = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        v = v * 10 + (uint64_t)(*c->p - '0');
        if (v > max)
            return 0;
        c->p++;
    }
    if (c->p == s)
        return 0;
    *out = v;
    return 1;
}

/* 0x-prefixed hex, at most @p max */
static int get_hex(cur_t *c, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    const char *s;
    if (c->end - c->p < 2 || c->p[0] != '0' || (c->p[1] != 'x' && c->p[1] != 'X'))
        return 0;
    c->p += 2;
    s = c->p;
    while (c->p < c->end) {
        char ch = *c->p;
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0)
            break;
        v = v * 16 + (uint64_t)d;
        if (v > max)
            return 0;
        c->p++;
    }
    if (c->p == s)
        return 0;
    *out = v;
    return 1;
}

static int get_char(cur_t *c, char ch)
{
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

static int get_prefix(cur_t *c, uint32_t *ip, uint8_t *len)
{
    uint64_t v, l;
    uint32_t a = 0;
    for (int i = 0; i < 4; i++) {
        if ((i > 0 && !get_char(c, '.')) || !get_uint(c, 255, &v))
            return 0;
        a = a << 8 | (uint32_t)v;
    }
    if (!get_char(c, '/') || !get_uint(c, 32, &l))
        return 0;
    *ip = a;
    *len = (uint8_t)l;
    return 1;
}

static int get_range(cur_t *c, uint16_t *lo, uint16_t *hi)
{
    uint64_t a, b;
    if (!get_uint(c, 65535, &a))
        return 0;
    skip_ws(c);
    if (!get_char(c, ':'))
        return 0;
    skip_ws(c);
    if (!get_uint(c, 65535, &b))
        return 0;
    *lo = (uint16_t)a;
    *hi = (uint16_t)b;
    return 1;
}

static void set_err(char *err, size_t errlen, const char *name, size_t line,
                    const char *why)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s:%zu: %s", name, line, why);
}

/* Calls @p fn on every non-blank line; stops at the first nonzero. */
typedef const char *(*line_fn)(cur_t *c, void *slot, size_t index);

static oc_status_t parse_lines(const char *buf, size_t len, const char *name,
                               size_t elem, line_fn fn, void **out, size_t *n,
                               char *err, size_t errlen)
{
    const char *p = buf, *end = buf + len;
    size_t cap = 0, cnt = 0, line = 0;
    char *arr = NULL;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        cur_t c = {p, nl != NULL ? nl : end};
        const char *why;

        line++;
        p = nl != NULL ? nl + 1 : end;
        if (memchr(c.p, '\0', (size_t)(c.end - c.p)) != NULL) {
            set_err(err, errlen, name, line, "NUL byte in a text file");
            goto fail;
        }
        skip_ws(&c);
        if (c.p == c.end)
            continue;
        if (cnt == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            char *na;
            if (ncap > OC_ACL_MAX_RULES * 16ul) {
                set_err(err, errlen, name, line, "too many lines");
                goto fail;
            }
            na = realloc(arr, ncap * elem);
            if (na == NULL) {
                free(arr);
                return OC_ERR_NO_MEMORY;
            }
            arr = na;
            cap = ncap;
        }
        why = fn(&c, arr + cnt * elem, cnt);
        if (why != NULL) {
            set_err(err, errlen, name, line, why);
            goto fail;
        }
        cnt++;
    }
    *out = arr;
    *n = cnt;
    return OC_OK;
fail:
    free(arr);
    return OC_ERR_CONFIG;
}

static const char *rule_line(cur_t *c, void *slot, size_t index)
{
    oc_acl_rule_t *r = slot;
    uint64_t pv, pm, fv, fm;
    const char *why;

    memset(r, 0, sizeof(*r));
    if (!get_char(c, '@'))
        return "a rule starts with '@'";
    if (!get_prefix(c, &r->src_ip, &r->src_len))
        return "bad source prefix (want a.b.c.d/len, len <= 32)";
    if (!is_ws(c))
        return "expected whitespace after the source prefix";
    skip_ws(c);
    if (!get_prefix(c, &r->dst_ip, &r->dst_len))
        return "bad destination prefix (want a.b.c.d/len, len <= 32)";
    if (!is_ws(c))
        return "expected whitespace after the destination prefix";
    skip_ws(c);
    if (!get_range(c, &r->sport_lo, &r->sport_hi))
        return "bad source port range (want lo : hi, 0..65535)";
    if (!is_ws(c))
        return "expected whitespace after the source port range";
    skip_ws(c);
    if (!get_range(c, &r->dport_lo, &r->dport_hi))
        return "bad destination port range (want lo : hi, 0..65535)";
    if (!is_ws(c))
        return "expected whitespace after the destination port range";
    skip_ws(c);
    if (!get_hex(c, 0xff, &pv) || !get_char(c, '/') || !get_hex(c, 0xff, &pm))
        return "bad protocol (want 0xVV/0xMM, at most 0xff)";
    skip_ws(c);
    if (c->p < c->end) { /* optional TCP flags column: checked, ignored */
        if (!get_hex(c, 0xffff, &fv) || !get_char(c, '/') ||
            !get_hex(c, 0xffff, &fm))
            return "bad flags column (want 0xVVVV/0xMMMM)";
        skip_ws(c);
        if (c->p < c->end)
            return "unexpected text after the rule";
    }
    r->proto = (uint8_t)pv;
    r->proto_mask = (uint8_t)pm;
    r->src_ip &= oc__acl_prefix_mask(r->src_len);
    r->dst_ip &= oc__acl_prefix_mask(r->dst_len);
    r->id = r->priority = r->userdata = (uint32_t)index;
    if (oc__acl_rule_check(r, &why) != OC_OK)
        return why;
    return NULL;
}

oc_status_t oc__acl_parse_rules(const char *buf, size_t len, const char *name,
                               oc_acl_rule_t **rules, size_t *n, char *err,
                               size_t errlen)
{
    return parse_lines(buf, len, name, sizeof(oc_acl_rule_t),
                       rule_line, (void **)rules, n, err, errlen);
}

static const char *trace_line(cur_t *c, void *slot, size_t index)
{
    oc_acl_trace_t *t = slot;
    uint64_t v[7];
    int cnt = 0;
    const uint64_t max[5] = {UINT32_MAX, UINT32_MAX, 65535, 65535, 255};

    memset(t, 0, sizeof(*t));
    t->hint = -1;
    while (c->p < c->end) {
        int neg = 0;
        if (cnt == 7)
            return "more than 7 columns";
        if (cnt > 0 && !is_ws(c))
            return "expected whitespace between columns";
        skip_ws(c);
        if (c->p == c->end)
            break;
        if (cnt >= 5 && get_char(c, '-'))
            neg = 1;
        if (!get_uint(c, cnt < 5 ? max[cnt] : (uint64_t)INT64_MAX, &v[cnt]))
            return cnt < 5 ? "bad number or out of range (src, dst < 2^32, "
                             "ports <= 65535, proto <= 255)"
                           : "bad number in the flags or hint column";
        if (neg)
            v[cnt] = (uint64_t)(-(int64_t)v[cnt]);
        cnt++;
    }
    if (cnt < 5)
        return "a trace line has at least 5 columns: src dst sport dport proto";
    t->key.src_ip = (uint32_t)v[0];
    t->key.dst_ip = (uint32_t)v[1];
    t->key.sport = (uint16_t)v[2];
    t->key.dport = (uint16_t)v[3];
    t->key.proto = (uint8_t)v[4];
    if (cnt >= 6)
        t->hint = (int64_t)v[cnt - 1];
    return NULL;
}

oc_status_t oc__acl_parse_trace(const char *buf, size_t len, const char *name,
                               oc_acl_trace_t **trace, size_t *n, char *err,
                               size_t errlen)
{
    return parse_lines(buf, len, name, sizeof(oc_acl_trace_t), trace_line,
                       (void **)trace, n, err, errlen);
}

oc_status_t oc__acl_read_file(const char *path, char **buf, size_t *len,
                             char *err, size_t errlen)
{
    /* util/file.h's checks on the descriptor (regular file, the size
     * cap, a FIFO never waited on); then zlib reads it, plain or gzip,
     * and the cap holds for what it inflates to as well */
    static const oc_file_rules_t r = {.what = "rules file",
                                      .max_bytes = OC_ACL_FILE_MAX};
    char scratch[256], lim[32];
    size_t cap, used = 0;
    gzFile f;
    char *b = NULL;
    int fd;

    if (err == NULL || errlen == 0) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    if (oc__file_open(path, &r, &fd, err, errlen) != OC_OK)
        return OC_ERR_CONFIG;
    f = gzdopen(fd, "rb"); /* reads plain files unchanged too */
    if (f == NULL) {
        close(fd);
        goto err_mem;
    }
    for (cap = 1 << 20;; cap *= 2) {
        int got;
        char *nb;
        if (cap > OC_ACL_FILE_MAX + 1)
            cap = OC_ACL_FILE_MAX + 1;
        nb = realloc(b, cap + 1);
        if (nb == NULL)
            goto err_mem;
        b = nb;
        while (used < cap &&
               (got = gzread(f, b + used, (unsigned)(cap - used))) > 0)
            used += (size_t)got;
        if (used < cap) {
            if (got < 0) {
                int e;
                snprintf(err, errlen, "rules file %s: read error: %s", path,
                         gzerror(f, &e));
                goto err;
            }
            break;
        }
        if (cap == OC_ACL_FILE_MAX + 1) {
            snprintf(err, errlen, "rules file %s: larger than %s (uncompressed)",
                     path, oc__file_size_str(OC_ACL_FILE_MAX, lim, sizeof(lim)));
            goto err;
        }
    }
    gzclose(f);
    b[used] = '\0';
    *buf = b;
    *len = used;
    return OC_OK;
err:
    free(b);
    gzclose(f);
    return OC_ERR_CONFIG;
err_mem:
    free(b);
    if (f != NULL)
        gzclose(f);
    snprintf(err, errlen, "rules file %s: out of memory", path);
    return OC_ERR_NO_MEMORY;
}

static oc_status_t load_file(const char *path, size_t elem, line_fn fn,
                             void **out, size_t *n, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    oc_status_t st = oc__acl_read_file(path, &buf, &len, err, errlen);
    if (st != OC_OK)
        return st;
    st = parse_lines(buf, len, path, elem, fn, out, n, err, errlen);
    free(buf);
    return st;
}

oc_status_t oc__acl_load_rules_file(const char *path, oc_acl_rule_t **rules,
                                    size_t *n, char *err, size_t errlen)
{
    return load_file(path, sizeof(oc_acl_rule_t), rule_line, (void **)rules, n,
                     err, errlen);
}

oc_status_t oc__acl_load_trace_file(const char *path, oc_acl_trace_t **trace,
                                   size_t *n, char *err, size_t errlen)
{
    return load_file(path, sizeof(oc_acl_trace_t), trace_line, (void **)trace,
                     n, err, errlen);
}
