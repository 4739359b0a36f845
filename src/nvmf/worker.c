/*
 * worker.c — one worker's loop: its own io_uring carries every socket and
 * file operation of the connections it owns (no thread per connection;
 * one ring per worker); worker 0 also listens, admits under the guard
 * (util/guard.h: connection cap, deadline for a connection's ICReq and
 * Connect, accept back-off when out of descriptors) and hands each new
 * connection to a worker, round robin; keep-alive expiry of the
 * controllers whose admin queue it owns; drain on SIGTERM/SIGINT: stop
 * accepting, let in-flight commands finish (10 s at most), then close
 * every connection.
 *
 * Threading: oc__nvmf_worker_run() runs on the worker's thread, which owns
 * what target.h's Threading comment gives it; other threads reach it only
 * through its mailbox, close requests and oc__nvmf_worker_wake().
 */
#include "busypoll.h"
#include "target.h"
#include "util/log.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOGC OC_COMP_NVMF
#define RING_ENTRIES 4096
#define DRAIN_MS 10000
/* Within one batch of completions, send what is ready after every this
 * many file completions instead of once at the end of the batch.  The
 * disk completes reads in bursts (9-13 per wake-up at QD32 here); sending
 * the first 4 while the others are checked lets the host answer with new
 * commands sooner, so more of the 32 are at the disk.  Measured with fio,
 * target and generator under SCHED_FIFO, 3 interleaved rounds: 86K/81K/87K
 * IOPS at the end of the batch only, 93K/96K/88K every 4 (fio 117-124K). */
#define FLUSH_EVERY 4
/* With poll-us, completions that arrive while a batch is handled join it
 * (io_uring_submit_and_get_events at each flush), up to this many per
 * batch.  Same conditions, polling 100 us both sides: 79K/71K/89K without,
 * 90K/76K/102K with (fio 124K/111K/116K). */
#define POLL_BATCH_MAX 256

/*
 * A worker runs on its CPU only.  The loop is woken by the disk's
 * completions and by its hosts' sockets: on the CPU that takes the disk's
 * interrupt, a completion wakes it without an interrupt to another CPU (on
 * a virtual machine each such IPI exits to the hypervisor), and the data
 * the kernel just handled is still in this CPU's cache.  docs/nvmf.md says
 * how to find that CPU and what it measured.  Called before the ring
 * exists, so that the ring's kernel side starts on that CPU too.  Worker 0
 * pins the caller's thread: the metrics thread it starts later inherits
 * the mask.
 */
static int pin(const oc_nvmf_worker_t *w)
{
    cpu_set_t set;

    if (w->cpu < 0)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        oc_error(LOGC, "worker %d: cpu %d: sched_setaffinity: %s", w->idx,
                 w->cpu, strerror(errno));
        return -1;
    }
    oc_info(LOGC, "worker %d runs on CPU %d", w->idx, w->cpu);
    return 0;
}

