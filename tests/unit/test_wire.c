/*
 * test_wire.c — unit tests of the bundle format (src/wire): the byte layout
 * written by the encoders, round trips through oc__wire_validate() and the
 * iterator in both modes, and one test per rejection with its named status.
 *
 * Every validation runs on an exact-size heap copy of the bundle, so that
 * AddressSanitizer (the build-asan run) reports any read past the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_common.h"

#include "wire/wire.h"

#define HDR OC_WIRE_HDR_LEN

/* Build area: big enough for a 65535-byte message and then some; 8-aligned. */
#define BUFSZ (1u << 18)
static uint64_t bufmem[BUFSZ / 8];
#define BUF ((uint8_t *)bufmem)
static uint8_t scratch[1u << 17];

typedef struct {
    uint32_t dst, src, len;
} spec_t;

static const oc_wire_check_t chk_any = CHK_ANY_INIT;

static uint8_t pat(uint32_t m, uint32_t i)
{
    return (uint8_t)(m * 131u + i * 7u + 1u);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static oc_wire_hdr_t base_hdr(uint8_t flags, uint16_t item_size, uint32_t count,
                              uint32_t length)
{
    oc_wire_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = OC_WIRE_MAGIC;
    h.version = OC_WIRE_VERSION;
    h.flags = flags;
    h.item_size = item_size;
    h.count = count;
    h.length = length;
    h.src_hop = 0xabcdef01u;
    h.job = JOB;
    h.seq = 0x0123456789abcdefull;
    h.src = OC_WIRE_RANK_NONE;
    h.dst = OC_WIRE_RANK_NONE;
    return h;
}

/* Mixed-mode bundle of @p n messages; message k carries pat(k, i). */
static size_t build_mixed(uint8_t *buf, const spec_t *m, size_t n)
{
    uint8_t *p = buf + HDR;
    oc_wire_hdr_t h;

    for (size_t k = 0; k < n; k++) {
        for (uint32_t i = 0; i < m[k].len; i++)
            scratch[i] = pat((uint32_t)k, i);
        p = oc__wire_put_msg(p, m[k].dst, m[k].src, scratch, m[k].len);
    }
    h = base_hdr(0, 0, (uint32_t)n, (uint32_t)(p - buf));
    oc__wire_hdr_write(buf, &h);
    return (size_t)(p - buf);
}

/* Fixed-mode bundle of @p n items of @p item bytes from src to dst. */
static size_t build_fixed(uint8_t *buf, uint32_t src, uint32_t dst,
                          uint16_t item, uint32_t n)
{
    uint8_t *p = buf + HDR;
    oc_wire_hdr_t h;

    for (uint32_t k = 0; k < n; k++) {
        for (uint32_t i = 0; i < item; i++)
            scratch[i] = pat(k, i);
        p = oc__wire_put_item(p, scratch, item);
    }
    h = base_hdr(OC_WIRE_F_FIXED, item, n, (uint32_t)(p - buf));
    h.src = src;
    h.dst = dst;
    oc__wire_hdr_write(buf, &h);
    return (size_t)(p - buf);
}

/* Validate an exact-size heap copy; hdr_out must be left alone on error. */
static oc_status_t validate_copy(const uint8_t *buf, size_t len,
                                 const oc_wire_check_t *chk)
{
    uint8_t *copy = malloc(len ? len : 1);
    oc_wire_hdr_t h, sentinel;
    oc_status_t st;

    assert_non_null(copy);
    memcpy(copy, buf, len);
    memset(&h, 0xa5, sizeof(h));
    memcpy(&sentinel, &h, sizeof(h));
    st = oc__wire_validate(copy, len, chk, &h);
    if (st != OC_OK)
        assert_memory_equal(&h, &sentinel, sizeof(h));
    free(copy);
    return st;
}

/* Validate a copy of a mixed bundle built from @p m and check that the
 * iterator returns exactly those messages. */
static void check_mixed(const uint8_t *buf, size_t len, const spec_t *m,
                        size_t n, const oc_wire_check_t *chk)
{
    uint8_t *copy = malloc(len);
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t msg = {0};
    size_t k = 0;

    assert_non_null(copy);
    memcpy(copy, buf, len);
    assert_status(oc__wire_validate(copy, len, chk, &h), OC_OK);
    assert_int_equal(h.magic, OC_WIRE_MAGIC);
    assert_int_equal(h.version, OC_WIRE_VERSION);
    assert_int_equal(h.flags, 0);
    assert_int_equal(h.item_size, 0);
    assert_int_equal(h.count, n);
    assert_int_equal(h.length, len);
    assert_int_equal(h.src_hop, 0xabcdef01u);
    assert_int_equal(h.job, JOB);
    assert_true(h.seq == 0x0123456789abcdefull);
    oc__wire_iter_init(&it, copy, &h);
    while (oc__wire_iter_next(&it, &msg)) {
        assert_true(k < n);
        assert_int_equal(msg.dst, m[k].dst);
        assert_int_equal(msg.src, m[k].src);
        assert_int_equal(msg.len, m[k].len);
        /* payloads start 8-aligned relative to the bundle */
        assert_int_equal((size_t)(msg.payload - copy) % 8, 0);
        for (uint32_t i = 0; i < msg.len; i++)
            if (msg.payload[i] != pat((uint32_t)k, i))
                fail_msg("message %zu byte %u differs", k, i);
        for (uint32_t i = msg.len; i < oc__wire_pad8(msg.len); i++)
            assert_int_equal(msg.payload[i], 0);
        k++;
    }
    assert_int_equal(k, n);
    assert_ptr_equal(it.p, copy + len);
    assert_false(oc__wire_iter_next(&it, &msg));
    free(copy);
}

static void check_fixed(const uint8_t *buf, size_t len, uint32_t src,
                        uint32_t dst, uint16_t item, uint32_t n,
                        const oc_wire_check_t *chk)
{
    uint8_t *copy = malloc(len);
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t msg = {0};
    uint32_t k = 0;

    assert_non_null(copy);
    memcpy(copy, buf, len);
    assert_status(oc__wire_validate(copy, len, chk, &h), OC_OK);
    assert_int_equal(h.flags, OC_WIRE_F_FIXED);
    assert_int_equal(h.item_size, item);
    assert_int_equal(h.count, n);
    assert_int_equal(h.length, len);
    assert_int_equal(h.src, src);
    assert_int_equal(h.dst, dst);
    oc__wire_iter_init(&it, copy, &h);
    while (oc__wire_iter_next(&it, &msg)) {
        assert_true(k < n);
        assert_int_equal(msg.src, src);
        assert_int_equal(msg.dst, dst);
        assert_int_equal(msg.len, item);
        assert_int_equal((size_t)(msg.payload - copy) % 8, 0);
        for (uint32_t i = 0; i < item; i++)
            if (msg.payload[i] != pat(k, i))
                fail_msg("item %u byte %u differs", k, i);
        k++;
    }
    assert_int_equal(k, n);
    assert_ptr_equal(it.p, copy + len);
    free(copy);
}

/* ---------------------------------------------------------------- layout */

static void test_hdr_layout(void **state)
{
    oc_wire_hdr_t h =
        base_hdr(OC_WIRE_F_FIXED, 0x1234, 0x01020304u, 0x05060708u);
    uint8_t b[HDR];

    h.src = 0x00a1a2a3u;
    h.dst = 0x00b1b2b3u;
    memset(b, 0xee, sizeof(b));
    oc__wire_hdr_write(b, &h);
    assert_memory_equal(b, "OCB1", 4);
    assert_int_equal(get32(b), OC_WIRE_MAGIC);
    assert_int_equal(b[4], OC_WIRE_VERSION);
    assert_int_equal(b[5], OC_WIRE_F_FIXED);
    assert_int_equal(b[6], 0x34);
    assert_int_equal(b[7], 0x12);
    assert_int_equal(get32(b + 8), 0x01020304u);
    assert_int_equal(get32(b + 12), 0x05060708u);
    assert_int_equal(get32(b + 16), 0xabcdef01u);
    assert_int_equal(get32(b + 20), JOB);
    assert_int_equal(get32(b + 24), 0x89abcdefu);
    assert_int_equal(get32(b + 28), 0x01234567u);
    assert_int_equal(get32(b + 32), 0x00a1a2a3u);
    assert_int_equal(get32(b + 36), 0x00b1b2b3u);
}

static void test_msg_hdr_layout(void **state)
{
    uint64_t mh = oc__wire_msg_hdr(0x123456u, 0xabcdefu, 0xfedcu);
    uint8_t b[16];
    uint8_t *end;
    const uint8_t one = 0x42;

    assert_true(mh == 0xfedcabcdef123456ull);
    /* ranks are masked to 24 bits, lengths to 16 */
    assert_true(oc__wire_msg_hdr(0xff000001u, 0xff000002u, 0x10003u) ==
                ((uint64_t)3 << 48 | (uint64_t)2 << 24 | 1));
    memset(b, 0xee, sizeof(b));
    end = oc__wire_put_msg(b, 0x123456u, 0xabcdefu, &one, 1);
    assert_ptr_equal(end, b + 16);
    assert_int_equal(b[0], 0x56); /* little-endian: dst in the low bits */
    assert_int_equal(b[2], 0x12);
    assert_int_equal(b[3], 0xef);
    assert_int_equal(b[5], 0xab);
    assert_int_equal(b[6], 0x01); /* len */
    assert_int_equal(b[7], 0x00);
    assert_int_equal(b[8], 0x42);
    for (int i = 9; i < 16; i++)
        assert_int_equal(b[i], 0);
    assert_true(oc__load_le64(b) == oc__wire_msg_hdr(0x123456u, 0xabcdefu, 1));
}

static void test_pad8(void **state)
{
    assert_int_equal(oc__wire_pad8(0), 0);
    assert_int_equal(oc__wire_pad8(1), 8);
    assert_int_equal(oc__wire_pad8(8), 8);
    assert_int_equal(oc__wire_pad8(9), 16);
    assert_int_equal(oc__wire_pad8(65535), 65536);
}

static void test_put_zeroes_padding(void **state)
{
    uint8_t b[64];
    const uint8_t src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

    for (size_t len = 0; len <= 16; len++) {
        uint8_t *end;

        memset(b, 0xff, sizeof(b));
        end = oc__wire_put_msg(b, 1, 2, src, len);
        assert_ptr_equal(end, b + 8 + oc__wire_pad8(len));
        assert_memory_equal(b + 8, src, len);
        for (size_t i = 8 + len; i < (size_t)(end - b); i++)
            assert_int_equal(b[i], 0);
        assert_int_equal(b[end - b], 0xff); /* nothing written beyond */

        memset(b, 0xff, sizeof(b));
        end = oc__wire_put_item(b, src, len);
        assert_ptr_equal(end, b + oc__wire_pad8(len));
        assert_memory_equal(b, src, len);
        for (size_t i = len; i < (size_t)(end - b); i++)
            assert_int_equal(b[i], 0);
        assert_int_equal(b[end - b], 0xff);
    }
}

/* ------------------------------------------------------------ round trips */

static void test_mixed_roundtrip(void **state)
{
    spec_t m[40];
    size_t n = 0, len;

    for (uint32_t l = 0; l <= 33; l++, n++)
        m[n] = (spec_t){l % NRANKS, (l * 5) % NRANKS, l};
    m[n++] = (spec_t){NRANKS - 1, NRANKS - 1, 255};
    m[n++] = (spec_t){0, 0, 1000};
    len = build_mixed(BUF, m, n);
    check_mixed(BUF, len, m, n, &chk_any);
    /* one single message */
    len = build_mixed(BUF, m + 7, 1);
    check_mixed(BUF, len, m + 7, 1, &chk_any);
}

static void test_mixed_zero_length(void **state)
{
    const spec_t m[5] = {{0, 1, 0}, {1, 2, 0}, {2, 3, 0}, {3, 4, 0}, {4, 5, 0}};
    size_t len = build_mixed(BUF, m, 5);

    assert_int_equal(len, HDR + 5 * OC_WIRE_MSG_HDR_LEN);
    check_mixed(BUF, len, m, 5, &chk_any);
    /* zero-length messages between non-empty ones */
    const spec_t m2[4] = {{0, 1, 3}, {1, 2, 0}, {2, 3, 9}, {3, 4, 0}};
    len = build_mixed(BUF, m2, 4);
    check_mixed(BUF, len, m2, 4, &chk_any);
}

static void test_mixed_max_length(void **state)
{
    const spec_t one[1] = {{3, 4, OC_WIRE_MAX_MSG}};
    const spec_t three[3] = {
        {1, 2, 5}, {3, 4, OC_WIRE_MAX_MSG}, {5, 6, OC_WIRE_MAX_MSG - 1}};
    size_t len = build_mixed(BUF, one, 1);

    assert_int_equal(len, HDR + 8 + 65536);
    check_mixed(BUF, len, one, 1, &chk_any);
    len = build_mixed(BUF, three, 3);
    check_mixed(BUF, len, three, 3, &chk_any);
}

static void test_mixed_many(void **state)
{
    static spec_t m[2000];
    uint64_t x = 88172645463325252ull;
    size_t len, used = HDR, n = 0;

    while (n < 2000) {
        uint32_t l;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        l = (uint32_t)(x % 97);
        if (used + 8 + oc__wire_pad8(l) > BUFSZ)
            break;
        m[n++] = (spec_t){(uint32_t)(x >> 20) % NRANKS,
                          (uint32_t)(x >> 40) % NRANKS, l};
        used += 8 + oc__wire_pad8(l);
    }
    len = build_mixed(BUF, m, n);
    assert_int_equal(len, used);
    check_mixed(BUF, len, m, n, &chk_any);
}

static void test_mixed_dst_check(void **state)
{
    const spec_t m[3] = {{7, 0, 3}, {7, 15, 0}, {7, 7, 12}};
    oc_wire_check_t chk = chk_any;
    size_t len = build_mixed(BUF, m, 3);

    chk.dst = 7;
    check_mixed(BUF, len, m, 3, &chk);
}

static void test_mixed_large_ranks(void **state)
{
    /* the largest rank the format can carry: 2^24 - 2 */
    const spec_t m[2] = {{OC_WIRE_MAX_RANKS - 1, 0, 4},
                         {0, OC_WIRE_MAX_RANKS - 1, 4}};
    oc_wire_check_t chk = {JOB, UINT32_MAX, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 0};
    size_t len = build_mixed(BUF, m, 2);

    check_mixed(BUF, len, m, 2, &chk);
}

static void test_fixed_roundtrip(void **state)
{
    static const uint16_t sizes[] = {1,    2,    3,    4,     7,    8,
                                     9,    12,   15,   16,    17,   100,
                                     1000, 4096, 4097, 65528, 65535};
    static const uint32_t counts[] = {1, 2, 3, 10};

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            uint32_t n = counts[c];
            size_t len;
            if (HDR + (size_t)n * oc__wire_pad8(sizes[s]) > BUFSZ)
                continue;
            len = build_fixed(BUF, 3, 9, sizes[s], n);
            assert_int_equal(len, HDR + n * oc__wire_pad8(sizes[s]));
            check_fixed(BUF, len, 3, 9, sizes[s], n, &chk_any);
        }
}

