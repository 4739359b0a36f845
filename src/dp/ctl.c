/*
 * ctl.c — offcore-dp's control socket and counters: a Unix socket (mode
 * 0600) taking one printable line per connection (conf/ctl_line.c refuses
 * anything else) and answering "ok" or "error: REASON", then the body,
 * until EOF — not src/ctl's framed codec, whose 64 KiB payloads a listing
 * of 10K rules would not fit.  The commands: docs/dp.md, "The control
 * socket".
 *
 * Threading: the control thread serves one client at a time (one that
 * stops reading for 2 s is dropped) and is the classifier's only writer.
 * Trust: whoever can open the socket may change the filter (root's, 0600).
 */
#include "ctl/ctl.h"
#include "dp_int.h"
#include "tenant/tenant_int.h"
#include "metrics/metrics.h"
#include "metrics/names.h"
#include "util/guard.h"
#include "util/log.h"
#include "util/counter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ metrics */

static const char *const drop_cause[OC_DP_V_MAX] = {
    [OC_DP_V_FORWARD] = "none", [OC_DP_V_POLICY] = "policy",
    [OC_DP_V_RULE] = "rule",    [OC_DP_V_DEFAULT] = "default",
    [OC_DP_V_TX_FULL] = "tx_full", [OC_DP_V_TENANT] = "tenant",
    [OC_DP_V_ESP] = "esp"};

#define SUM(expr)                                                              \
    ({                                                                         \
        uint64_t s_ = 0;                                                       \
        for (uint32_t q_ = 0; q_ < dp->nthreads; q_++) {                       \
            const oc_dp_worker_t *w = &dp->w[q_];                              \
            s_ += OC__CTR_GET(expr);                                             \
        }                                                                      \
        s_;                                                                    \
    })

