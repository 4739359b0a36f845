/*
 * main.c — offcore-nvmf: an NVMe/TCP target.  Reads and checks the
 * configuration (config.c), opens the namespaces, serves /metrics when
 * asked (the Prometheus writer of src/metrics, on its own HTTP thread),
 * and runs the target's workers (worker 0 on the main thread) until
 * SIGTERM or SIGINT, which drain in-flight commands before the
 * connections close.
 *
 * Threading: the workers own the target (target.h); the metrics thread
 * reads counters (relaxed atomics, summed over the workers) and the
 * connection lists under snap_lock.
 */
#include "metrics/metrics.h"
#include "metrics/names.h"
#include "target.h"
#include "util/config.h"
#include "util/daemon.h"
#include "util/log.h"
#include "util/version.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>

/* set by the signal handler, read by every worker: a lock-free atomic
 * (async-signal-safe) */
static _Atomic int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store_explicit(&stop_flag, 1, memory_order_relaxed);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: offcore-nvmf --config FILE [--cores LIST] [--check]\n"
            "\n"
            "An NVMe over TCP target: the Linux kernel's nvme-tcp initiator\n"
            "(nvme connect -t tcp ...) uses its namespaces.\n"
            "\n"
            "  -c, --config FILE   subsystems, hosts, namespaces, listen address\n"
            "                      (the format: man 5 offcore-nvmf.conf; an example:\n"
            "                      /usr/share/doc/offcore/examples/nvmf.conf)\n"
            "  -C, --cores LIST    one worker thread per CPU listed (0-3,6), each\n"
            "                      owning the queues handed to it; overrides the\n"
            "                      file's cores / cpu.  Default: one worker per\n"
            "                      CPU this process may use (taskset)\n"
            "  -n, --check         check the configuration, open the namespaces'\n"
            "                      backing files (creating missing ones, and their\n"
            "                      checksum files) and keys, then exit (0: good);\n"
            "                      does not bind the listen address\n"
            "  -h, --help          this text\n"
            "      --version [-v]  print the version (-v: and how it was built)\n"
            "\n"
            "Admission (configuration statements, docs/nvmf.md): at most\n"
            "max-connections (1024) connections; each must send its ICReq and\n"
            "Connect within handshake-ms (5000) of arriving, and at the cap\n"
            "the oldest one that has not makes room for a newcomer.\n"
            "\n"
            "exit status: 0 stopped cleanly (or --check: good); 1 could not\n"
            "start (files, keys, CPUs, the listen address); 2 usage, or a\n"
            "configuration refused (syntax, values).\n"
            "\n"
            "OC_LOG=nvmf:info logs connections and controllers.  SIGTERM stops\n"
            "accepting, lets in-flight commands finish (10 s at most) and\n"
            "closes every connection.  SIGHUP is ignored (the configuration\n"
            "is read once: restart to change it).  The configuration must be\n"
            "a regular file of at most 1 MiB (a FIFO is refused at once).\n");
}

#define RELAXED(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* a namespace's counter at byte offset @p field, summed over the workers */
static uint64_t ns_sum(const oc_nvmf_target_t *t, const oc_nvmf_ns_t *ns,
                       size_t field)
{
    uint64_t v = 0;

    for (int w = 0; w < t->nworkers; w++)
        v += RELAXED(*(_Atomic uint64_t *)((uint8_t *)&ns->st[w] + field));
    return v;
}
#define NS_SUM(t, ns, f) ns_sum(t, ns, offsetof(oc_nvmf_ns_stats_t, f))

static void fill_ns(oc_prom_t *p, oc_nvmf_target_t *t, const char *name,
                    const char *help, size_t field)
{
    oc__prom_family(p, name, help, OC_PROM_COUNTER);
    for (int i = 1; i <= t->nsubsys; i++)
        for (int j = 0; j < t->subsys[i].nns; j++) {
            oc_nvmf_ns_t *ns = t->subsys[i].ns[j];
            char nsid[16];
            uint64_t v = ns_sum(t, ns, field);
            snprintf(nsid, sizeof(nsid), "%u", ns->nsid);
            oc__prom_sample(p, name,
                           OC_PROM_LABELS({"subsystem", t->subsys[i].conf->nqn},
                                          {"nsid", nsid}),
                           v);
        }
}

