/* transport.c — UCP context, workers, endpoints and active messages. */
#include "transport_int.h"

#include "util/log.h"
#include "util/reject.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

struct oc_tr_context {
    ucp_context_h ucp;
    int           wakeup; /* UCP_FEATURE_WAKEUP */
};

#define OC_TR_MAX_AM_ID 8

typedef struct {
    oc_tr_recv_cb_t cb;
    void           *arg;
    int             persistent;
} am_slot_t;

struct oc_tr_worker {
    ucp_worker_h     ucp;
    oc_tr_fail_cb_t  fail_cb; /* a peer of one of its endpoints failed */
    void            *fail_arg;
    ucp_address_t   *addr;
    size_t           addr_len;
    int              efd;     /* event fd, -1 without wakeup */
    am_slot_t        slots[OC_TR_MAX_AM_ID];
    struct oc_tr_ep *eps;     /* live endpoints (oc__tr_worker_ep_next) */
    oc__tr_small_pool_t small; /* oc__tr_send_small()'s copies (tlsmall.c) */
};

struct oc_tr_ep {
    ucp_ep_h ucp;
    oc_tr_worker_t *w;
    int      failed;
    struct oc_tr_ep *next, **pprev; /* on the worker's list */
};

/* A send that ended because its peer died or became unreachable. */
static int peer_gone(ucs_status_t st)
{
    return st == UCS_ERR_ENDPOINT_TIMEOUT || st == UCS_ERR_CONNECTION_RESET ||
           st == UCS_ERR_UNREACHABLE || st == UCS_ERR_CANCELED;
}

/* A send UCX refused at once (@p what names the call).  A peer that is
 * already known dead is OC_ERR_PEER_FAILED, as when the same failure ends
 * a send in flight (send_cb): which of the two a caller meets depends only
 * on when it sent, and it must not change the answer (netns-killagent: a
 * rank sending to its killed agent got OC_ERR_TRANSPORT one run in many).
 * Logged at debug level then: the endpoint's failure callback reports it
 * once. */
static oc_status_t send_refused(const char *what, ucs_status_ptr_t req)
{
    ucs_status_t st = UCS_PTR_STATUS(req);

    if (peer_gone(st)) {
        oc_debug(OC_COMP_TRANSPORT, "%s: %s", what, ucs_status_string(st));
        return OC_ERR_PEER_FAILED;
    }
    oc_error(OC_COMP_TRANSPORT, "%s: %s", what, ucs_status_string(st));
    return OC_ERR_TRANSPORT;
}

/*
 * Peer-failure detection, UCX's own: endpoints made with peer_err ask for
 * UCP_ERR_HANDLING_MODE_PEER, and UCX's keepalive checks their peers
 * every OC__TR_KEEPALIVE (a peer process on this host: is it still alive;
 * over TCP a dead process's sockets are closed by its kernel at once).
 * UCX 1.13's defaults do not meet a 5 s bound: keepalive every 20 s, and
 * its shared-memory transports (sysv, posix) do not offer peer-failure
 * handling unless told to (UCX_SYSV/POSIX_ERROR_HANDLING=n), so an
 * endpoint that asks for it on one host gets none.  Settings the user made
 * in the environment win.
 */
#define OC__TR_KEEPALIVE "1s"

static void failure_defaults(ucp_config_t *config)
{
    ucs_status_t st;

    if (getenv("UCX_KEEPALIVE_INTERVAL") == NULL &&
        (st = ucp_config_modify(config, "KEEPALIVE_INTERVAL",
                                OC__TR_KEEPALIVE)) != UCS_OK)
        oc_debug(OC_COMP_TRANSPORT, "ucp_config_modify(KEEPALIVE_INTERVAL): "
                 "%s", ucs_status_string(st));
    /* Transport-level settings: ucp_config_modify() refuses them in UCX
     * 1.13 ("invalid configurations"), and UCX reads each memory domain's
     * from the environment when ucp_init() opens it.  setenv() is not
     * thread-safe against a concurrent getenv(); contexts are made at
     * start-up, and overwrite=0 keeps the user's choice. */
    setenv("UCX_SYSV_ERROR_HANDLING", "y", 0);
    setenv("UCX_POSIX_ERROR_HANDLING", "y", 0);
    /* cma (single-copy between processes of one host) is left out of
     * every endpoint that asks for peer-failure handling unless its memory
     * domain says it can invalidate a registered buffer: UCX wants that to
     * cut a dead peer's access to a send buffer before handing the buffer
     * back.  cma has nothing to cut (the peer reads with
     * process_vm_readv, there is no registration), and a same-host peer is
     * declared dead only when its process is gone (the keepalive of
     * sysv/posix checks its pid), so there is no one left to read.
     * Without it, 2-16 MiB all-to-all between ranks of one node copied
     * twice through shared memory: 1.4-2.2x Open MPI's time (issue 15).
     * An endpoint without peer-failure mode cannot use cma safely either:
     * UCX aborts the process when a cma read finds its peer gone. */
    setenv("UCX_CMA_MEMORY_INVALIDATE", "y", 0);
}

