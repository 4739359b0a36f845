/*
 * target.c — the target's life: open the namespaces, listen, and run the
 * io_uring loop that carries every socket and file operation (no thread
 * per connection; one ring for all of them); admission under the guard
 * (util/guard.h: connection cap, deadline for a connection's ICReq and
 * Connect, accept back-off when out of descriptors); keep-alive expiry;
 * drain on SIGTERM/SIGINT: stop accepting, let in-flight commands finish
 * (10 s at most), then close every connection.
 *
 * Threading: oc__nvmf_target_run() runs on one thread that owns everything
 * below; other threads may only read the statistics (atomics) and, under
 * snap_lock, the connection list.
 */
#include "busypoll.h"
#include "target.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
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
 * `cpu N`: this thread (the loop; the metrics thread it starts later
 * inherits the mask) runs on CPU N only.  The loop is woken by the disk's
 * completions and by its hosts' sockets: on the CPU that takes the disk's
 * interrupt, a completion wakes it without an interrupt to another CPU (on
 * a virtual machine each such IPI exits to the hypervisor), and the data
 * the kernel just handled is still in this CPU's cache.  docs/nvmf.md says
 * how to find that CPU and what it measured.  Called before the ring
 * exists, so that the ring's kernel side starts on that CPU too.
 * @return 0, or -1 after logging why (no such CPU, or not one this
 *         process may use)
 */
static int pin_loop(int cpu, int check_only)
{
    cpu_set_t set;

    if (cpu < 0)
        return 0;
    if (sched_getaffinity(0, sizeof(set), &set) || !CPU_ISSET(cpu, &set)) {
        oc_error(LOGC, "cpu %d: not a CPU this process may run on "
                 "(see nproc, taskset -p)", cpu);
        return -1;
    }
    if (check_only)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        oc_error(LOGC, "cpu %d: sched_setaffinity: %s", cpu,
                 strerror(errno));
        return -1;
    }
    oc_info(LOGC, "the loop runs on CPU %d", cpu);
    return 0;
}

