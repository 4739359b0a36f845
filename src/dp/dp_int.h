/*
 * dp_int.h — offcore-dp's runtime state, shared by pipeline.c (workers),
 * stage.c (the stage toolbox), rules.c (rule slots and counters), the
 * stages, tenant/ and ctl.c (control, metrics).
 * Private to src/dp.  Threading: see dp.h and each field.
 */
#ifndef OC_DP_INT_H
#define OC_DP_INT_H

#include "dp.h"
#include "pkt/acl/acl6.h"
#include "util/counter.h"

#include <pthread.h>

#define OC_DP_BURST_MAX 256

/* pkt->verdict values */
enum {
    OC_DP_V_FORWARD = 0,
    OC_DP_V_POLICY,  /* the parser's reason has policy drop */
    OC_DP_V_RULE,    /* a deny rule matched */
    OC_DP_V_DEFAULT, /* no rule matched and the default is deny */
    OC_DP_V_TX_FULL, /* the output port's ring stayed full */
    OC_DP_V_TENANT,  /* a tenant stage dropped it (counted there by reason) */
    OC_DP_V_ESP,     /* the ESP stage refused it (esp_stage.c counts why) */
    OC_DP_V_MAX
};

typedef struct {
    uint64_t packets, bytes;
} oc_dp_ctr_t;

typedef struct oc_dp_worker {
    struct oc_dp  *dp;
    uint32_t       q;
    pthread_t      thread;
    oc_pkt_pool_t *pool;
    oc_dp_ctr_t   *rule;   /* [nslots], written by this worker only */
    struct {
        uint64_t reason[OC_PKT_R_MAX];
        uint64_t dropped[OC_DP_V_MAX];
        uint64_t forwarded, nomatch, sleeps;
        /* frames from a shared wire port no tenant took, by reason:
         * [0] unknown VNI, else the VXLAN decapsulation's reason */
        uint64_t uplink[OC_DP_MAX_ATTACH][OC_VXLAN_NREASONS];
    } c;                   /* written by this worker only */
    struct oc_dp_tw *tw;   /* tenant stages' state (tenant/tenant.c), or NULL */
    int      hand_fd;      /* eventfd: handoffs (tenant/tenant_hand.c) */
    struct oc_dp_esp_w *esp; /* the ESP stage's per-worker state, or NULL */
    struct oc_dp_flow_w *flow; /* flow telemetry's per-worker state, or NULL */
    uint64_t seq;          /* loop iterations (grace periods of slots) */
    int      asleep;       /* in poll(): holds no lookup result */
    /* burst scratch */
    oc_pkt_meta_t meta[OC_DP_BURST_MAX];
    oc_acl_key_t  keys[OC_DP_BURST_MAX];
    oc_acl6_key_t keys6[OC_DP_BURST_MAX];
    uint16_t      kidx[OC_DP_BURST_MAX], kidx6[OC_DP_BURST_MAX];
    uint32_t      ud[OC_DP_BURST_MAX];
} __attribute__((aligned(64))) oc_dp_worker_t;

typedef struct {
    char       name[OC_DP_NAME_MAX];
    oc_port_t *port[2]; /* 0 host side, 1 wire side */
    /* a wire port shared by several attachments (one uplink, tenants told
     * apart by VNI: tenant/uplink.c) is opened by the first of them, which
     * receives for all: wire_of is 1 + that attachment's index in the
     * others (0: the port is its own), uplink is set in the first */
    uint32_t   wire_of;
    bool       uplink;
} oc_dp_attach_t;

/* A counter slot (control thread; under lock for the metrics thread). */
typedef struct {
    bool         used;
    oc_dp_rule_t rule;
    oc_dp_ctr_t  base; /* sum of the workers' counters when assigned */
} oc_dp_slot_t;

struct oc_dp {
    uint32_t nthreads, nstarted, burst, max_frame, nattach, max_rules;
    bool     bare;
    oc_acl_action_t default_action;
    uint8_t  policy[OC_PKT_R_MAX];
    int      stop;
    int      stop_fd;
    oc_acl_t *acl;
    oc_acl6_t *acl6;         /* IPv6 rules (and those naming no address) */
    oc_dp_worker_t *w;
    oc_pkt_pool_t  *pools[OC_DP_MAX_THREADS];
    oc_dp_attach_t  att[OC_DP_MAX_ATTACH];
    struct oc_dp_tenants *ten;            /* tenant/tenant.c; NULL: none */
    struct oc_dp_hand **hand;             /* [from * nthreads + to] rings */
    int             att_tenant[OC_DP_MAX_ATTACH]; /* tenant index or -1 */
    /* rule slots: written by the control thread under lock; the metrics
     * thread reads them under lock */
    pthread_mutex_t lock;
    uint32_t      nslots, nfree, nquar, nrules;
    oc_dp_slot_t *slots;
    uint32_t     *free_slots;
    uint32_t     *quar;      /* deleted, waiting for a grace period */
    uint64_t     *quar_seq;  /* workers' seq when the quarantine began */
    uint64_t      rule_ops;  /* adds + dels + loads, for the metrics */
    struct oc_dp_esp *esp;   /* the ESP stage (esp_stage.c), or NULL: off */
    struct oc_dp_flow *flow; /* flows and IPFIX (flow_stage.c), or NULL */
};

