/*
 * test_wire_runs.c — unit tests of RUNS bundles (src/wire, wire.h): what an
 * agent sends a peer agent.  The encoder (oc__wire_runs_pack) against a
 * plain reference (the messages of each (source, destination) in order),
 * with and without a prefix packed already, its size bound, and one test
 * per rejection of the validator with its named status.
 *
 * Every validation runs on an exact-size heap copy (AddressSanitizer).
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

#define HDR    OC_WIRE_HDR_LEN
#define BODY   16384u

static const oc_wire_check_t chk_any = CHK_ANY_INIT;

static uint64_t inmem[(HDR + BODY) / 8], outmem[(HDR + 2 * BODY) / 8];
#define IN  ((uint8_t *)inmem)
#define OUT ((uint8_t *)outmem)
static uint64_t scratchmem[1u << 16];

typedef struct {
    uint32_t dst, src, len, tag;
} msg_t;

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (uint32_t)rnd_state;
}

static void fill(uint8_t *p, uint32_t len, uint32_t tag)
{
    for (uint32_t i = 0; i < len; i++)
        p[i] = (uint8_t)(tag * 131u + i * 7u + 1u);
}

static oc_wire_hdr_t hdr(uint8_t flags, uint32_t count, uint32_t length)
{
    oc_wire_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.flags = flags;
    h.count = count;
    h.length = length;
    h.job = JOB;
    h.seq = 7;
    h.src = OC_WIRE_RANK_NONE;
    h.dst = OC_WIRE_RANK_NONE;
    return h;
}

static oc_status_t validate_copy(const uint8_t *buf, size_t len,
                                 oc_wire_hdr_t *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    oc_wire_hdr_t h;
    oc_status_t st;

    assert_non_null(copy);
    memcpy(copy, buf, len);
    st = oc__wire_validate(copy, len, &chk_any, &h);
    free(copy);
    if (st == OC_OK && out != NULL)
        *out = h;
    return st;
}

/* Mixed messages m[from..to) appended at @p p (a body); returns the end. */
static uint8_t *put_msgs(uint8_t *p, const msg_t *m, size_t from, size_t to)
{
    uint8_t pay[64];
    for (size_t k = from; k < to; k++) {
        fill(pay, m[k].len, m[k].tag);
        p = oc__wire_put_msg(p, m[k].dst, m[k].src, pay, m[k].len);
    }
    return p;
}

/* The packed bundle at OUT (@p len bytes) holds exactly messages m[0..n),
 * each (source, destination)'s in order. */
static void check_same(const uint8_t *b, size_t len, const msg_t *m, size_t n)
{
    oc_wire_hdr_t h;
    oc_wire_iter_t it;
    oc_wire_msg_t got;
    uint8_t *used = calloc(n, 1);
    size_t seen = 0;

    assert_non_null(used);
    memset(&h, 0, sizeof(h));
    memset(&got, 0, sizeof(got));
    assert_status(validate_copy(b, len, &h), OC_OK);
    assert_int_equal(h.count, n);
    assert_true(h.flags & OC_WIRE_F_RUNS);
    oc__wire_iter_init(&it, b, &h);
    while (oc__wire_iter_next(&it, &got)) {
        uint8_t want[64];
        size_t k = 0;
        /* the first message of this pair not yet seen: order per pair */
        while (k < n && (used[k] || m[k].src != got.src || m[k].dst != got.dst))
            k++;
        assert_true(k < n);
        assert_int_equal(got.len, m[k].len);
        fill(want, m[k].len, m[k].tag);
        assert_memory_equal(got.payload, want, got.len);
        used[k] = 1;
        seen++;
    }
    assert_int_equal(seen, n);
    assert_ptr_equal(it.p, b + len);
    free(used);
}

/* Pack @p n messages (first @p prefix of them packed alone first, as a
 * router's compaction does) into OUT as a whole bundle; returns its length
 * (0: the encoder kept it mixed). */
static size_t pack(const msg_t *m, size_t n, size_t prefix)
{
    uint8_t *body = IN + HDR, *p;
    size_t packed = 0, packed_mixed = 0, len, r;
    oc_wire_hdr_t h;

    if (prefix > 0) {
        p = put_msgs(body, m, 0, prefix);
        packed = oc__wire_runs_pack(body, 0, (size_t)(p - body), OUT + HDR,
                                    2 * BODY, scratchmem, sizeof(scratchmem));
        /* not smaller: it stays mixed, as the router leaves it */
        if (packed > 0)
            memcpy(body, OUT + HDR, packed);
        else
            packed_mixed = (size_t)(p - body);
    }
    p = put_msgs(body + packed + packed_mixed, m, prefix, n);
    len = (size_t)(p - body);
    /* the bound the router leaves room for (rpeer.c) */
    r = oc__wire_runs_pack(body, packed, len, OUT + HDR, 2 * BODY, scratchmem,
                           sizeof(scratchmem));
    if (r == 0) { /* kept mixed: never once a prefix is runs */
        assert_int_equal(packed, 0);
        return 0;
    }
    assert_true(r <= packed + 2 * (len - packed));
    h = hdr(0, (uint32_t)n, (uint32_t)(HDR + len));
    oc__wire_hdr_write(OUT, &h);
    oc__wire_hdr_set_runs(OUT, (uint32_t)(HDR + r));
    return HDR + r;
}

