/*
 * agent.c — the agent placement of liboffcore: bundles go to the node's
 * offcored instead of straight to their destination.  Two modes
 * (OC_AGENT_MODE: stream, every message in one outlet toward the agent,
 * which sorts them; per-dest, whole per-destination bundles) over two
 * channels (OC_AGENT_CHANNEL: a shared-memory segment of rings on one
 * host, or UCX under a credit window of OC_AGENT_CREDITS).  A full window
 * or ring is OC_ERR_NO_RESOURCE at oc_send: back-pressure, never loss.
 * How each works: docs/design.md, "Stream mode" and "Shared-memory channel".
 *
 * Threading: one thread per context.  Trust: the agent authenticated with
 * the job key; what it delivers is validated as any bundle is.
 */
#include "agent_state.h"

#include "ctl/ctl.h"
#include "ctl/derive.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/shmseg.h"

#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void agent_fini(oc_context_t *ctx);

/* The agent of the node may move collective data in and out of this
 * process (process_vm_readv/writev, docs/coll.md): it needs the same uid
 * and, where Yama's ptrace_scope is 1, to be named our ptracer.  Named
 * only when the kernel told us who the agent is (a Unix socket's peer) and
 * the collectives may use it (OC_COLL_CMA).  A failure only logs: the
 * agent then finds it cannot and the collectives go by UCX. */