oc_status_t oc__dp_slots_init(oc_dp_t *dp);
void oc__dp_slots_free(oc_dp_t *dp);
/* The sum of every worker's counters of @p slot, minus its baseline. */
oc_dp_ctr_t oc__dp_slot_count(const oc_dp_t *dp, uint32_t slot);

/* The ESP stage (esp_stage.c).  init after the workers' allocation, before
 * they start; out runs on host->wire bursts after the classifier, in on
 * wire->host bursts before it (the classifier sees the inner packet). */
oc_status_t oc__dp_esp_init(oc_dp_t *dp, const oc_dp_conf_t *c);
void oc__dp_esp_free(oc_dp_t *dp);
void oc__dp_esp_out(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n);
void oc__dp_esp_in(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n);
/** Clamp the MSS of a TCP SYN at @p ip (IPv4, @p len bytes) that travels
 *  inside @p extra bytes of other headers (VXLAN) before ESP, so that it
 *  fits esp_mtu; counted with the stage's clamps.  @return changed. */
bool oc__dp_esp_clamp(oc_dp_worker_t *w, uint8_t *ip, uint32_t len,
                      uint32_t extra);
oc_status_t oc__dp_esp_sa_add(oc_dp_t *dp, const oc_esp_sa_spec_t *spec,
                              char *why, size_t whylen);
oc_status_t oc__dp_esp_sa_del(oc_dp_t *dp, bool outbound, uint32_t spi,
                              char *why, size_t whylen);
void oc__dp_esp_sa_list(oc_dp_t *dp, FILE *out);
void oc__dp_esp_metrics(oc_dp_t *dp, void *prom /* oc_prom_t * */);

/* Flow telemetry and the IPFIX exporter (flow_stage.c): init before the
 * workers start, free after they stopped; burst after the classifier (the
 * inner packets), tick once per worker loop. */
oc_status_t oc__dp_flow_init(oc_dp_t *dp, const oc_dp_conf_t *c);
void oc__dp_flow_free(oc_dp_t *dp);
void oc__dp_flow_burst(oc_dp_worker_t *w, uint32_t a, oc_pkt_t **pkts,
                       uint16_t n);
/** Account one frame whose parse is @p m (from @p frame), of tenant
 *  network @p vni (OC_FLOW_NO_VNI: none), that came in on attachment
 *  @p a; @p now_us 0 on the first call of a burst (then set). */
void oc__dp_flow_one(oc_dp_worker_t *w, const uint8_t *frame,
                     const oc_pkt_meta_t *m, uint32_t vni, uint32_t a,
                     uint64_t *now_us);
void oc__dp_flow_tick(oc_dp_worker_t *w);
void oc__dp_flow_print(oc_dp_t *dp, uint32_t max, FILE *out);
void oc__dp_flow_metrics(oc_dp_t *dp, void *prom /* oc_prom_t * */);

/* The stage toolbox (stage.c), for the worker loop (pipeline.c) and the tenant
 * pipeline alike; worker thread, on its own burst.  parse: the parser and
 * its policy (meta and a verdict per packet); classify: the classifier on
 * the IPv4 packets still forwarded (rule counters, deny verdicts). */
void oc__dp_stage_parse(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n);
void oc__dp_stage_classify(oc_dp_worker_t *w, oc_pkt_t **pkts, uint16_t n);
/** Send the packets of @p pkts whose verdict is forward on @p out (a full
 *  ring: retried, then counted tx_full), count and free the others to
 *  @p in's pool. */
void oc__dp_send(oc_dp_worker_t *w, oc_port_t *in, oc_port_t *out,
                 oc_pkt_t **pkts, uint16_t n);
/** oc__dp_send() of every packet, verdicts unread (the bare forwarder). */
void oc__dp_send_bare(oc_dp_worker_t *w, oc_port_t *in, oc_port_t *out,
                      oc_pkt_t **pkts, uint16_t n);

/* The tenant pipeline around the tenant stages: a burst from a tenant
 * attachment's wire port (tenant/uplink.c: ESP decryption, the VNI
 * demultiplexing of a shared port, the tenant stages, delivery), and what
 * follows the tenant stages in either direction (tenant/tenant_post.c: flow
 * accounting of the inner packet with its VNI; ESP encryption of the
 * VXLAN packet toward the wire). */
void oc__dp_uplink_rx(oc_dp_worker_t *w, uint32_t a, oc_pkt_t **pkts,
                      uint16_t n);
void oc__dp_tenant_post(oc_dp_worker_t *w, uint32_t a, int dir,
                        oc_pkt_t **pkts, uint16_t n);
void oc__dp_uplink_metrics(oc_dp_t *dp, void *prom /* oc_prom_t * */);

#endif
