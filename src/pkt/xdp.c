/*
 * xdp.c — the AF_XDP port backend, through libxdp's xsk API (pkt.h).
 *
 * One AF_XDP socket per (port, queue).  Every socket of queue q, on any
 * port, shares queue q's pool as its UMEM (XDP_SHARED_UMEM; the first one
 * creates the UMEM, the others bring their own fill and completion rings),
 * so forwarding a frame from one port to another moves its address from
 * one socket's rx ring to the other's tx ring: no copy in user space.  On
 * veth the kernel copies (copy mode); drivers with zero-copy skip that too.
 * libxdp loads and shares its default XSK redirect program per interface.
 *
 * Threading: queue q's socket and rings are touched only by the thread
 * that serves queue q (rx/tx/reap); counters are written with relaxed
 * atomic stores so oc__port_stats() may read them from the control thread.
 */
#include "pool_int.h"
#include "port_int.h"
#include "util/log.h"
#include "util/counter.h"

#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

typedef struct {
    struct xsk_socket    *xsk;
    struct xsk_ring_cons  rx;
    struct xsk_ring_prod  tx;
    struct xsk_ring_prod *fill; /* the UMEM's own, or fill_own */
    struct xsk_ring_cons *comp;
    struct xsk_ring_prod  fill_own;
    struct xsk_ring_cons  comp_own;
    oc_pkt_pool_t        *pool;
    int                   fd;
    uint32_t              tx_outstanding;
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_full, rx_no_buf;
} __attribute__((aligned(64))) xq_t;

#define XQ(port) ((xq_t *)(port)->q)

static void xq_refill(xq_t *xq)
{
    oc_pkt_pool_t *p = xq->pool;
    uint32_t idx, want = xsk_prod_nb_free(xq->fill, p->nfree);

    if (want > p->nfree) {
        want = p->nfree;
        if (want == 0) {
            OC__CTR_ADD(xq->rx_no_buf, 1);
            return;
        }
    }
    if (want == 0 || xsk_ring_prod__reserve(xq->fill, want, &idx) != want)
        return;
    for (uint32_t i = 0; i < want; i++)
        *xsk_ring_prod__fill_addr(xq->fill, idx + i) =
            (uint64_t)p->free[--p->nfree] << p->shift;
    xsk_ring_prod__submit(xq->fill, want);
    if (xsk_ring_prod__needs_wakeup(xq->fill))
        (void)recvfrom(xq->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

static uint32_t xq_reap(xq_t *xq)
{
    uint32_t idx, n;

    if (xq->tx_outstanding == 0)
        return 0;
    /* copy mode sends only when asked to (and a bounded batch per call) */
    if (xsk_ring_prod__needs_wakeup(&xq->tx))
        (void)sendto(xq->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    n = xsk_ring_cons__peek(xq->comp, xq->tx_outstanding, &idx);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr = *xsk_ring_cons__comp_addr(xq->comp, idx + i);
        oc__pkt_put(xq->pool, oc__pkt_of_off(xq->pool, addr));
    }
    if (n > 0) {
        xsk_ring_cons__release(xq->comp, n);
        xq->tx_outstanding -= n;
    }
    return n;
}

uint16_t oc__xdp_rx_burst(oc_port_t *port, uint32_t q, oc_pkt_t **pkts,
                          uint16_t n)
{
    xq_t *xq = &XQ(port)[q];
    oc_pkt_pool_t *p = xq->pool;
    uint32_t idx, got;
    uint64_t bytes = 0;

    got = xsk_ring_cons__peek(&xq->rx, n, &idx);
    for (uint32_t i = 0; i < got; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&xq->rx, idx + i);
        oc_pkt_t *pkt = oc__pkt_of_off(p, d->addr);
        pkt->data = p->area + d->addr;
        pkt->len = d->len;
        pkts[i] = pkt;
        bytes += d->len;
    }
    if (got > 0) {
        xsk_ring_cons__release(&xq->rx, got);
        OC__CTR_ADD(xq->rx_packets, got);
        OC__CTR_ADD(xq->rx_bytes, bytes);
    }
    xq_refill(xq);
    return (uint16_t)got;
}

uint16_t oc__xdp_tx_burst(oc_port_t *port, uint32_t q, oc_pkt_t **pkts,
                          uint16_t n)
{
    xq_t *xq = &XQ(port)[q];
    uint8_t *area = xq->pool->area;
    uint32_t idx, k;
    uint64_t bytes = 0;

    if (n == 0)
        return 0;
    xq_reap(xq);
    k = xsk_ring_prod__reserve(&xq->tx, n, &idx);
    if (k == 0 && xq->tx_outstanding > 0) {
        xq_reap(xq); /* the ring was full: one more kick and reap */
        k = xsk_ring_prod__reserve(&xq->tx, n, &idx);
    }
    for (uint32_t i = 0; i < k; i++) {
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&xq->tx, idx + i);
        d->addr = (uint64_t)(pkts[i]->data - area);
        d->len = pkts[i]->len;
        bytes += pkts[i]->len;
    }
    if (k > 0) {
        xsk_ring_prod__submit(&xq->tx, k);
        xq->tx_outstanding += k;
        (void)sendto(xq->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
        OC__CTR_ADD(xq->tx_packets, k);
        OC__CTR_ADD(xq->tx_bytes, bytes);
    }
    if (k < n)
        OC__CTR_ADD(xq->tx_full, 1);
    return (uint16_t)k;
}

uint32_t oc__xdp_tx_reap(oc_port_t *port, uint32_t q)
{
    return xq_reap(&XQ(port)[q]);
}

int oc__xdp_fd(const oc_port_t *port, uint32_t q) { return XQ(port)[q].fd; }

void oc__xdp_free_bulk(oc_port_t *port, uint32_t q, oc_pkt_t *const *pkts,
                       uint16_t n)
{
    oc__pkt_free_bulk(XQ(port)[q].pool, pkts, n);
}

void oc__xdp_stats(const oc_port_t *port, oc_port_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t q = 0; q < port->nqueues; q++) {
        xq_t *xq = &XQ(port)[q];
        struct xdp_statistics st;
        socklen_t len = sizeof(st);
        out->rx_packets += OC__CTR_GET(xq->rx_packets);
        out->rx_bytes += OC__CTR_GET(xq->rx_bytes);
        out->tx_packets += OC__CTR_GET(xq->tx_packets);
        out->tx_bytes += OC__CTR_GET(xq->tx_bytes);
        out->tx_full += OC__CTR_GET(xq->tx_full);
        out->rx_no_buf += OC__CTR_GET(xq->rx_no_buf);
        memset(&st, 0, sizeof(st));
        if (getsockopt(xq->fd, SOL_XDP, XDP_STATISTICS, &st, &len) == 0) {
            out->kernel_rx_dropped += st.rx_dropped + st.rx_ring_full +
                                      st.rx_fill_ring_empty_descs;
            out->kernel_tx_invalid += st.tx_invalid_descs;
        }
    }
}

