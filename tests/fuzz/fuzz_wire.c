/*
 * fuzz_wire.c — libFuzzer target for oc__wire_validate(), the parser that
 * stands between every peer and the runtime.
 *
 * Arbitrary bytes go to the validator on an exact-size heap copy, so that
 * AddressSanitizer sees any read past the end.  When a bundle is accepted,
 * the iterator walks it, touching every payload byte, and the invariants
 * that the runtime relies on are checked: the messages fill the bundle
 * exactly, their number is the header's count, every rank is in range and
 * for this receiver, padding is zero (a column stream's destination column
 * too), iter_skip agrees with iter_next, and
 * re-encoding the messages gives back the same bytes (one encoding per
 * bundle); a mixed bundle packed into runs (as an agent sends a peer) is
 * accepted, holds the same messages in each pair's order, and packing in
 * two steps gives the same bytes.  A broken invariant aborts, which libFuzzer reports as a crash.
 *
 * Input layout: see fuzz_wire.h.  Built with libFuzzer (-Dfuzz=true, clang)
 * and, without it, into fuzz_wire_replay (fuzz_main.c) for every build.
 */
#include "fuzz_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

const uint32_t fuzz_wire_nranks[16] = {
    16,   1,     2,         3,         4,          8,          255, 256,
    4096, 65536, 0xfffffeu, 0xffffffu, 0x1000000u, UINT32_MAX, 0,   5};

unsigned long fuzz_wire_accepted;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_wire.c:%d: invariant broken: %s\n",          \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static volatile uint8_t sink;

static int rank_for(uint32_t r, const oc_wire_check_t *chk)
{
    return r < chk->nranks && r < OC_WIRE_MAX_RANKS;
}

/* An accepted mixed bundle, packed as an agent packs it for a peer
 * (oc__wire_runs_pack): the result is a RUNS bundle the same receiver
 * accepts, with each (source, destination)'s messages in their order,
 * within the size bound; packed in two steps (a prefix first, as a
 * router's compaction does) it is the same bytes. */
static void check_pack(const uint8_t *buf, size_t len,
                       const oc_wire_check_t *chk, const oc_wire_hdr_t *h,
                       uint8_t split_sel)
{
    const size_t body = len - OC_WIRE_HDR_LEN;
    const size_t slen = oc__wire_runs_scratch(body);
    uint8_t *out = malloc(len * 2), *two = malloc(len * 2),
            *out2 = malloc(len * 2), *used = calloc(h->count, 1);
    void *scratch = malloc(slen);
    oc_wire_iter_t a, b;
    oc_wire_msg_t ma, mb;
    oc_wire_hdr_t ho;
    size_t n, off = 0, pre, n2;
    uint32_t split, k;

    CHECK(out != NULL && two != NULL && out2 != NULL && used != NULL &&
          scratch != NULL);
    memset(&ma, 0, sizeof(ma));
    n = oc__wire_runs_pack(buf + OC_WIRE_HDR_LEN, 0, body,
                           out + OC_WIRE_HDR_LEN, 2 * body, scratch, slen);
    if (n == 0)
        goto done; /* not smaller: an agent sends it mixed */
    CHECK(n < body && n % 8 == 0);
    memcpy(out, buf, OC_WIRE_HDR_LEN);
    oc__wire_hdr_set_runs(out, (uint32_t)(OC_WIRE_HDR_LEN + n));
    CHECK(oc__wire_validate(out, OC_WIRE_HDR_LEN + n, chk, &ho) == OC_OK);
    CHECK(ho.count == h->count && (ho.flags & OC_WIRE_F_RUNS));
    /* every message of the packed bundle is the first of its pair not
     * yet matched in the original */
    oc__wire_iter_init(&b, out, &ho);
    while (oc__wire_iter_next(&b, &mb)) {
        oc__wire_iter_init(&a, buf, h);
        k = 0;
        while (oc__wire_iter_next(&a, &ma) &&
               (used[k] || ma.src != mb.src || ma.dst != mb.dst))
            k++;
        CHECK(k < h->count && !used[k]);
        CHECK(ma.len == mb.len && memcmp(ma.payload, mb.payload, ma.len) == 0);
        used[k] = 1;
    }
    /* two steps: the first split messages packed alone, then the rest */
    split = split_sel % (h->count + 1);
    oc__wire_iter_init(&a, buf, h);
    oc__wire_iter_skip(&a, split);
    off = (size_t)(a.p - (buf + OC_WIRE_HDR_LEN));
    pre = off ? oc__wire_runs_pack(buf + OC_WIRE_HDR_LEN, 0, off, two,
                                   2 * body, scratch, slen)
              : 0;
    if (pre == 0)
        goto done;
    memcpy(two + pre, buf + OC_WIRE_HDR_LEN + off, body - off);
    n2 = oc__wire_runs_pack(two, pre, pre + body - off, out2, 2 * len,
                            scratch, slen);
    CHECK(n2 == n);
    CHECK(n2 <= pre + 2 * (body - off));
    CHECK(memcmp(out2, out + OC_WIRE_HDR_LEN, n) == 0);
done:
    free(out2);
    free(scratch);
    free(used);
    free(two);
    free(out);
}

