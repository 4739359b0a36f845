/*
 * context.c — liboffcore context life cycle: configuration, transport
 * start-up, address exchange, and tear-down.
 */
#include "util/defaults.h"
#include "runtime.h"

#include "ctl/ctl.h"
#include "util/log.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

static const char *const placement_values[] = {"inline", "agent", "auto", NULL};
static const char *const agent_mode_values[] = {"per-dest", "stream", "auto",
                                                NULL};
static const char *const agent_channel_values[] = {"shm", "ucx", NULL};

const oc_cfg_field_t oc__runtime_config_table[] = {
    {"PLACEMENT", OC_CFG_ENUM, "auto",
     "Where message routing runs: 'inline' in this library on the "
     "application's cores; 'agent' through the node's offcored (OC_AGENT; "
     "needs OC_JOB_KEY), and oc_init fails with the reason's status "
     "(e.g. OC_ERR_CTL_AUTH) when it cannot be used: what a job that "
     "requires the agent sets; 'auto' uses an agent when one answers and "
     "the job is admitted, else inline: when an agent answers but cannot "
     "be used (no or wrong key, no answer in time), or none answers while "
     "OC_JOB_KEY is set, it warns 'falling back to inline because ...'; "
     "no agent and no key (plain inline use) is said at info level.",
     offsetof(oc__config_t, placement), 0, 0, placement_values},
    {"BUNDLE_SIZE", OC_CFG_SIZE, "8000",
     "Bytes per aggregation buffer (one bundle). 8000 fits one UCX "
     "shared-memory segment (UCX_MM_SEG_SIZE, 8256 with headers), so UCX "
     "hands bundles over without reassembly (docs/results.md has what "
     "8000 and 64K measured). Over TCP or RDMA between nodes larger "
     "bundles (64K) pay more. The largest "
     "message is this minus 48 bytes, rounded down to 8 (at most 65535).",
     offsetof(oc__config_t, bundle_size), 256, 16u << 20, NULL},
    {"BUFFERS_PER_DEST", OC_CFG_UINT, "4",
     "Aggregation buffers in the pool per destination rank. One fills while "
     "others are in flight; 4 keeps the transport busy without growing "
     "memory much (ranks x this x BUNDLE_SIZE bytes per context).",
     offsetof(oc__config_t, buffers_per_dest), 1, 1024, NULL},
    {"FLUSH_TIMEOUT_US", OC_CFG_UINT, "1000",
     "A buffer is sent at the first poll this many microseconds after its "
     "first message, full or not, bounding latency. 1 ms: long enough to "
     "aggregate under load, short next to any phase of a real application.",
     offsetof(oc__config_t, flush_timeout_us), 0, 60000000, NULL},
    {"POLL_BUDGET", OC_CFG_UINT, "0",
     "Most bundles one oc_poll delivers (0: all that are queued). Lower it "
     "to bound the time a poll spends in handlers.",
     offsetof(oc__config_t, poll_budget), 0, UINT32_MAX, NULL},
    {"AGENT", OC_CFG_STRING, OC_DEFAULT_AGENT_ADDR,
     "The agent's control address (unix:/PATH or tcp:HOST:PORT), as given "
     "to offcored --listen.",
     offsetof(oc__config_t, agent), 0, 0, NULL},
    {"AGENT_CREDITS", OC_CFG_UINT, "32",
     "Bundles a rank may have at its agent not yet routed. Bounds the "
     "agent's memory per rank and carries back-pressure to oc_send.",
     offsetof(oc__config_t, agent_credits), 1, 65536, NULL},
    {"AGENT_MODE", OC_CFG_ENUM, "auto",
     "How a rank hands its messages to the agent (placement agent). "
     "'per-dest': the rank aggregates per destination as inline does and "
     "the agent forwards whole bundles. 'stream': every message, whatever "
     "its destination, is appended to one buffer toward the agent, which "
     "sorts them per next hop and per local rank (the routing work leaves "
     "the rank: on the shared-memory channel a burst is two copies into the "
     "ring's slot). 'auto' (the default): stream on the shared-memory "
     "channel, per-dest over UCX, the faster of the two on each "
     "(docs/design.md, docs/results.md). "
     "OC_LOG=runtime:info says which mode is in use.",
     offsetof(oc__config_t, agent_mode), 0, 0, agent_mode_values},
    {"AGENT_CHANNEL", OC_CFG_ENUM, "shm",
     "How bundles cross between a rank and its agent (placement agent). "
     "'shm': where the agent listens on a Unix socket (the same host), it "
     "hands the authenticated rank a shared-memory segment and bundles "
     "are written into and read from rings in it in place: no UCX call "
     "and no copy on that hop, back-pressure when a ring is full (the "
     "rank sleeps on a futex the agent rings). 'ucx': over UCX with a "
     "credit window (OC_AGENT_CREDITS), as for an agent on another host, "
     "which always uses UCX. OC_LOG=runtime:info says which is in use.",
     offsetof(oc__config_t, agent_channel), 0, 0, agent_channel_values},
    {"JOB", OC_CFG_UINT, "0",
     "Job id stamped on every bundle; bundles of another job are rejected. "
     "Launchers that share agents between jobs set it.",
     offsetof(oc__config_t, job), 0, UINT32_MAX, NULL},
    {"BOOTSTRAP_DIR", OC_CFG_STRING, "",
     "Without MPI or another all-gather, ranks exchange addresses through "
     "files in this directory (shared by all ranks; one per job run). "
     "Empty: a bootstrap must be given by the application.",
     offsetof(oc__config_t, bootstrap_dir), 0, 0, NULL},
    {"BOOTSTRAP_TIMEOUT_S", OC_CFG_UINT, "60",
     "Seconds to wait for every rank during a file bootstrap before "
     "failing with OC_ERR_BOOTSTRAP.",
     offsetof(oc__config_t, bootstrap_timeout_s), 1, 86400, NULL},
    {"REQUIRE_TRANSPORT", OC_CFG_STRING, "",
     "Fail oc_init with OC_ERR_TRANSPORT_REQUIRED unless every peer "
     "connection uses one of these transports: classes (rdma, tcp, sm) or "
     "UCX names (rc_mlx5, dc_mlx5, tcp), comma-separated. Shared memory "
     "and self to a peer on the same host always pass; a network class "
     "also needs UCX to offer it toward other hosts. Empty: no check "
     "(the transports are still logged at OC_LOG=runtime:info and counted).",
     offsetof(oc__config_t, require_transport), 0, 0, NULL},
    {"STALL_WARN_S", OC_CFG_UINT, "5",
     "In the agent placement, warn (once per stall) when the rank has "
     "bundles in flight or waiting for credit and the agent has moved "
     "none of them for this many seconds: a stopped or starved agent "
     "otherwise leaves ranks spinning without a word. 5 s: far above any "
     "healthy pause (milliseconds), short enough to be seen. 0: never.",
     offsetof(oc__config_t, stall_warn_s), 0, 86400, NULL},
    OC_CFG_END};

