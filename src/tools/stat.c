/*
 * stat.c — `offcore stat`: fetch an agent's /metrics over HTTP (libcurl),
 * parse it (oc_prom_parse) and print it as tables: per job, per peer, per
 * routing thread, rejects by reason, and any other offcore_* metric.  With
 * --watch it refreshes and prints per-second rates under each row.
 *
 * The tables are driven by the views[] below: each column is one metric
 * (plus, for in/out pairs, one selecting label), each row one value of the
 * view's key label.  A sample that fits no column is never dropped: it is
 * listed under "other".
 */
#include "tools/stat.h"
#include "metrics/metrics.h"

#include <curl/curl.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What to tell an operator when nothing answers. */
#define START_HINT "is offcored running? (start it with offcored --listen ...)"

#define FETCH_TIMEOUT_MS 2000
#define MAX_ANSWER (64u << 20) /* a sane agent's answer is kilobytes */

/* ------------------------------------------------------------ views */

typedef struct {
    const char *metric;
    const char *sel; /* second label selecting the column, or NULL */
    const char *sel_val;
    const char *heading;
} col_t;

typedef struct {
    const char *title;
    const char *key; /* the label whose values are the rows */
    const col_t *cols;
    size_t ncols;
} view_t;

static const col_t job_cols[] = {
    {"offcore_job_ranks", NULL, NULL, "ranks"},
    {"offcore_job_messages_total", "dir", "in", "msgs in"},
    {"offcore_job_messages_total", "dir", "out", "msgs out"},
    {"offcore_job_bytes_total", "dir", "in", "bytes in"},
    {"offcore_job_bytes_total", "dir", "out", "bytes out"},
    {"offcore_job_bundles_total", "dir", "in", "bundles in"},
    {"offcore_job_bundles_total", "dir", "out", "bundles out"},
    {"offcore_job_rejects_total", NULL, NULL, "rejects"},
};
static const col_t peer_cols[] = {
    {"offcore_peer_messages_total", "dir", "in", "msgs in"},
    {"offcore_peer_messages_total", "dir", "out", "msgs out"},
    {"offcore_peer_bundles_total", "dir", "in", "bundles in"},
    {"offcore_peer_bundles_total", "dir", "out", "bundles out"},
    {"offcore_peer_bytes_total", "dir", "in", "bytes in"},
    {"offcore_peer_bytes_total", "dir", "out", "bytes out"},
    {"offcore_peer_blocklist_depth", NULL, NULL, "blocklist"},
};
static const col_t thread_cols[] = {
    {"offcore_thread_messages_total", NULL, NULL, "msgs"},
    {"offcore_thread_bundles_total", "dir", "in", "bundles in"},
    {"offcore_thread_bundles_total", "dir", "out", "bundles out"},
    {"offcore_thread_bundles_forwarded_total", NULL, NULL, "forwarded"},
    {"offcore_thread_flushes_total", "reason", "full", "flush full"},
    {"offcore_thread_flushes_total", "reason", "timeout", "flush timeout"},
    {"offcore_thread_flushes_total", "reason", "idle", "flush idle"},
    {"offcore_thread_flushes_total", "reason", "explicit", "flush explicit"},
    {"offcore_thread_blocklist_depth", NULL, NULL, "blocklist"},
};
static const col_t reject_cols[] = {
    {"offcore_rejects_total", NULL, NULL, "rejects"},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
static const view_t views[] = {
    {"jobs", "job", job_cols, N(job_cols)},
    {"peers", "peer", peer_cols, N(peer_cols)},
    {"threads", "thread", thread_cols, N(thread_cols)},
    {"rejects by reason", "reason", reject_cols, N(reject_cols)},
};

/* ------------------------------------------------------------ snapshot */

typedef struct {
    char *name;
    oc_prom_label_t *labels;
    size_t nlabels;
    char *key; /* name and sorted labels: matches across scrapes */
    double value;
    uint64_t u64;
    int is_u64;
    oc_prom_type_t type;
    int used; /* shown in a table */
} smp_t;

typedef struct {
    smp_t *v;
    size_t n, cap;
    smp_t **by_key; /* sorted by key, for rates */
    double t;       /* CLOCK_MONOTONIC seconds when fetched */
    double wall;    /* CLOCK_REALTIME seconds */
} snap_t;

static void snap_free(snap_t *sn)
{
    for (size_t i = 0; i < sn->n; i++) {
        smp_t *s = &sn->v[i];
        for (size_t j = 0; j < s->nlabels; j++) {
            free((char *)s->labels[j].name);
            free((char *)s->labels[j].value);
        }
        free(s->labels);
        free(s->name);
        free(s->key);
    }
    free(sn->v);
    free(sn->by_key);
    memset(sn, 0, sizeof(*sn));
}

static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const oc_prom_label_t *)a)->name,
                  ((const oc_prom_label_t *)b)->name);
}

