/*
 * ct_int.h — connection tracking's internals shared by ct.c (the table:
 * setup, index, eviction, operator calls) and ct_track.c (the packet path:
 * oc__ct_track, its burst form, the TCP state machine).  Private to src/pkt.
 *
 * Threading and trust: ct.h (one owner thread; hostile packets).
 */
#ifndef OC_PKT_CT_INT_H
#define OC_PKT_CT_INT_H

#include "pkt/ct.h"

#include "util/bytes.h"
#include "util/counter.h"

#include <string.h>

enum {
    F_USED = 1,
    F_ORIG1 = 2,
    F_REPLIED = 4,
    F_ASSURED = 8,
    F_WSCALE = 16,
    F_FIN0 = 32,
    F_FIN1 = 64
};

/* TCP sequence tracking of one direction */
typedef struct {
    uint32_t end;    /* highest seq + len sent */
    uint32_t maxend; /* highest ack + window the peer allowed */
    uint32_t maxwin; /* largest window the sender advertised */
} ct_td_t;

/* 64 bytes: one cache line per flow */
typedef struct {
    uint32_t ip[2]; /* canonical: endpoint 0 <= endpoint 1 */
    uint16_t port[2];
    uint16_t zone;
    uint8_t proto;
    uint8_t state; /* oc_ct_tcp_state_t (TCP) */
    uint8_t flags;
    uint8_t wscale[2]; /* by direction: 0 original, 1 reply */
    uint8_t pad;
    uint32_t hash;
    uint64_t expires; /* ms */
    ct_td_t td[2];    /* by direction */
    uint32_t packets[2];
} ct_entry_t;

_Static_assert(sizeof(ct_entry_t) == 64, "one cache line per flow");

struct oc_ct {
    ct_entry_t *e;
    uint64_t *idx;
    uint32_t *free;
    uint32_t cap, nfree, mask, hand;
    size_t mem;
    uint32_t to_ms_tcp[OC_CT_TCP_NSTATES];
    uint32_t to_udp1, to_udp2, to_icmp, to_gen;
    oc_ct_stats_t st; /* written by the owner with relaxed stores */
    uint8_t (*a6)[32]; /* IPv6 table: entry i's addresses, endpoint 0's
                        * then endpoint 1's; NULL in an IPv4 table */
};



/* sequence-space comparisons (RFC 793 modular arithmetic) */
static inline bool seq_after(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

typedef struct {
    uint32_t ip[2];
    uint16_t port[2];
    uint16_t zone;
    uint8_t proto;
    uint8_t src_side; /* the packet's source is endpoint 0 or 1 */
    /* IPv6: the endpoints' addresses (in the packet: valid while it is
     * tracked), ip[] then a 32-bit digest of each; NULL for IPv4 */
    const uint8_t *a6[2];
} ct_key_t;

static inline void key_make(ct_key_t *k, uint16_t zone, uint8_t proto,
                            uint32_t sip, uint32_t dip, uint16_t sp,
                            uint16_t dp)
{
    bool swap = sip > dip || (sip == dip && sp > dp);
    k->zone = zone;
    k->proto = proto;
    k->ip[0] = swap ? dip : sip;
    k->ip[1] = swap ? sip : dip;
    k->port[0] = swap ? dp : sp;
    k->port[1] = swap ? sp : dp;
    k->src_side = swap;
    k->a6[0] = k->a6[1] = NULL;
}

/* a 32-bit digest of an IPv6 address: the canonical order and the hash
 * take all 128 bits (key_make6 orders by the full address) */
static inline uint32_t a6_digest(const uint8_t *a)
{
    uint64_t x = (uint64_t)oc__load_be32(a) * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)oc__load_be32(a + 4) * 0xc2b2ae3d27d4eb4full ^
                 (uint64_t)oc__load_be32(a + 8) * 0x165667b19e3779f9ull ^
                 (uint64_t)oc__load_be32(a + 12) * 0x27d4eb2f165667c5ull;
    return (uint32_t)(x >> 32) ^ (uint32_t)x;
}

static inline void key_make6(ct_key_t *k, uint16_t zone, uint8_t proto,
                             const uint8_t *sip, const uint8_t *dip,
                             uint16_t sp, uint16_t dp)
{
    int c = memcmp(sip, dip, 16);
    bool swap = c > 0 || (c == 0 && sp > dp);
    k->zone = zone;
    k->proto = proto;
    k->a6[0] = swap ? dip : sip;
    k->a6[1] = swap ? sip : dip;
    k->ip[0] = a6_digest(k->a6[0]);
    k->ip[1] = a6_digest(k->a6[1]);
    k->port[0] = swap ? dp : sp;
    k->port[1] = swap ? sp : dp;
    k->src_side = swap;
}
static inline uint32_t key_hash(const ct_key_t *k)
{
    uint64_t a = (uint64_t)k->ip[0] << 32 | k->ip[1];
    uint64_t b = (uint64_t)k->port[0] << 48 | (uint64_t)k->port[1] << 32 |
                 (uint64_t)k->zone << 8 | k->proto;
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 32;
    return (uint32_t)x;
}

static inline bool key_eq(const oc_ct_t *ct, uint32_t ei, const ct_key_t *k)
{
    const ct_entry_t *e = &ct->e[ei];
    return e->ip[0] == k->ip[0] && e->ip[1] == k->ip[1] &&
           e->port[0] == k->port[0] && e->port[1] == k->port[1] &&
           e->zone == k->zone && e->proto == k->proto &&
           (k->a6[0] == NULL || (!memcmp(ct->a6[ei], k->a6[0], 16) &&
                                 !memcmp(ct->a6[ei] + 16, k->a6[1], 16)));
}

static inline bool expired(const ct_entry_t *e, uint64_t now)
{
    return now >= e->expires;
}

static inline ct_entry_t *lookup(oc_ct_t *ct, const ct_key_t *k, uint32_t h)
{
    for (uint32_t s = h & ct->mask;; s = (s + 1) & ct->mask) {
        uint64_t v = ct->idx[s];
        if (v == 0)
            return NULL;
        if ((uint32_t)(v >> 32) == h && key_eq(ct, (uint32_t)v - 1, k))
            return &ct->e[(uint32_t)v - 1];
    }
}

/* Remove entry @p ei (in the table): backward-shift deletion (ct.c). */
void oc__ct_remove(oc_ct_t *ct, uint32_t ei);
/* A new entry for key @p k (hash @p h), made room for by the eviction
 * policy when the table is full; NULL: full of established flows (counted
 * `full`).  ct.c. */
ct_entry_t *oc__ct_insert(oc_ct_t *ct, const ct_key_t *k, uint32_t h,
                          uint64_t now);

#endif