/* libbpf and libxdp print to stderr by default, warnings included that
 * are normal here (no bpffs inside `ip netns exec`: libxdp loads a single
 * program, docs/facts.md).  Their lines go to our log at debug level; failures
 * that matter are logged by us with the call that failed. */
static int lib_print(const char *lib, const char *fmt, va_list ap)
{
    char line[512];
    size_t n;
    if (!oc__log_enabled(OC_COMP_PKT, OC_LOG_DEBUG))
        return 0;
    vsnprintf(line, sizeof(line), fmt, ap);
    n = strlen(line);
    if (n > 0 && line[n - 1] == '\n')
        line[n - 1] = '\0';
    oc_debug(OC_COMP_PKT, "%s: %s", lib, line);
    return 0;
}

static int bpf_print(enum libbpf_print_level l, const char *fmt, va_list ap)
{
    return lib_print("libbpf", fmt, ap);
}

static int xdp_print(enum libxdp_print_level l, const char *fmt, va_list ap)
{
    return lib_print("libxdp", fmt, ap);
}

void oc__pkt_quiet_libs(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    libbpf_set_print(bpf_print);
    libxdp_set_print(xdp_print);
}

/* The pool's UMEM: created by its first socket, deleted with its last. */
static int umem_get(oc_pkt_pool_t *p, uint32_t ring_size)
{
    struct xsk_umem_config uc = {
        .fill_size = ring_size,
        .comp_size = ring_size,
        .frame_size = p->buf_size,
        .frame_headroom = 0,
        .flags = 0,
    };
    struct xsk_umem *umem;
    int rc;

    if (p->xsk_umem != NULL)
        return 0;
    /* libxdp needs zeroed ring structs (docs/facts.md) */
    p->xsk_fill = calloc(1, sizeof(struct xsk_ring_prod));
    p->xsk_comp = calloc(1, sizeof(struct xsk_ring_cons));
    if (p->xsk_fill == NULL || p->xsk_comp == NULL) {
        rc = -ENOMEM;
        goto err;
    }
    rc = xsk_umem__create(&umem, p->area, p->area_len, p->xsk_fill,
                          p->xsk_comp, &uc);
    if (rc != 0)
        goto err;
    p->xsk_umem = umem;
    return 0;
err:
    free(p->xsk_fill);
    free(p->xsk_comp);
    p->xsk_fill = p->xsk_comp = NULL;
    return rc;
}