oc_status_t oc__dp_metrics(void *arg, void *prom)
{
    oc_dp_t *dp = arg;
    oc_prom_t *p = prom;
    char buf[32];

    oc__prom_family(p, OC_M_DP_THREADS, "worker threads", OC_PROM_GAUGE);
    oc__prom_sample(p, OC_M_DP_THREADS, NULL, 0, dp->nthreads);
    oc__prom_family(p, OC_M_DP_RULES, "rules installed", OC_PROM_GAUGE);
    oc__prom_sample(p, OC_M_DP_RULES, NULL, 0,
                   __atomic_load_n(&dp->nrules, __ATOMIC_RELAXED));
    oc__prom_family(p, OC_M_DP_RULE_UPDATES,
                   "rule adds, deletes and loads applied", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_DP_RULE_UPDATES, NULL, 0,
                   OC__CTR_GET(dp->rule_ops));

    static const char *const fam[] = {
        OC_M_DP_PORT_PACKETS, OC_M_DP_PORT_BYTES,
        OC_M_DP_PORT_TX_RING_FULL,
        OC_M_DP_PORT_KERNEL_DROPS};
    static const char *const help[] = {
        "frames received and sent per port",
        "bytes received and sent per port (Ethernet frames)",
        "send calls that found the port's ring full (back-pressure)",
        "frames the kernel dropped before offcore-dp saw them (AF_XDP "
        "statistics: ring full, no fill buffer)"};
    for (int f = 0; f < 4; f++) {
        oc__prom_family(p, fam[f], help[f], OC_PROM_COUNTER);
        for (uint32_t a = 0; a < dp->nattach; a++)
            /* a shared wire port is listed once, under its first attachment */
            for (int s = 0; s < 2 - (dp->att[a].wire_of != 0); s++) {
                oc_port_stats_t st;
                const char *side = s == 0 ? "host" : "wire";
                const char *ifn = oc__port_name(dp->att[a].port[s]);
                oc__port_stats(dp->att[a].port[s], &st);
                if (f < 2) {
                    oc__prom_sample(p, fam[f],
                                   OC_PROM_LABELS({"attach", dp->att[a].name},
                                                  {"side", side}, {"port", ifn},
                                                  {"dir", "rx"}),
                                   f == 0 ? st.rx_packets : st.rx_bytes);
                    oc__prom_sample(p, fam[f],
                                   OC_PROM_LABELS({"attach", dp->att[a].name},
                                                  {"side", side}, {"port", ifn},
                                                  {"dir", "tx"}),
                                   f == 0 ? st.tx_packets : st.tx_bytes);
                } else {
                    oc__prom_sample(p, fam[f],
                                   OC_PROM_LABELS({"attach", dp->att[a].name},
                                                  {"side", side}, {"port", ifn}),
                                   f == 2 ? st.tx_full : st.kernel_rx_dropped);
                }
            }
    }
    oc__prom_family(p, OC_M_DP_FRAMES,
                   "frames by parser verdict (policy pass or drop per reason)",
                   OC_PROM_COUNTER);
    for (int r = 0; r < OC_PKT_R_MAX; r++)
        oc__prom_sample(p, OC_M_DP_FRAMES,
                       OC_PROM_LABELS({"reason", oc__pkt_reason_name(r)},
                                      {"policy", dp->policy[r] == OC_PKT_DROP
                                                     ? "drop"
                                                     : "pass"}),
                       SUM(w->c.reason[r]));
    oc__prom_family(p, OC_M_DP_FORWARDED,
                   "frames sent on to the other side", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_DP_FORWARDED, NULL, 0,
                   SUM(w->c.forwarded));
    oc__prom_family(p, OC_M_DP_DROPPED,
                   "frames dropped, by cause", OC_PROM_COUNTER);
    for (int v = 1; v < OC_DP_V_MAX; v++)
        oc__prom_sample(p, OC_M_DP_DROPPED,
                       OC_PROM_LABELS({"cause", drop_cause[v]}),
                       SUM(w->c.dropped[v]));
    oc__prom_family(p, OC_M_DP_NOMATCH,
                   "IPv4 frames no rule matched (the default action applied)",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_DP_NOMATCH, NULL, 0,
                   SUM(w->c.nomatch));
    oc__prom_family(p, OC_M_DP_THREAD_FORWARDED,
                   "frames each worker forwarded (flows spread over workers "
                   "by the ports' receive hash)", OC_PROM_COUNTER);
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        snprintf(buf, sizeof(buf), "%u", q);
        oc__prom_sample(p, OC_M_DP_THREAD_FORWARDED,
                       OC_PROM_LABELS({"thread", buf}),
                       OC__CTR_GET(dp->w[q].c.forwarded));
    }
    oc__prom_family(p, OC_M_DP_THREAD_SLEEPS,
                   "times a worker found no traffic and slept in poll()",
                   OC_PROM_COUNTER);
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        snprintf(buf, sizeof(buf), "%u", q);
        oc__prom_sample(p, OC_M_DP_THREAD_SLEEPS,
                       OC_PROM_LABELS({"thread", buf}),
                       OC__CTR_GET(dp->w[q].c.sleeps));
    }
    for (int f = 0; f < 2; f++) {
        const char *name = f == 0 ? OC_M_DP_RULE_PACKETS
                                  : OC_M_DP_RULE_BYTES;
        oc__prom_family(p, name,
                       f == 0 ? "frames matched per rule (first match)"
                              : "bytes (Ethernet frames) matched per rule",
                       OC_PROM_COUNTER);
        pthread_mutex_lock(&dp->lock);
        for (uint32_t s = 0; s < dp->nslots; s++) {
            const oc_dp_slot_t *sl = &dp->slots[s];
            oc_dp_ctr_t c;
            if (!sl->used)
                continue;
            c = oc__dp_slot_count(dp, s);
            snprintf(buf, sizeof(buf), "%u", sl->rule.r.id);
            oc__prom_sample(p, name,
                           OC_PROM_LABELS({"id", buf},
                                          {"action",
                                           oc__dp_action_name(sl->rule.action)}),
                           f == 0 ? c.packets - sl->base.packets
                                  : c.bytes - sl->base.bytes);
        }
        pthread_mutex_unlock(&dp->lock);
    }
    oc__dp_tenant_metrics(dp, p);
    oc__dp_esp_metrics(dp, p);
    oc__dp_flow_metrics(dp, p);
    oc__dp_uplink_metrics(dp, p);
    return oc__prom_status(p);
}

