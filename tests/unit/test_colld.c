/*
 * test_colld.c — the collective descriptors of the agent placement
 * (src/wire/colld.c): round trips of every kind, and a named reject for
 * each way a rank's descriptor can be wrong (its memory block included);
 * what a rejected one says it is; the agents' failure message.
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/colld.h"

static size_t enc(const oc_colld_t *d, const uint64_t *v, uint8_t *buf)
{
    oc__colld_encode(d, v, buf);
    return oc__colld_size(d);
}

static void test_round_trip(void **state)
{
    uint8_t buf[512];
    uint64_t v[12] = {1, 2, 3, 0, 1, 3, 3, 2, 1, 0, 3, 5};
    oc_colld_t d = {.kind = OC_COLLD_ALLTOALLV, .dtype = 1, .seq = 77,
                    .nv = 3}, o;
    size_t n = enc(&d, v, buf);
    (void)state;
    assert_int_equal(n, OC_COLLD_HDR + 96);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    assert_int_equal(o.kind, OC_COLLD_ALLTOALLV);
    assert_int_equal(o.seq, 77);
    for (unsigned w = 0; w < 4; w++)
        for (uint32_t i = 0; i < 3; i++)
            assert_int_equal(oc__colld_v(&o, w, i), v[w * 3 + i]);
    oc_colld_t a = {.kind = OC_COLLD_ALLREDUCE, .dtype = 4, .op = 2,
                    .seq = 5, .count = 12345};
    n = enc(&a, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 9, &o), OC_OK);
    assert_int_equal(o.count, 12345);
    assert_int_equal(o.op, 2);
    oc_colld_t b = {.kind = OC_COLLD_BCAST, .dtype = 0, .root = 8, .count = 1};
    n = enc(&b, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 9, &o), OC_OK);
    assert_int_equal(o.root, 8);
}

static void test_rejects(void **state)
{
    uint8_t buf[512];
    uint64_t v[12] = {0};
    oc_colld_t d = {.kind = OC_COLLD_ALLREDUCE, .dtype = 0, .count = 4}, o;
    size_t n = enc(&d, NULL, buf);
    (void)state;
    assert_int_equal(oc__colld_decode(buf, n - 1, 2, &o), OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_decode(buf, 0, 2, &o), OC_ERR_WIRE_LENGTH);
    buf[0] ^= 1;
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_WIRE_MAGIC);
    buf[0] ^= 1;
    buf[4] = 9;
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_WIRE_VERSION);
    d.dtype = 7; /* no such type */
    n = enc(&d, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    d.dtype = 0, d.kind = 9;
    n = enc(&d, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    d.kind = OC_COLLD_ALLREDUCE, d.count = (uint64_t)1 << 47; /* x 4 B > 2^48 */
    n = enc(&d, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    oc_colld_t b = {.kind = OC_COLLD_BCAST, .root = 2};
    n = enc(&b, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    /* all-to-allv: arrays of another job size, counts past 2^48 bytes */
    oc_colld_t a = {.kind = OC_COLLD_ALLTOALLV, .dtype = 1, .nv = 3};
    n = enc(&a, v, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    v[4] = (uint64_t)1 << 46; /* a displacement x 8 B */
    n = enc(&a, v, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_ERR_INVALID_PARAM);
    /* an allreduce with arrays */
    oc_colld_t r = {.kind = OC_COLLD_ALLREDUCE, .nv = 2};
    n = enc(&r, v, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    /* the reserved bytes */
    oc_colld_t z = {.kind = OC_COLLD_BARRIER};
    n = enc(&z, NULL, buf);
    buf[21] = 1;
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
}

/* A rejected descriptor still names its collective when its fixed part is
 * whole (the agent fails that collective instead of waiting for ever). */
static void test_seq_of_rejected(void **state)
{
    uint8_t buf[512];
    uint32_t seq = 0;
    oc_colld_t d = {.kind = OC_COLLD_ALLREDUCE, .dtype = 7, .seq = 4242,
                    .count = 4}, o;
    size_t n = enc(&d, NULL, buf);
    (void)state;
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    assert_int_equal(oc__colld_seq(buf, n, &seq), 1);
    assert_int_equal(seq, 4242);
    assert_int_equal(oc__colld_seq(buf, OC_COLLD_HDR - 1, &seq), 0);
    buf[4] = 9;
    assert_int_equal(oc__colld_seq(buf, n, &seq), 0);
    buf[4] = OC_COLLD_VERSION, buf[1] ^= 1;
    assert_int_equal(oc__colld_seq(buf, n, &seq), 0);
}

/* The memory block (OC_COLLD_F_CMA): what the agent will read and write
 * in the rank, so every field that could point it elsewhere is checked. */
static void test_memory_block(void **state)
{
    uint8_t buf[512];
    const oc_colld_t good = {.kind = OC_COLLD_ALLREDUCE, .dtype = 0,
                             .count = 256, .flags = OC_COLLD_F_CMA,
                             .pid = 1234, .saddr = 0x10000, .slen = 1024,
                             .raddr = 0x20000, .rlen = 1024};
    oc_colld_t d = good, o;
    size_t n = enc(&d, NULL, buf);
    (void)state;
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_OK);
    assert_int_equal(o.flags, OC_COLLD_F_CMA);
    assert_int_equal(o.pid, 1234);
    assert_true(o.saddr == 0x10000 && o.slen == 1024);
    assert_true(o.raddr == 0x20000 && o.rlen == 1024);
    /* each way it can be wrong: a named reject */
    oc_colld_t bad[] = {good, good, good, good, good, good, good, good, good,
                        good};
    bad[0].slen = 1028;                      /* not count x 4 bytes */
    bad[1].rlen = 512;                       /* the result shorter */
    bad[2].pid = 0;
    bad[3].saddr = 0;
    bad[4].raddr = ((uint64_t)1 << 63) - 512; /* wraps past 2^63 */
    bad[5].kind = OC_COLLD_BCAST;            /* allreduce only */
    bad[6].flags = 8;                        /* unknown flag */
    bad[7].flags = 0;                        /* a block without its flag */
    bad[8].count = 0, bad[8].slen = bad[8].rlen = 0;
    bad[9].flags |= OC_COLLD_F_SELF;         /* all-to-allv only */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        n = enc(&bad[i], NULL, buf);
        assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    }
    n = enc(&good, NULL, buf);
    buf[37] = 1; /* the zero after the pid */
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
}

/* An all-to-allv's memory block: its lengths are the extents its blocks
 * reach (blocks of count 0 reach nowhere), nothing else. */
static void test_memory_block_a2a(void **state)
{
    uint8_t buf[512];
    /* scounts 1 2 0, sdispls 0 1 9, rcounts 1 0 2, rdispls 0 7 4: send
     * extent 3 elements (the count-0 block at 9 does not count), receive 6 */
    const uint64_t v[12] = {1, 2, 0, 0, 1, 9, 1, 0, 2, 0, 7, 4};
    const oc_colld_t good = {.kind = OC_COLLD_ALLTOALLV, .dtype = 1, .nv = 3,
                             .flags = OC_COLLD_F_CMA, .pid = 77,
                             .saddr = 0x10000, .slen = 24, .raddr = 0x20000,
                             .rlen = 48};
    oc_colld_t o, bad[] = {good, good, good, good, good};
    size_t n = enc(&good, v, buf);
    (void)state;
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    assert_int_equal(oc__colld_extent(&o, 0), 3);
    assert_int_equal(oc__colld_extent(&o, 2), 6);
    /* the rank copies its own block: said with the memory block only */
    oc_colld_t self = good;
    self.flags |= OC_COLLD_F_SELF;
    n = enc(&self, v, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    assert_int_equal(o.flags, OC_COLLD_F_CMA | OC_COLLD_F_SELF);
    self = (oc_colld_t){.kind = OC_COLLD_ALLTOALLV, .dtype = 1, .nv = 3,
                        .flags = OC_COLLD_F_SELF};
    n = enc(&self, v, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_ERR_INVALID_PARAM);
    bad[0].slen = 32;        /* past the blocks */
    bad[1].rlen = 40;        /* short of them */
    bad[2].pid = 0;
    bad[3].raddr = 0;
    bad[4].kind = OC_COLLD_BCAST, bad[4].nv = 0, bad[4].count = 3;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        n = enc(&bad[i], v, buf);
        assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_ERR_INVALID_PARAM);
    }
}

/* A small allreduce with its contribution inline: the bytes come back
 * where the decoder says; each way it can be wrong is a named reject. */
static void test_inline(void **state)
{
    uint8_t buf[OC_COLLD_HDR + OC_COLLD_INLINE_MAX + 64], data[OC_COLLD_INLINE_MAX];
    const oc_colld_t good = {.kind = OC_COLLD_ALLREDUCE, .dtype = 1, .seq = 7,
                             .count = 3, .flags = OC_COLLD_F_INLINE,
                             .data = data};
    oc_colld_t o;
    size_t n;
    (void)state;
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 1);
    n = enc(&good, NULL, buf);
    assert_int_equal(n, OC_COLLD_HDR + 24);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_OK);
    assert_int_equal(o.flags, OC_COLLD_F_INLINE);
    assert_ptr_equal(o.data, buf + OC_COLLD_HDR);
    assert_memory_equal(o.data, data, 24);
    /* one byte more or less than count x element size */
    assert_int_equal(oc__colld_decode(buf, n - 1, 2, &o), OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_decode(buf, n + 1, 2, &o), OC_ERR_WIRE_LENGTH);
    /* the largest (4096 bytes of doubles), then one element more */
    oc_colld_t big = good;
    big.count = OC_COLLD_INLINE_MAX / 8;
    n = enc(&big, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_OK);
    assert_memory_equal(o.data, data, OC_COLLD_INLINE_MAX);
    oc_colld_t bad[] = {good, good, good, good};
    bad[0].count = OC_COLLD_INLINE_MAX / 8 + 1; /* too long */
    bad[1].kind = OC_COLLD_BARRIER;              /* nothing to carry */
    bad[2].flags |= OC_COLLD_F_CMA, bad[2].pid = 9, bad[2].saddr = 4096,
        bad[2].raddr = 8192, bad[2].slen = bad[2].rlen = 24; /* not both */
    bad[3].count = 0;                             /* nothing inline */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        /* encoded by hand: the header with the flag, then count x 8 bytes
         * (at most what fits) */
        oc_colld_t h = bad[i];
        size_t body = h.count * 8 <= OC_COLLD_INLINE_MAX + 8 ? h.count * 8 : 0;
        h.flags &= ~OC_COLLD_F_INLINE;
        oc__colld_encode(&h, NULL, buf);
        buf[20] |= OC_COLLD_F_INLINE; /* the flags' low byte */
        memcpy(buf + OC_COLLD_HDR, data, body < sizeof(data) ? body : sizeof(data));
        assert_int_equal(oc__colld_decode(buf, OC_COLLD_HDR + body, 2, &o),
                         OC_ERR_INVALID_PARAM);
    }
}

