/*
 * agent_int.h — what offcored's control-thread files share (private to
 * src/agent): the agent's state, a control connection's state, and the
 * functions one file calls in another.
 *
 *   agent.c          set-up, the poll loop, admission (util/guard.h),
 *                    shut-down
 *   session.c        a connection's state machine: rank and peer
 *                    handshakes and authentication, then their messages
 *   jobctl.c         jobs across nodes: wire-up, failure, termination waves
 *   agent_metrics.c  the /metrics callback (runs on the HTTP thread)
 *
 * Threading: everything here runs on the control thread, except
 * agent_metrics.c's fill callback, which reads only the routers' counters,
 * the published job copy (pub, under pub_mu) and atomics.
 */
#ifndef OC_AGENT_AGENT_INT_H
#define OC_AGENT_AGENT_INT_H

#include "agent.h"

#include "ctl/ctl.h"
#include "jobs.h"
#include "metrics/metrics.h"
#include "util/guard.h"
#include "util/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

enum { C_NEW, C_RANK_AUTH, C_RANK, C_PEER_HELLO, C_PEER_AUTH, C_PEER };

/* States of a connection: C_NEW .. C_PEER_AUTH are pending (the guard's
 * deadline runs, frames are limited to OC_CTL_PREAUTH_FRAME_MAX). */
typedef struct oc_aconn {
    oc_guard_slot_t  slot;        /* first: the guard names slots */
    oc_ctl_conn_t   *cc;
    int              kind;
    int              dead;
    /* rank */
    uint32_t         job, rank, size;
    uint8_t          cnonce[16], snonce[32];
    uint8_t         *addr;        /* its UCX worker address */
    size_t           addr_len;
    uint64_t         token;
    uint32_t         pid;         /* the kernel's word (SO_PEERCRED); 0:
                                     not known (TCP) */
    int              said_bye;
    int              tr_known;    /* its transport published (rank_tr) */
    int              want_shm;    /* HELLO asked for shared memory */
    oc_rshm_t       *shm;         /* its channel, once granted */
    /* peer */
    uint32_t         node;
    uint8_t          my_nonce[32], peer_nonce[32];
    int              authed, info_sent;
    uint64_t         recv_token;  /* what its bundles to us carry */
    struct oc_aconn *next;
} oc_aconn_t;

typedef struct {
    oc_agent_config_t cfg;
    uint32_t          node, nnodes;
    char            **node_addr;    /* [nnodes] peers' addresses by node */
    oc_ctl_key_t      cluster_key;
    oc_router_t      *routers[OC_AGENT_MAX_THREADS];
    uint32_t          nrouters;
    oc_ctl_listener_t lis[8];
    int               nlfd;
    oc_aconn_t       *conns;
    oc_guard_t        guard;        /* admission: cap, deadline, back-off */
    oc_aconn_t      **peer;         /* [nnodes] authenticated peer conn */
    uint64_t         *next_dial_us; /* [nnodes] */
    oc_ajobs_t        jobs;
    uint64_t          start_us;
    oc_metrics_server_t *metrics;
    _Atomic uint64_t  rejects_ctl;
    oc_log_limit_t    lim_bad;      /* malformed or unexpected messages */
    /* what the HTTP thread may read of the jobs: a copy under a lock */
    pthread_mutex_t   pub_mu;
    struct { uint32_t job, size, nlocal; } pub[64];
    uint32_t          npub;
    /* the transport of each peer's endpoint (transport/tlbook.c): its
     * router-0 address, control thread only, until the router has made
     * the endpoint; then what it uses, published under pub_mu */
    uint8_t         **peer_tr_addr;  /* [nnodes] */
    struct oc_ag_peer_tr {
        int      known;
        unsigned cls;
        char     tls[128];
        uint64_t auth_fail; /* handshakes refused either way: another
                               cluster key (offcore stat, doctor) */
    }                *peer_tr;       /* [nnodes] */
    /* the same for each local rank of a ready job: the agent's endpoint
     * to the rank's worker (the routers make it at READY), looked up by
     * the control thread while rank_tr_wanted, published under pub_mu */
    struct oc_ag_rank_tr {
        uint32_t job, rank;
        unsigned cls;
        char     tls[128];
    }                *rank_tr;
    uint32_t          nrank_tr, cap_rank_tr;
    int               rank_tr_wanted; /* control thread */
} agent_t;

static inline oc_aconn_t *oc__ag_conn_of(oc_guard_slot_t *s)
{
    return (oc_aconn_t *)s; /* slot is the first member */
}

/* jobctl.c */
void oc__ag_send(oc_aconn_t *c, const oc_ctl_msg_t *m);
/** ERROR to the peer, and a rate-limited warning (a peer can repeat it). */
void oc__ag_error(agent_t *a, oc_aconn_t *c, oc_status_t st, const char *text);
void oc__ag_to_ranks(agent_t *a, oc_ajob_t *j, const oc_ctl_msg_t *m);
void oc__ag_to_peers(agent_t *a, const oc_ctl_msg_t *m);
void oc__ag_job_fail(agent_t *a, oc_ajob_t *j, const char *why, int tell_peers);
void oc__ag_job_check_ready(agent_t *a, oc_ajob_t *j);
void oc__ag_job_tell_peer(agent_t *a, oc_ajob_t *j, oc_aconn_t *peer);
void oc__ag_job_release(agent_t *a, oc_ajob_t *j);
void oc__ag_wave_step(agent_t *a, oc_ajob_t *j);

/* session.c */
/** A new connection (accepted: C_NEW; dialled: C_PEER_HELLO), admitted
 *  under the guard: at the cap the oldest pending connection is closed
 *  *now* (oc__ag_conn_close), so call it only where no pointer to another
 *  connection is held (the loop's accept and dial steps, after the I/O of
 *  the round).  NULL (fd closed) when refused or out of memory. */
oc_aconn_t *oc__ag_conn_add(agent_t *a, int fd, int kind, const char *name);
/** Unlink @p c from the agent's list and drop it (fd closed) at once. */
void oc__ag_conn_close(agent_t *a, oc_aconn_t *c);
/** Unlink-free clean-up of a dead connection (the caller unlinked it). */
void oc__ag_conn_drop(agent_t *a, oc_aconn_t *c);
void oc__ag_conn_io(agent_t *a, oc_aconn_t *c, short revents);
void oc__ag_dial_peers(agent_t *a);
/** Its deadline passed in a handshake: tell it and mark it dead. */
void oc__ag_conn_expire(agent_t *a, oc_aconn_t *c);

/* agent_metrics.c */
void oc__ag_publish_jobs(agent_t *a);
/** Peer @p node's endpoint is being made to router address @p addr (NULL:
 *  the peer is gone, forget it). */
void oc__ag_peer_tr_expect(agent_t *a, uint32_t node, const void *addr,
                           size_t len);
/** Learn, log and publish the transports of the endpoints the routers
 *  have made since the last call (control thread, each loop round). */
void oc__ag_peer_tr_poll(agent_t *a);
/** Rank @p c (C_RANK) left: its transport is no longer published. */
void oc__ag_rank_tr_forget(agent_t *a, const oc_aconn_t *c);
oc_status_t oc__ag_metrics_start(agent_t *a);
void oc__ag_metrics_stop(agent_t *a);

#endif
