/*
 * tenant_int.h — the tenant stages' calls into and out of offcore-dp's
 * configuration (tenant_conf.c), runtime and control (tenant.c).  Private
 * to src/dp; threading as in tenant.h.
 */
#ifndef OC_DP_TENANT_INT_H
#define OC_DP_TENANT_INT_H

#include "dp/dp_int.h"
#include "dp/tenant.h"

void oc__dp_tenants_defaults(oc_dp_tenants_conf_t *tc);
/** A config line's directive if it is a tenant one (tenant, tenant_rule,
 *  conntrack).  @return 1 handled (errors added to @p e), 0 not ours. */
int oc__dp_tenant_directive(oc_dp_conf_t *c, char **tok, int n,
                            const char *rest, const char *file, unsigned ln,
                            oc_dp_errors_t *e);
/** Whole-config checks: named attachments exist, one tenant each, one
 *  worker thread. */
void oc__dp_tenants_check(const oc_dp_conf_t *c, const char *file,
                          oc_dp_errors_t *e);

/* runtime (tenant.c) */
oc_status_t oc__dp_tenants_start(oc_dp_t *dp, const oc_dp_conf_t *c);
void oc__dp_tenants_stop(oc_dp_t *dp);
/** A burst from attachment @p a's host (@p dir 0) or wire (@p dir 1)
 *  port: frames of flows another worker owns go to it (tenant_hand.c) and
 *  leave the array; the stages run on the rest (verdicts set, frames
 *  encapsulated or decapsulated in place).  @return frames left in
 *  @p pkts.  Worker thread. */
uint16_t oc__dp_tenant_burst(oc_dp_worker_t *w, uint32_t a, int dir,
                             oc_pkt_t **pkts, uint16_t n);
/** The stages alone (tenant.c). */
void oc__dp_tenant_stages(oc_dp_worker_t *w, uint32_t a, int dir,
                          oc_pkt_t **pkts, uint16_t n);
/** Between bursts: frames handed over by other workers, a control
 *  request, the sweep of expired flows.  @return frames processed. */
uint32_t oc__dp_tenant_idle(oc_dp_worker_t *w);
const oc_dp_tenant_conf_t *oc__dp_tenant_of(const oc_dp_t *dp, uint32_t a);

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

/* dp.c: send a processed burst on attachment @p a's other port, free the
 * dropped frames (dp.c's forward()) */
void oc__dp_forward(oc_dp_worker_t *w, uint32_t a, int dir, oc_pkt_t **pkts,
                    uint16_t n);
oc_status_t oc__dp_tenant_metrics(oc_dp_t *dp, void *prom);
/** Control commands starting with "conntrack " or "tenant ": @return 1
 *  handled (answer written), 0 not ours. */
int oc__dp_tenant_ctl(oc_dp_t *dp, const char *line, FILE *out);

#endif
