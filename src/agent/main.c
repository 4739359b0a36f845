/*
 * main.c — offcored: command line and configuration of the routing agent.
 */
#include "util/defaults.h"
#include "agent.h"
#include "util/daemon.h"
#include "util/esc.h"
#include "util/log.h"
#include "util/version.h"

#include <ctype.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const route_values[] = {"direct", "grid", NULL};

const oc_cfg_field_t oc_agent_config_table[] = {
    {"AGENT_LISTEN", OC_CFG_STRING, OC_DEFAULT_AGENT_ADDR,
     "Where ranks and peer agents connect (comma list of unix:/PATH and "
     "tcp:HOST:PORT). Ranks on this host use the Unix socket; a TCP address "
     "serves ranks on another host (the DPU case) and peer agents.",
     offsetof(oc_agent_config_t, listen), 0, 0, NULL},
    {"AGENT_PEERS", OC_CFG_STRING, "",
     "TCP addresses of the other agents of the cluster, as they appear in "
     "their --listen. Empty: a single node.",
     offsetof(oc_agent_config_t, peers), 0, 0, NULL},
    {"AGENT_NODE", OC_CFG_UINT, "4294967295",
     "This agent's node index. Default: its TCP address's position in the "
     "sorted list of all agents' addresses, the same on every agent.",
     offsetof(oc_agent_config_t, node), 0, UINT32_MAX, NULL},
    {"AGENT_THREADS", OC_CFG_UINT, "1",
     "Routing threads, each with its own UCX worker and buffers. One keeps "
     "a core for the application on small machines; give one per core the "
     "agent owns (a DPU's Arm cores, a spare socket).",
     offsetof(oc_agent_config_t, threads), 1, 64, NULL},
    {"AGENT_METRICS", OC_CFG_STRING, OC_DEFAULT_METRICS_ADDR,
     "HOST:PORT of the Prometheus endpoint (GET /metrics), or off. The port is "
     "the port Prometheus' registry lists for such exporters.",
     offsetof(oc_agent_config_t, metrics), 0, 0, NULL},
    {"AGENT_CLUSTER_KEY", OC_CFG_STRING, OC_DEFAULT_CLUSTER_KEY,
     "File holding the cluster key (32+ bytes, hex or raw, mode 0600, a "
     "regular file) that agents prove to each other and from which each "
     "job's key derives (offcore job-key). Where the key comes from, first "
     "that is set: --cluster-key FILE, OC_CLUSTER_KEY (the key, hex), this "
     "variable, the default file; a variable set but empty counts as unset "
     "(offcore job-key follows the same order).",
     offsetof(oc_agent_config_t, cluster_key), 0, 0, NULL},
    {"AGENT_BUNDLE_SIZE", OC_CFG_SIZE, "8000",
     "Bytes per bundle the agent builds. 8000 fits one UCX shared-memory "
     "segment; raise it when peers are across a network.",
     offsetof(oc_agent_config_t, bundle_size), 256, 16u << 20, NULL},
    {"AGENT_BUFFERS", OC_CFG_UINT, "1024",
     "Bundle buffers per routing thread (memory: this x bundle size).",
     offsetof(oc_agent_config_t, buffers), 16, 1u << 20, NULL},
    {"AGENT_FLUSH_TIMEOUT_US", OC_CFG_UINT, "200",
     "A bundle goes out this long after its first message even if more "
     "traffic keeps coming; idle threads flush at once.",
     offsetof(oc_agent_config_t, flush_timeout_us), 0, 60000000, NULL},
    {"AGENT_SHM_SLOTS", OC_CFG_UINT, "64",
     "Slots of each ring of the shared-memory channel offered to a rank on "
     "this host that asks for it (OC_AGENT_CHANNEL=shm, the default): one "
     "ring toward the agent and one back from each routing thread, each "
     "slot a bundle (AGENT_BUNDLE_SIZE), so (1 + threads) x this x bundle "
     "size per rank (1 MiB with one thread, 2.5 MiB with four, by default; "
     "touched as used), plus 288 KiB for the collectives' two rings. Ranks sharing a core hand it over when a ring fills, so "
     "fewer slots cost speed; more than 64 gained nothing "
     "(docs/results.md). A power of two; 0 offers none (ranks then use "
     "UCX).",
     offsetof(oc_agent_config_t, shm_slots), 0, 65536, NULL},
    {"AGENT_MAX_INFLIGHT", OC_CFG_UINT, "16",
     "Bundles in flight to one next hop before it is blocklisted and its "
     "traffic held back (back-pressure instead of unbounded queues).",
     offsetof(oc_agent_config_t, max_inflight), 1, 1u << 20, NULL},
    {"AGENT_ROUTE", OC_CFG_ENUM, "direct",
     "direct: one hop between agents (each agent buffers toward every "
     "node). grid: at most two hops, along the sender's row of a "
     "sqrt(nodes) grid then the receiver's column, so each agent buffers "
     "toward O(sqrt(nodes)) others; every agent must use the same mode.",
     offsetof(oc_agent_config_t, route), 0, 0, route_values},
    {"AGENT_MAX_CONNS", OC_CFG_UINT, "1024",
     "Control connections at most: ranks, peer agents and handshakes in "
     "progress. At the cap a newcomer takes the place of the oldest "
     "connection still in its handshake, so idle or hostile sockets delay a "
     "real rank by a round trip, never lock it out; with none in a "
     "handshake it is refused. 1024: a node's ranks and agents (hundreds) "
     "with room to spare. Lowered at start to 3/4 of the descriptor limit "
     "(RLIMIT_NOFILE, raised to its hard limit first) when that is smaller. "
     "Memory: a connection in its handshake holds at most ~4 KiB of input "
     "(frames over OC_CTL_PREAUTH_FRAME_MAX are refused before "
     "authentication) plus ~1 KiB, so 1024 of them cost under 6 MiB.",
     offsetof(oc_agent_config_t, max_conns), 4, 1u << 20, NULL},
    {"AGENT_HANDSHAKE_MS", OC_CFG_UINT, "5000",
     "A connection must finish its handshake (HELLO to AUTH, or the agents' "
     "PEER_HELLO and PEER_AUTH) this long after it arrives, else it is told "
     "so and closed; also the deadline for a whole HTTP request to "
     "/metrics. A real handshake takes a round trip or two (milliseconds); "
     "5 s leaves a loaded node plenty and matches how long a rank waits for "
     "each reply.",
     offsetof(oc_agent_config_t, handshake_ms), 100, 600000, NULL},
    {"AGENT_METRICS_MAX_CONNS", OC_CFG_UINT, "16",
     "Connections to /metrics at most (same policy as the control socket: "
     "the oldest unfinished request makes room). Scrapers are few; 16 "
     "covers Prometheus, an offcore stat --watch and some curls.",
     offsetof(oc_agent_config_t, metrics_max_conns), 1, 4096, NULL},
    {"AGENT_ACCEPT_BACKOFF_MS", OC_CFG_UINT, "100",
     "When accept fails for want of descriptors or memory (EMFILE, ENFILE) "
     "the oldest connection still in its handshake gives its descriptor to "
     "the newcomer; with none, the listening sockets are left alone this "
     "long: retrying at once would spin a core on a listener that stays "
     "readable. 100 ms delays a newcomer by at most that once descriptors "
     "free up.",
     offsetof(oc_agent_config_t, accept_backoff_ms), 1, 60000, NULL},
    {"AGENT_LOG_RATE", OC_CFG_UINT, "10",
     "Lines per second each kind of warning a peer can trigger may print "
     "(malformed or unexpected control messages, handshake deadlines, "
     "connections over the cap, accept failures, for the control socket "
     "and /metrics each); the rest are counted and summed up in one line "
     "per second. 10 shows who misbehaves; a flood of bad peers then costs "
     "at most (10 + 1) lines a second per kind instead of a line per peer.",
     offsetof(oc_agent_config_t, log_rate), 1, 100000, NULL},
    {"AGENT_COLL_CMA", OC_CFG_BOOL, "y",
     "Collectives (allreduce, agent placement): read a local rank's "
     "contribution and write its result straight in its memory "
     "(process_vm_readv/writev: one copy each, no CPU from the rank, which "
     "is the point of the placement) where the rank offers it "
     "(OC_COLL_CMA). Only for the pid the kernel gives for the rank's Unix "
     "control connection, only in the ranges the rank posted; needs the "
     "rank's uid (or CAP_SYS_PTRACE) and, under Yama ptrace_scope 1, the "
     "rank naming the agent its ptracer (liboffcore does). n: every rank "
     "is told to send by UCX instead (counted as a fallback).",
     offsetof(oc_agent_config_t, coll_cma), 0, 0, NULL},
    {"AGENT_COLL_SPLIT_MIN", OC_CFG_UINT, "262144",
     "Allreduces by memory (OC_AGENT_COLL_CMA) of this many bytes or more, "
     "among the ranks of one node, are split across the routing threads "
     "(--threads > 1): each reads, reduces and writes one slice of the "
     "vector for every rank, in rank order as one thread does (the same "
     "bits). 256 KiB: below it a slice's copies are too short to pay for "
     "the hand-off between threads. 0: never split.",
     offsetof(oc_agent_config_t, coll_split_min), 0, UINT64_MAX, NULL},
    {"AGENT_SOCKET_MODE", OC_CFG_STRING, "0666",
     "Permission bits (octal) of the Unix control sockets of --listen; "
     "their directory is made 0755 when missing. 0666: ranks of every "
     "local user may connect, and the job key (OC_JOB_KEY) decides which "
     "job they join: a socket only root could open made ordinary users' "
     "jobs fall back to inline. A site that wants a group of its own "
     "(0660 and the unit's Group=) can have it.",
     offsetof(oc_agent_config_t, socket_mode), 0, 0, NULL},
    OC_CFG_END};

