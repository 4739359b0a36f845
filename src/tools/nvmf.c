/*
 * nvmf.c — `offcore nvmf`: what a running offcore-nvmf serves, live: its
 * subsystems and namespaces with their I/O counters, the connected queues
 * (host, controller, queue id, digests, commands), and the target-wide
 * counters (connections, rejections by reason).
 *
 * It reads the target's Prometheus /metrics (the `metrics` line of its
 * configuration) with libcurl and oc__prom_parse(): the metric names are
 * the interface, named once in metrics/names.h.  The answer is
 * untrusted: the parser checks it, a value missing is shown as "-", and
 * every label is escaped before it is printed (util/esc.h: a host picks
 * its own NQN).
 * Not thread-safe (curl_global_init, static tables).
 */
#include "nvmf.h"
#include "http_get.h"

#include "metrics/metrics.h"
#include "metrics/names.h"
#include "util/esc.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ANSWER (16u << 20)
#define MAX_ROWS 512


/* one row per distinct label set of the families we show */
typedef struct {
    char key[768];
    char sub[256], nsid[16], conn[24], peer[64], host[256], cntlid[8],
        qid[8], digest[16];
    double v[12];
    int has[12];
} row_t;

static row_t ns_rows[MAX_ROWS], q_rows[MAX_ROWS];
static int n_ns, n_q;
static double totals[32];
static char reasons[16][40];
static double reason_v[16];
static int n_reasons;

static const char *const ns_fam[] = {
    OC_M_NVMF_NS_READS,       OC_M_NVMF_NS_WRITES,
    OC_M_NVMF_NS_READ_BYTES,  OC_M_NVMF_NS_WRITE_BYTES,
    OC_M_NVMF_NS_FLUSHES,     OC_M_NVMF_NS_ERRORS,
    OC_M_NVMF_NS_INTEGRITY_ERRORS,
    OC_M_NVMF_NS_LATENCY "_sum",
    OC_M_NVMF_NS_LATENCY "_count"};
#define N_NS_FAM (sizeof(ns_fam) / sizeof(ns_fam[0]))

static const char *lab(const oc_prom_sample_t *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return "";
}

static row_t *row(row_t *rows, int *n, const char *key)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(rows[i].key, key))
            return &rows[i];
    if (*n == MAX_ROWS)
        return NULL;
    memset(&rows[*n], 0, sizeof(row_t));
    snprintf(rows[*n].key, sizeof(rows[*n].key), "%s", key);
    return &rows[(*n)++];
}

static oc_status_t collect(void *arg, const oc_prom_sample_t *s)
{
    char key[768];
    row_t *r;

    (void)arg;
    for (size_t f = 0; f < N_NS_FAM; f++) {
        if (strcmp(s->name, ns_fam[f]))
            continue;
        snprintf(key, sizeof(key), "%s/%s", lab(s, "subsystem"), lab(s, "nsid"));
        if ((r = row(ns_rows, &n_ns, key))) {
            oc__esc_str(lab(s, "subsystem"), r->sub, sizeof(r->sub));
            oc__esc_str(lab(s, "nsid"), r->nsid, sizeof(r->nsid));
            r->v[f] = s->value;
            r->has[f] = 1;
        }
        return OC_OK;
    }
    if (!strcmp(s->name, OC_M_NVMF_QUEUE_COMMANDS)) {
        oc__esc_str(lab(s, "conn"), key, sizeof(key));
        if ((r = row(q_rows, &n_q, key))) {
            oc__esc_str(lab(s, "conn"), r->conn, sizeof(r->conn));
            oc__esc_str(lab(s, "peer"), r->peer, sizeof(r->peer));
            oc__esc_str(lab(s, "host"), r->host, sizeof(r->host));
            oc__esc_str(lab(s, "subsystem"), r->sub, sizeof(r->sub));
            oc__esc_str(lab(s, "cntlid"), r->cntlid, sizeof(r->cntlid));
            oc__esc_str(lab(s, "qid"), r->qid, sizeof(r->qid));
            oc__esc_str(lab(s, "digest"), r->digest, sizeof(r->digest));
            r->v[0] = s->value;
        }
        return OC_OK;
    }
    if (!strcmp(s->name, OC_M_NVMF_REJECTS) && n_reasons < 16) {
        oc__esc_str(lab(s, "reason"), reasons[n_reasons], sizeof(reasons[0]));
        reason_v[n_reasons++] = s->value;
        return OC_OK;
    }
    if (!strcmp(s->name, OC_M_NVMF_CONNS_ACCEPTED))
        totals[0] = s->value;
    else if (!strcmp(s->name, OC_M_NVMF_CONNS))
        totals[1] = s->value;
    else if (!strcmp(s->name, OC_M_NVMF_CONNECTS))
        totals[2] = s->value;
    else if (!strcmp(s->name, OC_M_NVMF_COMMANDS))
        totals[!strcmp(lab(s, "queue"), "admin") ? 3 : 4] = s->value;
    else if (!strcmp(s->name, OC_M_NVMF_COMMAND_ERRORS))
        totals[5] = s->value;
    return OC_OK;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: offcore nvmf [subsystems|connections|counters|all] "
            "[--target HOST:PORT] [--raw]\n"
            "\n"
            "What a running offcore-nvmf serves, read from its /metrics (the\n"
            "`metrics HOST:PORT` line of its configuration).\n"
            "  subsystems    namespaces: reads, writes, MB, errors, checksum\n"
            "                failures, mean latency\n"
            "  connections   connected queues: host, controller, queue id,\n"
            "                digests, commands\n"
            "  counters      connections, commands, rejections by reason\n"
            "  all           the three (default)\n"
            "  --target A    the target's metrics address (default $%s or %s)\n"
            "  --raw         print the Prometheus text as received\n",
            OC_NVMF_CLI_ENV, OC_NVMF_CLI_DEFAULT);
}

