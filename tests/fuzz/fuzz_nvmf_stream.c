/*
 * fuzz_nvmf_stream.c — libFuzzer target for offcore-nvmf's PDU stream: the
 * connection code itself (src/nvmf/conn.c and qpair.c, with admin.c and
 * io.c behind it), fed a host's byte stream in segments of any size, so
 * that one segment carries several PDUs, a PDU spans segments, and a
 * fatal one arrives with more behind it.  It found that responses whose file
 * operation completed after a C2HTermReq went out behind it.
 *
 * The io_uring the target runs on is replaced by a ring of our own (the
 * oc__nvmf_sqe() below, in src/nvmf/base.c's place with the clock and the
 * subsystem lookup, and target.c's dispatch of completions, turn by
 * turn): a receive takes the next segment, a send takes what the host
 * reads of it, a file operation completes whole (a namespace of 2048
 * blocks of 512 bytes that stores nothing: only the protocol is under
 * test).
 *
 * Input (FUZZ_NVMF_STREAM_PREFIX bytes, then the host's stream):
 *   [0] bits 0-2  segment sizes: 0 as much as the receive asks, 1, 7,
 *                 64, 512, 4096, 6-7 varying (a generator seeded by [1])
 *       bits 3-4  what the host reads per send: all, 32768, 4096, 333
 *       bit 5     another connection first runs an admin session
 *                 (controller 1, CC.EN, 2 I/O queues granted), so that
 *                 the stream can connect I/O queues and reach io.c
 *       bit 6     the host expects its large Writes' data received in
 *                 place (conn.c's direct path): the stream counts as
 *                 valid only if the worker's h2c_direct counter moved
 *   [1] the generator's seed
 *
 * After every turn: the send queue is a list (no piece on it twice, no
 * ring), the receive window and the command slots are within bounds.
 * When the stream is spent and nothing moves: every command the target
 * took has been answered (or is waiting for its data, or is a held Async
 * Event Request).  At the end the host closes; every connection must be
 * freed, the guard must count none.  The target's output must parse as
 * PDUs a controller sends, with at most one C2HTermReq, which is the last
 * thing on its connection, and that connection closed after it.  A stream
 * counts as valid (the seeds' verdict) when its connection ended without a
 * C2HTermReq and no data digest failed: data received into the wrong place
 * of a command's buffer shows there, where the namespace stores nothing.
 *
 * Single-threaded; every input starts from a fresh target.
 */
#include "fuzz_nvmf.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvmf/target.h"

unsigned long fuzz_nvmf_stream_accepted;
int fuzz_nvmf_stream_last_valid;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_nvmf_stream.c:%d: invariant broken: %s\n",   \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define SQ_MAX 1024
#define PEND_MAX 2048
#define NCONN 2
#define OUT_MAX (4u << 20)   /* output kept per connection for the checks */
#define TURNS_MAX 200000     /* a stream that does not settle is a hang */

/* ------------------------------------------------------- the fake ring */
static struct io_uring_sqe sq[SQ_MAX];
static unsigned nsq;
static struct io_uring_sqe pend[PEND_MAX];
static unsigned npend;
static uint64_t clock_ms;

typedef struct {
    int fd;                  /* /dev/null: closed by the target's conn_free */
    const uint8_t *in;       /* what this host sends */
    size_t in_len, in_pos;
    int eof;                 /* the host has closed its end */
    uint8_t *out;            /* what the target sent it */
    size_t out_len;
    int freed;               /* its conn_free ran (no op points at it) */
} host_t;

static host_t hosts[NCONN];
static uint8_t outbuf[NCONN][OUT_MAX]; /* once: 4 MiB a host each input
                                        * would be an mmap per input */
static int nhosts;
static unsigned seg_mode, read_mode;
static uint32_t seg_rng;

uint64_t oc__nvmf_now_ms(void)
{
    return clock_ms;
}

uint64_t oc__nvmf_now_ns(void)
{
    return clock_ms * 1000000ull;
}

struct io_uring_sqe *oc__nvmf_sqe(oc_nvmf_worker_t *w)
{
    (void)w;
    if (nsq == SQ_MAX)
        return NULL; /* the connection is closed: allowed */
    memset(&sq[nsq], 0, sizeof(sq[0]));
    return &sq[nsq++];
}

void oc__nvmf_worker_wake(oc_nvmf_worker_t *w)
{
    (void)w; /* one worker: nobody to wake */
}