int oc__agent_run(const oc_agent_config_t *cfg);

static void usage(FILE *out)
{
    fprintf(out,
"usage: offcored [--listen ADDR[,ADDR]] [--peers ADDR,...] [--threads N]\n"
"                [--metrics HOST:PORT|off] [--cluster-key FILE] [--node N]\n"
"                [--SETTING=VALUE ...] [--dump-config] [--help] [--version]\n"
"\n"
"The offcore routing agent: aggregates and routes the messages of every\n"
"rank on this node (OC_PLACEMENT=agent in the ranks), to local ranks and\n"
"to the agents of other nodes. Runs in the foreground and logs to stderr\n"
"(OC_LOG=info for more). SIGTERM or SIGINT: tells connected ranks, flushes\n"
"and exits 0. SIGHUP is ignored (settings are read once: restart to change\n"
"them).\n"
"\n"
"  --listen ADDR    unix:/PATH and/or tcp:HOST:PORT (default %s)\n"
"  --peers ADDRS    the other agents' TCP addresses\n"
"  --threads N      routing threads (default 1)\n"
"  --metrics ADDR   Prometheus endpoint, or off (default " OC_DEFAULT_METRICS_ADDR ")\n"
"  --cluster-key F  cluster key file (default " OC_DEFAULT_CLUSTER_KEY ")\n"
"  --node N         this node's index (default: from the sorted addresses)\n"
"  --route MODE     direct, or grid (two hops; every agent the same)\n"
"  --max-conns N    control connections at most (default 1024)\n"
"  --handshake-ms N handshake / HTTP request deadline (default 5000)\n"
"  --log-rate N     lines a second per kind of peer-caused warning (10)\n"
"  --dump-config    list every setting with its value, default and meaning\n"
"  --version [-v]   print the version (-v: and how it was built)\n"
"\n"
"Every setting is also an environment variable OC_AGENT_<NAME> and a flag\n"
"--<name> (--dump-config lists them); a flag beats the variable.\n"
"The cluster key: --cluster-key FILE, else OC_CLUSTER_KEY (hex), else the\n"
"file OC_AGENT_CLUSTER_KEY, else " OC_DEFAULT_CLUSTER_KEY ".\n",
            oc_agent_config_table[0].dflt);
}

