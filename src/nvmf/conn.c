/*
 * conn.c — one NVMe/TCP connection (one queue), its input: accepting it,
 * receiving and checking PDUs, the ICReq/ICResp exchange, capsules and
 * H2CData, and handing each command to admin.c or io.c.  Its output
 * (responses, R2T, the send queue) and its end are qpair.c's.
 *
 * Threading: the target's single loop thread only; lifetime: qpair.c.
 *
 * Trust: everything received is untrusted.  pdu.c checks each header
 * before its lengths are used; here the PDU sequence is checked (data for
 * a command that asked for it, at the offset it was asked for, never more)
 * and any violation ends the connection with a C2HTermReq.
 *
 * One segment may carry several PDUs, and parse() takes them one after
 * the other; after a fatal one, nothing more is read or parsed, exactly
 * one C2HTermReq goes out after the output already queued, and the
 * connection is closed once it has left (or when the host stops reading:
 * send-timeout-ms, target.c).
 */
#include "target.h"
#include "util/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#define LOGC OC_COMP_NVMF

static void arm_recv(oc_nvmf_conn_t *c);

void oc__nvmf_conn_accepted(oc_nvmf_worker_t *w, int fd)
{
    oc_nvmf_target_t *t = w->tgt;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    oc_guard_slot_t *evict;
    oc_nvmf_conn_t *c;
    int one = 1;

    /* at the cap, the oldest connection still before its Connect makes
     * room (a flood of idle sockets delays a real host by one round
     * trip, never locks it out); with none pending, the newcomer goes
     * (both logged by the guard, rate-limited) */
    pthread_mutex_lock(&t->guard_lock);
    if (!oc__guard_admit(&t->guard, &evict)) {
        pthread_mutex_unlock(&t->guard_lock);
        close(fd);
        return;
    }
    /* the evicted one leaves the count now; another worker's is asked to
     * close while the lock still keeps it alive (target.h, Threading) */
    if (evict) {
        oc__guard_remove(&t->guard, evict);
        if (oc__nvmf_conn_of(evict)->w != w) {
            oc__nvmf_conn_close_by(w, oc__nvmf_conn_of(evict),
                                  "evicted: the connection cap was reached "
                                  "and it had not connected its queue yet");
            evict = NULL;
        }
    }
    c = calloc(1, sizeof(*c));
    if (c) { /* its owner, before the guard makes it another's to evict */
        c->tgt = t;
        c->w = w;
        c->fd = fd;
        oc__guard_add(&t->guard, &c->slot, oc__now_us());
    }
    pthread_mutex_unlock(&t->guard_lock);
    if (evict)
        oc__nvmf_conn_close(oc__nvmf_conn_of(evict),
                           "evicted: the connection cap was reached and it "
                           "had not connected its queue yet");
    if (!c) {
        oc_error(LOGC, "out of memory for a connection: closing it");
        close(fd);
        return;
    }
    c->id = atomic_fetch_add_explicit(&t->next_conn_id, 1,
                                      memory_order_relaxed) + 1;
    c->lim.max_incap = OC_NVMF_INCAP;
    c->lim.max_h2c = OC_NVMF_MAXH2C;
    c->rx_cap = oc__nvmf_pdu_max(&c->lim);
    c->rx = malloc(c->rx_cap);
    if (!c->rx) {
        oc_error(LOGC, "out of memory for a connection: closing it");
        pthread_mutex_lock(&t->guard_lock);
        oc__guard_remove(&t->guard, &c->slot);
        pthread_mutex_unlock(&t->guard_lock);
        free(c);
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* a fixed send buffer bounds what a host that stops reading can make
     * the kernel hold for it (autotuning would grow it to tcp_wmem's max);
     * 2 MiB is 16 reads of MDTS in flight, ample for LAN round trips */
    {
        int sb = 2 << 20;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
    }
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        ss.ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
        snprintf(c->peer, sizeof(c->peer), "%s:%u", a, ntohs(sin->sin_port));
    } else {
        snprintf(c->peer, sizeof(c->peer), "?");
    }
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->local,
                  sizeof(c->local));
    c->rx_op.kind = OC_NVMF_OP_RECV;
    c->rx_op.owner = c;
    c->tx_op.kind = OC_NVMF_OP_SEND;
    c->tx_op.owner = c;
    for (int i = 0; i < OC_NVMF_CMD_SLOTS; i++) {
        oc_nvmf_cmd_t *cmd = &c->cmds[i];
        cmd->conn = c;
        cmd->ttag = (uint16_t)i;
        cmd->op.kind = OC_NVMF_OP_FILE;
        cmd->op.owner = cmd;
        c->free_cmds[i] = (uint16_t)(OC_NVMF_CMD_SLOTS - 1 - i);
    }
    c->nfree = OC_NVMF_CMD_SLOTS;
    pthread_mutex_lock(&t->snap_lock);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    pthread_mutex_unlock(&t->snap_lock);
    atomic_fetch_add_explicit(&w->st.conns_accepted, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->st.conns_active, 1, memory_order_relaxed);
    oc_info(LOGC, "connection %llu from %s (worker %d)",
            (unsigned long long)c->id, c->peer, w->idx);
    arm_recv(c);
}

