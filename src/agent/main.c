/*
 * main.c — offcored: command line and configuration of the routing agent.
 */
#include "agent.h"
#include "util/log.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const route_values[] = {"direct", "grid", NULL};

const oc_cfg_field_t oc_agent_config_table[] = {
    {"AGENT_LISTEN", OC_CFG_STRING, "unix:/run/offcore/offcored.sock",
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
    {"AGENT_METRICS", OC_CFG_STRING, "127.0.0.1:9464",
     "HOST:PORT of the Prometheus endpoint (GET /metrics), or off. 9464 is "
     "the port Prometheus' registry lists for such exporters.",
     offsetof(oc_agent_config_t, metrics), 0, 0, NULL},
    {"AGENT_CLUSTER_KEY", OC_CFG_STRING, "/etc/offcore/cluster.key",
     "File holding the cluster key (32+ bytes, hex or raw, mode 0600) that "
     "agents prove to each other and from which each job's key derives "
     "(offcore job-key). OC_CLUSTER_KEY (hex) overrides the file.",
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
    OC_CFG_END};

int oc_agent_run(const oc_agent_config_t *cfg);

static void usage(FILE *out)
{
    fprintf(out,
"usage: offcored [--listen ADDR[,ADDR]] [--peers ADDR,...] [--threads N]\n"
"                [--metrics HOST:PORT|off] [--cluster-key FILE] [--node N]\n"
"                [--SETTING=VALUE ...] [--dump-config] [--help]\n"
"\n"
"The offcore routing agent: aggregates and routes the messages of every\n"
"rank on this node (OC_PLACEMENT=agent in the ranks), to local ranks and\n"
"to the agents of other nodes. Runs in the foreground and logs to stderr\n"
"(OC_LOG=info for more). SIGTERM or SIGINT: tells connected ranks, flushes\n"
"and exits 0.\n"
"\n"
"  --listen ADDR    unix:/PATH and/or tcp:HOST:PORT (default %s)\n"
"  --peers ADDRS    the other agents' TCP addresses\n"
"  --threads N      routing threads (default 1)\n"
"  --metrics ADDR   Prometheus endpoint, or off (default 127.0.0.1:9464)\n"
"  --cluster-key F  cluster key file (default /etc/offcore/cluster.key)\n"
"  --node N         this node's index (default: from the sorted addresses)\n"
"  --route MODE     direct, or grid (two hops; every agent the same)\n"
"  --dump-config    list every setting with its value, default and meaning\n"
"\n"
"Every setting is also an environment variable OC_AGENT_<NAME>.\n",
            oc_agent_config_table[0].dflt);
}

int main(int argc, char **argv)
{
    oc_agent_config_t cfg;
    static const struct { const char *flag, *name; } alias[] = {
        {"listen", "AGENT_LISTEN"},   {"peers", "AGENT_PEERS"},
        {"threads", "AGENT_THREADS"}, {"metrics", "AGENT_METRICS"},
        {"cluster-key", "AGENT_CLUSTER_KEY"}, {"node", "AGENT_NODE"},
        {"route", "AGENT_ROUTE"},
    };

    memset(&cfg, 0, sizeof(cfg));
    if (oc_config_load(oc_agent_config_table, &cfg) != OC_OK)
        return 2;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq, *val;
        char name[64];
        size_t n;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(arg, "--dump-config")) {
            oc_config_dump(stdout, "offcored", oc_agent_config_table, &cfg);
            return 0;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "offcored: unexpected argument '%s'\n", arg);
            usage(stderr);
            return 2;
        }
        arg += 2;
        eq = strchr(arg, '=');
        if (eq != NULL) {
            n = (size_t)(eq - arg);
            val = eq + 1;
        } else {
            n = strlen(arg);
            if (i + 1 >= argc) {
                fprintf(stderr, "offcored: --%s needs a value\n", arg);
                return 2;
            }
            val = argv[++i];
        }
        snprintf(name, sizeof(name), "%.*s", (int)n, arg);
        for (size_t k = 0; k < sizeof(alias) / sizeof(alias[0]); k++)
            if (!strcmp(name, alias[k].flag))
                snprintf(name, sizeof(name), "%s", alias[k].name);
        if (oc_config_set(oc_agent_config_table, &cfg, name, val) != OC_OK) {
            fprintf(stderr, "offcored: see --help and --dump-config\n");
            return 2;
        }
    }
    return oc_agent_run(&cfg);
}
