/*
 * http.c — the agent's /metrics endpoint: libmicrohttpd with one internal
 * polling thread, which calls the agent's fill callback once per scrape.
 * One thread is plenty (a scrape is a few kilobytes every few seconds) and
 * means fill never runs concurrently with itself.
 *
 * Admission is not libmicrohttpd's: a second thread of ours owns the
 * listening socket and applies offcored's one policy (util/guard.h, the
 * same as the control socket's): accept back-off on EMFILE, a connection
 * cap that evicts the oldest unfinished request, and a deadline for each
 * whole request — libmicrohttpd's own timeout restarts on every byte, so a
 * client sending a header line every few seconds would hold a slot
 * forever.  Accepted sockets go to libmicrohttpd (MHD_add_connection); a
 * connection past its deadline is shut down(2), which libmicrohttpd sees
 * as the peer leaving.  The guard and the list of connections are shared
 * by the two threads under srv->mu; a connection leaves the list in the
 * close notification, which libmicrohttpd sends before closing the
 * socket, so a shutdown() never hits a reused descriptor.
 */
#include "metrics/metrics.h"
#include "metrics/names.h"
#include "util/log.h"
#include "util/version.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct hconn {
    oc_guard_slot_t slot; /* first */
    int             fd;
    bool            killed; /* shut down by us: deadline or eviction */
    struct hconn   *next;
} hconn_t;

struct oc_metrics_server {
    struct MHD_Daemon *mhd;
    oc_metrics_fill_fn fill;
    void *arg;
    uint16_t port;
    size_t hint; /* size of the last answer: HTTP thread only */
    int lfd;     /* our listening socket */
    int wake[2]; /* a pipe: stop the accept thread */
    pthread_t thr;
    int thr_started;
    pthread_mutex_t mu; /* guards guard and conns */
    oc_guard_t guard;
    hconn_t *conns;
    char shown[NI_MAXHOST + 16]; /* bound address, "HOST:PORT" */
};

#define DEFAULT_MAX_CONNS   16
#define DEFAULT_DEADLINE_MS 5000
#define DEFAULT_BACKOFF_MS  100

#define DEFAULT_LISTEN "127.0.0.1"

/* ------------------------------------------------------------ address */

/* Where to listen: one address, or each address a name resolves to, tried
 * in order (so that "localhost" works whether or not ::1 exists here). */
#define MAX_ADDRS 4
typedef struct {
    struct sockaddr_storage ss;
    socklen_t sl;
} addr_t;

/* "HOST:PORT", "[V6]:PORT", ":PORT", "PORT", "HOST", "[V6]" -> addresses. */
static oc_status_t resolve(const char *spec, addr_t *addrs, size_t *naddrs)
{
    char host[256] = "", portstr[8];
    uint16_t port = OC_METRICS_DEFAULT_PORT;
    int any = 0;

    if (spec == NULL || *spec == '\0')
        spec = DEFAULT_LISTEN;
    if (oc__metrics_addr_split(spec, host, sizeof(host), &port, &any) != OC_OK)
        goto bad;

    memset(addrs, 0, sizeof(*addrs));
    if (any) {
        struct sockaddr_in *in = (struct sockaddr_in *)&addrs[0].ss;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        in->sin_port = htons(port);
        addrs[0].sl = sizeof(*in);
        *naddrs = 1;
        return OC_OK;
    }

    struct addrinfo hints, *res = NULL, *ai;
    size_t n = 0;
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || res == NULL) {
        oc_error(OC_COMP_METRICS,
                 "cannot listen on '%s': unknown host "
                 "'%s' (%s)",
                 spec, host, rc ? gai_strerror(rc) : "no address");
        return OC_ERR_CONFIG;
    }
    for (ai = res; ai != NULL && n < MAX_ADDRS; ai = ai->ai_next) {
        if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
            ai->ai_addrlen > sizeof(addrs[n].ss))
            continue;
        memset(&addrs[n], 0, sizeof(addrs[n]));
        memcpy(&addrs[n].ss, ai->ai_addr, ai->ai_addrlen);
        addrs[n++].sl = ai->ai_addrlen;
    }
    freeaddrinfo(res);
    if (n == 0) {
        oc_error(OC_COMP_METRICS,
                 "cannot listen on '%s': no IPv4 or "
                 "IPv6 address for '%s'",
                 spec, host);
        return OC_ERR_CONFIG;
    }
    *naddrs = n;
    return OC_OK;

