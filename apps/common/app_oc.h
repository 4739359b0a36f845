/*
 * app_oc.h — liboffcore-side helpers for the offcore versions of the apps:
 * start a context from MPI_COMM_WORLD, the send-with-back-pressure loop,
 * and the counters summed over ranks into the JSON line.  Header-only and
 * included only by the offcore apps, so the MPI twins never link liboffcore.
 */
#ifndef OC_APP_OC_H
#define OC_APP_OC_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <offcore/mpi.h>
#include <offcore/offcore.h>

#include "app.h"
#include "app_mpi.h"

/* Every field of oc_counters_t, in order.  All are uint64_t. */
#define OC_APP_COUNTERS(X)                                                    \
    X(msgs_sent) X(bytes_sent) X(bundles_sent) X(wire_bytes_sent)             \
    X(msgs_delivered) X(bytes_delivered) X(bundles_received)                  \
    X(bundles_rejected) X(flush_full) X(flush_timeout) X(flush_idle)          \
    X(flush_explicit) X(send_no_resource) X(handler_retries)                  \
    X(reserve_buffers) X(quiesce_rounds) X(conn_rdma) X(conn_tcp) X(conn_sm) \
    X(conn_other)

#define OC_APP_COUNT_ONE_(f) +1
_Static_assert(sizeof(oc_counters_t) ==
                   sizeof(uint64_t) * (0 OC_APP_COUNTERS(OC_APP_COUNT_ONE_)),
               "oc_counters_t changed: update OC_APP_COUNTERS in apps/common/app_oc.h");

/* The communicator must outlive the context (offcore/mpi.h). */
static MPI_Comm oc_app_world;

/* ---- CPU the rank spends inside liboffcore (OC_APP_CPU=1) ------------
 * Thread CPU time (CLOCK_THREAD_CPUTIME_ID, a system call: hence opt-in)
 * around every library call these helpers make — sends, polls,
 * quiesce — minus the time in the application's own handler, which runs
 * inside oc_poll (a handler's sends count as handler time).  Printed as
 * "cpu" in the JSON line, per message sent. */
static struct {
    bool               on;
    uint64_t           lib_ns, handler_ns;
    oc_burst_handler_t handler;
    void              *arg;
} oc_app_cpu;

static inline uint64_t oc_app_thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define OC_APP_CPU_BEGIN() uint64_t oc_app_t0_ = oc_app_cpu.on ? oc_app_thread_ns() : 0
#define OC_APP_CPU_END()                                                      \
    do {                                                                      \
        if (oc_app_cpu.on)                                                    \
            oc_app_cpu.lib_ns += oc_app_thread_ns() - oc_app_t0_;             \
    } while (0)

static size_t oc_app_cpu_handler(void *arg, uint32_t src, const void *msgs,
                                 size_t len, size_t n)
{
    (void)arg;
    uint64_t t0 = oc_app_thread_ns();
    size_t k = oc_app_cpu.handler(oc_app_cpu.arg, src, msgs, len, n);
    oc_app_cpu.handler_ns += oc_app_thread_ns() - t0;
    return k;
}

/* Start a context on MPI_COMM_WORLD from @p p (handler fields set by the
 * caller); dies with the reason on failure. */
static inline oc_context_t *oc_app_oc_start(const oc_app_mpi_t *m,
                                            oc_context_params_t p)
{
    oc_app_world = MPI_COMM_WORLD;
    p.field_mask |= OC_PARAM_NAME;
    p.name = m->prog;
    oc_context_t *ctx = NULL;
    oc_status_t st = oc_init_mpi(&oc_app_world, &p, &ctx);
    if (st != OC_OK)
        oc_app_mpi_die(m, "oc_init failed: %s", oc_status_string(st));
    return ctx;
}

/** Start the app's context with a burst handler: one call per run of
 *  same-size messages (offcore.h, oc_burst_handler_t). */
static inline oc_context_t *oc_app_oc_init_burst(const oc_app_mpi_t *m,
                                                 oc_burst_handler_t handler,
                                                 void *arg)
{
    const char *cpu = getenv("OC_APP_CPU");
    if (cpu != NULL && strcmp(cpu, "1") == 0) {
        oc_app_cpu.on = true;
        oc_app_cpu.handler = handler;
        oc_app_cpu.arg = arg;
        handler = oc_app_cpu_handler;
    }
    return oc_app_oc_start(m, (oc_context_params_t){
        .field_mask = OC_PARAM_BURST_HANDLER, .burst_handler = handler,
        .handler_arg = arg});
}