int oc__nvmf_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *target = getenv(OC_NVMF_CLI_ENV), *what = "all";
    char url[512];
    oc__http_answer_t body = {0};
    oc_prom_error_t perr;
    int raw = 0, rc = 1;
    CURLcode cc;
    CURL *curl;

    if (!target || !*target)
        target = OC_NVMF_CLI_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--target") && i + 1 < argc)
            target = argv[++i];
        else if (!strcmp(argv[i], "--raw"))
            raw = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(out);
            return 0;
        } else if (!strcmp(argv[i], "subsystems") ||
                   !strcmp(argv[i], "connections") ||
                   !strcmp(argv[i], "counters") || !strcmp(argv[i], "all"))
            what = argv[i];
        else {
            char e[256];
            fprintf(err, "offcore nvmf: unknown argument '%s'\n\n",
                    oc__esc_str(argv[i], e, sizeof(e)));
            usage(err);
            return 2;
        }
    }
    snprintf(url, sizeof(url), "http://%s/metrics", target);
    n_ns = n_q = n_reasons = 0;
    memset(totals, 0, sizeof(totals));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    curl = curl_easy_init();
    if (!curl) {
        fprintf(err, "offcore nvmf: libcurl failed to start\n");
        goto out;
    }
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 5L);
    cc = oc__http_get(curl, url, MAX_ANSWER, &body);
    if (cc != CURLE_OK) {
        fprintf(err, "offcore nvmf: no target answers at %s (%s)\n  start "
                "offcore-nvmf with a 'metrics %s' line, or give --target\n",
                url, body.err[0] ? body.err : curl_easy_strerror(cc), target);
        goto out;
    }
    if (body.code != 200 || !body.data) {
        fprintf(err, "offcore nvmf: %s answered HTTP %ld\n", url, body.code);
        goto out;
    }
    if (raw) {
        fputs(body.data, out);
        rc = 0;
        goto out;
    }
    if (oc__prom_parse(body.data, body.len, collect, NULL, &perr) != OC_OK) {
        fprintf(err, "offcore nvmf: %s: line %u: %s\n", url, perr.line,
                perr.msg);
        goto out;
    }
    if (!strcmp(what, "all") || !strcmp(what, "subsystems")) {
        fprintf(out, "%-40s %5s %10s %10s %10s %10s %7s %9s %9s\n",
                "SUBSYSTEM", "NSID", "READS", "WRITES", "READ_MB", "WRITE_MB",
                "ERRORS", "CHECKSUM", "MEAN_US");
        for (int i = 0; i < n_ns; i++) {
            row_t *r = &ns_rows[i];
            double mean = r->v[8] > 0 ? r->v[7] / r->v[8] * 1e6 : 0;
            fprintf(out, "%-40s %5s %10.0f %10.0f %10.1f %10.1f %7.0f %9.0f "
                    "%9.1f\n", r->sub, r->nsid, r->v[0], r->v[1],
                    r->v[2] / 1e6, r->v[3] / 1e6, r->v[5], r->v[6], mean);
        }
    }
    if (!strcmp(what, "all") || !strcmp(what, "connections")) {
        if (!strcmp(what, "all"))
            fputc('\n', out);
        fprintf(out, "%-6s %-21s %-6s %-4s %-11s %10s  %-s\n", "CONN", "PEER",
                "CNTLID", "QID", "DIGEST", "COMMANDS", "HOST -> SUBSYSTEM");
        for (int i = 0; i < n_q; i++) {
            row_t *r = &q_rows[i];
            fprintf(out, "%-6s %-21s %-6s %-4s %-11s %10.0f  %s -> %s\n",
                    r->conn, r->peer, r->cntlid, r->qid, r->digest, r->v[0],
                    r->host, r->sub);
        }
    }
    if (!strcmp(what, "all") || !strcmp(what, "counters")) {
        if (!strcmp(what, "all"))
            fputc('\n', out);
        fprintf(out, "connections accepted %.0f, open %.0f; Connect accepted "
                "%.0f; commands admin %.0f, I/O %.0f, failed %.0f\n",
                totals[0], totals[1], totals[2], totals[3], totals[4],
                totals[5]);
        fprintf(out, "rejected:");
        for (int i = 0; i < n_reasons; i++)
            fprintf(out, " %s %.0f%s", reasons[i], reason_v[i],
                    i + 1 < n_reasons ? "," : "");
        fputc('\n', out);
    }
    rc = 0;
out:
    free(body.data);
    if (curl)
        curl_easy_cleanup(curl);
    curl_global_cleanup();
    return rc;
}
