/*
 * spsc.c — the shared-memory ring's consumer side and the doorbell
 * (spsc.h).  The doorbell is a Linux futex on a word in memory both
 * processes map (a shared, not private, futex): no descriptor, no system
 * call unless someone sleeps.  Written by hand because no library we use
 * offers a ring whose indices a hostile peer may scribble on (DPDK's
 * rte_ring trusts both sides and needs the EAL).
 */
#include "util/spsc.h"

#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint32_t slot_round(uint32_t slot_size)
{
    return (slot_size + OC_SPSC_ALIGN - 1) & ~(uint32_t)(OC_SPSC_ALIGN - 1);
}

static size_t lens_bytes(uint32_t nslots)
{
    return ((size_t)nslots * 4 + OC_SPSC_ALIGN - 1) &
           ~(size_t)(OC_SPSC_ALIGN - 1);
}

size_t oc__spsc_bytes(uint32_t nslots, uint32_t slot_size)
{
    if (nslots == 0 || (nslots & (nslots - 1)) != 0 || nslots > (1u << 20) ||
        slot_size == 0 || slot_size > (1u << 26))
        return 0;
    return sizeof(oc_spsc_shared_t) + lens_bytes(nslots) +
           (size_t)nslots * slot_round(slot_size);
}

oc_status_t oc__spsc_attach(oc_spsc_t *r, void *mem, size_t bytes,
                            uint32_t nslots, uint32_t slot_size, int format)
{
    size_t need = oc__spsc_bytes(nslots, slot_size);

    if (r == NULL || mem == NULL || need == 0 || bytes < need ||
        ((uintptr_t)mem & (OC_SPSC_ALIGN - 1)) != 0)
        return OC_ERR_INVALID_PARAM;
    r->sh = mem;
    r->lens = (uint32_t *)((uint8_t *)mem + sizeof(oc_spsc_shared_t));
    r->slots = (uint8_t *)r->lens + lens_bytes(nslots);
    r->nslots = nslots;
    r->mask = nslots - 1;
    r->slot_size = slot_round(slot_size);
    if (format) {
        atomic_store_explicit(&r->sh->tail, 0, memory_order_relaxed);
        atomic_store_explicit(&r->sh->head, 0, memory_order_release);
    }
    r->head = atomic_load_explicit(&r->sh->head, memory_order_acquire);
    r->tail = atomic_load_explicit(&r->sh->tail, memory_order_acquire);
    r->peeked = r->head;
    r->broken = 0;
    return OC_OK;
}

uint8_t *oc__spsc_peek(oc_spsc_t *r, uint32_t *len)
{
    uint32_t l;

    if (r->peeked == r->tail) {
        r->tail = atomic_load_explicit(&r->sh->tail, memory_order_acquire);
        if (r->peeked == r->tail)
            return NULL;
        /* the producer may only publish what we released */
        if (r->tail - r->head > r->nslots) {
            r->broken = 1;
            r->tail = r->peeked;
            return NULL;
        }
    }
    l = r->lens[r->peeked & r->mask];
    if (l > r->slot_size) {
        r->broken = 1;
        return NULL;
    }
    *len = l;
    return r->slots + (size_t)(r->peeked++ & r->mask) * r->slot_size;
}

uint32_t oc__spsc_count(oc_spsc_t *r)
{
    uint32_t tail = atomic_load_explicit(&r->sh->tail, memory_order_acquire);

    if (r->broken)
        return 0;
    if (tail - r->head > r->nslots) { /* as in peek: never trusted */
        r->broken = 1;
        return 0;
    }
    r->tail = tail;
    return tail - r->peeked;
}

/* ---- doorbell ----------------------------------------------------------- */

uint32_t oc__bell_prepare(oc_bell_t *b)
{
    uint32_t seen = atomic_load_explicit(&b->seq, memory_order_acquire);
    atomic_store_explicit(&b->waiting, 1, memory_order_seq_cst);
    return seen;
}

void oc__bell_cancel(oc_bell_t *b)
{
    atomic_store_explicit(&b->waiting, 0, memory_order_relaxed);
}

int oc__bell_wait(oc_bell_t *b, uint32_t seen, uint32_t timeout_us)
{
    struct timespec ts = {(time_t)(timeout_us / 1000000u),
                          (long)(timeout_us % 1000000u) * 1000};
    long rc = syscall(SYS_futex, (uint32_t *)&b->seq, FUTEX_WAIT, seen, &ts,
                      NULL, 0);
    atomic_store_explicit(&b->waiting, 0, memory_order_relaxed);
    return rc == 0 || (rc < 0 && errno == ETIMEDOUT);
}

int oc__bell_wake(oc_bell_t *b)
{
    /* the sleeper waits on seq from before it set "waiting": bumped here
     * before the wake, a sleeper that has not reached FUTEX_WAIT yet
     * returns from it at once */
    if (!atomic_exchange_explicit(&b->waiting, 0, memory_order_acq_rel))
        return 0;
    atomic_fetch_add_explicit(&b->seq, 1, memory_order_release);
    syscall(SYS_futex, (uint32_t *)&b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL,
            0);
    return 1;
}

/* ---- the asymmetric fence ----------------------------------------------- */

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

int oc__membarrier_register(void)
{
    long q = membarrier(MEMBARRIER_CMD_QUERY);
    if (q <= 0 || !(q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
        return 0;
    return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

static _Atomic int mb_known; /* 0: not asked; 1: usable; 2: not */

int oc__membarrier_supported(void)
{
    int k = atomic_load_explicit(&mb_known, memory_order_relaxed);
    if (k == 0) {
        long q = membarrier(MEMBARRIER_CMD_QUERY);
        k = q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ? 1 : 2;
        atomic_store_explicit(&mb_known, k, memory_order_relaxed);
    }
    return k == 1;
}

int oc__membarrier_global(void)
{
    if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0)
        return 0;
    /* not expected once the query said yes: no more promises */
    atomic_store_explicit(&mb_known, 2, memory_order_relaxed);
    return -1;
}
