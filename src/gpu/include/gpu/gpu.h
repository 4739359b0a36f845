/*
 * gpu/gpu.h — CUDA device memory for the data path, through the driver
 * API loaded at run time (dlopen of libcuda.so.1, or the file OC_LIBCUDA
 * names): which memory a pointer is, a pool of pinned staging slots, and
 * asynchronous copies between device buffers and those slots, each slot
 * on a stream of its own so that copies of different chunks overlap.
 *
 * A machine without libcuda (or whose driver fails cuInit), and a process
 * that has not loaded it, lose nothing: every pointer is host memory and
 * no other call is needed.  Thread-safe but for a pool, which belongs to
 * one thread at a time.  Errors are logged once, where the driver reported them,
 * with the driver's own words.
 */
#ifndef OC_GPU_GPU_H
#define OC_GPU_GPU_H

#include <offcore/status.h>
#include <stddef.h>
#include <stdint.h>

/** Is the driver in use by this process?  liboffcore never loads it
 *  itself: device memory can exist only once the program has loaded
 *  libcuda (the CUDA runtime does), so this looks for it among the loaded
 *  libraries (again whenever the process has loaded a library since the
 *  last look) and then cuInit()s it.  @return 1 when the driver answers, 0 else
 *  (oc__gpu_why()). */
int oc__gpu_available(void);

/** Load libcuda (dlopen; tools and tests) and cuInit it, at most once per
 *  process.  @return as oc__gpu_available(). */
int oc__gpu_load(void);

/** Why oc__gpu_available() is 0 ("libcuda.so.1: cannot open shared
 *  object file...", "... is not loaded in this process"), or "" when it
 *  is 1.  Valid for the process. */
const char *oc__gpu_why(void);

/** The path the library was loaded from (OC_LIBCUDA or "libcuda.so.1"). */
const char *oc__gpu_lib_name(void);

/** The driver's version (cuDriverGetVersion: 1000 * major + 10 * minor)
 *  and device count; 0 without a driver. */
int oc__gpu_driver_version(void);
int oc__gpu_device_count(void);

/** What a buffer is. */
typedef struct {
    int   device; /**< the device ordinal; -1: host memory */
    void *cuctx;  /**< the CUcontext it was allocated in (device memory) */
} oc__gpu_mem_t;

/**
 * Which memory @p p is.  Host memory (anything the driver does not call
 * device memory, pinned host memory and managed memory included, which
 * the CPU may read) gives device -1.  Without a driver: always host.
 * @return OC_OK (*m set), OC_ERR_GPU (the driver failed the query for
 *         another reason than "not CUDA memory": logged; *m untouched).
 *         Thread-safe.
 */
oc_status_t oc__gpu_mem_of(const void *p, oc__gpu_mem_t *m);

/** Settings (OC_GPU, OC_GPU_CHUNK, OC_GPU_SLOTS). */
typedef struct {
    int      on;    /* look for device buffers at all */
    uint64_t chunk; /* bytes per staged chunk (each slot holds 2 of them) */
    uint64_t slots; /* chunks in flight, one stream each */
} oc__gpu_config_t;

/** Load the settings from the environment.  OC_ERR_CONFIG (logged). */
oc_status_t oc__gpu_config(oc__gpu_config_t *cfg);

/** A pool of pinned host slots, each with its own stream and event, in
 *  one CUDA context. */
typedef struct oc__gpu_pool oc__gpu_pool_t;

/**
 * Make a pool of @p nslots (>= 2) slots of @p slot_bytes pinned bytes in
 * context @p cuctx (device @p device).
 * @return OC_OK (*pool_p set), OC_ERR_INVALID_PARAM, OC_ERR_NO_MEMORY,
 *         OC_ERR_GPU (the driver refused: logged; RLIMIT_MEMLOCK is the
 *         usual limit on pinned memory), OC_ERR_UNSUPPORTED (no driver).
 */