bad:
    oc_error(OC_COMP_METRICS,
             "bad listen address '%s': expected "
             "HOST:PORT, [IPV6]:PORT, :PORT, PORT or HOST (port 0 picks a "
             "free port, default %d)",
             spec, OC_METRICS_DEFAULT_PORT);
    return OC_ERR_CONFIG;
}

static uint16_t addr_port(const addr_t *a)
{
    return ntohs(a->ss.ss_family == AF_INET6
                     ? ((const struct sockaddr_in6 *)&a->ss)->sin6_port
                     : ((const struct sockaddr_in *)&a->ss)->sin_port);
}

static void show_addr(const addr_t *a, uint16_t port, char *out, size_t size)
{
    const struct sockaddr *sa = (const struct sockaddr *)&a->ss;
    char h[NI_MAXHOST];

    if (getnameinfo(sa, a->sl, h, sizeof(h), NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(h, sizeof(h), "?");
    snprintf(out, size, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", h,
             (unsigned)port);
}

/* Say why binding @p shown failed (errno @p e). */
static oc_status_t explain_failure(const char *shown, int e)
{
    switch (e) {
    case 0:
        oc_error(OC_COMP_METRICS,
                 "libmicrohttpd could not start for %s "
                 "(OC_LOG=metrics:debug shows its messages)",
                 shown);
        return OC_ERR_NO_MEMORY;
    case EADDRINUSE:
        oc_error(OC_COMP_METRICS,
                 "cannot listen on %s: address "
                 "already in use (another offcored or exporter holds the "
                 "port: choose another)",
                 shown);
        return OC_ERR_CONFIG;
    case EADDRNOTAVAIL:
        oc_error(OC_COMP_METRICS,
                 "cannot listen on %s: not an "
                 "address of this host",
                 shown);
        return OC_ERR_CONFIG;
    case EACCES:
        oc_error(OC_COMP_METRICS,
                 "cannot listen on %s: permission "
                 "denied (ports below 1024 need privileges)",
                 shown);
        return OC_ERR_CONFIG;
    case EAFNOSUPPORT:
        oc_error(OC_COMP_METRICS,
                 "cannot listen on %s: address "
                 "family not supported here",
                 shown);
        return OC_ERR_CONFIG;
    default:
        oc_error(OC_COMP_METRICS, "cannot listen on %s: %s", shown,
                 strerror(e));
        return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM
                   ? OC_ERR_NO_MEMORY
                   : OC_ERR_CONFIG;
    }
}

/* ------------------------------------------------------------ requests */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    size_t n;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    oc_debug(OC_COMP_METRICS, "libmicrohttpd: %s", msg);
}

static enum MHD_Result send_response(struct MHD_Connection *conn, unsigned code,
                                     struct MHD_Response *r, const char *type)
{
    enum MHD_Result ret;

    if (r == NULL)
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) !=
        MHD_YES) {
        MHD_destroy_response(r);
        return MHD_NO;
    }
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED &&
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") !=
            MHD_YES) {
        MHD_destroy_response(r);
        return MHD_NO;
    }
    ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned code,
                                 const char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);

    return send_response(conn, code, r, "text/plain; charset=utf-8");
}

static enum MHD_Result send_metrics(oc_metrics_server_t *srv,
                                    struct MHD_Connection *conn)
{
    oc_prom_buf_t buf = {0};
    oc_prom_t p;
    oc_status_t st;
    struct MHD_Response *r;
    char msg[160];

