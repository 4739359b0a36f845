/*
 * dp.c — `offcore dp`: drive a running offcore-dp over its control socket
 * (the one-line request / "ok"-or-"error" answer protocol of
 * src/dp/ctl.c).  `stat` reads the daemon's counters as Prometheus text
 * and prints them as tables, through the same parser as `offcore stat`.
 */
#include "util/defaults.h"
#include "dp.h"
#include "ctl/ctl.h"
#include "metrics/metrics.h"
#include "metrics/names.h"
#include "util/esc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_CONTROL OC_DEFAULT_DP_ADDR
#define TIMEOUT_MS 10000 /* a 10K-rule load takes well under a second */

static void dp_usage(FILE *out)
{
    fprintf(out,
"usage: offcore dp [--control ADDR] COMMAND\n"
"\n"
"Talk to a running offcore-dp (its control socket: --control, or\n"
"OC_DP_CONTROL, default " DEFAULT_CONTROL ").\n"
"\n"
"  rules add RULE      add one rule, live: id=N [prio=N] action=allow|deny|count\n"
"                      [proto=tcp|udp|icmp|N[/MASK]] [src=A.B.C.D/LEN]\n"
"                      [dst=A.B.C.D/LEN] [sport=LO-HI] [dport=LO-HI]\n"
"                      (src=/dst= also IPv6: src=2001:db8::/32, the rule\n"
"                      then classifies IPv6 frames; one naming no address\n"
"                      classifies both; unset fields match anything;\n"
"                      lowest prio wins, prio defaults to id)\n"
"  rules del ID        delete the rule with that id\n"
"  log [SPEC]          the log levels now; with SPEC (as OC_LOG, e.g.\n"
"                      dp:debug or info) set them while it runs\n"
"  rules list          every rule, in match order, with its counters\n"
"  rules load FILE [action=allow|deny|count] [id_base=N]\n"
"                      replace every rule with FILE's (ClassBench lines, or\n"
"                      one RULE a line); all or nothing\n"
"  sa add in|out spi=N local=IP peer=IP key=FILE [match=PREFIX]\n"
"                      add an ESP SA, live (key file: 72 hex digits, key then\n"
"                      salt, mode 0600); out SAs protect inner destinations\n"
"                      in match (any); rekey: add a new spi, then del the old\n"
"  sa del in|out SPI   delete an SA\n"
"  sa list             every SA with its counters (never its key)\n"
"  flows [N]           the N (20, at most 32) largest flows now, both\n"
"                      directions (needs flows on or an ipfix collector),\n"
"                      TCP handshake RTT and round-trip times from TCP\n"
"                      timestamps toward each end (min/mean/max:samples)\n"
"  stat [--rules] [--raw]\n"
"                      counters: ports, parser verdicts, drops by cause,\n"
"                      rules that matched (--rules: every rule; --raw: the\n"
"                      Prometheus text as the daemon wrote it)\n"
"  conntrack count|list|flush [TENANT]\n"
"                      tracked flows (all tenants, or one): how many, each\n"
"                      with its state and expiry, or remove them\n"
"  tenant list         the tenants: VNI, attachment, addresses, tunnel, rate\n"
"  tenant add NAME vni=N attach=ATT mac=MAC ip=A.B.C.D local=IP\n"
"             local_mac=MAC remote=IP remote_mac=MAC [rate=MBIT] [burst=B]\n"
"             [ip6=ADDR[+ADDR...]|-[,...]]   (IPv6 addresses per attachment)\n"
"  tenant del NAME     live; a deleted tenant's attachment drops every frame\n"
"  tenant rule add TENANT ingress|egress RULE\n"
"  tenant rule del TENANT ingress|egress ID\n"
"                      change a tenant's security group, live (src=/dst=:\n"
"                      IPv4 or IPv6 prefixes; none: the rule is for both)\n"
"  ping                check that the daemon answers\n"
"\n"
"Exit status: 0 ok, 1 the daemon said error (the reason is printed),\n"
"2 bad usage, 3 the daemon could not be reached.\n");
}