static void test_fixed_dst_check(void **state)
{
    oc_wire_check_t chk = chk_any;
    size_t len = build_fixed(BUF, 15, 0, 24, 4);

    chk.dst = 0;
    check_fixed(BUF, len, 15, 0, 24, 4, &chk);
}

/* An agent names the connection's rank: a message claiming another source
 * is rejected, in either mode. */
static void test_src_check(void **state)
{
    const spec_t m[2] = {{7, 3, 8}, {2, 3, 0}};
    const spec_t forged[2] = {{7, 3, 8}, {2, 4, 0}};
    oc_wire_check_t chk = chk_any;
    size_t len;

    chk.src = 3;
    len = build_mixed(BUF, m, 2);
    check_mixed(BUF, len, m, 2, &chk);
    len = build_mixed(BUF, forged, 2);
    assert_status(validate_copy(BUF, len, &chk), OC_ERR_WIRE_RANK);
    len = build_fixed(BUF, 3, 9, 8, 4);
    check_fixed(BUF, len, 3, 9, 8, 4, &chk);
    len = build_fixed(BUF, 4, 9, 8, 4);
    assert_status(validate_copy(BUF, len, &chk), OC_ERR_WIRE_RANK);
}

static void test_iter_skip_mixed(void **state)
{
    spec_t m[10];
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t msg = {0};
    size_t len;

    for (uint32_t k = 0; k < 10; k++)
        m[k] = (spec_t){k, 9 - k, k * 3};
    len = build_mixed(BUF, m, 10);
    assert_status(oc__wire_validate(BUF, len, &chk_any, &h), OC_OK);
    for (uint32_t skip = 0; skip <= 10; skip++) {
        oc__wire_iter_init(&it, BUF, &h);
        oc__wire_iter_skip(&it, skip);
        assert_int_equal(it.left, 10 - skip);
        for (uint32_t k = skip; k < 10; k++) {
            assert_true(oc__wire_iter_next(&it, &msg));
            assert_int_equal(msg.dst, k);
            assert_int_equal(msg.len, k * 3);
            if (msg.len)
                assert_int_equal(msg.payload[0], pat(k, 0));
        }
        assert_false(oc__wire_iter_next(&it, &msg));
        assert_ptr_equal(it.p, BUF + len);
    }
    /* skipping in two steps lands where one step does */
    oc__wire_iter_init(&it, BUF, &h);
    oc__wire_iter_skip(&it, 3);
    oc__wire_iter_skip(&it, 4);
    assert_true(oc__wire_iter_next(&it, &msg));
    assert_int_equal(msg.dst, 7);
}

