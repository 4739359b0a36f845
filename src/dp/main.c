/*
 * main.c — offcore-dp: command line, configuration check, start, serve,
 * clean stop.  Exit codes: 0 stopped by SIGTERM/SIGINT, 1 could not start
 * (ports, sockets), 2 bad command line or configuration (nothing started).
 */
#include "util/defaults.h"
#include "dp.h"
#include "util/config.h"
#include "util/daemon.h"
#include "util/esc.h"
#include "util/log.h"
#include "util/version.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
"usage: offcore-dp --config FILE [--threads N] [--control unix:/PATH]\n"
"                  [--metrics HOST:PORT|off] [--stages classifier|none]\n"
"                  [--check] [--help] [--version]\n"
"\n"
"The offcore packet data plane.  For each attachment of the config file it\n"
"owns two ports, the host side and the wire side (AF_XDP sockets through\n"
"libxdp, or DPDK ports), and forwards every frame between them through a\n"
"pipeline: the parser (malformed frames counted and dropped by policy), then the\n"
"classifier (5-tuple rules: allow, deny, count; per-rule packet and byte\n"
"counters).  Rules change live: offcore dp rules add|del|list|load.\n"
"Runs in the foreground, logs to stderr (OC_LOG=info for more; OC_LOG=\n"
"dp:debug,pkt:debug); SIGTERM or SIGINT stops it cleanly (exit 0); SIGHUP\n"
"is ignored (the configuration is read once: restart to change it).\n"
"Files it reads (the config, rule files, key files) must be regular files:\n"
"a FIFO or a device is refused at once; config files up to 16 MiB, rule\n"
"files up to 64 MiB (uncompressed).\n"
"\n"
"  --config FILE   the configuration (checked in full before anything\n"
"                  starts: every error with file:line and reason, exit 2)\n"
"  --check         only check the configuration (interfaces included)\n"
"  --version [-v]  print the version (-v: and how it was built)\n"
"  --threads N     worker threads = queues used on every port (default 1;\n"
"                  each port needs N rx queues; flows spread over them by\n"
"                  the NIC's receive hash)\n"
"  --control ADDR  control socket (default " OC_DEFAULT_DP_ADDR ")\n"
"  --metrics ADDR  Prometheus endpoint HOST:PORT, or off (default off)\n"
"  --stages S      classifier (default), or none: a bare forwarder\n"
"\n"
"Config file (man 5 offcore-dp.conf), one directive a line, '#' comments:\n"
"  attach NAME host=IF wire=IF [backend=xdp|dpdk-af_packet|dpdk-af_xdp]\n"
"         [xdp=auto|native|generic] [zero_copy=yes|no]\n"
"         (attachments with tenants may share one wire=IF: one uplink,\n"
"         frames told apart by VNI)\n"
"  rule id=N [prio=N] action=allow|deny|count [proto=tcp|udp|icmp|N[/MASK]]\n"
"       [src=A.B.C.D/LEN] [dst=A.B.C.D/LEN] [sport=LO-HI] [dport=LO-HI]\n"
"  rules FILE [action=allow|deny|count] [id_base=N]   (ClassBench or rule lines)\n"
"  default allow|deny        when no rule matches (default allow)\n"
"  policy REASON pass|drop   per parser reason: ipv4 ipv4_fragment ipv6 arp\n"
"                            runt oversized unknown_ethertype vlan_depth\n"
"                            bad_ip_version bad_ip_header_length\n"
"                            bad_ip_total_length bad_l4_header\n"
"                            bad_ipv6_extension (malformed: drop by default)\n"
"  threads N | burst N (64) | ring N (2048) | max_rules N (65536)\n"
"  max_frame N (1526) | stages classifier|none | control ADDR | metrics ADDR\n"
"  tenant NAME vni=N attach=ATT mac=MAC ip=A.B.C.D local=IP local_mac=MAC\n"
"         remote=IP remote_mac=MAC [rate=MBIT] [burst=BYTES (65536)]\n"
"         [ip6=ADDR[+ADDR...]|-[,...]]   (IPv6: one item per attachment)\n"
"  tenant_rule TENANT ingress|egress RULE   (ingress: default deny;\n"
"         src=/dst= IPv4 or IPv6 prefixes, none: IPv4 and IPv6)\n"
"  conntrack [flows=N (1000000)] [flows6=N (flows/4)] [tcp_established=S ...]\n"
"            (docs/tenants.md)\n"
"  sa out|in spi=N local=IP peer=IP key=FILE [match=PREFIX]   ESP AES-256-GCM\n"
"  esp on|off | esp_clear allow|deny (deny) | esp_mtu N (1500)\n"
"  ipfix HOST:PORT (repeatable) | flows on|off | flow_table N (65536)\n"
"  flow_idle S (15) | flow_active S (60) | ipfix_domain N (1)\n"
"  ipfix_template S (30)      (docs/esp-ipfix.md)\n"
"\n"
"Lowest prio wins, then lowest id; prio defaults to id.  See docs/dp.md.\n");
}

