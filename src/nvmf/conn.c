/*
 * conn.c — one NVMe/TCP connection (one queue): receiving and checking
 * PDUs, the ICReq/ICResp exchange, capsules, R2T and H2CData, the send
 * queue, and closing.
 *
 * Threading: the target's single loop thread only.  Lifetime: a
 * connection is freed only when no io_uring operation points at it any
 * more (inflight_ops, counting its receive, its send and its commands'
 * file operations): every completion handler ends with
 * oc__nvmf_conn_release_op(), after which it must not touch the connection.
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

#define LOGC OC_COMP_APP

static void arm_recv(oc_nvmf_conn_t *c);
static void flush_tx(oc_nvmf_conn_t *c);

static void conn_free(oc_nvmf_conn_t *c)
{
    oc_nvmf_target_t *t = c->tgt;

    pthread_mutex_lock(&t->snap_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&t->snap_lock);
    if (c->flush_queued) {
        oc_nvmf_conn_t **pp = &t->flush_list;
        while (*pp != c)
            pp = &(*pp)->flush_next;
        *pp = c->flush_next;
    }
    close(c->fd);
    if (t->fd_wait) { /* out of descriptors: one is free now */
        t->fd_wait = 0;
        oc__guard_resume(&t->guard);
    }
    for (int i = 0; i < OC_NVMF_CMD_SLOTS; i++)
        free(c->cmds[i].buf);
    free(c->rx);
    atomic_fetch_sub_explicit(&t->st.conns_active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->st.conns_closed, 1, memory_order_relaxed);
    free(c);
}

void oc__nvmf_conn_release_op(oc_nvmf_conn_t *c)
{
    if (--c->inflight_ops == 0 && c->state == OC_NVMF_CONN_CLOSING)
        conn_free(c);
}

oc_nvmf_conn_t *oc__nvmf_conn_of(oc_guard_slot_t *s)
{
    return (oc_nvmf_conn_t *)(void *)((char *)s -
                                      offsetof(oc_nvmf_conn_t, slot));
}

void oc__nvmf_conn_accepted(oc_nvmf_target_t *t, int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    oc_guard_slot_t *evict;
    oc_nvmf_conn_t *c;
    int one = 1;

    /* at the cap, the oldest connection still before its Connect makes
     * room (a flood of idle sockets delays a real host by one round
     * trip, never locks it out); with none pending, the newcomer goes
     * (both logged by the guard, rate-limited) */
    if (!oc__guard_admit(&t->guard, &evict)) {
        close(fd);
        return;
    }
    if (evict)
        oc__nvmf_conn_close(oc__nvmf_conn_of(evict),
                           "evicted: the connection cap was reached and it "
                           "had not connected its queue yet");
    c = calloc(1, sizeof(*c));
    if (!c) {
        oc_error(LOGC, "nvmf: out of memory for a connection: closing it");
        close(fd);
        return;
    }
    c->tgt = t;
    c->fd = fd;
    c->id = ++t->next_conn_id;
    c->lim.max_incap = OC_NVMF_INCAP;
    c->lim.max_h2c = OC_NVMF_MAXH2C;
    c->rx_cap = oc__nvmf_pdu_max(&c->lim);
    c->rx = malloc(c->rx_cap);
    if (!c->rx) {
        oc_error(LOGC, "nvmf: out of memory for a connection: closing it");
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
    c->next = t->conns;
    if (t->conns)
        t->conns->prev = c;
    t->conns = c;
    pthread_mutex_unlock(&t->snap_lock);
    atomic_fetch_add_explicit(&t->st.conns_accepted, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->st.conns_active, 1, memory_order_relaxed);
    oc__guard_add(&t->guard, &c->slot, oc__now_us());
    oc_info(LOGC, "nvmf: connection %llu from %s", (unsigned long long)c->id,
            c->peer);
    arm_recv(c);
}

/* ------------------------------------------------------------ closing */
void oc__nvmf_conn_close(oc_nvmf_conn_t *c, const char *why)
{
    oc_nvmf_ctrl_t *ctrl = c->ctrl;

    if (c->state == OC_NVMF_CONN_CLOSING)
        return;
    oc_info(LOGC, "nvmf: connection %llu (%s, qid %u) closed: %s",
            (unsigned long long)c->id, c->peer, c->qid, why);
    c->state = OC_NVMF_CONN_CLOSING;
    oc__guard_remove(&c->tgt->guard, &c->slot);
    shutdown(c->fd, SHUT_RDWR);
    struct io_uring_sqe *sqe = oc__nvmf_sqe(c->tgt);
    if (sqe) {
        io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, 0);
    }
    /* queued output that will never go out: its commands are done */
    for (oc_nvmf_tx_t *tx = c->txq_head; tx; tx = tx->next) {
        tx->queued = 0;
        if (tx->release_cmd && tx->cmd)
            tx->cmd->state = OC_NVMF_CMD_FREE;
    }
    c->txq_head = c->txq_tail = NULL;
    if (ctrl) {
        c->ctrl = NULL;
        if (ctrl->admin == c) {
            ctrl->admin = NULL;
            oc__nvmf_ctrl_destroy(ctrl);
        } else if (c->qid <= OC_NVMF_MAX_IO_QUEUES && ctrl->io[c->qid] == c) {
            ctrl->io[c->qid] = NULL;
        }
    }
    if (c->inflight_ops == 0)
        conn_free(c);
}