static oc_status_t env_u32(const char *name, uint32_t *out)
{
    const char *v = getenv(name);
    char *end;
    unsigned long x;
    if (v == NULL)
        return OC_ERR_INVALID_PARAM;
    x = strtoul(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x > UINT32_MAX) {
        oc_error(OC_COMP_RUNTIME, "%s='%s' is not a number", name, v);
        return OC_ERR_CONFIG;
    }
    *out = (uint32_t)x;
    return OC_OK;
}

/* The aggregation engine and its pool, once the placement is known. */
static oc_status_t engine_create(oc_context_t *ctx)
{
    oc_eng_params_t p;
    oc_status_t st;

    memset(&p, 0, sizeof(p));
    p.bundle_size = ctx->cfg.bundle_size & ~(uint64_t)7;
    /* a bundle must fit a slot of the shared-memory channel */
    if (oc__agent_max_bundle(ctx) != 0 &&
        p.bundle_size > oc__agent_max_bundle(ctx)) {
        p.bundle_size = oc__agent_max_bundle(ctx) & ~(uint64_t)7;
        ctx->cfg.bundle_size = p.bundle_size;
        ctx->max_msg = (p.bundle_size - OC_WIRE_HDR_LEN -
                        OC_WIRE_MSG_HDR_LEN) & ~(size_t)7;
        if (ctx->max_msg > OC_WIRE_MAX_MSG)
            ctx->max_msg = OC_WIRE_MAX_MSG;
        oc_info(OC_COMP_RUNTIME, "rank %u: bundles of %llu bytes at most "
                "(the agent's shared-memory slots)", ctx->rank,
                (unsigned long long)p.bundle_size);
    }
    /* both lanes of a destination draw on its share of the pool; a
     * stream needs room for its whole credit window besides */
    p.nbufs = (uint64_t)ctx->size * ctx->cfg.buffers_per_dest;
    if (ctx->stream != NULL && p.nbufs < ctx->cfg.agent_credits + 2)
        p.nbufs = ctx->cfg.agent_credits + 2;
    p.flush_timeout_us = ctx->cfg.flush_timeout_us;
    p.max_inflight = 0; /* credits (agent) or the pool bound a rank */
    p.src_hop = ctx->rank;
    p.dirty_cap = 2 * ctx->size + 1;
    p.reserve = true;
    p.handoff = oc__handoff;
    p.send_failed = oc__send_failed;
    p.arg = ctx;
    p.name = ctx->name;
    p.log_comp = OC_COMP_RUNTIME;
    if ((st = oc__eng_create(&p, &ctx->eng)) != OC_OK)
        return st;
    ctx->rx.eng = ctx->eng;
    for (uint32_t i = 0; i < 2 * ctx->size; i++) {
        oc__eng_out_init(&ctx->dests[i]);
        ctx->dests[i].job = (uint32_t)ctx->cfg.job;
    }
    return OC_OK;
}