/* ----------------------------------------------------------- receive */
/*
 * While R2Ts are out, the input is mostly H2CData: a receive into rx as
 * large as rx would take whole PDUs there, and their data would then be
 * copied into the commands' buffers (perf, 128 KiB writes at QD32: that
 * memcpy was the target's largest user-space cost).  A receive of a few
 * headers' worth instead stops inside a large PDU's data, which the direct
 * path (h2c_try_direct) then receives straight into its buffer; a PDU known
 * to need more (a small H2CData, a capsule) is taken whole in one receive.
 */
#define RX_WINDOW 2048u
static uint32_t rx_len(const oc_nvmf_conn_t *c)
{
    uint32_t room = c->rx_cap - c->rx_tail;
    uint32_t want = c->rx_more > RX_WINDOW ? c->rx_more : RX_WINDOW;

    return (c->h2c_wait || c->rx_window) && want < room ? want : room;
}

static void arm_recv(oc_nvmf_conn_t *c)
{
    struct io_uring_sqe *sqe;

    if (c->state == OC_NVMF_CONN_CLOSING || c->rx_armed || c->close_after_tx)
        return;
    if (c->rx_head == c->rx_tail)
        c->rx_head = c->rx_tail = 0;
    sqe = oc__nvmf_sqe(c->w);
    if (!sqe) {
        oc__nvmf_conn_close(c, "submission queue full");
        return;
    }
    if (c->dr_state == 1)
        io_uring_prep_recv(sqe, c->fd, c->dr_cmd->buf + c->dr_off, c->dr_left,
                           0);
    else
        io_uring_prep_recv(sqe, c->fd, c->rx + c->rx_tail, rx_len(c), 0);
    io_uring_sqe_set_data(sqe, &c->rx_op);
    c->rx_armed = 1;
    c->inflight_ops++;
}

static void handle_icreq(oc_nvmf_conn_t *c, const uint8_t *p)
{
    uint8_t *r = c->ic_buf;
    uint8_t dgst = p[11];

    c->lim.hdgst = !!(dgst & OC_NVMF_IC_HDGST);
    c->lim.ddgst = !!(dgst & OC_NVMF_IC_DDGST);
    c->lim.ic_done = 1;
    c->state = OC_NVMF_CONN_READY;
    memset(r, 0, OC_NVMF_IC_LEN);
    r[0] = OC_NVMF_PDU_ICRESP;
    r[2] = OC_NVMF_IC_LEN;
    oc__store_le32(r + 4, OC_NVMF_IC_LEN);
    oc__store_le16(r + 8, 0);       /* PFV */
    r[10] = 0;                /* CPDA: data right after the header */
    r[11] = dgst;             /* both digests as the host asked */
    oc__store_le32(r + 12, OC_NVMF_MAXH2C);
    c->ic_tx.iov[0].iov_base = r;
    c->ic_tx.iov[0].iov_len = OC_NVMF_IC_LEN;
    c->ic_tx.niov = 1;
    c->ic_tx.len = OC_NVMF_IC_LEN;
    c->ic_tx.release_cmd = 0;
    c->ic_tx.cmd = NULL;
    oc_debug(LOGC, "connection %llu: ICReq, header digest %s, data "
             "digest %s", (unsigned long long)c->id, c->lim.hdgst ? "on" : "off",
             c->lim.ddgst ? "on" : "off");
    oc__nvmf_tx_push(c, &c->ic_tx);
}