/* ---------------------------------------------- the target around it */
static oc_nvmf_target_t tgt;
static oc_nvmf_worker_t wk; /* the one worker */
static oc_nvmf_subsys_conf_t sconf;
static oc_nvmf_ns_t ns;
static oc_nvmf_ns_stats_t ns_st; /* the one worker's */

#define SUBNQN "nqn.2026-11.io.offcore:stream"
#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:stream"

oc_nvmf_subsys_t *oc__nvmf_subsys_find(oc_nvmf_target_t *t, const char *nqn)
{
    if (!strcmp(nqn, OC_NVMF_DISCOVERY_NQN))
        return &t->subsys[0];
    if (!strcmp(nqn, SUBNQN))
        return &t->subsys[1];
    return NULL;
}

/* a namespace that stores nothing: no checksums, no key */
uint64_t oc__nvmf_ns_verify(oc_nvmf_ns_t *n, int w, uint8_t *buf,
                           uint64_t lba, uint32_t cnt, int *bad)
{
    (void)n, (void)w, (void)buf, (void)lba, (void)cnt;
    *bad = 0;
    return 0;
}

int oc__nvmf_ns_seal(oc_nvmf_ns_t *n, int w, uint8_t *buf, uint64_t lba,
                    uint32_t cnt)
{
    (void)n, (void)w, (void)buf, (void)lba, (void)cnt;
    return 0;
}

void oc__nvmf_ns_mark_zero(oc_nvmf_ns_t *n, uint64_t lba, uint64_t cnt)
{
    (void)n, (void)lba, (void)cnt;
}

/* The target once; what one input leaves behind is checked to be nothing
 * (no connection, controller or pending slot), and the numbering starts
 * over.  Not cleared between inputs: the guard's log limiters register
 * themselves in a global list at first use. */
static void target_init(void)
{
    oc_guard_params_t gp = {8, 5000, 100};
    static int done;

    if (done) {
        tgt.subsys[0].next_cntlid = tgt.subsys[1].next_cntlid = 0;
        tgt.next_conn_id = 0;
        tgt.fd_wait = 0;
        oc__guard_resume(&tgt.guard);
        return;
    }
    done = 1;
    memset(&tgt, 0, sizeof(tgt));
    memset(&sconf, 0, sizeof(sconf));
    memset(&ns, 0, sizeof(ns));
    ns.st = &ns_st;
    memset(&wk, 0, sizeof(wk));
    pthread_mutex_init(&tgt.snap_lock, NULL);
    pthread_mutex_init(&tgt.guard_lock, NULL);
    pthread_mutex_init(&tgt.ctrl_lock, NULL);
    wk.tgt = &tgt;
    wk.wake_fd = -1;
    wk.cpu = -1;
    wk.reg_off = 1; /* no registered buffers in the fake ring */
    tgt.w = &wk;
    tgt.nworkers = 1;
    tgt.listen_fd = -1;
    snprintf(tgt.traddr, sizeof(tgt.traddr), "127.0.0.1");
    tgt.port = 4420;
    tgt.subsys[0].discovery = 1;
    snprintf(tgt.subsys[0].serial, sizeof(tgt.subsys[0].serial), "discovery");
    snprintf(sconf.nqn, sizeof(sconf.nqn), SUBNQN);
    sconf.allow_any = 1;
    sconf.nns = 1;
    ns.nsid = 1;
    ns.fd = -1;
    ns.fixed = -1;
    ns.meta_fd = -1;
    ns.nblocks = 2048;
    ns.bs = 512; /* small blocks: small seeds (libFuzzer's -max_len) */
    ns.bs_shift = 9;
    snprintf(ns.path, sizeof(ns.path), "(fuzz)");
    tgt.subsys[1].conf = &sconf;
    tgt.subsys[1].nns = 1;
    tgt.subsys[1].ns[0] = &ns;
    snprintf(tgt.subsys[1].serial, sizeof(tgt.subsys[1].serial), "OCFUZZ");
    tgt.nsubsys = 1;
    oc__guard_init(&tgt.guard, "fuzz", &gp);
}

static host_t *host_of_fd(int fd)
{
    for (int i = 0; i < nhosts; i++)
        if (hosts[i].fd == fd)
            return &hosts[i];
    return NULL;
}

static oc_nvmf_conn_t *conn_of_fd(int fd)
{
    for (oc_nvmf_conn_t *c = wk.conns; c; c = c->next)
        if (c->fd == fd)
            return c;
    return NULL;
}

static size_t next_seg(size_t want)
{
    static const size_t fixed[6] = {0, 1, 7, 64, 512, 4096};
    size_t n;

    if (seg_mode < 6) {
        n = fixed[seg_mode];
    } else {
        seg_rng = seg_rng * 1103515245u + 12345u;
        n = 1 + (seg_rng >> 16) % 3000;
    }
    return n == 0 || n > want ? want : n;
}

