/*
 * names.h — the names of offcored's per-peer metric families, in one
 * place for both ends: the agent writes them (src/agent/agent_metrics.c)
 * and `offcore stat` reads them into its peers table (src/tools/
 * stat_print.c).  Constants only; no state.
 */
#ifndef OC_METRICS_NAMES_H
#define OC_METRICS_NAMES_H

#define OC_M_PEER_BUNDLES   "offcore_peer_bundles_total"
#define OC_M_PEER_BYTES     "offcore_peer_bytes_total"
#define OC_M_PEER_MESSAGES  "offcore_peer_messages_total"
#define OC_M_PEER_BLOCKLIST "offcore_peer_blocklist_depth"
/* gauge, 1 per connected peer: labels peer (node), transport (UCX's
 * "tl/dev" list, e.g. "tcp/eth0" or "rc_mlx5/mlx5_0:1"), class (rdma,
 * tcp, sm, other, unknown) */
#define OC_M_PEER_TRANSPORT "offcore_peer_transport"

#endif