static void cmd_exec(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;

    cmd->state = OC_NVMF_CMD_EXEC;
    /* the clock read when the capsule arrived: one per command; stored
     * only when it moved, so that queues on several workers do not bounce
     * the controller's cache line at every command */
    if (c->ctrl) {
        uint64_t ms = cmd->start_ns / 1000000;
        if (atomic_load_explicit(&c->ctrl->last_activity_ms,
                                 memory_order_relaxed) != ms)
            atomic_store_explicit(&c->ctrl->last_activity_ms, ms,
                                  memory_order_relaxed);
    }
    if (oc__sqe_opc(cmd->sqe) == 0x7f)
        oc__nvmf_fabrics_exec(cmd);
    else if (c->qid == 0)
        oc__nvmf_admin_exec(cmd);
    else
        oc__nvmf_io_exec(cmd);
}

/* A capsule's data digest did not match: the command fails with a
 * retryable transport error, the queue goes on */
static void digest_failed(oc_nvmf_conn_t *c, oc_nvmf_cmd_t *cmd)
{
    atomic_fetch_add_explicit(&c->w->st.data_digest_err, 1,
                              memory_order_relaxed);
    oc_warn(LOGC, "connection %llu: data digest error in command cid %u",
            (unsigned long long)c->id, cmd->cid);
    cmd->status = OC_NVME_SC_TRANSIENT_XPORT;
    oc__nvmf_cmd_complete(cmd);
}

/* @p have: with a direct capsule, the bytes of its data already in rx
 * (the rest is received into the command's buffer); -1 otherwise */
#define DIRECT_MIN 16384u
static void handle_capsule(oc_nvmf_conn_t *c, const uint8_t *p,
                           const oc_nvmf_pdu_info_t *in, int64_t have)
{
    const uint8_t *sqe = p + OC_NVMF_CH_LEN;
    int admin = c->qid == 0 && oc__sqe_opc(sqe) != 0x7f;
    oc_nvmf_xfer_t kind = OC_NVMF_XFER_NONE;
    oc_nvmf_cmd_t *cmd;
    uint32_t len = 0;

    if (c->nfree == 0) {
        oc__nvmf_conn_fatal(c, OC_NVMF_FES_PDU_SEQ, 0, p, in->hlen,
                           "more commands than the queue holds");
        return;
    }
    cmd = &c->cmds[c->free_cmds[--c->nfree]];
    memcpy(cmd->sqe, sqe, OC_NVME_SQE_LEN);
    cmd->cid = oc__sqe_cid(sqe);
    cmd->status = 0;
    cmd->dw0 = cmd->dw1 = 0;
    cmd->data_len = cmd->h2c_got = cmd->io_done = 0;
    cmd->step = 0;
    cmd->fua = 0;
    cmd->ns = NULL;
    cmd->state = OC_NVMF_CMD_EXEC;
    cmd->start_ns = oc__nvmf_now_ns();
    atomic_store_explicit(&c->ncmds, c->ncmds + 1, memory_order_relaxed);
    if (c->connected)
        c->sqhd = (uint16_t)((c->sqhd + 1) % ((uint32_t)c->sqsize + 1));
    /* the worker's own counters: only this thread writes them */
    oc__nvmf_stat_add(c->qid ? &c->w->st.io_cmds : &c->w->st.admin_cmds, 1);

    if (have < 0 && in->data_len && c->lim.ddgst &&
        oc__crc32c(0, p + in->data_off, in->data_len) !=
            oc__load_le32(p + in->data_off + in->data_len)) {
        digest_failed(c, cmd);
        return;
    }
    if (!c->connected && !(oc__sqe_opc(sqe) == 0x7f && sqe[4] == 0x01)) {
        atomic_fetch_add_explicit(&c->w->st.cmd_before_connect, 1,
                                  memory_order_relaxed);
        cmd->status = OC_NVME_SC_CMD_SEQ;
        oc__nvmf_cmd_complete(cmd);
        return;
    }
    cmd->status = oc__nvmf_sgl_decode(sqe, oc__nvmf_cmd_dir_write(sqe, admin),
                                     in->data_len, OC_NVMF_MAX_XFER, &kind,
                                     &len);
    if (cmd->status) {
        oc__nvmf_cmd_complete(cmd);
        return;
    }
    if (kind != OC_NVMF_XFER_NONE && oc__nvmf_cmd_buf(cmd)) {
        if (have >= 0) { /* its data is on the way: no place to put it */
            oc__nvmf_conn_fatal(c, OC_NVMF_FES_DATA_LIMIT, 0, p, in->hlen,
                               "no buffer for in-capsule data");
            return;
        }
        cmd->status = OC_NVME_SC_INTERNAL;
        oc__nvmf_cmd_complete(cmd);
        return;
    }
    cmd->data_len = len;
    switch (kind) {
    case OC_NVMF_XFER_INCAPSULE:
        if (have >= 0) {
            c->dr_cmd = cmd;
            c->dr_capsule = 1;
            c->dr_datao = 0;
            c->dr_datal = len;
            c->dr_flags = OC_NVMF_F_LAST;
            c->dr_off = (uint32_t)have;
            c->dr_left = len - (uint32_t)have;
            memcpy(cmd->buf, p + in->data_off, (size_t)have);
            cmd->state = OC_NVMF_CMD_H2C; /* data on the way (drain waits) */
            c->dr_state = 1;
            oc__nvmf_stat_add(&c->w->st.h2c_direct, 1);
            return;
        }
        memcpy(cmd->buf, p + in->data_off, len);
        cmd->h2c_got = len;
        break;
    case OC_NVMF_XFER_R2T:
        c->h2c_wait++;
        oc__nvmf_cmd_r2t(cmd);
        return;
    default:
        break;
    }
    cmd_exec(cmd);
}

