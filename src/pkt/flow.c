/*
 * flow.c — the per-thread biflow table (flow.h).  Open addressing with
 * linear probing over a power-of-two array, keyed by the canonical
 * (lower endpoint first) 5-tuple and VNI, so both directions find one
 * entry; deletion by backward shift (no tombstones, probes stay short).
 * Threading and trust model: flow.h.
 */
#include "pkt/flow.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t a, b;          /* canonical: (a, pa) <= (b, pb) */
    uint16_t pa, pb;
    uint32_t vni;
    uint16_t port;          /* the caller's port of the first packet */
    uint8_t  proto, used, fwd_is_a, fin;  /* fin: bit 0 fwd, 1 rev, 2 rst */
    uint32_t hash;
    uint64_t first_us, last_us, start_us; /* start: of the current record */
    uint64_t packets[2], octets[2];
    uint64_t total_octets;  /* since the first packet (records are deltas) */
    uint16_t flags[2];
    uint64_t syn_us;        /* the initiator's SYN, for the handshake RTT */
    uint32_t rtt_us;
} flow_t;

struct oc_flow_table {
    oc_flow_conf_t c;
    uint32_t mask, scan;
    flow_t  *f;
    oc_flow_stats_t st;
};

static uint32_t hash_key(uint32_t a, uint32_t b, uint16_t pa, uint16_t pb,
                         uint8_t proto, uint32_t vni)
{
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)pa << 48 | (uint64_t)pb << 32 | (uint64_t)proto << 24) ^ vni;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    h *= 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h ^ (h >> 32));
}

oc_status_t oc_flow_table_create(const oc_flow_conf_t *c, oc_flow_table_t **out)
{
    oc_flow_table_t *t;
    if (c->capacity < 1024 || c->capacity > (1u << 24) ||
        (c->capacity & (c->capacity - 1)) != 0 || c->emit == NULL ||
        c->idle_ms == 0 || c->active_ms == 0)
        return OC_ERR_INVALID_PARAM;
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return OC_ERR_NO_MEMORY;
    t->f = calloc(c->capacity, sizeof(*t->f));
    if (t->f == NULL) {
        free(t);
        return OC_ERR_NO_MEMORY;
    }
    t->c = *c;
    t->mask = c->capacity - 1;
    *out = t;
    return OC_OK;
}

static void to_rec(const flow_t *f, uint8_t reason, oc_flow_rec_t *r)
{
    int fa = f->fwd_is_a;
    r->start_ms = f->start_us / 1000;
    r->end_ms = f->last_us / 1000;
    r->src = fa ? f->a : f->b;
    r->dst = fa ? f->b : f->a;
    r->sport = fa ? f->pa : f->pb;
    r->dport = fa ? f->pb : f->pa;
    r->proto = f->proto;
    r->end_reason = reason;
    r->vni = f->vni;
    r->port = f->port;
    r->first_ms = f->first_us / 1000;
    r->total_octets = f->total_octets;
    for (int d = 0; d < 2; d++) {
        r->packets[d] = f->packets[d];
        r->octets[d] = f->octets[d];
        r->flags[d] = f->flags[d];
    }
    r->rtt_us = f->rtt_us;
}

/* Remove slot @p i, shifting later members of its cluster back. */
static void remove_at(oc_flow_table_t *t, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        if (!t->f[j].used)
            break;
        uint32_t home = t->f[j].hash & t->mask;
        /* j's entry may move to i when i lies cyclically in [home, j) */
        if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
            t->f[i] = t->f[j];
            i = j;
        }
    }
    t->f[i].used = 0;
}

static void emit(oc_flow_table_t *t, flow_t *f, uint8_t reason)
{
    oc_flow_rec_t r;
    to_rec(f, reason, &r);
    t->c.emit(t->c.arg, &r);
}

void oc_flow_table_destroy(oc_flow_table_t *t)
{
    if (t == NULL)
        return;
    for (uint32_t i = 0; i <= t->mask; i++)
        if (t->f[i].used && (t->f[i].packets[0] | t->f[i].packets[1]))
            emit(t, &t->f[i], OC_FLOW_END_FORCED);
    free(t->f);
    free(t);
}

