/*
 * test_ctl.c — unit tests of the control message codec (src/ctl/ctl.c):
 * the byte layout, checked against a second, unchecked encoder written
 * here from the table in ctl.h; round trips of every type; and every
 * rejection, each with its named status, from the decoder and (for the
 * same message) the encoder.
 *
 * Every decode runs on an exact-size heap copy, so that AddressSanitizer
 * (the build-asan run) reports any read past the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_common.h"

#include "ctl/ctl.h"

static uint8_t addr_a[OC_CTL_MAX_ADDR + 8], addr_b[300];
static uint32_t ranks[(OC_CTL_MAX_PAYLOAD - 16) / 4 + 2];
static uint8_t frame[OC_CTL_FRAME_MAX + 64], raw[OC_CTL_FRAME_MAX + 64];

/* ------------------------------------------------- an unchecked encoder */

static uint8_t *w32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

static uint8_t *wbytes(uint8_t *p, const void *d, uint32_t n)
{
    p = w32(p, n);
    if (n)
        memcpy(p, d, n);
    return p + n;
}

/* The layout of ctl.h's table, written out without any check. */
static size_t raw_encode(const oc_ctl_msg_t *m, uint8_t *b)
{
    uint8_t *p = b + 16;
    switch (m->type) {
    case OC_CTL_HELLO:
        p = w32(p, m->u.hello.job);
        p = w32(p, m->u.hello.rank);
        p = w32(p, m->u.hello.size);
        p = w32(p, m->u.hello.pid);
        p = w32(p, m->u.hello.flags);
        memcpy(p, m->u.hello.nonce, 16), p += 16;
        p = wbytes(p, m->u.hello.addr.data, m->u.hello.addr.len);
        break;
    case OC_CTL_CHALLENGE:
        memcpy(p, m->u.challenge.nonce, 32), p += 32;
        break;
    case OC_CTL_AUTH:
    case OC_CTL_PEER_AUTH:
        memcpy(p, m->u.auth.mac, 32), p += 32;
        break;
    case OC_CTL_WELCOME:
        p = w32(p, m->u.welcome.node);
        p = w32(p, m->u.welcome.thread);
        p = wbytes(p, m->u.welcome.addr.data, m->u.welcome.addr.len);
        p = w32(p, m->u.welcome.coll_thread);
        p = wbytes(p, m->u.welcome.coll_addr.data, m->u.welcome.coll_addr.len);
        break;
    case OC_CTL_READY:
        p = w32(p, m->u.ready.size);
        p = w32(p, m->u.ready.nnodes);
        p = w32(p, m->u.ready.coll);
        break;
    case OC_CTL_ERROR:
        p = w32(p, (uint32_t)m->u.error.status);
        p = wbytes(p, m->u.error.text.data, m->u.error.text.len);
        break;
    case OC_CTL_BYE:
        p = w32(p, m->u.bye.reason);
        break;
    case OC_CTL_COUNTS:
    case OC_CTL_COUNTS_REQ:
        p = w32(p, m->u.counts.job);
        p = w32(p, m->u.counts.epoch);
        p = w32(p, m->u.counts.round);
        p = w32(p, (uint32_t)m->u.counts.sent);
        p = w32(p, (uint32_t)(m->u.counts.sent >> 32));
        p = w32(p, (uint32_t)m->u.counts.delivered);
        p = w32(p, (uint32_t)(m->u.counts.delivered >> 32));
        break;
    case OC_CTL_QUIESCE_DONE:
        p = w32(p, m->u.quiesce_done.job);
        p = w32(p, m->u.quiesce_done.epoch);
        break;
    case OC_CTL_PEER_HELLO:
        p = w32(p, m->u.peer_hello.node);
        p = w32(p, m->u.peer_hello.cluster);
        memcpy(p, m->u.peer_hello.nonce, 32), p += 32;
        break;
    case OC_CTL_PEER_INFO:
        p = w32(p, m->u.peer_info.node);
        p = w32(p, m->u.peer_info.addrs.count);
        for (uint32_t i = 0; i < m->u.peer_info.addrs.count; i++)
            p = i < OC_CTL_MAX_THREADS /* the struct holds no more */
                    ? wbytes(p, m->u.peer_info.addrs.item[i].data,
                             m->u.peer_info.addrs.item[i].len)
                    : wbytes(p, addr_b, 1);
        break;
    case OC_CTL_JOB_RANKS:
        p = w32(p, m->u.job_ranks.job);
        p = w32(p, m->u.job_ranks.size);
        p = w32(p, m->u.job_ranks.node);
        p = w32(p, m->u.job_ranks.ranks.count);
        for (uint32_t i = 0; i < m->u.job_ranks.ranks.count; i++)
            p = w32(p, oc__ctl_u32s_get(&m->u.job_ranks.ranks, i));
        break;
    case OC_CTL_JOB_FAIL:
        p = w32(p, m->u.job_fail.job);
        p = w32(p, (uint32_t)m->u.job_fail.status);
        break;
    default:
        break;
    }
    w32(b, OC_CTL_MAGIC);
    b[4] = 6, b[5] = 0; /* OC_CTL_VERSION, written out */
    b[6] = (uint8_t)m->type, b[7] = (uint8_t)(m->type >> 8);
    w32(b + 8, (uint32_t)(p - b - 16));
    w32(b + 12, 0);
    return (size_t)(p - b);
}

