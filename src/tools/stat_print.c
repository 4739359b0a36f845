/*
 * stat_print.c — `offcore stat`'s output: the tables (driven by views[]:
 * each column is one metric, plus for in/out pairs one selecting label, or
 * for a text column the label whose value it shows, such as the peers'
 * transport; each row one value of the view's key label; a sample that
 * fits no column is never dropped: it is listed under "other"),
 * per-second rates under each row with --watch, and the JSON form.  Label values come from an
 * untrusted exporter: tables print their escaped form (smp_t.shown).
 */
#include "stat_int.h"

#include "metrics/names.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))


static const col_t job_cols[] = {
    {OC_M_JOB_RANKS, NULL, NULL, "ranks", NULL},
    {OC_M_JOB_MESSAGES, "dir", "in", "msgs in", NULL},
    {OC_M_JOB_MESSAGES, "dir", "out", "msgs out", NULL},
    {OC_M_JOB_BYTES, "dir", "in", "bytes in", NULL},
    {OC_M_JOB_BYTES, "dir", "out", "bytes out", NULL},
    {OC_M_JOB_BUNDLES, "dir", "in", "bundles in", NULL},
    {OC_M_JOB_BUNDLES, "dir", "out", "bundles out", NULL},
    {OC_M_JOB_REJECTS, NULL, NULL, "rejects", NULL},
};
static const col_t peer_cols[] = {
    {OC_M_PEER_TRANSPORT, NULL, NULL, "transport", "transport"},
    {OC_M_PEER_MESSAGES, "dir", "in", "msgs in", NULL},
    {OC_M_PEER_MESSAGES, "dir", "out", "msgs out", NULL},
    {OC_M_PEER_BUNDLES, "dir", "in", "bundles in", NULL},
    {OC_M_PEER_BUNDLES, "dir", "out", "bundles out", NULL},
    {OC_M_PEER_BYTES, "dir", "in", "bytes in", NULL},
    {OC_M_PEER_BYTES, "dir", "out", "bytes out", NULL},
    {OC_M_PEER_BLOCKLIST, NULL, NULL, "blocklist", NULL},
};
static const col_t thread_cols[] = {
    {OC_M_THREAD_MESSAGES, NULL, NULL, "msgs", NULL},
    {OC_M_THREAD_BUNDLES, "dir", "in", "bundles in", NULL},
    {OC_M_THREAD_BUNDLES, "dir", "out", "bundles out", NULL},
    {OC_M_THREAD_FORWARDED, NULL, NULL, "forwarded", NULL},
    {OC_M_THREAD_SHM_BUNDLES, "dir", "in", "shm in", NULL},
    {OC_M_THREAD_SHM_BUNDLES, "dir", "out", "shm out", NULL},
    {OC_M_THREAD_SHM_FULL, NULL, NULL, "shm full", NULL},
    {OC_M_THREAD_FLUSHES, "reason", "full", "flush full", NULL},
    {OC_M_THREAD_FLUSHES, "reason", "timeout", "flush timeout", NULL},
    {OC_M_THREAD_FLUSHES, "reason", "idle", "flush idle", NULL},
    {OC_M_THREAD_FLUSHES, "reason", "explicit", "flush explicit", NULL},
    {OC_M_THREAD_BLOCKLIST, NULL, NULL, "blocklist", NULL},
};
static const col_t rank_cols[] = {
    {OC_M_RANK_TRANSPORT, NULL, NULL, "transport", "transport"},
};
static const col_t reject_cols[] = {
    {OC_M_REJECTS, NULL, NULL, "rejects", NULL},
};

static const view_t views[] = {
    {"jobs", "job", job_cols, N(job_cols), NULL},
    {"peers", "peer", peer_cols, N(peer_cols), NULL},
    {"local ranks", "job", rank_cols, N(rank_cols), "rank"},
    {"threads", "thread", thread_cols, N(thread_cols), NULL},
    {"rejects by reason", "reason", reject_cols, N(reject_cols), NULL},
};

/* ------------------------------------------------------------ tables */

typedef struct {
    const smp_t *s; /* NULL: no sample */
    double rate;
    int has_rate;
} cell_t;

typedef struct {
    const char *key;
    char *own; /* the key, when made of two labels */
    cell_t *cells;
} row_t;

