/*
 * port.c — the port API (pkt.h) over its backends: AF_XDP (xdp.c) and,
 * when built with libdpdk, DPDK (dpdk.c).  A switch per burst call: the
 * pipeline code is the same over both.
 */
#include "port_int.h"
#include "util/log.h"

#include <stdio.h>
#include <unistd.h>

oc_status_t oc__port_check_queues(const char *ifname, uint32_t nqueues)
{
    char path[128];
    uint32_t have = 0;

    if (if_nametoindex(ifname) == 0) {
        oc_error(OC_COMP_PKT, "%s: no such interface (ip link show)", ifname);
        return OC_ERR_CONFIG;
    }
    for (;;) {
        snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-%u", ifname,
                 have);
        if (access(path, F_OK) != 0)
            break;
        have++;
    }
    if (have != 0 && have != nqueues) {
        /* a queue without a socket would pass its frames to the kernel:
         * traffic that bypasses the pipeline */
        oc_error(OC_COMP_PKT,
                 "%s has %u rx queue(s) and %u thread(s) would serve %u: make "
                 "them equal (ethtool -L %s combined %u, or on a veth "
                 "ethtool -L %s rx %u tx %u; or --threads %u)",
                 ifname, have, nqueues, nqueues, ifname, nqueues, ifname,
                 nqueues, nqueues, have);
        return OC_ERR_CONFIG;
    }
    return OC_OK;
}

#ifdef OC_HAVE_DPDK
#define DPDK(call) call
#else
#define DPDK(call) 0

oc_status_t oc__port_open_dpdk(const oc_port_conf_t *conf,
                              oc_port_dpdk_pmd_t pmd, oc_port_t **out)
{
    oc_error(OC_COMP_PKT, "%s: this build has no DPDK backend (pkg-config "
             "found no libdpdk when it was configured)",
             conf && conf->ifname ? conf->ifname : "?");
    return OC_ERR_UNSUPPORTED;
}

bool oc__pkt_have_dpdk(void) { return false; }
#endif

uint16_t oc__port_rx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts, uint16_t n)
{
    if (p->backend == OC__PORT_XDP)
        return oc__xdp_rx_burst(p, q, pkts, n);
    return DPDK(oc__dpdk_rx_burst(p, q, pkts, n));
}

uint16_t oc__port_tx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts, uint16_t n)
{
    if (p->backend == OC__PORT_XDP)
        return oc__xdp_tx_burst(p, q, pkts, n);
    return DPDK(oc__dpdk_tx_burst(p, q, pkts, n));
}

uint32_t oc__port_tx_reap(oc_port_t *p, uint32_t q)
{
    /* DPDK drivers reclaim sent mbufs inside tx_burst */
    return p->backend == OC__PORT_XDP ? oc__xdp_tx_reap(p, q) : 0;
}

void oc__port_free_bulk(oc_port_t *p, uint32_t q, oc_pkt_t *const *pkts,
                       uint16_t n)
{
    if (p->backend == OC__PORT_XDP)
        oc__xdp_free_bulk(p, q, pkts, n);
    else
        (void)DPDK((oc__dpdk_free_bulk(p, q, pkts, n), 0));
}

int oc__port_fd(const oc_port_t *p, uint32_t q)
{
    /* DPDK's af_xdp/af_packet drivers give no receive interrupt to sleep on */
    return p->backend == OC__PORT_XDP ? oc__xdp_fd(p, q) : -1;
}

const char *oc__port_name(const oc_port_t *p) { return p->name; }
const char *oc__port_mode(const oc_port_t *p) { return p->mode; }

void oc__port_stats(const oc_port_t *p, oc_port_stats_t *out)
{
    if (p->backend == OC__PORT_XDP)
        oc__xdp_stats(p, out);
    else
        (void)DPDK((oc__dpdk_stats(p, out), 0));
}

void oc__port_close(oc_port_t *p)
{
    if (p == NULL)
        return;
    if (p->backend == OC__PORT_XDP)
        oc__xdp_close(p);
    else
        (void)DPDK((oc__dpdk_close(p), 0));
}