static oc_status_t fill(void *arg, oc_prom_t *p) { return oc__dp_metrics(arg, p); }

/* ------------------------------------------------------ control socket */

static void reply_error(FILE *out, const char *why)
{
    fprintf(out, "error: %s\n", why);
}

static void handle(oc_dp_t *dp, char *line, FILE *out)
{
    char why[512];
    oc_status_t st;

    why[0] = '\0';
    if (!strcmp(line, "ping")) {
        fprintf(out, "ok\npong\n");
    } else if (!strncmp(line, "rules add ", 10)) {
        oc_dp_rule_t r;
        if (oc__dp_rule_parse(line + 10, &r, why, sizeof(why)) != 0)
            return reply_error(out, why);
        st = oc__dp_rule_add(dp, &r, why, sizeof(why));
        if (st != OC_OK)
            return reply_error(out, why);
        oc__dp_rule_format(&r, why, sizeof(why));
        oc_info(OC_COMP_DP, "rule added: %s", why);
        fprintf(out, "ok\nadded %s\n", why);
    } else if (!strncmp(line, "rules del ", 10)) {
        char *end;
        unsigned long id;
        errno = 0;
        id = strtoul(line + 10, &end, 10);
        if (line[10] < '0' || line[10] > '9' || *end != '\0' || errno ||
            id > UINT32_MAX)
            return reply_error(out, "rules del takes a rule id (0..4294967295)");
        st = oc__dp_rule_del(dp, (uint32_t)id, why, sizeof(why));
        if (st != OC_OK)
            return reply_error(out, why);
        oc_info(OC_COMP_DP, "rule %lu deleted", id);
        fprintf(out, "ok\ndeleted id=%lu\n", id);
    } else if (!strcmp(line, "rules list")) {
        fprintf(out, "ok\n");
        oc__dp_rules_print(dp, out);
    } else if (!strncmp(line, "rules load ", 11)) {
        char *tok[4];
        int n = oc__kv_split(line + 11, tok, 4);
        oc_acl_action_t action;
        uint32_t id_base;
        oc_dp_rule_t *rules = NULL;
        size_t nr = 0;
        oc_conf_errors_t err;
        if (n <= 0 || tok[0][0] != '/')
            return reply_error(out, n < 0 ? "rules load PATH [action=allow|"
                                            "deny|count] [id_base=N]"
                                          : "rules load takes an absolute PATH");
        if (oc__dp_rules_opts(tok + 1, n - 1, &action, &id_base, why,
                              sizeof(why)) != 0)
            return reply_error(out, why);
        memset(&err, 0, sizeof(err));
        st = oc__dp_rules_file(tok[0], action, id_base, &rules, &nr,
                              &err);
        if (st != OC_OK) {
            size_t l = strlen(err.text);
            if (l > 0 && err.text[l - 1] == '\n')
                err.text[l - 1] = '\0';
            fprintf(out, "error: %u error(s), nothing changed\n%s\n",
                    err.count, err.text[0] ? err.text : oc_status_string(st));
            return;
        }
        st = oc__dp_rules_replace(dp, rules, nr, why, sizeof(why));
        free(rules);
        if (st != OC_OK)
            return reply_error(out, why);
        oc_info(OC_COMP_DP, "%zu rules loaded from %s", nr, tok[0]);
        fprintf(out, "ok\nloaded %zu rules from %s\n", nr, tok[0]);
    } else if (!strncmp(line, "sa add ", 7)) {
        oc_esp_sa_spec_t sa;
        if (oc__esp_sa_parse(line + 7, NULL, &sa, why, sizeof(why)) != 0)
            return reply_error(out, why);
        st = oc__dp_esp_sa_add(dp, &sa, why, sizeof(why));
        memset(sa.sa.key, 0, sizeof(sa.sa.key));
        if (st != OC_OK)
            return reply_error(out, why);
        oc__esp_sa_format(&sa, why, sizeof(why));
        oc_info(OC_COMP_DP, "sa added: %s", why);
        fprintf(out, "ok\nadded %s\n", why);
    } else if (!strncmp(line, "sa del ", 7)) {
        char dir[8], *end;
        unsigned long long spi;
        int used = 0;
        if (sscanf(line + 7, "%7s %n", dir, &used) != 1 || used == 0 ||
            (strcmp(dir, "in") && strcmp(dir, "out")))
            return reply_error(out, "sa del takes in|out SPI");
        errno = 0;
        spi = strtoull(line + 7 + used, &end, 0);
        if (errno != 0 || *end != '\0' || end == line + 7 + used ||
            spi > UINT32_MAX)
            return reply_error(out, "sa del takes in|out SPI");
        st = oc__dp_esp_sa_del(dp, dir[0] == 'o', (uint32_t)spi, why,
                               sizeof(why));
        if (st != OC_OK)
            return reply_error(out, why);
        oc_info(OC_COMP_DP, "sa deleted: %s spi 0x%08llx", dir, spi);
        fprintf(out, "ok\ndeleted %s spi 0x%08llx\n", dir, spi);
    } else if (!strcmp(line, "sa list")) {
        if (dp->esp == NULL)
            return reply_error(out, "ESP is off (no sa in the config)");
        fprintf(out, "ok\n");
        oc__dp_esp_sa_list(dp, out);
    } else if (!strcmp(line, "flows") || !strncmp(line, "flows ", 6)) {
        unsigned long nf = 20;
        char *end;
        if (line[5] == ' ') {
            nf = strtoul(line + 6, &end, 10);
            if (*end != '\0' || nf == 0 || nf > 32)
                return reply_error(out, "flows takes N, 1..32");
        }
        if (dp->flow == NULL)
            return reply_error(out, "flow telemetry is off (flows on, or an "
                               "ipfix line, in the config)");
        fprintf(out, "ok\n");
        oc__dp_flow_print(dp, (uint32_t)nf, out);
    } else if (!strcmp(line, "stat")) {
        oc_prom_buf_t b = {0};
        oc_prom_t p;
        oc__prom_init(&p, &b);
        st = oc__dp_metrics(dp, &p);
        if (st != OC_OK) {
            oc__prom_buf_free(&b);
            return reply_error(out, oc_status_string(st));
        }
        fprintf(out, "ok\n%s", b.data ? b.data : "");
        oc__prom_buf_free(&b);
    } else if (!strcmp(line, "log") || !strncmp(line, "log ", 4)) {
        /* the levels while it runs, as OC_LOG (ovs-appctl vlog/set) */
        if (line[3] == ' ' && oc__log_set(line + 4) != 0)
            return reply_error(out, "log takes a level spec as OC_LOG: "
                               "LEVEL or COMPONENT:LEVEL,... (levels error "
                               "warn info debug trace)");
        if (line[3] == ' ')
            oc_warn(OC_COMP_DP, "log levels set to %s (control socket)",
                    line + 4);
        oc__log_describe(why, sizeof(why));
        fprintf(out, "ok\n%s\n", why);
    } else if (oc__dp_tenant_ctl(dp, line, out)) {
        /* conntrack count|list|flush, tenant list (tenant/tenant_ctl.c) */
    } else {
        reply_error(out, "unknown command (ping, log [SPEC], rules "
                         "add|del|list|load, stat, "
                         "conntrack count|list|flush [TENANT], tenant list, "
                         "sa add|del|list, flows)");
    }
}

