/*
 * sock.c — control-plane sockets: parse "unix:/path", "tcp:HOST:PORT" and
 * "HOST:PORT"; listen (SO_REUSEADDR; stale Unix socket files removed only
 * when nothing answers on them), accept, and connect with a timeout or
 * without waiting.  Every fd made here is non-blocking and close-on-exec.
 */
#include "ctl/ctl.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/clock.h"

typedef struct {
    bool is_unix;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char host[OC_CTL_ADDR_STRLEN];
    char port[8];
} addr_t;

/* Parse @p s; @p for_listen allows an empty host and port 0. */
static oc_status_t parse(const char *s, bool for_listen, addr_t *a)
{
    const char *rest, *colon;
    const char *why = "want unix:/path, tcp:HOST:PORT or HOST:PORT";
    size_t hlen, plen;
    unsigned long port;
    char *endp;

    memset(a, 0, sizeof(*a));
    if (s == NULL)
        return OC_ERR_INVALID_PARAM;
    if (strncmp(s, "unix:", 5) == 0 || s[0] == '/') {
        rest = s[0] == '/' ? s : s + 5;
        if (rest[0] == '\0' || strlen(rest) >= sizeof(a->path)) {
            why = "a Unix socket path must have 1 to 107 characters";
            goto bad;
        }
        a->is_unix = true;
        strcpy(a->path, rest);
        return OC_OK;
    }
    rest = strncmp(s, "tcp:", 4) == 0 ? s + 4 : s;
    if (rest[0] == '[') {
        const char *close = strchr(rest, ']');
        if (close == NULL || close[1] != ':')
            goto bad;
        hlen = (size_t)(close - rest - 1);
        memcpy(a->host, rest + 1, hlen < sizeof(a->host) ? hlen : 0);
        colon = close + 1;
    } else {
        colon = strrchr(rest, ':');
        if (colon == NULL)
            goto bad;
        hlen = (size_t)(colon - rest);
        if (memchr(rest, ':', hlen) != NULL) {
            why = "an IPv6 address needs brackets: tcp:[::1]:PORT";
            goto bad;
        }
        memcpy(a->host, rest, hlen < sizeof(a->host) ? hlen : 0);
    }
    if (hlen >= sizeof(a->host)) {
        why = "host name too long";
        goto bad;
    }
    plen = strlen(colon + 1);
    errno = 0;
    port = strtoul(colon + 1, &endp, 10);
    if (plen == 0 || plen > 5 || *endp != '\0' || colon[1] < '0' ||
        colon[1] > '9' || port > 65535) {
        why = "the port must be a number from 0 to 65535";
        goto bad;
    }
    if (!for_listen && (port == 0 || hlen == 0)) {
        why = "connecting needs a host and a port other than 0";
        goto bad;
    }
    snprintf(a->port, sizeof(a->port), "%lu", port);
    return OC_OK;
bad:
    oc_error(OC_COMP_CTL, "ctl: bad address \"%s\": %s", s, why);
    return OC_ERR_CTL_ADDR;
}

static oc_status_t resolve(const char *s, const addr_t *a, bool passive,
                           struct addrinfo **res)
{
    struct addrinfo hints;
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    rc = getaddrinfo(a->host[0] ? a->host : NULL, a->port, &hints, res);
    if (rc != 0) {
        oc_error(OC_COMP_CTL, "ctl: %s: cannot resolve: %s", s,
                 gai_strerror(rc));
        return OC_ERR_CTL_ADDR;
    }
    return OC_OK;
}

static void unix_sa(const addr_t *a, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    memcpy(sun->sun_path, a->path, strlen(a->path) + 1);
}