static void test_iter_skip_fixed(void **state)
{
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t msg = {0};
    size_t len = build_fixed(BUF, 1, 2, 13, 8);

    assert_status(oc__wire_validate(BUF, len, &chk_any, &h), OC_OK);
    for (uint32_t skip = 0; skip <= 8; skip++) {
        oc__wire_iter_init(&it, BUF, &h);
        oc__wire_iter_skip(&it, skip);
        assert_int_equal(it.left, 8 - skip);
        for (uint32_t k = skip; k < 8; k++) {
            assert_true(oc__wire_iter_next(&it, &msg));
            assert_int_equal(msg.len, 13);
            assert_int_equal(msg.payload[0], pat(k, 0));
            assert_int_equal(msg.payload[12], pat(k, 12));
        }
        assert_false(oc__wire_iter_next(&it, &msg));
        assert_ptr_equal(it.p, BUF + len);
    }
}

/* ------------------------------------------------------------- rejections */

static const spec_t std_msgs[3] = {{1, 2, 5}, {3, 4, 16}, {5, 6, 1}};

static size_t std_mixed(void)
{
    return build_mixed(BUF, std_msgs, 3);
}

static size_t std_fixed(void)
{
    return build_fixed(BUF, 2, 3, 12, 4); /* stride 16 */
}