    /* start at the last answer's size: most scrapes then never realloc */
    if (srv->hint > 0 && (buf.data = malloc(srv->hint + 1)) != NULL) {
        buf.cap = srv->hint + 1;
        buf.data[0] = '\0';
    }
    oc__prom_init(&p, &buf);
    /* every daemon's endpoint says which build answers (names.h) */
    oc__prom_family(&p, OC_M_BUILD_INFO, "The build of this daemon",
                    OC_PROM_GAUGE);
    oc__prom_sample(&p, OC_M_BUILD_INFO,
                    OC_PROM_LABELS({"version", oc__version()}), 1);
    st = srv->fill(srv->arg, &p);
    if (st != OC_OK)
        oc_warn(OC_COMP_METRICS,
                "the agent could not fill the "
                "metrics: %s",
                oc_status_string(st));
    else
        st = oc__prom_status(&p); /* already logged by the writer */
    if (st != OC_OK) {
        oc__prom_buf_free(&buf);
        snprintf(msg, sizeof(msg), "metrics unavailable: %s\n",
                 oc_status_string(st));
        return send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
    }
    srv->hint = buf.len + buf.len / 8;
    if (buf.data == NULL)
        r = MHD_create_response_from_buffer(0, (void *)"",
                                            MHD_RESPMEM_PERSISTENT);
    else
        r = MHD_create_response_from_buffer(buf.len, buf.data,
                                            MHD_RESPMEM_MUST_FREE);
    if (r == NULL)
        oc__prom_buf_free(&buf);
    return send_response(conn, MHD_HTTP_OK, r, OC_METRICS_CONTENT_TYPE);
}

/* ------------------------------------------------------------ admission */

static int conn_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci != NULL ? (int)ci->connect_fd : -1;
}

/* Under srv->mu. */
static hconn_t **conn_find(oc_metrics_server_t *srv, int fd)
{
    hconn_t **pp = &srv->conns;
    while (*pp != NULL && (*pp)->fd != fd)
        pp = &(*pp)->next;
    return pp;
}

/* Under srv->mu. */
static void conn_forget(oc_metrics_server_t *srv, hconn_t **pp)
{
    hconn_t *h = *pp;
    *pp = h->next;
    oc__guard_remove(&srv->guard, &h->slot);
    free(h);
}

/* HTTP thread: a request arrived whole (@p pending false: no deadline
 * while it is answered) or its answer went out (true: the next request on
 * this kept-alive connection must arrive whole within the deadline). */
static void conn_mark(oc_metrics_server_t *srv, struct MHD_Connection *conn,
                      bool pending)
{
    int fd = conn_fd(conn);
    hconn_t *h;

    pthread_mutex_lock(&srv->mu);
    h = *conn_find(srv, fd);
    if (h != NULL && !h->killed) {
        if (pending)
            oc__guard_rearm(&srv->guard, &h->slot, oc__now_us());
        else
            oc__guard_settle(&srv->guard, &h->slot);
    }
    pthread_mutex_unlock(&srv->mu);
}

static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)con_cls;
    (void)toe;
    conn_mark(cls, conn, true);
}

/* HTTP thread: called before libmicrohttpd closes the socket. */
static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    oc_metrics_server_t *srv = cls;
    hconn_t **pp;

    (void)socket_context;
    if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
        return;
    pthread_mutex_lock(&srv->mu);
    pp = conn_find(srv, conn_fd(conn));
    if (*pp != NULL)
        conn_forget(srv, pp);
    pthread_mutex_unlock(&srv->mu);
}