/* ------------------------------------------------------------ samples */

static void sample(oc_ctl_type_t t, oc_ctl_msg_t *m)
{
    memset(m, 0, sizeof(*m));
    m->type = t;
    switch (t) {
    case OC_CTL_HELLO:
        m->u.hello.job = 0xabcdef01;
        m->u.hello.rank = 6;
        m->u.hello.size = 7;
        m->u.hello.pid = 4242;
        m->u.hello.flags = OC_CTL_HELLO_F_SHM;
        for (int i = 0; i < 16; i++)
            m->u.hello.nonce[i] = (uint8_t)(0xc0 + i);
        m->u.hello.addr.data = addr_a;
        m->u.hello.addr.len = 123;
        break;
    case OC_CTL_CHALLENGE:
        for (int i = 0; i < 32; i++)
            m->u.challenge.nonce[i] = (uint8_t)(i * 7);
        break;
    case OC_CTL_AUTH:
    case OC_CTL_PEER_AUTH:
        for (int i = 0; i < 32; i++)
            m->u.auth.mac[i] = (uint8_t)(255 - i);
        break;
    case OC_CTL_WELCOME:
        m->u.welcome.node = 3;
        m->u.welcome.thread = 63;
        m->u.welcome.addr.data = addr_b;
        m->u.welcome.addr.len = 1;
        m->u.welcome.coll_thread = 0;
        m->u.welcome.coll_addr.data = addr_b;
        m->u.welcome.coll_addr.len = 1;
        break;
    case OC_CTL_READY:
        m->u.ready.size = 1024;
        m->u.ready.nnodes = 1024;
        m->u.ready.coll = OC_CTL_COLL_ALL;
        break;
    case OC_CTL_ERROR:
        m->u.error.status = OC_ERR_CTL_AUTH;
        m->u.error.text.data = (const uint8_t *)"bad proof ~!";
        m->u.error.text.len = 12;
        break;
    case OC_CTL_BYE:
        m->u.bye.reason = OC_CTL_BYE_PEER_FAILED;
        break;
    case OC_CTL_COUNTS:
    case OC_CTL_COUNTS_REQ:
        m->u.counts.job = 0x5eed;
        m->u.counts.epoch = 9;
        m->u.counts.round = 0xffffffffu;
        m->u.counts.sent = 0x0123456789abcdefull;
        m->u.counts.delivered = UINT64_MAX;
        break;
    case OC_CTL_QUIESCE_DONE:
        m->u.quiesce_done.job = 0xfffffffeu;
        m->u.quiesce_done.epoch = 77;
        break;
    case OC_CTL_PEER_HELLO:
        m->u.peer_hello.node = 0xffffffffu;
        m->u.peer_hello.cluster = 5;
        for (int i = 0; i < 32; i++)
            m->u.peer_hello.nonce[i] = (uint8_t)(i + 1);
        break;
    case OC_CTL_PEER_INFO:
        m->u.peer_info.node = 12;
        m->u.peer_info.addrs.count = 3;
        for (int i = 0; i < 3; i++) {
            m->u.peer_info.addrs.item[i].data = addr_b + i;
            m->u.peer_info.addrs.item[i].len = (uint32_t)(50 + 100 * i);
        }
        break;
    case OC_CTL_JOB_RANKS:
        m->u.job_ranks.job = 1;
        m->u.job_ranks.size = 100;
        m->u.job_ranks.node = 2;
        m->u.job_ranks.ranks.count = 4;
        m->u.job_ranks.ranks.host = ranks; /* 0, 3, 6, 9 */
        break;
    case OC_CTL_JOB_FAIL:
        m->u.job_fail.job = 12;
        m->u.job_fail.status = OC_ERR_PEER_FAILED;
        break;
    default:
        break;
    }
}