oc_status_t oc__nvmf_worker_init(oc_nvmf_worker_t *w, int check_only)
{
    oc_nvmf_target_t *t = w->tgt;
    int rc;

    if (!check_only && pin(w))
        return OC_ERR_CONFIG;
    /* one thread submits and reaps: let the kernel run completions' task
     * work only when we wait (fewer interrupts of the loop); older kernels
     * refuse these flags, then the plain ring does the same job */
    rc = io_uring_queue_init(RING_ENTRIES, &w->ring,
                             IORING_SETUP_SINGLE_ISSUER |
                                 IORING_SETUP_DEFER_TASKRUN);
    if (rc == -EINVAL)
        rc = io_uring_queue_init(RING_ENTRIES, &w->ring, 0);
    if (rc) {
        oc_error(LOGC, "worker %d: io_uring_queue_init: %s", w->idx,
                 strerror(-rc));
        return OC_ERR_UNSUPPORTED;
    }
    w->ring_ok = 1;
    /* a registered ring descriptor spares each io_uring_enter the file
     * lookup and reference of the ring itself (one or more per loop turn) */
    if (io_uring_register_ring_fd(&w->ring) < 0)
        oc_debug(LOGC, "io_uring_register_ring_fd refused (using the "
                 "plain descriptor)");
    /* the namespaces' files in the ring's file table: Read and Write then
     * skip a file lookup and reference per I/O; without it (old kernel,
     * RLIMIT_NOFILE) they use the plain descriptors.  Every worker's table
     * is built the same, so a namespace's index (ns->fixed, written once
     * by worker 0 before the others start) holds in each. */
    {
        int fds[OC_NVMF_MAX_SUBSYS * OC_NVMF_MAX_NS], n = 0;
        for (int i = 1; i <= t->nsubsys; i++)
            for (int j = 0; j < t->subsys[i].nns; j++)
                fds[n++] = t->subsys[i].ns[j]->fd;
        if (n && (rc = io_uring_register_files(&w->ring, fds, (unsigned)n))) {
            /* worker 0 gave the namespaces their index: the others must
             * hold it too, or not one of them may use it */
            if (w->idx != 0 && t->subsys[1].ns[0]->fixed >= 0) {
                oc_error(LOGC, "worker %d: io_uring_register_files: %s "
                         "(worker 0's ring took them)", w->idx, strerror(-rc));
                return OC_ERR_UNSUPPORTED;
            }
            oc_info(LOGC, "worker %d: io_uring_register_files: %s (using "
                    "plain descriptors)", w->idx, strerror(-rc));
        }
        for (int i = 1, k = 0; w->idx == 0 && !rc && i <= t->nsubsys; i++)
            for (int j = 0; j < t->subsys[i].nns; j++)
                t->subsys[i].ns[j]->fixed = k++;
    }
    /* an empty registered-buffer table: command buffers join it on their
     * first use (qpair.c); without it (kernel before 5.19) plain reads */
    if ((rc = io_uring_register_buffers_sparse(&w->ring, OC_NVMF_REG_BUFS))) {
        oc_info(LOGC, "io_uring_register_buffers_sparse: %s (plain reads "
                "and writes)", strerror(-rc));
        w->reg_off = 1;
    }
    for (uint32_t i = 0; i < OC_NVMF_REG_BUFS; i++)
        w->reg_free[i] = (uint16_t)(OC_NVMF_REG_BUFS - 1 - i);
    w->reg_nfree = OC_NVMF_REG_BUFS;
    return OC_OK;
}

void oc__nvmf_worker_fini(oc_nvmf_worker_t *w)
{
    /* handed over after the worker stopped: never served, closed here */
    for (int i = 0; i < w->mb_n; i++)
        close(w->mb_fds[i]);
    w->mb_n = 0;
    if (w->ring_ok)
        io_uring_queue_exit(&w->ring);
    w->ring_ok = 0;
}

static void arm_accept(oc_nvmf_worker_t *w)
{
    oc_nvmf_target_t *t = w->tgt;
    struct io_uring_sqe *sqe;
    bool ok;

    if (t->accept_armed || w->draining || t->listen_fd < 0)
        return;
    /* not while the guard backs off: a listener out of descriptors would
     * fail again at once, forever */
    pthread_mutex_lock(&t->guard_lock);
    ok = oc__guard_listen_ok(&t->guard, oc__now_us(), NULL);
    pthread_mutex_unlock(&t->guard_lock);
    if (!ok || !(sqe = oc__nvmf_sqe(w)))
        return;
    io_uring_prep_accept(sqe, t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, &t->accept_op);
    t->accept_armed = 1;
}

static void arm_wake(oc_nvmf_worker_t *w)
{
    struct io_uring_sqe *sqe;

    if (w->wake_armed || !(sqe = oc__nvmf_sqe(w)))
        return;
    io_uring_prep_read(sqe, w->wake_fd, &w->wake_val, sizeof(w->wake_val), 0);
    io_uring_sqe_set_data(sqe, &w->wake_op);
    w->wake_armed = 1;
}

