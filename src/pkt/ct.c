/*
 * ct.c — connection tracking tables (ct.h): the fixed-size flow table, the
 * packet path (oc_ct_track) and the TCP state machine.
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
#include "pkt/ct.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { F_USED = 1, F_ORIG1 = 2, F_REPLIED = 4, F_ASSURED = 8,
       F_WSCALE = 16, F_FIN0 = 32, F_FIN1 = 64 };

/* TCP sequence tracking of one direction */
typedef struct {
    uint32_t end;    /* highest seq + len sent */
    uint32_t maxend; /* highest ack + window the peer allowed */
    uint32_t maxwin; /* largest window the sender advertised */
} ct_td_t;

/* 64 bytes: one cache line per flow */
typedef struct {
    uint32_t ip[2];      /* canonical: endpoint 0 <= endpoint 1 */
    uint16_t port[2];
    uint16_t zone;
    uint8_t  proto;
    uint8_t  state;      /* oc_ct_tcp_state_t (TCP) */
    uint8_t  flags;
    uint8_t  wscale[2];  /* by direction: 0 original, 1 reply */
    uint8_t  pad;
    uint32_t hash;
    uint64_t expires;    /* ms */
    ct_td_t  td[2];      /* by direction */
    uint32_t packets[2];
} ct_entry_t;

_Static_assert(sizeof(ct_entry_t) == 64, "one cache line per flow");

struct oc_ct {
    ct_entry_t *e;
    uint64_t   *idx;
    uint32_t   *free;
    uint32_t    cap, nfree, mask, hand;
    size_t      mem;
    uint32_t    to_ms_tcp[OC_CT_TCP_NSTATES];
    uint32_t    to_udp1, to_udp2, to_icmp, to_gen;
    oc_ct_stats_t st;  /* written by the owner with relaxed stores */
};

