/*
 * wire.c — bundle header encoding and the validator that stands between
 * every peer and the rest of offcore: nothing in a bundle is used before
 * oc__wire_validate() has accepted all of it.
 */
#include "wire/wire.h"

void oc__wire_hdr_write(void *buf, const oc_wire_hdr_t *h)
{
    uint8_t *p = buf;
    oc__store_le32(p + 0, OC_WIRE_MAGIC);
    p[4] = OC_WIRE_VERSION;
    p[5] = h->flags;
    p[6] = (uint8_t)h->item_size;
    p[7] = (uint8_t)(h->item_size >> 8);
    oc__store_le32(p + 8, h->count);
    oc__store_le32(p + 12, h->length);
    oc__store_le32(p + 16, h->src_hop);
    oc__store_le32(p + 20, h->job);
    oc__store_le64(p + 24, h->seq);
    oc__store_le32(p + 32, h->src);
    oc__store_le32(p + 36, h->dst);
}

static void hdr_read(const uint8_t *p, oc_wire_hdr_t *h)
{
    h->magic = oc__load_le32(p);
    h->version = p[4];
    h->flags = p[5];
    h->item_size = oc__load_le16(p + 6);
    h->count = oc__load_le32(p + 8);
    h->length = oc__load_le32(p + 12);
    h->src_hop = oc__load_le32(p + 16);
    h->job = oc__load_le32(p + 20);
    h->seq = oc__load_le64(p + 24);
    h->src = oc__load_le32(p + 32);
    h->dst = oc__load_le32(p + 36);
}

static inline bool rank_ok(uint32_t r, uint32_t nranks)
{
    return r < nranks && r < OC_WIRE_MAX_RANKS;
}

static oc_status_t check_fixed(const uint8_t *p, size_t body,
                               const oc_wire_hdr_t *h,
                               const oc_wire_check_t *chk)
{
    size_t stride, pad;

    if (h->item_size == 0)
        return OC_ERR_WIRE_ITEM_SIZE;
    if (!rank_ok(h->src, chk->nranks) || !rank_ok(h->dst, chk->nranks))
        return OC_ERR_WIRE_RANK;
    if (chk->dst != OC_WIRE_RANK_NONE && h->dst != chk->dst)
        return OC_ERR_WIRE_RANK;
    if (chk->src != OC_WIRE_RANK_NONE && h->src != chk->src)
        return OC_ERR_WIRE_RANK;
    stride = oc__wire_pad8(h->item_size);
    if (body % stride != 0)
        return OC_ERR_WIRE_LENGTH;
    if (body / stride != h->count)
        return OC_ERR_WIRE_COUNT;
    /* Padding must be zero as in mixed mode: one encoding per bundle.  The
     * pad is the top (stride - item_size) < 8 bytes of each item's last
     * 8-byte word, so one load per item checks it. */
    pad = stride - h->item_size;
    if (pad != 0) {
        uint64_t mask = ~(UINT64_MAX >> (8 * pad));
        for (size_t off = stride - 8; off < body; off += stride)
            if (oc__load_le64(p + off) & mask)
                return OC_ERR_WIRE_LENGTH;
    }
    return OC_OK;
}

/* A rank's column stream (wire.h): destinations, then items; or an
 * agent's source column toward a rank: sources, then items. */
static oc_status_t check_column(const uint8_t *p, size_t body,
                                const oc_wire_hdr_t *h,
                                const oc_wire_check_t *chk)
{
    const uint32_t lim = chk->nranks < OC_WIRE_MAX_RANKS ? chk->nranks
                                                         : OC_WIRE_MAX_RANKS;
    const size_t stride = oc__wire_pad8(h->item_size);
    const size_t dbytes = oc__wire_col_dst_bytes(h->count);
    const int srccol = (h->flags & OC_WIRE_F_SRCCOL) != 0;
    uint32_t bad = 0;

    if (h->item_size == 0)
        return OC_ERR_WIRE_ITEM_SIZE;
    if (srccol) {
        if (!rank_ok(h->dst, chk->nranks) || h->src != OC_WIRE_RANK_NONE)
            return OC_ERR_WIRE_RANK;
        if (chk->dst != OC_WIRE_RANK_NONE && h->dst != chk->dst)
            return OC_ERR_WIRE_RANK;
    } else {
        if (!rank_ok(h->src, chk->nranks) || h->dst != OC_WIRE_RANK_NONE)
            return OC_ERR_WIRE_RANK;
        if (chk->src != OC_WIRE_RANK_NONE && h->src != chk->src)
            return OC_ERR_WIRE_RANK;
    }
    /* count is below 2^32 and so is body: no overflow in 64 bits */
    if (body != dbytes + (size_t)h->count * stride)
        return OC_ERR_WIRE_LENGTH;
    if (srccol && chk->src != OC_WIRE_RANK_NONE) {
        /* sources that must all be the one the connection names */
        for (uint32_t i = 0; i < h->count; i++)
            bad |= oc__load_le32(p + 4 * (size_t)i) != chk->src;
    } else if (srccol || !(chk->flags & OC_WIRE_CHECK_DST_AT_USE)) {
        /* the hot check: one compare per rank of the column, no branch
         * (a source column is always checked here: it is read by the
         * rank, never re-checked at use) */
        for (uint32_t i = 0; i < h->count; i++)
            bad |= oc__load_le32(p + 4 * (size_t)i) >= lim;
    }
    if (bad)
        return OC_ERR_WIRE_RANK;
    if ((h->count & 1) && oc__load_le32(p + 4 * (size_t)h->count) != 0)
        return OC_ERR_WIRE_LENGTH; /* the column's padding */
    if (stride != h->item_size) {
        uint64_t mask = ~(UINT64_MAX >> (8 * (stride - h->item_size)));
        for (size_t off = dbytes + stride - 8; off < body; off += stride)
            if (oc__load_le64(p + off) & mask)
                return OC_ERR_WIRE_LENGTH;
    }
    return OC_OK;
}