static void test_pack_histogram(void **state)
{
    /* 2 x 2 ranks: 8-byte items of 4 pairs, interleaved at random */
    static msg_t m[900];
    size_t len;
    (void)state;
    for (size_t k = 0; k < 900; k++)
        m[k] = (msg_t){2 + (rnd() & 1), rnd() & 1, 8, (uint32_t)k};
    len = pack(m, 900, 0);
    assert_true(len > 0);
    /* 4 runs: 8 bytes an item and 16 a run, not 16 an item */
    assert_int_equal(len, HDR + 4 * OC_WIRE_RUN_HDR_LEN + 900 * 8);
    check_same(OUT, len, m, 900);
}

/* A mixed bundle may name a source or destination in its header (its
 * validator does not look); the runs bundle made from it names none
 * (libFuzzer found a header dst that the runs validator then refused). */
static void test_set_runs_clears_header_ranks(void **state)
{
    static msg_t m[64];
    oc_wire_hdr_t h;
    size_t len;
    (void)state;
    for (size_t k = 0; k < 64; k++)
        m[k] = (msg_t){2, 1, 8, (uint32_t)k};
    len = pack(m, 64, 0);
    assert_true(len > 0);
    h = hdr(0, 64, (uint32_t)len);
    h.src = 1;
    h.dst = 0x00ff0000u;
    oc__wire_hdr_write(OUT, &h);
    oc__wire_hdr_set_runs(OUT, (uint32_t)len);
    check_same(OUT, len, m, 64);
    memset(&h, 0, sizeof(h));
    assert_status(validate_copy(OUT, len, &h), OC_OK);
    assert_int_equal(h.src, OC_WIRE_RANK_NONE);
    assert_int_equal(h.dst, OC_WIRE_RANK_NONE);
}

static void test_pack_mixed_lengths_and_prefix(void **state)
{
    static msg_t m[400];
    (void)state;
    for (int round = 0; round < 20; round++) {
        size_t n = 1 + rnd() % 400, prefix = rnd() % (n + 1), len;
        for (size_t k = 0; k < n; k++) {
            /* lengths 0..24, a few pairs, runs of one length now and then */
            uint32_t l = (rnd() & 3) ? 8 : rnd() % 25;
            m[k] = (msg_t){rnd() % 3, 5 + rnd() % 2, l, (uint32_t)k};
        }
        len = pack(m, n, prefix);
        if (len == 0) /* only a mixed body may stay so: compare it */
            continue;
        check_same(OUT, len, m, n);
    }
}

static void test_pack_keeps_mixed_when_not_smaller(void **state)
{
    /* eight items of one pair, then eight messages each its own pair:
     * runs (80 + 8 x 24 bytes) would be larger than mixed (16 x 16) */
    static msg_t m[16];
    (void)state;
    for (uint32_t k = 0; k < 16; k++)
        m[k] = k < 8 ? (msg_t){1, 2, 8, k} : (msg_t){k, 15 - k, 8, k};
    assert_int_equal(pack(m, 16, 0), 0);
    /* after a prefix the pack must go on, larger or not, within the bound */
    assert_int_equal(pack(m, 16, 8),
                     HDR + 9 * OC_WIRE_RUN_HDR_LEN + 16 * 8);
    check_same(OUT, HDR + 9 * OC_WIRE_RUN_HDR_LEN + 16 * 8, m, 16);
}

static void test_pack_refuses_small_scratch(void **state)
{
    uint8_t *body = IN + HDR;
    static const msg_t m[2] = {{1, 2, 8, 0}, {1, 2, 8, 1}};
    uint8_t *p = put_msgs(body, m, 0, 2);
    (void)state;
    assert_int_equal(oc__wire_runs_pack(body, 0, (size_t)(p - body), OUT, 4096,
                                        scratchmem, 16), 0);
    assert_int_equal(oc__wire_runs_pack(body, 0, (size_t)(p - body), OUT, 8,
                                        scratchmem, sizeof(scratchmem)), 0);
}

/* ------------------------------------------------------------ rejections */

