/*
 * port_int.h — what the port backends (xdp.c, dpdk.c) and the dispatcher
 * (port.c) share.  Private to src/pkt.
 */
#ifndef OC_PKT_PORT_INT_H
#define OC_PKT_PORT_INT_H

#include "pkt/pkt.h"

#include <net/if.h>

enum { OC__PORT_XDP = 0, OC__PORT_DPDK = 1 };

struct oc_port {
    int         backend;
    char        name[IF_NAMESIZE];
    uint32_t    nqueues;
    const char *mode;
    void       *q;        /* the backend's per-queue state */
    uint16_t    dpdk_id;  /* DPDK: the ethdev port id */
};

/** OC_OK when @p ifname exists and has exactly @p nqueues rx queues (a
 *  queue nobody serves would let frames bypass offcore-dp); else
 *  OC_ERR_CONFIG, logged with the fix. */
oc_status_t oc__port_check_queues(const char *ifname, uint32_t nqueues);

/** Route libbpf's and libxdp's messages to our log (debug level). */
void oc__pkt_quiet_libs(void);

uint16_t oc__xdp_rx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts, uint16_t n);
uint16_t oc__xdp_tx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts, uint16_t n);
uint32_t oc__xdp_tx_reap(oc_port_t *p, uint32_t q);
int oc__xdp_fd(const oc_port_t *p, uint32_t q);
void oc__xdp_free_bulk(oc_port_t *p, uint32_t q, oc_pkt_t *const *pkts,
                       uint16_t n);
void oc__xdp_stats(const oc_port_t *p, oc_port_stats_t *out);
void oc__xdp_close(oc_port_t *p);

uint16_t oc__dpdk_rx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts, uint16_t n);
uint16_t oc__dpdk_tx_burst(oc_port_t *p, uint32_t q, oc_pkt_t **pkts, uint16_t n);
void oc__dpdk_free_bulk(oc_port_t *p, uint32_t q, oc_pkt_t *const *pkts,
                        uint16_t n);
void oc__dpdk_stats(const oc_port_t *p, oc_port_stats_t *out);
void oc__dpdk_close(oc_port_t *p);

#endif