static void test_reject_null(void **state)
{
    oc_wire_hdr_t h;
    size_t len = std_mixed();

    assert_status(oc__wire_validate(NULL, len, &chk_any, &h),
                  OC_ERR_INVALID_PARAM);
    assert_status(oc__wire_validate(BUF, len, NULL, &h), OC_ERR_INVALID_PARAM);
    assert_status(oc__wire_validate(BUF, len, &chk_any, NULL),
                  OC_ERR_INVALID_PARAM);
    assert_status(oc__wire_validate(NULL, 0, NULL, NULL), OC_ERR_INVALID_PARAM);
}

static void test_reject_truncated(void **state)
{
    size_t len = std_mixed();

    assert_true(len > HDR);
    for (size_t l = 0; l < HDR; l++)
        assert_status(validate_copy(BUF, l, &chk_any), OC_ERR_WIRE_TRUNCATED);
    len = std_fixed();
    for (size_t l = 0; l < HDR; l++)
        assert_status(validate_copy(BUF, l, &chk_any), OC_ERR_WIRE_TRUNCATED);
}

static void test_reject_magic(void **state)
{
    for (int i = 0; i < 4; i++) {
        size_t len = std_mixed();
        BUF[i] ^= 0x20;
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_MAGIC);
    }
    /* byte-swapped magic (a big-endian writer) */
    size_t len = std_mixed();
    put32(BUF, __builtin_bswap32(OC_WIRE_MAGIC));
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_MAGIC);
    /* 40 zero bytes */
    memset(BUF, 0, HDR);
    assert_status(validate_copy(BUF, HDR, &chk_any), OC_ERR_WIRE_MAGIC);
}

static void test_reject_version(void **state)
{
    static const uint8_t bad[] = {0, 2, 3, 0x81, 0xff};
    for (size_t i = 0; i < sizeof(bad); i++) {
        size_t len = std_mixed();
        BUF[4] = bad[i];
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_VERSION);
        len = std_fixed();
        BUF[4] = bad[i];
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_VERSION);
    }
}

static void test_reject_flags(void **state)
{
    for (int bit = 1; bit < 8; bit++) {
        size_t len = std_mixed();
        BUF[5] |= (uint8_t)(1u << bit);
        /* STREAM (bit 1) is known; std_mixed is no valid stream (see
         * test_stream_*), so it fails later, on the ranks; RUNS (bit 2)
         * is known too, and a message header followed by its payload is
         * no run (test_wire_runs.c) */
        if (bit == 2)
            assert_true(validate_copy(BUF, len, &chk_any) < 0);
        else
            assert_status(validate_copy(BUF, len, &chk_any),
                          bit == 1 ? OC_ERR_WIRE_RANK : OC_ERR_WIRE_FLAGS);
        len = std_fixed();
        BUF[5] |= (uint8_t)(1u << bit);
        /* FIXED | STREAM is a column stream, which has no header dst,
         * FIXED | SRCCOL (bit 3) a source column, which has no header
         * src; RUNS goes with no other flag */
        assert_status(validate_copy(BUF, len, &chk_any),
                      bit == 1 || bit == 3 ? OC_ERR_WIRE_RANK
                                           : OC_ERR_WIRE_FLAGS);
    }
    size_t len = std_mixed();
    BUF[5] = 0xff;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_FLAGS);
}

/* A stream bundle: one rank's messages for any destinations. */
static size_t build_stream(uint8_t *buf, uint32_t src, uint32_t n)
{
    uint8_t *p = buf + HDR;
    oc_wire_hdr_t h;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t v = k;
        p = oc__wire_put_msg(p, k % NRANKS, src, &v, 8);
    }
    h = base_hdr(OC_WIRE_F_STREAM, 0, n, (uint32_t)(p - buf));
    h.src = src;
    oc__wire_hdr_write(buf, &h);
    return (size_t)(p - buf);
}

static void test_stream_accepted_by_agent(void **state)
{
    const oc_wire_check_t from5 = {JOB, NRANKS, OC_WIRE_RANK_NONE, 5, 0};
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t m;
    size_t len = build_stream(BUF, 5, 40);
    uint32_t k = 0;

    assert_status(oc__wire_validate(BUF, len, &from5, &h), OC_OK);
    assert_int_equal(h.flags, OC_WIRE_F_STREAM);
    assert_int_equal(h.src, 5);
    assert_int_equal(h.dst, OC_WIRE_RANK_NONE);
    oc__wire_iter_init(&it, BUF, &h);
    while (oc__wire_iter_next(&it, &m)) {
        assert_int_equal(m.src, 5);
        assert_int_equal(m.dst, k % NRANKS);
        k++;
    }
    assert_int_equal(k, 40);
    assert_status(validate_copy(BUF, len, &chk_any), OC_OK);
}

static void test_stream_rejected(void **state)
{
    const oc_wire_check_t from4 = {JOB, NRANKS, OC_WIRE_RANK_NONE, 4, 0};
    const oc_wire_check_t at_rank = {JOB, NRANKS, 1, OC_WIRE_RANK_NONE, 0};
    size_t len = build_stream(BUF, 5, 8);

    /* claimed by another sender than the connection's */
    assert_status(validate_copy(BUF, len, &from4), OC_ERR_WIRE_RANK);
    /* a rank never receives a stream */
    assert_status(validate_copy(BUF, len, &at_rank), OC_ERR_WIRE_FLAGS);
    /* FIXED with STREAM: a column stream, whose item size 0 is refused */
    BUF[5] = OC_WIRE_F_STREAM | OC_WIRE_F_FIXED;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_ITEM_SIZE);
    /* a header destination */
    len = build_stream(BUF, 5, 8);
    put32(BUF + 36, 3);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
    /* header source out of range */
    len = build_stream(BUF, 5, 8);
    put32(BUF + 32, NRANKS);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
    /* one message from another rank than the header's */
    len = build_stream(BUF, 5, 8);
    oc__store_le64(BUF + HDR + 3 * 16, oc__wire_msg_hdr(1, 6, 8));
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
}

/* The two column layouts: a rank's column stream (a column of
 * destinations, the header names the source) and an agent's source column
 * toward one rank (a column of sources, the header names the
 * destination).  Column entry k is rank (k * mul) % NRANKS. */
typedef struct {
    const char *name;
    uint8_t flags;
    uint32_t mul;
    uint32_t peer; /* the header's rank in the tests */
    int src_col;   /* the column holds sources (SRCCOL), not destinations */
} col_layout_t;

static const col_layout_t col_layouts[] = {
    {"column stream", OC_WIRE_F_STREAM | OC_WIRE_F_FIXED, 5, 5, 0},
    {"source column", OC_WIRE_F_SRCCOL | OC_WIRE_F_FIXED, 3, 2, 1},
};
#define N_LAYOUTS (sizeof(col_layouts) / sizeof(col_layouts[0]))