static void setup_data(void)
{
    for (size_t i = 0; i < sizeof(addr_a); i++)
        addr_a[i] = (uint8_t)(i * 31 + 5);
    for (size_t i = 0; i < sizeof(addr_b); i++)
        addr_b[i] = (uint8_t)(i ^ 0x5a);
    for (uint32_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++)
        ranks[i] = 3 * i;
}

/* Decode an exact-size heap copy; on failure check *out is untouched. */
static oc_status_t decode_copy(const uint8_t *b, size_t len, oc_ctl_msg_t *out,
                               uint8_t **keep)
{
    uint8_t *c = malloc(len ? len : 1);
    oc_ctl_msg_t before;
    oc_status_t st;

    assert_non_null(c);
    memcpy(c, b, len);
    memset(out, 0x5c, sizeof(*out));
    before = *out;
    st = oc__ctl_decode(c, len, out);
    if (st != OC_OK)
        assert_memory_equal(out, &before, sizeof(before));
    if (keep != NULL && st == OC_OK)
        *keep = c;
    else
        free(c);
    return st;
}

/* ---------------------------------------------------------- round trip */

static void test_round_trip_every_type(void **state)
{
    for (int t = 1; t < OC_CTL_TYPE_END; t++) {
        oc_ctl_msg_t m, d;
        size_t len, len2, rlen;
        uint8_t *c;

        sample((oc_ctl_type_t)t, &m);
        assert_status(oc__ctl_encode(&m, NULL, 0, &len), OC_OK);
        assert_status(oc__ctl_encode(&m, frame, len, &len2), OC_OK);
        assert_int_equal(len, len2);
        rlen = raw_encode(&m, raw);
        assert_int_equal(rlen, len);
        if (memcmp(raw, frame, len) != 0)
            fail_msg("%s: layout differs from ctl.h", oc__ctl_type_name(t));

        assert_status(decode_copy(frame, len, &d, &c), OC_OK);
        assert_int_equal(d.type, t);
        /* re-encoding the decoded message (pointers into c) is identical */
        assert_status(oc__ctl_encode(&d, raw, sizeof(raw), &len2), OC_OK);
        assert_int_equal(len2, len);
        assert_memory_equal(raw, frame, len);
        if (t == OC_CTL_HELLO) {
            assert_int_equal(d.u.hello.pid, 4242);
            assert_ptr_equal(d.u.hello.addr.data, c + 16 + 36 + 4);
            assert_int_equal(d.u.hello.flags, OC_CTL_HELLO_F_SHM);
            assert_memory_equal(d.u.hello.addr.data, addr_a, 123);
        }
        if (t == OC_CTL_JOB_RANKS) {
            assert_null(d.u.job_ranks.ranks.host);
            assert_int_equal(oc__ctl_u32s_get(&d.u.job_ranks.ranks, 3), 9);
        }
        if (t == OC_CTL_COUNTS)
            assert_true(d.u.counts.sent == 0x0123456789abcdefull);
        free(c);
        /* a strict prefix or one more byte is never a frame */
        assert_status(decode_copy(frame, len - 1, &d, NULL),
                      len - 1 < 16 ? OC_ERR_WIRE_TRUNCATED : OC_ERR_WIRE_LENGTH);
        frame[len] = 0;
        assert_status(decode_copy(frame, len + 1, &d, NULL), OC_ERR_WIRE_LENGTH);
    }
}