void oc__nvmf_conn_fatal(oc_nvmf_conn_t *c, uint16_t fes, uint32_t fei,
                        const uint8_t *hdr, uint32_t hlen, const char *why)
{
    /* a host can make one at will, on as many connections as it likes:
     * a few lines a second, the rest counted (log.h) */
    static oc_log_limit_t lim = OC_LOG_LIMIT_INIT("fatal transport errors");
    uint8_t *p = c->term_buf;
    uint32_t n = hlen > OC_NVMF_TERM_MAX_DATA ? OC_NVMF_TERM_MAX_DATA : hlen;

    /* once per connection: the first fatal error ends it */
    if (c->state == OC_NVMF_CONN_CLOSING || c->close_after_tx)
        return;
    atomic_fetch_add_explicit(&c->tgt->st.pdu_fatal, 1, memory_order_relaxed);
    oc_warn_limited(&lim, LOGC, "nvmf: connection %llu (%s): fatal transport "
                    "error %u at byte %u: %s; sending C2HTermReq",
                    (unsigned long long)c->id, c->peer, fes, fei, why);
    /* input stops here; the TermReq goes out after what is queued */
    memset(p, 0, OC_NVMF_TERM_HLEN);
    p[0] = OC_NVMF_PDU_C2H_TERM;
    p[2] = OC_NVMF_TERM_HLEN;
    oc__put32(p + 4, OC_NVMF_TERM_HLEN + n);
    oc__put16(p + 8, fes);
    oc__put32(p + 10, fei);
    if (n)
        memcpy(p + OC_NVMF_TERM_HLEN, hdr, n);
    c->term_tx.iov[0].iov_base = p;
    c->term_tx.iov[0].iov_len = OC_NVMF_TERM_HLEN + n;
    c->term_tx.niov = 1;
    c->term_tx.len = OC_NVMF_TERM_HLEN + n;
    c->term_tx.release_cmd = 0;
    c->term_tx.cmd = NULL;
    c->rx_head = c->rx_tail = 0;
    oc__nvmf_tx_push(c, &c->term_tx);
    c->close_after_tx = 1; /* after the push: nothing is queued after it */
}

/* -------------------------------------------------------------- send */
/*
 * Output is sent once per loop turn, not as each piece is queued: a turn
 * that completes k reads of one queue then sends k responses in one
 * sendmsg (one TCP push, one wake-up of the host) instead of the first
 * alone and the other k-1 a turn later.
 */
static void want_flush(oc_nvmf_conn_t *c)
{
    oc_nvmf_target_t *t = c->tgt;

    if (c->flush_queued)
        return;
    c->flush_queued = 1;
    c->flush_next = t->flush_list;
    t->flush_list = c;
}

void oc__nvmf_conn_flush_all(oc_nvmf_target_t *t)
{
    while (t->flush_list) {
        oc_nvmf_conn_t *c = t->flush_list;
        t->flush_list = c->flush_next;
        c->flush_queued = 0;
        /* flush_tx may close c (and, with an admin queue, others: they
         * leave the list as they are freed) */
        if (c->state != OC_NVMF_CONN_CLOSING && !c->tx_armed && c->txq_head)
            flush_tx(c);
    }
}