/** Send a burst (message i of @p len bytes to dests[i]), polling while
 *  the runtime applies back-pressure; other errors abort the job. */
static inline void oc_app_send_burst(const oc_app_mpi_t *m, oc_context_t *ctx,
                                     const uint32_t *dests, const void *msgs,
                                     size_t len, size_t n)
{
    const uint8_t *p = msgs;
    OC_APP_CPU_BEGIN();
    for (;;) {
        size_t k = oc_send_burst(ctx, dests, p, len, n);
        if (k == n)
            break;
        dests += k;
        p += k * len;
        n -= k;
        oc_status_t st = oc_send(ctx, dests[0], p, len);
        if (st == OC_OK) {
            dests++;
            p += len;
            n--;
        } else if (st == OC_ERR_NO_RESOURCE) {
            int r = oc_poll(ctx);
            if (__builtin_expect(r < 0, 0))
                oc_app_mpi_die(m, "oc_poll failed: %s",
                               oc_status_string((oc_status_t)r));
        } else {
            oc_app_mpi_die(m, "oc_send to rank %u failed: %s", dests[0],
                           oc_status_string(st));
        }
        if (n == 0)
            break;
    }
    OC_APP_CPU_END();
}

/* ---- a burst sender: messages of one length, any destinations ------- */

#define OC_APP_BURST         256
#define OC_APP_BURST_MAX_LEN 16

/** Collects messages and sends them OC_APP_BURST at a time with
 *  oc_app_send_burst, polling every @p interval messages. */
typedef struct {
    const oc_app_mpi_t *m;
    oc_context_t *ctx;
    size_t        len, n;
    uint64_t      interval, since_poll;
    uint64_t      sent;     /**< messages sent so far */
    uint32_t      dests[OC_APP_BURST];
    _Alignas(8) uint8_t msgs[OC_APP_BURST * OC_APP_BURST_MAX_LEN];
} oc_app_burst_t;

static inline void oc_app_burst_init(oc_app_burst_t *b, const oc_app_mpi_t *m,
                                     oc_context_t *ctx, size_t len,
                                     uint64_t interval)
{
    if (len == 0 || len > OC_APP_BURST_MAX_LEN)
        oc_app_mpi_die(m, "burst messages of %zu bytes (1 to %d)", len,
                       OC_APP_BURST_MAX_LEN);
    *b = (oc_app_burst_t){.m = m, .ctx = ctx, .len = len,
                          .interval = interval ? interval : 1};
}

/** Send what is collected; poll when the interval is due. */
static inline void oc_app_burst_flush(oc_app_burst_t *b)
{
    oc_app_send_burst(b->m, b->ctx, b->dests, b->msgs, b->len, b->n);
    b->sent += b->n;
    b->since_poll += b->n;
    b->n = 0;
    if (b->since_poll >= b->interval) {
        b->since_poll = 0;
        OC_APP_CPU_BEGIN();
        int r = oc_poll(b->ctx);
        OC_APP_CPU_END();
        if (__builtin_expect(r < 0, 0))
            oc_app_mpi_die(b->m, "oc_poll failed: %s",
                           oc_status_string((oc_status_t)r));
    }
}

/** Add one message (b->len bytes at @p msg) for @p dest. */
static inline void oc_app_burst_put(oc_app_burst_t *b, uint32_t dest,
                                    const void *msg)
{
    b->dests[b->n] = dest;
    memcpy(b->msgs + b->n * b->len, msg, b->len);
    if (++b->n == OC_APP_BURST)
        oc_app_burst_flush(b);
}

/** Send, polling while the runtime applies back-pressure.  Any other error
 *  aborts the job: the other ranks would wait for these messages forever. */
static inline void oc_app_send(const oc_app_mpi_t *m, oc_context_t *ctx,
                               uint32_t dest, const void *buf, size_t len)
{
    oc_status_t st;
    OC_APP_CPU_BEGIN();
    while ((st = oc_send(ctx, dest, buf, len)) == OC_ERR_NO_RESOURCE) {
        int n = oc_poll(ctx);
        if (__builtin_expect(n < 0, 0))
            oc_app_mpi_die(m, "oc_poll failed: %s",
                           oc_status_string((oc_status_t)n));
    }
    OC_APP_CPU_END();
    if (__builtin_expect(st != OC_OK, 0))
        oc_app_mpi_die(m, "oc_send to rank %u failed: %s", dest,
                       oc_status_string(st));
}

