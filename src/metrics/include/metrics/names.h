/*
 * names.h — the names of the daemons' metric families, in one place for
 * both ends of each: offcored writes its own (src/agent/agent_metrics.c)
 * and `offcore stat` reads them (src/tools/stat.c, stat_print.c);
 * offcore-nvmf (src/nvmf/main.c) and `offcore nvmf` (src/tools/nvmf.c);
 * offcore-dp (src/dp/ctl.c) and `offcore dp stat` (src/tools/dp.c).  A
 * family renamed here is renamed on both ends; one typed as a string on
 * either end is a bug.  Constants only; no state.
 */
#ifndef OC_METRICS_NAMES_H
#define OC_METRICS_NAMES_H

/* every daemon's endpoint (src/metrics/http.c writes it before the
 * daemon's own families): gauge 1, label version (util/version.h) */
#define OC_M_BUILD_INFO    "offcore_build_info"

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
/* counter per configured peer node (label peer): handshakes between the
 * agents refused, either way, for a wrong proof (another cluster key) */
#define OC_M_PEER_AUTH_FAILURES "offcore_peer_auth_failures_total"

/* gauge, 1 per local rank of a ready job: labels job, rank, transport,
 * class (as the peers'): the agent's endpoint to the rank's worker */
#define OC_M_RANK_TRANSPORT "offcore_rank_transport"

/* per routing thread (label thread) */
#define OC_M_THREAD_MESSAGES      "offcore_thread_messages_total"
#define OC_M_THREAD_BUNDLES       "offcore_thread_bundles_total" /* dir */
#define OC_M_THREAD_UNDELIVERABLE "offcore_thread_undeliverable_total"
#define OC_M_THREAD_COLL_CMA      "offcore_thread_coll_cma_total" /* path */
#define OC_M_THREAD_COLL_STATES   "offcore_thread_coll_states_total" /* from */
#define OC_M_THREAD_COLL_BUFS     "offcore_thread_coll_buffers_total" /* from */
#define OC_M_THREAD_COLL_DONES    "offcore_thread_coll_dones_total" /* path */
#define OC_M_THREAD_COLL_DESCS    "offcore_thread_coll_descs_total" /* path */
#define OC_M_THREAD_FORWARDED     "offcore_thread_bundles_forwarded_total"
#define OC_M_THREAD_SHM_BUNDLES   "offcore_thread_shm_bundles_total"
#define OC_M_THREAD_SHM_FULL      "offcore_thread_shm_ring_full_total"
#define OC_M_THREAD_SHM_WAKES     "offcore_thread_shm_rank_wakeups_total"
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
#define OC_M_NVMF_FIXED_IO       "offcore_nvmf_fixed_io_total"
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

/* offcore-dp's families that `offcore dp stat` reads (src/tools/dp.c);
 * the daemon writes them (src/dp/ctl.c).  Its stages' own families
 * (tenants, ESP, flows) only the daemon names: the CLI lists them as they
 * come. */
#define OC_M_DP_THREADS           "offcore_dp_threads"
#define OC_M_DP_RULES             "offcore_dp_rules"
#define OC_M_DP_RULE_UPDATES      "offcore_dp_rule_updates_total"
#define OC_M_DP_FORWARDED         "offcore_dp_forwarded_packets_total"
#define OC_M_DP_DROPPED           "offcore_dp_dropped_packets_total" /* cause */
#define OC_M_DP_NOMATCH           "offcore_dp_nomatch_packets_total"
#define OC_M_DP_FRAMES            "offcore_dp_frames_total" /* reason, policy */
/* per port (labels attach, side, port; packets and bytes also dir) */
#define OC_M_DP_PORT_PACKETS      "offcore_dp_port_packets_total"
#define OC_M_DP_PORT_BYTES        "offcore_dp_port_bytes_total"
#define OC_M_DP_PORT_TX_RING_FULL "offcore_dp_port_tx_ring_full_total"
#define OC_M_DP_PORT_KERNEL_DROPS "offcore_dp_port_kernel_drops_total"
/* per rule (labels id, action) and per worker thread (label thread) */
#define OC_M_DP_RULE_PACKETS      "offcore_dp_rule_packets_total"
#define OC_M_DP_RULE_BYTES        "offcore_dp_rule_bytes_total"
#define OC_M_DP_THREAD_FORWARDED  "offcore_dp_thread_forwarded_packets_total"
#define OC_M_DP_THREAD_SLEEPS     "offcore_dp_thread_sleeps_total"

#endif
