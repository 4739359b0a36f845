/*
 * fuzz_pkt.h — what the packet fuzz target (fuzz_pkt.c), its seeds
 * (pkt_seeds.c), its replay driver and tests/unit/test_pkt.c share.
 *
 * A fuzz input is one byte choosing what to parse (mod 3), then the bytes:
 *   FUZZ_PKT_FRAME  an Ethernet frame for oc__pkt_parse()
 *   FUZZ_PKT_RULE   a rule text for oc__dp_rule_parse() (round-tripped)
 *   FUZZ_PKT_CONF   an offcore-dp config text for oc__dp_conf_parse()
 */
#ifndef OC_TESTS_FUZZ_PKT_H
#define OC_TESTS_FUZZ_PKT_H

#include <stddef.h>
#include <stdint.h>

enum { FUZZ_PKT_FRAME = 0, FUZZ_PKT_RULE = 1, FUZZ_PKT_CONF = 2 };

/** Inputs the target accepted (frame passed by default policy, rule or
 *  config parsed), for the replay driver's seed check. */
extern unsigned long fuzz_pkt_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_pkt_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                 int valid);
unsigned fuzz_pkt_seeds(fuzz_pkt_seed_fn fn, void *arg);

/* frame builders (10.0.0.1 -> 10.0.0.2; IPv6 ::1 -> ::2) */
size_t fuzz_pkt_ipv4(uint8_t *f, int vlans, uint8_t proto, uint16_t sport,
                     uint16_t dport, uint16_t frag, size_t payload);
size_t fuzz_pkt_ipv6(uint8_t *f, int ext, uint8_t proto, uint16_t dport);
size_t fuzz_pkt_arp(uint8_t *f);

#endif