/* A bundle of layout @p L: header rank @p peer, @p n column entries, then
 * n items of @p item bytes, item k filled with k + 1. */
static size_t build_col(uint8_t *buf, const col_layout_t *L, uint32_t peer,
                        uint32_t n, uint16_t item)
{
    uint8_t *p = buf + HDR, *items;
    oc_wire_hdr_t h;
    for (uint32_t k = 0; k < n; k++)
        oc__store_le32(p + 4 * k, (k * L->mul) % NRANKS);
    if (n & 1)
        oc__store_le32(p + 4 * n, 0);
    items = p + oc__wire_col_dst_bytes(n);
    for (uint32_t k = 0; k < n; k++) {
        uint8_t v[64];
        memset(v, (int)(k + 1), sizeof(v));
        items = oc__wire_put_item(items, v, item);
    }
    h = base_hdr(L->flags, item, n, (uint32_t)(items - buf));
    if (L->src_col)
        h.dst = peer;
    else
        h.src = peer;
    oc__wire_hdr_write(buf, &h);
    return (size_t)(items - buf);
}

/* The receiver a bundle of layout @p L from/to its peer rank meets: the
 * agent of a connection from that rank, or that rank itself. */
static oc_wire_check_t col_receiver(const col_layout_t *L)
{
    oc_wire_check_t rx = chk_any;
    if (L->src_col)
        rx.dst = L->peer;
    else
        rx.src = L->peer;
    return rx;
}

static void test_columns_accepted(void **state)
{
    static const uint16_t items[] = {8, 1, 12, 16, 60};
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        const col_layout_t *L = &col_layouts[l];
        const oc_wire_check_t rx = col_receiver(L);
        for (size_t t = 0; t < sizeof(items) / sizeof(items[0]); t++) {
            for (uint32_t n = 1; n <= 9; n += 4) {
                oc_wire_hdr_t h;
                oc_wire_iter_t it, it2;
                oc_wire_msg_t m = {0, 0, 0, NULL};
                size_t len = build_col(BUF, L, L->peer, n, items[t]);
                uint32_t k = 0;
                assert_int_equal(len, HDR + oc__wire_pad8(4 * n) +
                                          n * oc__wire_pad8(items[t]));
                assert_status_in(oc__wire_validate(BUF, len, &rx, &h), OC_OK,
                                 L->name, t);
                assert_status_in(validate_copy(BUF, len, &chk_any), OC_OK,
                                 L->name, t);
                assert_int_equal(h.flags, L->flags);
                oc__wire_iter_init(&it, BUF, &h);
                while (oc__wire_iter_next(&it, &m)) {
                    assert_int_equal(L->src_col ? m.dst : m.src, L->peer);
                    assert_int_equal(L->src_col ? m.src : m.dst,
                                     (k * L->mul) % NRANKS);
                    assert_int_equal(m.len, items[t]);
                    assert_int_equal(m.payload[0], (uint8_t)(k + 1));
                    k++;
                }
                assert_int_equal(k, n);
                assert_ptr_equal(it.p, BUF + len);
                /* skip lands on the same message */
                oc__wire_iter_init(&it2, BUF, &h);
                oc__wire_iter_skip(&it2, n - 1);
                assert_true(oc__wire_iter_next(&it2, &m));
                assert_int_equal(L->src_col ? m.src : m.dst,
                                 ((n - 1) * L->mul) % NRANKS);
                assert_int_equal(m.payload[0], (uint8_t)n);
            }
        }
    }
}

static void test_column_capacity(void **state)
{
    /* what oc__wire_col_cap says fits, fits */
    for (size_t stride = 8; stride <= 64; stride += 8) {
        uint32_t cap = oc__wire_col_cap(8192, stride);
        assert_true(cap > 0);
        assert_true(HDR + oc__wire_col_dst_bytes(cap) + cap * stride <= 8192);
        assert_true(HDR + oc__wire_col_dst_bytes(cap + 1) +
                        (cap + 1) * stride > 8192);
    }
    assert_int_equal(oc__wire_col_cap(HDR + 8, 8), 0);
}

/* the layouts a case is for: bit l is col_layouts[l] */
enum { COL = 1, SRC = 2, BOTH = COL | SRC };
/* receivers: any; one that leaves destinations to its caller
 * (OC_WIRE_CHECK_DST_AT_USE: a stream in shared memory, checked as
 * routed), also from rank 4; a connection from rank 4 or 3; rank 1 */
enum { RX_ANY, RX_LATER, RX_LATER_FROM4, RX_FROM4, RX_FROM3, RX_AT1 };

/* One rejection (or acceptance) of a column bundle: build it with @c n
 * entries of @c item bytes, write @c val (@c width bytes, 0: none) at
 * @c off, hand over @c cut bytes fewer (@c cut_hdr: the header's length
 * says so too) to receiver @c rx. */
typedef struct {
    uint8_t layouts;
    uint32_t n;
    uint16_t item;
    uint16_t off;
    uint8_t width;
    uint32_t val;
    uint8_t cut, cut_hdr, rx;
    oc_status_t want;
} col_case_t;