static void context_free(oc_context_t *ctx)
{
    if (ctx->pl != NULL)
        ctx->pl->fini(ctx);
    if (ctx->rx.q != NULL && ctx->worker != NULL)
        oc__rx_drain_release(ctx);
    oc__tr_worker_destroy(ctx->worker);
    oc__ext_fini(ctx); /* after the worker: no callback into it can run */
    oc__tr_context_destroy(ctx->tr);
    oc__quiesce_fini(ctx);
    oc__eng_ring_fini(&ctx->rx);
    oc__eng_destroy(ctx->eng);
    free(ctx->dests);
    free(ctx->eps);
    free(ctx);
}

/* Is the node's agent another user's?  Its Unix socket's owner says so
 * before anything is connected: the UCX context must know (transport.h,
 * oc__tr_context_create_xuser).  No agent, a TCP one, or no job key
 * with OC_PLACEMENT=auto: no. */
static int agent_other_user(const oc_context_t *ctx)
{
    const char *a = ctx->cfg.agent;
    struct stat sb;

    if (ctx->cfg.placement == 0) /* inline */
        return 0;
    /* auto without a key never uses the agent: a plain inline job keeps
     * UCX's shared memory between its ranks */
    if (ctx->cfg.placement == 2) {
        const char *k = getenv(OC_CTL_JOB_KEY_ENV);
        if (k == NULL || k[0] == '\0')
            return 0;
    }
    if (strncmp(a, "unix:", 5) == 0)
        a += 5;
    else if (a[0] != '/')
        return 0;
    return stat(a, &sb) == 0 && S_ISSOCK(sb.st_mode) &&
           sb.st_uid != geteuid();
}

/* Why the agent placement could not be had, said once: an error when it
 * was required (OC_PLACEMENT=agent), else the fall-back to inline, at the
 * default level when an agent answered but could not be used (a wrong or
 * missing key, a silent agent), at info when none answers at all. */
