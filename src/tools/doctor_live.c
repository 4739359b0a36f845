/*
 * doctor_live.c — the checks that probe this process's live state rather
 * than files: which transports UCX really picks (a UCP context, two
 * workers and endpoints between them), NCCL's network (a one-GPU
 * communicator built in a child process with NCCL_DEBUG=INFO, whose log
 * we read), and the local daemons (offcored through `offcore stat`'s
 * client, offcore-dp's control socket).  With --root and without --live
 * they report n/a: a recorded tree has no live processes.
 */
#include "doctor.h"

#include "metrics/names.h"
#include "stat.h"
#include "transport/transport.h"
#include "util/defaults.h"
#include "util/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *cls_names(unsigned cls, char *buf, size_t len)
{
    buf[0] = '\0';
    for (unsigned b = 1; b <= OC_TR_CLASS_OTHER; b <<= 1)
        if (cls & b) {
            size_t u = strlen(buf);
            snprintf(buf + u, len - u, "%s%s", u ? "+" : "",
                     oc__tr_class_name(b));
        }
    return buf;
}

/* Connect a worker of @p from to a fresh worker of @p to; write the
 * transports UCX picked.  @return their classes, 0 on failure. */
static unsigned probe(oc_tr_context_t *from, oc_tr_worker_t *wf,
                      oc_tr_context_t *to, char *out, size_t len)
{
    oc_tr_worker_t *wt = NULL;
    oc_tr_ep_t *ep = NULL;
    const void *addr;
    size_t alen;
    unsigned cls = 0;
    (void)from;
    snprintf(out, len, "(no endpoint)");
    if (oc__tr_worker_create(to, &wt) != OC_OK)
        return 0;
    oc__tr_worker_address(wt, &addr, &alen);
    if (oc__tr_ep_create(wf, addr, 0, &ep) == OC_OK) {
        cls = oc__tr_ep_transports(ep, out, len);
        oc__tr_ep_destroy(wf, ep);
    }
    oc__tr_worker_destroy(wt);
    return cls;
}

void oc__dr_ucx(oc_dr_t *d)
{
    oc_tr_context_t *ctx = NULL, *net = NULL;
    oc_tr_worker_t *w = NULL;
    char res[1024], local[256], remote[256] = "", c1[64], c2[64] = "";
    const char *tls = getenv("UCX_TLS"), *devs = getenv("UCX_NET_DEVICES");
    unsigned lcls, rcls = 0;

    if (!d->live) {
        oc__dr_set(d, OC_DR_NA, NULL, "live probe: not run against --root "
                   "(add --live to probe this machine's UCX)");
        return;
    }
    if (oc__tr_context_create(&ctx) != OC_OK ||
        oc__tr_worker_create(ctx, &w) != OC_OK) {
        oc__dr_set(d, OC_DR_FAIL, "run ucx_info -d; check UCX_* variables",
                   "UCX does not start (OC_LOG=transport:debug says why)");
        goto out;
    }
    d->ucx_ran = 1;
    oc__tr_context_resources(ctx, res, sizeof(res));
    oc__dr_ev(d, "UCX %s; UCX_TLS=%s UCX_NET_DEVICES=%s", oc__tr_version(),
              tls ? tls : "(unset: all)", devs ? devs : "(unset: all)");
    oc__dr_ev(d, "resources: %s", res);
    lcls = probe(ctx, w, ctx, local, sizeof(local));
    oc__dr_ev(d, "to a peer on this host: %s (%s)", local,
              cls_names(lcls, c1, sizeof(c1)));
    if (oc__tr_context_create_net(&net) == OC_OK) {
        rcls = probe(ctx, w, net, remote, sizeof(remote));
        oc__dr_ev(d, "to a peer as on another host (no shared memory): %s (%s)", remote,
                  cls_names(rcls, c2, sizeof(c2)));
    } else {
        oc__dr_ev(d, "to a peer on another host: no transport (UCX_TLS "
                  "names none that leaves this host)");
    }
    oc__dr_ev(d, "how: endpoints between two workers of this process, "
              "their lanes read from ucp_ep_print_info (UCX %s has no "
              "UCP_EP_ATTR_FIELD_TRANSPORTS; 1.14 added it); the second "
              "peer offers no shared memory or self, as a remote one",
              oc__tr_version());
    if (strstr(remote, "tcp/lo"))
        oc__dr_ev(d, "note: UCX's tcp transport includes lo; between hosts "
                  "name the device (UCX_NET_DEVICES=eth0)");
    d->ucx_net_cls = rcls;
    if (rcls & OC_TR_CLASS_RDMA)
        oc__dr_set(d, OC_DR_OK, NULL, "RDMA toward other hosts (%s), %s "
                   "within this one", remote, c1);
    else if (d->nrdma > 0)
        oc__dr_set(d, OC_DR_FAIL,
                   "UCX sees no usable RDMA device: see the checks above "
                   "(/dev/infiniband, memlock, ports), UCX_TLS and "
                   "UCX_NET_DEVICES; ucx_info -d lists what UCX sees",
                   "UCX picks %s toward other hosts although %d RDMA "
                   "device%s exist%s", rcls ? c2 : "nothing", d->nrdma,
                   d->nrdma == 1 ? "" : "s", d->nrdma == 1 ? "s" : "");
    else
        oc__dr_set(d, OC_DR_WARN,
                   rcls ? "the fast network path needs an RDMA NIC (see "
                          "rdma_devices)" : "for jobs across hosts, let "
                          "UCX_TLS include a network transport (tcp)",
                   "UCX will use %s between hosts and %s within this one",
                   rcls ? c2 : "nothing", c1);
out:
    oc__tr_worker_destroy(w);
    oc__tr_context_destroy(net);
    oc__tr_context_destroy(ctx);
}