static oc_status_t context_create(oc_tr_context_t **ctx_p, uint64_t features,
                                  int net_only)
{
    ucp_params_t params;
    ucp_config_t *config;
    oc_tr_context_t *ctx;
    ucs_status_t st;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return OC_ERR_NO_MEMORY;
    ctx->wakeup = (features & UCP_FEATURE_WAKEUP) != 0;
    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "ucp_config_read: %s",
                 ucs_status_string(st));
        goto err_free;
    }
    if (net_only == 2) {
        char buf[512];
        oc__tr_xuser_tls(getenv("UCX_TLS"), buf, sizeof(buf));
        oc_info(OC_COMP_TRANSPORT, "the agent runs as another user: UCX_TLS "
                "%s (UCX's shared-memory segments are owner-only)", buf);
        if ((st = ucp_config_modify(config, "TLS", buf)) != UCS_OK) {
            oc_error(OC_COMP_TRANSPORT, "ucp_config_modify(TLS=%s): %s", buf,
                     ucs_status_string(st));
            ucp_config_release(config);
            goto err_free;
        }
    } else if (net_only) {
        /* UCX_TLS as set, less what reaches only this host */
        const char *tls = getenv("UCX_TLS");
        char buf[512];
        if (tls == NULL || !strcmp(tls, "all") || !strcmp(tls, "any"))
            snprintf(buf, sizeof(buf), "^sm,self");
        else if (tls[0] == '^')
            snprintf(buf, sizeof(buf), "%s,sm,self", tls);
        else if (oc__tr_net_tls(tls, buf, sizeof(buf)) != 0) {
            oc_info(OC_COMP_TRANSPORT, "UCX_TLS=%s names no transport that "
                    "reaches another host", tls);
            ucp_config_release(config);
            free(ctx);
            return OC_ERR_UNSUPPORTED;
        }
        st = ucp_config_modify(config, "TLS", buf);
        if (st != UCS_OK) {
            oc_error(OC_COMP_TRANSPORT, "ucp_config_modify(TLS=%s): %s", buf,
                     ucs_status_string(st));
            ucp_config_release(config);
            goto err_free;
        }
    }
    failure_defaults(config);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = features;
    params.mt_workers_shared = 0;
    st = ucp_init(&params, config, &ctx->ucp);
    ucp_config_release(config);
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "ucp_init: %s", ucs_status_string(st));
        goto err_free;
    }
    *ctx_p = ctx;
    return OC_OK;

err_free:
    free(ctx);
    return OC_ERR_TRANSPORT;
}

oc_status_t oc__tr_context_create(oc_tr_context_t **ctx_p)
{
    return context_create(ctx_p, UCP_FEATURE_AM | UCP_FEATURE_TAG, 0);
}

oc_status_t oc__tr_context_create_xuser(oc_tr_context_t **ctx_p)
{
    return context_create(ctx_p, UCP_FEATURE_AM | UCP_FEATURE_TAG, 2);
}

oc_status_t oc__tr_context_create_net(oc_tr_context_t **ctx_p)
{
    return context_create(ctx_p, UCP_FEATURE_AM, 1);
}

oc_status_t oc__tr_context_create_wakeup(oc_tr_context_t **ctx_p)
{
    /* TAG: the collectives of the agent placement (src/agent/router/rcoll.c) */
    return context_create(ctx_p, UCP_FEATURE_AM | UCP_FEATURE_TAG |
                                  UCP_FEATURE_WAKEUP, 0);
}

void oc__tr_context_destroy(oc_tr_context_t *ctx)
{
    if (ctx == NULL)
        return;
    ucp_cleanup(ctx->ucp);
    free(ctx);
}