static void sa_name(const struct sockaddr *sa, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(buf, cap, "tcp:%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(buf, cap, "tcp:[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(buf, cap, "unix:?");
    }
}

static void set_nodelay(int fd)
{
    int one = 1;
    /* small request/reply messages: do not wait for Nagle */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* --------------------------------------------------------------- listen */

/* Bind @p fd to a Unix path, removing a socket file nobody answers on. */
static oc_status_t bind_unix(int fd, const char *s, const addr_t *a)
{
    struct sockaddr_un sun;
    struct stat sb;
    int probe, rc;

    unix_sa(a, &sun);
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
        return OC_OK;
    if (errno != EADDRINUSE)
        goto err;
    if (lstat(a->path, &sb) != 0 || !S_ISSOCK(sb.st_mode)) {
        oc_error(OC_COMP_CTL, "ctl: listen %s: the path exists and is not a "
                 "socket; not removing it", s);
        return OC_ERR_CTL_ADDR;
    }
    probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0)
        goto err;
    rc = connect(probe, (struct sockaddr *)&sun, sizeof(sun));
    close(probe);
    if (rc == 0 || errno != ECONNREFUSED) {
        oc_error(OC_COMP_CTL, "ctl: listen %s: address in use (%s)", s,
                 rc == 0 ? "another process accepts on it" : strerror(errno));
        return OC_ERR_CTL_ADDR;
    }
    oc_info(OC_COMP_CTL, "ctl: listen %s: removing a stale socket file", s);
    if (unlink(a->path) != 0 && errno != ENOENT)
        goto err;
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
        return OC_OK;
err:
    oc_error(OC_COMP_CTL, "ctl: listen %s: %s", s, strerror(errno));
    return OC_ERR_CTL_ADDR;
}

/* The socket's directory, made (0755: others may reach what is in it)
 * when missing; its own parent must exist.  Without systemd nothing else
 * makes /run/offcore. */
static oc_status_t make_dir(const char *s, const addr_t *a)
{
    char dir[sizeof(a->path)];
    const char *slash = strrchr(a->path, '/');

    if (slash == NULL || slash == a->path)
        return OC_OK;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - a->path), a->path);
    if (mkdir(dir, 0755) == 0) {
        oc_info(OC_COMP_CTL, "ctl: listen %s: made %s (mode 0755)", s, dir);
        return OC_OK;
    }
    if (errno == EEXIST)
        return OC_OK;
    oc_error(OC_COMP_CTL, "ctl: listen %s: cannot make its directory %s: "
             "%s", s, dir, strerror(errno));
    return OC_ERR_CTL_ADDR;
}

static oc_status_t listen_unix(const char *s, const addr_t *a, unsigned mode,
                               oc_ctl_listener_t *l)
{
    struct stat sb;
    oc_status_t st;
    mode_t old = 0;
    int fd;

    if (mode != 0 && (st = make_dir(s, a)) != OC_OK)
        return st;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        oc_error(OC_COMP_CTL, "ctl: listen %s: %s", s, strerror(errno));
        return OC_ERR_CTL_ADDR;
    }
    /* no moment with more access than asked: made under a umask that
     * grants at most @p mode, then set to exactly it */
    if (mode != 0)
        old = umask((mode_t)(~mode & 0777));
    st = bind_unix(fd, s, a);
    if (mode != 0)
        umask(old);
    if (st != OC_OK)
        goto err_close;
    if (mode != 0 && chmod(a->path, (mode_t)mode) != 0) {
        oc_error(OC_COMP_CTL, "ctl: listen %s: chmod %o: %s", s, mode,
                 strerror(errno));
        st = OC_ERR_CTL_ADDR;
        goto err_unlink;
    }
    if (listen(fd, SOMAXCONN) != 0 || stat(a->path, &sb) != 0) {
        oc_error(OC_COMP_CTL, "ctl: listen %s: %s", s, strerror(errno));
        st = OC_ERR_CTL_ADDR;
        goto err_unlink;
    }
    l->fd = fd;
    snprintf(l->addr, sizeof(l->addr), "unix:%s", a->path);
    snprintf(l->path, sizeof(l->path), "%s", a->path);
    l->dev = (unsigned long)sb.st_dev;
    l->ino = (unsigned long)sb.st_ino;
    return OC_OK;

err_unlink:
    unlink(a->path);
err_close:
    close(fd);
    return st;
}

static oc_status_t listen_tcp(const char *s, const addr_t *a,
                              oc_ctl_listener_t *l)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct addrinfo *res, *ai;
    oc_status_t st;
    int fd = -1, one = 1, err = 0;

    if ((st = resolve(s, a, true, &res)) != OC_OK)
        return st;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
                    SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        /* restart at once on a port whose old connections are in TIME_WAIT */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
            bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            listen(fd, SOMAXCONN) == 0 &&
            getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        oc_error(OC_COMP_CTL, "ctl: listen %s: %s", s, strerror(err));
        return OC_ERR_CTL_ADDR;
    }
    l->fd = fd;
    sa_name((struct sockaddr *)&ss, l->addr, sizeof(l->addr));
    return OC_OK;
}

oc_status_t oc__ctl_listen(const char *addr, oc_ctl_listener_t *l)
{
    return oc__ctl_listen_mode(addr, 0, l);
}

