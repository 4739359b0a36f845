/*
 * stat.c — `offcore stat`: fetch an agent's /metrics over HTTP (libcurl),
 * parse it (oc__prom_parse) and print it as tables: per job, per peer, per
 * local rank (its transport), per routing thread, rejects by reason, and
 * any other offcore_* metric.  With
 * --watch it refreshes and prints per-second rates under each row.
 *
 * The tables are driven by the views[] below: each column is one metric
 * (plus, for in/out pairs, one selecting label), each row one value of the
 * view's key label.  A sample that fits no column is never dropped: it is
 * listed under "other".
 */
#include "stat.h"
#include "stat_int.h"
#include "http_get.h"

#include "metrics/names.h"
#include "util/esc.h"

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


static void snap_free(snap_t *sn)
{
    for (size_t i = 0; i < sn->n; i++) {
        smp_t *s = &sn->v[i];
        for (size_t j = 0; j < s->nlabels; j++) {
            free((char *)s->labels[j].name);
            free((char *)s->labels[j].value);
        }
        for (size_t j = 0; s->shown != NULL && j < s->nlabels; j++)
            free(s->shown[j]);
        free(s->shown);
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
    s->shown = calloc(ps->nlabels ? ps->nlabels : 1, sizeof(*s->shown));
    if (s->name == NULL || s->labels == NULL || s->shown == NULL)
        goto nomem;
    sn->n++; /* from here snap_free() frees what is set */
    for (size_t i = 0; i < ps->nlabels; i++) {
        s->labels[i].name = strdup(ps->labels[i].name);
        s->labels[i].value = strdup(ps->labels[i].value);
        s->shown[i] = oc__stat_escape(ps->labels[i].value);
        s->nlabels++;
        if (s->labels[i].name == NULL || s->labels[i].value == NULL ||
            s->shown[i] == NULL)
            return OC_ERR_NO_MEMORY;
    }
    s->key = make_key(s);
    return s->key ? OC_OK : OC_ERR_NO_MEMORY;
nomem:
    free(s->name);
    free(s->labels);
    free(s->shown);
    return OC_ERR_NO_MEMORY;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(smp_t *const *)a)->key, (*(smp_t *const *)b)->key);
}

const smp_t *oc__stat_find(const snap_t *sn, const char *key)
{
    smp_t probe, *pp = &probe, **hit;

    if (sn == NULL || sn->by_key == NULL)
        return NULL;
    probe.key = (char *)key;
    hit = bsearch(&pp, sn->by_key, sn->n, sizeof(*sn->by_key), cmp_key);
    return hit ? *hit : NULL;
}

char *oc__stat_escape(const char *v)
{
    const unsigned char *p = (const unsigned char *)v;
    size_t n = strlen(v);
    char *o = malloc(6 * n + 1), *w = o; /* "\u00NN" per byte at most */

    if (o == NULL)
        return NULL;
    for (; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            w += sprintf(w, *p == '\n' ? "\\n" : *p == '\t' ? "\\t"
                                                          : "\\x%02x", *p);
        else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* C1: CSI... */
            w += sprintf(w, "\\u%04x", *++p);
        else
            *w++ = (char)*p;
    }
    *w = '\0';
    return o;
}

const char *oc__stat_shown(const smp_t *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->shown[i];
    return NULL;
}

const char *oc__stat_label(const smp_t *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return NULL;
}

/* ------------------------------------------------------------ fetch */

