/*
 * dpdk.c — the DPDK port backend (pkt.h), built when pkg-config finds
 * libdpdk.  Ports are DPDK virtual devices on Linux interfaces here —
 * net_af_xdp (AF_XDP sockets under DPDK's driver) or net_af_packet — and
 * would be the mlx5 PMD's ports on a BlueField; the pipeline above sees the
 * same oc_pkt_t bursts either way.
 *
 * The EAL starts once, on the first DPDK port, without hugepages or PCI
 * (--no-huge --no-pci --no-shconf: docs/facts.md), and devices are hot-plugged
 * with rte_eal_hotplug_add().  Each port's queue has its own mbuf pool
 * (see pool_of); an oc_pkt_t lives in each mbuf's private area.
 * Threading: queue q is used by one (non-EAL) thread; the control thread
 * opens, closes and reads counters.  The EAL pins its calling thread to
 * lcore 0: the caller's CPU affinity is restored after rte_eal_init so the
 * worker threads created later are not all pinned to one core.
 */
#include "port_int.h"
#include "util/log.h"
#include "util/counter.h"

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DPDK_MAX_QUEUES 64
#define DPDK_RING       1024
#define DPDK_MBUFS      8191 /* per port and queue: its rings and bursts in flight */

typedef struct {
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_full;
} __attribute__((aligned(64))) dq_t;

static int eal_up;

static oc_status_t eal_init(void)
{
    /* no hugepages, no PCI scan, no shared run-time files (several
     * instances may run side by side) */
    char *argv[] = {"offcore-dp", "--no-huge", "--no-pci", "--no-shconf",
                    "-l", "0", "-m", "512", "--log-level", "*:warning", NULL};
    cpu_set_t saved;
    int have_saved;

    if (eal_up)
        return OC_OK;
    have_saved = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
    if (rte_eal_init(10, argv) < 0) {
        oc_error(OC_COMP_PKT, "DPDK EAL did not start: %s",
                 rte_strerror(rte_errno));
        return OC_ERR_TRANSPORT;
    }
    if (have_saved)
        (void)pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    eal_up = 1;
    return OC_OK;
}

/* Each port's queue has a pool of its own: the af_xdp driver registers
 * its rx pool as the socket's UMEM, and two sockets over one pool stalled
 * under load here (the fill ring ran dry).  Frames cross pools on send
 * (the driver copies into the output port's UMEM and frees the mbuf). */
static struct rte_mempool *pool_of(const char *ifname, uint32_t q)
{
    char name[RTE_MEMPOOL_NAMESIZE];
    struct rte_mempool *mp;