static void test_golden_bytes(void **state)
{
    static const uint8_t want[] = {'O', 'C', 'C', '1', 6, 0, 7, 0, 4, 0, 0, 0,
                                   0,   0,   0,   0,   1, 0, 0, 0};
    oc_ctl_msg_t m;
    size_t len;

    memset(&m, 0, sizeof(m));
    m.type = OC_CTL_BYE;
    m.u.bye.reason = OC_CTL_BYE_SHUTDOWN;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(frame, want, sizeof(want));
}

static void test_limits_accepted(void **state)
{
    oc_ctl_msg_t m, d;
    size_t len;
    uint8_t *c;

    /* a 4 KiB worker address */
    sample(OC_CTL_HELLO, &m);
    m.u.hello.addr.len = OC_CTL_MAX_ADDR;
    m.u.hello.rank = OC_CTL_MAX_RANKS - 1;
    m.u.hello.size = OC_CTL_MAX_RANKS;
    m.u.hello.pid = INT32_MAX;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    assert_status(decode_copy(frame, len, &d, NULL), OC_OK);

    /* the largest JOB_RANKS: a 65536-byte payload */
    sample(OC_CTL_JOB_RANKS, &m);
    m.u.job_ranks.size = OC_CTL_MAX_RANKS;
    m.u.job_ranks.ranks.count = (OC_CTL_MAX_PAYLOAD - 16) / 4;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    assert_int_equal(len, OC_CTL_FRAME_MAX);
    assert_status(decode_copy(frame, len, &d, &c), OC_OK);
    assert_int_equal(oc__ctl_u32s_get(&d.u.job_ranks.ranks, 16379), 3 * 16379);
    free(c);
    assert_status(oc__ctl_encode(&m, frame, len - 1, &len), OC_ERR_INVALID_PARAM);

    /* 64 addresses, empty ERROR text, a negative status at the limit */
    sample(OC_CTL_PEER_INFO, &m);
    m.u.peer_info.addrs.count = OC_CTL_MAX_THREADS;
    for (int i = 0; i < 64; i++) {
        m.u.peer_info.addrs.item[i].data = addr_a + i;
        m.u.peer_info.addrs.item[i].len = 1000;
    }
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    assert_status(decode_copy(frame, len, &d, &c), OC_OK);
    assert_int_equal(d.u.peer_info.addrs.count, 64);
    assert_memory_equal(d.u.peer_info.addrs.item[63].data, addr_a + 63, 1000);
    free(c);
    sample(OC_CTL_ERROR, &m);
    m.u.error.status = INT32_MIN;
    m.u.error.text.len = 0;
    m.u.error.text.data = NULL;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    assert_status(decode_copy(frame, len, &d, NULL), OC_OK);
    assert_int_equal(d.u.error.text.len, 0);
}

/* ----------------------------------------------------------- rejections */