/* Accept thread: take what waits on the listener, under the guard. */
static void accept_some(oc_metrics_server_t *srv)
{
    for (int k = 0; k < 32; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        oc_guard_slot_t *evict;
        hconn_t *h, **pp;
        int fd;

        pthread_mutex_lock(&srv->mu);
        if (oc__guard_accept(&srv->guard, srv->lfd, &fd, &ss, &sl) != OC_OK) {
            pthread_mutex_unlock(&srv->mu);
            return;
        }
        h = calloc(1, sizeof(*h));
        if (h == NULL || !oc__guard_admit(&srv->guard, &evict)) {
            pthread_mutex_unlock(&srv->mu);
            free(h);
            close(fd);
            continue;
        }
        if (evict != NULL) { /* the oldest unfinished request makes room */
            hconn_t *old = (hconn_t *)evict;
            oc__guard_remove(&srv->guard, evict);
            old->killed = true;
            shutdown(old->fd, SHUT_RDWR);
        }
        /* an entry left with this fd (no close notification) is stale */
        if (*(pp = conn_find(srv, fd)) != NULL)
            conn_forget(srv, pp);
        h->fd = fd;
        oc__guard_add(&srv->guard, &h->slot, oc__now_us());
        h->next = srv->conns;
        srv->conns = h;
        pthread_mutex_unlock(&srv->mu);
        /* libmicrohttpd closes fd itself if this fails */
        if (MHD_add_connection(srv->mhd, fd, (struct sockaddr *)&ss, sl) !=
            MHD_YES) {
            pthread_mutex_lock(&srv->mu);
            if (*(pp = conn_find(srv, fd)) != NULL)
                conn_forget(srv, pp);
            pthread_mutex_unlock(&srv->mu);
        }
    }
}

static void *accept_thread(void *arg)
{
    oc_metrics_server_t *srv = arg;

    for (;;) {
        struct pollfd p[2];
        uint64_t now = oc__now_us();
        oc_guard_slot_t *s;
        int wait = 1000;
        bool lok;

        pthread_mutex_lock(&srv->mu);
        lok = oc__guard_listen_ok(&srv->guard, now, &wait);
        wait = oc__guard_wait_ms(&srv->guard, now, wait);
        pthread_mutex_unlock(&srv->mu);
        p[0].fd = srv->wake[0];
        p[0].events = POLLIN;
        p[1].fd = lok ? srv->lfd : -1;
        p[1].events = POLLIN;
        p[0].revents = p[1].revents = 0;
        if (poll(p, 2, wait) < 0 && errno != EINTR)
            break;
        if (p[0].revents != 0)
            break;
        if (p[1].revents != 0)
            accept_some(srv);
        /* whole-request deadlines: shut the laggards down */
        now = oc__now_us();
        pthread_mutex_lock(&srv->mu);
        while ((s = oc__guard_expired(&srv->guard, now)) != NULL) {
            hconn_t *h = (hconn_t *)s;
            h->killed = true;
            shutdown(h->fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&srv->mu);
    }
    return NULL;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    oc_metrics_server_t *srv = cls;

    /* the request is whole: no deadline while it is answered */
    conn_mark(srv, conn, false);
    /* Answer at the first call, before any request body: nothing here
     * takes one (libmicrohttpd then discards it). */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return send_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                         "method not allowed: only GET /metrics\n");
    if (strcmp(url, "/metrics") != 0)
        return send_text(conn, MHD_HTTP_NOT_FOUND,
                         "not found: offcored serves GET /metrics\n");
    return send_metrics(srv, conn);
}

/* ------------------------------------------------------------ lifecycle */

/* Bind and listen on @p a; the fd, or -1 with errno set. */
static int bind_listener(const addr_t *a)
{
    const struct sockaddr *sa = (const struct sockaddr *)&a->ss;
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
    int one = 1, e;

    if (fd < 0)
        return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
        bind(fd, sa, a->sl) == 0 && listen(fd, 64) == 0)
        return fd;
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

oc_status_t oc__metrics_server_start(const char *listen_addr,
                                    oc_metrics_fill_fn fill, void *arg,
                                    oc_metrics_server_t **out)
{
    return oc__metrics_server_start_limited(listen_addr, NULL, fill, arg, out);
}

