/*
 * tenant_int.h — the tenant subsystem's calls into and out of offcore-dp's
 * configuration (tenant_conf.c, tenant_rule6.c), runtime (tenant.c,
 * tenant_stage.c, tenant_hand.c, tenant_post.c) and control
 * (tenant_ctl.c, tenant_live.c).  Private to src/dp; threading as in
 * tenant.h.
 */
#ifndef OC_DP_TENANT_INT_H
#define OC_DP_TENANT_INT_H

#include "dp_int.h"
#include "tenant.h"

#define OC_DP_CT_LIST_MAX 4096 /* flows `conntrack list` shows */

/* per worker and tenant counters, written by the worker only */
typedef struct {
    uint64_t drop[OC_DP_T_NREASONS];
    uint64_t vxlan[OC_VXLAN_NREASONS];
    uint64_t pkts[2];   /* forwarded: 0 egress (encapsulated), 1 ingress */
    uint64_t pkts6[2];  /* of which IPv6 */
    uint64_t handoff;   /* frames handed to the worker owning their flow */
    uint64_t arp_replies; /* ARP requests for the tunnel end answered */
} tctr_t;

/* A tenant-direction's rules that apply to IPv6, by priority then id
 * (tenant_rule6.c): immutable once published. */
typedef struct {
    uint32_t      n;
    oc_dp_trule_t r[];
} oc_dp_rules6_t;

/* the expiry sweep of one table (tenant.c) */
typedef struct {
    uint64_t     us;         /* its last call */
    uint64_t     owed;       /* entries x microseconds it still owes */
} tsweep_t;

struct oc_dp_tw {
    oc_ct_t     *ct;         /* IPv4 flows */
    oc_ct_t     *ct6;        /* IPv6 flows */
    uint32_t     cap, cap6;  /* flows the tables hold */
    tsweep_t     sw[2];      /* ct's, ct6's */
    oc_policer_t pol[OC_DP_MAX_ATTACH][2]; /* per attachment, direction */
    tctr_t       c[OC_DP_MAX_TENANTS];
    /* control requests: req set by the control thread; the worker claims
     * it (req -> -req) before it runs it and clears it when done; the
     * control thread may withdraw it only while unclaimed (seq_cst CAS) */
    int          req;   /* 0 none, 1 flush, 2 list, 3 count; < 0 running */
    int          req_zone;
    uint32_t     req_n;
    oc_ct_flow_t *list; /* LIST_MAX, the control thread's */
};

struct oc_dp_tenants {
    uint32_t n;  /* slots used so far (live or freed) */
    oc_dp_tenant_conf_t t[OC_DP_MAX_TENANTS];
    oc_acl_t *acl[OC_DP_MAX_TENANTS][2]; /* [t][ingress] */
    /* the groups IPv6 packets meet (tenant_rule6.c): [t][ingress], NULL
     * when empty; replaced whole by the control thread, read by the
     * workers with acquire loads */
    oc_dp_rules6_t *g6[OC_DP_MAX_TENANTS][2];
    uint8_t   live[OC_DP_MAX_TENANTS];    /* slot in use (tenant_live.c) */
    /* dp attachment a is attachment att_idx[a] of tenant att_tenant[a]
     * (its MAC and address: t[].mac/ip[att_idx[a]]); written before
     * att_tenant[a] is published (release) */
    uint8_t   att_idx[OC_DP_MAX_ATTACH];
};

/** The tenant of attachment @p a, or NULL: none (or deleted).  Any
 *  thread: the pointer stays valid until the tenant is deleted (tenant
 *  del waits for a grace period of the workers before it frees the slot). */
static inline const oc_dp_tenant_conf_t *oc__dp_tenant_of(const oc_dp_t *dp,
                                                         uint32_t a)
{
    int t = __atomic_load_n(&dp->att_tenant[a], __ATOMIC_ACQUIRE);
    return t < 0 ? NULL : &dp->ten->t[t];
}

/** A tenant_rule: the `rule` syntax, with src=/dst= also taking IPv6
 *  prefixes (ADDR[/LEN]).  @return 0, or -1 with the reason. */
int oc__dp_trule_parse(const char *text, oc_dp_trule_t *out, char *why,
                       size_t whylen);
/** Whether @p t applies to IPv6: IPv6 prefixes, or no address at all. */
bool oc__dp_trule_v6(const oc_dp_trule_t *t);
/** A new list: @p old (NULL: empty) without rule id @p del_id (-1: none)
 *  and with @p add (NULL: none).  @return it (malloc'd), NULL no memory. */
oc_dp_rules6_t *oc__dp_rules6_make(const oc_dp_rules6_t *old,
                                   const oc_dp_trule_t *add, int64_t del_id);
bool oc__dp_rules6_has(const oc_dp_rules6_t *l, uint32_t id);
/** The IPv6 group's answer for key @p k (protocol, ports) between
 *  @p src and @p dst: 1 allow, 0 deny by rule, -1 no rule matches. */
int oc__dp_group6(const oc_dp_rules6_t *l, const oc_acl_key_t *k,
                  const uint8_t *src, const uint8_t *dst);
/** Wait until every worker has passed a loop (or sleeps): what it read
 *  before is no longer in use.  @return 0, -1 a worker is stuck. */