void oc__nvmf_tx_push(oc_nvmf_conn_t *c, oc_nvmf_tx_t *tx)
{
    /* after the C2HTermReq nothing more goes out: a command whose file
     * operation completes meanwhile is done without an answer */
    if (c->state == OC_NVMF_CONN_CLOSING || c->close_after_tx) {
        if (tx->release_cmd && tx->cmd)
            tx->cmd->state = OC_NVMF_CMD_FREE;
        return;
    }
    if (tx->queued) { /* a bug of ours: end the connection, never loop */
        oc_error(LOGC, "nvmf: connection %llu: a piece of output queued "
                 "twice; closing the connection", (unsigned long long)c->id);
        oc__nvmf_conn_close(c, "internal error (output queued twice)");
        return;
    }
    tx->queued = 1;
    tx->sent = 0;
    tx->next = NULL;
    if (!c->txq_head)
        c->tx_progress_ms = oc__nvmf_now_ms();
    if (c->txq_tail)
        c->txq_tail->next = tx;
    else
        c->txq_head = tx;
    c->txq_tail = tx;
    want_flush(c);
}

static void flush_tx(oc_nvmf_conn_t *c)
{
    struct io_uring_sqe *sqe;
    int n = 0;

    for (oc_nvmf_tx_t *tx = c->txq_head; tx && n < 64; tx = tx->next) {
        size_t skip = tx->sent;
        for (int i = 0; i < tx->niov && n < 64; i++) {
            size_t l = tx->iov[i].iov_len;
            if (skip >= l) {
                skip -= l;
                continue;
            }
            c->tx_iov[n].iov_base = (uint8_t *)tx->iov[i].iov_base + skip;
            c->tx_iov[n].iov_len = l - skip;
            skip = 0;
            n++;
        }
    }
    if (n == 0)
        return;
    sqe = oc__nvmf_sqe(c->tgt);
    if (!sqe) {
        oc__nvmf_conn_close(c, "submission queue full");
        return;
    }
    memset(&c->tx_msg, 0, sizeof(c->tx_msg));
    c->tx_msg.msg_iov = c->tx_iov;
    c->tx_msg.msg_iovlen = (size_t)n;
    io_uring_prep_sendmsg(sqe, c->fd, &c->tx_msg, MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, &c->tx_op);
    c->tx_armed = 1;
    c->inflight_ops++;
}

static void cmd_free(oc_nvmf_conn_t *c, oc_nvmf_cmd_t *cmd)
{
    cmd->state = OC_NVMF_CMD_FREE;
    c->free_cmds[c->nfree++] = cmd->ttag;
}

void oc__nvmf_conn_send_done(oc_nvmf_conn_t *c, int res)
{
    size_t left;

    c->tx_armed = 0;
    if (c->state == OC_NVMF_CONN_CLOSING)
        goto out;
    if (res < 0) {
        oc__nvmf_conn_close(c, res == -EPIPE || res == -ECONNRESET
                                  ? "peer went away" : "send failed");
        goto out;
    }
    left = (size_t)res;
    if (res > 0)
        c->tx_progress_ms = oc__nvmf_now_ms();
    while (c->txq_head) {
        oc_nvmf_tx_t *tx = c->txq_head;
        size_t take = tx->len - tx->sent;
        if (take > left)
            take = left;
        tx->sent += take;
        left -= take;
        if (tx->sent < tx->len)
            break;
        c->txq_head = tx->next;
        if (!c->txq_head)
            c->txq_tail = NULL;
        tx->queued = 0;
        if (tx->release_cmd && tx->cmd)
            cmd_free(c, tx->cmd);
    }
    if (c->txq_head)
        want_flush(c);
    else if (c->close_after_tx)
        oc__nvmf_conn_close(c, "after a fatal error (C2HTermReq sent)");
out:
    oc__nvmf_conn_release_op(c);
}

