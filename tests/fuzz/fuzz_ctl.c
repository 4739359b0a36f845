/*
 * fuzz_ctl.c — libFuzzer target for the control plane's parsers
 * (every parser of untrusted input has one): oc__ctl_decode() on single frames, and the framed
 * connection reader (oc__ctl_conn_read) on byte streams that arrive in
 * chunks of fuzzed sizes (from memory, through the connection's internal
 * reader hook: pipes cost two system calls a chunk, and the fd path itself
 * is covered by tests/unit/test_ctl_net.c).
 *
 * Decode mode: the frame is an exact-size heap copy (AddressSanitizer sees
 * any read past the end).  A rejected frame must give a documented status
 * and leave the output alone; an accepted one must point only inside the
 * buffer, re-encode to the very same bytes (one encoding per message, which
 * also re-checks every field rule), and lose its acceptance when cut short.
 *
 * Stream mode: a reference reader built from oc__ctl_frame_len() and
 * oc__ctl_decode() predicts the frames and the final status; the connection
 * must yield exactly those frames (compared by re-encoding) and then that
 * status, whatever the chunking.
 *
 * Input layout: fuzz_ctl.h.  Built with libFuzzer (-Dfuzz=true, clang) as
 * fuzz_ctl, and without it into fuzz_ctl_replay for every build.
 */
#include "fuzz_ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

unsigned long fuzz_ctl_accepted;
int fuzz_ctl_last_valid;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_ctl.c:%d: invariant broken: %s\n",           \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static uint8_t scratch[OC_CTL_FRAME_MAX];

static int inside(const uint8_t *p, uint32_t n, const uint8_t *buf, size_t len)
{
    if (n == 0)
        return 1;
    return p != NULL && p >= buf && p + n <= buf + len;
}

/* Every pointer of an accepted message lies in the frame. */
static void check_pointers(const oc_ctl_msg_t *m, const uint8_t *buf,
                           size_t len)
{
    switch (m->type) {
    case OC_CTL_HELLO:
        CHECK(inside(m->u.hello.addr.data, m->u.hello.addr.len, buf, len));
        break;
    case OC_CTL_WELCOME:
        CHECK(inside(m->u.welcome.addr.data, m->u.welcome.addr.len, buf, len));
        CHECK(inside(m->u.welcome.coll_addr.data, m->u.welcome.coll_addr.len,
                     buf, len));
        CHECK(m->u.welcome.coll_thread < OC_CTL_MAX_THREADS);
        break;
    case OC_CTL_ERROR:
        CHECK(inside(m->u.error.text.data, m->u.error.text.len, buf, len));
        break;
    case OC_CTL_PEER_INFO:
        CHECK(m->u.peer_info.addrs.count >= 1 &&
              m->u.peer_info.addrs.count <= OC_CTL_MAX_THREADS);
        for (uint32_t i = 0; i < m->u.peer_info.addrs.count; i++)
            CHECK(inside(m->u.peer_info.addrs.item[i].data,
                         m->u.peer_info.addrs.item[i].len, buf, len));
        break;
    case OC_CTL_JOB_RANKS:
        CHECK(m->u.job_ranks.ranks.host == NULL);
        CHECK(inside(m->u.job_ranks.ranks.wire,
                     4 * m->u.job_ranks.ranks.count, buf, len));
        break;
    default:
        break;
    }
}

/* An accepted message re-encodes to exactly @p frame. */
static void check_canonical(const oc_ctl_msg_t *m, const uint8_t *frame,
                            size_t len)
{
    size_t n = 0;

    CHECK(oc__ctl_encode(m, scratch, sizeof(scratch), &n) == OC_OK);
    CHECK(n == len);
    CHECK(memcmp(scratch, frame, len) == 0);
}

static int decode_error_ok(oc_status_t st)
{
    return st == OC_ERR_WIRE_TRUNCATED || st == OC_ERR_WIRE_MAGIC ||
           st == OC_ERR_WIRE_VERSION || st == OC_ERR_CTL_TYPE ||
           st == OC_ERR_WIRE_FLAGS || st == OC_ERR_WIRE_LENGTH ||
           st == OC_ERR_WIRE_COUNT || st == OC_ERR_CTL_VALUE;
}

static void fuzz_decode(const uint8_t *data, size_t len)
{
    uint8_t *buf = malloc(len ? len : 1);
    oc_ctl_msg_t m, untouched;
    oc_status_t st;
    size_t fl = 0;

    CHECK(buf != NULL);
    memcpy(buf, data, len);
    memset(&m, 0xa5, sizeof(m));
    untouched = m;
    st = oc__ctl_decode(buf, len, &m);
    if (st == OC_OK) {
        fuzz_ctl_accepted++;
        fuzz_ctl_last_valid = 1;
        CHECK(strcmp(oc__ctl_type_name((int)m.type), "UNKNOWN") != 0);
        CHECK(oc__ctl_frame_len(buf, len, &fl) == OC_OK && fl == len);
        check_pointers(&m, buf, len);
        check_canonical(&m, buf, len);
        CHECK(oc__ctl_decode(buf, len - 1, &untouched) != OC_OK);
    } else {
        CHECK(decode_error_ok(st));
        CHECK(memcmp(&m, &untouched, sizeof(m)) == 0);
        CHECK(len >= OC_CTL_HDR_LEN || st == OC_ERR_WIRE_TRUNCATED);
    }
    free(buf);
}

