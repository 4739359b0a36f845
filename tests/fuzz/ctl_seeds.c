/*
 * ctl_seeds.c — seed corpus for the control-plane fuzz target: one valid
 * frame of every type (and several shapes of the variable-length ones), so
 * that mutations start deep inside each type's fields; streams of frames
 * with different chunkings; and a few near misses.
 */
#include <stdint.h>
#include <string.h>

#include "ctl/ctl.h"
#include "fuzz_ctl.h"

#define P FUZZ_CTL_PREFIX

static uint8_t addr[1200];
static uint32_t ranks[64];
static uint8_t seed[P + 4096];

/* Message of type @p t; @p shape varies the variable-length fields. */
static void msg(oc_ctl_msg_t *m, int t, unsigned shape)
{
    memset(m, 0, sizeof(*m));
    m->type = (oc_ctl_type_t)t;
    switch (t) {
    case OC_CTL_HELLO:
        m->u.hello.job = 7;
        m->u.hello.rank = 2 + shape;
        m->u.hello.size = 16;
        m->u.hello.pid = 31337;
        memset(m->u.hello.nonce, 0x11, sizeof(m->u.hello.nonce));
        m->u.hello.addr.data = addr;
        m->u.hello.addr.len = shape ? 600 : 40;
        break;
    case OC_CTL_CHALLENGE:
        memset(m->u.challenge.nonce, 0x22, sizeof(m->u.challenge.nonce));
        break;
    case OC_CTL_AUTH:
    case OC_CTL_PEER_AUTH:
        memset(m->u.auth.mac, 0x33, sizeof(m->u.auth.mac));
        break;
    case OC_CTL_WELCOME:
        m->u.welcome.node = 1;
        m->u.welcome.thread = shape;
        m->u.welcome.addr.data = addr + 5;
        m->u.welcome.addr.len = 77;
        m->u.welcome.coll_thread = shape / 2;
        m->u.welcome.coll_addr.data = addr + 9;
        m->u.welcome.coll_addr.len = 64;
        break;
    case OC_CTL_READY:
        m->u.ready.size = 16;
        m->u.ready.nnodes = 4;
        m->u.ready.coll = shape ? OC_CTL_COLL_ALL : 0;
        break;
    case OC_CTL_ERROR:
        m->u.error.status = OC_ERR_CTL_AUTH;
        m->u.error.text.data = (const uint8_t *)"authentication failed";
        m->u.error.text.len = shape ? 0 : 21;
        break;
    case OC_CTL_BYE:
        m->u.bye.reason = shape % 3;
        break;
    case OC_CTL_COUNTS:
    case OC_CTL_COUNTS_REQ:
        m->u.counts.job = 7;
        m->u.counts.epoch = 3;
        m->u.counts.round = 1;
        m->u.counts.sent = 1000000;
        m->u.counts.delivered = 999999;
        break;
    case OC_CTL_QUIESCE_DONE:
        m->u.quiesce_done.job = 7;
        m->u.quiesce_done.epoch = 3;
        break;
    case OC_CTL_PEER_HELLO:
        m->u.peer_hello.node = 4;
        m->u.peer_hello.cluster = 9;
        memset(m->u.peer_hello.nonce, 0x44, sizeof(m->u.peer_hello.nonce));
        break;
    case OC_CTL_PEER_INFO:
        m->u.peer_info.node = 4;
        m->u.peer_info.addrs.count = 1 + shape * 3;
        for (uint32_t i = 0; i < m->u.peer_info.addrs.count; i++) {
            m->u.peer_info.addrs.item[i].data = addr + 10 * i;
            m->u.peer_info.addrs.item[i].len = 20 + 7 * i;
        }
        break;
    case OC_CTL_JOB_RANKS:
        m->u.job_ranks.job = 7;
        m->u.job_ranks.size = 200;
        m->u.job_ranks.node = 2;
        m->u.job_ranks.ranks.count = shape ? 64 : 0;
        m->u.job_ranks.ranks.host = ranks;
        break;
    case OC_CTL_JOB_FAIL:
        m->u.job_fail.job = 7;
        m->u.job_fail.status = shape ? INT32_MIN : OC_ERR_PEER_FAILED;
        break;
    default:
        break;
    }
}