static const col_case_t col_cases[] = {
    {BOTH, 7, 8, 0, 0, 0, 0, 0, RX_ANY, OC_OK},
    /* another sender than the connection's; a rank never receives a
     * column stream; a source column for another rank than the receiver,
     * or with a source another than the connection's one */
    {COL, 7, 8, 0, 0, 0, 0, 0, RX_FROM4, OC_ERR_WIRE_RANK},
    {COL, 7, 8, 0, 0, 0, 0, 0, RX_AT1, OC_ERR_WIRE_FLAGS},
    {SRC, 7, 8, 0, 0, 0, 0, 0, RX_AT1, OC_ERR_WIRE_RANK},
    {SRC, 7, 8, 0, 0, 0, 0, 0, RX_FROM3, OC_ERR_WIRE_RANK},
    /* a column entry out of range, first or last; a destination may be
     * left to the caller (the rest is still checked), a source never */
    {BOTH, 7, 8, HDR, 4, NRANKS, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    {SRC, 7, 8, HDR, 4, NRANKS, 0, 0, RX_LATER, OC_ERR_WIRE_RANK},
    {BOTH, 7, 8, HDR + 4 * 6, 4, 0xffffffffu, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    {COL, 7, 8, HDR + 4 * 6, 4, 0xffffffffu, 0, 0, RX_LATER, OC_OK},
    {COL, 7, 8, HDR + 4 * 6, 4, 0xffffffffu, 0, 0, RX_LATER_FROM4,
     OC_ERR_WIRE_RANK},
    {COL, 7, 8, HDR + 4 * 6, 4, 0xffffffffu, 8, 0, RX_LATER,
     OC_ERR_WIRE_LENGTH},
    /* the column's padding (odd count); an item's padding */
    {BOTH, 7, 8, HDR + 4 * 7, 4, 1, 0, 0, RX_ANY, OC_ERR_WIRE_LENGTH},
    {BOTH, 4, 5, HDR + 16 + 8 * 2 + 6, 1, 1, 0, 0, RX_ANY, OC_ERR_WIRE_LENGTH},
    /* count against length: one more, one fewer; a byte short */
    {BOTH, 4, 8, 8, 4, 5, 0, 0, RX_ANY, OC_ERR_WIRE_LENGTH},
    {BOTH, 4, 8, 8, 4, 3, 0, 0, RX_ANY, OC_ERR_WIRE_LENGTH},
    {SRC, 4, 8, 0, 0, 0, 8, 1, RX_ANY, OC_ERR_WIRE_LENGTH},
    /* item size 0 */
    {SRC, 4, 8, 6, 1, 0, 0, 0, RX_ANY, OC_ERR_WIRE_ITEM_SIZE},
    /* the header rank of the other side (a column stream's destination, a
     * source column's source); the header's own rank out of range (or
     * none, for the source column's destination) */
    {COL, 4, 8, 36, 4, 2, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    {SRC, 4, 8, 32, 4, 1, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    {COL, 4, 8, 32, 4, NRANKS, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    {SRC, 4, 8, 36, 4, OC_WIRE_RANK_NONE, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    {SRC, 4, 8, 36, 4, NRANKS, 0, 0, RX_ANY, OC_ERR_WIRE_RANK},
    /* SRCCOL with anything but FIXED alone */
    {SRC, 4, 8, 5, 1, OC_WIRE_F_SRCCOL, 0, 0, RX_ANY, OC_ERR_WIRE_FLAGS},
    {SRC, 4, 8, 5, 1, OC_WIRE_F_SRCCOL | OC_WIRE_F_STREAM, 0, 0, RX_ANY,
     OC_ERR_WIRE_FLAGS},
    {SRC, 4, 8, 5, 1, OC_WIRE_F_SRCCOL | OC_WIRE_F_ALL, 0, 0, RX_ANY,
     OC_ERR_WIRE_FLAGS},
    {SRC, 4, 8, 5, 1, OC_WIRE_F_SRCCOL | OC_WIRE_F_RUNS, 0, 0, RX_ANY,
     OC_ERR_WIRE_FLAGS},
    {SRC, 4, 8, 5, 1, OC_WIRE_F_SRCCOL | OC_WIRE_F_FIXED | OC_WIRE_F_RUNS, 0,
     0, RX_ANY, OC_ERR_WIRE_FLAGS},
};

static oc_wire_check_t col_case_receiver(uint8_t rx)
{
    oc_wire_check_t c = chk_any;
    if (rx == RX_LATER || rx == RX_LATER_FROM4)
        c.flags = OC_WIRE_CHECK_DST_AT_USE;
    if (rx == RX_LATER_FROM4 || rx == RX_FROM4)
        c.src = 4;
    if (rx == RX_FROM3)
        c.src = 3;
    if (rx == RX_AT1)
        c.dst = 1;
    return c;
}

static void test_columns_rejected(void **state)
{
    size_t ran = 0;
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        const col_layout_t *L = &col_layouts[l];
        for (size_t i = 0; i < sizeof(col_cases) / sizeof(col_cases[0]); i++) {
            const col_case_t *c = &col_cases[i];
            const oc_wire_check_t rx = col_case_receiver(c->rx);
            size_t len;
            if (!(c->layouts & (1u << l)))
                continue;
            len = build_col(BUF, L, L->peer, c->n, c->item);
            if (c->width == 4)
                put32(BUF + c->off, c->val);
            else if (c->width == 1)
                BUF[c->off] = (uint8_t)c->val;
            if (c->cut_hdr)
                put32(BUF + 12, (uint32_t)(len - c->cut));
            assert_status_in(validate_copy(BUF, len - c->cut, &rx), c->want,
                             L->name, i);
            ran++;
        }
    }
    assert_int_equal(ran, 34);
    /* a connection that names one source: a source column whose every
     * source is it passes */
    {
        const oc_wire_check_t from3 = col_case_receiver(RX_FROM3);
        size_t len = build_col(BUF, &col_layouts[1], 2, 7, 8);
        for (uint32_t k = 0; k < 7; k++)
            put32(BUF + HDR + 4 * k, 3);
        assert_status(validate_copy(BUF, len, &from3), OC_OK);
    }
}

static void test_reject_job(void **state)
{
    oc_wire_check_t chk = chk_any;
    size_t len = std_mixed();

    put32(BUF + 20, JOB + 1);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_JOB);
    len = std_mixed();
    chk.job = 0;
    assert_status(validate_copy(BUF, len, &chk), OC_ERR_WIRE_JOB);
    len = std_fixed();
    assert_status(validate_copy(BUF, len, &chk), OC_ERR_WIRE_JOB);
}

static void test_reject_length_mismatch(void **state)
{
    size_t len = std_mixed();

    /* received fewer bytes than the header says */
    assert_status(validate_copy(BUF, len - 8, &chk_any), OC_ERR_WIRE_LENGTH);
    assert_status(validate_copy(BUF, HDR, &chk_any), OC_ERR_WIRE_LENGTH);
    /* received more bytes than the header says (trailing zeros) */
    memset(BUF + len, 0, 64);
    assert_status(validate_copy(BUF, len + 8, &chk_any), OC_ERR_WIRE_LENGTH);
    assert_status(validate_copy(BUF, len + 1, &chk_any), OC_ERR_WIRE_LENGTH);
    /* header length field off by one either way, or absurd */
    put32(BUF + 12, (uint32_t)len + 8);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    put32(BUF + 12, (uint32_t)len - 8);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    put32(BUF + 12, 0);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    put32(BUF + 12, UINT32_MAX);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    /* same in fixed mode */
    len = std_fixed();
    assert_status(validate_copy(BUF, len - 16, &chk_any), OC_ERR_WIRE_LENGTH);
    memset(BUF + len, 0, 64);
    assert_status(validate_copy(BUF, len + 16, &chk_any), OC_ERR_WIRE_LENGTH);
}

static void test_reject_length_not_multiple_of_8(void **state)
{
    for (size_t extra = 1; extra < 8; extra++) {
        /* header length matches what was received, but is not 8-aligned */
        size_t len = std_mixed();
        memset(BUF + len, 0, extra);
        put32(BUF + 12, (uint32_t)(len + extra));
        assert_status(validate_copy(BUF, len + extra, &chk_any),
                      OC_ERR_WIRE_LENGTH);
        len = std_fixed();
        memset(BUF + len, 0, extra);
        put32(BUF + 12, (uint32_t)(len + extra));
        assert_status(validate_copy(BUF, len + extra, &chk_any),
                      OC_ERR_WIRE_LENGTH);
        /* a header alone plus a few bytes */
        len = std_mixed();
        put32(BUF + 12, (uint32_t)(HDR + extra));
        assert_status(validate_copy(BUF, HDR + extra, &chk_any),
                      OC_ERR_WIRE_LENGTH);
    }
}

static void test_reject_msg_past_end(void **state)
{
    /* std_msgs: msg0 at 40 (len 5), msg1 at 56 (len 16), msg2 at 80 (len 1) */
    size_t len = std_mixed();

    assert_int_equal(len, 96);
    /* last message claims 9 bytes: padded 16 runs 8 past the end */
    oc__store_le64(BUF + 80, oc__wire_msg_hdr(5, 6, 9));
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    /* ... or the maximum */
    oc__store_le64(BUF + 80, oc__wire_msg_hdr(5, 6, OC_WIRE_MAX_MSG));
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    /* first message claims everything and more */
    len = std_mixed();
    oc__store_le64(BUF + 40, oc__wire_msg_hdr(1, 2, 49));
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    /* a middle message that swallows exactly the rest: count then wrong */
    len = std_mixed();
    oc__store_le64(BUF + 56, oc__wire_msg_hdr(3, 4, 32));
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_COUNT);
}

static void test_reject_msg_hdr_cut(void **state)
{
    /* A bundle ending inside a message header.  Because bundle lengths
     * must be multiples of 8 and so is every message, this is caught by
     * the length checks whatever the header length field says. */
    size_t len = std_mixed();
    oc__store_le64(BUF + len, oc__wire_msg_hdr(1, 1, 0));
    put32(BUF + 8, 4); /* count includes the cut message */
    for (size_t cut = 1; cut < 8; cut++) {
        put32(BUF + 12, (uint32_t)(len + cut));
        assert_status(validate_copy(BUF, len + cut, &chk_any),
                      OC_ERR_WIRE_LENGTH);
    }
    /* only a header-sized body of 4 bytes after the bundle header */
    len = std_mixed();
    put32(BUF + 8, 1);
    put32(BUF + 12, HDR + 4);
    assert_status(validate_copy(BUF, HDR + 4, &chk_any), OC_ERR_WIRE_LENGTH);
}

static void test_reject_padding_mixed(void **state)
{
    for (uint32_t l = 1; l < 8; l++) {
        for (uint32_t pos = l; pos < 8; pos++) {
            /* message 1 of 3 has length l; corrupt one padding byte */
            spec_t m[3] = {{1, 2, 8}, {3, 4, l}, {5, 6, 0}};
            size_t len = build_mixed(BUF, m, 3);
            check_mixed(BUF, len, m, 3, &chk_any);
            BUF[HDR + 16 + 8 + pos] = 0x01;
            assert_status(validate_copy(BUF, len, &chk_any),
                          OC_ERR_WIRE_LENGTH);
            BUF[HDR + 16 + 8 + pos] = 0x80;
            assert_status(validate_copy(BUF, len, &chk_any),
                          OC_ERR_WIRE_LENGTH);
        }
    }
}

static void test_reject_padding_fixed(void **state)
{
    for (uint16_t item = 1; item < 8; item++) {
        for (uint32_t k = 0; k < 3; k++) {
            for (uint32_t pos = item; pos < 8; pos++) {
                size_t len = build_fixed(BUF, 1, 2, item, 3);
                BUF[HDR + 8 * k + pos] = 0xff;
                assert_status(validate_copy(BUF, len, &chk_any),
                              OC_ERR_WIRE_LENGTH);
            }
        }
    }
    /* stride 16, padding in the second half of the last item */
    size_t len = build_fixed(BUF, 1, 2, 9, 2);
    BUF[len - 1] = 1;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
}

static void test_reject_count(void **state)
{
    static const uint32_t bad[] = {2, 4, 5, 100, UINT32_MAX};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t len = std_mixed(); /* 3 messages */
        put32(BUF + 8, bad[i]);
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_COUNT);
    }
    static const uint32_t badf[] = {1, 3, 5, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof(badf) / sizeof(badf[0]); i++) {
        size_t len = std_fixed(); /* 4 items */
        put32(BUF + 8, badf[i]);
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_COUNT);
    }
}

