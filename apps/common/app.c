/*
 * app.c — flag parsing, timer, memory and JSON output for the apps
 * (see app.h).  Not on any hot path.
 */
#include "app.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

bool oc_app_parse_size(const char *s, uint64_t *out)
{
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s)
        return false;
    uint64_t mult = 1;
    if (*end != '\0') {
        int pow10 = 0;
        switch (*end) {
        case 'k': case 'K': pow10 = 1; break;
        case 'm': case 'M': pow10 = 2; break;
        case 'g': case 'G': pow10 = 3; break;
        case 't': case 'T': pow10 = 4; break;
        default: return false;
        }
        end++;
        bool binary = (*end == 'i');
        if (binary)
            end++;
        if (*end != '\0')
            return false;
        for (int k = 0; k < pow10; k++)
            mult *= binary ? 1024u : 1000u;
    }
    if (v != 0 && (uint64_t)v > UINT64_MAX / mult)
        return false;
    *out = (uint64_t)v * mult;
    return true;
}

void *oc_app_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 1024;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return NULL;
        n *= 2;
    }
    void *q = realloc(p, n * elem);
    if (q != NULL)
        *cap = n;
    return q;
}

bool oc_app_env_rank0(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "PMI_RANK", "OC_RANK"};
    for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
        const char *v = getenv(vars[k]);
        if (v != NULL && *v != '\0')
            return strcmp(v, "0") == 0;
    }
    return true;
}

static void usage(FILE *f, const char *prog, const char *synopsis,
                  const oc_app_flag_t *flags, size_t nflags)
{
    fprintf(f, "usage: %s [flags]\n%s\n\nflags:\n", prog, synopsis);
    for (size_t k = 0; k < nflags; k++) {
        const oc_app_flag_t *fl = &flags[k];
        char def[64];
        if (fl->type == OC_APP_FLAG_STRING)
            snprintf(def, sizeof def, "%s",
                     *(const char **)fl->dst ? *(const char **)fl->dst : "");
        else
            snprintf(def, sizeof def, "%" PRIu64, *(uint64_t *)fl->dst);
        fprintf(f, "  --%-16s %s (default %s)\n", fl->name, fl->help, def);
    }
    fprintf(f, "  --%-16s print this help and exit\n\n"
               "Counts accept the suffixes K, M, G, T (10^3 .. 10^12) and Ki, Mi,"
               " Gi, Ti (2^10 .. 2^40).\n"
               "Output: one JSON line on stdout from rank 0; errors on stderr.\n"
               "Exit status: 0 verified, 1 failed or wrong result, 2 bad usage.\n",
            "help");
}

static void usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void usage_error(const char *prog, const char *fmt, ...)
{
    if (oc_app_env_rank0()) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", prog);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, " (try --help)\n");
        va_end(ap);
    }
    exit(OC_APP_EXIT_USAGE);
}

void oc_app_parse_flags(int argc, char **argv, const char *prog,
                        const char *synopsis, const oc_app_flag_t *flags,
                        size_t nflags)
{
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout, prog, synopsis, flags, nflags);
            exit(OC_APP_EXIT_OK);
        }
        if (strncmp(arg, "--", 2) != 0)
            usage_error(prog, "unexpected argument '%s'", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const oc_app_flag_t *fl = NULL;
        for (size_t k = 0; k < nflags; k++) {
            if (strlen(flags[k].name) == nlen &&
                strncmp(flags[k].name, name, nlen) == 0) {
                fl = &flags[k];
                break;
            }
        }
        if (fl == NULL)
            usage_error(prog, "unknown flag '--%.*s'", (int)nlen, name);
        const char *val;
        if (eq != NULL) {
            val = eq + 1;
        } else {
            if (a + 1 >= argc)
                usage_error(prog, "flag '--%s' needs a value", fl->name);
            val = argv[++a];
        }
        if (fl->type == OC_APP_FLAG_STRING) {
            *(const char **)fl->dst = val;
            continue;
        }
        uint64_t v;
        bool ok;
        /* every number takes the suffixes, as --help says; the range
         * check below then tells why "--degree 1T" is refused */
        ok = oc_app_parse_size(val, &v);
        if (!ok)
            usage_error(prog, "flag '--%s': '%s' is not a valid count "
                        "(digits, optional K/M/G/T or Ki/Mi/Gi/Ti)", fl->name,
                        val);
        if (v < fl->min || v > fl->max)
            usage_error(prog,
                        "flag '--%s': %" PRIu64 " is out of range [%" PRIu64
                        ", %" PRIu64 "]: %s",
                        fl->name, v, fl->min, fl->max, fl->help);
        *(uint64_t *)fl->dst = v;
    }
}