/* "name\037k\036v\037k\036v..." over the labels sorted by name. */
static char *make_key(const smp_t *s)
{
    oc_prom_label_t sorted[OC_PROM_MAX_LABELS];
    size_t len = strlen(s->name) + 1;
    char *k, *o;

    memcpy(sorted, s->labels, s->nlabels * sizeof(*sorted));
    qsort(sorted, s->nlabels, sizeof(*sorted), cmp_label);
    for (size_t i = 0; i < s->nlabels; i++)
        len += strlen(sorted[i].name) + strlen(sorted[i].value) + 2;
    k = o = malloc(len);
    if (k == NULL)
        return NULL;
    o = stpcpy(o, s->name);
    for (size_t i = 0; i < s->nlabels; i++) {
        *o++ = '\037';
        o = stpcpy(o, sorted[i].name);
        *o++ = '\036';
        o = stpcpy(o, sorted[i].value);
    }
    return k;
}

static oc_status_t collect(void *arg, const oc_prom_sample_t *ps)
{
    snap_t *sn = arg;
    smp_t *s;

    if (sn->n == sn->cap) {
        size_t cap = sn->cap ? 2 * sn->cap : 64;
        smp_t *v = realloc(sn->v, cap * sizeof(*v));
        if (v == NULL)
            return OC_ERR_NO_MEMORY;
        sn->v = v;
        sn->cap = cap;
    }
    s = &sn->v[sn->n];
    memset(s, 0, sizeof(*s));
    s->value = ps->value;
    s->u64 = ps->u64;
    s->is_u64 = ps->is_u64;
    s->type = ps->type;
    s->name = strdup(ps->name);
    s->labels = calloc(ps->nlabels ? ps->nlabels : 1, sizeof(*s->labels));
    if (s->name == NULL || s->labels == NULL)
        goto nomem;
    sn->n++; /* from here snap_free() frees what is set */
    for (size_t i = 0; i < ps->nlabels; i++) {
        s->labels[i].name = strdup(ps->labels[i].name);
        s->labels[i].value = strdup(ps->labels[i].value);
        s->nlabels++;
        if (s->labels[i].name == NULL || s->labels[i].value == NULL)
            return OC_ERR_NO_MEMORY;
    }
    s->key = make_key(s);
    return s->key ? OC_OK : OC_ERR_NO_MEMORY;
nomem:
    free(s->name);
    free(s->labels);
    return OC_ERR_NO_MEMORY;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(smp_t *const *)a)->key, (*(smp_t *const *)b)->key);
}

static const smp_t *snap_find(const snap_t *sn, const char *key)
{
    smp_t probe, *pp = &probe, **hit;

    if (sn == NULL || sn->by_key == NULL)
        return NULL;
    probe.key = (char *)key;
    hit = bsearch(&pp, sn->by_key, sn->n, sizeof(*sn->by_key), cmp_key);
    return hit ? *hit : NULL;
}

static const char *label(const smp_t *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return NULL;
}

/* ------------------------------------------------------------ fetch */

