/*
 * rb_kernel.h — what router-bench (router_bench.c) asks of a routing
 * kernel, and nothing more: the contract between the harness and a module
 * (rb_kernel.c) built from some tree's src/agent/router sources.
 *
 * The harness is built once, from this tree; the module may be built from
 * another commit's router (bench/run-router-bench.sh builds REV's beside
 * this one), and the two are loaded side by side into one process
 * (dlopen, RTLD_LOCAL, each module linked -Bsymbolic with its own copy of
 * the engine, wire and util code) so that their runs interleave over the
 * same bundles.  So this header is the whole interface: plain C types, a
 * version number, no offcore header.  Change it only by raising
 * RB_KERNEL_ABI.
 */
#ifndef RB_KERNEL_H
#define RB_KERNEL_H

#include <stdint.h>

#define RB_KERNEL_ABI 2

/** One pre-made bundle: a rank's stream toward its agent (wire.h). */
typedef struct {
    const uint8_t *data; /* 8-byte aligned; read in place, never written */
    uint32_t       len;
    uint32_t       src;  /* the rank that sent it (its sender token) */
} rb_bundle_t;

/** Where the router's deliveries go: called for every bundle it hands to
 *  local rank @p rank — on the routing thread (the transport seam), or on
 *  the ranks' thread, which read their delivery rings (shared memory).  @p data is valid only
 *  during the call.  Returns 1 when the run is complete (every message
 *  expected has arrived), else 0. */
typedef struct {
    int  (*deliver)(void *arg, uint32_t rank, const uint8_t *data,
                    uint32_t len);
    void  *arg;
} rb_sink_t;

typedef struct {
    uint32_t abi;          /* RB_KERNEL_ABI */
    uint32_t nranks;       /* one job of nranks ranks, all local */
    uint32_t job;
    uint32_t bundle_size;  /* the router's bundle buffers (bytes) */
    uint32_t buffers;      /* its pool */
    uint32_t max_inflight;
    uint32_t flush_timeout_us;
    uint32_t window;       /* bundles handed to the router and not yet
                              released by it, at most (transport seam) */
    uint32_t shm_slots;    /* 0: bundles through the transport seam;
                              else every rank on a shared-memory channel
                              (wire/shmseg.h) of rings of this many slots
                              of bundle_size, written and read by the
                              ranks' thread (rb_kernel_t.run's caller) */
} rb_params_t;

/** One run: what the routing thread did, in its own time. */
typedef struct {
    uint64_t ns;           /* first bundle handed over .. last delivery */
    uint64_t cpu_ns;       /* the routing thread's CPU time in that span
                              (CLOCK_THREAD_CPUTIME_ID): what a shared
                              machine's other work disturbs least */
    uint64_t bundles_out;  /* deliveries */
    uint64_t rejects;      /* the router's counters: must stay 0 */
    uint64_t undeliverable;
    uint64_t turns;        /* turns of the routing thread's loop */
    /* shared memory: the turns that routed and delivered nothing (the
     * thread waiting for the ranks' thread, which shares the machine),
     * and the CPU time of the other turns: the routing thread's busy
     * time (the transport seam: cpu_ns) */
    uint64_t idle_turns;
    uint64_t busy_cpu_ns;
} rb_run_t;

typedef struct {
    uint32_t abi;          /* RB_KERNEL_ABI */
    /** Make a router of one job with @p p->nranks local ranks, its thread
     *  started.  0 or a negative error. */
    int  (*create)(const rb_params_t *p, void **k);
    /** Hand @p n bundles to the router, in order, at most p->window not
     *  yet released at a time (shared memory: each into its rank's ring,
     *  as far as the ring has room, while the caller's thread reads the
     *  ranks' delivery rings); return when @p sink says the run is
     *  complete (0), or after @p timeout_ms (-1).  Not thread-safe; one
     *  run at a time. */
    int  (*run)(void *k, const rb_bundle_t *feed, uint64_t n,
                const rb_sink_t *sink, uint32_t timeout_ms, rb_run_t *out);
    /** Wait (at most @p timeout_ms) until the routing thread sleeps, so
     *  that it does not spin beside the next measurement.  1 asleep. */
    int  (*quiesce)(void *k, uint32_t timeout_ms);
    void (*destroy)(void *k);
} rb_kernel_t;

/** The one symbol a module exports. */
typedef const rb_kernel_t *(*rb_kernel_fn)(void);
#define RB_KERNEL_SYMBOL "rb_kernel"

#endif
