/*
 * shmseg.h — the shared-memory channel between a rank and the agent on its
 * own host: a sealed memfd the agent creates and hands to the
 * authenticated rank (SCM_RIGHTS) holding SPSC rings of bundle slots
 * (util/spsc.h): "up" toward the agent (read by the routing thread that
 * serves the rank) and one "down" ring back per routing thread (each
 * thread writes its deliveries to the rank into its own: no lock, and no
 * detour through UCX for a rank another thread serves), and "cdown": the
 * agent's collective completions (DONE, wire/colld.h) to the rank, one
 * per slot, written by the thread where the rank's job's collectives
 * meet; "cup": the rank's collective descriptors (wire/colld.h) to that
 * thread, one per slot; the rank's doorbell and the agent's "sleeping"
 * flags.  How it runs: docs/design.md, "Shared-memory channel".
 *
 * Trust: the agent trusts nothing a rank writes into the segment: it keeps
 * the geometry in its own handle, the ring checks indices and lengths, the
 * router re-checks every destination, and the seals stop a rank from
 * shrinking it under the agent (SIGBUS).  The rank trusts its agent.
 *
 * Layout (all offsets from the segment's start):
 *   0      oc_shmseg_hdr_t (magic, version, geometry, the flags)
 *   4096   ring "up"   (oc__spsc_bytes(nslots, slot_size))
 *   ...    ring "down" 0 .. ndown - 1 (each the same size)
 *   ...    ring "cdown" (OC_SHMSEG_CDOWN_SLOTS slots of OC_SHMSEG_CDOWN_SLOT)
 *   ...    ring "cup" (the same geometry as cdown)
 */
#ifndef OC_WIRE_SHMSEG_H
#define OC_WIRE_SHMSEG_H

#include "util/spsc.h"

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>

#define OC_SHMSEG_MAGIC   0x4d48534fu /* "OSHM" read little-endian */
#define OC_SHMSEG_VERSION 3
#define OC_SHMSEG_HDR     4096u
/* Down rings at most: one per routing thread (offcored's at most 64). */
#define OC_SHMSEG_MAX_DOWN 64u
/* The completion ring: a DONE with an inline result (16 + 4096 bytes,
 * wire/colld.h) fits a slot; more collectives in flight than slots, or a
 * bigger DONE, go by UCX.  The descriptor ring ("cup") has the same
 * geometry: a descriptor with an inline contribution of up to 4096 bytes
 * fits; a bigger one (an all-to-allv's counts on a large job), or one that
 * finds the ring full, goes by UCX. */
#define OC_SHMSEG_CDOWN_SLOTS 32u
#define OC_SHMSEG_CDOWN_SLOT  4608u

typedef struct {
    uint32_t  magic, version;
    uint32_t  nslots, slot_size;   /* each ring's */
    uint64_t  ring_bytes;
    uint32_t  ndown, pad;          /* down rings */
    uint32_t  cnslots, cslot_size; /* the cdown ring's */
    uint8_t   pad0[OC_SPSC_ALIGN - 40];
    oc_bell_t rank_bell;           /* the rank sleeps on it */
    uint8_t   pad1[OC_SPSC_ALIGN - sizeof(oc_bell_t)];
    _Atomic uint32_t agent_sleeping; /* set while the router sleeps */
    /* 1: the router calls oc__membarrier_global between setting
     * agent_sleeping and its last look at the ring, so a rank registered
     * with oc__membarrier_register may publish and read agent_sleeping
     * without a fence of its own (util/spsc.h); 0 (an older agent, or the
     * call failed): the rank fences.  In the same line as agent_sleeping:
     * the rank's check costs no second miss. */
    _Atomic uint32_t agent_barrier;
    uint8_t   pad2[OC_SPSC_ALIGN - 8];
    /* set while the thread that reads "cup" sleeps: the rank that put a
     * descriptor there wakes it (an empty OC_AM_COLL by UCX, to that
     * thread); agent_barrier's promise holds for it too */
    _Atomic uint32_t coll_sleeping;
    uint8_t   pad3[OC_SPSC_ALIGN - 4];
} oc_shmseg_hdr_t;

/** One side's view of a segment. */
typedef struct {
    void            *base;
    size_t           bytes;
    oc_shmseg_hdr_t *hdr;
    oc_spsc_t        up;    /* rank -> agent */
    oc_spsc_t       *down;  /* [ndown] agent -> rank: routing thread i's */
    uint32_t         ndown;
    oc_spsc_t        cdown; /* agent -> rank: collective completions */
    oc_spsc_t        cup;   /* rank -> agent: collective descriptors */
} oc_shmseg_t;

/**
 * The agent: create a segment of an up ring and @p ndown down rings
 * (1..OC_SHMSEG_MAX_DOWN) of @p nslots slots of @p slot_size bytes, mapped
 * here, and its sealed memfd in *fd_out (close it once handed over).
 * @return OC_OK; OC_ERR_INVALID_PARAM (geometry); OC_ERR_NO_MEMORY;
 * OC_ERR_NO_RESOURCE (memfd, sealing or mmap refused; errno logged by the
 * caller).
 */
oc_status_t oc__shmseg_create(uint32_t nslots, uint32_t slot_size,
                              uint32_t ndown, oc_shmseg_t *seg, int *fd_out);

/**
 * The rank: map the segment of @p fd (the caller keeps and closes @p fd).
 * @return OC_OK; OC_ERR_INVALID_PARAM (not a segment of this version, or
 * its size does not match its header); OC_ERR_NO_MEMORY;
 * OC_ERR_NO_RESOURCE (mmap).
 */
oc_status_t oc__shmseg_map(int fd, oc_shmseg_t *seg);

/** Unmap (and free the down rings' views).  NULL base is a no-op. */
void oc__shmseg_unmap(oc_shmseg_t *seg);

#endif