static int is_counter(const smp_t *s)
{
    size_t n = strlen(s->name);

    return s->type == OC_PROM_COUNTER || (s->type == OC_PROM_UNTYPED && n > 6 &&
                                          !strcmp(s->name + n - 6, "_total"));
}

/* Exact integers stay exact; other values get 6 significant digits. */
void oc__stat_fmt_value(char *o, size_t n, int is_u64, uint64_t u, double v)
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

/* Keys in natural order: numbers by value, then names; "A/B" keys by A,
 * then B. */
static int cmp_key(const char *x, const char *y)
{
    const char *sx = strchr(x, '/'), *sy = strchr(y, '/');
    int dx, dy;

    if (sx != NULL && sy != NULL) {
        char ax[64], ay[64];
        int c;
        snprintf(ax, sizeof(ax), "%.*s", (int)(sx - x), x);
        snprintf(ay, sizeof(ay), "%.*s", (int)(sy - y), y);
        if ((c = cmp_key(ax, ay)) != 0)
            return c;
        return cmp_key(sx + 1, sy + 1);
    }
    dx = all_digits(x);
    dy = all_digits(y);

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

static int cmp_row(const void *a, const void *b)
{
    return cmp_key(((const row_t *)a)->key, ((const row_t *)b)->key);
}

/* Is @p s the sample of column @p c of view @p v?  Exactly the key label
 * and the selecting one (a text column: the key and the shown one, and
 * any others): anything else is for "other". */
static int fits(const smp_t *s, const view_t *v, const col_t *c)
{
    size_t nkeys = v->key2 != NULL ? 2 : 1;

    if (strcmp(s->name, c->metric) != 0 || oc__stat_label(s, v->key) == NULL ||
        (v->key2 != NULL && oc__stat_label(s, v->key2) == NULL))
        return 0;
    if (c->show != NULL) /* its other labels only say more of the same */
        return oc__stat_label(s, c->show) != NULL;
    if (c->sel == NULL)
        return s->nlabels == nkeys;
    return s->nlabels == nkeys + 1 && oc__stat_label(s, c->sel) != NULL &&
           !strcmp(oc__stat_label(s, c->sel), c->sel_val);
}



/* The text of a cell: the shown label, or the value. */
static void cell_text(char *buf, size_t n, const col_t *c, const smp_t *s)
{
    if (s == NULL)
        snprintf(buf, n, "-");
    else if (c->show != NULL)
        snprintf(buf, n, "%s", oc__stat_shown(s, c->show));
    else
        oc__stat_fmt_value(buf, n, s->is_u64, s->u64, s->value);
}

static int print_view(render_t *r, const view_t *v)
{
    snap_t *cur = r->cur;
    row_t *rows = NULL;
    size_t nrows = 0, w[16], kw;
    char heading[64], kbuf[512];
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
            k = oc__stat_shown(s, v->key);
            if (v->key2 != NULL) {
                snprintf(kbuf, sizeof(kbuf), "%s/%s", k,
                         oc__stat_shown(s, v->key2));
                k = kbuf;
            }
            for (j = 0; j < nrows && strcmp(rows[j].key, k); j++)
                ;
            if (j == nrows) {
                row_t *nr = realloc(rows, (nrows + 1) * sizeof(*rows));
                if (nr == NULL)
                    goto out;
                rows = nr;
                rows[j].own = v->key2 != NULL ? strdup(k) : NULL;
                rows[j].key = v->key2 != NULL ? rows[j].own : k;
                rows[j].cells = calloc(v->ncols, sizeof(cell_t));
                nrows++;
                if (rows[j].cells == NULL || rows[j].key == NULL)
                    goto out;
            }
            rows[j].cells[c].s = s;
            s->used = 1;
            if (r->prev && dt > 0 && is_counter(s)) {
                const smp_t *p = oc__stat_find(r->prev, s->key);
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
    if (v->key2 != NULL)
        snprintf(heading, sizeof(heading), "%s/%s", v->key, v->key2);
    else
        snprintf(heading, sizeof(heading), "%s", v->key);
    kw = strlen(heading);
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
                cell_text(buf, sizeof(buf), &v->cols[c], cl->s);
                if (strlen(buf) > w[c])
                    w[c] = strlen(buf);
            }
        }
        w[c] += 2; /* a sum may be one digit wider; and room to breathe */
    }

    fprintf(r->out, "\n%s\n  %-*s", v->title, (int)kw, heading);
    for (size_t c = 0; c < v->ncols; c++)
        fprintf(r->out, "%*s", (int)w[c], v->cols[c].heading);
    fputc('\n', r->out);
    for (size_t j = 0; j < nrows; j++) {
        int any_rate = 0;
        fprintf(r->out, "  %-*s", (int)kw, rows[j].key);
        for (size_t c = 0; c < v->ncols; c++) {
            const cell_t *cl = &rows[j].cells[c];
            cell_text(buf, sizeof(buf), &v->cols[c], cl->s);
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

    int numbers = 0; /* a view of text columns only has no totals */
    for (size_t c = 0; c < v->ncols; c++)
        numbers |= v->cols[c].show == NULL;
    if (nrows > 1 && numbers) { /* totals: exact while every cell is an integer */
        fprintf(r->out, "  %-*s", (int)kw, "total");
        for (size_t c = 0; c < v->ncols; c++) {
            uint64_t su = 0;
            double sd = 0;
            int exact = 1, any = 0;
            if (v->cols[c].show != NULL) { /* text: no sum */
                fprintf(r->out, "%*s", (int)w[c], "");
                continue;
            }
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
                oc__stat_fmt_value(buf, sizeof(buf), exact, su, sd);
            else
                snprintf(buf, sizeof(buf), "-");
            fprintf(r->out, "%*s", (int)w[c], buf);
        }
        fputc('\n', r->out);
    }
    rc = 0;
out:
    for (size_t j = 0; j < nrows; j++) {
        free(rows[j].cells);
        free(rows[j].own);
    }
    free(rows);
    return rc;
}

/* name{k="v",...} with the exposition's escaping. */
static void print_series(FILE *out, const smp_t *s)
{
    fputs(s->name, out);
    for (size_t i = 0; i < s->nlabels; i++) {
        fprintf(out, "%s%s=\"", i ? "," : "{", s->labels[i].name);
        for (const char *c = s->shown[i]; *c; c++) { /* escaped already */
            if (*c == '"')
                fputc('\\', out);
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

int oc__stat_print_tables(render_t *r, const char *url)
{
    snap_t *cur = r->cur;
    const char *node = NULL, *version = NULL;
    double uptime = -1;
    size_t foreign = 0;
    int other = 0;
    char buf[64];

    for (size_t i = 0; i < cur->n; i++) {
        smp_t *s = &cur->v[i];
        if (!strcmp(s->name, OC_M_AGENT_INFO)) {
            node = oc__stat_shown(s, "node");
            version = oc__stat_shown(s, "version");
            s->used = 1;
        } else if (!strcmp(s->name, OC_M_PEER_AUTH_FAILURES)) {
            s->used = 1; /* said below the header when not 0 */
        } else if (!strcmp(s->name, OC_M_BUILD_INFO)) {
            /* every daemon's; the agent's own info says the same */
            if (version == NULL)
                version = oc__stat_shown(s, "version");
            s->used = 1;
        } else if (!strcmp(s->name, OC_M_AGENT_UPTIME) &&
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
    for (size_t i = 0; i < cur->n; i++) {
        const smp_t *s = &cur->v[i];
        const char *peer;
        if (strcmp(s->name, OC_M_PEER_AUTH_FAILURES) != 0 ||
            (s->is_u64 ? s->u64 == 0 : !(s->value > 0)))
            continue;
        peer = oc__stat_shown(s, "peer");
        oc__stat_fmt_value(buf, sizeof(buf), s->is_u64, s->u64, s->value);
        fprintf(r->out, "peer %s: %s handshake%s refused: another cluster "
                "key (the same key file on every agent)\n",
                peer ? peer : "?", buf,
                s->is_u64 && s->u64 == 1 ? "" : "s");
    }
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
        oc__stat_fmt_value(buf, sizeof(buf), s->is_u64, s->u64, s->value);
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

void oc__stat_print_json(FILE *out, const snap_t *sn, const char *url)
{
    fputs("{\"agent\":", out);
    json_string(out, url);
    fprintf(out, ",\"time\":%.3f,\"samples\":[", sn->wall);
    for (size_t i = 0; i < sn->n; i++) {
        const smp_t *s = &sn->v[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", out);
        json_string(out, s->name);
        fprintf(out, ",\"type\":\"%s\",\"labels\":{",
                oc__prom_type_name(s->type));
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

