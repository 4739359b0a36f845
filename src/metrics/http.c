/*
 * http.c — the agent's /metrics endpoint: libmicrohttpd with one internal
 * polling thread, which calls the agent's fill callback once per scrape.
 * One thread is plenty (a scrape is a few kilobytes every few seconds) and
 * means fill never runs concurrently with itself.
 */
#include "metrics/metrics.h"
#include "util/log.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct oc_metrics_server {
    struct MHD_Daemon *mhd;
    oc_metrics_fill_fn fill;
    void *arg;
    uint16_t port;
    size_t hint; /* size of the last answer: HTTP thread only */
};

#define DEFAULT_LISTEN "127.0.0.1"

/* ------------------------------------------------------------ address */

static int parse_port(const char *s, uint16_t *port)
{
    unsigned long v = 0;

    if (*s == '\0' || strlen(s) > 5)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (unsigned long)(*s - '0');
    }
    if (v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

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
    const char *colon;
    uint16_t port = OC_METRICS_DEFAULT_PORT;
    int any = 0;

    if (spec == NULL || *spec == '\0')
        spec = DEFAULT_LISTEN;
    if (strspn(spec, "0123456789") == strlen(spec)) {
        any = 1;
        if (parse_port(spec, &port) < 0)
            goto bad;
    } else if (spec[0] == '[') {
        const char *rb = strchr(spec, ']');
        if (rb == NULL || (size_t)(rb - spec - 1) >= sizeof(host) ||
            rb == spec + 1)
            goto bad;
        memcpy(host, spec + 1, (size_t)(rb - spec - 1));
        host[rb - spec - 1] = '\0';
        if (rb[1] != '\0' && (rb[1] != ':' || parse_port(rb + 2, &port) < 0))
            goto bad;
    } else if ((colon = strchr(spec, ':')) != NULL &&
               strchr(colon + 1, ':') == NULL) {
        if ((size_t)(colon - spec) >= sizeof(host) ||
            parse_port(colon + 1, &port) < 0)
            goto bad;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        any = host[0] == '\0';
    } else {
        /* a bare name, IPv4 or IPv6 address: the default port */
        if (strlen(spec) >= sizeof(host))
            goto bad;
        strcpy(host, spec);
    }

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
        oc_error(OC_COMP_AGENT,
                 "metrics: cannot listen on '%s': unknown host "
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
        oc_error(OC_COMP_AGENT,
                 "metrics: cannot listen on '%s': no IPv4 or "
                 "IPv6 address for '%s'",
                 spec, host);
        return OC_ERR_CONFIG;
    }
    *naddrs = n;
    return OC_OK;

bad:
    oc_error(OC_COMP_AGENT,
             "metrics: bad listen address '%s': expected "
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

/* libmicrohttpd says only "failed to bind": bind a probe socket to the same
 * address to learn and log why. */
static oc_status_t explain_failure(const addr_t *a, const char *shown)
{
    const struct sockaddr *sa = (const struct sockaddr *)&a->ss;
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    int e = 0;

    if (fd < 0)
        e = errno;
    else {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, sa, a->sl) < 0)
            e = errno;
        close(fd);
    }
    switch (e) {
    case 0:
        oc_error(OC_COMP_AGENT,
                 "metrics: libmicrohttpd could not start on %s "
                 "(OC_LOG=agent:debug shows its messages)",
                 shown);
        return OC_ERR_NO_MEMORY;
    case EADDRINUSE:
        oc_error(OC_COMP_AGENT,
                 "metrics: cannot listen on %s: address "
                 "already in use (another offcored or exporter holds the "
                 "port: choose another)",
                 shown);
        return OC_ERR_CONFIG;
    case EADDRNOTAVAIL:
        oc_error(OC_COMP_AGENT,
                 "metrics: cannot listen on %s: not an "
                 "address of this host",
                 shown);
        return OC_ERR_CONFIG;
    case EACCES:
        oc_error(OC_COMP_AGENT,
                 "metrics: cannot listen on %s: permission "
                 "denied (ports below 1024 need privileges)",
                 shown);
        return OC_ERR_CONFIG;
    case EAFNOSUPPORT:
        oc_error(OC_COMP_AGENT,
                 "metrics: cannot listen on %s: address "
                 "family not supported here",
                 shown);
        return OC_ERR_CONFIG;
    default:
        oc_error(OC_COMP_AGENT, "metrics: cannot listen on %s: %s", shown,
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
    oc_debug(OC_COMP_AGENT, "metrics: libmicrohttpd: %s", msg);
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
    oc_prom_init(&p, &buf);
    st = srv->fill(srv->arg, &p);
    if (st != OC_OK)
        oc_warn(OC_COMP_AGENT,
                "metrics: the agent could not fill the "
                "metrics: %s",
                oc_status_string(st));
    else
        st = oc_prom_status(&p); /* already logged by the writer */
    if (st != OC_OK) {
        oc_prom_buf_free(&buf);
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
        oc_prom_buf_free(&buf);
    return send_response(conn, MHD_HTTP_OK, r, OC_METRICS_CONTENT_TYPE);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    oc_metrics_server_t *srv = cls;

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

static struct MHD_Daemon *start_on(oc_metrics_server_t *srv, const addr_t *a)
{
    const struct sockaddr *sa = (const struct sockaddr *)&a->ss;
    unsigned flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_AUTO;

    if (sa->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, addr_port(a), NULL, NULL, handle, srv,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR, sa,
        /* scrapers are few; bound what a misbehaving client can hold */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
}

oc_status_t oc_metrics_server_start(const char *listen_addr,
                                    oc_metrics_fill_fn fill, void *arg,
                                    oc_metrics_server_t **out)
{
    addr_t addrs[MAX_ADDRS];
    size_t naddrs = 0, i;
    oc_metrics_server_t *srv;
    const union MHD_DaemonInfo *info;
    char shown[NI_MAXHOST + 16];
    oc_status_t st;

    if (fill == NULL || out == NULL)
        return OC_ERR_INVALID_PARAM;
    st = resolve(listen_addr, addrs, &naddrs);
    if (st != OC_OK)
        return st;
    srv = calloc(1, sizeof(*srv));
    if (srv == NULL)
        return OC_ERR_NO_MEMORY;
    srv->fill = fill;
    srv->arg = arg;
    for (i = 0; i < naddrs && srv->mhd == NULL; i++)
        srv->mhd = start_on(srv, &addrs[i]);
    if (srv->mhd == NULL) {
        free(srv);
        for (i = 0; i < naddrs; i++) {
            show_addr(&addrs[i], addr_port(&addrs[i]), shown, sizeof(shown));
            st = explain_failure(&addrs[i], shown);
        }
        return st;
    }
    info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
    srv->port =
        info != NULL && info->port != 0 ? info->port : addr_port(&addrs[i - 1]);
    show_addr(&addrs[i - 1], srv->port, shown, sizeof(shown));
    oc_info(OC_COMP_AGENT, "metrics: serving http://%s/metrics", shown);
    *out = srv;
    return OC_OK;
}

uint16_t oc_metrics_server_port(const oc_metrics_server_t *srv)
{
    return srv != NULL ? srv->port : 0;
}

void oc_metrics_server_stop(oc_metrics_server_t *srv)
{
    if (srv == NULL)
        return;
    MHD_stop_daemon(srv->mhd);
    free(srv);
}