oc_status_t oc__ctl_listen_mode(const char *addr, unsigned mode,
                                oc_ctl_listener_t *l)
{
    oc_ctl_listener_t nl;
    oc_status_t st;
    addr_t a;

    if (addr == NULL || l == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((st = parse(addr, true, &a)) != OC_OK)
        return st;
    memset(&nl, 0, sizeof(nl));
    nl.fd = -1;
    st = a.is_unix ? listen_unix(addr, &a, mode & 0777, &nl)
                  : listen_tcp(addr, &a, &nl);
    if (st != OC_OK)
        return st;
    *l = nl;
    oc_debug(OC_COMP_CTL, "ctl: listening on %s", l->addr);
    return OC_OK;
}

void oc__ctl_listener_close(oc_ctl_listener_t *l)
{
    struct stat sb;

    if (l == NULL || l->fd < 0)
        return;
    /* remove the socket file unless another agent has replaced it */
    if (l->path[0] != '\0' && stat(l->path, &sb) == 0 &&
        (unsigned long)sb.st_dev == l->dev && (unsigned long)sb.st_ino == l->ino)
        unlink(l->path);
    close(l->fd);
    l->fd = -1;
    l->path[0] = '\0';
}

oc_status_t oc__ctl_accept(oc_ctl_listener_t *l, oc_guard_t *g, int *fd_out,
                          char *peer, size_t peer_cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    oc_status_t st;
    int fd;

    if (l == NULL || l->fd < 0 || g == NULL || fd_out == NULL)
        return OC_ERR_INVALID_PARAM;
    /* the back-off policy on EMFILE & co is the guard's (util/guard.h) */
    if ((st = oc__guard_accept(g, l->fd, &fd, &ss, &sl)) != OC_OK)
        return st;
    if (ss.ss_family != AF_UNIX)
        set_nodelay(fd);
    if (peer != NULL && peer_cap > 0) {
        uint32_t pid, uid;
        if (ss.ss_family != AF_UNIX)
            sa_name((struct sockaddr *)&ss, peer, peer_cap);
        else if (oc__ctl_peer_cred(fd, &pid, &uid) == OC_OK)
            snprintf(peer, peer_cap, "unix:pid=%u,uid=%u", pid, uid);
        else
            snprintf(peer, peer_cap, "unix:?");
    }
    *fd_out = fd;
    return OC_OK;
}

oc_status_t oc__ctl_peer_cred(int fd, uint32_t *pid, uint32_t *uid)
{
    struct ucred cr;
    socklen_t cl = sizeof(cr);

    if (pid == NULL || uid == NULL)
        return OC_ERR_INVALID_PARAM;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
        cl != sizeof(cr) || cr.pid <= 0)
        return OC_ERR_UNSUPPORTED;
    *pid = (uint32_t)cr.pid;
    *uid = (uint32_t)cr.uid;
    return OC_OK;
}

/* -------------------------------------------------------------- connect */

/* Nothing answering is often expected (OC_PLACEMENT=auto, a peer agent
 * not up yet): callers say how much it matters; this says why at debug. */
static oc_status_t connect_errno(const char *s, int err, bool quiet)
{
    (void)quiet;
    oc_debug(OC_COMP_CTL, "ctl: connect %s: %s", s, strerror(err));
    /* a Unix socket there that this user may not open: not "nothing
     * answers" (a user told that removes a working agent's socket) */
    if ((err == EACCES || err == EPERM) &&
        (strncmp(s, "unix:", 5) == 0 || s[0] == '/'))
        return OC_ERR_CTL_DENIED;
    return OC_ERR_CTL_CONNECT;
}

/* One connect attempt to @p sa; OK, INPROGRESS (fd set), NO_RESOURCE (a
 * full Unix backlog: fd closed) or CTL_CONNECT (*err set). */
static oc_status_t start_one(const struct sockaddr *sa, socklen_t len,
                             int *fd_out, int *err)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);

    if (fd < 0) {
        *err = errno;
        return OC_ERR_CTL_CONNECT;
    }
    if (sa->sa_family != AF_UNIX)
        set_nodelay(fd);
    while (connect(fd, sa, len) != 0) {
        if (errno == EINTR)
            continue;
        *err = errno;
        if (errno == EINPROGRESS) {
            *fd_out = fd;
            return OC_INPROGRESS;
        }
        close(fd);
        return errno == EAGAIN ? OC_ERR_NO_RESOURCE : OC_ERR_CTL_CONNECT;
    }
    *fd_out = fd;
    return OC_OK;
}