/* Woken: connections handed over, and close requests from other threads */
static void woken(oc_nvmf_worker_t *w)
{
    int fds[OC_NVMF_MAILBOX], n;

    pthread_mutex_lock(&w->mb_lock);
    n = w->mb_n;
    memcpy(fds, w->mb_fds, (size_t)n * sizeof(int));
    w->mb_n = 0;
    pthread_mutex_unlock(&w->mb_lock);
    for (int i = 0; i < n; i++) {
        if (w->draining)
            close(fds[i]);
        else
            oc__nvmf_conn_accepted(w, fds[i]);
    }
    if (!atomic_exchange_explicit(&w->close_pending, 0, memory_order_acquire))
        return;
    for (oc_nvmf_conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != OC_NVMF_CONN_CLOSING &&
            atomic_load_explicit(&c->close_req, memory_order_acquire)) {
            oc__nvmf_conn_close(c, atomic_load(&c->close_why));
            next = w->conns; /* closing may free others: start over */
        }
    }
}

/* A connection accepted: to the next worker, round robin, for its whole
 * life.  A worker whose mailbox is full (it is not keeping up) is
 * skipped for this one: worker 0 serves it. */
static void hand_over(oc_nvmf_worker_t *w, int fd)
{
    oc_nvmf_target_t *t = w->tgt;
    oc_nvmf_worker_t *to = &t->w[t->rr++ % (unsigned)t->nworkers];
    int queued = 0;

    if (to != w) {
        pthread_mutex_lock(&to->mb_lock);
        if (to->mb_n < OC_NVMF_MAILBOX) {
            to->mb_fds[to->mb_n++] = fd;
            queued = 1;
        }
        pthread_mutex_unlock(&to->mb_lock);
    }
    if (queued)
        oc__nvmf_worker_wake(to);
    else
        oc__nvmf_conn_accepted(w, fd);
}

/* commands still moving: in-flight I/O, data being received, output
 * queued (held Async Event Requests do not count) */
static int busy(const oc_nvmf_worker_t *w)
{
    for (const oc_nvmf_conn_t *c = w->conns; c; c = c->next) {
        if (c->txq_head)
            return 1;
        for (int i = 0; i < OC_NVMF_CMD_SLOTS; i++)
            if (c->cmds[i].state == OC_NVMF_CMD_EXEC ||
                c->cmds[i].state == OC_NVMF_CMD_H2C)
                return 1;
    }
    return 0;
}

/* draining: does any worker still have commands moving? */
static int any_busy(const oc_nvmf_target_t *t)
{
    for (int i = 0; i < t->nworkers; i++)
        if (atomic_load(&t->w[i].drain_busy))
            return 1;
    return 0;
}