/* A RUNS bundle in OUT with one run (dst 1, src 2, len, n items) + the
 * header count @p count; returns its length. */
static size_t one_run(uint32_t len, uint32_t n, uint32_t count)
{
    uint8_t *p = OUT + HDR;
    oc_wire_hdr_t h;
    oc__store_le64(p, oc__wire_msg_hdr(1, 2, len));
    oc__store_le32(p + 8, n);
    oc__store_le32(p + 12, 0);
    p += OC_WIRE_RUN_HDR_LEN;
    for (uint32_t k = 0; k < n && k < 64; k++) {
        memset(p, 0, oc__wire_pad8(len));
        fill(p, len, k);
        p += oc__wire_pad8(len);
    }
    h = hdr(OC_WIRE_F_RUNS, count, (uint32_t)(p - OUT));
    oc__wire_hdr_write(OUT, &h);
    return (size_t)(p - OUT);
}

static void test_reject_runs(void **state)
{
    size_t len;
    oc_wire_hdr_t h;
    (void)state;

    memset(&h, 0, sizeof(h));
    len = one_run(5, 3, 3);
    assert_status(validate_copy(OUT, len, &h), OC_OK);
    /* RUNS with FIXED or STREAM */
    OUT[5] = OC_WIRE_F_RUNS | OC_WIRE_F_FIXED;
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_FLAGS);
    OUT[5] = OC_WIRE_F_RUNS | OC_WIRE_F_STREAM;
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_FLAGS);
    OUT[5] = OC_WIRE_F_RUNS;
    /* an item size, a header source */
    OUT[6] = 8;
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_ITEM_SIZE);
    OUT[6] = 0;
    oc__store_le32(OUT + 32, 1);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_RANK);
    oc__store_le32(OUT + 32, OC_WIRE_RANK_NONE);
    /* n 0; n past the header's count; the header's count past the runs */
    oc__store_le32(OUT + HDR + 8, 0);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_COUNT);
    oc__store_le32(OUT + HDR + 8, 4);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_COUNT);
    oc__store_le32(OUT + HDR + 8, 3);
    oc__store_le32(OUT + 8, 4);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_COUNT);
    /* n * item past the end, also where it would overflow 32 bits */
    len = one_run(5, 3, 0xffffffffu);
    oc__store_le32(OUT + HDR + 8, 4);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_LENGTH);
    oc__store_le32(OUT + HDR + 8, 0x20000001u); /* x 8 = 2^32 + 8 */
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_LENGTH);
    /* the reserved word, the padding */
    len = one_run(5, 3, 3);
    OUT[HDR + 12] = 1;
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_LENGTH);
    OUT[HDR + 12] = 0;
    OUT[HDR + OC_WIRE_RUN_HDR_LEN + 8 + 6] = 1; /* second item's pad */
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_LENGTH);
    /* a run header cut short; bytes after the last run */
    len = one_run(8, 1, 2);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_COUNT);
    oc__store_le64(OUT + len, 0);
    oc__store_le32(OUT + 12, (uint32_t)(len + 8));
    assert_status(validate_copy(OUT, len + 8, NULL), OC_ERR_WIRE_LENGTH);
    /* ranks out of range, or not the receiver's */
    len = one_run(8, 2, 2);
    oc__store_le64(OUT + HDR, oc__wire_msg_hdr(NRANKS, 2, 8));
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_RANK);
    oc__store_le64(OUT + HDR, oc__wire_msg_hdr(1, OC_WIRE_RANK_NONE, 8));
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_RANK);
    {
        oc_wire_check_t one = chk_any;
        oc__store_le64(OUT + HDR, oc__wire_msg_hdr(1, 2, 8));
        one.dst = 3;
        assert_status(oc__wire_validate(OUT, len, &one, &h), OC_ERR_WIRE_RANK);
        one.dst = 1;
        assert_status(oc__wire_validate(OUT, len, &one, &h), OC_OK);
    }
    /* empty messages: a run of one each, never a count without bytes */
    len = one_run(0, 1, 1);
    assert_status(validate_copy(OUT, len, NULL), OC_OK);
    oc__store_le32(OUT + HDR + 8, 1000);
    oc__store_le32(OUT + 8, 1000);
    assert_status(validate_copy(OUT, len, NULL), OC_ERR_WIRE_COUNT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_histogram),
        cmocka_unit_test(test_set_runs_clears_header_ranks),
        cmocka_unit_test(test_pack_mixed_lengths_and_prefix),
        cmocka_unit_test(test_pack_keeps_mixed_when_not_smaller),
        cmocka_unit_test(test_pack_refuses_small_scratch),
        cmocka_unit_test(test_reject_runs),
    };
    return cmocka_run_group_tests_name("wire_runs", tests, NULL, NULL);
}
