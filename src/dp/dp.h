/*
 * dp.h — offcore-dp, the packet data-plane daemon: its configuration
 * (conf/), its pipeline and worker threads (pipeline.c, stage.c), its
 * control socket and metrics (ctl.c).
 *
 * Threads: N workers, worker q serving queue q of every port (the NIC's —
 * here veth's — RSS hash spreads flows over queues); one control thread
 * (main) that owns the configuration, the classifier's writer side and the
 * control socket; libmicrohttpd's thread for GET /metrics.  Workers share
 * nothing writable: each has its own pool, counters and classifier reader
 * registration; the control thread reads their counters with relaxed loads.
 *
 * Trust model: the config file and the control socket (mode 0600 by
 * default, root's) are the operator's; they are still parsed strictly
 * (fuzzed: tests/fuzz/fuzz_pkt.c, the control reader by
 * tests/fuzz/fuzz_dp_ctl.c) and every error names file, line and reason.  Packets are hostile (src/pkt/parse.c).
 */
#ifndef OC_DP_H
#define OC_DP_H

#include "ctl/ctl.h"
#include "tenant/tenant.h"
#include "pkt/acl/acl6.h"
#include "pkt/esp.h"
#include "pkt/pkt.h"
#include "util/bytes.h"
#include "util/kv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OC_DP_MAX_ATTACH  16
#define OC_DP_MAX_THREADS 64
#define OC_DP_NAME_MAX    32
#define OC_DP_PATH_MAX    256
#define OC_DP_LINE_MAX    4096
#define OC_DP_MAX_SA      64    /* ESP SAs, both directions */
#define OC_DP_MAX_IPFIX   8     /* IPFIX collectors */
/* the largest config file read (util/file.h): 16 MiB holds some 200,000
 * inline rule lines; rule files have their own cap, OC_ACL_FILE_MAX */
#define OC_DP_CONF_FILE_MAX ((size_t)16 << 20)

/* userdata of a classifier rule: the action in the top 2 bits, the rule's
 * counter slot below */
#define OC_DP_UD_ACTION_SHIFT 30
#define OC_DP_UD_SLOT_MASK    ((1u << OC_DP_UD_ACTION_SHIFT) - 1)

typedef struct {
    char name[OC_DP_NAME_MAX];
    char host[16], wire[16];       /* interface names */
    oc_port_xdp_mode_t xdp_mode;
    bool zero_copy;
    int  backend;    /* OC_DP_BACKEND_* */
    unsigned line;
} oc_dp_attach_conf_t;

enum { OC_DP_BACKEND_XDP = 0, OC_DP_BACKEND_DPDK_AF_XDP,
       OC_DP_BACKEND_DPDK_AF_PACKET };

/** A rule as the operator wrote it: the classifier rule plus its action.
 *  A rule with IPv4 prefixes classifies IPv4 frames, one with IPv6
 *  prefixes IPv6 frames, one that names no address both. */
typedef struct {
    oc_acl_rule_t   r;       /* userdata unset until installed; for an
                                IPv6 rule its addresses are unused (0) */
    oc_acl_action_t action;
    uint8_t  fam;            /* OC_DP_FAM_*: the families it classifies
                                (0 when built elsewhere: IPv4 if it has
                                a prefix, else both) */
    uint8_t  src6_len, dst6_len;  /* IPv6 prefixes (fam == OC_DP_FAM_V6) */
    uint8_t  pad;            /* 0: no padding (fuzz_pkt compares bytes) */
    uint8_t  src6[16], dst6[16];  /* network byte order */
} oc_dp_rule_t;

#define OC_DP_FAM_V4   1
#define OC_DP_FAM_V6   2
#define OC_DP_FAM_BOTH 3

/** The families @p r classifies (OC_DP_FAM_*). */
static inline uint8_t oc__dp_rule_fam(const oc_dp_rule_t *r)
{
    return r->fam ? r->fam
           : r->r.src_len || r->r.dst_len ? OC_DP_FAM_V4 : OC_DP_FAM_BOTH;
}

/** The IPv6 classifier's rule for @p r (its IPv6 prefixes, or none), with
 *  userdata @p ud (src/dp/rules.c; tests/fuzz/fuzz_acl6.c feeds the
 *  classifier the same way). */
