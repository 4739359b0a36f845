/*
 * agent_state.h — the agent placement's state, shared by agent.c (the
 * placement: handshake, sends, credits, quiesce) and agent_shm.c (its
 * shared-memory channel).  One thread per context.
 */
#ifndef OC_RUNTIME_AGENT_STATE_H
#define OC_RUNTIME_AGENT_STATE_H

#include "runtime.h"

#include "ctl/ctl.h"
#include "wire/shmseg.h"

#include <stdatomic.h>
#include <unistd.h>

struct oc__agent {
    oc_tr_ep_t    *ep;        /* to the agent's router */
    oc_tr_ep_t    *coll_ep;   /* to the router that runs the job's
                                 collectives: ep itself, or one more */
    uint32_t       colls;     /* READY's OC_CTL_COLL_*: what it serves */
    uint64_t       token;     /* names this rank to the agent */
    uint32_t       credits;   /* bundles we may still send */
    oc_eng_out_t   link;      /* accounts the bundles in flight to it */
    oc_eng_buf_t  *wait_head; /* bundles waiting for credit, in order */
    oc_eng_buf_t **wait_tail;
    uint32_t       waiting;
    oc_ctl_conn_t *cc;        /* control connection to the agent */
    uint32_t       node, thread, coll_thread;
    uint32_t       polls;
    uint64_t       ctl_at;    /* oc__now_us() of the last control read */
    uint32_t       pid;       /* the agent's, from the kernel (Unix
                                 socket); 0: unknown (TCP) */
    int            gone;      /* its control connection ended */
    /* termination waves, run by the agents */
    int            q_sent;     /* COUNTS sent for q.round */
    int            q_done;     /* QUIESCE_DONE for q.epoch arrived */
    /* the shared-memory channel (shm != 0) */
    int            shm;
    oc_shmseg_t    seg;
    int            wake_fd;    /* the agent's router: wake it if it sleeps */
    oc_eng_buf_t   ring_buf;   /* the stream outlet's slot */
    uint64_t       waits;      /* back-pressured turns that waited */
    uint64_t       slept;      /* ... of them asleep on the doorbell */
    uint64_t       ring_dones; /* collective completions read from cdown */
    uint64_t       ring_descs; /* collective descriptors written to cup */
    uint64_t       nudges;     /* ... and the sleeping router woken */
    oc_tr_op_t     nudge_op;   /* the wake-ups' (no data: shared by all
                                  in flight, its callback does nothing) */
    uint64_t       kicks;      /* wake-ups written to a sleeping agent */
    int            mb_registered; /* for the agent's membarrier */
    int            light;      /* ... and the agent promises it */
};

/* Registered for the agent's membarrier, and it still promises to call it
 * before it sleeps (wire/shmseg.h; it withdraws the promise if the call
 * ever fails): ordering a publish before the load of its flag is then the
 * agent's job, once per sleep, not ours per bundle. */
static inline int oc__agent_fences(struct oc__agent *a)
{
    return a->light && atomic_load_explicit(&a->seg.hdr->agent_barrier,
                                            memory_order_relaxed);
}

/* After a publish into a ring the agent reads: is its reader asleep
 * (@p flag, set by it before its last look at the ring)?  A fence here
 * waits for every store of the bundle to leave the store buffer: 6-7 % of
 * a rank's time in the histogram; where the agent promised its barrier it
 * is the agent's. */
static inline int oc__agent_reader_asleep(struct oc__agent *a,
                                          _Atomic uint32_t *flag)
{
    if (oc__agent_fences(a))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
    return (int)atomic_load_explicit(flag, memory_order_relaxed);
}

/* The agent's router sleeps (idle): what we just published wakes it.
 * The fence orders our publish before the read of its flag (it sets the
 * flag, then looks at the ring: one of us sees the other). */
static inline void oc__agent_shm_kick(struct oc__agent *a)
{
    if (oc__agent_reader_asleep(a, &a->seg.hdr->agent_sleeping)) {
        uint64_t one = 1;
        a->kicks++;
        (void)!write(a->wake_fd, &one, sizeof one);
    }
}

/* agent_shm.c: the shared-memory channel */
/** Bundles that waited for room go into the ring, in order. */
void oc__agent_shm_drain(oc_context_t *ctx);
/** Whether this rank asks for the channel (OC_AGENT_CHANNEL, a Unix
 *  socket). */
int oc__agent_want_shm(const oc_context_t *ctx);
/** Map the segment WELCOME brought, if any (else UCX).  OC_OK, or
 *  OC_ERR_PEER_FAILED (it cannot be mapped; logged). */
oc_status_t oc__agent_shm_attach(oc_context_t *ctx);
/** Back-pressured with nothing to do: sleep on the doorbell (shared
 *  memory, at most 1 ms) or yield (UCX). */
void oc__agent_wait(oc_context_t *ctx);

#endif