/* the workers' counters added up (every field a _Atomic uint64_t) */
static void sum_stats(oc_nvmf_target_t *t, oc_nvmf_stats_t *out)
{
    _Atomic uint64_t *o = (_Atomic uint64_t *)(void *)out;
    size_t n = sizeof(*out) / sizeof(*o);

    for (size_t k = 0; k < n; k++)
        atomic_init(&o[k], 0);
    for (int i = 0; i < t->nworkers; i++) {
        _Atomic uint64_t *v = (_Atomic uint64_t *)(void *)&t->w[i].st;
        for (size_t k = 0; k < n; k++)
            atomic_init(&o[k], RELAXED(o[k]) + RELAXED(v[k]));
    }
}

static oc_status_t fill(void *arg, oc_prom_t *p)
{
    oc_nvmf_target_t *t = arg;
    oc_nvmf_stats_t sum, *s = &sum;
    static const struct {
        const char *reason;
        size_t off;
    } rej[] = {
        {"pdu_fatal", offsetof(oc_nvmf_stats_t, pdu_fatal)},
        {"header_digest", offsetof(oc_nvmf_stats_t, hdr_digest_err)},
        {"data_digest", offsetof(oc_nvmf_stats_t, data_digest_err)},
        {"connect_rejected", offsetof(oc_nvmf_stats_t, connect_rejected)},
        {"host_denied", offsetof(oc_nvmf_stats_t, host_denied)},
        {"command_before_connect", offsetof(oc_nvmf_stats_t, cmd_before_connect)},
        {"invalid_opcode", offsetof(oc_nvmf_stats_t, invalid_opcode)},
        {"h2c_out_of_range", offsetof(oc_nvmf_stats_t, h2c_out_of_range)},
        {"keep_alive_expired", offsetof(oc_nvmf_stats_t, kato_expired)},
        {"host_stopped_reading", offsetof(oc_nvmf_stats_t, send_stalled)},
    };

    sum_stats(t, &sum);
    oc__prom_family(p, OC_M_NVMF_CONNS_ACCEPTED,
                   "TCP connections accepted", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_NVMF_CONNS_ACCEPTED, NULL, 0,
                   RELAXED(s->conns_accepted));
    oc__prom_family(p, OC_M_NVMF_CONNS, "open connections (queues)",
                   OC_PROM_GAUGE);
    oc__prom_sample(p, OC_M_NVMF_CONNS, NULL, 0,
                   RELAXED(s->conns_active));
    oc__prom_family(p, OC_M_NVMF_CONNECTS,
                   "Fabrics Connect commands accepted", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_NVMF_CONNECTS, NULL, 0,
                   RELAXED(s->connect_ok));
    oc__prom_family(p, OC_M_NVMF_REJECTS,
                   "input refused, by reason (docs/nvmf.md)", OC_PROM_COUNTER);
    for (size_t i = 0; i < sizeof(rej) / sizeof(rej[0]); i++)
        oc__prom_sample(p, OC_M_NVMF_REJECTS,
                       OC_PROM_LABELS({"reason", rej[i].reason}),
                       RELAXED(*(_Atomic uint64_t *)((uint8_t *)s + rej[i].off)));
    {   /* admission (util/guard.h): the same families as offcored's */
        static const char *const outcome[] = {"accepted", "evicted",
                                              "refused", "expired"};
        oc_guard_counters_t gc;
        const uint64_t *v = &gc.accepted;

        pthread_mutex_lock(&t->guard_lock);
        oc__guard_counters(&t->guard, &gc);
        pthread_mutex_unlock(&t->guard_lock);
        oc__prom_family(p, OC_M_CONNECTIONS,
                       "Connections, by outcome: accepted; evicted (not yet "
                       "connected, closed to make room at the cap); refused "
                       "(cap reached); expired (no ICReq and Connect within "
                       "handshake-ms)", OC_PROM_COUNTER);
        for (int o = 0; o < 4; o++)
            oc__prom_sample(p, OC_M_CONNECTIONS,
                           OC_PROM_LABELS({"server", "nvmf"},
                                          {"outcome", outcome[o]}),
                           v[o]);
        oc__prom_family(p, OC_M_ACCEPT_BACKOFFS,
                       "Times accept failed for want of descriptors or "
                       "memory and the listener paused", OC_PROM_COUNTER);
        oc__prom_sample(p, OC_M_ACCEPT_BACKOFFS,
                       OC_PROM_LABELS({"server", "nvmf"}), gc.backoffs);
    }
    oc__prom_family(p, OC_M_NVMF_COMMANDS, "commands received",
                   OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_NVMF_COMMANDS,
                   OC_PROM_LABELS({"queue", "admin"}), RELAXED(s->admin_cmds));
    oc__prom_sample(p, OC_M_NVMF_COMMANDS,
                   OC_PROM_LABELS({"queue", "io"}), RELAXED(s->io_cmds));
    oc__prom_family(p, OC_M_NVMF_H2C_DIRECT,
                   "H2CData PDUs received straight into their command's "
                   "buffer (no copy)", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_NVMF_H2C_DIRECT, NULL, 0,
                   RELAXED(s->h2c_direct));
    oc__prom_family(p, OC_M_NVMF_FIXED_IO,
                   "Reads and writes of the backing store from a registered "
                   "buffer (its pages not pinned per I/O)", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_NVMF_FIXED_IO, NULL, 0, RELAXED(s->fixed_io));
    oc__prom_family(p, OC_M_NVMF_COMMAND_ERRORS,
                   "commands completed with an error status", OC_PROM_COUNTER);
    oc__prom_sample(p, OC_M_NVMF_COMMAND_ERRORS, NULL, 0,
                   RELAXED(s->cmd_errors));

#define NSF(n, h, f) fill_ns(p, t, n, h, offsetof(oc_nvmf_ns_stats_t, f))
    NSF(OC_M_NVMF_NS_READS, "Read commands completed", reads);
    NSF(OC_M_NVMF_NS_WRITES, "Write commands completed", writes);
    NSF(OC_M_NVMF_NS_READ_BYTES, "bytes read", read_bytes);
    NSF(OC_M_NVMF_NS_WRITE_BYTES, "bytes written", write_bytes);
    NSF(OC_M_NVMF_NS_FLUSHES, "Flush commands", flushes);
    NSF(OC_M_NVMF_NS_WRITE_ZEROES, "Write Zeroes commands",
        write_zeroes);
    NSF(OC_M_NVMF_NS_DSM, "Dataset Management commands", dsm);
    NSF(OC_M_NVMF_NS_ERRORS, "commands failed", errors);
    NSF(OC_M_NVMF_NS_INTEGRITY_ERRORS,
        "blocks that failed their checksum (Unrecovered Read Error)",
        integrity_errors);

    oc__prom_family(p, OC_M_NVMF_NS_LATENCY,
                   "Read/Write latency, receipt to completion queued",
                   OC_PROM_HISTOGRAM);
    for (int i = 1; i <= t->nsubsys; i++)
        for (int j = 0; j < t->subsys[i].nns; j++) {
            oc_nvmf_ns_t *ns = t->subsys[i].ns[j];
            const char *nqn = t->subsys[i].conf->nqn;
            char nsid[16], le[32];
            uint64_t cum = 0;
            snprintf(nsid, sizeof(nsid), "%u", ns->nsid);
            for (int b = 0; b < 12; b++) {
                cum += NS_SUM(t, ns, lat_bucket[b]);
                if (b < 11)
                    snprintf(le, sizeof(le), "%g",
                             oc_nvmf_lat_bounds_us[b] / 1e6);
                else
                    snprintf(le, sizeof(le), "+Inf");
                oc__prom_sample(p, OC_M_NVMF_NS_LATENCY "_bucket",
                               OC_PROM_LABELS({"subsystem", nqn},
                                              {"nsid", nsid}, {"le", le}),
                               cum);
            }
            oc__prom_sample_f64(p, OC_M_NVMF_NS_LATENCY "_sum",
                               OC_PROM_LABELS({"subsystem", nqn},
                                              {"nsid", nsid}),
                               NS_SUM(t, ns, lat_sum_ns) / 1e9);
            oc__prom_sample(p, OC_M_NVMF_NS_LATENCY "_count",
                           OC_PROM_LABELS({"subsystem", nqn}, {"nsid", nsid}),
                           NS_SUM(t, ns, lat_count));
        }

    oc__prom_family(p, OC_M_NVMF_QUEUE_COMMANDS,
                   "commands per connected queue", OC_PROM_COUNTER);
    pthread_mutex_lock(&t->snap_lock);
    for (int w = 0; w < t->nworkers; w++)
    for (oc_nvmf_conn_t *c = t->w[w].conns; c; c = c->next) {
        char id[24], qid[8], cntlid[8];
        if (!c->snap_connected)
            continue;
        snprintf(id, sizeof(id), "%llu", (unsigned long long)c->id);
        snprintf(qid, sizeof(qid), "%u", c->snap_qid);
        snprintf(cntlid, sizeof(cntlid), "%u", c->snap_cntlid);
        oc__prom_sample(p, OC_M_NVMF_QUEUE_COMMANDS,
                       OC_PROM_LABELS({"conn", id}, {"peer", c->peer},
                                      {"host", c->snap_host},
                                      {"subsystem", c->snap_sub},
                                      {"cntlid", cntlid}, {"qid", qid},
                                      {"digest", c->snap_digest}),
                       RELAXED(c->ncmds));
    }
    oc__prom_family(p, OC_M_NVMF_QUEUE_LATENCY,
                   "Read/Write latency per connected I/O queue",
                   OC_PROM_HISTOGRAM);
    for (int w = 0; w < t->nworkers; w++)
    for (oc_nvmf_conn_t *c = t->w[w].conns; c; c = c->next) {
        char id[24], qid[8], le[32];
        uint64_t cum = 0;
        if (!c->snap_connected || c->snap_qid == 0)
            continue;
        snprintf(id, sizeof(id), "%llu", (unsigned long long)c->id);
        snprintf(qid, sizeof(qid), "%u", c->snap_qid);
        for (int b = 0; b < 12; b++) {
            cum += RELAXED(c->lat_bucket[b]);
            if (b < 11)
                snprintf(le, sizeof(le), "%g", oc_nvmf_lat_bounds_us[b] / 1e6);
            else
                snprintf(le, sizeof(le), "+Inf");
            oc__prom_sample(p, OC_M_NVMF_QUEUE_LATENCY "_bucket",
                           OC_PROM_LABELS({"conn", id}, {"qid", qid},
                                          {"le", le}),
                           cum);
        }
        oc__prom_sample_f64(p, OC_M_NVMF_QUEUE_LATENCY "_sum",
                           OC_PROM_LABELS({"conn", id}, {"qid", qid}),
                           RELAXED(c->lat_sum_ns) / 1e9);
        oc__prom_sample(p, OC_M_NVMF_QUEUE_LATENCY "_count",
                       OC_PROM_LABELS({"conn", id}, {"qid", qid}),
                       RELAXED(c->lat_count));
    }
    pthread_mutex_unlock(&t->snap_lock);
    return oc__prom_status(p);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 'n'},
        {"cores", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static oc_nvmf_conf_t conf;
    static oc_nvmf_target_t tgt;
    oc_metrics_server_t *msrv = NULL;
    const char *cfg = NULL, *cores = NULL;
    int check = 0, o;
    struct sigaction sa = {0};

    if (oc__version_opt(argc, argv, "offcore-nvmf"))
        return 0;
    oc__daemon_signals(); /* SIGHUP ignored: util/daemon.h */
    oc__env_check("offcore-nvmf"); /* util/envnames.c: a misspelt OC_* name */
    while ((o = getopt_long(argc, argv, "c:C:nh", opts, NULL)) != -1) {
        switch (o) {
        case 'c': cfg = optarg; break;
        case 'C': cores = optarg; break;
        case 'n': check = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!cfg || optind != argc) {
        usage(stderr);
        return 2;
    }
    /* 2: refused before anything started, as offcore-dp (the unit does
     * not restart it); 1: could not start (files, keys, the address) */
    if (oc__nvmf_conf_load(cfg, &conf, stderr) != OC_OK)
        return 2;
    if (cores) {
        char why[128];
        int n = oc__nvmf_parse_cores(cores, conf.cores, OC_NVMF_MAX_WORKERS,
                                    why, sizeof(why));
        if (n < 0) {
            fprintf(stderr, "offcore-nvmf: --cores '%s': %s\n", cores, why);
            return 2;
        }
        conf.ncores = n;
        conf.cpu = -1;
    }
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if (oc__nvmf_target_init(&tgt, &conf, check) != OC_OK) {
        fprintf(stderr, "offcore-nvmf: not started (reasons above)\n");
        return 1;
    }
    if (check) {
        printf("%s: configuration good: %d subsystem(s), listen %s\n", cfg,
               conf.nsubsys, conf.listen);
        oc__nvmf_target_fini(&tgt);
        return 0;
    }
    if (conf.metrics[0] &&
        oc__metrics_server_start(conf.metrics, fill, &tgt, &msrv) != OC_OK) {
        oc__nvmf_target_fini(&tgt);
        return 1;
    }
    fprintf(stderr, "offcore-nvmf: listening on %s%s%s\n", conf.listen,
            msrv ? ", metrics on " : "", msrv ? conf.metrics : "");
    {
        oc_status_t st = oc__nvmf_target_run(&tgt, &stop_flag);
        if (msrv)
            oc__metrics_server_stop(msrv);
        oc__nvmf_target_fini(&tgt);
        if (st != OC_OK) {
            fprintf(stderr, "offcore-nvmf: not started (reasons above)\n");
            return 1;
        }
    }
    return 0;
}