oc_status_t oc__metrics_server_start_limited(const char *listen_addr,
                                            const oc_guard_params_t *limits,
                                            oc_metrics_fill_fn fill, void *arg,
                                            oc_metrics_server_t **out)
{
    static const oc_guard_params_t dflt = {DEFAULT_MAX_CONNS,
                                           DEFAULT_DEADLINE_MS,
                                           DEFAULT_BACKOFF_MS};
    addr_t addrs[MAX_ADDRS];
    size_t naddrs = 0, i;
    oc_metrics_server_t *srv;
    struct sockaddr_storage bound;
    socklen_t bl = sizeof(bound);
    addr_t b;
    char shown[NI_MAXHOST + 16];
    oc_status_t st = OC_ERR_CONFIG;
    int fd = -1, e = 0;

    if (fill == NULL || out == NULL)
        return OC_ERR_INVALID_PARAM;
    st = resolve(listen_addr, addrs, &naddrs);
    if (st != OC_OK)
        return st;
    for (i = 0; i < naddrs && fd < 0; i++)
        if ((fd = bind_listener(&addrs[i])) < 0) {
            e = errno;
            show_addr(&addrs[i], addr_port(&addrs[i]), shown, sizeof(shown));
            st = explain_failure(shown, e);
        }
    if (fd < 0)
        return st;
    srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        close(fd);
        return OC_ERR_NO_MEMORY;
    }
    srv->fill = fill;
    srv->arg = arg;
    srv->lfd = fd;
    srv->wake[0] = srv->wake[1] = -1;
    pthread_mutex_init(&srv->mu, NULL);
    oc__guard_init(&srv->guard, "metrics", limits != NULL ? limits : &dflt);
    oc__guard_log_as(&srv->guard, OC_COMP_METRICS);
    if (getsockname(fd, (struct sockaddr *)&bound, &bl) != 0)
        goto err_sys;
    memset(&b, 0, sizeof(b));
    memcpy(&b.ss, &bound, bl);
    b.sl = bl;
    srv->port = addr_port(&b);
    show_addr(&b, srv->port, srv->shown, sizeof(srv->shown));
    srv->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_AUTO |
            MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
        0, NULL, NULL, handle, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        /* ours is the cap; evicted sockets linger until closed here */
        MHD_OPTION_CONNECTION_LIMIT, 2 * srv->guard.p.max_conns + 8,
        /* an idle kept-alive connection: the whole-request deadline
         * closes it first; this is libmicrohttpd's own belt */
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (srv->mhd == NULL) {
        st = explain_failure(srv->shown, 0);
        goto err;
    }
    if (pipe2(srv->wake, O_CLOEXEC) != 0 ||
        pthread_create(&srv->thr, NULL, accept_thread, srv) != 0)
        goto err_sys;
    srv->thr_started = 1;
    oc_info(OC_COMP_METRICS, "serving http://%s/metrics (at most %u "
            "connections, %u ms per request)", srv->shown,
            srv->guard.p.max_conns, srv->guard.p.deadline_ms);
    *out = srv;
    return OC_OK;

err_sys:
    st = explain_failure(srv->shown, errno ? errno : ENOMEM);
err:
    oc__metrics_server_stop(srv);
    return st;
}

uint16_t oc__metrics_server_port(const oc_metrics_server_t *srv)
{
    return srv != NULL ? srv->port : 0;
}

const char *oc__metrics_server_addr(const oc_metrics_server_t *srv)
{
    return srv != NULL ? srv->shown : "";
}

void oc__metrics_server_counters(oc_metrics_server_t *srv,
                                oc_guard_counters_t *out)
{
    oc__guard_counters(&srv->guard, out);
}

void oc__metrics_server_stop(oc_metrics_server_t *srv)
{
    if (srv == NULL)
        return;
    if (srv->thr_started) {
        (void)!write(srv->wake[1], "x", 1);
        pthread_join(srv->thr, NULL);
    }
    if (srv->mhd != NULL)
        MHD_stop_daemon(srv->mhd); /* closes every connection: notified */
    while (srv->conns != NULL)
        conn_forget(srv, &srv->conns);
    if (srv->wake[0] >= 0) {
        close(srv->wake[0]);
        close(srv->wake[1]);
    }
    close(srv->lfd);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}