static void serve_client(oc_dp_t *dp, int fd)
{
    char line[OC_DP_LINE_MAX], why[160];
    size_t len = 0;
    bool closed = false;
    struct timeval tv = {2, 0};
    FILE *out;
    int rc;

    /* one request line (conf/ctl_line.c checks it), the answer, close */
    while ((rc = oc__dp_ctl_line(line, len, sizeof(line) - 1, closed, why,
                                 sizeof(why))) == 0) {
        struct pollfd pf = {fd, POLLIN, 0};
        ssize_t r;
        if (poll(&pf, 1, 2000) <= 0) {
            closed = true;
            continue;
        }
        r = read(fd, line + len, sizeof(line) - 1 - len);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            closed = true;
        else
            len += (size_t)r;
    }
    /* blocking writes, each at most 2 s */
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    out = fdopen(fd, "w");
    if (out == NULL) {
        close(fd);
        return;
    }
    if (rc < 0) {
        static oc_log_limit_t lim = OC_LOG_LIMIT_INIT("refused control requests");
        oc_warn_limited(&lim, OC_COMP_DP, "control request refused: %s", why);
        reply_error(out, why);
    } else {
        handle(dp, line, out);
    }
    fclose(out);
}

oc_status_t oc__dp_ctl_listen(const oc_dp_conf_t *c, oc_ctl_listener_t *l)
{
    oc_status_t st;

    /* the socket changes rules: root's only; its directory (/run/offcore
     * by default) made if missing */
    st = oc__ctl_listen_mode(c->control, 0600, l);
    if (st != OC_OK)
        oc_error(OC_COMP_DP, "control socket %s: cannot listen (is another "
                 "offcore-dp running on it?)", c->control);
    return st;
}