/* --------------------------------------------------- responses, R2T */
void oc__nvmf_cmd_complete(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;
    uint32_t hd = c->lim.hdgst ? OC_NVMF_DGST_LEN : 0;
    uint32_t dd = c->lim.ddgst ? OC_NVMF_DGST_LEN : 0;
    oc_nvmf_tx_t *tx = &cmd->tx;
    uint8_t *r = cmd->rsp;

    if (c->state == OC_NVMF_CONN_CLOSING) {
        cmd->state = OC_NVMF_CMD_FREE;
        return;
    }
    if (c->connected) /* its Connect succeeded: no deadline, not evictable */
        oc__guard_settle(&c->tgt->guard, &c->slot);
    if (cmd->status)
        atomic_fetch_add_explicit(&c->tgt->st.cmd_errors, 1,
                                  memory_order_relaxed);
    tx->niov = 0;
    tx->len = 0;
    if (cmd->status == 0 && cmd->data_len && !oc__nvmf_cmd_dir_write(
            cmd->sqe, c->qid == 0 && oc__sqe_opc(cmd->sqe) != 0x7f)) {
        uint8_t *h = cmd->hdr;
        memset(h, 0, OC_NVMF_DATA_HLEN);
        h[0] = OC_NVMF_PDU_C2H_DATA;
        h[1] = OC_NVMF_F_LAST | (hd ? OC_NVMF_F_HDGST : 0) |
               (dd ? OC_NVMF_F_DDGST : 0);
        h[2] = OC_NVMF_DATA_HLEN;
        h[3] = (uint8_t)(OC_NVMF_DATA_HLEN + hd);
        oc__put32(h + 4, OC_NVMF_DATA_HLEN + hd + cmd->data_len + dd);
        oc__put16(h + 8, cmd->cid);
        oc__put32(h + 12, 0);
        oc__put32(h + 16, cmd->data_len);
        if (hd)
            oc__put32(h + OC_NVMF_DATA_HLEN, oc__crc32c(0, h, OC_NVMF_DATA_HLEN));
        tx->iov[tx->niov].iov_base = h;
        tx->iov[tx->niov++].iov_len = OC_NVMF_DATA_HLEN + hd;
        tx->iov[tx->niov].iov_base = cmd->buf;
        tx->iov[tx->niov++].iov_len = cmd->data_len;
        if (dd) {
            oc__put32(cmd->ddgst, oc__crc32c(0, cmd->buf, cmd->data_len));
            tx->iov[tx->niov].iov_base = cmd->ddgst;
            tx->iov[tx->niov++].iov_len = dd;
        }
        tx->len = OC_NVMF_DATA_HLEN + hd + cmd->data_len + dd;
    }
    memset(r, 0, OC_NVMF_RSP_HLEN);
    r[0] = OC_NVMF_PDU_RSP;
    r[1] = hd ? OC_NVMF_F_HDGST : 0;
    r[2] = OC_NVMF_RSP_HLEN;
    oc__put32(r + 4, OC_NVMF_RSP_HLEN + hd);
    oc__nvmf_cqe(r + 8, cmd->dw0, cmd->dw1, c->sqhd, cmd->cid, cmd->status);
    if (hd)
        oc__put32(r + OC_NVMF_RSP_HLEN, oc__crc32c(0, r, OC_NVMF_RSP_HLEN));
    tx->iov[tx->niov].iov_base = r;
    tx->iov[tx->niov++].iov_len = OC_NVMF_RSP_HLEN + hd;
    tx->len += OC_NVMF_RSP_HLEN + hd;
    tx->release_cmd = 1;
    tx->cmd = cmd;
    cmd->state = OC_NVMF_CMD_TX;
    oc__nvmf_tx_push(c, tx);
}

void oc__nvmf_cmd_r2t(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;
    uint32_t hd = c->lim.hdgst ? OC_NVMF_DGST_LEN : 0;
    uint8_t *h = cmd->r2t_hdr;

    memset(h, 0, OC_NVMF_DATA_HLEN);
    h[0] = OC_NVMF_PDU_R2T;
    h[1] = hd ? OC_NVMF_F_HDGST : 0;
    h[2] = OC_NVMF_DATA_HLEN;
    oc__put32(h + 4, OC_NVMF_DATA_HLEN + hd);
    oc__put16(h + 8, cmd->cid);
    oc__put16(h + 10, cmd->ttag);
    oc__put32(h + 12, cmd->h2c_got);
    oc__put32(h + 16, cmd->data_len - cmd->h2c_got);
    if (hd)
        oc__put32(h + OC_NVMF_DATA_HLEN, oc__crc32c(0, h, OC_NVMF_DATA_HLEN));
    cmd->r2t_tx.iov[0].iov_base = h;
    cmd->r2t_tx.iov[0].iov_len = OC_NVMF_DATA_HLEN + hd;
    cmd->r2t_tx.niov = 1;
    cmd->r2t_tx.len = OC_NVMF_DATA_HLEN + hd;
    cmd->r2t_tx.release_cmd = 0;
    cmd->r2t_tx.cmd = cmd;
    cmd->state = OC_NVMF_CMD_H2C;
    oc__nvmf_tx_push(c, &cmd->r2t_tx);
}

