/* pkt_bytes.h — network-order (big-endian) stores for the packet tests
 * and the packet fuzzers' seed writers, which build frames byte by byte.
 * One copy for all of them (test_ct, test_ct_burst, test_pkt_tenant,
 * test_tenant6, tests/fuzz/tenant_seeds.c). */
#ifndef OC_TESTS_PKT_BYTES_H
#define OC_TESTS_PKT_BYTES_H

#include <stdint.h>

static inline void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
    wr16(p, (uint16_t)(v >> 16));
    wr16(p + 2, (uint16_t)v);
}

#endif