static int so_error(int fd)
{
    int err = 0;
    socklen_t el = sizeof(err);

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
        err = errno;
    return err;
}

oc_status_t oc__ctl_connect_finish(int fd)
{
    int err = so_error(fd);

    if (err == 0)
        return OC_OK;
    oc_debug(OC_COMP_CTL, "ctl: connect fd %d: %s", fd, strerror(err));
    return OC_ERR_CTL_CONNECT;
}

oc_status_t oc__ctl_connect_start(const char *addr, int *fd_out)
{
    struct sockaddr_un sun;
    struct addrinfo *res;
    oc_status_t st;
    addr_t a;
    int err = 0;

    if (addr == NULL || fd_out == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((st = parse(addr, false, &a)) != OC_OK)
        return st;
    if (a.is_unix) {
        unix_sa(&a, &sun);
        st = start_one((struct sockaddr *)&sun, sizeof(sun), fd_out, &err);
    } else {
        if ((st = resolve(addr, &a, false, &res)) != OC_OK)
            return st;
        st = start_one(res->ai_addr, res->ai_addrlen, fd_out, &err);
        freeaddrinfo(res);
    }
    if (st == OC_ERR_CTL_CONNECT)
        return connect_errno(addr, err, true);
    return st;
}

/* Connect to one address until the deadline (< 0: none). */
static oc_status_t connect_one(const struct sockaddr *sa, socklen_t len,
                               int64_t deadline, int *fd_out, int *err)
{
    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - oc__now_ms();
        oc_status_t st = start_one(sa, len, fd_out, err);
        struct pollfd pfd;
        int rc;

        if (st == OC_OK || st == OC_ERR_CTL_CONNECT)
            return st;
        if (deadline >= 0 && left <= 0) {
            if (st == OC_INPROGRESS)
                close(*fd_out);
            return OC_ERR_CTL_TIMEOUT;
        }
        if (st == OC_ERR_NO_RESOURCE) { /* full Unix backlog: retry soon */
            poll(NULL, 0, left < 0 || left > 10 ? 10 : (int)left);
            continue;
        }
        pfd.fd = *fd_out;
        pfd.events = POLLOUT;
        do {
            left = deadline < 0 ? -1 : deadline - oc__now_ms();
            rc = poll(&pfd, 1, left < 0 ? -1 : left > 1000000 ? 1000000
                                                              : (int)left);
        } while ((rc < 0 && errno == EINTR) ||
                 (rc == 0 && (deadline < 0 || deadline > oc__now_ms())));
        if (rc <= 0) {
            *err = rc < 0 ? errno : ETIMEDOUT;
            close(*fd_out);
            return rc == 0 ? OC_ERR_CTL_TIMEOUT : OC_ERR_CTL_CONNECT;
        }
        if ((*err = so_error(*fd_out)) == 0)
            return OC_OK;
        close(*fd_out);
        return OC_ERR_CTL_CONNECT;
    }
}

oc_status_t oc__ctl_connect(const char *addr, int timeout_ms, int *fd_out)
{
    int64_t deadline = timeout_ms >= 0 ? oc__now_ms() + timeout_ms : -1;
    struct sockaddr_un sun;
    struct addrinfo *res, *ai;
    oc_status_t st;
    addr_t a;
    int fd = -1, err = 0;

    if (addr == NULL || fd_out == NULL)
        return OC_ERR_INVALID_PARAM;
    if ((st = parse(addr, false, &a)) != OC_OK)
        return st;
    if (a.is_unix) {
        unix_sa(&a, &sun);
        st = connect_one((struct sockaddr *)&sun, sizeof(sun), deadline, &fd,
                         &err);
    } else {
        if ((st = resolve(addr, &a, false, &res)) != OC_OK)
            return st;
        st = OC_ERR_CTL_CONNECT;
        for (ai = res; ai != NULL && st == OC_ERR_CTL_CONNECT; ai = ai->ai_next)
            st = connect_one(ai->ai_addr, ai->ai_addrlen, deadline, &fd, &err);
        freeaddrinfo(res);
    }
    if (st == OC_ERR_CTL_TIMEOUT) {
        oc_debug(OC_COMP_CTL, "ctl: connect %s: no answer in %d ms", addr,
                timeout_ms);
        return st;
    }
    if (st != OC_OK)
        return connect_errno(addr, err, false);
    *fd_out = fd;
    return OC_OK;
}