static void check_accepted(const uint8_t *buf, size_t len,
                           const oc_wire_check_t *chk, const oc_wire_hdr_t *h,
                           uint8_t skip_sel)
{
    uint8_t hdr_bytes[OC_WIRE_HDR_LEN];
    oc_wire_hdr_t h2;
    oc_wire_iter_t it, it2;
    oc_wire_msg_t m, prev = {0, 0, 0, NULL};
    const uint8_t *cur = buf + OC_WIRE_HDR_LEN;
    uint8_t *re, *rp;
    uint32_t n = 0, skip;
    uint8_t acc = 0;

    /* the header that was accepted */
    CHECK(h->magic == OC_WIRE_MAGIC);
    CHECK(h->version == OC_WIRE_VERSION);
    CHECK((h->flags & ~OC_WIRE_F_KNOWN) == 0);
    const int runs = (h->flags & OC_WIRE_F_RUNS) != 0;
    if (runs)
        CHECK((h->flags & OC_WIRE_F_ALL) == 0 && h->item_size == 0 &&
              h->src == OC_WIRE_RANK_NONE && h->dst == OC_WIRE_RANK_NONE);
    CHECK(h->job == chk->job);
    CHECK(h->length == len);
    CHECK(len % 8 == 0 && len > OC_WIRE_HDR_LEN);
    CHECK(h->count > 0);
    /* a stream: one rank's, never accepted by a single rank; with FIXED
     * in column layout (a destination column, then the items) */
    const int srccol = (h->flags & OC_WIRE_F_SRCCOL) != 0;
    const int column = (h->flags & OC_WIRE_F_ALL) == OC_WIRE_F_ALL || srccol;
    if (srccol) /* an agent's for one rank: a column of sources */
        CHECK(h->flags == (OC_WIRE_F_SRCCOL | OC_WIRE_F_FIXED) &&
              h->src == OC_WIRE_RANK_NONE && rank_for(h->dst, chk) &&
              (chk->dst == OC_WIRE_RANK_NONE || h->dst == chk->dst));
    if (column) {
        CHECK(h->item_size > 0);
        cur += oc__wire_col_dst_bytes(h->count);
        for (size_t i = 4 * (size_t)h->count;
             i < oc__wire_col_dst_bytes(h->count); i++)
            CHECK(buf[OC_WIRE_HDR_LEN + i] == 0);
    }
    if (h->flags & OC_WIRE_F_STREAM) {
        CHECK(chk->dst == OC_WIRE_RANK_NONE);
        CHECK(rank_for(h->src, chk) && h->dst == OC_WIRE_RANK_NONE);
        CHECK(chk->src == OC_WIRE_RANK_NONE || h->src == chk->src);
    }
    oc__wire_hdr_write(hdr_bytes, h);
    CHECK(memcmp(hdr_bytes, buf, OC_WIRE_HDR_LEN) == 0);

    /* every message, every payload byte */
    oc__wire_iter_init(&it, buf, h);
    while (oc__wire_iter_next(&it, &m)) {
        size_t padded = oc__wire_pad8(m.len);

        CHECK(n < h->count);
        CHECK(m.len <= OC_WIRE_MAX_MSG);
        CHECK(rank_for(m.src, chk) && rank_for(m.dst, chk));
        CHECK(chk->dst == OC_WIRE_RANK_NONE || m.dst == chk->dst);
        CHECK(chk->src == OC_WIRE_RANK_NONE || m.src == chk->src);
        if (h->flags & OC_WIRE_F_STREAM)
            CHECK(m.src == h->src);
        if (column) {
            CHECK(m.len == h->item_size);
            CHECK(srccol ? m.dst == h->dst : m.src == h->src);
            CHECK(m.payload == cur);
        } else if (h->flags & OC_WIRE_F_FIXED) {
            CHECK(m.len == h->item_size && m.len > 0);
            CHECK(m.src == h->src && m.dst == h->dst);
            CHECK(m.payload == cur);
        } else if (runs) {
            /* a run's first item behind its header, the others bare */
            CHECK(m.payload == cur || m.payload == cur + OC_WIRE_RUN_HDR_LEN);
            if (m.payload == cur) {
                CHECK(n > 0 && m.len > 0);
                CHECK(m.src == prev.src && m.dst == prev.dst &&
                      m.len == prev.len);
            }
        } else {
            CHECK(m.payload == cur + OC_WIRE_MSG_HDR_LEN);
        }
        prev = m;
        CHECK(m.payload + padded <= buf + len);
        for (uint32_t i = 0; i < m.len; i++)
            acc ^= m.payload[i];
        for (size_t i = m.len; i < padded; i++)
            CHECK(m.payload[i] == 0);
        cur = m.payload + padded;
        CHECK(cur == it.p);
        n++;
    }
    sink = acc;
    CHECK(n == h->count);
    CHECK(it.p == buf + len);
    CHECK(it.left == 0);

    /* iter_skip lands where as many iter_next calls land */
    skip = skip_sel % (h->count + 1);
    oc__wire_iter_init(&it, buf, h);
    oc__wire_iter_init(&it2, buf, h);
    for (uint32_t i = 0; i < skip; i++)
        CHECK(oc__wire_iter_next(&it, &m));
    oc__wire_iter_skip(&it2, skip);
    CHECK(it.p == it2.p && it.left == it2.left);

    /* canonical: re-encoding the messages gives the same bytes */
    re = malloc(len);
    CHECK(re != NULL);
    rp = re + OC_WIRE_HDR_LEN;
    if (column) {
        uint32_t k = 0;
        memset(rp, 0, oc__wire_col_dst_bytes(h->count));
        oc__wire_iter_init(&it, buf, h);
        while (oc__wire_iter_next(&it, &m))
            oc__store_le32(rp + 4 * (size_t)k++, srccol ? m.src : m.dst);
        rp += oc__wire_col_dst_bytes(h->count);
    }
    oc__wire_iter_init(&it, buf, h);
    uint8_t *run = NULL; /* RUNS: the open run's header */
    while (oc__wire_iter_next(&it, &m)) {
        if (h->flags & OC_WIRE_F_FIXED) {
            rp = oc__wire_put_item(rp, m.payload, m.len);
        } else if (runs) {
            /* a new run where source, destination or length change, and
             * for every empty message */
            if (run != NULL && m.len != 0 &&
                oc__load_le64(run) == oc__wire_msg_hdr(m.dst, m.src, m.len)) {
                oc__store_le32(run + 8, oc__load_le32(run + 8) + 1);
            } else {
                run = rp;
                oc__store_le64(rp, oc__wire_msg_hdr(m.dst, m.src, m.len));
                oc__store_le32(rp + 8, 1);
                oc__store_le32(rp + 12, 0);
                rp += OC_WIRE_RUN_HDR_LEN;
            }
            if (m.len != 0)
                rp = oc__wire_put_item(rp, m.payload, m.len);
        } else {
            rp = oc__wire_put_msg(rp, m.dst, m.src, m.payload, m.len);
        }
    }
    CHECK(rp == re + len);
    oc__wire_hdr_write(re, h);
    CHECK(memcmp(re, buf, len) == 0);
    free(re);

    if ((h->flags & (OC_WIRE_F_KNOWN)) == 0)
        check_pack(buf, len, chk, h, skip_sel);

    /* a pure function: the same answer twice; no prefix is a bundle */
    CHECK(oc__wire_validate(buf, len, chk, &h2) == OC_OK);
    CHECK(memcmp(&h2, h, sizeof(h2)) == 0);
    CHECK(oc__wire_validate(buf, len - 8, chk, &h2) != OC_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    oc_wire_check_t chk;
    oc_wire_hdr_t h;
    oc_status_t st;
    uint8_t *buf;
    size_t len;

    if (size < FUZZ_WIRE_PREFIX)
        return 0;
    memset(&chk, 0, sizeof(chk));
    chk.nranks = fuzz_wire_nranks[data[0] & 15];
    chk.dst = data[1] == 0xff ? OC_WIRE_RANK_NONE : data[1];
    chk.job = FUZZ_WIRE_JOB;
    chk.src = data[1] == 0xfe ? 0 : OC_WIRE_RANK_NONE;
    len = size - FUZZ_WIRE_PREFIX;
    if (!(data[2] & 1) && len >= 24) {
        const uint8_t *j = data + FUZZ_WIRE_PREFIX + 20;
        chk.job = (uint32_t)j[0] | (uint32_t)j[1] << 8 | (uint32_t)j[2] << 16 |
                  (uint32_t)j[3] << 24;
    }

    /* an exact-size, malloc-aligned copy: as a receive buffer would be */
    buf = malloc(len ? len : 1);
    CHECK(buf != NULL);
    memcpy(buf, data + FUZZ_WIRE_PREFIX, len);
    memset(&h, 0xa5, sizeof(h));
    st = oc__wire_validate(buf, len, &chk, &h);
    if (st == OC_OK) {
        fuzz_wire_accepted++;
        check_accepted(buf, len, &chk, &h, data[3]);
    } else {
        /* only the documented reasons, and the output left alone */
        oc_wire_hdr_t untouched;
        memset(&untouched, 0xa5, sizeof(untouched));
        CHECK(st <= OC_ERR_WIRE_TRUNCATED && st >= OC_ERR_WIRE_ITEM_SIZE);
        CHECK(memcmp(&h, &untouched, sizeof(h)) == 0);
        CHECK(len >= OC_WIRE_HDR_LEN || st == OC_ERR_WIRE_TRUNCATED);
    }
    free(buf);
    return 0;
}