static int listen_on(oc_nvmf_target_t *t, const char *addr)
{
    char host[256];
    struct addrinfo hints = {0}, *ai = NULL;
    int fd, one = 1, rc;

    if (oc__nvmf_parse_hostport(addr, host, sizeof(host), &t->port)) {
        oc_error(LOGC, "listen address '%s': want HOST:PORT", addr);
        return -1;
    }
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc) {
        oc_error(LOGC, "listen address '%s': %s", addr, gai_strerror(rc));
        return -1;
    }
    ((struct sockaddr_in *)ai->ai_addr)->sin_port = htons(t->port);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* a target killed a moment ago may still hold the port: its ring's
     * pending accept keeps the socket until the kernel tears the ring
     * down; wait for that (5 s at most) rather than fail a restart */
    for (int i = 0; fd >= 0 && i < 50; i++) {
        rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc == 0 || errno != EADDRINUSE)
            break;
        usleep(100000);
    }
    if (fd < 0 || rc || listen(fd, 128)) {
        oc_error(LOGC, "listen on %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    if (t->conf->advertise[0])
        snprintf(t->traddr, sizeof(t->traddr), "%s", t->conf->advertise);
    else
        snprintf(t->traddr, sizeof(t->traddr), "%s", host);
    t->listen_fd = fd;
    return 0;
}

/* The guard of the listener, its cap fitted to the descriptor limit (as
 * offcored's: 3/4 of it at most, after raising the soft limit to the
 * hard one). */
static void setup_guard(oc_nvmf_target_t *t)
{
    uint64_t nofile;
    uint32_t cap = oc__guard_fit_nofile(t->conf->max_conns, &nofile);
    oc_guard_params_t gp = {cap, t->conf->handshake_ms,
                            t->conf->accept_backoff_ms};

    if (cap < t->conf->max_conns)
        oc_warn(LOGC, "the descriptor limit (%llu) leaves room for %u "
                "connections, fewer than max-connections %u: using %u "
                "(raise LimitNOFILE= / ulimit -n)", (unsigned long long)nofile,
                cap, t->conf->max_conns, cap);
    oc__guard_init(&t->guard, "nvmf", &gp);
    oc__guard_log_as(&t->guard, LOGC);
}

oc_status_t oc__nvmf_target_init(oc_nvmf_target_t *t, oc_nvmf_conf_t *conf,
                                int check_only)
{
    int rc;

    memset(t, 0, sizeof(*t));
    t->conf = conf;
    t->listen_fd = -1;
    pthread_mutex_init(&t->snap_lock, NULL);
    t->subsys[0].discovery = 1;
    snprintf(t->subsys[0].serial, sizeof(t->subsys[0].serial), "discovery");
    for (int i = 0; i < conf->nsubsys; i++) {
        oc_nvmf_subsys_t *s = &t->subsys[i + 1];
        uint32_t h = oc__crc32c(0, conf->subsys[i].nqn,
                               strlen(conf->subsys[i].nqn));
        s->conf = &conf->subsys[i];
        snprintf(s->serial, sizeof(s->serial), "OC%08x", h);
        t->nsubsys = i + 1;
        for (int j = 0; j < s->conf->nns; j++) {
            oc_status_t st = oc__nvmf_ns_open(&s->conf->ns[j], s->conf->nqn,
                                             &s->ns[j]);
            if (st != OC_OK) {
                oc_error(LOGC, "config line %d: namespace %u of %s "
                         "cannot be used (above)", s->conf->ns[j].line,
                         s->conf->ns[j].nsid, s->conf->nqn);
                oc__nvmf_target_fini(t);
                return st;
            }
            s->nns = j + 1;
        }
    }
    if (pin_loop(conf->cpu, check_only)) {
        oc__nvmf_target_fini(t);
        return OC_ERR_CONFIG;
    }
    /* one thread submits and reaps: let the kernel run completions' task
     * work only when we wait (fewer interrupts of the loop); older kernels
     * refuse these flags, then the plain ring does the same job */
    rc = io_uring_queue_init(RING_ENTRIES, &t->ring,
                             IORING_SETUP_SINGLE_ISSUER |
                                 IORING_SETUP_DEFER_TASKRUN);
    if (rc == -EINVAL)
        rc = io_uring_queue_init(RING_ENTRIES, &t->ring, 0);
    if (rc) {
        oc_error(LOGC, "io_uring_queue_init: %s", strerror(-rc));
        t->ring.ring_fd = -1;
        oc__nvmf_target_fini(t);
        return OC_ERR_UNSUPPORTED;
    }
    /* a registered ring descriptor spares each io_uring_enter the file
     * lookup and reference of the ring itself (one or more per loop turn) */
    if (io_uring_register_ring_fd(&t->ring) < 0)
        oc_debug(LOGC, "io_uring_register_ring_fd refused (using the "
                 "plain descriptor)");
    /* the namespaces' files in the ring's file table: Read and Write then
     * skip a file lookup and reference per I/O; without it (old kernel,
     * RLIMIT_NOFILE) they use the plain descriptors */
    {
        int fds[OC_NVMF_MAX_SUBSYS * OC_NVMF_MAX_NS], n = 0;
        for (int i = 1; i <= t->nsubsys; i++)
            for (int j = 0; j < t->subsys[i].nns; j++)
                fds[n++] = t->subsys[i].ns[j]->fd;
        if (n && (rc = io_uring_register_files(&t->ring, fds, (unsigned)n)))
            oc_info(LOGC, "io_uring_register_files: %s (using plain "
                    "descriptors)", strerror(-rc));
        for (int i = 1, k = 0; !rc && i <= t->nsubsys; i++)
            for (int j = 0; j < t->subsys[i].nns; j++)
                t->subsys[i].ns[j]->fixed = k++;
    }
    /* an empty registered-buffer table: command buffers join it on their
     * first use (qpair.c); without it (kernel before 5.19) plain reads */
    if ((rc = io_uring_register_buffers_sparse(&t->ring, OC_NVMF_REG_BUFS))) {
        oc_info(LOGC, "io_uring_register_buffers_sparse: %s (plain reads "
                "and writes)", strerror(-rc));
        t->reg_off = 1;
    }
    for (uint32_t i = 0; i < OC_NVMF_REG_BUFS; i++)
        t->reg_free[i] = (uint16_t)(OC_NVMF_REG_BUFS - 1 - i);
    t->reg_nfree = OC_NVMF_REG_BUFS;
    if (check_only) /* a running target may hold the port: do not bind */
        return OC_OK;
    if (listen_on(t, conf->listen)) {
        oc__nvmf_target_fini(t);
        return OC_ERR_CONFIG;
    }
    setup_guard(t);
    return OC_OK;
}

void oc__nvmf_target_fini(oc_nvmf_target_t *t)
{
    if (t->listen_fd >= 0)
        close(t->listen_fd);
    t->listen_fd = -1;
    for (int i = 1; i <= t->nsubsys; i++)
        for (int j = 0; j < t->subsys[i].nns; j++) {
            oc__nvmf_ns_close(t->subsys[i].ns[j]);
            t->subsys[i].ns[j] = NULL;
        }
    if (t->ring.ring_fd > 0)
        io_uring_queue_exit(&t->ring);
    t->ring.ring_fd = -1;
    pthread_mutex_destroy(&t->snap_lock);
}

static void arm_accept(oc_nvmf_target_t *t)
{
    struct io_uring_sqe *sqe;

    /* not while the guard backs off: a listener out of descriptors would
     * fail again at once, forever */
    if (t->accept_armed || t->draining || t->listen_fd < 0 ||
        !oc__guard_listen_ok(&t->guard, oc__now_us(), NULL))
        return;
    sqe = oc__nvmf_sqe(t);
    if (!sqe)
        return;
    io_uring_prep_accept(sqe, t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, &t->accept_op);
    t->accept_armed = 1;
}

/* commands still moving: in-flight I/O, data being received, output
 * queued (held Async Event Requests do not count) */
static int busy(oc_nvmf_target_t *t)
{
    for (oc_nvmf_conn_t *c = t->conns; c; c = c->next) {
        if (c->txq_head)
            return 1;
        for (int i = 0; i < OC_NVMF_CMD_SLOTS; i++)
            if (c->cmds[i].state == OC_NVMF_CMD_EXEC ||
                c->cmds[i].state == OC_NVMF_CMD_H2C)
                return 1;
    }
    return 0;
}

static void tick(oc_nvmf_target_t *t)
{
    uint64_t now = oc__nvmf_now_ms();

    for (oc_nvmf_ctrl_t *ctrl = t->ctrls, *next; ctrl; ctrl = next) {
        next = ctrl->next;
        if (ctrl->kato_ms &&
            now - ctrl->last_activity_ms >
                ctrl->kato_ms + (uint64_t)t->conf->kato_grace_ms) {
            atomic_fetch_add_explicit(&t->st.kato_expired, 1,
                                      memory_order_relaxed);
            oc_warn(LOGC, "controller %u (%s): no command for %llu ms "
                    "(keep-alive %u ms): closing it", ctrl->cntlid,
                    ctrl->hostnqn,
                    (unsigned long long)(now - ctrl->last_activity_ms),
                    ctrl->kato_ms);
            oc__nvmf_ctrl_destroy(ctrl);
        }
    }
    for (oc_nvmf_conn_t *c = t->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != OC_NVMF_CONN_CLOSING && c->txq_head &&
            now - c->tx_progress_ms > (uint64_t)t->conf->send_timeout_ms) {
            atomic_fetch_add_explicit(&t->st.send_stalled, 1,
                                      memory_order_relaxed);
            oc_warn(LOGC, "connection %llu (%s): the host has read "
                    "nothing for %d ms: closing it", (unsigned long long)c->id,
                    c->peer, t->conf->send_timeout_ms);
            /* closing an admin queue closes its controller's other queues,
             * which may be next: start over from the head */
            oc__nvmf_conn_close(c, "host stopped reading");
            next = t->conns;
        }
    }
    oc__log_limits_flush(); /* the guard's "N suppressed" summaries */
    if (t->draining && t->conns && (!busy(t) || now > t->drain_deadline_ms)) {
        if (busy(t))
            oc_warn(LOGC, "drain: commands still running after %d ms; "
                    "closing anyway", DRAIN_MS);
        while (t->conns && t->conns->state != OC_NVMF_CONN_CLOSING) {
            oc_nvmf_conn_t *c = t->conns;
            /* close the first still-open one; closing may free others */
            for (; c && c->state == OC_NVMF_CONN_CLOSING; c = c->next)
                ;
            if (!c)
                break;
            oc__nvmf_conn_close(c, "target shutting down");
        }
        for (oc_nvmf_conn_t *c = t->conns; c; c = c->next)
            if (c->state != OC_NVMF_CONN_CLOSING)
                oc__nvmf_conn_close(c, "target shutting down");
    }
}