static void test_reject_header(void **state)
{
    oc_ctl_msg_t m, d;
    size_t len, fl;

    sample(OC_CTL_READY, &m);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    for (size_t cut = 0; cut < 16; cut++) {
        assert_status(decode_copy(frame, cut, &d, NULL), OC_ERR_WIRE_TRUNCATED);
        assert_status(oc__ctl_frame_len(frame, cut, &fl), OC_INPROGRESS);
    }
    assert_status(oc__ctl_frame_len(frame, 16, &fl), OC_OK);
    assert_int_equal(fl, len);

#define BAD(off, val, want)                                                    \
    do {                                                                       \
        uint8_t o_ = frame[off];                                               \
        frame[off] = (val);                                                    \
        assert_status(decode_copy(frame, len, &d, NULL), want);                \
        assert_status(oc__ctl_frame_len(frame, 16, &fl), want);                 \
        frame[off] = o_;                                                       \
    } while (0)
    BAD(0, 'X', OC_ERR_WIRE_MAGIC);
    BAD(3, '2', OC_ERR_WIRE_MAGIC);
    BAD(4, 0, OC_ERR_WIRE_VERSION);
    BAD(4, 1, OC_ERR_WIRE_VERSION); /* version 1: before HELLO flags */
    BAD(4, 2, OC_ERR_WIRE_VERSION); /* version 2: before the collectives' router */
    BAD(4, 3, OC_ERR_WIRE_VERSION); /* version 3: agents' bundles mixed */
    BAD(4, 4, OC_ERR_WIRE_VERSION); /* version 4: one down ring a segment */
    BAD(4, 5, OC_ERR_WIRE_VERSION); /* version 5: no descriptor ring */
    BAD(4, 7, OC_ERR_WIRE_VERSION);
    BAD(5, 1, OC_ERR_WIRE_VERSION);
    BAD(6, 0, OC_ERR_CTL_TYPE);
    BAD(6, OC_CTL_TYPE_END, OC_ERR_CTL_TYPE);
    BAD(6, 0xff, OC_ERR_CTL_TYPE);
    BAD(7, 1, OC_ERR_CTL_TYPE);
    BAD(12, 1, OC_ERR_WIRE_FLAGS);
    BAD(15, 0x80, OC_ERR_WIRE_FLAGS);
    /* payload length over 64 KiB, even with that many bytes present */
    w32(frame + 8, OC_CTL_MAX_PAYLOAD + 1);
    assert_status(decode_copy(frame, OC_CTL_FRAME_MAX + 1, &d, NULL),
                  OC_ERR_WIRE_LENGTH);
    assert_status(oc__ctl_frame_len(frame, 16, &fl), OC_ERR_WIRE_LENGTH);
    w32(frame + 8, 0xffffffffu);
    assert_status(oc__ctl_frame_len(frame, 16, &fl), OC_ERR_WIRE_LENGTH);
    /* a length that disagrees with the bytes given */
    w32(frame + 8, 7);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
    w32(frame + 8, 9);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
#undef BAD
    assert_status(oc__ctl_decode(NULL, len, &d), OC_ERR_INVALID_PARAM);
    assert_status(oc__ctl_decode(frame, len, NULL), OC_ERR_INVALID_PARAM);
}

/* Every type: every shorter payload (header fixed up) and one byte more. */
static void test_reject_truncated_and_trailing(void **state)
{
    for (int t = 1; t < OC_CTL_TYPE_END; t++) {
        oc_ctl_msg_t m, d;
        size_t len;

        sample((oc_ctl_type_t)t, &m);
        assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
        for (size_t cut = 16; cut < len; cut++) {
            w32(frame + 8, (uint32_t)(cut - 16));
            assert_status(decode_copy(frame, cut, &d, NULL), OC_ERR_WIRE_LENGTH);
        }
        w32(frame + 8, (uint32_t)(len - 16 + 1));
        frame[len] = 0;
        assert_status(decode_copy(frame, len + 1, &d, NULL), OC_ERR_WIRE_LENGTH);
    }
}

typedef struct {
    const char *what;
    oc_ctl_type_t type;
    void (*mutate)(oc_ctl_msg_t *m);
    oc_status_t want;
} bad_t;

#define MUT(name, body)                                                        \
    static void name(oc_ctl_msg_t *m)                                          \
    {                                                                          \
        body;                                                                  \
    }
MUT(hello_rank_eq_size, m->u.hello.rank = m->u.hello.size)
MUT(hello_rank_huge, m->u.hello.rank = OC_CTL_MAX_RANKS)
MUT(hello_size_0, (m->u.hello.size = 0, m->u.hello.rank = 0))
MUT(hello_size_huge, m->u.hello.size = OC_CTL_MAX_RANKS + 1)
MUT(hello_pid_0, m->u.hello.pid = 0)
MUT(hello_pid_neg, m->u.hello.pid = 0x80000000u)
MUT(hello_addr_empty, m->u.hello.addr.len = 0)
MUT(hello_addr_long, m->u.hello.addr.len = OC_CTL_MAX_ADDR + 1)
MUT(welcome_thread, m->u.welcome.thread = OC_CTL_MAX_THREADS)
MUT(welcome_addr_empty, m->u.welcome.addr.len = 0)
MUT(welcome_coll_thread, m->u.welcome.coll_thread = OC_CTL_MAX_THREADS)
MUT(welcome_coll_addr_empty, m->u.welcome.coll_addr.len = 0)
MUT(ready_coll_bit0, m->u.ready.coll = OC_CTL_COLL_ALL | 1u)
MUT(ready_coll_high, m->u.ready.coll = 1u << 5)
MUT(ready_size_0, (m->u.ready.size = 0, m->u.ready.nnodes = 0))
MUT(ready_nnodes_0, m->u.ready.nnodes = 0)
MUT(ready_nnodes_big, m->u.ready.nnodes = m->u.ready.size + 1)
MUT(error_status_0, m->u.error.status = 0)
MUT(error_status_pos, m->u.error.status = 5)
MUT(error_text_nl, (m->u.error.text.data = (const uint8_t *)"bad\nline",
                     m->u.error.text.len = 8))
