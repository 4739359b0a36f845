/*
 * colld.c — encode and strictly decode the collective descriptors of the
 * agent placement (colld.h).  Pure functions on caller buffers;
 * thread-safe.  Every field of a descriptor from a rank is checked here
 * before the agent acts on it: a rank is not trusted.
 */
#include "wire/colld.h"
#include "util/bytes.h" /* the one byte-order code */
#include "wire/wire.h"

#include <string.h>

/* Bytes per element of each dtype (the OC_DTYPE_* order of offcore.h). */
static const uint8_t esize[] = {4, 8, 8, 4, 8, 2, 2};

/* Bytes of the contribution an OC_COLLD_F_INLINE descriptor carries (the
 * caller checked the dtype; an all-to-allv's or a broadcast's in dlen). */
static size_t inline_len(const oc_colld_t *d)
{
    if (!(d->flags & OC_COLLD_F_INLINE))
        return 0;
    return d->kind == OC_COLLD_ALLREDUCE ? (size_t)d->count * esize[d->dtype]
                                         : d->dlen;
}

size_t oc__colld_size(const oc_colld_t *d)
{
    return OC_COLLD_HDR + 32 * (size_t)d->nv + inline_len(d);
}

/* Layout: magic 4, version 1, kind 1, dtype 1, op 1, seq 4, root 4, nv 4,
 * flags 4, count 8 (= 32); pid 4, zero 4, saddr 8, slen 8, raddr 8, rlen 8
 * (= 72); then the arrays. */
void oc__colld_encode(const oc_colld_t *d, const uint64_t *vals, void *buf)
{
    uint8_t *p = buf;

    oc__store_le32(p, OC_COLLD_MAGIC);
    p[4] = OC_COLLD_VERSION;
    p[5] = d->kind;
    p[6] = d->dtype;
    p[7] = d->op;
    oc__store_le32(p + 8, d->seq);
    oc__store_le32(p + 12, d->root);
    oc__store_le32(p + 16, d->nv);
    oc__store_le32(p + 20, d->flags);
    oc__store_le64(p + 24, d->count);
    oc__store_le32(p + 32, d->pid);
    memset(p + 36, 0, 4);
    oc__store_le64(p + 40, d->saddr);
    oc__store_le64(p + 48, d->slen);
    oc__store_le64(p + 56, d->raddr);
    oc__store_le64(p + 64, d->rlen);
    p += OC_COLLD_HDR;
    for (size_t i = 0; i < 4 * (size_t)d->nv; i++, p += 8)
        oc__store_le64(p, vals[i]);
    if (inline_len(d) > 0)
        memcpy(p, d->data, inline_len(d));
}

uint64_t oc__colld_v(const oc_colld_t *d, unsigned which, uint32_t i)
{
    return oc__load_le64(d->v + 8 * ((size_t)which * d->nv + i));
}

int oc__colld_seq(const void *buf, size_t len, uint32_t *seq_out)
{
    const uint8_t *p = buf;

    if (len < OC_COLLD_HDR || oc__load_le32(p) != OC_COLLD_MAGIC ||
        p[4] != OC_COLLD_VERSION)
        return 0;
    *seq_out = oc__load_le32(p + 8);
    return 1;
}

int oc__colld_shape(const void *buf, size_t len, uint32_t size,
                    uint8_t *kind_out, uint32_t *root_out)
{
    const uint8_t *p = buf;
    uint32_t seq, root;

    if (!oc__colld_seq(buf, len, &seq) || p[5] < OC_COLLD_ALLREDUCE ||
        p[5] > OC_COLLD_BARRIER)
        return 0;
    root = oc__load_le32(p + 12);
    if (p[5] == OC_COLLD_BCAST && root >= size)
        return 0;
    *kind_out = p[5];
    *root_out = p[5] == OC_COLLD_BCAST ? root : 0;
    return 1;
}

