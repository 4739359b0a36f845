/*
 * am.h — active-message ids and the small control messages that travel on
 * the data transport (UCX) between ranks and agents: termination waves and
 * flow-control credits.  Handshakes travel on the control socket instead
 * (src/ctl).
 */
#ifndef OC_WIRE_AM_H
#define OC_WIRE_AM_H

#include <stdint.h>

enum {
    OC_AM_BUNDLE  = 1, /* a bundle (wire.h) */
    OC_AM_CONTROL = 2, /* oc_am_wave_t: termination detection */
    OC_AM_CREDIT  = 3, /* oc_am_credit_t: agent -> rank */
    OC_AM_COLL    = 4, /* wire/colld.h: a collective's descriptor, rank -> agent */
    OC_AM_COLL_DONE = 5, /* oc_colld_done_t: agent -> rank */
};

#define OC_AM_CREDIT_MAGIC 0x4352454fu /* "OERC" */

/** The agent routed @p credits more bundles of this rank: it may send as
 *  many more. */
typedef struct {
    uint32_t magic;
    uint32_t credits;
} oc_am_credit_t;

#endif