MUT(error_text_del, (m->u.error.text.data = (const uint8_t *)"bad\177text",
                      m->u.error.text.len = 8))
MUT(error_text_8bit, (m->u.error.text.data = (const uint8_t *)"caf\xc3\xa9",
                       m->u.error.text.len = 5))
MUT(error_text_long, (m->u.error.text.data = addr_a, m->u.error.text.len = 257))
MUT(bye_reason, m->u.bye.reason = 3)
MUT(job_fail_ok_status, m->u.job_fail.status = 0)
MUT(peer_info_0, m->u.peer_info.addrs.count = 0)
MUT(peer_info_65, m->u.peer_info.addrs.count = 65)
MUT(peer_info_empty_addr, m->u.peer_info.addrs.item[1].len = 0)
MUT(peer_info_long_addr, (m->u.peer_info.addrs.item[2].data = addr_a,
                          m->u.peer_info.addrs.item[2].len = 4097))
MUT(job_size_0, m->u.job_ranks.size = 0)
MUT(job_size_huge, m->u.job_ranks.size = OC_CTL_MAX_RANKS + 1)
MUT(job_rank_eq_size, m->u.job_ranks.size = 9)
static const uint32_t dup_ranks[] = {1, 2, 2, 5}, down_ranks[] = {1, 3, 2, 5};
MUT(job_rank_dup, m->u.job_ranks.ranks.host = dup_ranks)
MUT(job_rank_down, m->u.job_ranks.ranks.host = down_ranks)
MUT(job_too_many, (m->u.job_ranks.size = OC_CTL_MAX_RANKS,
                   m->u.job_ranks.ranks.count = (OC_CTL_MAX_PAYLOAD - 16) / 4 + 1))

