/*
 * flow.c — the per-thread biflow table (flow.h).  Open addressing with
 * linear probing over a power-of-two array, keyed by the canonical
 * (lower endpoint first) 5-tuple and VNI, so both directions find one
 * entry; deletion by backward shift (no tombstones, probes stay short).
 * Threading and trust model: flow.h.
 */
#include "pkt/flow.h"

#include "util/bytes.h"

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
    /* TCP timestamps RTT (flow.h), per direction of the TSval's sender */
    uint8_t  ts_seen, ts_pend;      /* bit d: ts_max[d] / pend_*[d] valid */
    uint32_t ts_max[2];             /* newest TSval seen from d */
    uint32_t pend_val[2];           /* awaiting its echo from d ^ 1 */
    uint64_t pend_us[2];            /* when pend_val[d] was first seen */
    oc_flow_rtt_t rtt[2];
} flow_t;

const uint32_t oc_flow_rtt_le_us[OC_FLOW_RTT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
    1000000};

/* A pending TSval older than this is abandoned (its echo is not coming). */
#define TS_STALE_US 10000000ull

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

oc_status_t oc__flow_table_create(const oc_flow_conf_t *c, oc_flow_table_t **out)
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
    r->rtt[0] = f->rtt[0];
    r->rtt[1] = f->rtt[1];
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

void oc__flow_table_destroy(oc_flow_table_t *t)
{
    if (t == NULL)
        return;
    for (uint32_t i = 0; i <= t->mask; i++)
        if (t->f[i].used && (t->f[i].packets[0] | t->f[i].packets[1]))
            emit(t, &t->f[i], OC_FLOW_END_FORCED);
    free(t->f);
    free(t);
}

bool oc__flow_tcp_ts(const uint8_t *tcp, size_t hdr_len, oc_flow_ts_t *out)
{
    size_t i = 20;
    /* the layout Linux and most stacks send on every segment: NOP, NOP,
     * TS first (one word compare, then the two values) */
    if (hdr_len >= 32) {
        if (oc__load_be32(tcp + 20) == 0x0101080au) {
            out->val = oc__load_be32(tcp + 24);
            out->ecr = oc__load_be32(tcp + 28);
            return true;
        }
    }
    while (i < hdr_len) {
        uint8_t kind = tcp[i], olen;
        if (kind == 0)          /* end of option list */
            return false;
        if (kind == 1) {        /* NOP */
            i++;
            continue;
        }
        if (i + 1 >= hdr_len)
            return false;
        olen = tcp[i + 1];
        if (olen < 2 || olen > hdr_len - i)
            return false;       /* malformed: stop */
        if (kind == 8 && olen == 10) {
            const uint8_t *o = tcp + i + 2;
            out->val = oc__load_be32(o);
            out->ecr = oc__load_be32(o + 4);
            return true;
        }
        i += olen;
    }
    return false;
}

static void rtt_add(oc_flow_rtt_t *r, uint64_t us64)
{
    uint32_t us = us64 > UINT32_MAX ? UINT32_MAX : (uint32_t)us64;
    int b = 0;
    while (b < OC_FLOW_RTT_BUCKETS && us > oc_flow_rtt_le_us[b])
        b++;
    r->b[b]++;
    if (r->n == 0 || us < r->min_us)
        r->min_us = us;
    if (us > r->max_us)
        r->max_us = us;
    r->n++;
    r->sum_us += us;
}

/* Packet of direction @p dir with timestamps @p ts (flow.h's method). */
static void ts_update(flow_t *f, int dir, const oc_flow_ts_t *ts, bool ack,
                      uint64_t now)
{
    int o = dir ^ 1;
    uint8_t db = (uint8_t)(1u << dir), ob = (uint8_t)(1u << o);

    /* TSecr is meaningful only with ACK set (RFC 7323 3.2) */
    if (ack && (f->ts_pend & ob)) {
        int32_t d = (int32_t)(ts->ecr - f->pend_val[o]);
        if (d == 0) {
            rtt_add(&f->rtt[o], now > f->pend_us[o] ? now - f->pend_us[o] : 0);
            f->ts_pend &= (uint8_t)~ob;
        } else if (d > 0) {
            f->ts_pend &= (uint8_t)~ob; /* a later TSval echoed: passed over */
        }
    }
    if (!(f->ts_seen & db) || (int32_t)(ts->val - f->ts_max[dir]) > 0) {
        f->ts_max[dir] = ts->val;
        f->ts_seen |= db;
        if (!(f->ts_pend & db) || now - f->pend_us[dir] > TS_STALE_US) {
            f->pend_val[dir] = ts->val;
            f->pend_us[dir] = now;
            f->ts_pend |= db;
        }
    }
}

bool oc__flow_update(oc_flow_table_t *t, uint32_t len, int tcp_flags,
                    uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                    uint8_t proto, uint32_t vni, uint16_t port,
                    uint64_t now_us, const oc_flow_ts_t *ts)
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
        if (ts != NULL)
            ts_update(f, dir, ts, (fl & 0x10) != 0, now_us);
    }
    return true;
}

uint32_t oc__flow_expire(oc_flow_table_t *t, uint64_t now_us, uint32_t budget)
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

void oc__flow_stats(const oc_flow_table_t *t, oc_flow_stats_t *out)
{
    *out = t->st;
}

void oc__flow_walk(const oc_flow_table_t *t, oc_flow_emit_fn fn, void *arg)
{
    for (uint32_t i = 0; i <= t->mask; i++)
        if (t->f[i].used) {
            oc_flow_rec_t r;
            to_rec(&t->f[i], 0, &r);
            fn(arg, &r);
        }
}
