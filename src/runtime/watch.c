/*
 * watch.c — which transport each peer connection really uses.
 *
 * oc__transport_precheck runs in oc_init before any connection is made:
 * does UCX offer the required transport toward other hosts at all?
 * oc__transport_watch runs once at the end of oc_init, when every
 * endpoint exists (to the
 * other ranks inline, to the agent in the agent placement): asks the
 * transport layer what UCX picked for each connection's active messages,
 * logs it (OC_LOG=runtime:info), counts it (oc_counters_t.conn_*), and,
 * when OC_REQUIRE_TRANSPORT names transports, fails oc_init with
 * OC_ERR_TRANSPORT_REQUIRED instead of letting the job run slow over the
 * wrong one.  The classic case: no RDMA device visible in a container,
 * so UCX quietly picks tcp.  Same thread as oc_init.
 */
#include "runtime.h"

#include "util/log.h"

#include <stdio.h>
#include <string.h>

#define LOG_EACH 8 /* connections logged one by one; the rest summed */

typedef struct {
    unsigned    classes;  /* class bits the list names */
    const char *list;     /* the setting, for UCX names */
    int         need_net; /* it names a transport that leaves the host */
} req_t;

static void req_parse(const char *spec, req_t *r)
{
    memset(r, 0, sizeof(*r));
    r->list = spec;
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        unsigned c = oc__tr_class_parse(p, n);
        if (c == 0 && n > 0)
            c = oc__tr_class_of(p, n); /* a UCX name: its class */
        else
            r->classes |= c;
        if (n > 0 && !(c & OC_TR_CLASS_INTRA_HOST))
            r->need_net = 1;
        p += n;
        p += *p == ',';
    }
}

/* Is transport "tl" (length n) allowed? */
static int req_allows(const req_t *r, const char *tl, size_t n)
{
    unsigned c = oc__tr_class_of(tl, n);
    if ((c & OC_TR_CLASS_INTRA_HOST) || (c & r->classes))
        return 1;
    for (const char *p = r->list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == n && !strncmp(p, tl, n))
            return 1;
        p += l;
        p += *p == ',';
    }
    return 0;
}

/* Every item of "tl/dev,tl/dev" (or space-separated) allowed?  With
 * @p any, is at least one that leaves the host allowed? */
static int items_allowed(const req_t *r, const char *items, int any)
{
    int seen = 0;
    for (const char *p = items; *p;) {
        size_t n = strcspn(p, ", "), tl = strcspn(p, "/");
        if (tl > n)
            tl = n;
        if (n > 0) {
            int ok = req_allows(r, p, tl);
            unsigned c = oc__tr_class_of(p, tl);
            if (any && ok && !(c & OC_TR_CLASS_INTRA_HOST))
                return 1;
            if (!any && !ok)
                return 0;
            seen = 1;
        }
        p += n;
        p += strspn(p, ", ");
    }
    return any ? 0 : seen;
}

oc_status_t oc__transport_precheck(oc_context_t *ctx)
{
    const char *spec = ctx->cfg.require_transport;
    req_t req;
    char res[1024];

    req_parse(spec, &req);
    if (!spec[0] || !req.need_net)
        return OC_OK;
    /* peers on this host prove nothing about the network: UCX must offer
     * the required transport toward other hosts.  Checked before wire-up
     * so that every rank fails alike, none half-connected. */
    oc__tr_context_resources(ctx->tr, res, sizeof(res));
    if (items_allowed(&req, res, 1))
        return OC_OK;
    oc_error(OC_COMP_RUNTIME,
             "rank %u: OC_REQUIRE_TRANSPORT=%s, but UCX offers no such "
             "transport toward other hosts (its resources: %s); `offcore "
             "doctor` says why", ctx->rank, spec, res);
    return OC_ERR_TRANSPORT_REQUIRED;
}

oc_status_t oc__transport_watch(oc_context_t *ctx)
{
    const char *spec = ctx->cfg.require_transport;
    oc_tr_ep_t *ep = NULL;
    unsigned n = 0;
    req_t req;
    char tls[256];

    req_parse(spec, &req);
    while ((ep = oc__tr_worker_ep_next(ctx->worker, ep)) != NULL) {
        unsigned cls = oc__tr_ep_transports(ep, tls, sizeof(tls));
        char who[32] = "the agent";
        for (uint32_t i = 0; ctx->agent == NULL && i < ctx->size; i++)
            if (ctx->eps[i] == ep)
                snprintf(who, sizeof(who), "rank %u", i);
        if (cls & OC_TR_CLASS_RDMA)
            ctx->c.conn_rdma++;
        else if (cls & OC_TR_CLASS_TCP)
            ctx->c.conn_tcp++;
        else if (cls & OC_TR_CLASS_INTRA_HOST)
            ctx->c.conn_sm++;
        else
            ctx->c.conn_other++;
        if (n++ < LOG_EACH)
            oc_info(OC_COMP_RUNTIME, "rank %u: to %s via %s (%s)", ctx->rank,
                    who, tls[0] ? tls : "?", oc__tr_class_main(cls));
        if (spec[0] && !items_allowed(&req, tls, 0)) {
            oc_error(OC_COMP_RUNTIME,
                     "rank %u: OC_REQUIRE_TRANSPORT=%s, but the connection "
                     "to %s uses %s (%s); `offcore doctor` says why",
                     ctx->rank, spec, who, tls[0] ? tls : "an unknown "
                     "transport", oc__tr_class_main(cls));
            return OC_ERR_TRANSPORT_REQUIRED;
        }
    }
    if (n > 0)
        oc_info(OC_COMP_RUNTIME, "rank %u: %u connection%s: rdma %llu, tcp "
                "%llu, sm %llu, other %llu", ctx->rank, n, n == 1 ? "" : "s",
                (unsigned long long)ctx->c.conn_rdma,
                (unsigned long long)ctx->c.conn_tcp,
                (unsigned long long)ctx->c.conn_sm,
                (unsigned long long)ctx->c.conn_other);
    return OC_OK;
}