/* ------------------------------------------------------------ a turn */
typedef struct {
    oc_nvmf_op_t *op;
    int res;
} cqe_t;

static cqe_t cq[PEND_MAX + SQ_MAX];

/* Execute what can be: @return completions made, in cq[]. */
static unsigned execute(void)
{
    static const size_t reads[4] = {SIZE_MAX, 32768, 4096, 333};
    unsigned ncq = 0, keep = 0;

    CHECK(npend + nsq <= PEND_MAX);
    memcpy(&pend[npend], sq, nsq * sizeof(sq[0]));
    npend += nsq;
    nsq = 0;
    /* cancels first: what they cancel is done with -ECANCELED */
    for (unsigned i = 0; i < npend; i++) {
        struct io_uring_sqe *e = &pend[i];
        if (e->opcode != IORING_OP_ASYNC_CANCEL)
            continue;
        for (unsigned j = 0; j < npend; j++) {
            struct io_uring_sqe *x = &pend[j];
            if ((x->opcode == IORING_OP_RECV ||
                 x->opcode == IORING_OP_SENDMSG) && x->fd == e->fd &&
                x->user_data) {
                cq[ncq].op = (oc_nvmf_op_t *)(uintptr_t)x->user_data;
                cq[ncq++].res = -ECANCELED;
                x->opcode = IORING_OP_NOP;
                x->user_data = 0;
            }
        }
        e->opcode = IORING_OP_NOP;
        e->user_data = 0;
    }
    for (unsigned i = 0; i < npend; i++) {
        struct io_uring_sqe *e = &pend[i];
        oc_nvmf_op_t *op = (oc_nvmf_op_t *)(uintptr_t)e->user_data;
        host_t *h;
        int res = -1, done = 1;

        switch (e->opcode) {
        case IORING_OP_NOP:
            op = NULL;
            break;
        case IORING_OP_RECV:
            h = host_of_fd(e->fd);
            CHECK(h != NULL && e->len > 0);
            if (h->in_pos < h->in_len) {
                size_t n = next_seg(e->len);
                if (n > h->in_len - h->in_pos)
                    n = h->in_len - h->in_pos;
                memcpy((void *)(uintptr_t)e->addr, h->in + h->in_pos, n);
                h->in_pos += n;
                res = (int)n;
            } else if (h->eof) {
                res = 0;
            } else {
                done = 0; /* nothing to read yet */
            }
            break;
        case IORING_OP_SENDMSG: {
            const struct msghdr *m = (const void *)(uintptr_t)e->addr;
            size_t left = reads[read_mode], took = 0;
            h = host_of_fd(e->fd);
            CHECK(h != NULL && m->msg_iovlen > 0);
            for (size_t k = 0; k < m->msg_iovlen && left; k++) {
                size_t l = m->msg_iov[k].iov_len < left ? m->msg_iov[k].iov_len
                                                        : left;
                if (h->out_len + l <= OUT_MAX)
                    memcpy(h->out + h->out_len, m->msg_iov[k].iov_base, l);
                h->out_len += l;
                took += l;
                left -= l;
            }
            CHECK(took > 0);
            res = (int)took;
            break;
        }
        case IORING_OP_READ:
        case IORING_OP_READ_FIXED:
            memset((void *)(uintptr_t)e->addr, 0x5a, e->len);
            res = (int)e->len;
            break;
        case IORING_OP_WRITE:
        case IORING_OP_WRITE_FIXED:
            res = (int)e->len;
            break;
        case IORING_OP_FSYNC:
        case IORING_OP_FALLOCATE:
            res = 0;
            break;
        default:
            CHECK(!"an io_uring operation the target is not known to use");
        }
        if (!done) {
            pend[keep++] = *e;
            continue;
        }
        if (op) {
            cq[ncq].op = op;
            cq[ncq++].res = res;
        }
    }
    npend = keep;
    return ncq;
}

/* target.c's dispatch of one batch of completions */
static void dispatch(unsigned ncq)
{
    for (unsigned i = 0; i < ncq; i++) {
        oc_nvmf_op_t *op = cq[i].op;
        switch (op->kind) {
        case OC_NVMF_OP_RECV:
            oc__nvmf_conn_recv_done(op->owner, cq[i].res);
            break;
        case OC_NVMF_OP_SEND:
            oc__nvmf_conn_send_done(op->owner, cq[i].res);
            break;
        case OC_NVMF_OP_FILE: {
            oc_nvmf_cmd_t *cmd = op->owner;
            oc_nvmf_conn_t *c = cmd->conn;
            oc__nvmf_io_file_done(cmd, cq[i].res);
            oc__nvmf_conn_release_op(c);
            break;
        }
        default:
            CHECK(!"a completion of an operation we did not make");
        }
    }
}