static double now(clockid_t clk)
{
    struct timespec ts;

    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Exit statuses (stat.h). */
#define EXIT_UNREACHABLE 1
#define EXIT_USAGE       2
#define EXIT_BAD_ANSWER  3

/* An offcored always exports offcore_agent_info. */
static int is_offcored(const snap_t *sn)
{
    for (size_t i = 0; i < sn->n; i++)
        if (!strcmp(sn->v[i].name, OC_M_AGENT_INFO))
            return 1;
    return 0;
}

/* Fetch and parse @p url into @p sn.  Returns 0 or an exit status
 * (reported on err). */
static int fetch(CURL *curl, const char *url, snap_t *sn, FILE *err)
{
    oc__http_answer_t body;
    oc_prom_error_t perr;
    oc_status_t st;
    CURLcode rc;

    rc = oc__http_get(curl, url, MAX_ANSWER, &body);
    sn->t = now(CLOCK_MONOTONIC);
    sn->wall = now(CLOCK_REALTIME);
    if (rc != CURLE_OK) {
        const char *why = body.err[0] ? body.err : curl_easy_strerror(rc);
        int ret = EXIT_BAD_ANSWER;
        switch (rc) {
        case CURLE_WRITE_ERROR:
            fprintf(err, "offcore stat: the answer from %s is larger than "
                         "%u MiB: not an offcored\n", url, MAX_ANSWER >> 20);
            break;
        case CURLE_COULDNT_CONNECT:
            fprintf(err, "offcore stat: no agent answers at %s: connection "
                         "refused or unreachable: %s\n  (%s)\n", url,
                    START_HINT, why);
            ret = EXIT_UNREACHABLE;
            break;
        case CURLE_COULDNT_RESOLVE_HOST:
            fprintf(err, "offcore stat: %s: unknown host (%s)\n", url, why);
            ret = EXIT_UNREACHABLE;
            break;
        case CURLE_OPERATION_TIMEDOUT:
            fprintf(err, "offcore stat: %s did not answer within %d ms: the "
                         "agent is overloaded, stopped, or at its connection "
                         "cap (%s)\n", url, FETCH_TIMEOUT_MS, why);
            ret = EXIT_UNREACHABLE;
            break;
        case CURLE_URL_MALFORMAT: /* agent_url() checked the scheme */
            fprintf(err, "offcore stat: bad address %s: %s\n", url, why);
            ret = EXIT_USAGE;
            break;
        default: /* it answered, but not with sound HTTP */
            fprintf(err, "offcore stat: %s answered, but not with valid HTTP "
                         "(protocol error: %s): not an offcored metrics "
                         "endpoint\n", url, why);
            break;
        }
        free(body.data);
        return ret;
    }
    if (body.code != 200) {
        size_t l = body.data ? strcspn(body.data, "\n") : 0;
        fprintf(err, "offcore stat: %s answered HTTP %ld%s%.*s\n", url,
                body.code,
                l ? ": " : "", (int)(l > 200 ? 200 : l),
                body.data ? body.data : "");
        free(body.data);
        return EXIT_BAD_ANSWER;
    }
    memset(&perr, 0, sizeof(perr));
    st = oc__prom_parse(body.data, body.len, collect, sn, &perr);
    free(body.data);
    if (st == OC_ERR_INVALID_PARAM) {
        fprintf(err,
                "offcore stat: the answer from %s is not Prometheus "
                "text: line %u, column %u: %s\n",
                url, perr.line, perr.column, perr.msg);
        return EXIT_BAD_ANSWER;
    }
    if (st != OC_OK) {
        fprintf(err, "offcore stat: %s\n", oc_status_string(st));
        return EXIT_BAD_ANSWER;
    }
    if (!is_offcored(sn)) {
        fprintf(err, "offcore stat: %s answered %s, but not as offcored: no "
                     OC_M_AGENT_INFO " sample (another exporter on this "
                     "port?)\n", url, sn->n == 0 ? "with no metrics at all"
                                                 : "Prometheus text");
        return EXIT_BAD_ANSWER;
    }
    if (sn->n > 0) {
        sn->by_key = malloc(sn->n * sizeof(*sn->by_key));
        if (sn->by_key == NULL) {
            fprintf(err, "offcore stat: out of memory\n");
            return EXIT_BAD_ANSWER;
        }
        for (size_t i = 0; i < sn->n; i++)
            sn->by_key[i] = &sn->v[i];
        qsort(sn->by_key, sn->n, sizeof(*sn->by_key), cmp_key);
    }
    return 0;
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
            "Print the live counters of an offcored agent: per job, per peer"
            " node (with the\nUCX transport to it), the UCX transport to each"
            " local rank, per routing\nthread, and rejected bundles by"
            " reason.\n"
            "\n"
            "  -a, --agent ADDR     HOST:PORT, :PORT or PORT (this host), HOST"
            " (port "
            OC__DEFAULT_STR(OC_DEFAULT_METRICS_PORT) "),\n"
            "                       [IPV6]:PORT or an http(s):// URL of the"
            " agent's metrics\n"
            "                       endpoint, as offcored --metrics (not its"
            " control socket)\n"
            "                       (default: $%s, else %s)\n"
            "  -w, --watch SECONDS  refresh every SECONDS and show per-second"
            " rates under\n"
            "                       each row, until Ctrl-C\n"
            "  -n, --count N        with --watch: stop after N refreshes\n"
            "  -j, --json           print the samples as JSON (one object per"
            " refresh)\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 ok; 1 no agent answers (refused, unknown host,\n"
            "timed out); 2 usage or a malformed or unsupported address; 3 an\n"
            "answer that is not an offcored's (HTTP error, protocol error,\n"
            "not Prometheus text, no offcore metrics)\n",
            OC_STAT_ENV, OC_STAT_DEFAULT_AGENT);
}

/* Is "HOST:PORT" / "[V6]:PORT" / "HOST" / ":PORT" / "PORT" plausible?  Says
 * why not on @p err. */
static int all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

