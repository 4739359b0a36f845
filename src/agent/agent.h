/*
 * agent.h — offcored's control thread: configuration, the connections of
 * ranks and peer agents, jobs, termination waves.  The data path lives in
 * router.c; this side only sets it up and watches it.
 */
#ifndef OC_AGENT_AGENT_H
#define OC_AGENT_AGENT_H

#include "router/router.h"
#include "util/config.h"
#include "wire/shmseg.h"

#include <offcore/offcore.h>
#include <stdint.h>

#define OC_AGENT_MAX_THREADS 64
/* every routing thread has a down ring in each rank's segment */
_Static_assert(OC_AGENT_MAX_THREADS <= OC_SHMSEG_MAX_DOWN,
               "more routing threads than a segment has down rings");

typedef struct {
    char     listen[OC_CFG_STRLEN];   /* comma list: unix:/path, tcp:H:P */
    char     peers[OC_CFG_STRLEN];    /* comma list of peer agents */
    uint64_t node;                    /* this node's index; see table */
    uint64_t threads;                 /* OC_AGENT_THREADS */
    char     metrics[OC_CFG_STRLEN];  /* HOST:PORT, or "off" */
    char     cluster_key[OC_CFG_STRLEN]; /* key file */
    uint64_t bundle_size;
    uint64_t buffers;
    uint64_t flush_timeout_us;
    uint64_t max_inflight;
    uint64_t credits;
    int      route;                   /* 0 direct, 1 grid */
    uint64_t max_conns;               /* control connections (guard.h) */
    uint64_t handshake_ms;            /* handshake / request deadline */
    uint64_t metrics_max_conns;       /* /metrics connections */
    uint64_t accept_backoff_ms;       /* after EMFILE & co */
    uint64_t log_rate;                /* lines/s per limited kind */
    int      coll_cma;                /* OC_AGENT_COLL_CMA */
    uint64_t coll_split_min;          /* OC_AGENT_COLL_SPLIT_MIN */
    int      key_from_flag;           /* --cluster-key given (main.c) */
    uint64_t shm_slots;               /* OC_AGENT_SHM_SLOTS (0: none) */
    char     socket_mode[OC_CFG_STRLEN]; /* octal, the Unix sockets' mode */
} oc_agent_config_t;

extern const oc_cfg_field_t oc_agent_config_table[];

#endif