static inline void bump(uint64_t *c)
{
    __atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
}

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* sequence-space comparisons (RFC 793 modular arithmetic) */
static inline bool seq_after(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

/* ------------------------------------------------------------- setup */

void oc_ct_timeouts_default(oc_ct_timeouts_t *to)
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

size_t oc_ct_mem_for(uint32_t capacity)
{
    return (size_t)capacity * sizeof(ct_entry_t) +
           (size_t)index_slots(capacity) * sizeof(uint64_t) +
           (size_t)capacity * sizeof(uint32_t);
}

static uint32_t ms(uint32_t s)
{
    uint64_t v = (uint64_t)s * 1000;
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

oc_status_t oc_ct_create(const oc_ct_conf_t *conf, oc_ct_t **out)
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
    ct->mem = oc_ct_mem_for(conf->capacity);
    /* populated now: the memory is the table's from the start, and the
     * packet path never faults a page in */
    m = mmap(NULL, ct->mem, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) {
        free(ct);
        return OC_ERR_NO_MEMORY;
    }
    ct->e = (ct_entry_t *)m;
    ct->idx = (uint64_t *)(m + (size_t)conf->capacity * sizeof(ct_entry_t));
    ct->free = (uint32_t *)(ct->idx + slots);
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

void oc_ct_destroy(oc_ct_t *ct)
{
    if (ct == NULL)
        return;
    munmap(ct->e, ct->mem);
    free(ct);
}

size_t oc_ct_mem_bytes(const oc_ct_t *ct)
{
    return ct->mem;
}

uint32_t oc_ct_count(const oc_ct_t *ct)
{
    return (uint32_t)__atomic_load_n(&ct->st.flows, __ATOMIC_RELAXED);
}

void oc_ct_stats(const oc_ct_t *ct, oc_ct_stats_t *out)
{
    const uint64_t *s = (const uint64_t *)&ct->st;
    uint64_t *d = (uint64_t *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
        d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------- index */

typedef struct {
    uint32_t ip[2];
    uint16_t port[2];
    uint16_t zone;
    uint8_t  proto;
    uint8_t  src_side; /* the packet's source is endpoint 0 or 1 */
} ct_key_t;

static void key_make(ct_key_t *k, uint16_t zone, uint8_t proto, uint32_t sip,
                     uint32_t dip, uint16_t sp, uint16_t dp)
{
    bool swap = sip > dip || (sip == dip && sp > dp);
    k->zone = zone;
    k->proto = proto;
    k->ip[0] = swap ? dip : sip;
    k->ip[1] = swap ? sip : dip;
    k->port[0] = swap ? dp : sp;
    k->port[1] = swap ? sp : dp;
    k->src_side = swap;
}

static uint32_t key_hash(const ct_key_t *k)
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

static inline bool key_eq(const ct_entry_t *e, const ct_key_t *k)
{
    return e->ip[0] == k->ip[0] && e->ip[1] == k->ip[1] &&
           e->port[0] == k->port[0] && e->port[1] == k->port[1] &&
           e->zone == k->zone && e->proto == k->proto;
}

/* index slot holding entry @p ei (which is in the table) */
static uint32_t slot_of(const oc_ct_t *ct, uint32_t ei)
{
    uint32_t s = ct->e[ei].hash & ct->mask;
    while ((uint32_t)ct->idx[s] != ei + 1)
        s = (s + 1) & ct->mask;
    return s;
}

static ct_entry_t *lookup(oc_ct_t *ct, const ct_key_t *k, uint32_t h)
{
    for (uint32_t s = h & ct->mask;; s = (s + 1) & ct->mask) {
        uint64_t v = ct->idx[s];
        if (v == 0)
            return NULL;
        if ((uint32_t)(v >> 32) == h) {
            ct_entry_t *e = &ct->e[(uint32_t)v - 1];
            if (key_eq(e, k))
                return e;
        }
    }
}

/* remove entry @p ei: backward-shift deletion keeps probe chains whole */
static void remove_entry(oc_ct_t *ct, uint32_t ei)
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
    __atomic_store_n(&ct->st.flows, ct->st.flows - 1, __ATOMIC_RELAXED);
}

static inline bool expired(const ct_entry_t *e, uint64_t now)
{
    return now >= e->expires;
}

uint32_t oc_ct_expire(oc_ct_t *ct, uint64_t now_ms, uint32_t budget)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < budget && i < ct->cap; i++) {
        uint32_t ei = ct->hand;
        ct->hand = ct->hand + 1 == ct->cap ? 0 : ct->hand + 1;
        if ((ct->e[ei].flags & F_USED) && expired(&ct->e[ei], now_ms)) {
            remove_entry(ct, ei);
            bump(&ct->st.expired);
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
            remove_entry(ct, ei);
            bump(&ct->st.expired);
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
        remove_entry(ct, (uint32_t)victim);
        bump(&ct->st.evicted);
    }
    return victim;
}

static ct_entry_t *insert(oc_ct_t *ct, const ct_key_t *k, uint32_t h,
                          uint64_t now)
{
    uint32_t ei, s;
    ct_entry_t *e;

    if (ct->nfree == 0 && make_room(ct, now) < 0) {
        bump(&ct->st.full);
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
    for (s = h & ct->mask; ct->idx[s] != 0; s = (s + 1) & ct->mask)
        ;
    ct->idx[s] = (uint64_t)h << 32 | (ei + 1);
    __atomic_store_n(&ct->st.flows, ct->st.flows + 1, __ATOMIC_RELAXED);
    bump(&ct->st.created);
    return e;
}

/* ---------------------------------------------------------------- TCP */

enum { TH_FIN = 1, TH_SYN = 2, TH_RST = 4, TH_ACK = 16 };

typedef struct {
    uint32_t seq, ack, end;  /* end: seq + payload (+1 per SYN, FIN) */
    uint16_t win;
    uint8_t  flags;
    int      wscale;         /* -1: no option */
} tcp_seg_t;

static int tcp_wscale_opt(const uint8_t *o, uint32_t n)
{
    for (uint32_t i = 0; i < n;) {
        if (o[i] == 0)
            break;
        if (o[i] == 1) {
            i++;
            continue;
        }
        if (i + 1 >= n || o[i + 1] < 2 || i + o[i + 1] > n)
            break;
        if (o[i] == 3 && o[i + 1] == 3)
            return o[i + 2] > 14 ? 14 : o[i + 2];
        i += o[i + 1];
    }
    return -1;
}

static void td_update(ct_entry_t *e, int dir, const tcp_seg_t *g)
{
    uint32_t win = g->win;
    if (!(g->flags & TH_SYN) && (e->flags & F_WSCALE))
        win <<= e->wscale[dir];
    if (win == 0)
        win = 1;
    if (seq_after(g->end, e->td[dir].end))
        e->td[dir].end = g->end;
    if (seq_after(g->end, e->td[dir].maxend))
        e->td[dir].maxend = g->end;
    if (win > e->td[dir].maxwin)
        e->td[dir].maxwin = win;
    if (g->flags & TH_ACK) {
        uint32_t ackend = g->ack + win;
        if (seq_after(ackend, e->td[!dir].maxend))
            e->td[!dir].maxend = ackend;
    }
}

/* The sequence checks of Rooij's "Real stateful TCP packet filtering in IP
 * Filter" as Linux applies them: the segment starts before the sender's
 * right edge and ends after the left edge the receiver still accepts. */
static bool in_window(const ct_entry_t *e, int dir, const tcp_seg_t *g)
{
    const ct_td_t *snd = &e->td[dir], *rcv = &e->td[!dir];
    return !seq_after(g->seq, snd->maxend) &&
           seq_after(g->end, snd->end - rcv->maxwin - 1);
}

static oc_ct_result_t tcp_track(oc_ct_t *ct, ct_entry_t *e, int dir,
                                const tcp_seg_t *g, oc_ct_info_t *info)
{
    uint8_t f = g->flags, st = e->state;

    /* both sides known: every segment is checked against the window */
    if (st >= OC_CT_TCP_SYN_RECV && !(st == OC_CT_TCP_SYN_RECV && (f & TH_SYN)) &&
        !in_window(e, dir, g)) {
        bump(&ct->st.out_of_window);
        info->why = OC_CT_WHY_WINDOW;
        return OC_CT_INVALID;
    }
    if (f & TH_RST) {
        st = OC_CT_TCP_CLOSE;
    } else if (f & TH_SYN) {
        if (st == OC_CT_TCP_SYN_SENT && dir == 1 && (f & TH_ACK)) {
            e->td[1].end = e->td[1].maxend = g->end;
            e->td[1].maxwin = g->win ? g->win : 1;
            if (g->wscale >= 0 && e->wscale[0] != 0xff) {
                e->wscale[1] = (uint8_t)g->wscale;
                e->flags |= F_WSCALE;
            } else {
                e->wscale[0] = e->wscale[1] = 0;
            }
            st = OC_CT_TCP_SYN_RECV;
        } else if (!((st == OC_CT_TCP_SYN_SENT && dir == 0 && !(f & TH_ACK)) ||
                     (st == OC_CT_TCP_SYN_RECV && dir == 1 && (f & TH_ACK)))) {
            /* not a retransmission of the handshake */
            info->why = OC_CT_WHY_FLAGS;
            bump(&ct->st.invalid);
            return OC_CT_INVALID;
        }
    } else if (!(f & TH_ACK)) {
        info->why = OC_CT_WHY_FLAGS; /* every segment after SYN carries ACK */
        bump(&ct->st.invalid);
        return OC_CT_INVALID;
    } else {
        if (st == OC_CT_TCP_SYN_SENT) {
            info->why = OC_CT_WHY_FLAGS; /* no SYN+ACK yet */
            bump(&ct->st.invalid);
            return OC_CT_INVALID;
        }
        if (st == OC_CT_TCP_SYN_RECV && dir == 0) {
            st = OC_CT_TCP_ESTABLISHED;
            e->flags |= F_ASSURED;
        }
        if (f & TH_FIN) {
            e->flags |= dir ? F_FIN1 : F_FIN0;
            if (st < OC_CT_TCP_FIN_WAIT)
                st = OC_CT_TCP_FIN_WAIT;
            if ((e->flags & (F_FIN0 | F_FIN1)) == (F_FIN0 | F_FIN1))
                st = OC_CT_TCP_LAST_ACK;
        } else if (st == OC_CT_TCP_LAST_ACK) {
            st = OC_CT_TCP_TIME_WAIT;
        }
    }
    if (dir == 1)
        e->flags |= F_REPLIED;
    td_update(e, dir, g);
    e->state = st;
    info->state = st;
    return OC_CT_EST;
}

/* ---------------------------------------------------------- the packet */

typedef struct {
    uint32_t sip, dip;
    uint16_t sp, dp;
    uint8_t  proto;
    uint8_t  icmp_type; /* ICMP */
    bool     l4;        /* L4 header present (first fragment or whole) */
} ip_tuple_t;

/* IPv4 header at @p ip; @p l4 / @p l4len its payload.  0 ok, -1 bad, 1 a
 * non-first fragment. */
static int ip_parse(const uint8_t *ip, uint32_t len, bool inner,
                    ip_tuple_t *t, const uint8_t **l4, uint32_t *l4len)
{
    uint32_t ihl, total;
    if (len < 20 || (ip[0] >> 4) != 4)
        return -1;
    ihl = (uint32_t)(ip[0] & 15) * 4;
    total = rd16(ip + 2);
    if (ihl < 20 || ihl > len)
        return -1;
    /* an ICMP error quotes a prefix of the packet: its total length may
     * exceed what is quoted */
    if (!inner && (total < ihl || total > len))
        return -1;
    if (inner || total > len)
        total = len;
    t->sip = rd32(ip + 12);
    t->dip = rd32(ip + 16);
    t->proto = ip[9];
    t->sp = t->dp = 0;
    *l4 = ip + ihl;
    *l4len = total - ihl;
    return (rd16(ip + 6) & 0x1fff) != 0 ? 1 : 0;
}

static void touch(oc_ct_t *ct, ct_entry_t *e, uint64_t now)
{
    uint32_t to;
    switch (e->proto) {
    case 6:
        to = ct->to_ms_tcp[e->state];
        break;
    case 17:
        to = (e->flags & F_REPLIED) ? ct->to_udp2 : ct->to_udp1;
        break;
    case 1:
        to = ct->to_icmp;
        break;
    default:
        to = ct->to_gen;
    }
    e->expires = now + to;
}

/* ICMP error: the quoted packet's flow (as its sender sent it) */
static oc_ct_result_t icmp_error(oc_ct_t *ct, uint16_t zone, const uint8_t *q,
                                 uint32_t qlen, uint64_t now,
                                 oc_ct_info_t *info)
{
    ip_tuple_t t;
    const uint8_t *l4;
    uint32_t l4len, h;
    ct_key_t k;
    ct_entry_t *e;

    if (ip_parse(q, qlen, true, &t, &l4, &l4len) != 0 || l4len < 8) {
        info->why = OC_CT_WHY_MALFORMED;
        bump(&ct->st.invalid);
        return OC_CT_INVALID;
    }
    if (t.proto == 6 || t.proto == 17) {
        t.sp = rd16(l4);
        t.dp = rd16(l4 + 2);
    } else if (t.proto == 1 && (l4[0] == 8 || l4[0] == 0)) {
        t.sp = t.dp = rd16(l4 + 4);
    } else if (t.proto == 1) {
        bump(&ct->st.no_conn); /* errors about errors are never related */
        return OC_CT_NO_CONN;
    }
    key_make(&k, zone, t.proto, t.sip, t.dip, t.sp, t.dp);
    h = key_hash(&k);
    e = lookup(ct, &k, h);
    if (e == NULL || expired(e, now)) {
        bump(&ct->st.no_conn);
        return OC_CT_NO_CONN;
    }
    return OC_CT_RELATED;
}

oc_ct_result_t oc_ct_track(oc_ct_t *ct, uint16_t zone, const uint8_t *ip,
                           uint32_t len, uint64_t now, bool allow_new,
                           oc_ct_info_t *info)
{
    ip_tuple_t t;
    const uint8_t *l4;
    uint32_t l4len, h;
    tcp_seg_t g = {0};
    ct_key_t k;
    ct_entry_t *e;
    int dir, pr;
    bool opener;

    memset(info, 0, sizeof(*info));
    pr = ip_parse(ip, len, false, &t, &l4, &l4len);
    if (pr != 0) {
        if (pr > 0)
            return OC_CT_UNTRACKED;
        info->why = OC_CT_WHY_MALFORMED;
        bump(&ct->st.invalid);
        return OC_CT_INVALID;
    }
    info->proto = t.proto;
    opener = true;
    switch (t.proto) {
    case 6: {
        uint32_t doff;
        if (l4len < 20 || (doff = (uint32_t)(l4[12] >> 4) * 4) < 20 ||
            doff > l4len)
            goto malformed;
        t.sp = rd16(l4);
        t.dp = rd16(l4 + 2);
        g.seq = rd32(l4 + 4);
        g.ack = rd32(l4 + 8);
        g.flags = l4[13] & (TH_FIN | TH_SYN | TH_RST | TH_ACK);
        g.win = rd16(l4 + 14);
        g.end = g.seq + (l4len - doff) + !!(g.flags & TH_SYN) +
                !!(g.flags & TH_FIN);
        g.wscale = (g.flags & TH_SYN) ? tcp_wscale_opt(l4 + 20, doff - 20) : -1;
        opener = (g.flags & (TH_SYN | TH_ACK | TH_RST | TH_FIN)) == TH_SYN;
        break;
    }
    case 17:
        if (l4len < 8)
            goto malformed;
        t.sp = rd16(l4);
        t.dp = rd16(l4 + 2);
        break;
    case 1:
        if (l4len < 8)
            goto malformed;
        t.icmp_type = l4[0];
        if (l4[0] == 8 || l4[0] == 0) {
            t.sp = t.dp = rd16(l4 + 4); /* echo identifier */
            opener = l4[0] == 8;
        } else if (l4[0] == 3 || l4[0] == 4 || l4[0] == 5 || l4[0] == 11 ||
                   l4[0] == 12) {
            return icmp_error(ct, zone, l4 + 8, l4len - 8, now, info);
        } else {
            info->why = OC_CT_WHY_ICMP;
            bump(&ct->st.invalid);
            return OC_CT_INVALID;
        }
        break;
    default:
        break;
    }
    key_make(&k, zone, t.proto, t.sip, t.dip, t.sp, t.dp);
    h = key_hash(&k);
    e = lookup(ct, &k, h);
    if (e != NULL && expired(e, now)) {
        remove_entry(ct, (uint32_t)(e - ct->e));
        bump(&ct->st.expired);
        e = NULL;
    }
    dir = e != NULL && k.src_side != !!(e->flags & F_ORIG1);
    /* a new SYN from the originator reopens a closed or closing flow */
    if (e != NULL && t.proto == 6 && opener && dir == 0 &&
        e->state >= OC_CT_TCP_TIME_WAIT) {
        remove_entry(ct, (uint32_t)(e - ct->e));
        bump(&ct->st.closed);
        e = NULL;
    }
    if (e == NULL) {
        if (!allow_new || !opener) {
            bump(&ct->st.no_conn);
            return OC_CT_NO_CONN;
        }
        e = insert(ct, &k, h, now);
        if (e == NULL)
            return OC_CT_FULL;
        if (t.proto == 6) {
            e->state = OC_CT_TCP_SYN_SENT;
            e->wscale[0] = g.wscale >= 0 ? (uint8_t)g.wscale : 0xff;
            e->td[0].end = e->td[0].maxend = g.end;
            e->td[0].maxwin = g.win ? g.win : 1;
            info->state = e->state;
        }
        e->packets[0] = 1;
        touch(ct, e, now);
        return OC_CT_NEW;
    }
    info->reply = (uint8_t)dir;
    if (t.proto == 6) {
        oc_ct_result_t r = tcp_track(ct, e, dir, &g, info);
        if (r != OC_CT_EST)
            return r;
        if (e->wscale[0] == 0xff)
            e->wscale[0] = 0;
    } else if (t.proto == 1 && dir != (t.icmp_type == 0)) {
        info->why = OC_CT_WHY_ICMP; /* a reply from the requester, or vice versa */
        bump(&ct->st.invalid);
        return OC_CT_INVALID;
    } else if (dir == 1) {
        e->flags |= F_REPLIED | F_ASSURED;
    }
    e->packets[dir]++;
    touch(ct, e, now);
    return OC_CT_EST;
malformed:
    info->why = OC_CT_WHY_MALFORMED;
    bump(&ct->st.invalid);
    return OC_CT_INVALID;
}

/* ------------------------------------------------------ operator calls */

uint32_t oc_ct_flush(oc_ct_t *ct, int zone)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ct->cap; i++)
        if ((ct->e[i].flags & F_USED) && (zone < 0 || ct->e[i].zone == zone)) {
            remove_entry(ct, i);
            n++;
        }
    return n;
}

uint32_t oc_ct_walk(const oc_ct_t *ct, int zone, uint64_t now_ms,
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
        f.src_ip = e->ip[o];
        f.dst_ip = e->ip[!o];
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

const char *oc_ct_result_name(oc_ct_result_t r)
{
    static const char *const n[OC_CT_NRESULTS] = {
        "new", "established", "related", "no_connection", "invalid",
        "table_full", "untracked"};
    return (unsigned)r < OC_CT_NRESULTS ? n[r] : "?";
}

const char *oc_ct_tcp_state_name(oc_ct_tcp_state_t s)
{
    static const char *const n[OC_CT_TCP_NSTATES] = {
        "NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT",
        "LAST_ACK", "TIME_WAIT", "CLOSE"};
    return (unsigned)s < OC_CT_TCP_NSTATES ? n[s] : "?";
}