int oc__dp_tenant_grace(oc_dp_t *dp);

/** Whether a tenant rule applies to IPv6 too: it names no address (its
 *  prefixes are IPv4; IPv6 packets meet only the rules without). */
static inline bool oc__dp_trule_is_both(const oc_acl_rule_t *r)
{
    return r->src_len == 0 && r->dst_len == 0;
}

/** IPv6 flows per worker (conntrack flows6=, default flows / 4). */
static inline uint32_t oc__dp_ct_flows6(const oc_dp_tenants_conf_t *tc)
{
    return tc->ct_flows6 ? tc->ct_flows6
                         : tc->ct_flows / 4 ? tc->ct_flows / 4 : 1;
}

void oc__dp_tenants_defaults(oc_dp_tenants_conf_t *tc);
/** One `tenant NAME key=value...` line (@p tok) into @p tc: 0, or -1 with
 *  the errors in @p e (tenant_conf.c; the config file and `tenant add`). */
int oc__dp_tenant_parse(oc_dp_tenants_conf_t *tc, char **tok, int n,
                        const char *file, unsigned ln, oc_conf_errors_t *e);
/** `tenant add ...` / `tenant del NAME` (tenant_live.c): @return 1 handled. */
int oc__dp_tenant_live_ctl(oc_dp_t *dp, const char *line, FILE *out);
/** Ask every worker to run control request @p req (1 flush, 2 list, 3
 *  count) on zone @p zone (-1: all) and wait for it (tenant.c; the worker
 *  side is oc__dp_tenant_idle).  @return 0, -1 a worker is stuck. */
int oc__dp_tenant_ask_all(oc_dp_t *dp, int req, int zone);
/** The same of one worker's state @p tw (its list buffer, for a list,
 *  set by the caller).  @return 0, -1 the worker is stuck (withdrawn). */
int oc__dp_tenant_ask(oc_dp_t *dp, struct oc_dp_tw *tw, int req, int zone);
/** A config line's directive if it is a tenant one (tenant, tenant_rule,
 *  conntrack); @p rule is the line's text from its fourth word on (the
 *  rule of a tenant_rule).  @return 1 handled (errors added to @p e), 0
 *  not ours. */
int oc__dp_tenant_directive(oc_dp_conf_t *c, char **tok, int n,
                            const char *rule, const char *file, unsigned ln,
                            oc_conf_errors_t *e);
/** Whole-config checks: named attachments exist, one tenant each, one
 *  worker thread. */
void oc__dp_tenants_check(const oc_dp_conf_t *c, const char *file,
                          oc_conf_errors_t *e);

/* runtime (tenant.c) */
oc_status_t oc__dp_tenants_start(oc_dp_t *dp, const oc_dp_conf_t *c);
void oc__dp_tenants_stop(oc_dp_t *dp);
/** A burst from attachment @p a's host (@p dir 0) or wire (@p dir 1)
 *  port: frames of flows another worker owns go to it and leave the
 *  array; the stages run on the rest (oc__dp_tenant_stages).
 *  @return frames left in @p pkts.  Worker thread (tenant_hand.c). */
uint16_t oc__dp_tenant_burst(oc_dp_worker_t *w, uint32_t a, int dir,
                             oc_pkt_t **pkts, uint16_t n);
/** The stages alone (tenant_stage.c): verdicts set, frames encapsulated or
 *  decapsulated in place; ARP requests for the tunnel end are answered
 *  and sent back on the wire port (they leave the array).  @return frames
 *  left in @p pkts. */
uint16_t oc__dp_tenant_stages(oc_dp_worker_t *w, uint32_t a, int dir,
                              oc_pkt_t **pkts, uint16_t n);
/** Between bursts: frames handed over by other workers, a control
 *  request, the sweep of expired flows.  @return frames processed. */
uint32_t oc__dp_tenant_idle(oc_dp_worker_t *w);

/* handoff between workers (tenant_hand.c) */
oc_status_t oc__dp_hand_create(oc_dp_t *dp);
void oc__dp_hand_free(oc_dp_t *dp);
uint32_t oc__dp_hand_owner(oc_dp_worker_t *w, uint32_t a, int dir,
                           const oc_pkt_t *p);
/** Copy @p p into the ring to worker @p to.  @return 0, -1 full. */
int oc__dp_hand_push(oc_dp_worker_t *w, uint32_t to, uint32_t a, int dir,
                     const oc_pkt_t *p);
void oc__dp_hand_kick(oc_dp_worker_t *w, uint32_t to);
uint32_t oc__dp_hand_drain(oc_dp_worker_t *w);

/* tenant_post.c: what follows the tenant stages (oc__dp_tenant_post,
 * dp_int.h), then send the burst on attachment @p a's other port and free
 * the dropped frames (oc__dp_send) */
void oc__dp_tenant_forward(oc_dp_worker_t *w, uint32_t a, int dir,
                           oc_pkt_t **pkts, uint16_t n);
oc_status_t oc__dp_tenant_metrics(oc_dp_t *dp, void *prom);
/** Control commands starting with "conntrack " or "tenant "
 *  (tenant_ctl.c): @return 1 handled (answer written), 0 not ours. */
int oc__dp_tenant_ctl(oc_dp_t *dp, const char *line, FILE *out);

#endif