/* ----------------------------------------------------------- receive */
static void arm_recv(oc_nvmf_conn_t *c)
{
    struct io_uring_sqe *sqe;

    if (c->state == OC_NVMF_CONN_CLOSING || c->rx_armed || c->close_after_tx)
        return;
    if (c->rx_head == c->rx_tail)
        c->rx_head = c->rx_tail = 0;
    sqe = oc__nvmf_sqe(c->tgt);
    if (!sqe) {
        oc__nvmf_conn_close(c, "submission queue full");
        return;
    }
    if (c->dr_state == 1)
        io_uring_prep_recv(sqe, c->fd, c->dr_cmd->buf + c->dr_off, c->dr_left,
                           0);
    else
        io_uring_prep_recv(sqe, c->fd, c->rx + c->rx_tail,
                           c->rx_cap - c->rx_tail, 0);
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
    oc__put32(r + 4, OC_NVMF_IC_LEN);
    oc__put16(r + 8, 0);       /* PFV */
    r[10] = 0;                /* CPDA: data right after the header */
    r[11] = dgst;             /* both digests as the host asked */
    oc__put32(r + 12, OC_NVMF_MAXH2C);
    c->ic_tx.iov[0].iov_base = r;
    c->ic_tx.iov[0].iov_len = OC_NVMF_IC_LEN;
    c->ic_tx.niov = 1;
    c->ic_tx.len = OC_NVMF_IC_LEN;
    c->ic_tx.release_cmd = 0;
    c->ic_tx.cmd = NULL;
    oc_debug(LOGC, "nvmf: connection %llu: ICReq, header digest %s, data "
             "digest %s", (unsigned long long)c->id, c->lim.hdgst ? "on" : "off",
             c->lim.ddgst ? "on" : "off");
    oc__nvmf_tx_push(c, &c->ic_tx);
}

static void cmd_exec(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;

    cmd->state = OC_NVMF_CMD_EXEC;
    if (c->ctrl) /* the clock read when the capsule arrived: one per command */
        c->ctrl->last_activity_ms = cmd->start_ns / 1000000;
    if (oc__sqe_opc(cmd->sqe) == 0x7f)
        oc__nvmf_fabrics_exec(cmd);
    else if (c->qid == 0)
        oc__nvmf_admin_exec(cmd);
    else
        oc__nvmf_io_exec(cmd);
}

static int ensure_buf(oc_nvmf_cmd_t *cmd)
{
    if (cmd->buf)
        return 0;
    if (posix_memalign((void **)&cmd->buf, 4096, OC_NVMF_MAX_XFER)) {
        cmd->buf = NULL;
        return -1;
    }
    return 0;
}