/* the H2CData header against the R2T it answers; NULL: fatal error sent */
static oc_nvmf_cmd_t *h2c_validate(oc_nvmf_conn_t *c, const uint8_t *p,
                                   const oc_nvmf_pdu_info_t *in)
{
    uint16_t cccid = oc__load_le16(p + 8), ttag = oc__load_le16(p + 10);
    uint32_t datao = oc__load_le32(p + 12);
    oc_nvmf_cmd_t *cmd;

    if (ttag >= OC_NVMF_CMD_SLOTS ||
        c->cmds[ttag].state != OC_NVMF_CMD_H2C) {
        oc__nvmf_conn_fatal(c, OC_NVMF_FES_HDR_FIELD, 10, p, in->hlen,
                           "H2CData for no transfer we asked for");
        return NULL;
    }
    cmd = &c->cmds[ttag];
    if (cmd->cid != cccid) {
        oc__nvmf_conn_fatal(c, OC_NVMF_FES_HDR_FIELD, 8, p, in->hlen,
                           "H2CData command id does not match its tag");
        return NULL;
    }
    if (datao != cmd->h2c_got ||
        (uint64_t)datao + in->data_len > cmd->data_len) {
        atomic_fetch_add_explicit(&c->w->st.h2c_out_of_range, 1,
                                  memory_order_relaxed);
        oc__nvmf_conn_fatal(c, OC_NVMF_FES_DATA_RANGE, 12, p, in->hlen,
                           "H2CData outside the range of the R2T");
        return NULL;
    }
    return cmd;
}

/* all of one H2CData PDU's data is in cmd->buf */
static void h2c_finish(oc_nvmf_conn_t *c, oc_nvmf_cmd_t *cmd, uint32_t datal,
                       uint8_t flags, int digest_ok)
{
    if (!digest_ok) {
        atomic_fetch_add_explicit(&c->w->st.data_digest_err, 1,
                                  memory_order_relaxed);
        cmd->status = OC_NVME_SC_TRANSIENT_XPORT;
    }
    cmd->h2c_got += datal;
    if (cmd->h2c_got < cmd->data_len) {
        if (flags & OC_NVMF_F_LAST)
            oc__nvmf_conn_fatal(c, OC_NVMF_FES_DATA_RANGE, 1, NULL, 0,
                               "last H2CData before all data");
        return;
    }
    c->h2c_wait--;
    if (cmd->status) {
        oc__nvmf_cmd_complete(cmd);
        return;
    }
    cmd_exec(cmd);
}