    snprintf(name, sizeof(name), "ocdp_%s_%u", ifname, q);
    mp = rte_mempool_lookup(name);
    if (mp != NULL)
        return mp;
    mp = rte_pktmbuf_pool_create(
        name, DPDK_MBUFS, 256,
        RTE_ALIGN(sizeof(oc_pkt_t), RTE_MBUF_PRIV_ALIGN),
        RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
    if (mp == NULL)
        oc_error(OC_COMP_PKT, "DPDK mbuf pool %s: %s", name,
                 rte_strerror(rte_errno));
    return mp;
}

oc_status_t oc__port_open_dpdk(const oc_port_conf_t *c, oc_port_dpdk_pmd_t pmd,
                              oc_port_t **out)
{
    char dev[96], args[160];
    struct rte_eth_conf ec;
    oc_port_t *port = NULL;
    uint16_t id;
    oc_status_t st;

    if (c == NULL || out == NULL || c->ifname == NULL || c->nqueues == 0 ||
        c->nqueues > DPDK_MAX_QUEUES || strlen(c->ifname) >= IF_NAMESIZE)
        return OC_ERR_INVALID_PARAM;
    st = oc__port_check_queues(c->ifname, c->nqueues);
    if (st != OC_OK)
        return st;
    oc__pkt_quiet_libs(); /* DPDK's af_xdp driver talks through libbpf */
    st = eal_init();
    if (st != OC_OK)
        return st;
    snprintf(dev, sizeof(dev), "%s_%s",
             pmd == OC_PORT_DPDK_AF_XDP ? "net_af_xdp" : "net_af_packet",
             c->ifname);
    if (pmd == OC_PORT_DPDK_AF_XDP)
        snprintf(args, sizeof(args), "iface=%s,start_queue=0,queue_count=%u",
                 c->ifname, c->nqueues);
    else
        snprintf(args, sizeof(args), "iface=%s,qpairs=%u", c->ifname,
                 c->nqueues);
    if (rte_eal_hotplug_add("vdev", dev, args) != 0) {
        oc_error(OC_COMP_PKT, "%s: DPDK device %s,%s did not start (see "
                 "DPDK's messages above)", c->ifname, dev, args);
        return OC_ERR_TRANSPORT;
    }
    if (rte_eth_dev_get_port_by_name(dev, &id) != 0) {
        oc_error(OC_COMP_PKT, "%s: DPDK port %s not found", c->ifname, dev);
        st = OC_ERR_TRANSPORT;
        goto err_vdev;
    }
    memset(&ec, 0, sizeof(ec));
    if (rte_eth_dev_configure(id, (uint16_t)c->nqueues, (uint16_t)c->nqueues,
                              &ec) != 0)
        goto err_eth;
    for (uint32_t q = 0; q < c->nqueues; q++) {
        struct rte_mempool *mp = pool_of(c->ifname, q);
        if (mp == NULL ||
            rte_eth_rx_queue_setup(id, (uint16_t)q, DPDK_RING,
                                   (unsigned)rte_eth_dev_socket_id(id), NULL,
                                   mp) != 0 ||
            rte_eth_tx_queue_setup(id, (uint16_t)q, DPDK_RING,
                                   (unsigned)rte_eth_dev_socket_id(id),
                                   NULL) != 0)
            goto err_eth;
    }
    if (rte_eth_dev_start(id) != 0)
        goto err_eth;
    (void)rte_eth_promiscuous_enable(id);
    port = calloc(1, sizeof(*port));
    if (port == NULL)
        goto err_started;
    port->q = aligned_alloc(64, sizeof(dq_t) * c->nqueues);
    if (port->q == NULL)
        goto err_started;
    memset(port->q, 0, sizeof(dq_t) * c->nqueues);
    port->backend = OC__PORT_DPDK;
    port->dpdk_id = id;
    port->nqueues = c->nqueues;
    port->mode = pmd == OC_PORT_DPDK_AF_XDP ? "DPDK net_af_xdp"
                                            : "DPDK net_af_packet";
    snprintf(port->name, sizeof(port->name), "%s", c->ifname);
    oc_info(OC_COMP_PKT, "%s: %s, %u queue(s), DPDK port %u", port->name,
            port->mode, port->nqueues, id);
    *out = port;
    return OC_OK;

err_started:
    if (port != NULL)
        free(port->q);
    free(port);
    (void)rte_eth_dev_stop(id);
    st = OC_ERR_NO_MEMORY;
    goto err_close;
err_eth:
    oc_error(OC_COMP_PKT, "%s: DPDK port %u setup failed: %s", c->ifname, id,
             rte_strerror(rte_errno));
    st = OC_ERR_TRANSPORT;
err_close:
    (void)rte_eth_dev_close(id);
err_vdev:
    (void)rte_eal_hotplug_remove("vdev", dev);
    return st;
}

uint16_t oc__dpdk_rx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts,
                           uint16_t n)
{
    struct rte_mbuf *m[256];
    dq_t *dq = &((dq_t *)p->q)[q];
    uint64_t bytes = 0;
    uint16_t got;

    if (n > 256)
        n = 256;
    got = rte_eth_rx_burst(p->dpdk_id, (uint16_t)q, m, n);
    for (uint16_t i = 0; i < got; i++) {
        oc_pkt_t *pkt = rte_mbuf_to_priv(m[i]);
        /* net_af_packet hands over the kernel's stripped VLAN tag as
         * metadata: put it back in the frame, where the parser looks and
         * where the other side expects it */
        if ((m[i]->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) &&
            rte_vlan_insert(&m[i]) == 0)
            m[i]->ol_flags &= ~(RTE_MBUF_F_RX_VLAN_STRIPPED | RTE_MBUF_F_RX_VLAN);
        pkt = rte_mbuf_to_priv(m[i]);
        pkt->mbuf = m[i];
        pkt->data = rte_pktmbuf_mtod(m[i], uint8_t *);
        /* the first segment only: the parser never reads past it (a frame
         * in several segments fails its IP length check) */
        pkt->len = m[i]->data_len;
        pkts[i] = pkt;
        bytes += m[i]->pkt_len;
    }
    if (got > 0) {
        OC__CTR_ADD(dq->rx_packets, got);
        OC__CTR_ADD(dq->rx_bytes, bytes);
    }
    return got;
}