oc_status_t oc__tr_worker_create(oc_tr_context_t *ctx, oc_tr_worker_t **w_p)
{
    ucp_worker_params_t params;
    oc_tr_worker_t *w;
    ucs_status_t st;

    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return OC_ERR_NO_MEMORY;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(ctx->ucp, &params, &w->ucp);
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "ucp_worker_create: %s",
                 ucs_status_string(st));
        goto err_free;
    }
    w->efd = -1;
    if (ctx->wakeup) {
        int fd;
        st = ucp_worker_get_efd(w->ucp, &fd);
        if (st == UCS_OK)
            w->efd = fd;
        else
            oc_warn(OC_COMP_TRANSPORT, "ucp_worker_get_efd: %s (the worker"
                    " will poll instead of sleeping)", ucs_status_string(st));
    }
    st = ucp_worker_get_address(w->ucp, &w->addr, &w->addr_len);
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "ucp_worker_get_address: %s",
                 ucs_status_string(st));
        goto err_worker;
    }
    *w_p = w;
    return OC_OK;

err_worker:
    ucp_worker_destroy(w->ucp);
err_free:
    free(w);
    return OC_ERR_TRANSPORT;
}

void oc__tr_worker_destroy(oc_tr_worker_t *w)
{
    if (w == NULL)
        return;
    ucp_worker_release_address(w->ucp, w->addr);
    ucp_worker_destroy(w->ucp);
    oc__tr_small_fini(&w->small);
    free(w);
}

oc_status_t oc__tr_worker_address(oc_tr_worker_t *w, const void **addr,
                                 size_t *len)
{
    *addr = w->addr;
    *len = w->addr_len;
    return OC_OK;
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    am_slot_t *slot = arg;

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* Our senders force eager; a rendezvous header comes from a foreign
         * peer.  Refuse it (the data is never fetched). */
        oc_warn(OC_COMP_TRANSPORT, "rendezvous active message refused");
        return UCS_OK;
    }
    uint64_t token = 0;
    if (header_length == sizeof(token))
        memcpy(&token, header, sizeof(token));
    slot->cb(slot->arg, token, data, length);
    return slot->persistent ? UCS_INPROGRESS : UCS_OK;
}

int oc__tr_deliver_local(oc_tr_worker_t *w, unsigned id, uint64_t token,
                         void *data, size_t len)
{
    am_slot_t *slot;

    if (id >= OC_TR_MAX_AM_ID)
        return 0;
    slot = &w->slots[id];
    if (slot->cb == NULL || slot->persistent)
        return 0;
    slot->cb(slot->arg, token, data, len);
    return 1;
}

oc_status_t oc__tr_set_handler(oc_tr_worker_t *w, unsigned id,
                              oc_tr_recv_cb_t cb, void *arg, int persistent)
{
    ucp_am_handler_param_t p;
    am_slot_t *slot;
    ucs_status_t st;

    if (id >= OC_TR_MAX_AM_ID)
        return OC_ERR_INVALID_PARAM;
    slot = &w->slots[id];
    slot->cb = cb;
    slot->arg = arg;
    slot->persistent = persistent;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                   UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG;
    p.id = id;
    p.flags = UCP_AM_FLAG_WHOLE_MSG |
              (persistent ? UCP_AM_FLAG_PERSISTENT_DATA : 0);
    p.cb = am_cb;
    p.arg = slot;
    st = ucp_worker_set_am_recv_handler(w->ucp, &p);
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "ucp_worker_set_am_recv_handler: %s",
                 ucs_status_string(st));
        return OC_ERR_TRANSPORT;
    }
    return OC_OK;
}

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    oc_tr_ep_t *e = arg;
    (void)ep;
    if (e->failed)
        return;
    e->failed = 1;
    oc_debug(OC_COMP_TRANSPORT, "endpoint to a peer failed: %s",
             ucs_status_string(status));
    if (e->w->fail_cb != NULL)
        e->w->fail_cb(e->w->fail_arg, e, ucs_status_string(status));
}

void oc__tr_worker_on_failure(oc_tr_worker_t *w, oc_tr_fail_cb_t cb, void *arg)
{
    w->fail_cb = cb;
    w->fail_arg = arg;
}

int oc__tr_ep_failed(const oc_tr_ep_t *ep)
{
    return ep != NULL && ep->failed;
}