static void handle_h2c(oc_nvmf_conn_t *c, const uint8_t *p,
                       const oc_nvmf_pdu_info_t *in)
{
    oc_nvmf_cmd_t *cmd = h2c_validate(c, p, in);
    int ok = 1;

    if (!cmd)
        return;
    if (c->lim.ddgst &&
        oc__crc32c(0, p + in->data_off, in->data_len) !=
            oc__load_le32(p + in->data_off + in->data_len))
        ok = 0;
    memcpy(cmd->buf + oc__load_le32(p + 12), p + in->data_off, in->data_len);
    h2c_finish(c, cmd, in->data_len, in->flags, ok);
}

/* all of the direct data (and its digest, if any) is in dr_cmd->buf */
static void direct_finish(oc_nvmf_conn_t *c, int digest_ok)
{
    oc_nvmf_cmd_t *cmd = c->dr_cmd;

    c->dr_state = 0;
    if (!c->dr_capsule) {
        h2c_finish(c, cmd, c->dr_datal, c->dr_flags, digest_ok);
        return;
    }
    c->dr_capsule = 0;
    cmd->h2c_got = c->dr_datal;
    if (!digest_ok) {
        digest_failed(c, cmd);
        return;
    }
    cmd_exec(cmd);
}

/*
 * A Write capsule with large in-capsule data whose header has arrived but
 * not all its data: the same, for the data the capsule carries (no R2T
 * round trip and no copy).  Only where the command is sure to take the
 * data (an I/O queue's Write with a valid in-capsule SGL and a free
 * slot); anything else waits for the whole PDU and is answered as before.
 */
static int capsule_try_direct(oc_nvmf_conn_t *c, const uint8_t *p,
                              uint32_t avail, const oc_nvmf_pdu_info_t *in)
{
    uint32_t have, hd = c->lim.hdgst ? OC_NVMF_DGST_LEN : 0, len;
    const uint8_t *sqe = p + OC_NVMF_CH_LEN;
    oc_nvmf_xfer_t kind;

    if (in->type != OC_NVMF_PDU_CMD || in->data_len < DIRECT_MIN ||
        in->data_off == 0 || avail < in->data_off || !c->connected ||
        c->qid == 0 || c->nfree == 0 || oc__sqe_opc(sqe) != 0x01)
        return 0;
    have = avail - in->data_off;
    if (have >= in->data_len)
        return 0;
    if (hd && oc__crc32c(0, p, in->hlen) != oc__load_le32(p + in->hlen))
        return 0; /* the ordinary path reports it */
    if (oc__nvmf_sgl_decode(sqe, 1, in->data_len, OC_NVMF_MAX_XFER, &kind,
                            &len) ||
        kind != OC_NVMF_XFER_INCAPSULE)
        return 0;
    c->rx_window = 1; /* next ones: stop in their header too */
    c->rx_head = c->rx_tail = 0; /* all that arrived belonged to this PDU */
    handle_capsule(c, p, in, have);
    return 1;
}

/*
 * A large H2CData whose header has arrived but not its data: receive the
 * data straight into the command's buffer instead of through the receive
 * buffer and a copy.  @return 1 when taken over (or a fatal error sent),
 * 0 to wait for the whole PDU the ordinary way.
 */
static int h2c_try_direct(oc_nvmf_conn_t *c, const uint8_t *p, uint32_t avail,
                          const oc_nvmf_pdu_info_t *in)
{
    uint32_t have, hd = c->lim.hdgst ? OC_NVMF_DGST_LEN : 0;
    oc_nvmf_cmd_t *cmd;

    if (in->type != OC_NVMF_PDU_H2C_DATA || in->data_len < DIRECT_MIN ||
        in->data_off == 0 || avail < in->data_off)
        return 0;
    have = avail - in->data_off;
    if (have >= in->data_len)
        return 0; /* only the digest is missing */
    if (hd && oc__crc32c(0, p, in->hlen) != oc__load_le32(p + in->hlen)) {
        atomic_fetch_add_explicit(&c->w->st.hdr_digest_err, 1,
                                  memory_order_relaxed);
        oc__nvmf_conn_fatal(c, OC_NVMF_FES_HDR_DIGEST, 0, p, in->hlen,
                           "header digest");
        return 1;
    }
    cmd = h2c_validate(c, p, in);
    if (!cmd)
        return 1;
    c->dr_cmd = cmd;
    c->dr_datao = oc__load_le32(p + 12);
    c->dr_datal = in->data_len;
    c->dr_flags = in->flags;
    c->dr_off = c->dr_datao + have;
    c->dr_left = in->data_len - have;
    memcpy(cmd->buf + c->dr_datao, p + in->data_off, have);
    c->dr_state = 1;
    oc__nvmf_stat_add(&c->w->st.h2c_direct, 1);
    c->rx_head = c->rx_tail = 0; /* all that arrived belonged to this PDU */
    return 1;
}

