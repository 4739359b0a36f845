/*
 * defaults.h — where the daemons and their clients meet unless told
 * otherwise: the runtime directory and the control sockets in it, the
 * metrics port, the cluster key file, the state directory.  Every default
 * address of offcored, offcore-dp, offcore-nvmf, liboffcore and the
 * offcore CLI is spelled here once (a daemon and the tool that reaches it
 * disagreed when each wrote its own).  Constants only.
 */
#ifndef OC_UTIL_DEFAULTS_H
#define OC_UTIL_DEFAULTS_H

#define OC__DEFAULT_STR_(x) #x
#define OC__DEFAULT_STR(x)  OC__DEFAULT_STR_(x)

/* Made by systemd (RuntimeDirectory=, kept by RuntimeDirectoryPreserve=)
 * or tmpfiles.d (contrib/offcore.tmpfiles); a daemon started by
 * hand makes it when missing (mode 0755: any user's ranks reach the
 * agent's socket, the job key is the gate). */
#define OC_DEFAULT_RUN_DIR     "/run/offcore"
#define OC_DEFAULT_AGENT_SOCK  OC_DEFAULT_RUN_DIR "/offcored.sock"
#define OC_DEFAULT_DP_SOCK     OC_DEFAULT_RUN_DIR "/dp.sock"
/* the same, as addresses (unix:/PATH) */
#define OC_DEFAULT_AGENT_ADDR  "unix:" OC_DEFAULT_AGENT_SOCK
#define OC_DEFAULT_DP_ADDR     "unix:" OC_DEFAULT_DP_SOCK

/* The Prometheus endpoint of offcored (the port Prometheus' registry
 * lists for OpenTelemetry/Prometheus exporters); loopback unless told. */
#define OC_DEFAULT_METRICS_PORT 9464
#define OC_DEFAULT_METRICS_ADDR \
    "127.0.0.1:" OC__DEFAULT_STR(OC_DEFAULT_METRICS_PORT)

/* The cluster key: offcored, offcore job-key, offcore keygen --out */
#define OC_DEFAULT_CONF_DIR     "/etc/offcore"
#define OC_DEFAULT_CLUSTER_KEY  OC_DEFAULT_CONF_DIR "/cluster.key"

/* Persistent state (offcore-nvmf's backing files in the examples) */
#define OC_DEFAULT_STATE_DIR    "/var/lib/offcore"

#endif