typedef struct {
    char *data;
    size_t len, cap;
} body_t;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
    body_t *b = arg;
    size_t n = size * nmemb;

    if (n > MAX_ANSWER - b->len)
        return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        char *d;
        while (cap < b->len + n + 1)
            cap *= 2;
        d = realloc(b->data, cap);
        if (d == NULL)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static double now(clockid_t clk)
{
    struct timespec ts;

    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Fetch and parse @p url into @p sn.  Returns 0 or 1 (reported on err). */
static int fetch(CURL *curl, const char *url, snap_t *sn, FILE *err)
{
    char cerr[CURL_ERROR_SIZE] = "";
    body_t body = {0};
    oc_prom_error_t perr;
    oc_status_t st;
    long code = 0;
    CURLcode rc;

    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, cerr);
    rc = curl_easy_perform(curl);
    sn->t = now(CLOCK_MONOTONIC);
    sn->wall = now(CLOCK_REALTIME);
    if (rc != CURLE_OK) {
        if (rc == CURLE_WRITE_ERROR)
            fprintf(err,
                    "offcore stat: the answer from %s is larger than "
                    "%u MiB: not an offcored\n",
                    url, MAX_ANSWER >> 20);
        else
            fprintf(err,
                    "offcore stat: no agent answers at %s: %s\n"
                    "  (%s)\n",
                    url, START_HINT, cerr[0] ? cerr : curl_easy_strerror(rc));
        free(body.data);
        return 1;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
        size_t l = body.data ? strcspn(body.data, "\n") : 0;
        fprintf(err, "offcore stat: %s answered HTTP %ld%s%.*s\n", url, code,
                l ? ": " : "", (int)(l > 200 ? 200 : l),
                body.data ? body.data : "");
        free(body.data);
        return 1;
    }
    memset(&perr, 0, sizeof(perr));
    st = oc_prom_parse(body.data, body.len, collect, sn, &perr);
    free(body.data);
    if (st == OC_ERR_INVALID_PARAM) {
        fprintf(err,
                "offcore stat: the answer from %s is not Prometheus "
                "text: line %u, column %u: %s\n",
                url, perr.line, perr.column, perr.msg);
        return 1;
    }
    if (st != OC_OK) {
        fprintf(err, "offcore stat: %s\n", oc_status_string(st));
        return 1;
    }
    if (sn->n > 0) {
        sn->by_key = malloc(sn->n * sizeof(*sn->by_key));
        if (sn->by_key == NULL) {
            fprintf(err, "offcore stat: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < sn->n; i++)
            sn->by_key[i] = &sn->v[i];
        qsort(sn->by_key, sn->n, sizeof(*sn->by_key), cmp_key);
    }
    return 0;
}

/* ------------------------------------------------------------ tables */

typedef struct {
    const smp_t *s; /* NULL: no sample */
    double rate;
    int has_rate;
} cell_t;

typedef struct {
    const char *key;
    cell_t *cells;
} row_t;

static int is_counter(const smp_t *s)
{
    size_t n = strlen(s->name);

    return s->type == OC_PROM_COUNTER || (s->type == OC_PROM_UNTYPED && n > 6 &&
                                          !strcmp(s->name + n - 6, "_total"));
}

/* Exact integers stay exact; other values get 6 significant digits. */
static void fmt_value(char *o, size_t n, int is_u64, uint64_t u, double v)
{
    if (is_u64)
        snprintf(o, n, "%" PRIu64, u);
    else if (isnan(v))
        snprintf(o, n, "NaN");
    else if (isinf(v))
        snprintf(o, n, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        snprintf(o, n, "%.0f", v);
    else
        snprintf(o, n, "%.6g", v);
}

static void fmt_rate(char *o, size_t n, double r)
{
    static const char sfx[] = " kMGTPE";
    int i = 0;

    if (r < 0) {
        snprintf(o, n, "reset");
        return;
    }
    while (r >= 999.95 && i < 6) {
        r /= 1000;
        i++;
    }
    if (i == 0)
        snprintf(o, n, r == floor(r) ? "%.0f" : "%.1f", r);
    else
        snprintf(o, n, "%.1f%c", r, sfx[i]);
}

static int all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

/* Rows in natural order: numbers by value, then names. */
static int cmp_row(const void *a, const void *b)
{
    const char *x = ((const row_t *)a)->key, *y = ((const row_t *)b)->key;
    int dx = all_digits(x), dy = all_digits(y);

    if (dx && dy) {
        size_t lx = strlen(x + strspn(x, "0")), ly = strlen(y + strspn(y, "0"));
        if (lx != ly)
            return lx < ly ? -1 : 1;
        x += strspn(x, "0");
        y += strspn(y, "0");
    } else if (dx != dy)
        return dx ? -1 : 1;
    return strcmp(x, y);
}

/* Is @p s the sample of column @p c of view @p v?  Exactly the key label
 * and the selecting one: anything else is for "other". */
static int fits(const smp_t *s, const view_t *v, const col_t *c)
{
    if (strcmp(s->name, c->metric) != 0 || label(s, v->key) == NULL)
        return 0;
    if (c->sel == NULL)
        return s->nlabels == 1;
    return s->nlabels == 2 && label(s, c->sel) != NULL &&
           !strcmp(label(s, c->sel), c->sel_val);
}

typedef struct {
    FILE *out;
    snap_t *cur; /* its samples' used flags are set as tables take them */
    const snap_t *prev; /* NULL: no rates */
    double watch;       /* refresh period, 0 without --watch */
} render_t;

static int print_view(render_t *r, const view_t *v)
{
    snap_t *cur = r->cur;
    row_t *rows = NULL;
    size_t nrows = 0, w[16], kw = strlen(v->key);
    double dt = r->prev ? r->cur->t - r->prev->t : 0;
    char buf[64];
    int rc = -1;

    /* one row per key value; rows hold pointers into the snapshot */
    for (size_t i = 0; i < cur->n; i++) {
        smp_t *s = &cur->v[i];
        for (size_t c = 0; c < v->ncols; c++) {
            const char *k;
            size_t j;
            if (!fits(s, v, &v->cols[c]))
                continue;
            k = label(s, v->key);
            for (j = 0; j < nrows && strcmp(rows[j].key, k); j++)
                ;
            if (j == nrows) {
                row_t *nr = realloc(rows, (nrows + 1) * sizeof(*rows));
                if (nr == NULL)
                    goto out;
                rows = nr;
                rows[j].key = k;
                rows[j].cells = calloc(v->ncols, sizeof(cell_t));
                if (rows[j].cells == NULL)
                    goto out;
                nrows++;
            }
            rows[j].cells[c].s = s;
            s->used = 1;
            if (r->prev && dt > 0 && is_counter(s)) {
                const smp_t *p = snap_find(r->prev, s->key);
                if (p != NULL) {
                    rows[j].cells[c].rate =
                        s->value < p->value ? -1 : (s->value - p->value) / dt;
                    rows[j].cells[c].has_rate = 1;
                }
            }
            break;
        }
    }
    if (nrows == 0) {
        fprintf(r->out, "\n%s: none\n", v->title);
        rc = 0;
        goto out;
    }
    qsort(rows, nrows, sizeof(*rows), cmp_row);

    /* column widths */
    if (kw < 5)
        kw = 5; /* "total" */
    for (size_t j = 0; j < nrows; j++)
        if (strlen(rows[j].key) > kw)
            kw = strlen(rows[j].key);
    for (size_t c = 0; c < v->ncols; c++) {
        w[c] = strlen(v->cols[c].heading);
        for (size_t j = 0; j < nrows; j++) {
            const cell_t *cl = &rows[j].cells[c];
            if (cl->s) {
                fmt_value(buf, sizeof(buf), cl->s->is_u64, cl->s->u64,
                          cl->s->value);
                if (strlen(buf) > w[c])
                    w[c] = strlen(buf);
            }
        }
        w[c] += 2; /* a sum may be one digit wider; and room to breathe */
    }

    fprintf(r->out, "\n%s\n  %-*s", v->title, (int)kw, v->key);
    for (size_t c = 0; c < v->ncols; c++)
        fprintf(r->out, "%*s", (int)w[c], v->cols[c].heading);
    fputc('\n', r->out);
    for (size_t j = 0; j < nrows; j++) {
        int any_rate = 0;
        fprintf(r->out, "  %-*s", (int)kw, rows[j].key);
        for (size_t c = 0; c < v->ncols; c++) {
            const cell_t *cl = &rows[j].cells[c];
            if (cl->s)
                fmt_value(buf, sizeof(buf), cl->s->is_u64, cl->s->u64,
                          cl->s->value);
            else
                snprintf(buf, sizeof(buf), "-");
            fprintf(r->out, "%*s", (int)w[c], buf);
            any_rate |= cl->has_rate;
        }
        fputc('\n', r->out);
        if (!any_rate)
            continue;
        size_t last = 0; /* no trailing blanks after the last rate */
        for (size_t c = 0; c < v->ncols; c++)
            if (rows[j].cells[c].has_rate)
                last = c;
        fprintf(r->out, "  %*s", (int)kw, "/s");
        for (size_t c = 0; c <= last; c++) {
            buf[0] = '\0';
            if (rows[j].cells[c].has_rate)
                fmt_rate(buf, sizeof(buf), rows[j].cells[c].rate);
            fprintf(r->out, "%*s", (int)w[c], buf);
        }
        fputc('\n', r->out);
    }

    if (nrows > 1) { /* totals: exact while every cell is an integer */
        fprintf(r->out, "  %-*s", (int)kw, "total");
        for (size_t c = 0; c < v->ncols; c++) {
            uint64_t su = 0;
            double sd = 0;
            int exact = 1, any = 0;
            for (size_t j = 0; j < nrows; j++) {
                const smp_t *s = rows[j].cells[c].s;
                if (s == NULL)
                    continue;
                any = 1;
                sd += s->value;
                if (!s->is_u64 || __builtin_add_overflow(su, s->u64, &su))
                    exact = 0;
            }
            if (any)
                fmt_value(buf, sizeof(buf), exact, su, sd);
            else
                snprintf(buf, sizeof(buf), "-");
            fprintf(r->out, "%*s", (int)w[c], buf);
        }
        fputc('\n', r->out);
    }
    rc = 0;
out:
    for (size_t j = 0; j < nrows; j++)
        free(rows[j].cells);
    free(rows);
    return rc;
}

/* name{k="v",...} with the exposition's escaping. */
static void print_series(FILE *out, const smp_t *s)
{
    fputs(s->name, out);
    for (size_t i = 0; i < s->nlabels; i++) {
        fprintf(out, "%s%s=\"", i ? "," : "{", s->labels[i].name);
        for (const char *c = s->labels[i].value; *c; c++) {
            if (*c == '\\' || *c == '"')
                fputc('\\', out);
            if (*c == '\n')
                fputs("\\n", out);
            else
                fputc(*c, out);
        }
        fputc('"', out);
    }
    if (s->nlabels)
        fputc('}', out);
}

static void print_uptime(FILE *out, double s)
{
    unsigned long t = s > 0 && s < 1e12 ? (unsigned long)s : 0;

    if (t >= 86400)
        fprintf(out, "%lud ", t / 86400);
    if (t >= 3600)
        fprintf(out, "%luh ", t / 3600 % 24);
    if (t >= 60)
        fprintf(out, "%lum ", t / 60 % 60);
    fprintf(out, "%lus", t % 60);
}

static int print_tables(render_t *r, const char *url)
{
    snap_t *cur = r->cur;
    const char *node = NULL, *version = NULL;
    double uptime = -1;
    size_t foreign = 0;
    int other = 0;
    char buf[64];

    for (size_t i = 0; i < cur->n; i++) {
        smp_t *s = &cur->v[i];
        if (!strcmp(s->name, "offcore_agent_info")) {
            node = label(s, "node");
            version = label(s, "version");
            s->used = 1;
        } else if (!strcmp(s->name, "offcore_agent_uptime_seconds") &&
                   s->nlabels == 0) {
            uptime = s->value;
            s->used = 1;
        }
    }
    fprintf(r->out, "offcored%s%s%s%s at %s", node ? " on node " : "",
            node ? node : "", version ? ", version " : "",
            version ? version : "", url);
    if (uptime >= 0) {
        fputs(", up ", r->out);
        print_uptime(r->out, uptime);
    }
    fputc('\n', r->out);
    if (r->watch > 0) {
        time_t t = (time_t)r->cur->wall;
        struct tm tm;
        char hms[16] = "";
        if (localtime_r(&t, &tm) != NULL)
            strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
        fprintf(r->out, "%s, every %gs%s; Ctrl-C to stop\n", hms, r->watch,
                r->prev ? ", rates per second under each row" : "");
    }

    for (size_t i = 0; i < N(views); i++)
        if (print_view(r, &views[i]) < 0)
            return -1;

    for (size_t i = 0; i < cur->n; i++) {
        const smp_t *s = &cur->v[i];
        if (s->used)
            continue;
        if (strncmp(s->name, "offcore_", 8) != 0) {
            foreign++;
            continue;
        }
        if (!other++)
            fprintf(r->out, "\nother\n");
        fputs("  ", r->out);
        print_series(r->out, s);
        fmt_value(buf, sizeof(buf), s->is_u64, s->u64, s->value);
        fprintf(r->out, " %s\n", buf);
    }
    if (foreign)
        fprintf(r->out, "\n(%zu sample%s not of offcore: see --json)\n",
                foreign, foreign == 1 ? "" : "s");
    return 0;
}

/* ------------------------------------------------------------ JSON */

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out); /* the parser let only valid UTF-8 through */
    }
    fputc('"', out);
}