oc_status_t oc__tr_ep_create(oc_tr_worker_t *w, const void *addr,
                            int peer_err, oc_tr_ep_t **ep_p)
{
    ucp_ep_params_t p;
    oc_tr_ep_t *ep;
    ucs_status_t st;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return OC_ERR_NO_MEMORY;
    /* Peer failure handling: a peer that dies fails its operations
     * instead of hanging or aborting us. */
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.address = addr;
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = ep_error;
    p.err_handler.arg = ep;
    if (!peer_err)
        p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep->w = w;
    st = ucp_ep_create(w->ucp, &p, &ep->ucp);
    if (st != UCS_OK && peer_err) { /* transports without it: do without */
        static oc_log_limit_t lim = OC_LOG_LIMIT_INIT("unwatched peers");
        oc_log_limited(&lim, OC_COMP_TRANSPORT, OC_LOG_WARN,
                       "ucp_ep_create with peer-failure handling: %s; "
                       "connecting without it (a peer that dies may go "
                       "unnoticed)", ucs_status_string(st));
        p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        st = ucp_ep_create(w->ucp, &p, &ep->ucp);
    }
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "ucp_ep_create: %s", ucs_status_string(st));
        if (oc__tr_book_on()) { /* whoever waits for it learns why */
            uint64_t uid;
            char why[96];
            snprintf(why, sizeof(why), "ucp_ep_create: %s",
                     ucs_status_string(st));
            if (oc__tr_addr_uid(addr, &uid) == OC_OK)
                oc__tr_book_failed(uid, why);
        }
        free(ep);
        return OC_ERR_TRANSPORT;
    }
    if (oc__tr_book_on()) { /* tlbook.c: for threads not owning w */
        uint64_t uid;
        char tls[128];
        unsigned cls = oc__tr_ep_transports(ep, tls, sizeof(tls));
        if (oc__tr_addr_uid(addr, &uid) == OC_OK)
            oc__tr_book_add(ep, uid, cls, tls);
    }
    ep->next = w->eps;
    if (w->eps != NULL)
        w->eps->pprev = &ep->next;
    ep->pprev = &w->eps;
    w->eps = ep;
    *ep_p = ep;
    return OC_OK;
}

void oc__tr_ep_destroy(oc_tr_worker_t *w, oc_tr_ep_t *ep)
{
    ucp_request_param_t p;
    ucs_status_ptr_t req;

    if (ep == NULL)
        return;
    oc__tr_book_del(ep);
    *ep->pprev = ep->next;
    if (ep->next != NULL)
        ep->next->pprev = ep->pprev;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(ep->ucp, &p);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS)
            ucp_worker_progress(w->ucp);
        ucp_request_free(req);
    }
    free(ep);
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    static oc_log_limit_t lim = OC_LOG_LIMIT_INIT("failed sends");
    oc_tr_op_t *op = user_data;
    /* Canceled: the endpoint was closed under the send — a shut-down
     * (SIGTERM) or a peer being dropped, reported by whoever closed it;
     * the owner still learns it through op->cb.  Other failures are
     * rate-limited: one broken link fails every send queued on it. */
    if (status == UCS_ERR_CANCELED)
        oc_debug(OC_COMP_TRANSPORT, "active message send canceled: %s",
                 ucs_status_string(status));
    else if (status != UCS_OK)
        oc_log_limited(&lim, OC_COMP_TRANSPORT, OC_LOG_ERROR,
                       "active message send failed: %s",
                       ucs_status_string(status));
    ucp_request_free(request);
    op->cb(op, status == UCS_OK ? OC_OK
               : peer_gone(status) ? OC_ERR_PEER_FAILED : OC_ERR_TRANSPORT);
}

oc_status_t oc__tr_send(oc_tr_ep_t *ep, unsigned id, const void *buf,
                       size_t len, oc_tr_op_t *op)
{
    ucp_request_param_t p;
    ucs_status_ptr_t req;

    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_EAGER;
    p.cb.send = send_cb;
    p.user_data = op;
    req = ucp_am_send_nbx(ep->ucp, id, op->token ? &op->token : NULL,
                          op->token ? sizeof(op->token) : 0, buf, len, &p);
    if (req == NULL)
        return OC_OK;
    if (UCS_PTR_IS_ERR(req))
        return send_refused("ucp_am_send_nbx", req);
    return OC_INPROGRESS;
}

static void small_done(oc_tr_op_t *op, oc_status_t st)
{
    (void)st; /* logged by send_cb */
    oc__tr_small_put((oc__tr_small_buf_t *)op);
}

