/*
 * spsc.h — the tree's one single-producer/single-consumer ring: fixed-size
 * slots in memory two processes may share (a memfd mapped by both), and a
 * doorbell (futex word) to sleep on it: the bottom of the rank<->agent
 * channel on one host (wire/shmseg.h), and between two threads the
 * offcore-dp rings (tenant hand-off, flow records).  tail counts slots
 * published (the producer's), head slots released (the consumer's).
 *
 * The producer reserves the next free slot, writes a bundle into it in
 * place and publishes it with its length (one release store of the tail);
 * the consumer peeks published slots in order, reads them in place, and
 * releases them in the same order (one release store of the head).  No
 * copy, no call into another library, no lock.
 *
 * Trust: the shared memory can be written by the other side at any time.
 * Each side keeps the ring's geometry (slots, slot size) in its own
 * handle, never re-read from the shared part; the consumer checks every
 * index and length it reads (tail - head beyond the ring, a length beyond
 * the slot) and marks the ring broken rather than go out of bounds, so a
 * hostile or crashed producer can only hand over wrong bytes, which the
 * reader validates as it would any bundle.
 *
 * Threading: one producer thread and one consumer thread per ring (they
 * may be in different processes); a handle belongs to its side's thread.
 */
#ifndef OC_UTIL_SPSC_H
#define OC_UTIL_SPSC_H

#include <offcore/offcore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define OC_SPSC_ALIGN 64

/** The shared part at the start of a ring's memory (the slots follow,
 *  each OC_SPSC_ALIGN-aligned).  Head and tail on their own cache lines. */
typedef struct {
    _Atomic uint32_t tail;      /**< slots published (producer writes) */
    uint8_t          pad0[OC_SPSC_ALIGN - 4];
    _Atomic uint32_t head;      /**< slots released (consumer writes) */
    uint8_t          pad1[OC_SPSC_ALIGN - 4];
} oc_spsc_shared_t;

/** One side's handle. */
typedef struct {
    oc_spsc_shared_t *sh;
    uint32_t         *lens;     /**< [nslots] in shared memory */
    uint8_t          *slots;
    uint32_t          nslots, mask, slot_size;
    uint32_t          head;     /**< consumer: released; producer: last seen */
    uint32_t          tail;     /**< producer: published; consumer: last seen */
    uint32_t          peeked;   /**< consumer: handed out (head..peeked) */
    int               broken;   /**< consumer: the producer broke the rules */
} oc_spsc_t;

/** Bytes of a ring of @p nslots (a power of two) slots of @p slot_size
 *  (rounded up to OC_SPSC_ALIGN); 0 if the arguments are invalid. */
size_t oc__spsc_bytes(uint32_t nslots, uint32_t slot_size);

/**
 * Attach a handle to a ring at @p mem (OC_SPSC_ALIGN-aligned, @p bytes
 * long); with @p format set, also make it empty (the creator, once, before
 * the other side attaches).  @return OC_OK; OC_ERR_INVALID_PARAM (not a
 * power of two, too small, misaligned).
 */
oc_status_t oc__spsc_attach(oc_spsc_t *r, void *mem, size_t bytes,
                            uint32_t nslots, uint32_t slot_size, int format);

/** Producer: the next free slot (slot_size bytes), or NULL when the ring is
 *  full (back-pressure).  Valid until published.  Asking twice without
 *  publishing gives the same slot. */
static inline uint8_t *oc__spsc_reserve(oc_spsc_t *r)
{
    if (r->tail - r->head >= r->nslots) {
        r->head = atomic_load_explicit(&r->sh->head, memory_order_acquire);
        if (r->tail - r->head >= r->nslots)
            return NULL;
    }
    return r->slots + (size_t)(r->tail & r->mask) * r->slot_size;
}

/** Producer: publish the reserved slot, @p len bytes (<= slot_size). */
static inline void oc__spsc_publish(oc_spsc_t *r, uint32_t len)
{
    r->lens[r->tail & r->mask] = len;
    r->tail++;
    atomic_store_explicit(&r->sh->tail, r->tail, memory_order_release);
}

/** Producer: slots published and not yet released by the consumer (reads
 *  the shared head). */
static inline uint32_t oc__spsc_in_use(oc_spsc_t *r)
{
    r->head = atomic_load_explicit(&r->sh->head, memory_order_acquire);
    return r->tail - r->head;
}