/* Send one request line; the whole answer in *answer (malloc'd). */
static int request(const char *addr, const char *line, char **answer,
                   FILE *err)
{
    int fd;
    size_t len = 0, cap = 65536;
    char *buf;
    oc_status_t st = oc__ctl_connect(addr, 2000, &fd);

    if (st != OC_OK) {
        fprintf(err, "offcore dp: cannot reach offcore-dp at %s (%s): is it "
                "running? (--control ADDR)\n", addr, oc_status_string(st));
        return 3;
    }
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
        write(fd, "\n", 1) != 1) {
        fprintf(err, "offcore dp: %s: %s\n", addr, strerror(errno));
        close(fd);
        return 3;
    }
    buf = malloc(cap);
    if (buf == NULL) {
        close(fd);
        return 3;
    }
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        ssize_t r;
        if (poll(&pf, 1, TIMEOUT_MS) <= 0) {
            fprintf(err, "offcore dp: %s: no answer in %d s\n", addr,
                    TIMEOUT_MS / 1000);
            free(buf);
            close(fd);
            return 3;
        }
        if (len + 1 >= cap) {
            char *g = realloc(buf, cap * 2);
            if (g == NULL) {
                free(buf);
                close(fd);
                return 3;
            }
            buf = g;
            cap *= 2;
        }
        r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    *answer = buf;
    return 0;
}

/* @p n bytes of the daemon's text, each line escaped (util/esc.h): an
 * answer may quote a file or a peer, and goes to a terminal */
static void put_text(const char *s, size_t n, FILE *f)
{
    char e[4 * 256 + 1];

    for (size_t i = 0; i < n;) {
        size_t k = strcspn(s + i, "\n");
        if (k > n - i)
            k = n - i;
        for (size_t off = 0; off < k; off += 256) {
            size_t c = k - off < 256 ? k - off : 256;
            oc__esc(s + i + off, c, e, sizeof(e));
            fputs(e, f);
        }
        i += k;
        if (i < n && s[i] == '\n') {
            fputc('\n', f);
            i++;
        }
    }
}

/* Print the answer's body; 0 for "ok", 1 for "error: ..." */
static int finish(char *answer, FILE *out, FILE *err)
{
    char *body = strchr(answer, '\n');
    body = body ? body + 1 : answer + strlen(answer);
    if (!strncmp(answer, "ok\n", 3)) {
        put_text(body, strlen(body), out);
        return 0;
    }
    if (!strncmp(answer, "error: ", 7)) {
        fputs("offcore dp: ", err);
        put_text(answer + 7, (size_t)(body - answer - 7), err);
        put_text(body, strlen(body), err);
        return 1;
    }
    fputs("offcore dp: unexpected answer: ", err);
    put_text(answer, strnlen(answer, 80), err);
    fputc('\n', err);
    return 1;
}

/* ------------------------------------------------------------- stat */

/* Tables, in print order; samples are sorted into them as they come. */
enum { S_SUMMARY, S_PORTS, S_BACKPRESSURE, S_FRAMES, S_DROPS, S_THREADS,
       S_RULES, S_HIST, S_OTHER, S_MAX };
static const char *const sec_title[S_MAX] = {
    "summary", "ports", "port back-pressure", "frames by parser verdict",
    "drops", "threads", "rules (that matched; --rules: all)",
    "flow histograms (ended flows; p50/p99: the bucket's upper bound)",
    "other"};
static const char *const sec_head[S_MAX] = {
    NULL,
    "  attach       side port             dir          packets            bytes",
    "  port             what                 count",
    "  reason                 policy           frames",
    "  cause                            frames",
    "  thread         forwarded     idle sleeps",
    "  id          action          packets            bytes",
    "  histogram                                  of                    "
    "flows         mean          p50          p99",
    NULL};