static void tick(oc_nvmf_worker_t *w)
{
    oc_nvmf_target_t *t = w->tgt;
    uint64_t now = oc__nvmf_now_ms();

    /* keep-alive of the controllers whose admin queue is here (their I/O
     * queues elsewhere store last_activity_ms too) */
    for (oc_nvmf_conn_t *c = w->conns, *next; c; c = next) {
        oc_nvmf_ctrl_t *ctrl = c->ctrl;
        uint64_t last;
        next = c->next;
        if (c->qid != 0 || !ctrl || ctrl->admin != c || !ctrl->kato_ms)
            continue;
        last = atomic_load_explicit(&ctrl->last_activity_ms,
                                    memory_order_relaxed);
        if (now > last &&
            now - last > ctrl->kato_ms + (uint64_t)t->conf->kato_grace_ms) {
            atomic_fetch_add_explicit(&w->st.kato_expired, 1,
                                      memory_order_relaxed);
            oc_warn(LOGC, "controller %u (%s): no command for %llu ms "
                    "(keep-alive %u ms): closing it", ctrl->cntlid,
                    ctrl->hostnqn, (unsigned long long)(now - last),
                    ctrl->kato_ms);
            oc__nvmf_ctrl_destroy(ctrl);
            next = w->conns; /* closing may free others: start over */
        }
    }
    for (oc_nvmf_conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != OC_NVMF_CONN_CLOSING && c->txq_head &&
            now - c->tx_progress_ms > (uint64_t)t->conf->send_timeout_ms) {
            atomic_fetch_add_explicit(&w->st.send_stalled, 1,
                                      memory_order_relaxed);
            oc_warn(LOGC, "connection %llu (%s): the host has read "
                    "nothing for %d ms: closing it", (unsigned long long)c->id,
                    c->peer, t->conf->send_timeout_ms);
            /* closing an admin queue closes its controller's other queues,
             * which may be next: start over from the head */
            oc__nvmf_conn_close(c, "host stopped reading");
            next = w->conns;
        }
    }
    if (w->idx == 0)
        oc__log_limits_flush(); /* the guard's "N suppressed" summaries */
    if (w->draining)
        atomic_store(&w->drain_busy, busy(w));
    if (w->draining && w->conns &&
        (!any_busy(t) || now > w->drain_deadline_ms)) {
        if (busy(w))
            oc_warn(LOGC, "drain: commands still running after %d ms; "
                    "closing anyway", DRAIN_MS);
        for (oc_nvmf_conn_t *c = w->conns; c;) {
            if (c->state == OC_NVMF_CONN_CLOSING) {
                c = c->next;
                continue;
            }
            /* closing may free others: start over */
            oc__nvmf_conn_close(c, "target shutting down");
            c = w->conns;
        }
    }
}

/* How many open connections, on any worker, have a descriptor numbered
 * below @p lim: the room they have under a lowered limit
 * (oc__guard_fd_short()).  A descriptor is set before the connection is
 * listed and kept until it is unlisted (both under snap_lock). */
static uint32_t conns_under(oc_nvmf_target_t *t, uint64_t lim)
{
    uint32_t k = 0;

    pthread_mutex_lock(&t->snap_lock);
    for (int i = 0; i < t->nworkers; i++)
        for (const oc_nvmf_conn_t *c = t->w[i].conns; c; c = c->next)
            if ((uint64_t)c->fd < lim)
                k++;
    pthread_mutex_unlock(&t->snap_lock);
    return k;
}

/* Take a slot the guard gave up (expired, shed) out of it and close its
 * connection: here, or by asking its worker while guard_lock still keeps
 * it alive.  @return whether there was one. */
static int guard_close_next(oc_nvmf_worker_t *w, int expired,
                            const char *why)
{
    oc_nvmf_target_t *t = w->tgt;
    oc_nvmf_conn_t *mine = NULL;
    oc_guard_slot_t *s;

    pthread_mutex_lock(&t->guard_lock);
    s = expired ? oc__guard_expired(&t->guard, oc__now_us())
                : oc__guard_shed(&t->guard);
    if (s) {
        oc__guard_remove(&t->guard, s);
        if (!expired)
            t->fd_wait = 1;
        if (oc__nvmf_conn_of(s)->w == w)
            mine = oc__nvmf_conn_of(s);
        else
            oc__nvmf_conn_close_by(w, oc__nvmf_conn_of(s), why);
    }
    pthread_mutex_unlock(&t->guard_lock);
    if (mine)
        oc__nvmf_conn_close(mine, why);
    return s != NULL;
}

/* An accept's completion: a connection, or why not.  Out of descriptors,
 * the connections under the limit become the cap less a reserve
 * (oc__guard_fd_short()), connections still before their Connect are
 * closed, oldest first, down to it, and accepting resumes once one of
 * them has let its descriptor go (qpair.c); with none to close the
 * guard's back-off keeps the listener alone.  Either way no accept is
 * retried at once: that was a loop at 100% CPU logging each failure. */