oc_status_t oc__tr_send_small(oc_tr_ep_t *ep, unsigned id, uint64_t token,
                             const void *buf, size_t len)
{
    oc__tr_small_buf_t *s;
    oc_status_t st;

    if (len > OC_TR_SMALL_MAX)
        return OC_ERR_INVALID_PARAM;
    s = oc__tr_small_get(&ep->w->small, len);
    if (s == NULL)
        return OC_ERR_NO_MEMORY;
    s->op.cb = small_done;
    s->op.token = token;
    memcpy(s->data, buf, len);
    st = oc__tr_send(ep, id, s->data, len, &s->op);
    if (st == OC_INPROGRESS)
        return OC_OK;
    oc__tr_small_put(s);
    return st;
}

uint64_t oc__tr_worker_small_allocs(const oc_tr_worker_t *w)
{
    return w->small.allocs;
}

uint64_t oc__tr_worker_small_gets(const oc_tr_worker_t *w)
{
    return w->small.gets;
}

int oc__tr_worker_efd(oc_tr_worker_t *w)
{
    return w->efd;
}

int oc__tr_worker_arm(oc_tr_worker_t *w)
{
    return w->efd >= 0 && ucp_worker_arm(w->ucp) == UCS_OK;
}

unsigned oc__tr_progress(oc_tr_worker_t *w)
{
    return ucp_worker_progress(w->ucp);
}

void oc__tr_release(oc_tr_worker_t *w, void *data)
{
    ucp_am_data_release(w->ucp, data);
}

void oc__tr_ep_describe(oc_tr_ep_t *ep, char *buf, size_t len)
{
    FILE *f = fmemopen(buf, len, "w");
    if (f == NULL) {
        snprintf(buf, len, "?");
        return;
    }
    ucp_ep_print_info(ep->ucp, f);
    fclose(f);
}

oc_tr_ep_t *oc__tr_worker_ep_next(oc_tr_worker_t *w, oc_tr_ep_t *prev)
{
    return prev == NULL ? w->eps : prev->next;
}

/* Run a print_info function into a buffer; NULL when it cannot. */
static char *print_to_mem(void (*fn)(const void *, FILE *), const void *obj)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return NULL;
    fn(obj, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void ep_print(const void *obj, FILE *f)
{
    ucp_ep_print_info((ucp_ep_h)obj, f);
}

static void ctx_print(const void *obj, FILE *f)
{
    ucp_context_print_info((ucp_context_h)obj, f);
}

unsigned oc__tr_ep_transports(oc_tr_ep_t *ep, char *out, size_t outlen)
{
    char *text = print_to_mem(ep_print, ep->ucp);
    unsigned cls;
    if (text == NULL) {
        snprintf(out, outlen, "?");
        return 0;
    }
    cls = oc__tr_parse_ep_info(text, out, outlen);
    free(text);
    return cls;
}

oc_status_t oc__tr_addr_uid(const void *addr, uint64_t *uid)
{
    ucp_worker_address_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_WORKER_ADDRESS_ATTR_FIELD_UID;
    if (ucp_worker_address_query((ucp_address_t *)addr, &attr) != UCS_OK)
        return OC_ERR_TRANSPORT;
    *uid = attr.worker_uid;
    return OC_OK;
}

unsigned oc__tr_context_resources(oc_tr_context_t *ctx, char *out,
                                 size_t outlen)
{
    char *text = print_to_mem(ctx_print, ctx->ucp);
    unsigned cls;
    if (text == NULL) {
        snprintf(out, outlen, "?");
        return 0;
    }
    cls = oc__tr_parse_ctx_info(text, out, outlen);
    free(text);
    return cls;
}

const char *oc__tr_version(void)
{
    return ucp_get_version_string();
}

/* Tagged messages (the collectives' payloads): UCX chooses eager or
 * rendezvous by size, so large ones move once, straight into the buffer
 * the receiver posted (cma on one node, RDMA between nodes), and a sender
 * cannot run ahead of a receiver that has not posted. */
static void tag_send_cb(void *request, ucs_status_t status, void *user_data)
{
    oc_tr_op_t *op = user_data;
    oc_status_t st = OC_OK;

    /* A dead peer fails every send queued to it: whoever watches the
     * endpoint (oc__tr_worker_on_failure) says so once. */
    if (status != UCS_OK && peer_gone(status)) {
        oc_debug(OC_COMP_TRANSPORT, "tagged send failed: %s",
                 ucs_status_string(status));
        st = OC_ERR_PEER_FAILED;
    } else if (status != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "tagged send failed: %s",
                 ucs_status_string(status));
        st = OC_ERR_TRANSPORT;
    }
    ucp_request_free(request);
    op->cb(op, st);
}