static void print_json(FILE *out, const snap_t *sn, const char *url)
{
    fputs("{\"agent\":", out);
    json_string(out, url);
    fprintf(out, ",\"time\":%.3f,\"samples\":[", sn->wall);
    for (size_t i = 0; i < sn->n; i++) {
        const smp_t *s = &sn->v[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", out);
        json_string(out, s->name);
        fprintf(out, ",\"type\":\"%s\",\"labels\":{",
                oc_prom_type_name(s->type));
        for (size_t j = 0; j < s->nlabels; j++) {
            if (j)
                fputc(',', out);
            json_string(out, s->labels[j].name);
            fputc(':', out);
            json_string(out, s->labels[j].value);
        }
        fputs("},\"value\":", out);
        if (s->is_u64)
            fprintf(out, "%" PRIu64, s->u64);
        else if (isfinite(s->value))
            fprintf(out, "%.17g", s->value);
        else
            fprintf(out, "\"%s\"",
                    isnan(s->value) ? "NaN"
                    : s->value > 0  ? "+Inf"
                                    : "-Inf");
        fputc('}', out);
    }
    fputs("]}\n", out);
}

/* ------------------------------------------------------------ main */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    stop_requested = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: offcore stat [--agent ADDR] [--watch SECONDS [--count N]]"
            " [--json]\n"
            "\n"
            "Print the live counters of an offcored agent: per job, per peer,"
            " per routing\nthread, and rejected bundles by reason.\n"
            "\n"
            "  -a, --agent ADDR     HOST:PORT, :PORT, HOST or an http:// URL"
            " of the agent's\n"
            "                       metrics (default: $%s, else %s)\n"
            "  -w, --watch SECONDS  refresh every SECONDS and show per-second"
            " rates under\n"
            "                       each row, until Ctrl-C\n"
            "  -n, --count N        with --watch: stop after N refreshes\n"
            "  -j, --json           print the samples as JSON (one object per"
            " refresh)\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 ok, 1 no agent answers or a bad answer, 2 usage\n",
            OC_STAT_ENV, OC_STAT_DEFAULT_AGENT);
}