/* ---------------------------------------------------------------- stream */

static uint32_t next_chunk(uint8_t sel, uint32_t *rng)
{
    if (!(sel & 0x80))
        return 1u + (sel & 63u);
    *rng = *rng * 1103515245u + 12345u;
    switch ((*rng >> 16) & 3) {
    case 0:
        return 1;
    case 1:
        return 1 + ((*rng >> 20) & 15);
    case 2:
        return OC_CTL_HDR_LEN;
    default:
        return 1 + ((*rng >> 18) & 1023);
    }
}

/* The stream as the connection sees it: bytes up to `avail` have
 * "arrived"; reading past them is EAGAIN until the driver lets the next
 * chunk in; at the end of the stream, 0.  Every few calls, EINTR. */
typedef struct {
    const uint8_t *data;
    size_t len, pos, avail;
    unsigned calls, eintr_every;
} feed_t;

static ssize_t feed_read(void *arg, void *buf, size_t n)
{
    feed_t *f = arg;

    if (f->eintr_every && ++f->calls % f->eintr_every == 0) {
        errno = EINTR;
        return -1;
    }
    if (f->pos == f->len)
        return 0;
    if (f->pos == f->avail) {
        errno = EAGAIN;
        return -1;
    }
    if (n > f->avail - f->pos)
        n = f->avail - f->pos;
    memcpy(buf, f->data + f->pos, n);
    f->pos += n;
    return (ssize_t)n;
}

static void fuzz_stream(const uint8_t *data, size_t len, uint8_t sel,
                        int preauth)
{
    feed_t feed = {data, len, 0, 0, 0, (sel & 0x40) ? 3 : 0};
    oc_ctl_conn_t *c;
    oc_ctl_msg_t m;
    oc_status_t want, st;
    size_t off = 0, fl = 0;
    uint32_t rng = sel;

    /* the reference reader: whole valid frames from the front, then why
     * reading stops */
    for (;;) {
        size_t rem = len - off;
        want = oc__ctl_frame_len(data + off, rem, &fl);
        if (preauth && want == OC_OK && fl > OC_CTL_PREAUTH_FRAME_MAX) {
            want = OC_ERR_WIRE_LENGTH; /* refused on its header alone */
            break;
        }
        if (want == OC_INPROGRESS || (want == OC_OK && fl > rem)) {
            want = OC_ERR_PEER_FAILED; /* end of stream */
            break;
        }
        if (want != OC_OK)
            break;
        if ((want = oc__ctl_decode(data + off, fl, &m)) != OC_OK)
            break;
        off += fl;
    }
    fuzz_ctl_last_valid = off == len;

    CHECK(oc__ctl_conn_create_reader(feed_read, &feed, "fuzz", &c) == OC_OK);
    if (preauth)
        oc__ctl_conn_set_max_frame(c, OC_CTL_PREAUTH_FRAME_MAX);
    off = 0; /* now: where the next frame the connection yields starts */
    for (;;) {
        while ((st = oc__ctl_conn_read(c, &m)) == OC_OK) {
            size_t n;
            CHECK(oc__ctl_encode(&m, scratch, sizeof(scratch), &n) == OC_OK);
            CHECK(n <= len - off && memcmp(scratch, data + off, n) == 0);
            CHECK(off + n <= feed.pos); /* no frame before its bytes */
            off += n;
            fuzz_ctl_accepted++;
        }
        if (st != OC_INPROGRESS)
            break;
        CHECK(feed.avail < len); /* all of it in: an end is due */
        feed.avail += next_chunk(sel, &rng);
        if (feed.avail > len)
            feed.avail = len;
    }
    CHECK(st == want);
    CHECK(oc__ctl_conn_read(c, &m) == want); /* sticky */
    oc__ctl_conn_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;

    if (!init) {
        /* malformed frames are logged as warnings: keep the run quiet */
        setenv("OC_LOG", "error", 0);
        init = 1;
    }
    fuzz_ctl_last_valid = 0;
    if (size < FUZZ_CTL_PREFIX)
        return 0;
    if (data[0] & FUZZ_CTL_STREAM)
        fuzz_stream(data + FUZZ_CTL_PREFIX, size - FUZZ_CTL_PREFIX, data[1],
                    data[0] & FUZZ_CTL_PREAUTH);
    else
        fuzz_decode(data + FUZZ_CTL_PREFIX, size - FUZZ_CTL_PREFIX);
    return 0;
}