oc_status_t oc__tr_tag_send(oc_tr_ep_t *ep, uint64_t tag, const void *buf,
                           size_t len, oc_tr_op_t *op)
{
    ucp_request_param_t p;
    ucs_status_ptr_t req;

    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = tag_send_cb;
    p.user_data = op;
    req = ucp_tag_send_nbx(ep->ucp, buf, len, tag, &p);
    if (req == NULL)
        return OC_OK;
    if (UCS_PTR_IS_ERR(req))
        return send_refused("ucp_tag_send_nbx", req);
    return OC_INPROGRESS;
}

static oc_status_t tag_recv_status(ucs_status_t st, size_t got, size_t want)
{
    if (st == UCS_ERR_MESSAGE_TRUNCATED || (st == UCS_OK && got != want))
        return OC_ERR_WIRE_LENGTH;
    if (peer_gone(st)) { /* its sender died mid-message: reported once by
                          * the endpoint's failure callback */
        oc_debug(OC_COMP_TRANSPORT, "tagged receive failed: %s",
                 ucs_status_string(st));
        return OC_ERR_PEER_FAILED;
    }
    if (st != UCS_OK) {
        oc_error(OC_COMP_TRANSPORT, "tagged receive failed: %s",
                 ucs_status_string(st));
        return OC_ERR_TRANSPORT;
    }
    return OC_OK;
}

static void tag_recv_cb(void *request, ucs_status_t status,
                        const ucp_tag_recv_info_t *info, void *user_data)
{
    oc_tr_op_t *op = user_data;
    size_t want = (size_t)op->token;
    size_t got = info != NULL ? info->length : 0;

    ucp_request_free(request);
    op->cb(op, tag_recv_status(status, got, want));
}

oc_status_t oc__tr_tag_recv(oc_tr_worker_t *w, uint64_t tag, void *buf,
                           size_t len, oc_tr_op_t *op)
{
    ucp_request_param_t p;
    ucs_status_ptr_t req;

    op->token = len; /* the length the callback checks */
    /* Always through the callback: UCX 1.13 leaves recv_info unset on
     * some immediate completions, and the length must be checked. */
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = tag_recv_cb;
    p.user_data = op;
    req = ucp_tag_recv_nbx(w->ucp, buf, len, tag, UINT64_MAX, &p);
    if (req == NULL) /* not expected with NO_IMM_CMPL */
        return OC_OK;
    if (UCS_PTR_IS_ERR(req))
        return tag_recv_status(UCS_PTR_STATUS(req), 0, len);
    return OC_INPROGRESS;
}

static void tag_recv_masked_cb(void *request, ucs_status_t status,
                               const ucp_tag_recv_info_t *info,
                               void *user_data)
{
    oc_tr_recv_op_t *op = user_data;

    if (status == UCS_OK && info != NULL) { /* info lives in the request */
        op->tag = info->sender_tag;
        op->len = info->length;
    }
    ucp_request_free(request);
    /* a length below the cap is the caller's to judge */
    op->op.cb(&op->op, tag_recv_status(status, 0, 0));
}

oc_status_t oc__tr_tag_recv_masked(oc_tr_worker_t *w, uint64_t tag,
                                  uint64_t mask, void *buf, size_t cap,
                                  oc_tr_recv_op_t *op)
{
    ucp_request_param_t p;
    ucs_status_ptr_t req;

    op->tag = 0;
    op->len = 0;
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = tag_recv_masked_cb;
    p.user_data = op;
    req = ucp_tag_recv_nbx(w->ucp, buf, cap, tag, mask, &p);
    if (req == NULL || UCS_PTR_IS_ERR(req)) { /* NULL: not with NO_IMM_CMPL */
        oc_error(OC_COMP_TRANSPORT, "tagged receive refused: %s",
                 req == NULL ? "completed at once"
                             : ucs_status_string(UCS_PTR_STATUS(req)));
        return OC_ERR_TRANSPORT;
    }
    return OC_INPROGRESS;
}