static const bad_t bad[] = {
    {"hello rank = size", OC_CTL_HELLO, hello_rank_eq_size, OC_ERR_CTL_VALUE},
    {"hello rank 2^24-1", OC_CTL_HELLO, hello_rank_huge, OC_ERR_CTL_VALUE},
    {"hello size 0", OC_CTL_HELLO, hello_size_0, OC_ERR_CTL_VALUE},
    {"hello size 2^24", OC_CTL_HELLO, hello_size_huge, OC_ERR_CTL_VALUE},
    {"hello pid 0", OC_CTL_HELLO, hello_pid_0, OC_ERR_CTL_VALUE},
    {"hello pid 2^31", OC_CTL_HELLO, hello_pid_neg, OC_ERR_CTL_VALUE},
    {"hello addr empty", OC_CTL_HELLO, hello_addr_empty, OC_ERR_CTL_VALUE},
    {"hello addr 4097", OC_CTL_HELLO, hello_addr_long, OC_ERR_CTL_VALUE},
    {"welcome thread 64", OC_CTL_WELCOME, welcome_thread, OC_ERR_CTL_VALUE},
    {"welcome addr empty", OC_CTL_WELCOME, welcome_addr_empty, OC_ERR_CTL_VALUE},
    {"welcome coll_thread 64", OC_CTL_WELCOME, welcome_coll_thread, OC_ERR_CTL_VALUE},
    {"welcome coll_addr empty", OC_CTL_WELCOME, welcome_coll_addr_empty, OC_ERR_CTL_VALUE},
    {"ready coll bit 0", OC_CTL_READY, ready_coll_bit0, OC_ERR_CTL_VALUE},
    {"ready coll unknown bit", OC_CTL_READY, ready_coll_high, OC_ERR_CTL_VALUE},
    {"ready size 0", OC_CTL_READY, ready_size_0, OC_ERR_CTL_VALUE},
    {"ready nnodes 0", OC_CTL_READY, ready_nnodes_0, OC_ERR_CTL_VALUE},
    {"ready nnodes > size", OC_CTL_READY, ready_nnodes_big, OC_ERR_CTL_VALUE},
    {"error status 0", OC_CTL_ERROR, error_status_0, OC_ERR_CTL_VALUE},
    {"error status > 0", OC_CTL_ERROR, error_status_pos, OC_ERR_CTL_VALUE},
    {"error text newline", OC_CTL_ERROR, error_text_nl, OC_ERR_CTL_VALUE},
    {"error text DEL", OC_CTL_ERROR, error_text_del, OC_ERR_CTL_VALUE},
    {"error text UTF-8", OC_CTL_ERROR, error_text_8bit, OC_ERR_CTL_VALUE},
    {"error text 257", OC_CTL_ERROR, error_text_long, OC_ERR_CTL_VALUE},
    {"bye reason 3", OC_CTL_BYE, bye_reason, OC_ERR_CTL_VALUE},
    {"job_fail status 0", OC_CTL_JOB_FAIL, job_fail_ok_status,
     OC_ERR_CTL_VALUE},
    {"peer_info 0 addrs", OC_CTL_PEER_INFO, peer_info_0, OC_ERR_CTL_VALUE},
    {"peer_info 65 addrs", OC_CTL_PEER_INFO, peer_info_65, OC_ERR_WIRE_COUNT},
    {"peer_info empty addr", OC_CTL_PEER_INFO, peer_info_empty_addr,
     OC_ERR_CTL_VALUE},
    {"peer_info addr 4097", OC_CTL_PEER_INFO, peer_info_long_addr,
     OC_ERR_CTL_VALUE},
    {"job_ranks size 0", OC_CTL_JOB_RANKS, job_size_0, OC_ERR_CTL_VALUE},
    {"job_ranks size 2^24", OC_CTL_JOB_RANKS, job_size_huge, OC_ERR_CTL_VALUE},
    {"job_ranks rank = size", OC_CTL_JOB_RANKS, job_rank_eq_size,
     OC_ERR_CTL_VALUE},
    {"job_ranks duplicate", OC_CTL_JOB_RANKS, job_rank_dup, OC_ERR_CTL_VALUE},
    {"job_ranks decreasing", OC_CTL_JOB_RANKS, job_rank_down, OC_ERR_CTL_VALUE},
    {"job_ranks too many", OC_CTL_JOB_RANKS, job_too_many, OC_ERR_WIRE_COUNT},
};

/* Each bad message: the encoder refuses it, and its bytes (written by the
 * unchecked encoder) are refused by the decoder, with the same status. */
static void test_reject_values(void **state)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        oc_ctl_msg_t m, d;
        oc_status_t st;
        size_t len = 0, rlen;

        sample(bad[i].type, &m);
        bad[i].mutate(&m);
        st = oc__ctl_encode(&m, frame, sizeof(frame), &len);
        if (st != bad[i].want)
            fail_msg("%s: encode: got %s", bad[i].what, oc_status_string(st));
        rlen = raw_encode(&m, raw);
        if (rlen - 16 > OC_CTL_MAX_PAYLOAD)
            continue; /* only the encoder's check applies */
        st = decode_copy(raw, rlen, &d, NULL);
        if (st != bad[i].want)
            fail_msg("%s: decode: got %s", bad[i].what, oc_status_string(st));
    }
}

static void test_reject_lists(void **state)
{
    oc_ctl_msg_t m, d;
    size_t len;

    /* a count larger than the payload holds */
    sample(OC_CTL_JOB_RANKS, &m);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    w32(frame + 16 + 12, 5);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
    w32(frame + 16 + 12, 0xffffffffu);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_COUNT);
    /* fewer ranks than the bytes: trailing bytes */
    w32(frame + 16 + 12, 3);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);

    /* an address length running past the end, or eating the next one */
    sample(OC_CTL_PEER_INFO, &m);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    w32(frame + 16 + 8, 0xfffffff0u);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
    w32(frame + 16 + 8, 50 + 4 + 150);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
    w32(frame + 16 + 8, 50);
    w32(frame + 16 + 4, 2); /* one address left over */
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
    w32(frame + 16 + 4, 4); /* one missing */
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
    w32(frame + 16 + 4, 0x10000);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_COUNT);

    /* the text length past the end */
    sample(OC_CTL_ERROR, &m);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    w32(frame + 16 + 4, 13);
    assert_status(decode_copy(frame, len, &d, NULL), OC_ERR_WIRE_LENGTH);
}