oc_status_t oc__gpu_pool_new(void *cuctx, int device, size_t slot_bytes,
                             unsigned nslots, oc__gpu_pool_t **pool_p);

/** Wait for every stream of the pool, then free it.  NULL: no-op. */
void oc__gpu_pool_free(oc__gpu_pool_t *pool);

/** The pool's context and device, slot size and count. */
void *oc__gpu_pool_ctx(const oc__gpu_pool_t *pool);
int oc__gpu_pool_device(const oc__gpu_pool_t *pool);
size_t oc__gpu_pool_slot_bytes(const oc__gpu_pool_t *pool);
unsigned oc__gpu_pool_nslots(const oc__gpu_pool_t *pool);

/** Slot @p slot's pinned host memory (slot_bytes); valid until
 *  oc__gpu_pool_free().  Read or write it only while no copy of the slot
 *  is in flight (oc__gpu_slot_test() said OC_OK). */
uint8_t *oc__gpu_slot_host(oc__gpu_pool_t *pool, unsigned slot);

/**
 * Queue on slot @p slot's stream a copy of @p len bytes from device
 * address @p dev to the slot's host memory at @p off (d2h), or the other
 * way (h2d).  Never waits.  Then oc__gpu_slot_fence() and
 * oc__gpu_slot_test() say when it has arrived.
 * @return OC_OK (queued), OC_ERR_INVALID_PARAM (past the slot),
 *         OC_ERR_GPU (refused: logged).
 */
oc_status_t oc__gpu_slot_d2h(oc__gpu_pool_t *pool, unsigned slot, size_t off,
                             const void *dev, size_t len);
oc_status_t oc__gpu_slot_h2d(oc__gpu_pool_t *pool, unsigned slot, void *dev,
                             size_t off, size_t len);

/** Mark the end of what is queued on the slot so far (an event). */
oc_status_t oc__gpu_slot_fence(oc__gpu_pool_t *pool, unsigned slot);

/** @return OC_OK (everything before the last fence is done),
 *  OC_INPROGRESS, OC_ERR_GPU (a copy failed: logged once).  Never
 *  waits. */
oc_status_t oc__gpu_slot_test(oc__gpu_pool_t *pool, unsigned slot);

/** Wait for every stream of the pool (after a failure: nothing may
 *  still write into a buffer that went back to its owner). */
void oc__gpu_pool_drain(oc__gpu_pool_t *pool);

/** A lane: a pinned buffer of its own with a stream and an event, in a
 *  pool's context, for a vector staged whole (the agent placement). */
typedef struct oc__gpu_lane oc__gpu_lane_t;

/** @return OC_OK, OC_ERR_INVALID_PARAM, OC_ERR_NO_MEMORY, OC_ERR_GPU
 *  (logged).  The pool outlives its lanes. */
oc_status_t oc__gpu_lane_new(oc__gpu_pool_t *pool, size_t bytes,
                             oc__gpu_lane_t **lane_p);
/** Wait for the lane's stream, then free it.  NULL: no-op. */
void oc__gpu_lane_free(oc__gpu_lane_t *lane);
/** The lane's pinned memory (valid until oc__gpu_lane_free) and size. */
uint8_t *oc__gpu_lane_host(oc__gpu_lane_t *lane);
size_t oc__gpu_lane_bytes(const oc__gpu_lane_t *lane);
/** As oc__gpu_slot_d2h/h2d/fence/test, on the lane. */
oc_status_t oc__gpu_lane_d2h(oc__gpu_lane_t *lane, size_t off,
                             const void *dev, size_t len);
oc_status_t oc__gpu_lane_h2d(oc__gpu_lane_t *lane, void *dev, size_t off,
                             size_t len);
oc_status_t oc__gpu_lane_fence(oc__gpu_lane_t *lane);
oc_status_t oc__gpu_lane_test(oc__gpu_lane_t *lane);

#endif