static inline void oc__dp_rule_acl6(const oc_dp_rule_t *r, uint32_t ud,
                                    oc_acl6_rule_t *o)
{
    bool six = oc__dp_rule_fam(r) == OC_DP_FAM_V6;
    memset(o, 0, sizeof(*o));
    o->id = r->r.id;
    o->priority = r->r.priority;
    for (int i = 0; six && i < 4; i++) {
        o->src[i] = oc__load_be32(r->src6 + 4 * i);
        o->dst[i] = oc__load_be32(r->dst6 + 4 * i);
    }
    o->src_len = six ? r->src6_len : 0;
    o->dst_len = six ? r->dst6_len : 0;
    o->proto = r->r.proto;
    o->proto_mask = r->r.proto_mask;
    o->sport_lo = r->r.sport_lo;
    o->sport_hi = r->r.sport_hi;
    o->dport_lo = r->r.dport_lo;
    o->dport_hi = r->r.dport_hi;
    o->userdata = ud;
}

typedef struct {
    uint32_t threads;        /* workers = queues used per port */
    uint32_t burst;          /* packets per rx burst */
    uint32_t ring_size;      /* AF_XDP ring entries */
    uint32_t max_rules;
    uint32_t max_frame;      /* larger frames are 'oversized' */
    bool     bare;           /* stages none: the bare forwarder */
    oc_acl_action_t default_action; /* when no rule matches */
    char     control[OC_DP_PATH_MAX]; /* unix:/path */
    char     metrics[OC_DP_PATH_MAX]; /* HOST:PORT or "off" */
    uint8_t  policy[OC_PKT_R_MAX];   /* oc_pkt_policy_t per reason */
    uint32_t nattach;
    oc_dp_attach_conf_t attach[OC_DP_MAX_ATTACH];
    size_t        nrules;
    oc_dp_rule_t *rules;     /* malloc'd */
    oc_dp_tenants_conf_t tenants; /* tenant stages (tenant/tenant.h) */
    /* ESP (esp_stage.c; docs/dp.md "Encryption between DPUs") */
    bool     esp;            /* the stage runs: `esp on` or any `sa` line */
    bool     esp_clear;      /* IPv4 no SA protects passes in clear (deny) */
    uint32_t esp_mtu;        /* wire MTU: outer packets fit it (1500) */
    uint32_t nsa;
    oc_esp_sa_spec_t sa[OC_DP_MAX_SA]; /* keys inside: zeroed by conf_free */
    /* flow telemetry and IPFIX (flow_stage.c; docs/esp-ipfix.md) */
    bool     flows;          /* `flows on` or any `ipfix` line */
    uint32_t flow_table;     /* flows per worker (65536) */
    uint32_t flow_idle_s, flow_active_s;   /* timeouts (15, 60) */
    uint32_t ipfix_domain, ipfix_template_s; /* (1, 30) */
    uint32_t nipfix;
    char     ipfix[OC_DP_MAX_IPFIX][OC_DP_PATH_MAX]; /* HOST:PORT */
} oc_dp_conf_t;

/** Defaults (documented in --help and docs/dp.md). */
void oc__dp_conf_defaults(oc_dp_conf_t *c);
void oc__dp_conf_free(oc_dp_conf_t *c);

/**
 * Parse a whole config text.  Every line is checked and every error
 * collected; @p base_dir resolves relative `rules FILE` paths (NULL: cwd).
 * With @p check_system, interfaces must exist and have enough queues.
 * Semantic checks (duplicate rule ids, attachments sharing an interface,
 * at least one attachment) run too.  @p c must hold defaults (or command
 * line values) on entry; it is changed only on success.
 * @return OC_OK; OC_ERR_CONFIG (errors in @p err); OC_ERR_NO_MEMORY.
 */
oc_status_t oc__dp_conf_parse(const char *text, size_t len, const char *name,
                             const char *base_dir, bool check_system,
                             oc_dp_conf_t *c, oc_conf_errors_t *err);

/** oc__dp_conf_parse() of a file, read whole by the file loader
 *  (util/file.h: a regular file of at most OC_DP_CONF_FILE_MAX bytes; a
 *  FIFO or a device is refused, never waited on or read). */
oc_status_t oc__dp_conf_load(const char *path, bool check_system,
                            oc_dp_conf_t *c, oc_conf_errors_t *err);

/**
 * Parse one rule, `id=N [prio=N] action=allow|deny|count [proto=P[/MASK]]
 * [src=A.B.C.D[/LEN]] [dst=...] [sport=LO[-HI]] [dport=LO[-HI]]`, tokens in
 * any order, separated by blanks.  Unset fields match anything; prio
 * defaults to id.  @p why gets a static-or-buffer reason (@p whybuf).
 * @return 0, or -1 with the reason.
 */