static void accepted(oc_nvmf_worker_t *w, int res)
{
    oc_nvmf_target_t *t = w->tgt;
    struct rlimit rl;
    oc_status_t st;
    uint32_t due, room;
    int err;

    if (res < 0 && (w->draining || res == -ECANCELED))
        return; /* the listener was closed */
    pthread_mutex_lock(&t->guard_lock);
    st = oc__guard_accept_result(&t->guard, res); /* counted, logged */
    err = t->guard.accept_errno;
    pthread_mutex_unlock(&t->guard_lock);
    if (res >= 0) {
        if (w->draining)
            close(res);
        else
            hand_over(w, res);
        return;
    }
    if (st != OC_ERR_NO_RESOURCE || (err != EMFILE && err != ENFILE))
        return;
    room = conns_under(t, getrlimit(RLIMIT_NOFILE, &rl) == 0
                              ? (uint64_t)rl.rlim_cur
                              : UINT64_MAX);
    pthread_mutex_lock(&t->guard_lock);
    due = oc__guard_fd_short(&t->guard, room);
    pthread_mutex_unlock(&t->guard_lock);
    if (due == 0)
        due = 1; /* the newcomer takes the place of the oldest pending */
    for (; due > 0; due--)
        if (!guard_close_next(w, 0, "closed to make room: out of "
                              "descriptors and it had not connected its "
                              "queue yet"))
            break;
}

/* worker 0: stop listening */
static void stop_listening(oc_nvmf_worker_t *w)
{
    oc_nvmf_target_t *t = w->tgt;

    if (t->accept_armed) {
        struct io_uring_sqe *sqe = oc__nvmf_sqe(w);
        if (sqe) {
            io_uring_prep_cancel(sqe, &t->accept_op, 0);
            io_uring_sqe_set_data64(sqe, 0);
        }
    }
    if (t->listen_fd >= 0)
        close(t->listen_fd);
    t->listen_fd = -1;
    atomic_store_explicit(&t->listen_done, 1, memory_order_release);
}

/* nothing left: no connection, nothing armed that points here, and no
 * connection can still be handed over */