bool oc_flow_update(oc_flow_table_t *t, uint32_t len, int tcp_flags,
                    uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                    uint8_t proto, uint32_t vni, uint16_t port,
                    uint64_t now_us)
{
    bool src_is_a = src < dst || (src == dst && sport <= dport);
    uint32_t a = src_is_a ? src : dst, b = src_is_a ? dst : src;
    uint16_t pa = src_is_a ? sport : dport, pb = src_is_a ? dport : sport;
    uint32_t h = hash_key(a, b, pa, pb, proto, vni), i = h & t->mask;
    flow_t *f;
    int dir;

    for (uint32_t probe = 0;; probe++, i = (i + 1) & t->mask) {
        f = &t->f[i];
        if (!f->used)
            break;
        if (f->hash == h && f->a == a && f->b == b && f->pa == pa &&
            f->pb == pb && f->proto == proto && f->vni == vni)
            goto found;
        if (probe > t->mask)
            break;
    }
    /* new: keep the table at most 7/8 full (probes stay short) */
    if (t->st.active >= (uint64_t)(t->mask + 1) / 8 * 7) {
        t->st.no_room++;
        return false;
    }
    memset(f, 0, sizeof(*f));
    f->a = a, f->b = b, f->pa = pa, f->pb = pb;
    f->proto = proto;
    f->vni = vni;
    f->port = port;
    f->hash = h;
    f->used = 1;
    f->fwd_is_a = src_is_a;
    f->first_us = f->start_us = now_us;
    t->st.active++;
    t->st.created++;
found:
    dir = (src_is_a == (bool)f->fwd_is_a) ? 0 : 1;
    f->packets[dir]++;
    f->octets[dir] += len;
    f->total_octets += len;
    f->last_us = now_us;
    if (tcp_flags >= 0) {
        uint8_t fl = (uint8_t)tcp_flags;
        f->flags[dir] |= fl;
        if (fl & 0x01)
            f->fin |= (uint8_t)(1u << dir);
        if (fl & 0x04)
            f->fin |= 4;
        /* handshake RTT as the DPU sees it: initiator's SYN to its ACK */
        if (dir == 0 && (fl & 0x12) == 0x02)
            f->syn_us = now_us;
        else if (dir == 0 && (fl & 0x12) == 0x10 && f->syn_us && !f->rtt_us &&
                 (f->flags[1] & 0x12) == 0x12)
            f->rtt_us = (uint32_t)(now_us - f->syn_us > 0 ? now_us - f->syn_us : 1);
    }
    return true;
}

uint32_t oc_flow_expire(oc_flow_table_t *t, uint64_t now_us, uint32_t budget)
{
    uint32_t n = 0;
    if (budget > t->mask + 1)
        budget = t->mask + 1;
    while (budget-- > 0) {
        uint32_t i = t->scan;
        flow_t *f = &t->f[i];
        uint8_t reason = 0;
        uint64_t idle, age;
        t->scan = (t->scan + 1) & t->mask;
        if (!f->used)
            continue;
        /* a clock a little behind the packets' (a caller's coarser tick,
         * or CLOCK_REALTIME stepped back) is no time at all: unsigned
         * differences would wrap to "idle for ages" and end a flow that
         * just began */
        idle = now_us > f->last_us ? now_us - f->last_us : 0;
        age = now_us > f->start_us ? now_us - f->start_us : 0;
        if (((f->fin & 3) == 3 || (f->fin & 4)) && idle >= 1000000)
            reason = OC_FLOW_END_EOF;
        else if (idle >= (uint64_t)t->c.idle_ms * 1000)
            reason = OC_FLOW_END_IDLE;
        else if (age >= (uint64_t)t->c.active_ms * 1000) {
            /* active timeout: a record of the deltas, the flow goes on */
            if (f->packets[0] | f->packets[1]) {
                emit(t, f, OC_FLOW_END_ACTIVE);
                n++;
            }
            f->start_us = now_us;
            memset(f->packets, 0, sizeof(f->packets));
            memset(f->octets, 0, sizeof(f->octets));
            continue;
        }
        if (reason == 0)
            continue;
        if (f->packets[0] | f->packets[1]) {
            emit(t, f, reason);
            n++;
        }
        remove_at(t, i);
        t->st.active--;
        t->st.ended++;
        /* the slot now holds a shifted entry: look at it again */
        t->scan = i;
    }
    return n;
}

void oc_flow_stats(const oc_flow_table_t *t, oc_flow_stats_t *out)
{
    *out = t->st;
}

void oc_flow_walk(const oc_flow_table_t *t, oc_flow_emit_fn fn, void *arg)
{
    for (uint32_t i = 0; i <= t->mask; i++)
        if (t->f[i].used) {
            oc_flow_rec_t r;
            to_rec(&t->f[i], 0, &r);
            fn(arg, &r);
        }
}