/* A row with a packets and a bytes column: the two families list their
 * samples in the same order, so the k-th bytes sample joins row k. */
typedef struct {
    char     key[96];
    uint64_t packets, bytes;
} row_t;

typedef struct {
    row_t *rows;
    size_t n, cap, nbytes;
} rows_t;

typedef struct {
    bool all_rules;
    FILE *sec[S_MAX];
    char *buf[S_MAX];
    size_t len[S_MAX];
    rows_t ports, rules, threads;
    /* the histogram series being read: its buckets come first */
    size_t hn;
    double hle[64];
    uint64_t hcum[64];
    double hsum;
} stat_ctx_t;

static const char *label(const oc_prom_sample_t *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return "";
}

static oc_status_t row_packets(rows_t *r, const char *key, uint64_t v)
{
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 64;
        row_t *g = realloc(r->rows, nc * sizeof(*g));
        if (g == NULL)
            return OC_ERR_NO_MEMORY;
        r->rows = g;
        r->cap = nc;
    }
    snprintf(r->rows[r->n].key, sizeof(r->rows[r->n].key), "%s", key);
    r->rows[r->n].packets = v;
    r->rows[r->n++].bytes = 0;
    return OC_OK;
}

static void row_bytes(rows_t *r, uint64_t v)
{
    if (r->nbytes < r->n)
        r->rows[r->nbytes++].bytes = v;
}

/* The upper bound of the first bucket holding quantile @p q. */
static void quantile(const stat_ctx_t *c, uint64_t n, double q, char *b,
                     size_t cap)
{
    for (size_t i = 0; i < c->hn; i++)
        if ((double)c->hcum[i] >= q * (double)n) {
            snprintf(b, cap, "%g", c->hle[i]);
            return;
        }
    snprintf(b, cap, "+Inf");
}

/* Per-tenant and per-attachment flow histograms (and the global RTT
 * one): one row per series, when it has flows.  @return 1 taken. */
static int hist_cb(stat_ctx_t *c, const oc_prom_sample_t *s, uint64_t v)
{
    const char *n = s->name, *fam;
    size_t l = strlen(n);
    char of[64], p50[24], p99[24], name[64];

    if (strncmp(n, "offcore_dp_tenant_flow_", 23) != 0 &&
        strncmp(n, "offcore_dp_attach_flow_", 23) != 0 &&
        strncmp(n, "offcore_dp_flow_tcp_handshake_rtt_seconds", 41) != 0)
        return 0;
    if (l > 7 && !strcmp(n + l - 7, "_bucket")) {
        if (c->hn < 64) {
            const char *le = label(s, "le");
            c->hle[c->hn] = !strcmp(le, "+Inf") ? INFINITY : strtod(le, NULL);
            c->hcum[c->hn++] = v;
        }
        return 1;
    }
    if (l > 4 && !strcmp(n + l - 4, "_sum")) {
        c->hsum = s->value;
        return 1;
    }
    if (l <= 6 || strcmp(n + l - 6, "_count") != 0)
        return 0;
    if (v > 0) {
        fam = n + 11; /* without offcore_dp_ */
        snprintf(name, sizeof(name), "%.*s", (int)(strlen(fam) - 6), fam);
        if (*label(s, "tenant"))
            snprintf(of, sizeof(of), "tenant=%s vni=%s", label(s, "tenant"),
                     label(s, "vni"));
        else if (*label(s, "attach"))
            snprintf(of, sizeof(of), "attach=%s", label(s, "attach"));
        else
            snprintf(of, sizeof(of), "all");
        /* the timestamp RTTs: one series per direction (count: samples) */
        if (*label(s, "toward"))
            snprintf(of + strlen(of), sizeof(of) - strlen(of), " toward=%s",
                     label(s, "toward"));
        quantile(c, v, 0.5, p50, sizeof(p50));
        quantile(c, v, 0.99, p99, sizeof(p99));
        fprintf(c->sec[S_HIST], "  %-42s %-20s %6" PRIu64 " %12.6g %12s %12s\n",
                name, of, v, c->hsum / (double)v, p50, p99);
    }
    c->hn = 0;
    return 1;
}

