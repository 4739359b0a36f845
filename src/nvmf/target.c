/*
 * target.c — the target's life: open the namespaces, listen, start the
 * workers (worker.c: one thread and one io_uring each, worker 0 on the
 * caller's thread, the listener on it), and, once they have drained on
 * SIGTERM/SIGINT, join them and close everything.
 *
 * Threading: init, run and fini are called by one thread (main.c's); what
 * each worker owns is said in target.h.
 */
#include "target.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOGC OC_COMP_NVMF

/*
 * Which CPUs get a worker: `cores LIST` (or `cpu N`, one), each checked to
 * be one this process may run on; without either, one worker per CPU of
 * the allowed set, pinned to it when there are several (one CPU: one
 * worker, not pinned, as before workers existed).
 * @return the number of workers (cpus[] filled), or -1 after logging why
 */
static int pick_cores(const oc_nvmf_conf_t *conf, int *cpus)
{
    cpu_set_t set;
    int n = 0;

    if (sched_getaffinity(0, sizeof(set), &set)) {
        oc_error(LOGC, "sched_getaffinity: %s", strerror(errno));
        return -1;
    }
    if (conf->ncores > 0 || conf->cpu >= 0) {
        const int *list = conf->ncores > 0 ? conf->cores : &conf->cpu;
        n = conf->ncores > 0 ? conf->ncores : 1;
        for (int i = 0; i < n; i++)
            if (!CPU_ISSET(list[i], &set)) {
                oc_error(LOGC, "cpu %d: not a CPU this process may run on "
                         "(see nproc, taskset -p)", list[i]);
                return -1;
            }
        memcpy(cpus, list, (size_t)n * sizeof(int));
        return n;
    }
    for (int c = 0; c < CPU_SETSIZE && n < OC_NVMF_MAX_WORKERS; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    if (n < CPU_COUNT(&set))
        oc_warn(LOGC, "%d CPUs allowed: %d workers at most (name them with "
                "cores)", CPU_COUNT(&set), OC_NVMF_MAX_WORKERS);
    if (n == 1)
        cpus[0] = -1;
    return n;
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
    int cpus[OC_NVMF_MAX_WORKERS], n;
    oc_status_t st;

    memset(t, 0, sizeof(*t));
    t->conf = conf;
    t->listen_fd = -1;
    pthread_mutex_init(&t->snap_lock, NULL);
    pthread_mutex_init(&t->guard_lock, NULL);
    pthread_mutex_init(&t->ctrl_lock, NULL);
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
            st = oc__nvmf_ns_open(&s->conf->ns[j], s->conf->nqn, &s->ns[j]);
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
    if ((n = pick_cores(conf, cpus)) < 0) {
        oc__nvmf_target_fini(t);
        return OC_ERR_CONFIG;
    }
    t->w = calloc((size_t)n, sizeof(*t->w));
    if (!t->w) {
        oc__nvmf_target_fini(t);
        return OC_ERR_NO_MEMORY;
    }
    t->nworkers = n;
    /* each namespace's counters, a set per worker (target.h) */
    for (int i = 1; i <= t->nsubsys; i++)
        for (int j = 0; j < t->subsys[i].nns; j++) {
            oc_nvmf_ns_t *ns = t->subsys[i].ns[j];
            ns->st = aligned_alloc(64, (size_t)n * sizeof(*ns->st));
            if (!ns->st) {
                oc__nvmf_target_fini(t);
                return OC_ERR_NO_MEMORY;
            }
            memset(ns->st, 0, (size_t)n * sizeof(*ns->st));
            if (oc__nvmf_ns_workers(ns, n)) {
                oc__nvmf_target_fini(t);
                return OC_ERR_NO_MEMORY;
            }
        }
    for (int i = 0; i < n; i++) {
        oc_nvmf_worker_t *w = &t->w[i];
        w->tgt = t;
        w->idx = i;
        w->cpu = cpus[i];
        atomic_init(&w->drain_busy, 1);
        pthread_mutex_init(&w->mb_lock, NULL);
        w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->wake_fd < 0) {
            oc_error(LOGC, "worker %d: eventfd: %s", i, strerror(errno));
            oc__nvmf_target_fini(t);
            return OC_ERR_NO_MEMORY;
        }
    }
    /* worker 0's ring here, on the thread that runs it (the others' on
     * theirs, oc__nvmf_target_run): with --check this proves io_uring */
    if ((st = oc__nvmf_worker_init(&t->w[0], check_only)) != OC_OK) {
        oc__nvmf_target_fini(t);
        return st;
    }
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
    for (int i = 0; i < t->nworkers; i++) {
        oc__nvmf_worker_fini(&t->w[i]);
        if (t->w[i].wake_fd >= 0)
            close(t->w[i].wake_fd);
        pthread_mutex_destroy(&t->w[i].mb_lock);
    }
    free(t->w);
    t->w = NULL;
    t->nworkers = 0;
    for (int i = 1; i <= t->nsubsys; i++)
        for (int j = 0; j < t->subsys[i].nns; j++) {
            free(t->subsys[i].ns[j]->st);
            oc__nvmf_ns_close(t->subsys[i].ns[j]);
            t->subsys[i].ns[j] = NULL;
        }
    pthread_mutex_destroy(&t->snap_lock);
    pthread_mutex_destroy(&t->guard_lock);
    pthread_mutex_destroy(&t->ctrl_lock);
}