/* after every turn: the structures a hostile stream must not bend */
static void check_conns(void)
{
    for (oc_nvmf_conn_t *c = wk.conns; c; c = c->next) {
        int n = 0;
        for (oc_nvmf_tx_t *tx = c->txq_head; tx; tx = tx->next) {
            CHECK(tx->queued);
            CHECK(++n <= 2 * OC_NVMF_CMD_SLOTS + 2); /* a list, not a ring */
            if (!tx->next)
                CHECK(tx == c->txq_tail);
        }
        CHECK(c->rx_head <= c->rx_tail && c->rx_tail <= c->rx_cap);
        CHECK(c->nfree >= 0 && c->nfree <= OC_NVMF_CMD_SLOTS);
        CHECK(c->inflight_ops >= 0);
    }
}

/* Turns until nothing moves. */
static void settle(void)
{
    for (unsigned turn = 0;; turn++) {
        unsigned ncq;
        CHECK(turn < TURNS_MAX);
        oc__nvmf_conn_flush_all(&wk);
        ncq = execute();
        if (ncq == 0 && nsq == 0)
            return;
        clock_ms++;
        dispatch(ncq);
        check_conns();
    }
}

/* every command taken is answered, waits for its data, or is held */
static void check_answered(void)
{
    for (oc_nvmf_conn_t *c = wk.conns; c; c = c->next) {
        host_t *h = host_of_fd(c->fd);
        uint64_t rsp = 0, waiting = 0;
        size_t off = 0;

        if (c->state == OC_NVMF_CONN_CLOSING || c->close_after_tx ||
            c->dr_state || h->out_len > OUT_MAX)
            continue;
        while (off + 8 <= h->out_len) {
            uint32_t plen = oc__load_le32(h->out + off + 4);
            if (h->out[off] == OC_NVMF_PDU_RSP)
                rsp++;
            off += plen;
        }
        for (int i = 0; i < OC_NVMF_CMD_SLOTS; i++)
            if (c->cmds[i].state == OC_NVMF_CMD_H2C ||
                c->cmds[i].state == OC_NVMF_CMD_HELD)
                waiting++;
        CHECK(rsp + waiting == atomic_load(&c->ncmds));
        CHECK(c->txq_head == NULL);
    }
}

/* the PDUs a controller sends; @return whether it sent a C2HTermReq */
static int check_output(const host_t *h)
{
    size_t off = 0;
    int term = 0;

    if (h->out_len > OUT_MAX)
        return 0; /* not all kept: nothing to say */
    while (off < h->out_len) {
        const uint8_t *p = h->out + off;
        uint32_t plen;
        CHECK(!term); /* nothing after a C2HTermReq */
        CHECK(h->out_len - off >= 8);
        plen = oc__load_le32(p + 4);
        CHECK(plen >= 8 && plen <= h->out_len - off);
        switch (p[0]) {
        case OC_NVMF_PDU_ICRESP:
            CHECK(off == 0 && p[2] == OC_NVMF_IC_LEN && plen == OC_NVMF_IC_LEN);
            break;
        case OC_NVMF_PDU_C2H_TERM:
            CHECK(p[2] == OC_NVMF_TERM_HLEN && plen >= OC_NVMF_TERM_HLEN &&
                  plen <= OC_NVMF_TERM_HLEN + OC_NVMF_TERM_MAX_DATA);
            CHECK(oc__load_le16(p + 8) >= 1 && oc__load_le16(p + 8) <= 6);
            term = 1;
            break;
        case OC_NVMF_PDU_RSP:
            CHECK(p[2] == OC_NVMF_RSP_HLEN);
            fuzz_nvmf_stream_accepted++;
            break;
        case OC_NVMF_PDU_C2H_DATA:
        case OC_NVMF_PDU_R2T:
            CHECK(p[2] == OC_NVMF_DATA_HLEN);
            break;
        default:
            CHECK(!"a PDU type a controller does not send");
        }
        off += plen;
    }
    return term;
}