/* How many open connections have a descriptor numbered below @p lim: the
 * room they have under a lowered limit (oc__guard_fd_short()). */
static uint32_t conns_under(const oc_nvmf_target_t *t, uint64_t lim)
{
    uint32_t k = 0;

    for (const oc_nvmf_conn_t *c = t->conns; c; c = c->next)
        if (c->state != OC_NVMF_CONN_CLOSING && (uint64_t)c->fd < lim)
            k++;
    return k;
}

/* An accept's completion: a connection, or why not.  Out of descriptors,
 * the connections under the limit become the cap less a reserve
 * (oc__guard_fd_short()), connections still before their Connect are
 * closed, oldest first, down to it, and accepting resumes once one of
 * them has let its descriptor go (qpair.c); with none to close the
 * guard's back-off keeps the listener alone.  Either way no accept is
 * retried at once: that was a loop at 100% CPU logging each failure. */
static void accepted(oc_nvmf_target_t *t, int res)
{
    struct rlimit rl;
    oc_guard_slot_t *s;
    oc_status_t st;
    uint32_t due;

    if (res >= 0) {
        oc__guard_accept_result(&t->guard, res);
        if (t->draining)
            close(res);
        else
            oc__nvmf_conn_accepted(t, res);
        return;
    }
    if (t->draining || res == -ECANCELED) /* the listener was closed */
        return;
    st = oc__guard_accept_result(&t->guard, res); /* counted, logged */
    if (st != OC_ERR_NO_RESOURCE ||
        (t->guard.accept_errno != EMFILE && t->guard.accept_errno != ENFILE))
        return;
    due = oc__guard_fd_short(&t->guard,
                             conns_under(t, getrlimit(RLIMIT_NOFILE, &rl) == 0
                                                ? (uint64_t)rl.rlim_cur
                                                : UINT64_MAX));
    if (due == 0)
        due = 1; /* the newcomer takes the place of the oldest pending */
    for (; due > 0 && (s = oc__guard_shed(&t->guard)) != NULL; due--) {
        oc__nvmf_conn_close(oc__nvmf_conn_of(s),
                           "closed to make room: out of descriptors and it "
                           "had not connected its queue yet");
        t->fd_wait = 1;
    }
}