static oc_status_t stat_cb(void *arg, const oc_prom_sample_t *s)
{
    stat_ctx_t *c = arg;
    const char *n = s->name;
    uint64_t v = s->is_u64 ? s->u64 : (uint64_t)s->value;
    char key[96];

    if (hist_cb(c, s, v))
        return OC_OK;
    if (!strcmp(n, OC_M_DP_THREADS) || !strcmp(n, OC_M_DP_RULES) ||
        !strcmp(n, OC_M_DP_FORWARDED) ||
        !strcmp(n, OC_M_DP_NOMATCH) ||
        !strcmp(n, OC_M_DP_RULE_UPDATES)) {
        fprintf(c->sec[S_SUMMARY], "  %-32s %16" PRIu64 "\n", n + 11, v);
    } else if (!strcmp(n, OC_M_DP_PORT_PACKETS)) {
        snprintf(key, sizeof(key), "%-12s %-4s %-16s %-3s", label(s, "attach"),
                 label(s, "side"), label(s, "port"), label(s, "dir"));
        return row_packets(&c->ports, key, v);
    } else if (!strcmp(n, OC_M_DP_PORT_BYTES)) {
        row_bytes(&c->ports, v);
    } else if (!strcmp(n, OC_M_DP_PORT_TX_RING_FULL) ||
               !strcmp(n, OC_M_DP_PORT_KERNEL_DROPS)) {
        if (v != 0)
            fprintf(c->sec[S_BACKPRESSURE], "  %-16s %-15s %12" PRIu64 "\n",
                    label(s, "port"),
                    strstr(n, "ring") ? "tx ring full" : "kernel drops", v);
    } else if (!strcmp(n, OC_M_DP_FRAMES)) {
        if (v != 0)
            fprintf(c->sec[S_FRAMES], "  %-22s %-6s %16" PRIu64 "\n",
                    label(s, "reason"), label(s, "policy"), v);
    } else if (!strcmp(n, OC_M_DP_DROPPED)) {
        fprintf(c->sec[S_DROPS], "  %-22s %16" PRIu64 "\n", label(s, "cause"),
                v);
    } else if (!strcmp(n, OC_M_DP_RULE_PACKETS)) {
        snprintf(key, sizeof(key), "%-11s %-6s", label(s, "id"),
                 label(s, "action"));
        return row_packets(&c->rules, key, v);
    } else if (!strcmp(n, OC_M_DP_RULE_BYTES)) {
        row_bytes(&c->rules, v);
    } else if (!strcmp(n, OC_M_DP_THREAD_FORWARDED)) {
        snprintf(key, sizeof(key), "%-8s", label(s, "thread"));
        return row_packets(&c->threads, key, v);
    } else if (!strcmp(n, OC_M_DP_THREAD_SLEEPS)) {
        row_bytes(&c->threads, v);
    } else {
        fprintf(c->sec[S_OTHER], "  %s %" PRIu64 "\n", n, v);
    }
    return OC_OK;
}

static void print_rows(FILE *out, const rows_t *r, bool skip_zero)
{
    for (size_t i = 0; i < r->n; i++)
        if (!skip_zero || r->rows[i].packets != 0)
            fprintf(out, "  %s %16" PRIu64 " %16" PRIu64 "\n", r->rows[i].key,
                    r->rows[i].packets, r->rows[i].bytes);
}