static void test_reject_empty(void **state)
{
    /* count 0 and no body: a header alone */
    size_t len = std_mixed();
    put32(BUF + 8, 0);
    put32(BUF + 12, HDR);
    assert_status(validate_copy(BUF, HDR, &chk_any), OC_ERR_WIRE_EMPTY);
    /* count 0 with a body */
    len = std_mixed();
    put32(BUF + 8, 0);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_EMPTY);
    /* fixed, with and without a body */
    len = std_fixed();
    put32(BUF + 8, 0);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_EMPTY);
    put32(BUF + 12, HDR);
    assert_status(validate_copy(BUF, HDR, &chk_any), OC_ERR_WIRE_EMPTY);
}

static void test_reject_item_size(void **state)
{
    /* fixed mode, item size 0 (with and without a body) */
    size_t len = std_fixed();
    BUF[6] = BUF[7] = 0;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_ITEM_SIZE);
    put32(BUF + 12, HDR);
    assert_status(validate_copy(BUF, HDR, &chk_any), OC_ERR_WIRE_ITEM_SIZE);
    /* mixed mode must not declare an item size */
    len = std_mixed();
    BUF[6] = 8;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_ITEM_SIZE);
}

static void test_reject_fixed_stride(void **state)
{
    /* item 12 -> stride 16; a body of 24 bytes is 1.5 items */
    size_t len = std_fixed(); /* 4 items, body 64 */
    put32(BUF + 12, HDR + 24);
    assert_status(validate_copy(BUF, HDR + 24, &chk_any), OC_ERR_WIRE_LENGTH);
    len = std_fixed();
    memset(BUF + len, 0, 8);
    put32(BUF + 12, (uint32_t)len + 8);
    assert_status(validate_copy(BUF, len + 8, &chk_any), OC_ERR_WIRE_LENGTH);
    /* item 65535 -> stride 65536 in a small bundle */
    len = std_fixed();
    BUF[6] = BUF[7] = 0xff;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_LENGTH);
    (void)len;
}