static void handle_pdu(oc_nvmf_conn_t *c, const uint8_t *p,
                       const oc_nvmf_pdu_info_t *in)
{
    switch (in->type) {
    case OC_NVMF_PDU_ICREQ:
        handle_icreq(c, p);
        break;
    case OC_NVMF_PDU_H2C_TERM:
        oc_warn(LOGC, "connection %llu (%s): host sent H2CTermReq, "
                "FES %u", (unsigned long long)c->id, c->peer, oc__load_le16(p + 8));
        oc__nvmf_conn_close(c, "host terminated the connection");
        break;
    case OC_NVMF_PDU_CMD:
        handle_capsule(c, p, in, -1);
        break;
    case OC_NVMF_PDU_H2C_DATA:
        handle_h2c(c, p, in);
        break;
    }
}

static void parse(oc_nvmf_conn_t *c)
{
    while (c->state != OC_NVMF_CONN_CLOSING && !c->close_after_tx &&
           c->dr_state != 1) {
        oc_nvmf_pdu_info_t in;
        const uint8_t *p = c->rx + c->rx_head;
        uint32_t avail = c->rx_tail - c->rx_head;
        oc_nvmf_pdu_rc_t rc;

        c->rx_more = 0;
        if (c->dr_state == 2) { /* the data digest after direct data */
            oc_nvmf_cmd_t *cmd = c->dr_cmd;
            if (avail < OC_NVMF_DGST_LEN)
                break;
            c->rx_head += OC_NVMF_DGST_LEN;
            direct_finish(c, oc__crc32c(0, cmd->buf + c->dr_datao,
                                        c->dr_datal) == oc__load_le32(p));
            continue;
        }
        rc = oc__nvmf_pdu_check(p, avail, &c->lim, &in);
        if (rc == OC_NVMF_PDU_NEED) {
            if (h2c_try_direct(c, p, avail, &in) ||
                capsule_try_direct(c, p, avail, &in))
                continue;
            c->rx_more = in.need - avail;
            if (c->rx_head + in.need > c->rx_cap) {
                memmove(c->rx, p, avail);
                c->rx_tail = avail;
                c->rx_head = 0;
            }
            break;
        }
        if (rc == OC_NVMF_PDU_BAD) {
            if (in.fes == OC_NVMF_FES_HDR_DIGEST)
                atomic_fetch_add_explicit(&c->w->st.hdr_digest_err, 1,
                                          memory_order_relaxed);
            oc__nvmf_conn_fatal(c, in.fes, in.fei, p, avail < 128 ? avail : 128,
                               in.why);
            break;
        }
        /* taken off the buffer before it is handled: a fatal error in
         * handling discards the rest of the input (rx_head = rx_tail =
         * 0), which the PDU's length must not be added to afterwards.
         * p stays valid: nothing receives into rx before the next
         * arm_recv() */
        c->rx_head += in.plen;
        handle_pdu(c, p, &in);
    }
}

void oc__nvmf_conn_recv_done(oc_nvmf_conn_t *c, int res)
{
    c->rx_armed = 0;
    if (c->state == OC_NVMF_CONN_CLOSING || c->close_after_tx)
        goto out;
    if (res <= 0) {
        oc__nvmf_conn_close(c, res == 0 ? "peer closed the connection"
                                       : "receive failed");
        goto out;
    }
    if (c->dr_state == 1) { /* H2CData straight into a command's buffer */
        c->dr_off += (uint32_t)res;
        c->dr_left -= (uint32_t)res;
        if (c->dr_left == 0) {
            if (c->lim.ddgst)
                c->dr_state = 2;
            else
                direct_finish(c, 1);
        }
    } else {
        c->rx_tail += (uint32_t)res;
    }
    parse(c);
    arm_recv(c);
out:
    oc__nvmf_conn_release_op(c);
}
