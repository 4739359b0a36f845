/*
 * wire_runs.c — the encoder of RUNS bundles (wire.h): an agent's bundle
 * for a peer agent regrouped per (source, destination), so that a run of
 * items carries one header instead of one per message.  Count, then
 * copy: the first pass sizes every group, the second writes it.
 */
#include "wire/wire.h"

#define RUN_NO_LEN UINT32_MAX

typedef struct {
    uint64_t key;     /* [dst:24 | src:24] of a message header; free: ~0 */
    uint32_t total;   /* pass 1: the group's bytes; pass 2: write offset */
    uint32_t last;    /* the open run's length, RUN_NO_LEN when none */
    uint32_t hdr;     /* pass 2: the open run's header offset */
    uint32_t pad_;
} group_t;

typedef struct {
    group_t  *tab;
    uint32_t *order;  /* groups in order of first appearance */
    uint32_t  n, mask, shift;
} groups_t;

static uint32_t table_bits(size_t body_max)
{
    const size_t recs = body_max / 8 + 1;
    uint32_t bits = 4;
    while (((size_t)1 << bits) < 2 * recs)
        bits++;
    return bits;
}

size_t oc__wire_runs_scratch(size_t body_max)
{
    const size_t slots = (size_t)1 << table_bits(body_max);
    return slots * sizeof(group_t) + (body_max / 8 + 1) * sizeof(uint32_t);
}

static group_t *group_of(groups_t *g, uint64_t key)
{
    uint32_t i = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> g->shift);
    for (;; i = (i + 1) & g->mask) {
        group_t *e = &g->tab[i];
        if (e->key == key)
            return e;
        if (e->key == UINT64_MAX) {
            e->key = key;
            e->total = 0;
            e->last = RUN_NO_LEN;
            g->order[g->n++] = i;
            return e;
        }
    }
}

/* One record of the body: a run (prefix) or a message (the rest). */
typedef struct {
    uint64_t       key;
    uint32_t       len, cnt;
    const uint8_t *items;
    size_t         next;
} rec_t;

static void rec_at(const uint8_t *body, size_t off, size_t packed, rec_t *r)
{
    const uint64_t h = oc__load_le64(body + off);
    r->key = h & 0xffffffffffffull;
    r->len = (uint32_t)(h >> 48);
    if (off < packed) {
        r->cnt = oc__load_le32(body + off + 8);
        r->items = body + off + OC_WIRE_RUN_HDR_LEN;
    } else {
        r->cnt = 1;
        r->items = body + off + OC_WIRE_MSG_HDR_LEN;
    }
    r->next = (size_t)(r->items - body) + (size_t)r->cnt * oc__wire_pad8(r->len);
}

/* A run continues while the length stays; an empty message is a run of
 * its own (wire.h). */
static int extends(const group_t *e, uint32_t len)
{
    return len != 0 && e->last == len;
}

size_t oc__wire_runs_pack(const uint8_t *body, size_t packed, size_t len,
                          uint8_t *out, size_t out_cap, void *scratch,
                          size_t scratch_len)
{
    const uint32_t bits = table_bits(len);
    groups_t g;
    rec_t r;
    size_t off, total = 0;

    if (len == 0 || oc__wire_runs_scratch(len) > scratch_len)
        return 0;
    g.tab = scratch;
    g.mask = (1u << bits) - 1;
    g.shift = 64 - bits;
    g.order = (uint32_t *)(g.tab + ((size_t)1 << bits));
    g.n = 0;
    memset(g.tab, 0xff, ((size_t)1 << bits) * sizeof(group_t));

    /* pass 1: every group's size */
    for (off = 0; off < len; off = r.next) {
        rec_at(body, off, packed, &r);
        group_t *e = group_of(&g, r.key);
        if (!extends(e, r.len))
            e->total += OC_WIRE_RUN_HDR_LEN;
        e->total += r.cnt * (uint32_t)oc__wire_pad8(r.len);
        e->last = r.len == 0 ? RUN_NO_LEN : r.len;
    }
    for (uint32_t k = 0; k < g.n; k++) {
        group_t *e = &g.tab[g.order[k]];
        const uint32_t t = e->total;
        e->total = (uint32_t)total;
        e->last = RUN_NO_LEN;
        total += t;
    }
    if (total > out_cap || (packed == 0 && total >= len))
        return 0;

    /* pass 2: the same walk, each record to its group's place */
    for (off = 0; off < len; off = r.next) {
        rec_at(body, off, packed, &r);
        group_t *e = group_of(&g, r.key);
        const size_t bytes = (size_t)r.cnt * oc__wire_pad8(r.len);
        if (extends(e, r.len)) {
            uint8_t *c = out + e->hdr + 8;
            oc__store_le32(c, oc__load_le32(c) + r.cnt);
        } else {
            e->hdr = e->total;
            oc__store_le64(out + e->total, r.key | (uint64_t)r.len << 48);
            oc__store_le32(out + e->total + 8, r.cnt);
            oc__store_le32(out + e->total + 12, 0);
            e->total += OC_WIRE_RUN_HDR_LEN;
        }
        memcpy(out + e->total, r.items, bytes);
        e->total += (uint32_t)bytes;
        e->last = r.len == 0 ? RUN_NO_LEN : r.len;
    }
    return total;
}