int oc__dp_serve(oc_dp_t *dp, const oc_dp_conf_t *c, oc_ctl_listener_t *lp)
{
    oc_ctl_listener_t l = *lp;
    oc_metrics_server_t *ms = NULL;
    sigset_t set;
    int sfd, rc = 0;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0) {
        oc_error(OC_COMP_DP, "signalfd: %s", strerror(errno));
        oc__ctl_listener_close(&l);
        return 1;
    }
    if (strcmp(c->metrics, "off") != 0 &&
        oc__metrics_server_start(c->metrics, fill, dp, &ms) != OC_OK) {
        oc_error(OC_COMP_DP, "metrics endpoint %s: cannot serve", c->metrics);
        oc__ctl_listener_close(&l);
        close(sfd);
        return 1;
    }
    oc_info(OC_COMP_DP, "running: %u attachment(s), %u thread(s), %u rules, "
            "control %s, metrics %s", dp->nattach, dp->nthreads, dp->nrules,
            l.addr, ms ? c->metrics : "off");
    fprintf(stderr, "offcore-dp: ready (control %s)\n", l.addr);
    /* the clients are served one at a time (serve_client's own 2 s
     * deadline per read); the guard is only the shared back-off when
     * accept runs out of descriptors (util/guard.h) */
    oc_guard_params_t gp = {.max_conns = 1, .deadline_ms = 2000,
                            .backoff_ms = 100};
    oc_guard_t guard;
    oc__guard_init(&guard, "dp control", &gp);
    oc__guard_log_as(&guard, OC_COMP_DP);
    for (;;) {
        struct pollfd pf[2] = {{sfd, POLLIN, 0}, {l.fd, POLLIN, 0}};
        int wait_ms = -1;
        if (!oc__guard_listen_ok(&guard, oc__now_us(), &wait_ms))
            pf[1].fd = -1;
        if (poll(pf, 2, wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            oc_error(OC_COMP_DP, "poll: %s", strerror(errno));
            rc = 1;
            break;
        }
        if (pf[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                oc_info(OC_COMP_DP, "signal %u: stopping", si.ssi_signo);
                break;
            }
        }
        if (pf[1].revents & POLLIN) {
            int fd;
            while (oc__ctl_accept(&l, &guard, &fd, NULL, 0) == OC_OK)
                serve_client(dp, fd);
        }
    }
    oc__metrics_server_stop(ms);
    oc__ctl_listener_close(&l);
    close(sfd);
    return rc;
}
