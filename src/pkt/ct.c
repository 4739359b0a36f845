/*
 * ct.c — connection tracking tables (ct.h): the fixed-size flow table, its
 * index, the eviction policy and the operator calls.  The packet path
 * (oc__ct_track, oc__ct_track_burst, the TCP state machine) is ct_track.c.
 *
 * Layout: `capacity` 64-byte entries (one cache line each), a free list of
 * entry indices, and an open-addressing index of 2^k >= 2 * capacity
 * 64-bit slots (hash << 32 | entry + 1; 0 empty) with linear probing and
 * backward-shift deletion, so a lookup touches the index line and one
 * entry.  A flow is stored once under its canonical key (the lower
 * (address, port) endpoint first), so both directions find it with one
 * probe sequence; the entry remembers which side opened it.
 *
 * Threading and trust: ct.h (one owner thread; hostile packets).
 */
#include "ct_int.h"
#include "util/hugemem.h"
#include "util/counter.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- setup */

void oc__ct_timeouts_default(oc_ct_timeouts_t *to)
{
    /* Linux's nf_conntrack defaults, so that behaviour matches what an
     * operator already knows from the host's firewall */
    memset(to, 0, sizeof(*to));
    to->tcp[OC_CT_TCP_SYN_SENT] = 120;
    to->tcp[OC_CT_TCP_SYN_RECV] = 60;
    to->tcp[OC_CT_TCP_ESTABLISHED] = 432000;
    to->tcp[OC_CT_TCP_FIN_WAIT] = 120;
    to->tcp[OC_CT_TCP_LAST_ACK] = 30;
    to->tcp[OC_CT_TCP_TIME_WAIT] = 120;
    to->tcp[OC_CT_TCP_CLOSE] = 10;
    to->udp_unreplied = 30;
    to->udp_replied = 120;
    to->icmp = 30;
    to->generic = 600;
}

static uint32_t index_slots(uint32_t cap)
{
    uint32_t n = 64;
    while (n < 2ull * cap)
        n <<= 1;
    return n;
}

size_t oc__ct_mem_for(uint32_t capacity)
{
    return (size_t)capacity * sizeof(ct_entry_t) +
           (size_t)index_slots(capacity) * sizeof(uint64_t) +
           (size_t)capacity * sizeof(uint32_t);
}

size_t oc__ct_mem_for6(uint32_t capacity)
{
    return oc__ct_mem_for(capacity) + (size_t)capacity * 32;
}