static void placement_failed(const oc_context_t *ctx, oc_status_t st)
{
    char why[OC_CFG_STRLEN + 256];
    int quiet = 0;

    switch (st) {
    case OC_ERR_CTL_CONNECT:
    case OC_ERR_CTL_ADDR: {
        /* With a job key the launcher meant the agent (a key admits to
         * nothing else): its absence is news.  Without one, auto on a
         * machine with no agent is the plain inline case. */
        const char *k = getenv(OC_CTL_JOB_KEY_ENV);
        snprintf(why, sizeof(why), "no agent answers at %s", ctx->cfg.agent);
        quiet = k == NULL || k[0] == '\0';
        break;
    }
    case OC_ERR_CTL_DENIED:
        snprintf(why, sizeof(why), "the agent's socket %s refuses this user "
                 "(uid %u): EACCES, permission denied (offcored makes it "
                 "OC_AGENT_SOCKET_MODE, 0666 by default; check the socket's "
                 "and its directory's modes)", ctx->cfg.agent,
                 (unsigned)getuid());
        break;
    case OC_ERR_CTL_VERSION:
        snprintf(why, sizeof(why), "the agent at %s is another offcore "
                 "release (its control protocol version and this library's "
                 "are logged above): run one release on the node",
                 ctx->cfg.agent);
        break;
    case OC_ERR_CTL_KEY: {
        /* no key at all: the launcher did not mean the agent (a plain
         * inline job on a node that has one): not news */
        const char *k = getenv(OC_CTL_JOB_KEY_ENV);
        quiet = k == NULL || k[0] == '\0';
        snprintf(why, sizeof(why), "an agent answers at %s but OC_JOB_KEY is "
                 "%s", ctx->cfg.agent, quiet ? "not set" : "not a valid key");
        break;
    }
    case OC_ERR_CTL_AUTH:
        snprintf(why, sizeof(why), "the agent at %s refused the job (wrong "
                 "OC_JOB_KEY for OC_JOB=%llu?)", ctx->cfg.agent,
                 (unsigned long long)ctx->cfg.job);
        break;
    case OC_ERR_CTL_TIMEOUT:
        snprintf(why, sizeof(why), "the agent at %s did not answer in time "
                 "(stopped or overloaded?)", ctx->cfg.agent);
        break;
    default:
        snprintf(why, sizeof(why), "the agent at %s could not be used",
                 ctx->cfg.agent);
        break;
    }
    if (ctx->cfg.placement == 1)
        oc_error(OC_COMP_RUNTIME, "rank %u/%u: OC_PLACEMENT=agent requires "
                 "the agent, and %s: failing with %s", ctx->rank, ctx->size,
                 why, oc_status_string(st));
    else if (quiet)
        oc_info(OC_COMP_RUNTIME, "rank %u/%u: OC_PLACEMENT=auto: placement "
                "inline because %s", ctx->rank, ctx->size, why);
    else
        oc_warn(OC_COMP_RUNTIME, "rank %u/%u: OC_PLACEMENT=auto: falling "
                "back to inline because %s (%s; OC_PLACEMENT=agent makes "
                "this an error)", ctx->rank, ctx->size, why,
                oc_status_string(st));
}