static void umem_put(oc_pkt_pool_t *p)
{
    if (p->xsk_umem == NULL || p->xsk_users > 0)
        return;
    (void)xsk_umem__delete(p->xsk_umem);
    free(p->xsk_fill);
    free(p->xsk_comp);
    p->xsk_umem = p->xsk_fill = p->xsk_comp = NULL;
}

static void xq_close(xq_t *xq)
{
    if (xq->xsk == NULL)
        return;
    xsk_socket__delete(xq->xsk);
    xq->xsk = NULL;
    /* Frames still in this socket's rings are not given back one by one:
     * a pool outlives no port of its own (offcore-dp closes its ports, then
     * destroys the pools). */
    xq->pool->xsk_users--;
    umem_put(xq->pool);
}

/* " (...)" when this process is at its descriptor limit, else "": each
 * AF_XDP socket takes several descriptors (the socket, libxdp's maps and
 * program), and libxdp does not always say EMFILE when it runs out (EBADFD
 * was seen), so a failed socket is checked against the limit itself. */
static const char *fd_limit_hint(char *b, size_t cap)
{
    struct rlimit rl;
    struct dirent *e;
    unsigned long long n = 0;
    DIR *d;

    b[0] = '\0';
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return b;
    d = opendir("/proc/self/fd");
    if (d != NULL) {
        while ((e = readdir(d)) != NULL)
            n += e->d_name[0] != '.';
        closedir(d);
        n -= n > 0; /* the directory's own descriptor */
    }
    if (d == NULL ? errno == EMFILE || errno == ENFILE : n + 8 >= rl.rlim_cur)
        snprintf(b, cap, " (the descriptor limit is reached: %llu open, "
                 "ulimit -n %llu; every AF_XDP socket takes several: raise "
                 "it, LimitNOFILE= in a systemd unit)", n,
                 (unsigned long long)rl.rlim_cur);
    return b;
}