static int do_stat(const char *addr, int argc, char **argv, FILE *out,
                   FILE *err)
{
    stat_ctx_t c;
    bool raw = false;
    char *answer, *body;
    oc_prom_error_t perr;
    int rc;

    memset(&c, 0, sizeof(c));
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--rules"))
            c.all_rules = true;
        else if (!strcmp(argv[i], "--raw"))
            raw = true;
        else {
            char e[256];
            fprintf(err, "offcore dp stat: unknown argument '%s'\n",
                    oc__esc_str(argv[i], e, sizeof(e)));
            return 2;
        }
    }
    rc = request(addr, "stat", &answer, err);
    if (rc != 0)
        return rc;
    if (strncmp(answer, "ok\n", 3) != 0 || raw) {
        rc = finish(answer, out, err);
        free(answer);
        return rc;
    }
    body = answer + 3;
    for (int k = 0; k < S_MAX; k++)
        if ((c.sec[k] = open_memstream(&c.buf[k], &c.len[k])) == NULL) {
            fprintf(err, "offcore dp stat: out of memory\n");
            free(answer);
            return 1;
        }
    if (oc__prom_parse(body, strlen(body), stat_cb, &c, &perr) != OC_OK) {
        fprintf(err, "offcore dp stat: malformed counters at line %u: %s\n",
                perr.line, perr.msg);
        rc = 1;
    }
    for (int k = 0; k < S_MAX; k++) {
        fclose(c.sec[k]);
        if (rc == 0 && k == S_PORTS && c.ports.n > 0) {
            fprintf(out, "\n%s\n%s\n", sec_title[k], sec_head[k]);
            print_rows(out, &c.ports, false);
        }
        if (rc == 0 && k == S_THREADS && c.threads.n > 0) {
            fprintf(out, "\n%s\n%s\n", sec_title[k], sec_head[k]);
            print_rows(out, &c.threads, false);
        }
        if (rc == 0 && k == S_RULES && c.rules.n > 0) {
            fprintf(out, "\n%s\n%s\n", sec_title[k], sec_head[k]);
            print_rows(out, &c.rules, !c.all_rules);
        }
        if (rc == 0 && c.len[k] > 0) {
            fprintf(out, "%s%s\n", k ? "\n" : "", sec_title[k]);
            if (sec_head[k])
                fprintf(out, "%s\n", sec_head[k]);
            fputs(c.buf[k], out);
        }
        free(c.buf[k]);
    }
    free(c.ports.rows);
    free(c.rules.rows);
    free(c.threads.rows);
    free(answer);
    return rc;
}