/* ADDR -> http://ADDR/metrics; a URL is taken as it is ("/metrics" added
 * when it has no path). */
static char *agent_url(const char *a)
{
    const char *fmt, *rest;
    char *url = NULL;
    int n;

    if (strstr(a, "://") != NULL) {
        rest = strstr(a, "://") + 3;
        fmt = strchr(rest, '/') ? "%s" : "%s/metrics";
    } else if (a[0] == ':')
        fmt = "http://127.0.0.1%s/metrics";
    else if (a[0] == '[')
        fmt = strstr(a, "]:") ? "http://%s/metrics" : "http://%s:9464/metrics";
    else if (strchr(a, ':') == NULL)
        fmt = "http://%s:9464/metrics";
    else if (strchr(a, ':') != strrchr(a, ':'))
        fmt = "http://[%s]:9464/metrics"; /* a bare IPv6 address */
    else
        fmt = "http://%s/metrics";
    n = asprintf(&url, fmt, a);
    return n < 0 ? NULL : url;
}

/* The option's value: "--opt=V", or the next argument. */
static const char *opt_value(int argc, char **argv, int *i, const char *lng,
                             const char *shrt)
{
    size_t n = strlen(lng);

    if (!strncmp(argv[*i], lng, n) && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (!strcmp(argv[*i], lng) || !strcmp(argv[*i], shrt))
        return *i + 1 < argc ? argv[++*i] : "";
    return NULL;
}

static int pause_for(double seconds)
{
    struct timespec ts, rem;

    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (!stop_requested && nanosleep(&ts, &rem) < 0 && errno == EINTR)
        ts = rem;
    return stop_requested;
}

int oc_stat_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *agent = getenv(OC_STAT_ENV), *v;
    double watch = 0;
    long count = 0;
    int json = 0, rc = 0, tty;
    char *url, *end;
    CURL *curl;
    snap_t snaps[2];
    struct sigaction sa, old_int, old_term;

    for (int i = 1; i < argc; i++) {
        if ((v = opt_value(argc, argv, &i, "--agent", "-a")) != NULL) {
            if (!*v) {
                fprintf(err, "offcore stat: --agent needs an address\n");
                return 2;
            }
            agent = v;
        } else if ((v = opt_value(argc, argv, &i, "--watch", "-w")) != NULL) {
            errno = 0;
            watch = strtod(v, &end);
            if (!*v || *end || errno || !(watch >= 0.1 && watch <= 86400)) {
                fprintf(err,
                        "offcore stat: --watch takes seconds, 0.1 to "
                        "86400 (got '%s')\n",
                        v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--count", "-n")) != NULL) {
            errno = 0;
            count = strtol(v, &end, 10);
            if (!*v || *end || errno || count < 1) {
                fprintf(err,
                        "offcore stat: --count takes a positive "
                        "number (got '%s')\n",
                        v);
                return 2;
            }
        } else if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
            json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(out);
            return 0;
        } else {
            fprintf(err, "offcore stat: unknown option '%s'\n\n", argv[i]);
            usage(err);
            return 2;
        }
    }
    if (count && !watch) {
        fprintf(err, "offcore stat: --count goes with --watch\n");
        return 2;
    }
    if (agent == NULL || !*agent)
        agent = OC_STAT_DEFAULT_AGENT;
    url = agent_url(agent);
    if (url == NULL || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(err, "offcore stat: cannot initialise libcurl\n");
        free(url);
        return 1;
    }
    curl = curl_easy_init();
    if (curl == NULL) {
        fprintf(err, "offcore stat: cannot initialise libcurl\n");
        rc = 1;
        goto out_global;
    }
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)FETCH_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)FETCH_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    /* an agent is reached directly: an http_proxy meant for the outside
     * world would otherwise swallow 127.0.0.1 */
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "offcore-stat");

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: a signal ends the sleep */
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    if (watch) {
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    }
    tty = isatty(fileno(out));
    memset(snaps, 0, sizeof(snaps));

    for (long n = 0; !stop_requested; n++) {
        snap_t *cur = &snaps[n & 1], *prev = &snaps[(n + 1) & 1];
        render_t r = {out, cur, prev->by_key ? prev : NULL, watch};

        snap_free(cur);
        if (fetch(curl, url, cur, err) != 0) {
            snap_free(cur);
            snap_free(prev); /* no rates across an outage */
            if (!watch || n == 0) {
                rc = 1;
                break;
            }
        } else if (json)
            print_json(out, cur, url);
        else {
            if (watch && tty)
                fputs("\033[H\033[2J", out);
            else if (watch && n > 0)
                fputs("\n", out);
            if (print_tables(&r, url) < 0) {
                fprintf(err, "offcore stat: out of memory\n");
                rc = 1;
                break;
            }
        }
        fflush(out);
        if (!watch || (count && n + 1 >= count) || pause_for(watch))
            break;
    }
    snap_free(&snaps[0]);
    snap_free(&snaps[1]);
    if (watch) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    curl_easy_cleanup(curl);
out_global:
    curl_global_cleanup();
    free(url);
    return rc;
}