static uint32_t ms(uint32_t s)
{
    uint64_t v = (uint64_t)s * 1000;
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

oc_status_t oc__ct_create(const oc_ct_conf_t *conf, oc_ct_t **out)
{
    oc_ct_t *ct;
    uint8_t *m;
    uint32_t slots;

    if (conf == NULL || out == NULL || conf->capacity == 0 ||
        conf->capacity > OC_CT_MAX_FLOWS)
        return OC_ERR_INVALID_PARAM;
    ct = calloc(1, sizeof(*ct));
    if (ct == NULL)
        return OC_ERR_NO_MEMORY;
    slots = index_slots(conf->capacity);
    ct->mem = conf->ipv6 ? oc__ct_mem_for6(conf->capacity)
                         : oc__ct_mem_for(conf->capacity);
    /* populated now: the memory is the table's from the start, and the
     * packet path never faults a page in; on huge pages where allowed (a
     * lookup's random entry then misses no TLB entry) */
    m = oc__huge_map(ct->mem);
    if (m == NULL) {
        free(ct);
        return OC_ERR_NO_MEMORY;
    }
    ct->e = (ct_entry_t *)m;
    ct->idx = (uint64_t *)(m + (size_t)conf->capacity * sizeof(ct_entry_t));
    ct->free = (uint32_t *)(ct->idx + slots);
    if (conf->ipv6) /* after the free list: 4-byte aligned is enough */
        ct->a6 = (uint8_t (*)[32])(ct->free + conf->capacity);
    ct->cap = conf->capacity;
    ct->mask = slots - 1;
    for (uint32_t i = 0; i < ct->cap; i++)
        ct->free[i] = ct->cap - 1 - i; /* entry 0 first */
    ct->nfree = ct->cap;
    for (int s = 0; s < OC_CT_TCP_NSTATES; s++)
        ct->to_ms_tcp[s] = ms(conf->to.tcp[s]);
    ct->to_udp1 = ms(conf->to.udp_unreplied);
    ct->to_udp2 = ms(conf->to.udp_replied);
    ct->to_icmp = ms(conf->to.icmp);
    ct->to_gen = ms(conf->to.generic);
    ct->st.capacity = ct->cap;
    *out = ct;
    return OC_OK;
}

void oc__ct_destroy(oc_ct_t *ct)
{
    if (ct == NULL)
        return;
    oc__huge_unmap(ct->e, ct->mem);
    free(ct);
}

size_t oc__ct_mem_bytes(const oc_ct_t *ct)
{
    return ct->mem;
}

uint32_t oc__ct_count(const oc_ct_t *ct)
{
    return (uint32_t)OC__CTR_GET(ct->st.flows);
}

void oc__ct_stats(const oc_ct_t *ct, oc_ct_stats_t *out)
{
    const uint64_t *s = (const uint64_t *)&ct->st;
    uint64_t *d = (uint64_t *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        d[i] = OC__CTR_GET(s[i]);
}

/* ------------------------------------------------------------- index */

/* index slot holding entry @p ei (which is in the table) */
static uint32_t slot_of(const oc_ct_t *ct, uint32_t ei)
{
    uint32_t s = ct->e[ei].hash & ct->mask;
    while ((uint32_t)ct->idx[s] != ei + 1)
        s = (s + 1) & ct->mask;
    return s;
}

/* remove entry @p ei: backward-shift deletion keeps probe chains whole */
void oc__ct_remove(oc_ct_t *ct, uint32_t ei)
{
    uint32_t hole = slot_of(ct, ei), s = hole;

    for (;;) {
        s = (s + 1) & ct->mask;
        uint64_t v = ct->idx[s];
        if (v == 0)
            break;
        uint32_t home = (uint32_t)(v >> 32) & ct->mask;
        /* move v into the hole unless its home lies cyclically in (hole, s] */
        if (((s - home) & ct->mask) >= ((s - hole) & ct->mask)) {
            ct->idx[hole] = v;
            hole = s;
        }
    }
    ct->idx[hole] = 0;
    ct->e[ei].flags = 0;
    ct->free[ct->nfree++] = ei;
    OC__CTR_SUB(ct->st.flows, 1);
}

uint32_t oc__ct_expire(oc_ct_t *ct, uint64_t now_ms, uint32_t budget)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < budget && i < ct->cap; i++) {
        uint32_t ei = ct->hand;
        ct->hand = ct->hand + 1 == ct->cap ? 0 : ct->hand + 1;
        if ((ct->e[ei].flags & F_USED) && expired(&ct->e[ei], now_ms)) {
            oc__ct_remove(ct, ei);
            OC__CTR_INC(ct->st.expired);
            n++;
        }
    }
    return n;
}

/* The eviction policy (ct.h): an entry index made free, or -1 (full). */
static int64_t make_room(oc_ct_t *ct, uint64_t now)
{
    int64_t victim = -1;
    uint64_t oldest = UINT64_MAX;

    for (uint32_t i = 0; i < OC_CT_EVICT_SCAN && i < ct->cap; i++) {
        uint32_t ei = ct->hand;
        const ct_entry_t *e = &ct->e[ei];
        ct->hand = ct->hand + 1 == ct->cap ? 0 : ct->hand + 1;
        if (!(e->flags & F_USED))
            continue;
        if (expired(e, now)) {
            oc__ct_remove(ct, ei);
            OC__CTR_INC(ct->st.expired);
            return ei;
        }
        /* expires - timeout is not stored; the earliest expiry among
         * unassured flows of equal timeout is the least recently seen */
        if (!(e->flags & F_ASSURED) && e->expires < oldest) {
            oldest = e->expires;
            victim = ei;
        }
    }
    if (victim >= 0) {
        oc__ct_remove(ct, (uint32_t)victim);
        OC__CTR_INC(ct->st.evicted);
    }
    return victim;
}