oc_status_t oc__nvmf_target_run(oc_nvmf_target_t *t, volatile int *stop)
{
    struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 100000000};
    uint64_t last_tick = 0;
    oc_nvmf_poller_t bp = {.poll_ns = (uint64_t)t->conf->poll_us * 1000};

    t->accept_op.kind = OC_NVMF_OP_ACCEPT;
    t->accept_op.owner = t;
    arm_accept(t);
    oc_info(LOGC, "listening on %s (%d subsystem%s)", t->conf->listen,
            t->nsubsys, t->nsubsys == 1 ? "" : "s");
    for (;;) {
        struct io_uring_cqe *cqe;
        unsigned head, n = 0, done = 0;
        int polling;
        uint64_t now;

        if (*stop && !t->draining) {
            oc_info(LOGC, "stopping: no new connections, draining "
                    "in-flight commands");
            t->draining = 1;
            t->drain_deadline_ms = oc__nvmf_now_ms() + DRAIN_MS;
            if (t->accept_armed) {
                struct io_uring_sqe *sqe = oc__nvmf_sqe(t);
                if (sqe) {
                    io_uring_prep_cancel(sqe, &t->accept_op, 0);
                    io_uring_sqe_set_data64(sqe, 0);
                }
            }
            close(t->listen_fd);
            t->listen_fd = -1;
            last_tick = 0;
        }
        if (t->draining && !t->conns && !t->accept_armed)
            break;
        /* the guard: the limit raised again, the back-off over, the
         * deadlines of connections that have not connected their queue */
        {
            uint64_t us = oc__now_us();
            oc_guard_slot_t *s;
            int ms;

            oc__guard_fd_relax(&t->guard, us);
            arm_accept(t);
            while ((s = oc__guard_expired(&t->guard, us)) != NULL)
                oc__nvmf_conn_close(oc__nvmf_conn_of(s),
                                   "no ICReq and Connect within "
                                   "handshake-ms");
            ms = oc__guard_wait_ms(&t->guard, us, 100);
            ts.tv_sec = ms / 1000;
            ts.tv_nsec = (long long)(ms % 1000) * 1000000;
        }
        oc__nvmf_conn_flush_all(t);
        /* poll-us: shortly after work, look for more without sleeping
         * (busypoll.h says when that pays) */
        polling = bp.poll_ns && oc__nvmf_poll_now(&bp, oc__nvmf_now_ns());
        if (polling)
            io_uring_submit_and_get_events(&t->ring);
        else
            io_uring_submit_and_wait_timeout(&t->ring, &cqe, 1, &ts, NULL);
        io_uring_for_each_cqe(&t->ring, head, cqe)
        {
            oc_nvmf_op_t *op = io_uring_cqe_get_data(cqe);
            int res = cqe->res;
            n++;
            if (!op)
                continue;
            switch (op->kind) {
            case OC_NVMF_OP_ACCEPT:
                t->accept_armed = 0;
                accepted(t, res);
                arm_accept(t);
                break;
            case OC_NVMF_OP_RECV:
                oc__nvmf_conn_recv_done(op->owner, res);
                /* the reads of the capsules just parsed go to the disk
                 * now, not after the rest of this batch is handled */
                if (io_uring_sq_ready(&t->ring))
                    io_uring_submit(&t->ring);
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
                    oc__nvmf_conn_flush_all(t);
                    if (polling && n < POLL_BATCH_MAX)
                        io_uring_submit_and_get_events(&t->ring);
                    else
                        io_uring_submit(&t->ring);
                }
                break;
            }
            default:
                break;
            }
        }
        io_uring_cq_advance(&t->ring, n);
        if (bp.poll_ns && n)
            oc__nvmf_poll_work(&bp, oc__nvmf_now_ns());
        now = oc__nvmf_now_ms();
        if (now - last_tick >= (t->draining ? 50 : 1000)) {
            last_tick = now;
            tick(t);
        }
    }
    io_uring_submit(&t->ring);
    if (bp.poll_ns)
        oc_info(LOGC, "poll-us %d: polling paused %llu times for other "
                "tasks wanting the CPU", t->conf->poll_us,
                (unsigned long long)bp.backoffs);
    oc_info(LOGC, "stopped");
    return OC_OK;
}