static int finished(oc_nvmf_worker_t *w)
{
    oc_nvmf_target_t *t = w->tgt;
    int n;

    if (!w->draining || w->conns)
        return 0;
    if (w->idx == 0)
        return !t->accept_armed;
    if (!atomic_load_explicit(&t->listen_done, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&w->mb_lock);
    n = w->mb_n;
    pthread_mutex_unlock(&w->mb_lock);
    return n == 0;
}

/* the guard, on worker 0: the limit raised again, the back-off over, the
 * deadlines of connections that have not connected their queue; @return
 * how long the loop may sleep */
static int guard_turn(oc_nvmf_worker_t *w)
{
    oc_nvmf_target_t *t = w->tgt;
    int ms;

    if (w->idx != 0)
        return 100;
    pthread_mutex_lock(&t->guard_lock);
    oc__guard_fd_relax(&t->guard, oc__now_us());
    pthread_mutex_unlock(&t->guard_lock);
    arm_accept(w);
    while (guard_close_next(w, 1, "no ICReq and Connect within "
                           "handshake-ms"))
        ;
    pthread_mutex_lock(&t->guard_lock);
    ms = oc__guard_wait_ms(&t->guard, oc__now_us(), 100);
    pthread_mutex_unlock(&t->guard_lock);
    return ms;
}

void oc__nvmf_worker_run(oc_nvmf_worker_t *w, _Atomic int *stop)
{
    oc_nvmf_target_t *t = w->tgt;
    struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 100000000};
    uint64_t last_tick = 0;
    oc_nvmf_poller_t bp = {.poll_ns = (uint64_t)t->conf->poll_us * 1000};

    w->wake_op.kind = OC_NVMF_OP_WAKE;
    w->wake_op.owner = w;
    arm_wake(w);
    if (w->idx == 0) {
        t->accept_op.kind = OC_NVMF_OP_ACCEPT;
        t->accept_op.owner = t;
        arm_accept(w);
        oc_info(LOGC, "listening on %s (%d subsystem%s, %d worker%s)",
                t->conf->listen, t->nsubsys, t->nsubsys == 1 ? "" : "s",
                t->nworkers, t->nworkers == 1 ? "" : "s");
    }
    for (;;) {
        struct io_uring_cqe *cqe;
        unsigned head, n = 0, done = 0;
        int polling, ms;
        uint64_t now;

        if (!w->draining && atomic_load_explicit(stop, memory_order_relaxed)) {
            if (w->idx == 0)
                oc_info(LOGC, "stopping: no new connections, draining "
                        "in-flight commands");
            w->draining = 1;
            w->drain_deadline_ms = oc__nvmf_now_ms() + DRAIN_MS;
            if (w->idx == 0)
                stop_listening(w);
            last_tick = 0;
        }
        if (finished(w))
            break;
        ms = guard_turn(w);
        ts.tv_sec = ms / 1000;
        ts.tv_nsec = (long long)(ms % 1000) * 1000000;
        oc__nvmf_conn_flush_all(w);
        /* poll-us: shortly after work, look for more without sleeping
         * (busypoll.h says when that pays) */
        polling = bp.poll_ns && oc__nvmf_poll_now(&bp, oc__nvmf_now_ns());
        if (polling)
            io_uring_submit_and_get_events(&w->ring);
        else
            io_uring_submit_and_wait_timeout(&w->ring, &cqe, 1, &ts, NULL);
        io_uring_for_each_cqe(&w->ring, head, cqe)
        {
            oc_nvmf_op_t *op = io_uring_cqe_get_data(cqe);
            int res = cqe->res;
            n++;
            if (!op)
                continue;
            switch (op->kind) {
            case OC_NVMF_OP_ACCEPT:
                t->accept_armed = 0;
                accepted(w, res);
                arm_accept(w);
                break;
            case OC_NVMF_OP_WAKE:
                w->wake_armed = 0;
                woken(w);
                arm_wake(w);
                break;
            case OC_NVMF_OP_RECV:
                oc__nvmf_conn_recv_done(op->owner, res);
                /* the reads of the capsules just parsed go to the disk
                 * now, not after the rest of this batch is handled */
                if (io_uring_sq_ready(&w->ring))
                    io_uring_submit(&w->ring);
                break;
            case OC_NVMF_OP_SEND:
                oc__nvmf_conn_send_done(op->owner, res);
                break;
            case OC_NVMF_OP_FILE: {
                oc_nvmf_cmd_t *cmd = op->owner;
                oc_nvmf_conn_t *c = cmd->conn;
                oc__nvmf_io_file_done(cmd, res);
                oc__nvmf_conn_release_op(c);
                /* responses leave every FLUSH_EVERY completions: the host
                 * starts on the first ones while the rest are checked; when
                 * polling, what completed or arrived meanwhile joins this
                 * batch (at most POLL_BATCH_MAX completions, so that the
                 * loop's timers still run) */
                if (++done % FLUSH_EVERY == 0) {
                    oc__nvmf_conn_flush_all(w);
                    if (polling && n < POLL_BATCH_MAX)
                        io_uring_submit_and_get_events(&w->ring);
                    else
                        io_uring_submit(&w->ring);
                }
                break;
            }
            default:
                break;
            }
        }
        io_uring_cq_advance(&w->ring, n);
        if (bp.poll_ns && n)
            oc__nvmf_poll_work(&bp, oc__nvmf_now_ns());
        now = oc__nvmf_now_ms();
        if (now - last_tick >= (w->draining ? 50 : 1000)) {
            last_tick = now;
            tick(w);
        }
    }
    io_uring_submit(&w->ring);
    atomic_store(&w->drain_busy, 0);
    if (bp.poll_ns)
        oc_info(LOGC, "worker %d: poll-us %d: polling paused %llu times for "
                "other tasks wanting the CPU", w->idx, t->conf->poll_us,
                (unsigned long long)bp.backoffs);
    oc_info(LOGC, "worker %d stopped", w->idx);
}