/* A small all-to-allv with its send extent inline: the bytes come back
 * where the decoder says, exactly that long; too much either way (sent
 * or to receive in DONE) and the memory block with it are named rejects. */
static void test_inline_a2a(void **state)
{
    /* scounts, sdispls, rcounts, rdispls of 3 ranks: send extent 5
     * elements (2 + 3), 4 received */
    uint64_t v[12] = {1, 2, 0, 0, 3, 9, 2, 0, 2, 0, 4, 1};
    uint8_t buf[OC_COLLD_HDR + 96 + OC_COLLD_INLINE_MAX + 64];
    uint8_t data[OC_COLLD_INLINE_MAX + 8]; /* one element past the limit */
    oc_colld_t good = {.kind = OC_COLLD_ALLTOALLV, .dtype = 1, .seq = 8,
                       .nv = 3, .flags = OC_COLLD_F_INLINE, .data = data,
                       .dlen = 40},
               o;
    size_t n;
    (void)state;
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 5 + 3);
    n = enc(&good, v, buf);
    assert_int_equal(n, OC_COLLD_HDR + 96 + 40);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    assert_int_equal(o.dlen, 40);
    assert_ptr_equal(o.data, buf + OC_COLLD_HDR + 96);
    assert_memory_equal(o.data, data, 40);
    assert_int_equal(oc__colld_decode(buf, n - 1, 3, &o), OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_decode(buf, n + 1, 3, &o), OC_ERR_WIRE_LENGTH);
    /* a rank that sends nothing: no inline bytes, and its blocks in DONE */
    uint64_t z[12] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 2};
    oc_colld_t none = good;
    none.dlen = 0;
    n = enc(&none, z, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    assert_int_equal(o.dlen, 0);
    /* the largest send extent (4096 bytes), then one element more */
    uint64_t w[12] = {OC_COLLD_INLINE_MAX / 8, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 2};
    good.dlen = OC_COLLD_INLINE_MAX;
    n = enc(&good, w, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    w[0]++;
    good.dlen += 8;
    n = enc(&good, w, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_ERR_INVALID_PARAM);
    /* more to receive than DONE carries: 4104 bytes in three blocks */
    uint64_t r[12] = {1, 0, 0, 0, 0, 0, 1, 256, 256, 0, 1, 257};
    good.dlen = 8;
    n = enc(&good, r, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_ERR_INVALID_PARAM);
    r[7] = 255; /* 4096: fits */
    n = enc(&good, r, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_OK);
    /* inline and by memory at once */
    oc_colld_t both = good;
    both.flags |= OC_COLLD_F_CMA, both.pid = 9, both.saddr = 4096,
        both.raddr = 8192, both.slen = 8, both.rlen = 4096;
    n = enc(&both, r, buf);
    assert_int_equal(oc__colld_decode(buf, n, 3, &o), OC_ERR_INVALID_PARAM);
}

/* A small broadcast inline: the root's descriptor carries the data, the
 * others' none; any other length is a named reject, and so are no data
 * and too much. */
static void test_inline_bcast(void **state)
{
    uint8_t buf[OC_COLLD_HDR + OC_COLLD_INLINE_MAX + 64];
    uint8_t data[OC_COLLD_INLINE_MAX + 8];
    oc_colld_t b = {.kind = OC_COLLD_BCAST, .dtype = 1, .seq = 9, .root = 1,
                    .count = 4, .flags = OC_COLLD_F_INLINE, .data = data,
                    .dlen = 32},
               o;
    size_t n;
    (void)state;
    memset(data, 0x5a, sizeof(data));
    n = enc(&b, NULL, buf);
    assert_int_equal(n, OC_COLLD_HDR + 32);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_OK);
    assert_int_equal(o.dlen, 32);
    assert_ptr_equal(o.data, buf + OC_COLLD_HDR);
    assert_int_equal(oc__colld_decode(buf, OC_COLLD_HDR, 2, &o), OC_OK);
    assert_int_equal(o.dlen, 0); /* a rank other than the root */
    assert_int_equal(oc__colld_decode(buf, n - 8, 2, &o), OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_decode(buf, n + 1, 2, &o), OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_decode(buf, OC_COLLD_HDR + 1, 2, &o),
                     OC_ERR_WIRE_LENGTH);
    b.count = OC_COLLD_INLINE_MAX / 8, b.dlen = OC_COLLD_INLINE_MAX;
    n = enc(&b, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_OK);
    b.count++, b.dlen += 8; /* too much */
    n = enc(&b, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
    b.count = 0, b.dlen = 0; /* nothing to broadcast inline */
    n = enc(&b, NULL, buf);
    assert_int_equal(oc__colld_decode(buf, n, 2, &o), OC_ERR_INVALID_PARAM);
}

/* What a rejected descriptor says it is: only a known kind, and for a
 * broadcast only a root of the job. */
static void test_shape_of_rejected(void **state)
{
    uint8_t buf[512];
    oc_colld_t b = {.kind = OC_COLLD_BCAST, .dtype = 0, .root = 2, .seq = 9,
                    .count = 1};
    size_t n;
    uint8_t kind = 0;
    uint32_t root = 7;
    (void)state;
    n = enc(&b, NULL, buf);
    buf[6] = 0xff; /* no such type: rejected, its shape still told */
    assert_int_equal(oc__colld_shape(buf, n, 3, &kind, &root), 1);
    assert_int_equal(kind, OC_COLLD_BCAST);
    assert_int_equal(root, 2);
    assert_int_equal(oc__colld_shape(buf, n, 2, &kind, &root), 0); /* root */
    buf[5] = 9;
    assert_int_equal(oc__colld_shape(buf, n, 3, &kind, &root), 0);
    buf[5] = OC_COLLD_ALLREDUCE;
    assert_int_equal(oc__colld_shape(buf, n, 3, &kind, &root), 1);
    assert_int_equal(kind, OC_COLLD_ALLREDUCE);
    assert_int_equal(root, 0);
    assert_int_equal(oc__colld_shape(buf, OC_COLLD_HDR - 1, 3, &kind, &root), 0);
}

/* The failure message between agents: a round trip of each status a
 * collective ends with, a named reject for anything else. */
static void test_fail_message(void **state)
{
    const oc_status_t ok[] = {OC_ERR_COLL_MISMATCH, OC_ERR_COLL_COUNT,
                              OC_ERR_COLL_MEMORY, OC_ERR_COLL_PEER_FAILED,
                              OC_ERR_NO_MEMORY, OC_ERR_UNSUPPORTED};
    uint8_t buf[OC_COLLD_FAIL_LEN + 1];
    oc_status_t st;
    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        oc__colld_fail_encode(ok[i], buf);
        st = OC_OK;
        assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN, &st), OC_OK);
        assert_int_equal(st, ok[i]);
    }
    assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN - 1, &st),
                     OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN + 1, &st),
                     OC_ERR_WIRE_LENGTH);
    assert_int_equal(oc__colld_fail_decode(buf, 0, &st), OC_ERR_WIRE_LENGTH);
    oc__colld_fail_encode(OC_OK, buf); /* not a failure */
    assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN, &st),
                     OC_ERR_INVALID_PARAM);
    oc__colld_fail_encode(OC_INPROGRESS, buf);
    assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN, &st),
                     OC_ERR_INVALID_PARAM);
    oc__colld_fail_encode(OC_ERR_INVALID_PARAM, buf);
    assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN, &st),
                     OC_ERR_INVALID_PARAM);
    oc__colld_fail_encode(OC_ERR_COLL_MISMATCH, buf);
    buf[0] ^= 1;
    assert_int_equal(oc__colld_fail_decode(buf, OC_COLLD_FAIL_LEN, &st),
                     OC_ERR_WIRE_MAGIC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_seq_of_rejected),
        cmocka_unit_test(test_memory_block),
        cmocka_unit_test(test_inline),
        cmocka_unit_test(test_inline_a2a),
        cmocka_unit_test(test_inline_bcast),
        cmocka_unit_test(test_memory_block_a2a),
        cmocka_unit_test(test_shape_of_rejected),
        cmocka_unit_test(test_fail_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
