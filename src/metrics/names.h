/*
 * names.h — the names of offcored's and offcore-nvmf's metric families,
 * in one place for both ends: the agent writes them (src/agent/
 * agent_metrics.c) and `offcore stat` reads them into its tables
 * (src/tools/stat.c, stat_print.c); the target writes its own
 * (src/nvmf/main.c) and `offcore nvmf` reads them (src/tools/nvmf.c).  A family renamed here is renamed on both ends; one
 * typed as a string on either end is a bug.  Constants only; no state.
 */
#ifndef OC_METRICS_NAMES_H
#define OC_METRICS_NAMES_H

/* the agent: gauge 1, labels node, version (every offcored has it: stat
 * tells an offcored from another exporter by it); seconds since start */
#define OC_M_AGENT_INFO    "offcore_agent_info"
#define OC_M_AGENT_UPTIME  "offcore_agent_uptime_seconds"
/* its servers (label server: control, metrics), by outcome */
#define OC_M_CONNECTIONS     "offcore_connections_total"
#define OC_M_ACCEPT_BACKOFFS "offcore_accept_backoffs_total"

/* per job (label job; the counters also dir: in, out) */
#define OC_M_JOB_RANKS    "offcore_job_ranks"
#define OC_M_JOB_MESSAGES "offcore_job_messages_total"
#define OC_M_JOB_BYTES    "offcore_job_bytes_total"
#define OC_M_JOB_BUNDLES  "offcore_job_bundles_total"
#define OC_M_JOB_REJECTS  "offcore_job_rejects_total"

/* per peer node (label peer; the counters also dir: in, out) */
#define OC_M_PEER_BUNDLES   "offcore_peer_bundles_total"
#define OC_M_PEER_BYTES     "offcore_peer_bytes_total"
#define OC_M_PEER_MESSAGES  "offcore_peer_messages_total"
#define OC_M_PEER_BLOCKLIST "offcore_peer_blocklist_depth"
/* gauge, 1 per connected peer: labels peer (node), transport (UCX's
 * "tl/dev" list, e.g. "tcp/eth0" or "rc_mlx5/mlx5_0:1"), class (rdma,
 * tcp, sm, other, unknown) */
#define OC_M_PEER_TRANSPORT "offcore_peer_transport"

/* gauge, 1 per local rank of a ready job: labels job, rank, transport,
 * class (as the peers'): the agent's endpoint to the rank's worker */
#define OC_M_RANK_TRANSPORT "offcore_rank_transport"

/* per routing thread (label thread) */
#define OC_M_THREAD_MESSAGES      "offcore_thread_messages_total"
#define OC_M_THREAD_BUNDLES       "offcore_thread_bundles_total" /* dir */
#define OC_M_THREAD_UNDELIVERABLE "offcore_thread_undeliverable_total"
#define OC_M_THREAD_FORWARDED     "offcore_thread_bundles_forwarded_total"
#define OC_M_THREAD_SLEEPS        "offcore_thread_sleeps_total"
#define OC_M_THREAD_FLUSHES       "offcore_thread_flushes_total" /* reason */
#define OC_M_THREAD_BLOCKLIST     "offcore_thread_blocklist_depth"
#define OC_M_THREAD_BACKLOG       "offcore_thread_backlog_bundles"

/* bundles and control messages rejected, over all threads (label reason) */
#define OC_M_REJECTS "offcore_rejects_total"

/* offcore-nvmf's families: the target writes them (src/nvmf/main.c),
 * `offcore nvmf` reads them (src/tools/nvmf.c).  Target-wide: */
#define OC_M_NVMF_CONNS_ACCEPTED "offcore_nvmf_connections_accepted_total"
#define OC_M_NVMF_CONNS          "offcore_nvmf_connections" /* open now */
#define OC_M_NVMF_CONNECTS       "offcore_nvmf_connects_total"
#define OC_M_NVMF_REJECTS        "offcore_nvmf_rejects_total" /* reason */
#define OC_M_NVMF_COMMANDS       "offcore_nvmf_commands_total" /* queue */
#define OC_M_NVMF_H2C_DIRECT     "offcore_nvmf_h2c_direct_total"
#define OC_M_NVMF_COMMAND_ERRORS "offcore_nvmf_command_errors_total"
/* per namespace (labels subsystem, nsid) */
#define OC_M_NVMF_NS_READS            "offcore_nvmf_ns_reads_total"
#define OC_M_NVMF_NS_WRITES           "offcore_nvmf_ns_writes_total"
#define OC_M_NVMF_NS_READ_BYTES       "offcore_nvmf_ns_read_bytes_total"
#define OC_M_NVMF_NS_WRITE_BYTES      "offcore_nvmf_ns_write_bytes_total"
#define OC_M_NVMF_NS_FLUSHES          "offcore_nvmf_ns_flushes_total"
#define OC_M_NVMF_NS_WRITE_ZEROES     "offcore_nvmf_ns_write_zeroes_total"
#define OC_M_NVMF_NS_DSM              "offcore_nvmf_ns_dsm_total"
#define OC_M_NVMF_NS_ERRORS           "offcore_nvmf_ns_errors_total"
#define OC_M_NVMF_NS_INTEGRITY_ERRORS "offcore_nvmf_ns_integrity_errors_total"
/* histograms: NAME "_bucket", NAME "_sum", NAME "_count" */
#define OC_M_NVMF_NS_LATENCY          "offcore_nvmf_ns_latency_seconds"
/* per queue (labels conn, peer, host, subsystem, cntlid, qid, digest) */
#define OC_M_NVMF_QUEUE_COMMANDS "offcore_nvmf_queue_commands_total"
#define OC_M_NVMF_QUEUE_LATENCY  "offcore_nvmf_queue_latency_seconds"

#endif