int oc__dp_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *addr = getenv("OC_DP_CONTROL");
    char line[8192], *answer;
    int i = 1, rc;
    size_t n = 0;

    if (addr == NULL || addr[0] == '\0')
        addr = DEFAULT_CONTROL;
    if (i < argc && !strcmp(argv[i], "--control")) {
        if (i + 1 >= argc) {
            fprintf(err, "offcore dp: --control needs an address\n");
            return 2;
        }
        addr = argv[i + 1];
        i += 2;
    }
    if (i >= argc || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
        !strcmp(argv[i], "help")) {
        dp_usage(i >= argc ? err : out);
        return i >= argc ? 2 : 0;
    }
    if (!strcmp(argv[i], "stat"))
        return do_stat(addr, argc - i - 1, argv + i + 1, out, err);
    if (!strcmp(argv[i], "ping")) {
        snprintf(line, sizeof(line), "ping");
    } else if (!strcmp(argv[i], "log") && i + 2 >= argc) {
        snprintf(line, sizeof(line), "log%s%s", i + 1 < argc ? " " : "",
                 i + 1 < argc ? argv[i + 1] : "");
    } else if (!strcmp(argv[i], "rules") && i + 1 < argc) {
        const char *sub = argv[i + 1];
        if (!strcmp(sub, "list") && i + 2 == argc) {
            snprintf(line, sizeof(line), "rules list");
        } else if (!strcmp(sub, "del") && i + 3 == argc) {
            snprintf(line, sizeof(line), "rules del %s", argv[i + 2]);
        } else if (!strcmp(sub, "add") && i + 2 < argc) {
            n = (size_t)snprintf(line, sizeof(line), "rules add");
            for (int k = i + 2; k < argc && n < sizeof(line); k++)
                n += (size_t)snprintf(line + n, sizeof(line) - n, " %s",
                                      argv[k]);
        } else if (!strcmp(sub, "load") && i + 2 < argc) {
            char path[PATH_MAX];
            /* the daemon reads the file: hand it an absolute path */
            if (realpath(argv[i + 2], path) == NULL) {
                fprintf(err, "offcore dp: %s: %s\n", argv[i + 2],
                        strerror(errno));
                return 1;
            }
            n = (size_t)snprintf(line, sizeof(line), "rules load %s", path);
            for (int k = i + 3; k < argc && n < sizeof(line); k++)
                n += (size_t)snprintf(line + n, sizeof(line) - n, " %s",
                                      argv[k]);
        } else {
            dp_usage(err);
            return 2;
        }
    } else if ((!strcmp(argv[i], "conntrack") && i + 1 < argc &&
                (!strcmp(argv[i + 1], "count") || !strcmp(argv[i + 1], "list") ||
                 !strcmp(argv[i + 1], "flush")) && i + 3 >= argc) ||
               (!strcmp(argv[i], "tenant") && i + 2 == argc &&
                !strcmp(argv[i + 1], "list")) ||
               (!strcmp(argv[i], "tenant") && i + 5 < argc &&
                !strcmp(argv[i + 1], "rule")) ||
               (!strcmp(argv[i], "tenant") && i + 2 < argc &&
                (!strcmp(argv[i + 1], "add") || !strcmp(argv[i + 1], "del")))) {
        /* the tenant stages (docs/tenants.md): the words as they are */
        n = 0;
        for (int k = i; k < argc && n < sizeof(line); k++)
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s",
                                  k > i ? " " : "", argv[k]);
    } else if (!strcmp(argv[i], "flows") && i + 2 >= argc) {
        snprintf(line, sizeof(line), "flows%s%s", i + 1 < argc ? " " : "",
                 i + 1 < argc ? argv[i + 1] : "");
    } else if (!strcmp(argv[i], "sa") && i + 1 < argc) {
        const char *sub = argv[i + 1];
        if (!strcmp(sub, "list") && i + 2 == argc) {
            snprintf(line, sizeof(line), "sa list");
        } else if (!strcmp(sub, "del") && i + 4 == argc) {
            snprintf(line, sizeof(line), "sa del %s %s", argv[i + 2],
                     argv[i + 3]);
        } else if (!strcmp(sub, "add") && i + 2 < argc) {
            n = (size_t)snprintf(line, sizeof(line), "sa add");
            for (int k = i + 2; k < argc && n < sizeof(line); k++) {
                char path[PATH_MAX];
                /* the daemon reads the key file: an absolute path */
                if (!strncmp(argv[k], "key=", 4)) {
                    if (realpath(argv[k] + 4, path) == NULL) {
                        fprintf(err, "offcore dp: %s: %s\n", argv[k] + 4,
                                strerror(errno));
                        return 1;
                    }
                    n += (size_t)snprintf(line + n, sizeof(line) - n,
                                          " key=%s", path);
                } else {
                    n += (size_t)snprintf(line + n, sizeof(line) - n, " %s",
                                          argv[k]);
                }
            }
        } else {
            dp_usage(err);
            return 2;
        }
    } else {
        char e[256];
        fprintf(err, "offcore dp: unknown command '%s'\n\n",
                oc__esc_str(argv[i], e, sizeof(e)));
        dp_usage(err);
        return 2;
    }
    if (strlen(line) >= 4095 || strchr(line, '\n') != NULL) {
        fprintf(err, "offcore dp: request too long or has a newline\n");
        return 2;
    }
    rc = request(addr, line, &answer, err);
    if (rc != 0)
        return rc;
    rc = finish(answer, out, err);
    free(answer);
    return rc;
}