OC_API oc_status_t oc_init(const oc_context_params_t *params,
                           oc_context_t **ctx_p)
{
    oc_context_t *ctx;
    oc_status_t st;

    if (params == NULL || ctx_p == NULL ||
        !(((params->field_mask & OC_PARAM_HANDLER) && params->handler) ||
          ((params->field_mask & OC_PARAM_BURST_HANDLER) &&
           params->burst_handler))) {
        oc_error(OC_COMP_RUNTIME, "oc_init: a message handler is required");
        return OC_ERR_INVALID_PARAM;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return OC_ERR_NO_MEMORY;
    st = oc__config_load(oc__runtime_config_table, &ctx->cfg);
    if (st != OC_OK)
        goto err;
    snprintf(ctx->name, sizeof(ctx->name), "%s",
             (params->field_mask & OC_PARAM_NAME) && params->name
                 ? params->name : "offcore");

    if (params->field_mask & OC_PARAM_RANK)
        ctx->rank = params->rank;
    else if ((st = env_u32("OC_RANK", &ctx->rank)) != OC_OK)
        goto err_bootstrap;
    if (params->field_mask & OC_PARAM_SIZE)
        ctx->size = params->size;
    else if ((st = env_u32("OC_SIZE", &ctx->size)) != OC_OK)
        goto err_bootstrap;
    if (ctx->size == 0 || ctx->rank >= ctx->size ||
        ctx->size >= OC_WIRE_MAX_RANKS) {
        oc_error(OC_COMP_RUNTIME, "oc_init: rank %u of size %u is not valid",
                 ctx->rank, ctx->size);
        st = OC_ERR_INVALID_PARAM;
        goto err;
    }
    /* a misspelt OC_* name, said once per process by rank 0 (every rank
     * has the same environment): util/envnames.c lists them all */
    if (ctx->rank == 0) {
        static atomic_flag checked = ATOMIC_FLAG_INIT;
        if (!atomic_flag_test_and_set(&checked))
            oc__env_check("liboffcore");
    }
    if ((params->field_mask & OC_PARAM_ALLGATHER) && params->allgather) {
        ctx->allgather = params->allgather;
        ctx->allgather_arg = params->allgather_arg;
    } else if (ctx->cfg.bootstrap_dir[0] != '\0') {
        ctx->allgather = oc__file_allgather;
        ctx->allgather_arg = ctx;
    } else if (ctx->size == 1) {
        ctx->allgather = oc__file_allgather; /* size 1 needs no exchange */
        ctx->allgather_arg = ctx;
    } else if (ctx->cfg.placement == 0) {
        oc_error(OC_COMP_RUNTIME,
                 "oc_init: no bootstrap: use oc_init_mpi() (offcore/mpi.h), "
                 "pass an allgather, or set OC_BOOTSTRAP_DIR");
        st = OC_ERR_BOOTSTRAP;
        goto err;
    } /* else the agent wires the job up; without one, fail below */

    ctx->max_msg = (ctx->cfg.bundle_size - OC_WIRE_HDR_LEN -
                    OC_WIRE_MSG_HDR_LEN) & ~(size_t)7;
    if (ctx->max_msg > OC_WIRE_MAX_MSG)
        ctx->max_msg = OC_WIRE_MAX_MSG;
    ctx->failed = OC_OK;
    ctx->handler = (params->field_mask & OC_PARAM_HANDLER) ? params->handler
                                                           : NULL;
    if (params->field_mask & OC_PARAM_BURST_HANDLER)
        ctx->burst_handler = params->burst_handler;
    ctx->handler_arg = params->handler_arg;
    /* cache-line aligned: an outlet's hot fields (engine.h: the first 24
     * bytes, read for every message sent) then never straddle two lines */
    if (posix_memalign((void **)&ctx->dests, 64,
                       2 * (size_t)ctx->size * sizeof(*ctx->dests)) != 0)
        ctx->dests = NULL;
    else
        memset(ctx->dests, 0, 2 * (size_t)ctx->size * sizeof(*ctx->dests));
    ctx->eps = calloc(ctx->size, sizeof(*ctx->eps));
    if (ctx->dests == NULL || ctx->eps == NULL ||
        oc__eng_ring_init(&ctx->rx, NULL, 256) != OC_OK) {
        st = OC_ERR_NO_MEMORY;
        goto err;
    }
    for (uint32_t i = 0; i < 2 * ctx->size; i++)
        oc__eng_out_init(&ctx->dests[i]);
    if ((st = oc__quiesce_init(ctx)) != OC_OK)
        goto err;
    if ((st = agent_other_user(ctx) ? oc__tr_context_create_xuser(&ctx->tr)
                                    : oc__tr_context_create(&ctx->tr)) != OC_OK)
        goto err;
    if ((st = oc__tr_worker_create(ctx->tr, &ctx->worker)) != OC_OK)
        goto err;
    if ((st = oc__transport_precheck(ctx)) != OC_OK)
        goto err;
    if ((st = oc__tr_set_handler(ctx->worker, OC_AM_BUNDLE, oc__bundle_recv,
                                ctx, 1)) != OC_OK)
        goto err;
    if ((st = oc__tr_set_handler(ctx->worker, OC_AM_CONTROL, oc__control_recv,
                                ctx, 0)) != OC_OK)
        goto err;
    if ((st = oc__ext_init(ctx)) != OC_OK)
        goto err;
    if (ctx->cfg.placement != 0) { /* agent, or auto */
        st = oc__agent_init(ctx, ctx->cfg.placement == 1);
        if (st != OC_OK) {
            placement_failed(ctx, st);
            if (ctx->cfg.placement == 1)
                goto err;
        }
    }
    ctx->pl = ctx->agent != NULL ? &oc__placement_agent
                                 : &oc__placement_inline;
    if (ctx->pl == &oc__placement_agent &&
        ctx->cfg.agent_mode == OC__AGENT_MODE_STREAM) {
        oc_eng_out_t *o = &ctx->stream_out;
        oc__eng_out_init(o);
        o->mixed_only = 1;
        o->column = 1;
        o->flags = OC_WIRE_F_STREAM;
        o->src = ctx->rank;
        o->job = (uint32_t)ctx->cfg.job;
        ctx->stream = o;
        oc__agent_stream_setup(ctx, o);
    }
    if ((st = engine_create(ctx)) != OC_OK)
        goto err;
    if (ctx->pl == &oc__placement_inline && ctx->allgather == NULL) {
        oc_error(OC_COMP_RUNTIME,
                 "oc_init: no agent answered and there is no bootstrap for "
                 "the inline placement: use oc_init_mpi(), pass an "
                 "allgather, or set OC_BOOTSTRAP_DIR");
        st = OC_ERR_BOOTSTRAP;
        goto err;
    }
    if (ctx->pl == &oc__placement_inline) {
        oc_info(OC_COMP_RUNTIME, "rank %u/%u: placement inline (%s)",
                ctx->rank, ctx->size,
                ctx->cfg.placement == 0 ? "OC_PLACEMENT=inline"
                                        : "auto: no usable agent");
        if ((st = oc__inline_wireup(ctx)) != OC_OK)
            goto err;
        if ((st = oc__ext_wired(ctx)) != OC_OK)
            goto err;
    }
    if ((st = oc__transport_watch(ctx)) != OC_OK)
        goto err;
    *ctx_p = ctx;
    return OC_OK;

err_bootstrap:
    if (st == OC_ERR_INVALID_PARAM) {
        oc_error(OC_COMP_RUNTIME, "oc_init: rank/size not given: pass them "
                                  "in params, use oc_init_mpi(), or set "
                                  "OC_RANK and OC_SIZE");
        st = OC_ERR_BOOTSTRAP;
    }
err:
    context_free(ctx);
    return st;
}

OC_API oc_status_t oc_finalize(oc_context_t *ctx)
{
    oc_status_t st = OC_OK;

    if (ctx == NULL)
        return OC_OK;
    if (ctx->in_handler)
        return OC_ERR_STATE;
    if (ctx->failed == OC_OK)
        st = ctx->pl->finalize(ctx);
    oc__file_bootstrap_cleanup(ctx);
    context_free(ctx);
    return st;
}

OC_API uint32_t oc_rank(const oc_context_t *ctx) { return ctx->rank; }
OC_API uint32_t oc_size(const oc_context_t *ctx) { return ctx->size; }
OC_API size_t oc_max_message(const oc_context_t *ctx) { return ctx->max_msg; }
OC_API const char *oc_placement(const oc_context_t *ctx)
{
    return ctx->pl->name;
}

OC_API oc_status_t oc_counters_get(const oc_context_t *ctx, oc_counters_t *out,
                                   size_t size)
{
    oc_counters_t c;
    oc_eng_counters_t e;

    if (ctx == NULL || out == NULL || size == 0 ||
        size % sizeof(uint64_t) != 0)
        return OC_ERR_INVALID_PARAM;
    c = ctx->c;
    oc__eng_counters(ctx->eng, &e);
    c.flush_full = e.flush[OC_ENG_FLUSH_FULL];
    c.flush_timeout = e.flush[OC_ENG_FLUSH_TIMEOUT];
    c.flush_idle = e.flush[OC_ENG_FLUSH_IDLE];
    c.flush_explicit = e.flush[OC_ENG_FLUSH_EXPLICIT];
    c.reserve_buffers = e.reserve_buffers;
    /* offcore.h: the caller's struct may be an older (shorter) or a newer
     * (longer) version of ours: copy the common prefix, zero the rest. */
    memcpy(out, &c, size < sizeof(c) ? size : sizeof(c));
    if (size > sizeof(c))
        memset((char *)out + sizeof(c), 0, size - sizeof(c));
    return OC_OK;
}