static void handle_capsule(oc_nvmf_conn_t *c, const uint8_t *p,
                           const oc_nvmf_pdu_info_t *in)
{
    oc_nvmf_target_t *t = c->tgt;
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
    atomic_fetch_add_explicit(c->qid ? &t->st.io_cmds : &t->st.admin_cmds, 1,
                              memory_order_relaxed);

    if (in->data_len && c->lim.ddgst &&
        oc__crc32c(0, p + in->data_off, in->data_len) !=
            oc__le32(p + in->data_off + in->data_len)) {
        atomic_fetch_add_explicit(&t->st.data_digest_err, 1,
                                  memory_order_relaxed);
        oc_warn(LOGC, "nvmf: connection %llu: data digest error in command "
                "cid %u", (unsigned long long)c->id, cmd->cid);
        cmd->status = OC_NVME_SC_TRANSIENT_XPORT;
        oc__nvmf_cmd_complete(cmd);
        return;
    }
    if (!c->connected && !(oc__sqe_opc(sqe) == 0x7f && sqe[4] == 0x01)) {
        atomic_fetch_add_explicit(&t->st.cmd_before_connect, 1,
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
    if (kind != OC_NVMF_XFER_NONE && ensure_buf(cmd)) {
        cmd->status = OC_NVME_SC_INTERNAL;
        oc__nvmf_cmd_complete(cmd);
        return;
    }
    cmd->data_len = len;
    switch (kind) {
    case OC_NVMF_XFER_INCAPSULE:
        memcpy(cmd->buf, p + in->data_off, len);
        cmd->h2c_got = len;
        break;
    case OC_NVMF_XFER_R2T:
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
    uint16_t cccid = oc__le16(p + 8), ttag = oc__le16(p + 10);
    uint32_t datao = oc__le32(p + 12);
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
        atomic_fetch_add_explicit(&c->tgt->st.h2c_out_of_range, 1,
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
        atomic_fetch_add_explicit(&c->tgt->st.data_digest_err, 1,
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
            oc__le32(p + in->data_off + in->data_len))
        ok = 0;
    memcpy(cmd->buf + oc__le32(p + 12), p + in->data_off, in->data_len);
    h2c_finish(c, cmd, in->data_len, in->flags, ok);
}

/*
 * A large H2CData whose header has arrived but not its data: receive the
 * data straight into the command's buffer instead of through the receive
 * buffer and a copy.  @return 1 when taken over (or a fatal error sent),
 * 0 to wait for the whole PDU the ordinary way.
 */
#define DIRECT_MIN 16384u
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
    if (hd && oc__crc32c(0, p, in->hlen) != oc__le32(p + in->hlen)) {
        atomic_fetch_add_explicit(&c->tgt->st.hdr_digest_err, 1,
                                  memory_order_relaxed);
        oc__nvmf_conn_fatal(c, OC_NVMF_FES_HDR_DIGEST, 0, p, in->hlen,
                           "header digest");
        return 1;
    }
    cmd = h2c_validate(c, p, in);
    if (!cmd)
        return 1;
    c->dr_cmd = cmd;
    c->dr_datao = oc__le32(p + 12);
    c->dr_datal = in->data_len;
    c->dr_flags = in->flags;
    c->dr_off = c->dr_datao + have;
    c->dr_left = in->data_len - have;
    memcpy(cmd->buf + c->dr_datao, p + in->data_off, have);
    c->dr_state = 1;
    atomic_fetch_add_explicit(&c->tgt->st.h2c_direct, 1, memory_order_relaxed);
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
        oc_warn(LOGC, "nvmf: connection %llu (%s): host sent H2CTermReq, "
                "FES %u", (unsigned long long)c->id, c->peer, oc__le16(p + 8));
        oc__nvmf_conn_close(c, "host terminated the connection");
        break;
    case OC_NVMF_PDU_CMD:
        handle_capsule(c, p, in);
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

        if (c->dr_state == 2) { /* the data digest after direct data */
            oc_nvmf_cmd_t *cmd = c->dr_cmd;
            if (avail < OC_NVMF_DGST_LEN)
                break;
            c->dr_state = 0;
            c->rx_head += OC_NVMF_DGST_LEN;
            h2c_finish(c, cmd, c->dr_datal, c->dr_flags,
                       oc__crc32c(0, cmd->buf + c->dr_datao, c->dr_datal) ==
                           oc__le32(p));
            continue;
        }
        rc = oc__nvmf_pdu_check(p, avail, &c->lim, &in);
        if (rc == OC_NVMF_PDU_NEED) {
            if (h2c_try_direct(c, p, avail, &in))
                continue;
            if (c->rx_head + in.need > c->rx_cap) {
                memmove(c->rx, p, avail);
                c->rx_tail = avail;
                c->rx_head = 0;
            }
            break;
        }
        if (rc == OC_NVMF_PDU_BAD) {
            if (in.fes == OC_NVMF_FES_HDR_DIGEST)
                atomic_fetch_add_explicit(&c->tgt->st.hdr_digest_err, 1,
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
            if (c->lim.ddgst) {
                c->dr_state = 2;
            } else {
                c->dr_state = 0;
                h2c_finish(c, c->dr_cmd, c->dr_datal, c->dr_flags, 1);
            }
        }
    } else {
        c->rx_tail += (uint32_t)res;
    }
    parse(c);
    arm_recv(c);
out:
    oc__nvmf_conn_release_op(c);
}