static oc_status_t xq_open(xq_t *xq, const oc_port_conf_t *c, uint32_t q)
{
    struct xsk_socket_config sc;
    oc_pkt_pool_t *p = c->pools[q];
    uint32_t ring = c->ring_size ? c->ring_size : 1024;
    bool first;
    int rc = 0;

    memset(&sc, 0, sizeof(sc));
    sc.rx_size = ring;
    sc.tx_size = ring;
    sc.libxdp_flags = 0; /* load libxdp's default XSK program */
    sc.xdp_flags = c->xdp_mode == OC_PORT_XDP_NATIVE    ? XDP_FLAGS_DRV_MODE
                   : c->xdp_mode == OC_PORT_XDP_GENERIC ? XDP_FLAGS_SKB_MODE
                                                        : 0;
    sc.bind_flags = XDP_USE_NEED_WAKEUP |
                    (c->zero_copy ? XDP_ZEROCOPY : XDP_COPY);
    rc = umem_get(p, ring);
    if (rc != 0) {
        char hint[256];
        oc_error(OC_COMP_PKT, "%s queue %u: AF_XDP UMEM: %s%s", c->ifname, q,
                 strerror(-rc), fd_limit_hint(hint, sizeof(hint)));
        return OC_ERR_TRANSPORT;
    }
    first = p->xsk_users == 0;
    xq->pool = p;
    /* a socket closed a moment ago may still hold the queue: EBUSY */
    for (int tries = 0; tries < 20; tries++) {
        memset(&xq->rx, 0, sizeof(xq->rx));
        memset(&xq->tx, 0, sizeof(xq->tx));
        memset(&xq->fill_own, 0, sizeof(xq->fill_own));
        memset(&xq->comp_own, 0, sizeof(xq->comp_own));
        if (first)
            rc = xsk_socket__create(&xq->xsk, c->ifname, q, p->xsk_umem,
                                    &xq->rx, &xq->tx, &sc);
        else
            rc = xsk_socket__create_shared(&xq->xsk, c->ifname, q, p->xsk_umem,
                                           &xq->rx, &xq->tx, &xq->fill_own,
                                           &xq->comp_own, &sc);
        if (rc != -EBUSY)
            break;
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    if (rc != 0) {
        char hint[256];
        xq->xsk = NULL;
        oc_error(OC_COMP_PKT, "%s queue %u: AF_XDP socket: %s%s", c->ifname,
                 q, strerror(-rc),
                 c->zero_copy && (rc == -EOPNOTSUPP || rc == -EINVAL)
                     ? " (the driver has no zero-copy: use copy mode)"
                 : rc == -ENOSPC
                     ? " (a veth's XDP needs at least as many rx queues as "
                       "its peer has tx queues: ethtool -l on both ends)"
                     : fd_limit_hint(hint, sizeof(hint)));
        umem_put(p);
        return c->zero_copy && rc == -EOPNOTSUPP ? OC_ERR_CONFIG
                                                 : OC_ERR_TRANSPORT;
    }
    p->xsk_users++;
    xq->fill = first ? p->xsk_fill : &xq->fill_own;
    xq->comp = first ? p->xsk_comp : &xq->comp_own;
    xq->fd = xsk_socket__fd(xq->xsk);
    /* give the kernel half of what is free now; the rest serves the other
     * ports of this queue and frames in flight */
    {
        uint32_t give = p->nfree / 2 < ring ? p->nfree / 2 : ring, idx;
        if (give > 0 && xsk_ring_prod__reserve(xq->fill, give, &idx) == give) {
            for (uint32_t i = 0; i < give; i++)
                *xsk_ring_prod__fill_addr(xq->fill, idx + i) =
                    (uint64_t)p->free[--p->nfree] << p->shift;
            xsk_ring_prod__submit(xq->fill, give);
        }
    }
    return OC_OK;
}

oc_status_t oc__port_open_xdp(const oc_port_conf_t *c, oc_port_t **out)
{
    oc_port_t *port;
    oc_status_t st;

    if (c == NULL || out == NULL || c->ifname == NULL || c->nqueues == 0 ||
        c->pools == NULL || strlen(c->ifname) >= IF_NAMESIZE)
        return OC_ERR_INVALID_PARAM;
    oc__pkt_quiet_libs();
    if (c->ring_size != 0 && (c->ring_size & (c->ring_size - 1)) != 0)
        return OC_ERR_INVALID_PARAM;
    st = oc__port_check_queues(c->ifname, c->nqueues);
    if (st != OC_OK)
        return st;
    port = calloc(1, sizeof(*port));
    if (port == NULL)
        return OC_ERR_NO_MEMORY;
    port->backend = OC__PORT_XDP;
    port->q = aligned_alloc(64, sizeof(xq_t) * c->nqueues);
    if (port->q == NULL) {
        free(port);
        return OC_ERR_NO_MEMORY;
    }
    memset(port->q, 0, sizeof(xq_t) * c->nqueues);
    snprintf(port->name, sizeof(port->name), "%s", c->ifname);
    for (uint32_t q = 0; q < c->nqueues; q++) {
        st = xq_open(&XQ(port)[q], c, q);
        if (st != OC_OK)
            goto err;
        port->nqueues = q + 1;
    }
    {
        /* which XDP mode libxdp got: the program's attach mode */
        struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(
            (int)if_nametoindex(c->ifname));
        enum xdp_attach_mode m = XDP_MODE_UNSPEC;
        if (mp != NULL && !libxdp_get_error(mp)) {
            m = xdp_multiprog__attach_mode(mp);
            xdp_multiprog__close(mp);
        }
        port->mode = c->zero_copy ? (m == XDP_MODE_SKB ? "generic zero-copy"
                                                       : "native zero-copy")
                                  : (m == XDP_MODE_SKB ? "generic copy"
                                                       : "native copy");
    }
    oc_info(OC_COMP_PKT, "%s: AF_XDP, %u queue(s), %s mode", port->name,
            port->nqueues, port->mode);
    *out = port;
    return OC_OK;
err:
    oc__xdp_close(port);
    return st;
}

void oc__xdp_close(oc_port_t *port)
{
    for (uint32_t q = 0; q < port->nqueues; q++)
        xq_close(&XQ(port)[q]);
    free(port->q);
    free(port);
}
