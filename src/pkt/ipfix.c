/*
 * ipfix.c — IPFIX (RFC 7011) encoding of flow records (flow.h): the
 * message header, the one template offcore-dp exports, and its data
 * records.  IANA information elements throughout; the reverse direction
 * of a biflow uses RFC 5103's reverse elements (the same IE numbers under
 * private enterprise 29305), as RFC 5103 section 6.1 prescribes.  The
 * VNI goes in layer2SegmentId (IE 351), whose top byte 0x01 says VXLAN.
 * Pure functions: no state, no allocation.
 */
#include "pkt/flow.h"

#include <string.h>

static uint8_t *w8(uint8_t *p, uint8_t v) { *p = v; return p + 1; }
static uint8_t *w16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v;
    return p + 2;
}
static uint8_t *w32(uint8_t *p, uint32_t v)
{
    return w16(w16(p, (uint16_t)(v >> 16)), (uint16_t)v);
}
static uint8_t *w64(uint8_t *p, uint64_t v)
{
    return w32(w32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

void oc__ipfix_header(uint8_t *m, uint16_t len, uint32_t now_s, uint32_t seq,
                     uint32_t domain)
{
    uint8_t *p = w16(m, 10);
    p = w16(p, len);
    p = w32(p, now_s);
    p = w32(p, seq);
    w32(p, domain);
}

#define REV 0x8000u       /* enterprise bit */
#define PEN_REVERSE 29305 /* RFC 5103 */

/* The template: IE, length, enterprise (0 = IANA).  Order = record order. */
static const struct {
    uint16_t ie, len;
    uint32_t pen;
} fields[] = {
    {152, 8, 0},          /* flowStartMilliseconds */
    {153, 8, 0},          /* flowEndMilliseconds */
    {8, 4, 0},            /* sourceIPv4Address */
    {12, 4, 0},           /* destinationIPv4Address */
    {7, 2, 0},            /* sourceTransportPort */
    {11, 2, 0},           /* destinationTransportPort */
    {4, 1, 0},            /* protocolIdentifier */
    {6, 2, 0},            /* tcpControlBits */
    {136, 1, 0},          /* flowEndReason */
    {351, 8, 0},          /* layer2SegmentId (VXLAN VNI) */
    {1, 8, 0},            /* octetDeltaCount */
    {2, 8, 0},            /* packetDeltaCount */
    {1, 8, PEN_REVERSE},  /* reverseOctetDeltaCount */
    {2, 8, PEN_REVERSE},  /* reversePacketDeltaCount */
    {6, 2, PEN_REVERSE},  /* reverseTcpControlBits */
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

size_t oc__ipfix_template_set(uint8_t *s)
{
    uint8_t *p = s + 4;
    p = w16(p, OC_IPFIX_TEMPLATE_ID);
    p = w16(p, (uint16_t)NFIELDS);
    for (size_t i = 0; i < NFIELDS; i++) {
        p = w16(p, (uint16_t)(fields[i].ie | (fields[i].pen ? REV : 0)));
        p = w16(p, fields[i].len);
        if (fields[i].pen)
            p = w32(p, fields[i].pen);
    }
    w16(s, 2);
    w16(s + 2, (uint16_t)(p - s));
    return (size_t)(p - s);
}

void oc__ipfix_record(uint8_t *p, const oc_flow_rec_t *r)
{
    p = w64(p, r->start_ms);
    p = w64(p, r->end_ms);
    p = w32(p, r->src);
    p = w32(p, r->dst);
    p = w16(p, r->sport);
    p = w16(p, r->dport);
    p = w8(p, r->proto);
    p = w16(p, r->flags[0]);
    p = w8(p, r->end_reason);
    p = w64(p, r->vni == OC_FLOW_NO_VNI ? 0 : (1ull << 56) | r->vni);
    p = w64(p, r->octets[0]);
    p = w64(p, r->packets[0]);
    p = w64(p, r->octets[1]);
    p = w64(p, r->packets[1]);
    w16(p, r->flags[1]);
}