static oc_status_t check_mixed(const uint8_t *p, size_t body,
                               const oc_wire_hdr_t *h,
                               const oc_wire_check_t *chk)
{
    const uint8_t *end = p + body;
    uint32_t n = 0;
    /* a stream carries one source: each message must name it */
    const uint32_t only_src = (h->flags & OC_WIRE_F_STREAM) ? h->src
                                                             : chk->src;

    if (h->item_size != 0)
        return OC_ERR_WIRE_ITEM_SIZE;
    if (h->flags & OC_WIRE_F_STREAM) {
        if (!rank_ok(h->src, chk->nranks) || h->dst != OC_WIRE_RANK_NONE)
            return OC_ERR_WIRE_RANK;
        if (chk->src != OC_WIRE_RANK_NONE && h->src != chk->src)
            return OC_ERR_WIRE_RANK;
    }
    /* The hot loop of every agent (a rank's stream is checked message by
     * message): bounds hoisted, the padding checked a word at a time. */
    const uint32_t lim = chk->nranks < OC_WIRE_MAX_RANKS ? chk->nranks
                                                         : OC_WIRE_MAX_RANKS;
    const uint32_t want_dst = chk->dst;
    while (p < end) {
        uint64_t mh;
        uint32_t dst, src, len;
        size_t padded;

        if ((size_t)(end - p) < OC_WIRE_MSG_HDR_LEN)
            return OC_ERR_WIRE_LENGTH;
        mh = oc__load_le64(p);
        dst = (uint32_t)(mh & 0xffffffu);
        src = (uint32_t)((mh >> 24) & 0xffffffu);
        len = (uint32_t)(mh >> 48);
        if (dst >= lim || src >= lim)
            return OC_ERR_WIRE_RANK;
        if ((want_dst != OC_WIRE_RANK_NONE && dst != want_dst) ||
            (only_src != OC_WIRE_RANK_NONE && src != only_src))
            return OC_ERR_WIRE_RANK;
        p += OC_WIRE_MSG_HDR_LEN;
        padded = oc__wire_pad8(len);
        if ((size_t)(end - p) < padded)
            return OC_ERR_WIRE_LENGTH;
        /* padding: the top (padded - len) bytes of the last word */
        if ((len & 7) &&
            (oc__load_le64(p + padded - 8) & ~(UINT64_MAX >> (8 * (padded - len)))))
            return OC_ERR_WIRE_LENGTH;
        p += padded;
        if (++n > h->count)
            return OC_ERR_WIRE_COUNT;
    }
    return n == h->count ? OC_OK : OC_ERR_WIRE_COUNT;
}

/* An agent's bundle for a peer agent (wire.h, runs): every run's length
 * checked exactly against what is left, in 64 bits (n < 2^32 and a padded
 * item < 2^17: no overflow). */