static void test_encode_errors(void **state)
{
    oc_ctl_msg_t m;
    size_t len;

    sample(OC_CTL_HELLO, &m);
    assert_status(oc__ctl_encode(NULL, frame, sizeof(frame), &len),
                  OC_ERR_INVALID_PARAM);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), NULL),
                  OC_ERR_INVALID_PARAM);
    assert_status(oc__ctl_encode(&m, frame, 16 + 32 + 4 + 122, &len),
                  OC_ERR_INVALID_PARAM);
    m.u.hello.addr.data = NULL;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len),
                  OC_ERR_INVALID_PARAM);
    m.type = 0;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len),
                  OC_ERR_CTL_TYPE);
    m.type = OC_CTL_TYPE_END;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len),
                  OC_ERR_CTL_TYPE);
    sample(OC_CTL_JOB_RANKS, &m);
    m.u.job_ranks.ranks.host = NULL;
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len),
                  OC_ERR_INVALID_PARAM);
    /* 64 addresses of 4 KiB: over the payload maximum */
    sample(OC_CTL_PEER_INFO, &m);
    m.u.peer_info.addrs.count = OC_CTL_MAX_THREADS;
    for (int i = 0; i < 64; i++) {
        m.u.peer_info.addrs.item[i].data = addr_a;
        m.u.peer_info.addrs.item[i].len = OC_CTL_MAX_ADDR;
    }
    assert_status(oc__ctl_encode(&m, NULL, 0, &len), OC_ERR_MSG_TOO_LONG);
}

static void test_type_names(void **state)
{
    for (int t = 1; t < OC_CTL_TYPE_END; t++) {
        assert_string_not_equal(oc__ctl_type_name(t), "UNKNOWN");
        for (int u = 1; u < t; u++)
            assert_string_not_equal(oc__ctl_type_name(t), oc__ctl_type_name(u));
    }
    assert_string_equal(oc__ctl_type_name(OC_CTL_JOB_RANKS), "JOB_RANKS");
    assert_string_equal(oc__ctl_type_name(0), "UNKNOWN");
    assert_string_equal(oc__ctl_type_name(OC_CTL_TYPE_END), "UNKNOWN");
    assert_string_equal(oc__ctl_type_name(-1), "UNKNOWN");
}

static void test_set_error(void **state)
{
    char scratch[OC_CTL_MAX_TEXT], longtext[600];
    oc_ctl_msg_t m, d;
    size_t len;

    oc__ctl_set_error(&m, OC_ERR_CTL_AUTH, "wrong\tkey\n", scratch);
    assert_int_equal(m.type, OC_CTL_ERROR);
    assert_int_equal(m.u.error.status, OC_ERR_CTL_AUTH);
    assert_int_equal(m.u.error.text.len, 10);
    assert_memory_equal(m.u.error.text.data, "wrong?key?", 10);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    assert_status(decode_copy(frame, len, &d, NULL), OC_OK);

    memset(longtext, 'x', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    oc__ctl_set_error(&m, OC_OK, longtext, scratch);
    assert_int_equal(m.u.error.text.len, OC_CTL_MAX_TEXT);
    assert_int_equal(m.u.error.status, OC_ERR_STATE);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
    oc__ctl_set_error(&m, OC_ERR_CTL_KEY, NULL, scratch);
    assert_int_equal(m.u.error.text.len, 0);
    assert_status(oc__ctl_encode(&m, frame, sizeof(frame), &len), OC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_type),
        cmocka_unit_test(test_golden_bytes),
        cmocka_unit_test(test_limits_accepted),
        cmocka_unit_test(test_reject_header),
        cmocka_unit_test(test_reject_truncated_and_trailing),
        cmocka_unit_test(test_reject_values),
        cmocka_unit_test(test_reject_lists),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_set_error),
    };
    setup_data();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