int main(int argc, char **argv)
{
    oc_dp_conf_t c;
    oc_conf_errors_t err;
    const char *config = NULL, *threads = NULL, *control = NULL,
               *metrics = NULL, *stages = NULL;
    bool check = false;
    oc_dp_t *dp;
    oc_ctl_listener_t l;
    sigset_t set;
    int rc;

    if (oc__version_opt(argc, argv, "offcore-dp"))
        return 0;
    oc__daemon_signals(); /* SIGHUP ignored: util/daemon.h */
    oc__env_check("offcore-dp"); /* util/envnames.c: a misspelt OC_* name */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--check")) {
            check = true;
            continue;
        }
        if (!strcmp(a, "--config"))
            dst = &config;
        else if (!strcmp(a, "--threads"))
            dst = &threads;
        else if (!strcmp(a, "--control"))
            dst = &control;
        else if (!strcmp(a, "--metrics"))
            dst = &metrics;
        else if (!strcmp(a, "--stages"))
            dst = &stages;
        if (dst == NULL) {
            char e[256]; /* as typed, escaped: util/esc.h */
            fprintf(stderr, "offcore-dp: unknown argument '%s' (--help)\n",
                    oc__esc_str(a, e, sizeof(e)));
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "offcore-dp: %s needs a value\n", a);
            return 2;
        }
        *dst = argv[++i];
    }
    if (config == NULL) {
        fprintf(stderr, "offcore-dp: --config FILE is required (--help)\n");
        return 2;
    }
    oc__dp_conf_defaults(&c);
    memset(&err, 0, sizeof(err));
    {
        /* command-line values go through the same checks as file lines */
        char text[4 * OC_DP_PATH_MAX];
        oc_dp_conf_t probe;
        int n = 0;
        oc__dp_conf_defaults(&probe);
        if (threads)
            n += snprintf(text + n, sizeof(text) - n, "threads %s\n", threads);
        if (control)
            n += snprintf(text + n, sizeof(text) - n, "control %s\n", control);
        if (metrics)
            n += snprintf(text + n, sizeof(text) - n, "metrics %s\n", metrics);
        if (stages)
            n += snprintf(text + n, sizeof(text) - n, "stages %s\n", stages);
        snprintf(text + n, sizeof(text) - n, "attach x host=a wire=b\n");
        if (oc__dp_conf_parse(text, strlen(text), "command line", NULL, false,
                             &probe, &err) != OC_OK) {
            fprintf(stderr, "offcore-dp: %s", err.text);
            return 2;
        }
        oc__dp_conf_free(&probe);
        if (oc__dp_conf_load(config, true, &c, &err) != OC_OK) {
            fprintf(stderr, "offcore-dp: %u error(s) in the configuration, "
                    "nothing started:\n%s", err.count, err.text);
            return 2;
        }
        if (threads)
            c.threads = probe.threads;
        if (control)
            snprintf(c.control, sizeof(c.control), "%s", probe.control);
        if (metrics)
            snprintf(c.metrics, sizeof(c.metrics), "%s", probe.metrics);
        if (stages)
            c.bare = probe.bare;
    }
    if (check) {
        printf("%s: ok (%u attachment(s), %zu rules, %u thread(s))\n", config,
               c.nattach, c.nrules, c.threads);
        oc__dp_conf_free(&c);
        return 0;
    }
    /* SIGTERM and SIGINT are read from a signalfd by the control thread:
     * block them before any worker starts so that none of them receives
     * one (SIGHUP and SIGPIPE are ignored) */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (oc__dp_ctl_listen(&c, &l) != OC_OK) {
        fprintf(stderr, "offcore-dp: could not start (errors above)\n");
        oc__dp_conf_free(&c);
        return 1;
    }
    if (oc__dp_start(&c, &dp) != OC_OK) {
        fprintf(stderr, "offcore-dp: could not start (errors above)\n");
        oc__ctl_listener_close(&l);
        oc__dp_conf_free(&c);
        return 1;
    }
    rc = oc__dp_serve(dp, &c, &l);
    oc__dp_stop(dp);
    oc__dp_conf_free(&c);
    if (rc == 0)
        fprintf(stderr, "offcore-dp: stopped\n");
    return rc;
}