/* workers 1..: make the ring on this thread (SINGLE_ISSUER), say so, and
 * run once every worker could start */
static void *worker_main(void *arg)
{
    oc_nvmf_worker_t *w = arg;
    oc_nvmf_target_t *t = w->tgt;
    oc_status_t st = oc__nvmf_worker_init(w, 0);
    int go;

    pthread_mutex_lock(&t->start_lock);
    if (st != OC_OK)
        atomic_store(&t->start_failed, 1);
    t->nready++;
    pthread_cond_broadcast(&t->start_cond);
    while (!t->go)
        pthread_cond_wait(&t->start_cond, &t->start_lock);
    go = t->go;
    pthread_mutex_unlock(&t->start_lock);
    if (go > 0)
        oc__nvmf_worker_run(w, t->stop);
    return NULL;
}

oc_status_t oc__nvmf_target_run(oc_nvmf_target_t *t, _Atomic int *stop)
{
    sigset_t sigs, old;
    int started = 0, rc;

    t->stop = stop;
    pthread_mutex_init(&t->start_lock, NULL);
    pthread_cond_init(&t->start_cond, NULL);
    /* SIGTERM and SIGINT reach the caller's thread (worker 0), not a
     * worker's: the workers inherit a mask without them */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, &old);
    for (int i = 1; i < t->nworkers; i++, started++)
        if ((rc = pthread_create(&t->w[i].thread, NULL, worker_main,
                                 &t->w[i])) != 0) {
            oc_error(LOGC, "worker %d: pthread_create: %s", i, strerror(rc));
            atomic_store(&t->start_failed, 1);
            break;
        }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_lock(&t->start_lock);
    while (t->nready < started)
        pthread_cond_wait(&t->start_cond, &t->start_lock);
    t->go = atomic_load(&t->start_failed) ? -1 : 1;
    pthread_cond_broadcast(&t->start_cond);
    pthread_mutex_unlock(&t->start_lock);
    if (t->go > 0)
        oc__nvmf_worker_run(&t->w[0], stop);
    for (int i = 1; i <= started; i++)
        pthread_join(t->w[i].thread, NULL);
    pthread_cond_destroy(&t->start_cond);
    pthread_mutex_destroy(&t->start_lock);
    if (t->go < 0) {
        oc_error(LOGC, "a worker could not start (above): not serving");
        return OC_ERR_UNSUPPORTED;
    }
    oc_info(LOGC, "stopped");
    return OC_OK;
}