double oc_app_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t oc_app_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return UINT64_MAX;
    char line[256];
    uint64_t kib = UINT64_MAX;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long long v;
        if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
            kib = (uint64_t)v;
            break;
        }
    }
    fclose(f);
    return kib == UINT64_MAX ? UINT64_MAX : kib * 1024u;
}

#define HUGE_2M ((size_t)2 << 20)

static size_t table_bytes(uint64_t n, bool *ok)
{
    *ok = n <= (SIZE_MAX - HUGE_2M) / sizeof(uint64_t);
    size_t bytes = *ok ? (size_t)n * sizeof(uint64_t) : 0;
    /* Round big tables up to whole huge pages so the mapping can use them. */
    if (bytes >= HUGE_2M)
        bytes = (bytes + HUGE_2M - 1) & ~(HUGE_2M - 1);
    return bytes ? bytes : sizeof(uint64_t);
}

uint64_t *oc_app_alloc_table(uint64_t n)
{
    bool ok;
    size_t bytes = table_bytes(n, &ok);
    if (!ok)
        return NULL;
    if (bytes >= HUGE_2M) {
        /* Over-map by one huge page and trim so the table is 2 MiB-aligned. */
        size_t map = bytes + HUGE_2M;
        char *raw = mmap(NULL, map, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED)
            return NULL;
        char *al = (char *)(((uintptr_t)raw + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1));
        if (al > raw)
            munmap(raw, (size_t)(al - raw));
        size_t tail = map - (size_t)(al - raw) - bytes;
        if (tail > 0)
            munmap(al + bytes, tail);
#ifdef MADV_HUGEPAGE
        (void)madvise(al, bytes, MADV_HUGEPAGE); /* best effort */
#endif
        /* Fresh anonymous pages read as zero: writing one word per 4 KiB
         * faults them all in (as huge pages where granted) without
         * writing the whole table a second time. */
        volatile uint64_t *w = (volatile uint64_t *)al;
        for (size_t k = 0; k < bytes / sizeof(uint64_t); k += 4096 / sizeof(uint64_t))
            w[k] = 0;
        return (uint64_t *)al;
    }
    uint64_t *p = malloc(bytes);
    if (p == NULL)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void oc_app_free_table(uint64_t *p, uint64_t n)
{
    if (p == NULL)
        return;
    bool ok;
    size_t bytes = table_bytes(n, &ok);
    if (bytes >= HUGE_2M)
        munmap(p, bytes);
    else
        free(p);
}

/* ---- JSON ----------------------------------------------------------- */

static void json_put(oc_app_json_t *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void json_put(oc_app_json_t *j, const char *fmt, ...)
{
    if (j->len >= sizeof j->buf)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(j->buf + j->len, sizeof j->buf - j->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        j->len += (size_t)n;
}

/* Keys are literals from our own code; values may come from flags, so
 * escape what JSON requires. */
static void json_key(oc_app_json_t *j, const char *key)
{
    json_put(j, "%s\"%s\":", j->need_comma ? "," : "", key);
    j->need_comma = true;
}

static void json_string(oc_app_json_t *j, const char *s)
{
    json_put(j, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            json_put(j, "\\%c", c);
        else if (c < 0x20)
            json_put(j, "\\u%04x", c);
        else
            json_put(j, "%c", c);
    }
    json_put(j, "\"");
}

void oc_app_json_begin(oc_app_json_t *j)
{
    j->len = 0;
    j->depth = 1;
    j->need_comma = false;
    json_put(j, "{");
}

void oc_app_json_str(oc_app_json_t *j, const char *key, const char *val)
{
    json_key(j, key);
    json_string(j, val);
}

void oc_app_json_u64(oc_app_json_t *j, const char *key, uint64_t val)
{
    json_key(j, key);
    json_put(j, "%" PRIu64, val);
}

void oc_app_json_dbl(oc_app_json_t *j, const char *key, double val)
{
    json_key(j, key);
    if (isfinite(val))
        json_put(j, "%.6g", val);
    else
        json_put(j, "null");
}

void oc_app_json_bool(oc_app_json_t *j, const char *key, bool val)
{
    json_key(j, key);
    json_put(j, "%s", val ? "true" : "false");
}

void oc_app_json_obj_begin(oc_app_json_t *j, const char *key)
{
    json_key(j, key);
    json_put(j, "{");
    j->depth++;
    j->need_comma = false;
}

void oc_app_json_obj_end(oc_app_json_t *j)
{
    json_put(j, "}");
    j->depth--;
    j->need_comma = true;
}

void oc_app_json_print(oc_app_json_t *j)
{
    while (j->depth > 0) {
        json_put(j, "}");
        j->depth--;
    }
    fwrite(j->buf, 1, j->len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

const char *oc_app_fmt_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, unit[u]);
    return buf;
}