static size_t put(uint8_t *p, size_t cap, int t, unsigned shape)
{
    oc_ctl_msg_t m;
    size_t len = 0;

    msg(&m, t, shape);
    if (oc__ctl_encode(&m, p, cap, &len) != OC_OK)
        return 0; /* cannot happen with these messages */
    return len;
}

unsigned fuzz_ctl_seeds(fuzz_ctl_seed_fn fn, void *arg)
{
    static const uint8_t chunkings[] = {0, 6, 15, 63, 0x80, 0xc5};
    unsigned n = 0;
    size_t len, start;

    for (size_t i = 0; i < sizeof(addr); i++)
        addr[i] = (uint8_t)(i * 29 + 1);
    for (uint32_t i = 0; i < 64; i++)
        ranks[i] = 3 * i + 1;

    /* one frame of every type, two shapes each */
    for (int t = 1; t < OC_CTL_TYPE_END; t++) {
        for (unsigned shape = 0; shape < 2; shape++) {
            seed[0] = 0;
            seed[1] = 0;
            len = put(seed + P, sizeof(seed) - P, t, shape);
            fn(arg, seed, P + len, 1);
            n++;
        }
    }

    /* a rank's handshake and an agent's wire-up as streams, chunked */
    for (size_t k = 0; k < sizeof(chunkings); k++) {
        static const int rank_side[] = {OC_CTL_HELLO, OC_CTL_AUTH,
                                        OC_CTL_COUNTS, OC_CTL_BYE};
        static const int agent_side[] = {OC_CTL_PEER_HELLO, OC_CTL_PEER_AUTH,
                                         OC_CTL_PEER_INFO, OC_CTL_JOB_RANKS,
                                         OC_CTL_COUNTS_REQ, OC_CTL_JOB_FAIL};
        const int *types = k % 2 ? agent_side : rank_side;
        size_t nt = k % 2 ? 6 : 4;

        seed[0] = FUZZ_CTL_STREAM;
        seed[1] = chunkings[k];
        len = P;
        /* small frames: every byte of a stream seed is mutated in turn,
         * and each run feeds the stream chunk by chunk */
        for (size_t i = 0; i < nt; i++)
            len += put(seed + len, sizeof(seed) - len, types[i],
                       types[i] == OC_CTL_PEER_INFO);
        fn(arg, seed, len, 1);
        n++;
    }

    /* near misses: a bad rank, bytes after the last field, a stream whose
     * second frame has an unknown type, and one cut inside a frame */
    seed[0] = 0;
    len = P + put(seed + P, sizeof(seed) - P, OC_CTL_HELLO, 0);
    seed[P + 16 + 4] = 16; /* rank = size */
    fn(arg, seed, len, 0);
    n++;
    len = P + put(seed + P, sizeof(seed) - P, OC_CTL_READY, 0);
    seed[P + 8] += 1;
    seed[len++] = 0;
    fn(arg, seed, len, 0);
    n++;
    seed[0] = FUZZ_CTL_STREAM;
    seed[1] = 3;
    len = P + put(seed + P, sizeof(seed) - P, OC_CTL_WELCOME, 0);
    start = len;
    len += put(seed + len, sizeof(seed) - len, OC_CTL_READY, 0);
    seed[start + 6] = 0x7f;
    fn(arg, seed, len, 0);
    n++;
    seed[1] = 0x81;
    len = P + put(seed + P, sizeof(seed) - P, OC_CTL_CHALLENGE, 0);
    len += put(seed + len, sizeof(seed) - len, OC_CTL_PEER_INFO, 1) - 5;
    fn(arg, seed, len, 0);
    n++;
    /* before authentication: a HELLO passes, a 64 KiB frame's header is
     * refused at once (FUZZ_CTL_PREAUTH) */
    seed[0] = FUZZ_CTL_STREAM | FUZZ_CTL_PREAUTH;
    seed[1] = 7;
    len = P + put(seed + P, sizeof(seed) - P, OC_CTL_HELLO, 0);
    fn(arg, seed, len, 1);
    n++;
    start = len;
    len += put(seed + len, sizeof(seed) - len, OC_CTL_PEER_HELLO, 0);
    seed[start + 8] = 0, seed[start + 9] = 0, seed[start + 10] = 1; /* 64K */
    fn(arg, seed, len, 0);
    n++;
    return n;
}