int oc__dp_rule_parse(const char *text, oc_dp_rule_t *out, char *why,
                     size_t whylen);

/** Write @p r in the syntax oc__dp_rule_parse() reads. */
int oc__dp_rule_format(const oc_dp_rule_t *r, char *buf, size_t cap);

const char *oc__dp_action_name(oc_acl_action_t a);

/* internal (conf/rule.c), shared with conf/conf.c: "allow"/"deny"/"count" (and
 * aliases) -> action.  0 or -1. */
int oc__dp_parse_action(const char *s, oc_acl_action_t *a);
/* internal (conf/rule.c), shared by conf/conf.c's `rules FILE ...` and
 * the control socket's `rules load PATH ...`: the option words
 * [action=allow|deny|count] [id_base=N] (defaults allow, 0).  0, or -1
 * with @p why. */
int oc__dp_rules_opts(char **tok, int n, oc_acl_action_t *action,
                      uint32_t *id_base, char *why, size_t whylen);

/**
 * Read a rule file for `rules FILE` and `rules load`: ClassBench format
 * when its first rule line starts with '@' (every rule gets @p action, ids
 * and priorities @p id_base + its index), else one `rule ...`-syntax rule
 * per line ('#' comments).  All or nothing; errors with file:line and a
 * reason that never quotes the file (the control socket's client may be
 * shown a file it could not read itself).  Read by oc__acl_read_file()
 * (the loader's checks; at most OC_ACL_FILE_MAX bytes, .gz inflated).
 * @return OC_OK with *rules (malloc'd) and *n; OC_ERR_CONFIG; OC_ERR_NO_MEMORY.
 */
oc_status_t oc__dp_rules_file(const char *path, oc_acl_action_t action,
                             uint32_t id_base, oc_dp_rule_t **rules, size_t *n,
                             oc_conf_errors_t *err);

/**
 * The control socket's reader (conf/ctl_line.c): is there a request line in the
 * @p len bytes received into @p buf (@p cap bytes at most; the buffer has
 * room for @p cap + 1), with @p closed true once no more will come (EOF,
 * or the client went quiet)?  The line must be printable ASCII and tabs,
 * ended by '\n' ('\r' before it dropped): a NUL, a control byte or a
 * non-ASCII byte anywhere before the newline is refused with its column.
 * @return 1: the line, NUL-terminated in place at the start of @p buf;
 *         0: wait for more bytes; -1: refused, the reason in @p why.
 */
int oc__dp_ctl_line(char *buf, size_t len, size_t cap, bool closed,
                    char *why, size_t whylen);

/* ---------------------------------------------------------------- runtime */

typedef struct oc_dp oc_dp_t;

/** Open the ports, start the workers.  @return OC_OK and *out; errors are
 *  logged (nothing is left open on error). */
oc_status_t oc__dp_start(const oc_dp_conf_t *c, oc_dp_t **out);
/** Stop the workers (they finish their burst), close ports, free. */
void oc__dp_stop(oc_dp_t *dp);

/* Control calls: from the control thread only (they are the classifier's
 * writer).  Each answers OC_OK or an error with a reason in @p why. */
oc_status_t oc__dp_rule_add(oc_dp_t *dp, const oc_dp_rule_t *r, char *why,
                           size_t whylen);
oc_status_t oc__dp_rule_del(oc_dp_t *dp, uint32_t id, char *why, size_t whylen);
/** Replace every rule (all or nothing). */
oc_status_t oc__dp_rules_replace(oc_dp_t *dp, const oc_dp_rule_t *rules,
                                size_t n, char *why, size_t whylen);
/** Print every rule with its counters, in priority order. */
void oc__dp_rules_print(oc_dp_t *dp, FILE *out);

/** Write every counter as Prometheus text (thread-safe against the
 *  control thread: used by the HTTP thread too). */
oc_status_t oc__dp_metrics(void *dp, void *prom /* oc_prom_t * */);

/** Listen on the control socket (made 0600; its directory is created when
 *  missing), before the ports open, so a busy socket stops nothing.
 *  @return OC_OK or OC_ERR_CTL_ADDR (logged). */
oc_status_t oc__dp_ctl_listen(const oc_dp_conf_t *c, oc_ctl_listener_t *l);

/** Run the control loop on @p l until SIGTERM/SIGINT (ctl.c); closes @p l.
 *  @return exit code. */
int oc__dp_serve(oc_dp_t *dp, const oc_dp_conf_t *c, oc_ctl_listener_t *l);

#endif