/* A flag's setting: --NAME or --AGENT-NAME of the table (dashes or
 * underscores, any case); NULL when there is none. */
static const oc_cfg_field_t *flag_field(const char *flag, size_t n)
{
    char norm[80];
    size_t k;

    if (n == 0 || n > 60)
        return NULL;
    for (int pass = 0; pass < 2; pass++) {
        k = (size_t)snprintf(norm, sizeof(norm), "%s", pass ? "AGENT_" : "");
        for (size_t i = 0; i < n; i++)
            norm[k++] = flag[i] == '-' ? '_'
                                       : (char)toupper((unsigned char)flag[i]);
        norm[k] = '\0';
        for (const oc_cfg_field_t *f = oc_agent_config_table; f->name; f++)
            if (!strcmp(f->name, norm))
                return f;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    oc_agent_config_t cfg;

    /* The collectives' buffers (src/agent/router/rcoll.c: a copy of each local
     * rank's contribution and the result) live for one collective.  By
     * default glibc maps those of 128 KiB and more afresh and gives them
     * back when freed (or trims the heap past 2x the largest), so every
     * collective faulted its buffers in again: a 1 MiB allreduce of 2
     * ranks, ~750 page faults each time (52,738 for 70), about half the
     * agent's time for it.  Served from the heap and kept up to 128 MiB
     * free, the next collective reuses them; above 32 MiB (glibc's
     * ceiling) a buffer is still mapped per collective. */
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 128 << 20);
    if (oc__version_opt(argc, argv, "offcored"))
        return 0;
    oc__daemon_signals(); /* SIGHUP ignored: util/daemon.h */
    memset(&cfg, 0, sizeof(cfg));
    if (oc__config_load(oc_agent_config_table, &cfg) != OC_OK)
        return 2;
    oc__env_check("offcored"); /* one table of every OC_* name */
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq, *val;
        const oc_cfg_field_t *f;
        size_t n;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(arg, "--dump-config")) {
            oc__config_dump(stdout, "offcored", oc_agent_config_table, &cfg);
            return 0;
        }
        if (strncmp(arg, "--", 2) != 0) {
            char e[256]; /* as typed, escaped: util/esc.h */
            fprintf(stderr, "offcored: unexpected argument '%s'\n",
                    oc__esc_str(arg, e, sizeof(e)));
            usage(stderr);
            return 2;
        }
        arg += 2;
        eq = strchr(arg, '=');
        n = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        if ((f = flag_field(arg, n)) == NULL) {
            char e[256];
            oc__esc(arg, n, e, sizeof(e));
            fprintf(stderr, "offcored: unknown option '--%s' (--help lists "
                    "the options, --dump-config every setting)\n", e);
            return 2;
        }
        if (eq != NULL) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) {
                fprintf(stderr, "offcored: --%s needs a value\n", arg);
                return 2;
            }
            val = argv[++i];
        }
        if (oc__config_set(oc_agent_config_table, &cfg, f->name, val) !=
            OC_OK) {
            fprintf(stderr, "offcored: see --help and --dump-config\n");
            return 2;
        }
        if (!strcmp(f->name, "AGENT_CLUSTER_KEY"))
            cfg.key_from_flag = 1;
    }
    return oc__agent_run(&cfg);
}