static void test_reject_rank_mixed(void **state)
{
    oc_wire_check_t big = {JOB, UINT32_MAX, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 0};
    oc_wire_check_t none = {JOB, 0, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 0};

    for (int which = 0; which < 3; which++) {
        spec_t m[3] = {{1, 2, 5}, {3, 4, 16}, {5, 6, 1}};
        size_t len;

        /* destination out of range */
        m[which].dst = NRANKS;
        len = build_mixed(BUF, m, 3);
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
        m[which].dst = 1;
        /* source out of range */
        m[which].src = NRANKS;
        len = build_mixed(BUF, m, 3);
        assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
        /* the "none" rank is never a valid message rank */
        m[which].src = OC_WIRE_RANK_NONE;
        len = build_mixed(BUF, m, 3);
        assert_status(validate_copy(BUF, len, &big), OC_ERR_WIRE_RANK);
        m[which].src = 0;
        m[which].dst = OC_WIRE_RANK_NONE;
        len = build_mixed(BUF, m, 3);
        assert_status(validate_copy(BUF, len, &big), OC_ERR_WIRE_RANK);
    }
    /* a job of 0 ranks accepts nothing */
    size_t len = std_mixed();
    assert_status(validate_copy(BUF, len, &none), OC_ERR_WIRE_RANK);
}

static void test_reject_rank_fixed(void **state)
{
    oc_wire_check_t big = {JOB, UINT32_MAX, OC_WIRE_RANK_NONE, OC_WIRE_RANK_NONE, 0};
    size_t len;

    len = build_fixed(BUF, NRANKS, 3, 12, 2);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
    len = build_fixed(BUF, 3, NRANKS, 12, 2);
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_RANK);
    len = build_fixed(BUF, 0xffffffffu, 3, 12, 2);
    assert_status(validate_copy(BUF, len, &big), OC_ERR_WIRE_RANK);
    len = build_fixed(BUF, OC_WIRE_RANK_NONE, 3, 12, 2);
    assert_status(validate_copy(BUF, len, &big), OC_ERR_WIRE_RANK);
    len = build_fixed(BUF, 3, OC_WIRE_RANK_NONE, 12, 2);
    assert_status(validate_copy(BUF, len, &big), OC_ERR_WIRE_RANK);
    len = build_fixed(BUF, 3, 0x1000000u, 12, 2);
    assert_status(validate_copy(BUF, len, &big), OC_ERR_WIRE_RANK);
}

static void test_reject_wrong_dst(void **state)
{
    oc_wire_check_t chk = chk_any;
    spec_t m[3] = {{2, 0, 4}, {2, 1, 4}, {2, 2, 4}};
    size_t len;

    chk.dst = 2;
    len = build_mixed(BUF, m, 3);
    assert_status(validate_copy(BUF, len, &chk), OC_OK);
    for (int which = 0; which < 3; which++) {
        m[which].dst = 3;
        len = build_mixed(BUF, m, 3);
        assert_status(validate_copy(BUF, len, &chk), OC_ERR_WIRE_RANK);
        /* fine for a receiver that accepts any destination */
        assert_status(validate_copy(BUF, len, &chk_any), OC_OK);
        m[which].dst = 2;
    }
    len = build_fixed(BUF, 0, 3, 8, 2);
    assert_status(validate_copy(BUF, len, &chk), OC_ERR_WIRE_RANK);
    assert_status(validate_copy(BUF, len, &chk_any), OC_OK);
    len = build_fixed(BUF, 0, 2, 8, 2);
    assert_status(validate_copy(BUF, len, &chk), OC_OK);
}

static void test_accept_after_reject(void **state)
{
    /* a rejection leaves nothing behind: validation is a pure function */
    size_t len = std_mixed();
    BUF[0] ^= 1;
    assert_status(validate_copy(BUF, len, &chk_any), OC_ERR_WIRE_MAGIC);
    BUF[0] ^= 1;
    check_mixed(BUF, len, std_msgs, 3, &chk_any);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hdr_layout),
        cmocka_unit_test(test_msg_hdr_layout),
        cmocka_unit_test(test_pad8),
        cmocka_unit_test(test_put_zeroes_padding),
        cmocka_unit_test(test_mixed_roundtrip),
        cmocka_unit_test(test_mixed_zero_length),
        cmocka_unit_test(test_mixed_max_length),
        cmocka_unit_test(test_mixed_many),
        cmocka_unit_test(test_mixed_dst_check),
        cmocka_unit_test(test_mixed_large_ranks),
        cmocka_unit_test(test_fixed_roundtrip),
        cmocka_unit_test(test_fixed_dst_check),
        cmocka_unit_test(test_src_check),
        cmocka_unit_test(test_iter_skip_mixed),
        cmocka_unit_test(test_iter_skip_fixed),
        cmocka_unit_test(test_reject_null),
        cmocka_unit_test(test_reject_truncated),
        cmocka_unit_test(test_reject_magic),
        cmocka_unit_test(test_reject_version),
        cmocka_unit_test(test_reject_flags),
        cmocka_unit_test(test_stream_accepted_by_agent),
        cmocka_unit_test(test_stream_rejected),
        cmocka_unit_test(test_reject_job),
        cmocka_unit_test(test_reject_length_mismatch),
        cmocka_unit_test(test_reject_length_not_multiple_of_8),
        cmocka_unit_test(test_reject_msg_past_end),
        cmocka_unit_test(test_reject_msg_hdr_cut),
        cmocka_unit_test(test_reject_padding_mixed),
        cmocka_unit_test(test_reject_padding_fixed),
        cmocka_unit_test(test_reject_count),
        cmocka_unit_test(test_reject_empty),
        cmocka_unit_test(test_reject_item_size),
        cmocka_unit_test(test_reject_fixed_stride),
        cmocka_unit_test(test_reject_rank_mixed),
        cmocka_unit_test(test_reject_rank_fixed),
        cmocka_unit_test(test_reject_wrong_dst),
        cmocka_unit_test(test_accept_after_reject),
        cmocka_unit_test(test_columns_accepted),
        cmocka_unit_test(test_column_capacity),
        cmocka_unit_test(test_columns_rejected),
    };
    return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
