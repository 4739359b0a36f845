/*
 * rpeer.c — what a routing thread sends a peer agent, in runs (wire.h,
 * RUNS): the outlet toward a peer fills with mixed messages (a header
 * each) as every outlet does; when it is full, its buffer is regrouped in
 * place per (source, destination) and filling goes on behind the runs;
 * the bundle sent is all runs.  An 8-byte item then costs 8 bytes between
 * nodes, as in an inline rank's fixed bundle, not 16.  Router thread only.
 */
#include "router_int.h"

#include "util/log.h"

#include <stdlib.h>

oc_status_t oc__router_pack_init(oc_router_t *r)
{
    const size_t body = r->eng->p.bundle_size - OC_WIRE_HDR_LEN;
    r->pack_scratch_len = oc__wire_runs_scratch(body);
    r->pack_out = malloc(body);
    r->pack_scratch = malloc(r->pack_scratch_len);
    if (r->pack_out == NULL || r->pack_scratch == NULL)
        return OC_ERR_NO_MEMORY;
    return OC_OK;
}

void oc__router_pack_fini(oc_router_t *r)
{
    free(r->pack_out);
    free(r->pack_scratch);
    r->pack_out = NULL;
    r->pack_scratch = NULL;
}

/* The body's bytes already in runs, if they are this buffer's. */
static size_t packed_of(const out_t *o, const oc_eng_buf_t *b)
{
    return o->packed_buf == b ? o->packed : 0;
}

/* Regroup @p o's open buffer into runs in place when that is worth it
 * (a sixteenth of the buffer or more is mixed messages: the last rounds
 * of a bundle gain little).  The room left behind the runs for mixed
 * messages is two thirds of what is free: a message alone in its run
 * gains 8 bytes, at most half of its mixed size (a header and >= 1
 * padded byte), and an empty one (8 bytes mixed, a 16-byte run) takes 8
 * bytes more of the room as it goes in (peer_put) — so the final pack
 * always fits the buffer. */
static void compact(oc_router_t *r, out_t *o)
{
    oc_eng_out_t *eo = &o->eo;
    uint8_t *body = eo->buf->data + OC_WIRE_HDR_LEN;
    const size_t cap = r->eng->p.bundle_size - OC_WIRE_HDR_LEN;
    const size_t len = (size_t)(eo->wp - body);
    const size_t packed = packed_of(o, eo->buf);
    size_t n;

    if (len - packed < cap / 32)
        return;
    n = oc__wire_runs_pack(body, packed, len, r->pack_out, cap,
                           r->pack_scratch, r->pack_scratch_len);
    if (n == 0)
        return; /* not smaller (no prefix yet): it stays mixed */
    memcpy(body, r->pack_out, n);
    o->packed = (uint32_t)n;
    o->packed_buf = eo->buf;
    eo->wp = body + n;
    eo->end = eo->wp + ((2 * (cap - n) / 3) & ~(size_t)7);
}

int oc__router_peer_put(oc_router_t *r, out_t *o, uint32_t dst, uint32_t src,
                        const uint8_t *payload, uint32_t len)
{
    oc_eng_out_t *eo = &o->eo;
    const size_t need = OC_WIRE_MSG_HDR_LEN + oc__wire_pad8(len);
    size_t more;

    if (eo->buf == NULL || eo->item_len != OC_ENG_NO_ITEM || eo->buf->ring)
        return 0;
    more = len == 0 && o->packed_buf == eo->buf ? 8 : 0;
    if (eo->wp + need + more > eo->end) {
        compact(r, o);
        more = len == 0 && o->packed_buf == eo->buf ? 8 : 0;
    }
    if (eo->wp + need + more > eo->end) {
        /* no room: the engine opens the next buffer — after this one
         * is sent, if it has room for the header alone (an empty
         * message would go in without its 8 bytes of the room) */
        if (more != 0 && eo->wp + need <= eo->end)
            (void)oc__eng_flush(r->eng, eo, OC_ENG_FLUSH_FULL);
        return 0;
    }
    eo->end -= more;
    eo->wp = oc__wire_put_msg(eo->wp, dst, src, payload, len);
    eo->count++;
    return 1;
}

uint32_t oc__router_peer_pack(oc_router_t *r, out_t *o, oc_eng_buf_t *b,
                              uint32_t len)
{
    const size_t packed = packed_of(o, b);
    uint8_t *body = b->data + OC_WIRE_HDR_LEN;
    size_t n;

    o->packed = 0;
    o->packed_buf = NULL;
    /* a rank's fixed bundle forwarded whole, a pool copy: as it is */
    if ((b->data[5] & OC_WIRE_F_ALL) != 0 || len <= OC_WIRE_HDR_LEN ||
        len > r->eng->p.bundle_size)
        return len;
    n = oc__wire_runs_pack(body, packed, len - OC_WIRE_HDR_LEN, r->pack_out,
                           r->eng->p.bundle_size - OC_WIRE_HDR_LEN,
                           r->pack_scratch, r->pack_scratch_len);
    if (n == 0) {
        if (packed != 0) /* cannot be: compact() left room for the worst */
            oc_warn(OC_COMP_ROUTER, "router %u: a peer bundle did not "
                    "pack", r->p.index);
        return len;
    }
    memcpy(body, r->pack_out, n);
    oc__wire_hdr_set_runs(b->data, (uint32_t)(OC_WIRE_HDR_LEN + n));
    return (uint32_t)(OC_WIRE_HDR_LEN + n);
}