/** Consumer: the next published slot not yet handed out and its length,
 *  or NULL (none; or the ring is broken: r->broken).  The slot stays valid
 *  until released. */
uint8_t *oc__spsc_peek(oc_spsc_t *r, uint32_t *len);

/** Consumer: how many published slots have not been handed out yet (a
 *  bound for a drain that should not chase a producer still publishing);
 *  0 on a broken ring.  Loads the shared tail once. */
uint32_t oc__spsc_count(oc_spsc_t *r);

/** Consumer: hand back the slots peeked and not released, so that the
 *  next peek starts again at the oldest unreleased one (a consumer that
 *  looked ahead further than it could take). */
static inline void oc__spsc_unpeek(oc_spsc_t *r) { r->peeked = r->head; }

/** Consumer: is a slot published that was not handed out yet?  (One
 *  load; for a sleeper's last look, not a substitute for peek.) */
static inline int oc__spsc_ready(oc_spsc_t *r)
{
    return atomic_load_explicit(&r->sh->tail, memory_order_acquire) !=
           r->peeked;
}

/** Consumer: release the oldest slot handed out by oc__spsc_peek. */
static inline void oc__spsc_release(oc_spsc_t *r)
{
    r->head++;
    atomic_store_explicit(&r->sh->head, r->head, memory_order_release);
}

/* ---- doorbell ----------------------------------------------------------- */

/** A futex word to sleep on until the other side has done something, in
 *  shared memory.  The sleeper announces itself (waiting), checks its
 *  condition once more, then sleeps; the other side rings only when
 *  someone waits (one load when nobody does). */
typedef struct {
    _Atomic uint32_t seq;
    _Atomic uint32_t waiting;
} oc_bell_t;

/** The sleeper, step 1: returns the value to pass to oc__bell_wait; check
 *  the condition after this and before waiting. */
uint32_t oc__bell_prepare(oc_bell_t *b);
/** The sleeper, step 2: sleep until rung after @p seen or @p timeout_us
 *  passes (bounded: liveness checks go on).  Returns 1 if it slept. */
int oc__bell_wait(oc_bell_t *b, uint32_t seen, uint32_t timeout_us);
/** The sleeper, step 2 when the condition already holds. */
void oc__bell_cancel(oc_bell_t *b);
/** The other side, after publishing or releasing: wake the sleeper if
 *  there is one (a fence and one load when nobody waits).  Clears
 *  "waiting" as it wakes, so a sleeper not yet running again costs the
 *  rings that follow one load, not a system call each.  Returns 1 if it
 *  woke someone. */
int oc__bell_wake(oc_bell_t *b);
/** oc__bell_ring after the caller's own full fence (atomic_thread_fence,
 *  seq_cst) between its stores and this call: one fence for the bells
 *  of many rings. */
static inline int oc__bell_ring_fenced(oc_bell_t *b)
{
    if (atomic_load_explicit(&b->waiting, memory_order_relaxed))
        return oc__bell_wake(b);
    return 0;
}
static inline int oc__bell_ring(oc_bell_t *b)
{
    /* the store that made the condition true must be seen before we read
     * "waiting" (the sleeper does the opposite): no lost wake-up */
    atomic_thread_fence(memory_order_seq_cst);
    return oc__bell_ring_fenced(b);
}

/* ---- the asymmetric fence ------------------------------------------------
 * A doorbell needs a full fence on both sides (store, fence, load).  Where
 * one side rings on every bundle and the other sleeps rarely, Linux's
 * membarrier(2) moves the whole cost to the sleeper: the ringing process
 * registers once (oc__membarrier_register) and then needs only a compiler
 * barrier; the sleeper, between its store and its load, calls
 * oc__membarrier_global, which runs a fence on every CPU running a
 * registered process (an IPI each; a descheduled thread's context switch
 * is one already). */

/** The ringing side, once per process: 1 if registered (from then on its
 *  fence may be skipped where the sleeper says it calls
 *  oc__membarrier_global), 0 if the kernel has no expedited membarrier. */
int oc__membarrier_register(void);
/** 1 if oc__membarrier_global is available here (asked once, cached; 0
 *  from the first failure of oc__membarrier_global on). */
int oc__membarrier_supported(void);
/** The sleeper: a fence on every CPU running a registered process.
 *  Returns 0, or -1 (errno) when the call failed: the caller withdraws its
 *  promise and does not sleep this time. */
int oc__membarrier_global(void);

#endif