int oc__dr_nccl_parse(const char *log, int *gdr)
{
    int net = 0;
    *gdr = 0;
    /* "Using network X" is NCCL's final choice; before it, a transport's
     * "NET/X : Using [devices]" says it came up ("NET/IB : No device
     * found." precedes the fall-back to sockets) */
    if (strstr(log, "Using network IB"))
        net = 1;
    else if (strstr(log, "Using network Socket"))
        net = 2;
    else if (strstr(log, "NET/IB : Using"))
        net = 1;
    else if (strstr(log, "NET/Socket : Using"))
        net = 2;
    if (strstr(log, "GDRDMA") || strstr(log, "GPU Direct RDMA Enabled"))
        *gdr = 1;
    return net;
}

/* Child: a one-GPU communicator with NCCL_DEBUG=INFO; its log on fd 1. */
static void nccl_child(const char *lib)
{
    typedef int (*init_all_t)(void **comm, int n, const int *devs);
    typedef int (*destroy_t)(void *comm);
    void *h, *comm = NULL;
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
    unsetenv("NCCL_DEBUG_FILE"); /* we read its log from our pipe */
    h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        _exit(3);
    init_all_t init_all = (init_all_t)(uintptr_t)dlsym(h, "ncclCommInitAll");
    destroy_t destroy = (destroy_t)(uintptr_t)dlsym(h, "ncclCommDestroy");
    if (init_all == NULL || destroy == NULL)
        _exit(4);
    if (init_all(&comm, 1, NULL) != 0)
        _exit(5);
    destroy(comm);
    _exit(0);
}

