/*
 * runtime/ext.h — what liboffcore's runtime offers the layers compiled
 * into the library above it (src/coll): lifecycle hooks, a progress hook,
 * and the few facts of a context they need.  The context's state
 * (runtime.h) stays private to src/runtime; an extension sees the context
 * only through these calls, as UCC sees UCP.
 *
 * An extension registers once, at load time (OC_EXT_REGISTER, a
 * constructor), and then takes part in every context made afterwards:
 * init at oc_init, wired once the inline placement's ranks are connected,
 * fini when the context goes.  Its progress hook, set when it has work in
 * flight, runs in every progress call of that context; a context with no
 * hook pays nothing for it.
 *
 * Threading: registration runs before main (or at dlopen); every other
 * call belongs to the context's thread, like the context itself.
 */
#ifndef OC_RUNTIME_EXT_H
#define OC_RUNTIME_EXT_H

#include "transport/transport.h"

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>

/** At most this many extensions, and progress hooks per context. */
#define OC_EXT_MAX 4

/** An extension's lifecycle.  Every hook is optional. */
typedef struct oc_ext {
    const char *name;
    /** oc_init, once the context's worker exists and before the placement
     *  is chosen: set *@p state_p to the extension's state for @p ctx
     *  (oc__ext_state() hands it back).  An error fails oc_init. */
    oc_status_t (*init)(oc_context_t *ctx, void **state_p);
    /** oc_init, inline placement, once every rank is connected: a
     *  collective call (every rank of the context makes it; it may use
     *  oc__ext_allgather()).  An error fails oc_init. */
    oc_status_t (*wired)(oc_context_t *ctx, void *state);
    /** Whether the node's agent should be let read and write this
     *  process's memory for the extension (process_vm_readv/writev):
     *  asked once while the agent placement connects. */
    int (*agent_access)(const oc_context_t *ctx, void *state);
    /** The context is going, its worker already destroyed (no transport
     *  callback can run any more): free @p state. */
    void (*fini)(oc_context_t *ctx, void *state);
} oc_ext_t;

/** Register @p ext (static storage) for every context made from now on.
 *  Called from a constructor (OC_EXT_REGISTER); more than OC_EXT_MAX
 *  aborts the load, said on stderr. */
void oc__ext_register(const oc_ext_t *ext);

#define OC_EXT_REGISTER(ext)                                                  \
    __attribute__((constructor)) static void oc__ext_ctor_##ext(void)         \
    {                                                                         \
        oc__ext_register(&(ext));                                             \
    }

/** @p ext's state for @p ctx (what its init hook set); NULL if none. */
void *oc__ext_state(const oc_context_t *ctx, const oc_ext_t *ext);

/** Run @p fn(@p arg) in every progress call of @p ctx from now on (after
 *  the transport's and the placement's progress, before delivery), for
 *  the context's life.  @return OC_OK, or OC_ERR_NO_RESOURCE when
 *  OC_EXT_MAX hooks are set. */
oc_status_t oc__ext_progress_hook(oc_context_t *ctx, void (*fn)(void *arg),
                                  void *arg);

/** One round of progress of @p ctx (oc_poll's, without its checks).
 *  @return messages delivered. */
int oc__ext_progress(oc_context_t *ctx);

/* The context's facts.  Constant for its life unless said otherwise. */
uint32_t oc__ext_rank(const oc_context_t *ctx);
uint32_t oc__ext_size(const oc_context_t *ctx);
uint64_t oc__ext_job(const oc_context_t *ctx);
/** OC_OK, or the error that failed the context (changes once). */
oc_status_t oc__ext_failed(const oc_context_t *ctx);
/** Whether a message handler of @p ctx is running now. */
int oc__ext_in_handler(const oc_context_t *ctx);
oc_tr_worker_t *oc__ext_worker(const oc_context_t *ctx);
/** The inline placement's endpoint to rank @p peer (NULL before wire-up
 *  or in the agent placement); oc__ext_has_peers(): the table exists. */
oc_tr_ep_t *oc__ext_peer_ep(const oc_context_t *ctx, uint32_t peer);
int oc__ext_has_peers(const oc_context_t *ctx);
/** The bootstrap's all-gather of @p len bytes from every rank (rank
 *  order), usable during oc_init (the wired hook).  OC_ERR_UNSUPPORTED
 *  when the context has none. */
oc_status_t oc__ext_allgather(oc_context_t *ctx, const void *sendbuf,
                              void *recvbuf, size_t len);
int oc__ext_has_allgather(const oc_context_t *ctx);

/* The agent placement's side of the collectives (its placement ops;
 * without an agent: nothing served, OC_ERR_STATE). */
/** Whether the context talks to a node agent. */
int oc__ext_agent(const oc_context_t *ctx);
/** A collective's descriptor to the agent, with this rank's token.
 *  @p msg is copied (the worker's small-send pool: no allocation in steady
 *  state) and reusable on return. */
oc_status_t oc__ext_agent_coll_send(oc_context_t *ctx, const void *msg,
                                    size_t len);
/** The endpoint to the agent's router that runs the job's collectives. */
oc_tr_ep_t *oc__ext_agent_coll_ep(oc_context_t *ctx);
/** Whether the agent serves collectives of wire/colld.h kind @p kind. */
int oc__ext_agent_coll_serves(const oc_context_t *ctx, unsigned kind);
/** The agent's pid as the kernel gave it (Unix control socket), else 0. */
uint32_t oc__ext_agent_pid(const oc_context_t *ctx);
/** Whether the agent's control connection has ended (polls it). */
int oc__ext_agent_gone(oc_context_t *ctx);

#endif /* OC_RUNTIME_EXT_H */