uint16_t oc__dpdk_tx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts,
                           uint16_t n)
{
    struct rte_mbuf *m[256];
    dq_t *dq = &((dq_t *)p->q)[q];
    uint64_t bytes = 0;
    uint16_t k;

    if (n > 256)
        n = 256;
    for (uint16_t i = 0; i < n; i++)
        m[i] = pkts[i]->mbuf;
    k = rte_eth_tx_burst(p->dpdk_id, (uint16_t)q, m, n);
    for (uint16_t i = 0; i < k; i++)
        bytes += m[i]->pkt_len;
    OC__CTR_ADD(dq->tx_packets, k);
    OC__CTR_ADD(dq->tx_bytes, bytes);
    if (k < n)
        OC__CTR_ADD(dq->tx_full, 1);
    return k;
}

void oc__dpdk_free_bulk(oc_port_t *p, uint32_t q, oc_pkt_t *const *pkts,
                        uint16_t n)
{
    struct rte_mbuf *m[256];
    while (n > 0) {
        uint16_t k = n > 256 ? 256 : n;
        for (uint16_t i = 0; i < k; i++)
            m[i] = pkts[i]->mbuf;
        rte_pktmbuf_free_bulk(m, k);
        pkts += k;
        n -= k;
    }
}

void oc__dpdk_stats(const oc_port_t *p, oc_port_stats_t *out)
{
    struct rte_eth_stats es;
    memset(out, 0, sizeof(*out));
    for (uint32_t q = 0; q < p->nqueues; q++) {
        dq_t *dq = &((dq_t *)p->q)[q];
        out->rx_packets += OC__CTR_GET(dq->rx_packets);
        out->rx_bytes += OC__CTR_GET(dq->rx_bytes);
        out->tx_packets += OC__CTR_GET(dq->tx_packets);
        out->tx_bytes += OC__CTR_GET(dq->tx_bytes);
        out->tx_full += OC__CTR_GET(dq->tx_full);
    }
    if (rte_eth_stats_get(p->dpdk_id, &es) == 0) {
        out->kernel_rx_dropped = es.imissed + es.rx_nombuf;
        out->rx_no_buf = es.rx_nombuf;
    }
}

void oc__dpdk_close(oc_port_t *p)
{
    char name[RTE_ETH_NAME_MAX_LEN];
    (void)rte_eth_dev_stop(p->dpdk_id);
    if (rte_eth_dev_get_name_by_port(p->dpdk_id, name) != 0)
        name[0] = '\0';
    (void)rte_eth_dev_close(p->dpdk_id);
    if (name[0] != '\0')
        (void)rte_eal_hotplug_remove("vdev", name);
    free(p->q);
    free(p);
}

bool oc__pkt_have_dpdk(void) { return true; }