void oc__dr_nccl(oc_dr_t *d)
{
    char log[65536];
    size_t used = 0;
    int fds[2], status = 0, gdr;
    pid_t pid;
    void *h;

    if (!d->live) {
        oc__dr_set(d, OC_DR_NA, NULL, "live probe: not run against --root");
        return;
    }
    h = dlopen(d->nccl_lib, RTLD_LAZY | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        size_t n = strlen(d->nccl_lib);
        oc__dr_ev(d, "dlopen %s: %s", d->nccl_lib, e != NULL ? e : "?");
        /* the loader names the file it could not open: NCCL's own (not
         * installed), or one NCCL needs (installed and broken) */
        if (e == NULL || (strncmp(e, d->nccl_lib, n) == 0 &&
                          strncmp(e + n, ": cannot open", 13) == 0))
            oc__dr_set(d, OC_DR_NA, NULL, "NCCL is not installed");
        else
            oc__dr_set(d, OC_DR_WARN, NULL, "%s is installed but does not "
                       "load: %s", d->nccl_lib, e);
        return;
    }
    int (*get_version)(int *) =
        (int (*)(int *))(uintptr_t)dlsym(h, "ncclGetVersion");
    int ver = 0;
    if (get_version)
        get_version(&ver);
    dlclose(h);
    oc__dr_ev(d, "%s: version code %d", d->nccl_lib, ver);
    if (d->ngpu == 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "NCCL present but no GPU to run it on");
        return;
    }
    if (pipe(fds) != 0) {
        oc__dr_set(d, OC_DR_WARN, NULL, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        nccl_child(d->nccl_lib);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        oc__dr_set(d, OC_DR_WARN, NULL, "fork: %s", strerror(errno));
        return;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        clock_gettime(CLOCK_MONOTONIC, &t);
        double left = d->nccl_timeout_s - (double)(t.tv_sec - t0.tv_sec) -
                      (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
        if (left <= 0) {
            kill(pid, SIGKILL);
            oc__dr_ev(d, "NCCL init did not finish in %.0f s: killed",
                      d->nccl_timeout_s);
            break;
        }
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        ssize_t n = read(fds[0], log + used, sizeof(log) - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        if (used == sizeof(log) - 1)
            break;
    }
    log[used] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    for (const char *p = log; *p;) {
        size_t n = strcspn(p, "\n");
        if (memmem(p, n, "NET/", 4) || memmem(p, n, "Using network", 13) ||
            memmem(p, n, "GPU Direct", 10))
            oc__dr_ev(d, "%.*s", (int)(n > 300 ? 300 : n), p);
        p += n + (p[n] == '\n');
    }
    d->nccl_net = oc__dr_nccl_parse(log, &gdr);
    d->gdr_nccl = gdr;
    if (d->nccl_net == 1)
        oc__dr_set(d, OC_DR_OK, NULL, "NCCL uses NET/IB%s",
                   gdr ? " with GPUDirect RDMA" : "");
    else if (d->nccl_net == 2)
        oc__dr_set(d, d->nrdma ? OC_DR_FAIL : OC_DR_WARN,
                   "NCCL falls back to sockets when it cannot open the "
                   "verbs devices: see /dev/infiniband and memlock above; "
                   "NCCL_IB_HCA must name a present device",
                   "NCCL uses NET/Socket (TCP)%s",
                   d->nrdma ? " although RDMA devices exist" : "");
    else
        oc__dr_set(d, OC_DR_WARN, "run a job with NCCL_DEBUG=INFO",
                   "NCCL's log named no network (exit status %d)",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static int unix_connect(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, ok;
    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
    close(fd);
    return ok;
}

void oc__dr_offcored(oc_dr_t *d)
{
    char *o = NULL, *e = NULL, ctl[PATH_MAX];
    size_t ol = 0, el = 0;
    const char *env = getenv("OC_AGENT");
    struct stat sb;
    int sock = 0, rc;

    if (!d->live) {
        oc__dr_set(d, OC_DR_NA, NULL, "live probe: not run against --root");
        return;
    }
    snprintf(ctl, sizeof(ctl), "%s", env && !strncmp(env, "unix:", 5)
                                         ? env + 5 : d->agent_ctl);
    if (stat(ctl, &sb) == 0) {
        int c = unix_connect(ctl);
        /* -2: the socket is there but this user may not connect (EACCES
         * on the socket or its directory): not a stale socket */
        sock = c == 0 ? 1 : c == -EACCES || c == -EPERM ? -2 : -1;
        oc__dr_ev(d, "control socket %s: %s", ctl,
                  c == 0 ? "accepts connections" : strerror(-c));
    } else {
        oc__dr_ev(d, "control socket %s: absent", ctl);
    }
    FILE *out = open_memstream(&o, &ol), *err = open_memstream(&e, &el);
    char *argv[] = {"stat", "--json", "--agent", (char *)(d->agent ? d->agent
                                                  : OC_STAT_DEFAULT_AGENT),
                    NULL};
    rc = out && err ? oc__stat_main(4, argv, out, err) : 1;
    if (out)
        fclose(out);
    if (err)
        fclose(err);
    int series = 0;
    for (const char *p = o; p && (p = strstr(p, "\"name\":")); p++)
        series++;
    /* a peer agent with another cluster key: the mesh is broken even
     * though this agent answers */
    int keyfail = 0;
    for (const char *p = o; rc == 0 && p && (p = strstr(p, "\"name\":\""
                OC_M_PEER_AUTH_FAILURES "\"")); p++) {
        const char *v = strstr(p, "\"value\":");
        keyfail += v != NULL && strtoull(v + 8, NULL, 10) > 0;
    }
    if (rc == 0)
        oc__dr_ev(d, "metrics at %s: %d series", argv[3], series);
    else
        oc__dr_ev(d, "metrics at %s: %.*s", argv[3],
                  e ? (int)strcspn(e, "\n") : 1, e ? e : "?");
    free(o);
    free(e);
    if (sock == -2) {
        d->agent_ok = rc == 0;
        oc__dr_set(d, OC_DR_FAIL, "let this user reach it: restart offcored "
                   "(this version makes its socket 0666 in a 0755 directory; "
                   "the job key is the gate), or fix the modes of the socket "
                   "and its directory",
                   "this user (uid %u) may not connect to %s (EACCES): its "
                   "ranks cannot use the agent", (unsigned)getuid(), ctl);
    } else if (rc == 0 && keyfail > 0) {
        d->agent_ok = 1;
        oc__dr_set(d, OC_DR_FAIL, "give every agent the same cluster key "
                   "file (offcore keygen --out FILE once, then copy it)",
                   "offcored answers, but %d peer agent%s refused the "
                   "handshake: another cluster key (offcore stat says which)",
                   keyfail, keyfail == 1 ? "" : "s");
    } else if (rc == 0) {
        d->agent_ok = 1;
        oc__dr_set(d, sock < 0 ? OC_DR_WARN : OC_DR_OK,
                   sock < 0 ? "remove the stale socket or restart offcored"
                            : NULL,
                   "offcored answers (%d metric series)", series);
    } else if (sock > 0) {
        oc__dr_set(d, OC_DR_FAIL, "start it with --metrics, or point "
                   "--agent/OC_AGENT_METRICS at its metrics address",
                   "offcored's control socket answers but its metrics do not");
    } else if (sock < 0) {
        oc__dr_set(d, OC_DR_FAIL, "restart offcored (systemctl restart "
                   "offcored)", "a stale offcored socket: nothing accepts on "
                   "it");
    } else {
        oc__dr_set(d, OC_DR_NA, "start one: offcored --listen "
                   OC_DEFAULT_AGENT_ADDR " --metrics " OC_DEFAULT_METRICS_ADDR,
                   "no offcored on this host: ranks run inline");
    }
}

void oc__dr_offcore_dp(oc_dr_t *d)
{
    struct stat sb;
    if (!d->live) {
        oc__dr_set(d, OC_DR_NA, NULL, "live probe: not run against --root");
        return;
    }
    if (stat(d->dp_sock, &sb) != 0) {
        oc__dr_set(d, OC_DR_NA, NULL, "no offcore-dp control socket at %s",
                   d->dp_sock);
        return;
    }
    int c = unix_connect(d->dp_sock);
    oc__dr_ev(d, "%s: %s", d->dp_sock, c == 0 ? "accepts connections"
                                              : strerror(-c));
    if (c == 0)
        oc__dr_set(d, OC_DR_OK, NULL, "offcore-dp's control socket answers");
    else
        oc__dr_set(d, OC_DR_FAIL, "restart offcore-dp", "stale offcore-dp "
                   "socket: nothing accepts on it");
}