static oc_status_t check_runs(const uint8_t *p, size_t body,
                              const oc_wire_hdr_t *h,
                              const oc_wire_check_t *chk)
{
    const uint8_t *end = p + body;
    const uint32_t lim = chk->nranks < OC_WIRE_MAX_RANKS ? chk->nranks
                                                         : OC_WIRE_MAX_RANKS;
    uint32_t n = 0;
    uint64_t prev = UINT64_MAX;

    if (h->item_size != 0)
        return OC_ERR_WIRE_ITEM_SIZE;
    if (h->src != OC_WIRE_RANK_NONE || h->dst != OC_WIRE_RANK_NONE)
        return OC_ERR_WIRE_RANK;
    while (p < end) {
        uint64_t rh;
        uint32_t dst, src, len, cnt;
        size_t padded, bytes;

        if ((size_t)(end - p) < OC_WIRE_RUN_HDR_LEN)
            return OC_ERR_WIRE_LENGTH;
        rh = oc__load_le64(p);
        dst = (uint32_t)(rh & 0xffffffu);
        src = (uint32_t)((rh >> 24) & 0xffffffu);
        len = (uint32_t)(rh >> 48);
        cnt = oc__load_le32(p + 8);
        if (oc__load_le32(p + 12) != 0)
            return OC_ERR_WIRE_LENGTH; /* reserved: one encoding */
        if (dst >= lim || src >= lim)
            return OC_ERR_WIRE_RANK;
        if ((chk->dst != OC_WIRE_RANK_NONE && dst != chk->dst) ||
            (chk->src != OC_WIRE_RANK_NONE && src != chk->src))
            return OC_ERR_WIRE_RANK;
        /* n >= 1, within the header's count; an empty message carries a
         * header each, as in mixed mode (no count without bytes) */
        if (cnt == 0 || cnt > h->count - n || (len == 0 && cnt != 1))
            return OC_ERR_WIRE_COUNT;
        /* one encoding: a run never goes on in the next (empty messages
         * excepted, one a run) */
        if (rh == prev && len != 0)
            return OC_ERR_WIRE_COUNT;
        prev = rh;
        p += OC_WIRE_RUN_HDR_LEN;
        padded = oc__wire_pad8(len);
        bytes = (size_t)cnt * padded;
        if ((size_t)(end - p) < bytes)
            return OC_ERR_WIRE_LENGTH;
        if (len & 7) {
            const uint64_t mask = ~(UINT64_MAX >> (8 * (padded - len)));
            for (size_t off = padded - 8; off < bytes; off += padded)
                if (oc__load_le64(p + off) & mask)
                    return OC_ERR_WIRE_LENGTH;
        }
        p += bytes;
        n += cnt;
    }
    return n == h->count ? OC_OK : OC_ERR_WIRE_COUNT;
}

void oc__wire_hdr_set_runs(void *buf, uint32_t len)
{
    uint8_t *p = buf;
    p[5] = (uint8_t)((p[5] & ~OC_WIRE_F_ALL) | OC_WIRE_F_RUNS);
    oc__store_le32(p + 12, len);
    /* a runs bundle names no single source or destination; a mixed one
     * may (its validator does not look): libFuzzer found a mixed bundle
     * whose header dst packed into a runs bundle its validator refused */
    oc__store_le32(p + 32, OC_WIRE_RANK_NONE);
    oc__store_le32(p + 36, OC_WIRE_RANK_NONE);
}

oc_status_t oc__wire_validate(const void *buf, size_t len,
                             const oc_wire_check_t *chk, oc_wire_hdr_t *hdr_out)
{
    const uint8_t *p = buf;
    oc_wire_hdr_t h;
    oc_status_t st;

    if (buf == NULL || chk == NULL || hdr_out == NULL)
        return OC_ERR_INVALID_PARAM;
    if (len < OC_WIRE_HDR_LEN)
        return OC_ERR_WIRE_TRUNCATED;
    hdr_read(p, &h);
    if (h.magic != OC_WIRE_MAGIC)
        return OC_ERR_WIRE_MAGIC;
    if (h.version != OC_WIRE_VERSION)
        return OC_ERR_WIRE_VERSION;
    if (h.flags & ~OC_WIRE_F_KNOWN)
        return OC_ERR_WIRE_FLAGS;
    if ((h.flags & OC_WIRE_F_RUNS) && (h.flags & OC_WIRE_F_ALL))
        return OC_ERR_WIRE_FLAGS;
    /* a source column is a fixed layout and nothing else */
    if ((h.flags & OC_WIRE_F_SRCCOL) &&
        (h.flags & ~OC_WIRE_F_SRCCOL) != OC_WIRE_F_FIXED)
        return OC_ERR_WIRE_FLAGS;
    /* A stream is one rank's unsorted output for its agent: never for a
     * receiver that is one rank. */
    if ((h.flags & OC_WIRE_F_STREAM) && chk->dst != OC_WIRE_RANK_NONE)
        return OC_ERR_WIRE_FLAGS;
    if (h.job != chk->job)
        return OC_ERR_WIRE_JOB;
    if (h.length != len || (len & 7) != 0)
        return OC_ERR_WIRE_LENGTH;
    if (h.count == 0)
        return OC_ERR_WIRE_EMPTY;
    if (h.flags & OC_WIRE_F_RUNS)
        st = check_runs(p + OC_WIRE_HDR_LEN, len - OC_WIRE_HDR_LEN, &h, chk);
    else if ((h.flags & OC_WIRE_F_ALL) == OC_WIRE_F_ALL ||
             (h.flags & OC_WIRE_F_SRCCOL))
        st = check_column(p + OC_WIRE_HDR_LEN, len - OC_WIRE_HDR_LEN, &h, chk);
    else if (h.flags & OC_WIRE_F_FIXED)
        st = check_fixed(p + OC_WIRE_HDR_LEN, len - OC_WIRE_HDR_LEN, &h, chk);
    else
        st = check_mixed(p + OC_WIRE_HDR_LEN, len - OC_WIRE_HDR_LEN, &h, chk);
    if (st != OC_OK)
        return st;
    *hdr_out = h;
    return OC_OK;
}