static inline void oc_app_poll(const oc_app_mpi_t *m, oc_context_t *ctx)
{
    OC_APP_CPU_BEGIN();
    int n = oc_poll(ctx);
    OC_APP_CPU_END();
    if (__builtin_expect(n < 0, 0))
        oc_app_mpi_die(m, "oc_poll failed: %s", oc_status_string((oc_status_t)n));
}

static inline void oc_app_quiesce(const oc_app_mpi_t *m, oc_context_t *ctx)
{
    OC_APP_CPU_BEGIN();
    oc_status_t st = oc_quiesce(ctx);
    OC_APP_CPU_END();
    if (st != OC_OK)
        oc_app_mpi_die(m, "oc_quiesce failed: %s", oc_status_string(st));
}

/** Begin rank 0's JSON line with "app", "placement" and "ranks". */
static inline void oc_app_json_head(oc_app_json_t *j, const oc_app_mpi_t *m,
                                    oc_context_t *ctx)
{
    oc_app_json_begin(j);
    oc_app_json_str(j, "app", m->prog);
    oc_app_json_str(j, "placement", oc_placement(ctx));
    oc_app_json_u64(j, "ranks", (uint64_t)m->size);
}

/** The end of every app: "verified" (@p ok on every rank) into rank 0's
 *  line, which is printed; then oc_finalize.  @return true when verified
 *  and the context closed cleanly.  Collective. */
static inline bool oc_app_oc_end(const oc_app_mpi_t *m, oc_context_t *ctx,
                                 oc_app_json_t *j, bool ok)
{
    bool verified = oc_app_mpi_all(ok);
    if (m->rank == 0) {
        oc_app_json_bool(j, "verified", verified);
        oc_app_json_print(j);
    }
    oc_status_t st = oc_finalize(ctx);
    if (st != OC_OK) {
        oc_app_mpi_err(m, "oc_finalize failed: %s", oc_status_string(st));
        verified = false;
    }
    return verified;
}

/** Write "counters":{...} with every counter summed over all ranks.
 *  Collective; only rank 0's @p j is written. */
static inline void oc_app_json_counters(const oc_app_mpi_t *m,
                                        oc_context_t *ctx, oc_app_json_t *j,
                                        oc_counters_t *sum)
{
    oc_counters_t mine = {0};
    (void)oc_counters_get(ctx, &mine, sizeof mine);
    *sum = (oc_counters_t){0};
    oc_app_mpi_reduce_u64((const uint64_t *)&mine, (uint64_t *)sum,
                          (int)(sizeof mine / sizeof(uint64_t)));
    uint64_t cpu_in[2] = {oc_app_cpu.lib_ns, oc_app_cpu.handler_ns}, cpu[2];
    if (oc_app_cpu.on)
        oc_app_mpi_reduce_u64(cpu_in, cpu, 2);
    if (m->rank != 0)
        return;
    if (oc_app_cpu.on && sum->msgs_sent > 0) {
        uint64_t lib = cpu[0] > cpu[1] ? cpu[0] - cpu[1] : 0;
        oc_app_json_obj_begin(j, "cpu");
        oc_app_json_str(j, "clock", "CLOCK_THREAD_CPUTIME_ID around oc_* calls, handlers subtracted");
        oc_app_json_dbl(j, "lib_ns_per_msg", (double)lib / (double)sum->msgs_sent);
        oc_app_json_dbl(j, "handler_ns_per_msg", (double)cpu[1] / (double)sum->msgs_sent);
        oc_app_json_u64(j, "lib_ns", lib);
        oc_app_json_u64(j, "handler_ns", cpu[1]);
        oc_app_json_obj_end(j);
    }
    oc_app_json_obj_begin(j, "counters");
#define OC_APP_JSON_ONE_(f) oc_app_json_u64(j, #f, sum->f);
    OC_APP_COUNTERS(OC_APP_JSON_ONE_)
#undef OC_APP_JSON_ONE_
    oc_app_json_obj_end(j);
}

#endif /* OC_APP_OC_H */