/* the admin session of bit 5: controller 1 with two I/O queues granted */
static size_t admin_session(uint8_t *b)
{
    static fuzz_nvmf_stream_t s;
    static uint8_t connect[1024];
    const uint32_t cc[6] = {0, 0x14, (6 << 16) | (4 << 20) | 1};
    const uint32_t nq[6] = {0x07, 1 | (1 << 16)};

    memset(&s, 0, sizeof(s));
    fuzz_nvmf_stream_connect_data(connect, 0xffff);
    fuzz_nvmf_icreq(&s, 0, 0);
    fuzz_nvmf_capsule_cdw(&s, 0x7f, 0x01, 0, (const uint32_t[6]){0, 31},
                          1024, connect, 1024);
    fuzz_nvmf_capsule_cdw(&s, 0x7f, 0x00, 0, cc, 0, NULL, 0);
    fuzz_nvmf_capsule_cdw(&s, 0x09, 0, 0, nq, 0, NULL, 0);
    memcpy(b, s.b, s.n);
    return s.n;
}

void fuzz_nvmf_stream_connect_data(uint8_t d[1024], uint16_t cntlid)
{
    memset(d, 0, 1024);
    memset(d, 0x11, 16); /* host id */
    oc__store_le16(d + 16, cntlid);
    strcpy((char *)d + 256, SUBNQN);
    strcpy((char *)d + 512, HOSTNQN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t admin[4096];
    static int init;
    int term[NCONN] = {0}, open_at_eof[NCONN] = {0};
    uint64_t direct0, ddgst0;

    if (!init) {
        /* fatal PDUs are logged as warnings: keep the run quiet */
        setenv("OC_LOG", "error", 0);
#ifdef M_MMAP_THRESHOLD
        /* a connection's 131 KiB receive buffer and 128 KiB command
         * buffers from the heap, reused input after input: mapped afresh
         * each time, and filled by MALLOC_PERTURB_ (meson sets it), they
         * made the replay 60 s of page faults instead of 2 s */
        mallopt(M_MMAP_THRESHOLD, 8 << 20);
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
        init = 1;
    }
    fuzz_nvmf_stream_last_valid = 0;
    if (size < FUZZ_NVMF_STREAM_PREFIX)
        return 0;
    seg_mode = data[0] & 7;
    read_mode = (data[0] >> 3) & 3;
    seg_rng = data[1];
    target_init();
    nsq = npend = 0;
    clock_ms = 1000;
    nhosts = 0;
    direct0 = atomic_load(&wk.st.h2c_direct);
    ddgst0 = atomic_load(&wk.st.data_digest_err);
    if (data[0] & 0x20) {
        host_t *a = &hosts[nhosts++];
        memset(a, 0, sizeof(*a));
        a->in = admin;
        a->in_len = admin_session(admin);
    }
    {
        host_t *h = &hosts[nhosts++];
        memset(h, 0, sizeof(*h));
        h->in = data + FUZZ_NVMF_STREAM_PREFIX;
        h->in_len = size - FUZZ_NVMF_STREAM_PREFIX;
    }
    for (int i = 0; i < nhosts; i++) {
        hosts[i].out = outbuf[i];
        hosts[i].fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CHECK(hosts[i].fd >= 0);
        oc__nvmf_conn_accepted(&wk, hosts[i].fd);
        CHECK(conn_of_fd(hosts[i].fd) != NULL);
        if (i == 0 && nhosts == 2) /* the admin session first, whole */
            settle();
    }
    settle();
    check_answered();
    /* the hosts close their ends: everything must go */
    for (int i = 0; i < nhosts; i++) {
        open_at_eof[i] = conn_of_fd(hosts[i].fd) != NULL &&
                         conn_of_fd(hosts[i].fd)->state != OC_NVMF_CONN_CLOSING;
        hosts[i].eof = 1;
    }
    settle();
    CHECK(wk.conns == NULL);
    CHECK(npend == 0 && nsq == 0);
    CHECK(tgt.guard.nconns == 0 && tgt.guard.head == NULL);
    CHECK(tgt.ctrls == NULL); /* controllers go with their admin queue */
    CHECK(wk.flush_list == NULL);
    for (int i = 0; i < nhosts; i++)
        term[i] = check_output(&hosts[i]);
    /* a C2HTermReq ends its connection: it was not open when the host
     * closed (a fatal error closes after the TermReq has gone out) */
    for (int i = 0; i < nhosts; i++)
        CHECK(!(term[i] && open_at_eof[i]));
    fuzz_nvmf_stream_last_valid =
        !term[nhosts - 1] && open_at_eof[nhosts - 1] &&
        atomic_load(&wk.st.data_digest_err) == ddgst0 &&
        (!(data[0] & 0x40) || atomic_load(&wk.st.h2c_direct) != direct0);
    return 0;
}