ct_entry_t *oc__ct_insert(oc_ct_t *ct, const ct_key_t *k, uint32_t h,
                          uint64_t now)
{
    uint32_t ei, s;
    ct_entry_t *e;

    if (ct->nfree == 0 && make_room(ct, now) < 0) {
        OC__CTR_INC(ct->st.full);
        return NULL;
    }
    ei = ct->free[--ct->nfree];
    e = &ct->e[ei];
    memset(e, 0, sizeof(*e));
    e->ip[0] = k->ip[0];
    e->ip[1] = k->ip[1];
    e->port[0] = k->port[0];
    e->port[1] = k->port[1];
    e->zone = k->zone;
    e->proto = k->proto;
    e->hash = h;
    e->flags = F_USED | (k->src_side ? F_ORIG1 : 0);
    if (ct->a6 != NULL && k->a6[0] != NULL) {
        memcpy(ct->a6[ei], k->a6[0], 16);
        memcpy(ct->a6[ei] + 16, k->a6[1], 16);
    }
    for (s = h & ct->mask; ct->idx[s] != 0; s = (s + 1) & ct->mask)
        ;
    ct->idx[s] = (uint64_t)h << 32 | (ei + 1);
    OC__CTR_INC(ct->st.flows);
    OC__CTR_INC(ct->st.created);
    return e;
}

/* ------------------------------------------------------ operator calls */

uint32_t oc__ct_flush(oc_ct_t *ct, int zone)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ct->cap; i++)
        if ((ct->e[i].flags & F_USED) && (zone < 0 || ct->e[i].zone == zone)) {
            oc__ct_remove(ct, i);
            n++;
        }
    return n;
}

uint32_t oc__ct_walk(const oc_ct_t *ct, int zone, uint64_t now_ms,
                    oc_ct_walk_fn fn, void *arg)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ct->cap; i++) {
        const ct_entry_t *e = &ct->e[i];
        oc_ct_flow_t f;
        int o;
        if (!(e->flags & F_USED) || (zone >= 0 && e->zone != zone) ||
            expired(e, now_ms))
            continue;
        o = !!(e->flags & F_ORIG1);
        f.zone = e->zone;
        f.proto = e->proto;
        f.state = e->state;
        f.family = ct->a6 != NULL ? 6 : 4;
        f.src_ip = ct->a6 != NULL ? 0 : e->ip[o];
        f.dst_ip = ct->a6 != NULL ? 0 : e->ip[!o];
        if (ct->a6 != NULL) {
            memcpy(f.src6, ct->a6[i] + 16 * o, 16);
            memcpy(f.dst6, ct->a6[i] + 16 * !o, 16);
        } else {
            memset(f.src6, 0, 16);
            memset(f.dst6, 0, 16);
        }
        f.sport = e->port[o];
        f.dport = e->port[!o];
        f.assured = (e->flags & F_ASSURED) != 0;
        f.expires_in_ms = (uint32_t)(e->expires - now_ms);
        f.packets[0] = e->packets[0];
        f.packets[1] = e->packets[1];
        n++;
        if (fn(arg, &f) != 0)
            break;
    }
    return n;
}

const char *oc__ct_result_name(oc_ct_result_t r)
{
    static const char *const n[OC_CT_NRESULTS] = {
        "new", "established", "related", "no_connection", "invalid",
        "table_full", "untracked"};
    return (unsigned)r < OC_CT_NRESULTS ? n[r] : "?";
}

const char *oc__ct_tcp_state_name(oc_ct_tcp_state_t s)
{
    static const char *const n[OC_CT_TCP_NSTATES] = {
        "NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT",
        "LAST_ACK", "TIME_WAIT", "CLOSE"};
    return (unsigned)s < OC_CT_TCP_NSTATES ? n[s] : "?";
}
