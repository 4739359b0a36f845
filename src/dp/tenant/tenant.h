/*
 * tenant.h — offcore-dp's tenant stages: configuration (tenant_conf.c) and
 * the pipeline (tenant.c).  A tenant owns one or more attachments (a VM or
 * container each, with its own MAC and addresses) that share its VNI,
 * VXLAN tunnel, security groups and connection table; anti-spoofing,
 * delivery and policing are per attachment.  What each direction does
 * (host -> wire, host -> host, wire -> host): docs/tenants.md, "The stages".
 *
 * Threading: the tables, policers and counters are per worker; with
 * tenants offcore-dp runs one worker (the kernel's queue choice is not
 * symmetric).  Control calls ask the worker through a request word and
 * wait.  Trust: packets hostile (src/pkt/ct.c, src/pkt/tenant.c are
 * fuzzed); config strict, errors with file:line.
 */
#ifndef OC_DP_TENANT_H
#define OC_DP_TENANT_H

#include "pkt/ct.h"
#include "pkt/pkt.h"
#include "pkt/tenant.h"

#include <stdio.h>

#define OC_DP_MAX_TENANTS 16
#define OC_DP_MAX_TRULES  256
#define OC_DP_TENANT_ATT  8   /* attachments per tenant */

typedef struct {
    char     name[32];
    uint32_t natt;            /* attachments, 1..OC_DP_TENANT_ATT */
    char     attach[OC_DP_TENANT_ATT][32];
    uint32_t vni;
    uint8_t  mac[OC_DP_TENANT_ATT][6];  /* attach[i]'s own */
    uint32_t ip[OC_DP_TENANT_ATT];      /* attach[i]'s own, host order */
    oc_ip6_set_t ip6[OC_DP_TENANT_ATT]; /* attach[i]'s IPv6 (ip6=; its
                                         * link-local one always) */
    oc_vxlan_tun_t tun;
    uint64_t rate;            /* bytes per second, 0: unlimited; per
                               * attachment and direction */
    uint64_t burst;           /* bytes */
    unsigned line;
} oc_dp_tenant_conf_t;

typedef struct {
    uint32_t tenant;          /* index */
    uint8_t  ingress;         /* 1 ingress, 0 egress */
    uint32_t id, prio;
    oc_acl_rule_t r;
    oc_acl_action_t action;
    /* IPv6 prefixes (tenant_rule6.c): six set, r's own addresses any; the
     * rule then applies to IPv6 only */
    uint8_t  six;
    uint8_t  src6_len, dst6_len; /* 0..128, 0: any */
    uint8_t  src6[16], dst6[16];
} oc_dp_trule_t;

typedef struct {
    uint32_t ntenants;
    oc_dp_tenant_conf_t t[OC_DP_MAX_TENANTS];
    uint32_t nrules;
    oc_dp_trule_t r[OC_DP_MAX_TRULES];
    bool     enabled;         /* a conntrack line: tenant state even with no tenant yet */
    uint32_t ct_flows;        /* per worker */
    uint32_t ct_flows6;       /* IPv6 flows per worker, in a table of their
                               * own (ct.h: 32 bytes more per flow than
                               * IPv4's); 0: ct_flows / 4 */
    oc_ct_timeouts_t ct_to;
} oc_dp_tenants_conf_t;

/* drop reasons, per tenant (Prometheus label `reason`) */
enum {
    OC_DP_T_SPOOFED = 0, OC_DP_T_DENIED, OC_DP_T_NO_CONN, OC_DP_T_INVALID,
    OC_DP_T_POLICED, OC_DP_T_UNKNOWN_VNI, OC_DP_T_TABLE_FULL,
    OC_DP_T_MALFORMED_VXLAN, OC_DP_T_NOT_VXLAN,
    OC_DP_T_NOT_IPV4, /* neither IPv4, ARP nor IPv6 (the label predates IPv6) */
    OC_DP_T_NOT_OURS, /* inner destination MAC neither the attachment's nor broadcast */
    OC_DP_T_HANDOFF_FULL, /* the ring to the flow's worker was full */
    OC_DP_T_NREASONS
};
const char *oc__dp_treason_name(int r);

#endif