oc_status_t oc__colld_decode(const void *buf, size_t len, uint32_t size,
                            oc_colld_t *d)
{
    const uint64_t lim = (uint64_t)1 << 48; /* bytes: far past any buffer */
    const uint8_t *p = buf;
    uint64_t need;
    size_t es;

    if (len < OC_COLLD_HDR)
        return OC_ERR_WIRE_LENGTH;
    if (oc__load_le32(p) != OC_COLLD_MAGIC)
        return OC_ERR_WIRE_MAGIC;
    if (p[4] != OC_COLLD_VERSION)
        return OC_ERR_WIRE_VERSION;
    memset(d, 0, sizeof(*d));
    d->kind = p[5];
    d->dtype = p[6];
    d->op = p[7];
    d->seq = oc__load_le32(p + 8);
    d->root = oc__load_le32(p + 12);
    d->nv = oc__load_le32(p + 16);
    d->count = oc__load_le64(p + 24);
    d->flags = oc__load_le32(p + 20);
    d->pid = oc__load_le32(p + 32);
    d->saddr = oc__load_le64(p + 40);
    d->slen = oc__load_le64(p + 48);
    d->raddr = oc__load_le64(p + 56);
    d->rlen = oc__load_le64(p + 64);
    if (d->kind < OC_COLLD_ALLREDUCE || d->kind > OC_COLLD_BARRIER ||
        d->dtype >= sizeof(esize) || d->op >= 4 ||
        (d->kind == OC_COLLD_ALLTOALLV) != (d->nv != 0) ||
        (d->nv != 0 && d->nv != size) ||
        (d->kind == OC_COLLD_BCAST && d->root >= size) ||
        (d->flags & ~(OC_COLLD_F_CMA | OC_COLLD_F_INLINE | OC_COLLD_F_SELF)) != 0 ||
        ((d->flags & OC_COLLD_F_SELF) &&
         (!(d->flags & OC_COLLD_F_CMA) || d->kind != OC_COLLD_ALLTOALLV)) ||
        oc__load_le32(p + 36) != 0)
        return OC_ERR_INVALID_PARAM;
    es = esize[d->dtype];
    if (d->count > lim / es)
        return OC_ERR_INVALID_PARAM;
    if ((d->flags & OC_COLLD_F_INLINE) &&
        (d->kind == OC_COLLD_BARRIER || (d->flags & OC_COLLD_F_CMA) ||
         (d->kind != OC_COLLD_ALLTOALLV &&
          (d->count == 0 || d->count > OC_COLLD_INLINE_MAX / es))))
        return OC_ERR_INVALID_PARAM;
    need = OC_COLLD_HDR + 32 * (uint64_t)d->nv;
    if (need > len)
        return OC_ERR_WIRE_LENGTH;
    if (!(d->flags & OC_COLLD_F_CMA) &&
        (d->pid || d->saddr || d->slen || d->raddr || d->rlen))
        return OC_ERR_INVALID_PARAM;
    d->v = p + OC_COLLD_HDR;
    for (uint32_t i = 0; i < d->nv; i++)
        for (unsigned w = 0; w < 4; w += 2) {
            uint64_t c = oc__colld_v(d, w, i), o = oc__colld_v(d, w + 1, i);
            if (c > lim / es || o > lim / es || (c + o) > lim / es)
                return OC_ERR_INVALID_PARAM;
        }
    if ((d->flags & OC_COLLD_F_INLINE) && d->kind == OC_COLLD_ALLTOALLV) {
        /* the send extent inline, the received blocks in DONE: both
         * small (the counts are below 2^48 / es: no overflow) */
        uint64_t rsum = 0;
        for (uint32_t i = 0; i < d->nv && rsum <= OC_COLLD_INLINE_MAX; i++)
            rsum += oc__colld_v(d, 2, i) * es;
        if (oc__colld_extent(d, 0) > OC_COLLD_INLINE_MAX / es ||
            rsum > OC_COLLD_INLINE_MAX)
            return OC_ERR_INVALID_PARAM;
        d->dlen = (size_t)(oc__colld_extent(d, 0) * es);
    } else if ((d->flags & OC_COLLD_F_INLINE) && d->kind == OC_COLLD_BCAST) {
        /* the root's data, or nothing from the others: which one the
         * sender is, the agent checks (rcoll.c) */
        d->dlen = len == need ? 0 : (size_t)d->count * es;
    } else {
        d->dlen = inline_len(d);
    }
    need += d->dlen;
    if (need != len)
        return OC_ERR_WIRE_LENGTH;
    if (d->flags & OC_COLLD_F_INLINE)
        d->data = d->v + 32 * (size_t)d->nv;
    if (d->flags & OC_COLLD_F_CMA) {
        const uint64_t top = (uint64_t)1 << 63;
        uint64_t sx = d->count * es, rx = sx; /* allreduce: the vector */
        if (d->kind == OC_COLLD_ALLTOALLV) {
            /* the buffers' extents the blocks imply (all below 2^48) */
            sx = oc__colld_extent(d, 0) * es;
            rx = oc__colld_extent(d, 2) * es;
        } else if (d->kind != OC_COLLD_ALLREDUCE) {
            return OC_ERR_INVALID_PARAM;
        }
        if (d->pid == 0 || sx == 0 || rx == 0 || d->saddr == 0 ||
            d->raddr == 0 || d->slen != sx || d->rlen != rx ||
            d->saddr >= top - d->slen || d->raddr >= top - d->rlen)
            return OC_ERR_INVALID_PARAM;
    }
    return OC_OK;
}

uint64_t oc__colld_extent(const oc_colld_t *d, unsigned which)
{
    uint64_t x = 0;
    for (uint32_t i = 0; i < d->nv; i++) {
        uint64_t c = oc__colld_v(d, which, i), o = oc__colld_v(d, which + 1, i);
        if (c > 0 && c + o > x)
            x = c + o;
    }
    return x;
}

void oc__colld_fail_encode(oc_status_t status, void *buf)
{
    uint8_t *p = buf;

    oc__store_le32(p, OC_COLLD_FAIL_MAGIC);
    oc__store_le32(p + 4, (uint32_t)(int32_t)status);
}

oc_status_t oc__colld_fail_decode(const void *buf, size_t len,
                                 oc_status_t *status_out)
{
    const uint8_t *p = buf;
    int32_t st;

    if (len != OC_COLLD_FAIL_LEN)
        return OC_ERR_WIRE_LENGTH;
    if (oc__load_le32(p) != OC_COLLD_FAIL_MAGIC)
        return OC_ERR_WIRE_MAGIC;
    st = (int32_t)oc__load_le32(p + 4);
    switch (st) {
    case OC_ERR_COLL_MISMATCH:
    case OC_ERR_COLL_COUNT:
    case OC_ERR_COLL_MEMORY:
    case OC_ERR_COLL_PEER_FAILED:
    case OC_ERR_NO_MEMORY:
    case OC_ERR_UNSUPPORTED:
        *status_out = (oc_status_t)st;
        return OC_OK;
    default:
        return OC_ERR_INVALID_PARAM;
    }
}