static int check_hostport(const char *a, FILE *err)
{
    const char *port = NULL, *host_end;
    char ea[256]; /* @p a as messages show it (util/esc.h) */

    oc__esc_str(a, ea, sizeof(ea));

    if (a[0] == '[') {
        host_end = strchr(a, ']');
        if (host_end == NULL || host_end == a + 1 ||
            strspn(a + 1, "0123456789abcdefABCDEF:.") !=
                (size_t)(host_end - a - 1)) {
            fprintf(err, "offcore stat: malformed address '%s': an IPv6 "
                         "address goes in brackets, [::1]:%d\n", ea,
                    OC_DEFAULT_METRICS_PORT);
            return -1;
        }
        if (host_end[1] == ':')
            port = host_end + 2;
        else if (host_end[1] != '\0' && host_end[1] != '/')
            goto bad;
    } else {
        const char *colon = strchr(a, ':');
        size_t hl = colon ? (size_t)(colon - a) : strcspn(a, "/");
        if (strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789.-_") < hl)
            goto bad;
        if (colon != NULL)
            port = colon + 1;
        else if (hl == 0)
            goto bad;
    }
    if (port != NULL) {
        size_t pl = strcspn(port, "/");
        unsigned long v = strtoul(port, NULL, 10);
        if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl ||
            v == 0 || v > 65535) {
            fprintf(err, "offcore stat: malformed address '%s': the port "
                         "must be a number from 1 to 65535\n", ea);
            return -1;
        }
    }
    return 0;
bad:
    fprintf(err, "offcore stat: malformed address '%s': expected HOST:PORT, "
                 ":PORT, HOST, [IPV6]:PORT or an http:// URL\n", ea);
    return -1;
}

/* ADDR -> http://ADDR/metrics; a URL is taken as it is ("/metrics" added
 * when it has no path).  NULL when ADDR is not one (said on @p err). */
/* the default port, as text in the URL formats below */
#define PORT OC__DEFAULT_STR(OC_DEFAULT_METRICS_PORT)

static char *agent_url(const char *a, FILE *err)
{
    const char *fmt, *rest;
    char *url = NULL, ea[256];

    oc__esc_str(a, ea, sizeof(ea));
    int n;

    if (!strncmp(a, "unix:", 5) || a[0] == '/' || !strncmp(a, "tcp:", 4)) {
        fprintf(err, "offcore stat: unsupported address '%s': that is a "
                     "control-socket address (offcored --listen); offcore "
                     "stat reads the HTTP metrics endpoint (offcored "
                     "--metrics, default %s)\n", ea, OC_STAT_DEFAULT_AGENT);
        return NULL;
    }
    if ((rest = strstr(a, "://")) != NULL) {
        if (strncmp(a, "http://", 7) != 0 && strncmp(a, "https://", 8) != 0) {
            fprintf(err, "offcore stat: unsupported scheme in '%s': only "
                         "http:// and https://\n", ea);
            return NULL;
        }
        rest += 3;
        if (check_hostport(rest, err) != 0)
            return NULL;
        fmt = strchr(rest, '/') ? "%s" : "%s/metrics";
    } else if (a[0] == ':')
        fmt = "http://127.0.0.1%s/metrics";
    else if (a[0] == '[')
        fmt = strstr(a, "]:") ? "http://%s/metrics" : "http://%s:" PORT "/metrics";
    else if (strchr(a, ':') == NULL)
        fmt = all_digits(a) ? "http://127.0.0.1:%s/metrics"
                            : "http://%s:" PORT "/metrics";
    else if (strchr(a, ':') != strrchr(a, ':'))
        fmt = "http://[%s]:" PORT "/metrics"; /* a bare IPv6 address */
    else
        fmt = "http://%s/metrics";
    if (rest == NULL && (strchr(a, ':') == NULL || a[0] == '[' ||
                         strchr(a, ':') == strrchr(a, ':')) &&
        check_hostport(a, err) != 0)
        return NULL;
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

int oc__stat_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *agent = getenv(OC_STAT_ENV), *v;
    double watch = 0;
    long count = 0;
    int json = 0, rc = 0, tty, frc;
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
    url = agent_url(agent, err);
    if (url == NULL)
        return EXIT_USAGE;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
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
        if ((frc = fetch(curl, url, cur, err)) != 0) {
            snap_free(cur);
            snap_free(prev); /* no rates across an outage */
            if (!watch || n == 0) {
                rc = frc;
                break;
            }
        } else if (json)
            oc__stat_print_json(out, cur, url);
        else {
            if (watch && tty)
                fputs("\033[H\033[2J", out);
            else if (watch && n > 0)
                fputs("\n", out);
            if (oc__stat_print_tables(&r, url) < 0) {
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