static void allow_agent_reads(oc_context_t *ctx, struct oc__agent *a)
{
    uint32_t pid, uid;
    FILE *f;
    int scope = 0;

    if (oc__ctl_peer_cred(oc__ctl_conn_fd(a->cc), &pid, &uid) != OC_OK)
        return;
    a->pid = pid;
    if (!oc__ext_agent_access(ctx))
        return;
    if ((f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r")) == NULL)
        return; /* no Yama: the uid check alone applies */
    if (fscanf(f, "%d", &scope) != 1)
        scope = 0;
    fclose(f);
    if (scope == 1 && prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0) != 0)
        oc_info(OC_COMP_RUNTIME, "rank %u: prctl(PR_SET_PTRACER, agent %u) "
                "failed: collectives will go by UCX", ctx->rank, pid);
}

/* Send one bundle to the agent, spending a credit the caller checked. */
static oc_status_t agent_send(oc_context_t *ctx, oc_eng_buf_t *b, uint32_t len)
{
    struct oc__agent *a = ctx->agent;
    oc_status_t st;

    a->credits--;
    st = oc__eng_send(ctx->eng, &a->link, a->ep, a->token, b, len);
    if (st != OC_OK && st != OC_INPROGRESS && ctx->failed == OC_OK) {
        /* the agent died before its control socket said so (ctl_poll):
         * the same words, once */
        if (st == OC_ERR_PEER_FAILED)
            oc_error(OC_COMP_RUNTIME, "rank %u: lost the agent: %s",
                     ctx->rank, oc_status_string(st));
        ctx->failed = st;
    }
    return st;
}

static oc_status_t agent_submit(oc_context_t *ctx, oc_eng_out_t *o,
                                oc_eng_buf_t *b, uint32_t len)
{
    struct oc__agent *a = ctx->agent;

    b->len = len;
    if (a->shm) {
        if (b->ring) { /* the stream outlet's slot: written in place */
            oc__spsc_publish(&a->seg.up, len);
            oc__agent_shm_kick(a);
            return OC_OK;
        }
        /* a pool buffer (per-dest mode, or a handler's reply that found
         * the ring full): copied into a slot, in order */
        if (o == ctx->stream)
            o->ring_skip = 1;
        b->next = NULL;
        *a->wait_tail = b;
        a->wait_tail = &b->next;
        a->waiting++;
        oc__agent_shm_drain(ctx);
        return OC_OK;
    }
    (void)o;
    if (a->credits == 0 || a->wait_head != NULL) { /* keep the order */
        b->next = NULL;
        *a->wait_tail = b;
        a->wait_tail = &b->next;
        a->waiting++;
        return OC_OK;
    }
    return agent_send(ctx, b, len);
}

static void credit_recv(void *arg, uint64_t token, void *data, size_t len)
{
    oc_context_t *ctx = arg;
    oc_am_credit_t m;
    if (len != sizeof(m) || ctx->agent == NULL)
        return;
    memcpy(&m, data, sizeof(m));
    if (m.magic != OC_AM_CREDIT_MAGIC)
        return;
    ctx->agent->credits += m.credits;
}

static void ctl_poll(oc_context_t *ctx);

static void agent_progress(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;

    /* A lost agent must surface within seconds even in a rank that only
     * sends: the control connection is read once a millisecond (a clock
     * read per 16 polls).  A read per 16 polls was a system call every
     * 1-2 us of a rank waiting for a collective: ~5 % of its time, and a
     * completion that landed meanwhile was seen after the call. */
    if ((++a->polls & 15) == 0 && !ctx->q.active) {
        uint64_t now = oc__now_us();
        if (now - a->ctl_at >= 1000) {
            a->ctl_at = now;
            ctl_poll(ctx);
        }
    }
    if (a->shm) {
        uint8_t *slot;
        uint32_t len;
        if (a->wait_head != NULL)
            oc__agent_shm_drain(ctx);
        /* each routing thread's deliveries, in its own ring */
        for (uint32_t i = 0; i < a->seg.ndown; i++) {
            oc_spsc_t *down = &a->seg.down[i];
            /* nothing new: one load, no call (most rings, most polls) */
            if (!down->broken && !oc__spsc_ready(down))
                continue;
            while ((slot = oc__spsc_peek(down, &len)) != NULL)
                oc__rx_push_shm(ctx, slot, len, down);
            if (down->broken && ctx->failed == OC_OK) {
                oc_error(OC_COMP_RUNTIME, "rank %u: the agent's delivery "
                         "ring %u is corrupt", ctx->rank, i);
                ctx->failed = OC_ERR_PEER_FAILED;
            }
        }
        /* collective completions: to the DONE handler (src/coll) as if
         * they had come by UCX, the slot back at once (it copies what it
         * keeps) */
        while (oc__spsc_ready(&a->seg.cdown) &&
               (slot = oc__spsc_peek(&a->seg.cdown, &len)) != NULL) {
            if (oc__tr_deliver_local(ctx->worker, OC_AM_COLL_DONE, 0, slot,
                                     len))
                a->ring_dones++;
            oc__spsc_release(&a->seg.cdown);
        }
        if (a->seg.cdown.broken && ctx->failed == OC_OK) {
            oc_error(OC_COMP_RUNTIME, "rank %u: the agent's completion ring "
                     "is corrupt", ctx->rank);
            ctx->failed = OC_ERR_PEER_FAILED;
        }
        oc__agent_watch(ctx);
        return;
    }

    while (a->wait_head != NULL && a->credits > 0) {
        oc_eng_buf_t *b = a->wait_head;
        a->wait_head = b->next;
        if (a->wait_head == NULL)
            a->wait_tail = &a->wait_head;
        a->waiting--;
        if (agent_send(ctx, b, b->len) != OC_OK)
            break;
    }
    oc__agent_watch(ctx); /* stall.c: say so when the agent stops moving */
}

/* Act on one message from the agent outside a handshake. */
static void ctl_message(oc_context_t *ctx, const oc_ctl_msg_t *m)
{
    struct oc__agent *a = ctx->agent;

    switch (m->type) {
    case OC_CTL_ERROR:
        oc_error(OC_COMP_RUNTIME, "rank %u: the agent says: %.*s", ctx->rank,
                 (int)m->u.error.text.len, (const char *)m->u.error.text.data);
        ctx->failed = OC_ERR_PEER_FAILED;
        break;
    case OC_CTL_BYE:
        oc_error(OC_COMP_RUNTIME, "rank %u: the agent %s", ctx->rank,
                 m->u.bye.reason == OC_CTL_BYE_SHUTDOWN
                     ? "is shutting down" : "ended the job");
        ctx->failed = OC_ERR_PEER_FAILED;
        break;
    case OC_CTL_COUNTS_REQ:
        if (ctx->q.active && m->u.counts.epoch == ctx->q.epoch) {
            ctx->q.round = m->u.counts.round;
            ctx->c.quiesce_rounds++;
            a->q_sent = 0;
        }
        break;
    case OC_CTL_QUIESCE_DONE:
        if (ctx->q.active && m->u.quiesce_done.epoch == ctx->q.epoch)
            a->q_done = 1;
        break;
    default:
        oc_warn(OC_COMP_RUNTIME, "rank %u: unexpected %s from the agent",
                ctx->rank, oc__ctl_type_name(m->type));
        break;
    }
}

static void ctl_poll(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;
    oc_ctl_msg_t m;
    oc_status_t st;

    oc__ctl_conn_flush(a->cc);
    while ((st = oc__ctl_conn_read(a->cc, &m)) == OC_OK)
        ctl_message(ctx, &m);
    if (st != OC_INPROGRESS)
        a->gone = 1;
    if (st != OC_INPROGRESS && ctx->failed == OC_OK) {
        oc_error(OC_COMP_RUNTIME, "rank %u: lost the agent: %s", ctx->rank,
                 oc_status_string(st));
        ctx->failed = OC_ERR_PEER_FAILED;
    }
}

static int agent_gone(oc_context_t *ctx)
{
    if (ctx->agent == NULL)
        return 1;
    if (!ctx->agent->gone)
        ctl_poll(ctx);
    return ctx->agent->gone;
}

/* Wait for the next message of a handshake; ERROR ends it. */
static oc_status_t expect(oc_context_t *ctx, const oc_ctl_msg_t *req,
                          oc_ctl_type_t type, oc_ctl_msg_t *reply,
                          int timeout_ms, int quiet)
{
    oc_status_t st = oc__ctl_conn_request(ctx->agent->cc, req, reply,
                                         timeout_ms);
    if (st == OC_ERR_WIRE_VERSION) {
        oc_error(OC_COMP_RUNTIME, "rank %u: the agent at %s speaks control "
                 "protocol version %u; this library (liboffcore %s) speaks "
                 "%u: another offcore release (run one release on the node)",
                 ctx->rank, ctx->cfg.agent,
                 oc__ctl_conn_peer_version(ctx->agent->cc), oc_version(),
                 OC_CTL_VERSION);
        return OC_ERR_CTL_VERSION;
    }
    if (st == OC_OK && reply->type == OC_CTL_ERROR &&
        reply->u.error.status == OC_ERR_WIRE_VERSION) {
        oc_error(OC_COMP_RUNTIME, "rank %u: the agent at %s refused this "
                 "library (liboffcore %s, control protocol version %u): %.*s",
                 ctx->rank, ctx->cfg.agent, oc_version(), OC_CTL_VERSION,
                 (int)reply->u.error.text.len,
                 (const char *)reply->u.error.text.data);
        return OC_ERR_CTL_VERSION;
    }
    if (st != OC_OK) {
        if (st == OC_ERR_CTL_TIMEOUT || !quiet)
            oc_error(OC_COMP_RUNTIME, "rank %u: agent handshake: %s",
                     ctx->rank, oc_status_string(st));
        return st == OC_ERR_CTL_TIMEOUT ? st : OC_ERR_PEER_FAILED;
    }
    if (reply->type == OC_CTL_ERROR) {
        oc_error(OC_COMP_RUNTIME, "rank %u: the agent refused: %.*s",
                 ctx->rank, (int)reply->u.error.text.len,
                 (const char *)reply->u.error.text.data);
        return OC_ERR_CTL_AUTH;
    }
    if (reply->type != type) {
        oc_error(OC_COMP_RUNTIME, "rank %u: agent sent %s, expected %s",
                 ctx->rank, oc__ctl_type_name(reply->type),
                 oc__ctl_type_name(type));
        return OC_ERR_STATE;
    }
    return OC_OK;
}

/* Times the rank connects before it gives up a handshake the agent keeps
 * closing (oc__agent_init). */
#define HANDSHAKE_TRIES 5

/* HELLO / CHALLENGE / AUTH on the connection just made: WELCOME in *@p r.
 * OC_ERR_PEER_FAILED: the agent closed it first (not logged when @p quiet:
 * the caller tries again). */
static oc_status_t hello_auth(oc_context_t *ctx, const oc_ctl_key_t *key,
                              const void *addr, size_t addr_len,
                              uint8_t *snonce, uint8_t *cnonce,
                              oc_ctl_msg_t *r, int quiet)
{
    oc_ctl_msg_t m;
    oc_status_t st;

    if ((st = oc__ctl_random(cnonce, OC_CTL_CNONCE_LEN)) != OC_OK)
        return st;
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_HELLO;
    m.u.hello.job = (uint32_t)ctx->cfg.job;
    m.u.hello.rank = ctx->rank;
    m.u.hello.size = ctx->size;
    m.u.hello.pid = (uint32_t)getpid();
    /* the shared-memory channel needs descriptors passed: a Unix socket */
    if (oc__agent_want_shm(ctx)) {
        m.u.hello.flags = OC_CTL_HELLO_F_SHM;
        oc__ctl_conn_accept_fds(ctx->agent->cc);
    }
    memcpy(m.u.hello.nonce, cnonce, OC_CTL_CNONCE_LEN);
    m.u.hello.addr.data = addr;
    m.u.hello.addr.len = (uint32_t)addr_len;
    if ((st = expect(ctx, &m, OC_CTL_CHALLENGE, r, 5000, quiet)) != OC_OK)
        return st;
    memcpy(snonce, r->u.challenge.nonce, OC_CTL_NONCE_LEN);
    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_AUTH;
    oc__ctl_rank_mac(key, snonce, cnonce, (uint32_t)ctx->cfg.job, ctx->rank,
                    ctx->size, m.u.auth.mac);
    return expect(ctx, &m, OC_CTL_WELCOME, r, 5000, quiet);
}

oc_status_t oc__agent_init(oc_context_t *ctx, int required)
{
    struct oc__agent *a;
    oc_ctl_key_t key;
    oc_ctl_msg_t r;
    uint8_t cnonce[OC_CTL_CNONCE_LEN], snonce[OC_CTL_NONCE_LEN];
    const void *addr;
    size_t addr_len;
    oc_status_t st;
    int fd;
    const int log_lvl = required ? OC_LOG_ERROR : OC_LOG_INFO;

    /* auto: a quick look; agent: wait as long as a slow start may take */
    st = oc__ctl_connect(ctx->cfg.agent, required ? 5000 : 200, &fd);
    if (st == OC_ERR_CTL_DENIED) {
        oc_log(OC_COMP_RUNTIME, log_lvl, "rank %u: the agent's socket %s "
               "refuses this user (uid %u): EACCES, permission denied",
               ctx->rank, ctx->cfg.agent, (unsigned)getuid());
        return st;
    }
    if (st != OC_OK) {
        oc_log(OC_COMP_RUNTIME, log_lvl, "rank %u: no agent answers at %s%s",
               ctx->rank, ctx->cfg.agent,
               required ? " (start offcored, or set OC_AGENT)" : "");
        return st;
    }
    /* unset and malformed are different mistakes: say which (a key that
     * is there but wrong is logged with its reason by the loader) */
    {
        const char *k = getenv(OC_CTL_JOB_KEY_ENV);
        if (k == NULL || k[0] == '\0') {
            oc_log(OC_COMP_RUNTIME, log_lvl,
                   "rank %u: an agent answers at %s but OC_JOB_KEY is not "
                   "set (the launcher gets it from 'offcore job-key --job "
                   "%llu')", ctx->rank, ctx->cfg.agent,
                   (unsigned long long)ctx->cfg.job);
            close(fd);
            return OC_ERR_CTL_KEY;
        }
    }
    if (oc__ctl_key_load(NULL, OC_CTL_JOB_KEY_ENV, &key) != OC_OK) {
        oc_log(OC_COMP_RUNTIME, log_lvl,
               "rank %u: an agent answers at %s but OC_JOB_KEY is not a "
               "valid key (hex, as 'offcore job-key --job %llu' prints it)",
               ctx->rank, ctx->cfg.agent, (unsigned long long)ctx->cfg.job);
        close(fd);
        return OC_ERR_CTL_KEY;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        close(fd);
        st = OC_ERR_NO_MEMORY;
        goto out_key;
    }
    a->wait_tail = &a->wait_head;
    a->wake_fd = -1;
    oc__eng_out_init(&a->link);
    ctx->agent = a;
    st = oc__ctl_conn_create(fd, ctx->cfg.agent, &a->cc);
    if (st != OC_OK) {
        close(fd);
        goto err;
    }
    oc__tr_worker_address(ctx->worker, &addr, &addr_len);
    /* Registered for the agent's membarrier (util/spsc.h) before HELLO,
     * not after WELCOME: in a threaded process the kernel waits for an
     * RCU grace period (10-15 ms here), which belongs to the rank's
     * start, not to the time after the agent counts the job as ready.
     * Once per process, kept. */
    if (oc__agent_want_shm(ctx))
        a->mb_registered = oc__membarrier_register();
    /* An agent at its connection cap under a flood of connections that
     * never authenticate closes the oldest one still in its handshake to
     * admit each newcomer (util/guard.h): on a loaded host that can be
     * ours.  Closed before WELCOME, the rank connects again, at the back
     * of the queue, a few times before it gives up. */
    for (int attempt = 1;; attempt++) {
        st = hello_auth(ctx, &key, addr, addr_len, snonce, cnonce, &r,
                        attempt < HANDSHAKE_TRIES);
        if (st != OC_ERR_PEER_FAILED || attempt == HANDSHAKE_TRIES)
            break;
        oc_warn(OC_COMP_RUNTIME, "rank %u: the agent at %s closed the "
                "connection during the handshake (at its connection cap, or "
                "an older offcore release that does not say so? this is "
                "liboffcore %s, control protocol version %u): connecting "
                "again (%d of %d)", ctx->rank, ctx->cfg.agent, oc_version(),
                OC_CTL_VERSION, attempt + 1, HANDSHAKE_TRIES);
        oc__ctl_conn_destroy(a->cc);
        a->cc = NULL;
        usleep(10000u * (unsigned)attempt);
        if ((st = oc__ctl_connect(ctx->cfg.agent, 5000, &fd)) != OC_OK)
            break;
        if ((st = oc__ctl_conn_create(fd, ctx->cfg.agent, &a->cc)) !=
            OC_OK) {
            close(fd);
            break;
        }
    }
    if (st != OC_OK)
        goto err;
    a->node = r.u.welcome.node;
    a->thread = r.u.welcome.thread;
    a->coll_thread = r.u.welcome.coll_thread;
    allow_agent_reads(ctx, a);
    if (oc__agent_want_shm(ctx) && (st = oc__agent_shm_attach(ctx)) != OC_OK)
        goto err;
    /* auto: stream where the rank writes straight into shared memory,
     * per-dest over UCX (each measured the faster there: design.md) */
    if (ctx->cfg.agent_mode == OC__AGENT_MODE_AUTO)
        ctx->cfg.agent_mode = a->shm ? OC__AGENT_MODE_STREAM
                                     : OC__AGENT_MODE_PER_DEST;
    a->token = oc__ctl_rank_token(&key, snonce, cnonce);
    if ((st = oc__tr_ep_create(ctx->worker, r.u.welcome.addr.data, 0,
                              &a->ep)) != OC_OK)
        goto err;
    /* the job's collectives meet in one router of the agent, which need
     * not be the one that routes this rank's bundles */
    if (a->coll_thread == a->thread)
        a->coll_ep = a->ep;
    else if ((st = oc__tr_ep_create(ctx->worker, r.u.welcome.coll_addr.data,
                                   0, &a->coll_ep)) != OC_OK)
        goto err;
    /* READY comes when every rank of the job, on every node, is in. */
    st = expect(ctx, NULL, OC_CTL_READY, &r,
                (int)ctx->cfg.bootstrap_timeout_s * 1000, 0);
    if (st != OC_OK)
        goto err;
    a->colls = r.u.ready.coll;
    a->credits = (uint32_t)ctx->cfg.agent_credits;
    if ((st = oc__tr_set_handler(ctx->worker, OC_AM_CREDIT, credit_recv, ctx,
                                0)) != OC_OK)
        goto err;
    oc_info(OC_COMP_RUNTIME, "rank %u/%u: placement agent (%s, node %u, "
            "router %u), mode %s (OC_AGENT_MODE), channel %s "
            "(OC_AGENT_CHANNEL)", ctx->rank, ctx->size,
            ctx->cfg.agent, a->node, a->thread,
            ctx->cfg.agent_mode == OC__AGENT_MODE_STREAM
                ? "stream: every message in one stream, sorted by the agent"
                : "per-dest: bundles aggregated per destination here",
            a->shm ? "shm: rings in shared memory with the agent"
                   : oc__agent_want_shm(ctx) ? "ucx (the agent offered no shared memory)"
                   : ctx->cfg.agent_channel == 1 ? "ucx"
                   : "ucx (the agent is not on a Unix socket)");
    oc__ctl_key_clear(&key);
    return OC_OK;

err:
    agent_fini(ctx);
out_key:
    oc__ctl_key_clear(&key);
    return st;
}

oc_status_t oc__agent_send_raw(oc_context_t *ctx, const void *buf, size_t len,
                               uint64_t token)
{
    if (ctx->agent == NULL)
        return OC_ERR_STATE;
    return oc__tr_send_small(ctx->agent->ep, OC_AM_BUNDLE,
                            token ? token : ctx->agent->token, buf, len);
}

/* A descriptor too long for the small-send pool (an all-to-allv's on a
 * large job): a copy of its own, freed when the send completes. */
typedef struct {
    oc_tr_op_t op;
    uint8_t    msg[];
} coll_send_t;

static void coll_sent(oc_tr_op_t *op, oc_status_t st)
{
    (void)st; /* a failed link fails the job: the control channel says so */
    free(op);
}

static void nudge_sent(oc_tr_op_t *op, oc_status_t st)
{
    (void)op, (void)st; /* a failed link fails the job, as above */
}

static uint32_t agent_pid(const oc_context_t *ctx)
{
    return ctx->agent != NULL ? ctx->agent->pid : 0;
}

static oc_tr_ep_t *agent_coll_ep(oc_context_t *ctx)
{
    return ctx->agent != NULL ? ctx->agent->coll_ep : NULL;
}

static int agent_coll_serves(const oc_context_t *ctx, unsigned kind)
{
    return ctx->agent != NULL && kind < 32 &&
           (ctx->agent->colls & (1u << kind)) != 0;
}

/* On shared memory a descriptor goes into the segment's descriptor ring,
 * which the job's collective router reads every turn: no UCX send here
 * (~0.3 us) and no UCX progress there.  A router that sleeps (idle for
 * milliseconds) is woken by an empty descriptor by UCX, which its worker's
 * event wakes it for (the ring's flag and fence as oc__agent_shm_kick's).
 * Else (no ring, a descriptor too long for a slot, the ring full) by UCX:
 * every descriptor of a job of up to a few hundred ranks fits the worker's
 * small-send pool, which allocates nothing in steady state. */
static oc_status_t agent_coll_send(oc_context_t *ctx, const void *msg,
                                   size_t len)
{
    struct oc__agent *a = ctx->agent;
    coll_send_t *s;
    oc_status_t st;
    uint8_t *slot;

    if (a == NULL)
        return OC_ERR_STATE;
    if (a->shm && len > 0 && len <= a->seg.cup.slot_size &&
        (slot = oc__spsc_reserve(&a->seg.cup)) != NULL) {
        memcpy(slot, msg, len);
        oc__spsc_publish(&a->seg.cup, (uint32_t)len);
        a->ring_descs++;
        if (oc__agent_reader_asleep(a, &a->seg.hdr->coll_sleeping)) {
            /* the descriptor is in: a link that refuses the wake-up fails
             * the job through the control channel, not this collective */
            a->nudges++;
            a->nudge_op.cb = nudge_sent;
            a->nudge_op.token = a->token;
            (void)oc__tr_send(a->coll_ep, OC_AM_COLL, msg, 0, &a->nudge_op);
        }
        return OC_OK;
    }
    if (len <= OC_TR_SMALL_MAX)
        return oc__tr_send_small(ctx->agent->coll_ep, OC_AM_COLL,
                                 ctx->agent->token, msg, len);
    if ((s = malloc(sizeof(*s) + len)) == NULL)
        return OC_ERR_NO_MEMORY;
    s->op.cb = coll_sent;
    s->op.token = ctx->agent->token;
    memcpy(s->msg, msg, len);
    st = oc__tr_send(ctx->agent->coll_ep, OC_AM_COLL, s->msg, len, &s->op);
    if (st == OC_INPROGRESS)
        return OC_OK;
    free(s);
    return st;
}

static int agent_pending(const oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;
    if (a == NULL)
        return 0;
    /* on shared memory, published and not yet taken by the agent too */
    return a->wait_head != NULL ||
           (a->shm && oc__spsc_in_use(&a->seg.up) > 0);
}

static void agent_fini(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;
    if (a == NULL)
        return;
    if (a->cc != NULL) {
        oc_ctl_msg_t m;
        memset(&m, 0, sizeof(m));
        m.type = OC_CTL_BYE;
        m.u.bye.reason = OC_CTL_BYE_NORMAL;
        if (oc__ctl_conn_send(a->cc, &m) == OC_OK)
            oc__ctl_conn_flush(a->cc);
        oc__ctl_conn_destroy(a->cc);
    }
    if (a->coll_ep != a->ep)
        oc__tr_ep_destroy(ctx->worker, a->coll_ep);
    oc__tr_ep_destroy(ctx->worker, a->ep);
    if (a->shm) {
        oc_info(OC_COMP_RUNTIME, "rank %u: shm channel: %llu back-pressured "
                "waits, %llu of them asleep on the doorbell; %llu wake-ups "
                "of the agent; collectives by the rings: %llu descriptors "
                "(%llu woke the agent), %llu completions; publish fence: %s",
                ctx->rank,
                (unsigned long long)a->waits, (unsigned long long)a->slept,
                (unsigned long long)a->kicks,
                (unsigned long long)a->ring_descs,
                (unsigned long long)a->nudges,
                (unsigned long long)a->ring_dones,
                oc__agent_fences(a) ? "the agent's (membarrier)" : "own");
        if (ctx->stream != NULL && ctx->stream->ring == &a->seg.up) {
            /* an open slot goes with the segment (finalize flushed what
             * counts; a failed context's leftovers go nowhere anyway) */
            oc_eng_out_t *o = ctx->stream;
            o->buf = NULL;
            o->wp = o->end = o->dcol = NULL;
            o->item_len = OC_ENG_NO_ITEM;
            o->count = 0;
            o->ring = NULL;
        }
    }
    if (ctx->eng != NULL) {
        /* what waited for credit goes back; sends the worker still holds
         * must not find the link once it is freed */
        while (a->wait_head != NULL) {
            oc_eng_buf_t *b = a->wait_head;
            a->wait_head = b->next;
            oc__eng_buf_put(ctx->eng, b);
        }
        oc__eng_out_retire(ctx->eng, &a->link);
    }
    if (a->shm) {
        oc__shmseg_unmap(&a->seg);
        a->shm = 0;
    }
    if (a->wake_fd >= 0)
        close(a->wake_fd);
    free(a);
    ctx->agent = NULL;
}

/* The rank's part of a wave: report (sent, delivered) once per round when
 * nothing is left to deliver here, then wait for the agents' verdict. */
static oc_status_t agent_quiesce_step(oc_context_t *ctx)
{
    struct oc__agent *a = ctx->agent;

    ctl_poll(ctx);
    if (ctx->failed != OC_OK)
        return ctx->failed;
    if (a->q_done) {
        a->q_done = 0;
        a->q_sent = 0;
        ctx->q.active = 0;
        ctx->q.epoch++;
        ctx->q.round = 0;
        return OC_OK;
    }
    if (!a->q_sent && ctx->rx.count == 0 && a->wait_head == NULL) {
        oc_ctl_msg_t m;
        memset(&m, 0, sizeof(m));
        m.type = OC_CTL_COUNTS;
        m.u.counts.job = (uint32_t)ctx->cfg.job;
        m.u.counts.epoch = ctx->q.epoch;
        m.u.counts.round = ctx->q.round;
        m.u.counts.sent = ctx->c.msgs_sent;
        m.u.counts.delivered = ctx->c.msgs_delivered;
        if (oc__ctl_conn_send(a->cc, &m) != OC_OK) {
            ctx->failed = OC_ERR_PEER_FAILED;
            return ctx->failed;
        }
        oc__ctl_conn_flush(a->cc);
        a->q_sent = 1;
    }
    return OC_INPROGRESS;
}

/* The agent needs no barrier: what the rank sent is acknowledged by
 * credits; say goodbye (agent_fini) once nothing is left. */
static oc_status_t agent_finalize(oc_context_t *ctx)
{
    oc__flush_all(ctx, OC_ENG_FLUSH_EXPLICIT);
    while ((ctx->eng->inflight > 0 || agent_pending(ctx)) &&
           ctx->failed == OC_OK)
        oc__progress(ctx);
    return OC_OK;
}

const oc__placement_t oc__placement_agent = {
    .name = "agent",
    .submit = agent_submit,
    .progress = agent_progress,
    .wait = oc__agent_wait,
    .pending = agent_pending,
    .quiesce_step = agent_quiesce_step,
    .finalize = agent_finalize,
    .fini = agent_fini,
    .coll_send = agent_coll_send,
    .coll_ep = agent_coll_ep,
    .coll_serves = agent_coll_serves,
    .peer_pid = agent_pid,
    .peer_gone = agent_gone,
};
