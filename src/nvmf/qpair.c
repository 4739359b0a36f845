/*
 * qpair.c — a queue pair's output and end, what the code that serves its
 * commands (admin.c, io.c), its input (conn.c) and the loop (target.c)
 * call: queue output and send it once per loop turn, a command's
 * completion (its response, and its C2HData when it read data), an R2T,
 * a fatal transport error's C2HTermReq, closing (with the admin queue,
 * its controller and that controller's I/O queues), and freeing once no
 * io_uring operation points at the connection.  It calls none of them
 * back: conn.c hands commands to admin.c and io.c, which answer here.
 *
 * Threading: the target's single loop thread only.  Lifetime: a
 * connection is freed only when no io_uring operation points at it any
 * more (inflight_ops, counting its receive, its send and its commands'
 * file operations): every completion handler ends with
 * oc__nvmf_conn_release_op(), after which it must not touch the connection.
 */
#include "target.h"
#include "util/log.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOGC OC_COMP_NVMF

static void flush_tx(oc_nvmf_conn_t *c);

/*
 * Command buffers in the ring's registered-buffer table: a Read or Write
 * of a registered buffer (READ_FIXED/WRITE_FIXED) skips pinning its pages
 * for each O_DIRECT I/O (perf, 128 KiB writes at QD32: gup_fast_fallback
 * 12% of the target's CPU, with __bio_release_pages another 1.5%).
 * Registering pins the whole 128 KiB once, on the slot's first use.
 */
int oc__nvmf_cmd_buf(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_worker_t *t = cmd->conn->w;
    struct iovec iov;
    uint16_t idx;
    int rc;

    if (cmd->buf)
        return 0;
    if (posix_memalign((void **)&cmd->buf, 4096, OC_NVMF_MAX_XFER)) {
        cmd->buf = NULL;
        return -1;
    }
    if (t->reg_off || t->reg_nfree == 0)
        return 0;
    idx = t->reg_free[--t->reg_nfree];
    iov.iov_base = cmd->buf;
    iov.iov_len = OC_NVMF_MAX_XFER;
    rc = io_uring_register_buffers_update_tag(&t->ring, idx, &iov, NULL, 1);
    if (rc != 1) { /* RLIMIT_MEMLOCK, most likely: plain reads from now on */
        t->reg_free[t->reg_nfree++] = idx;
        t->reg_off = 1;
        oc_info(LOGC, "registering a command buffer: %s (plain reads and "
                "writes from now on; raise RLIMIT_MEMLOCK to keep them "
                "registered)", strerror(rc < 0 ? -rc : EINVAL));
        return 0;
    }
    cmd->buf_reg = (uint16_t)(idx + 1);
    return 0;
}

/* no I/O uses the buffer any more (the connection has none in flight) */
static void cmd_buf_free(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_worker_t *t = cmd->conn->w;

    if (cmd->buf_reg) {
        struct iovec iov = {0};
        uint16_t idx = (uint16_t)(cmd->buf_reg - 1);
        /* an empty entry unpins the buffer before it is freed */
        if (io_uring_register_buffers_update_tag(&t->ring, idx, &iov, NULL,
                                                 1) == 1)
            t->reg_free[t->reg_nfree++] = idx;
        else /* the entry still pins it: keep both */
            cmd->buf = NULL;
        cmd->buf_reg = 0;
    }
    free(cmd->buf);
    cmd->buf = NULL;
}

static void conn_free(oc_nvmf_conn_t *c)
{
    oc_nvmf_target_t *t = c->tgt;
    oc_nvmf_worker_t *w = c->w;

    pthread_mutex_lock(&t->snap_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&t->snap_lock);
    if (c->flush_queued) {
        oc_nvmf_conn_t **pp = &w->flush_list;
        while (*pp != c)
            pp = &(*pp)->flush_next;
        *pp = c->flush_next;
    }
    close(c->fd);
    pthread_mutex_lock(&t->guard_lock);
    if (t->fd_wait) { /* out of descriptors: one is free now */
        t->fd_wait = 0;
        oc__guard_resume(&t->guard);
    }
    pthread_mutex_unlock(&t->guard_lock);
    for (int i = 0; i < OC_NVMF_CMD_SLOTS; i++)
        cmd_buf_free(&c->cmds[i]);
    free(c->rx);
    atomic_fetch_sub_explicit(&w->st.conns_active, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->st.conns_closed, 1, memory_order_relaxed);
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

/* ------------------------------------------------------------ closing */
void oc__nvmf_conn_close_by(oc_nvmf_worker_t *self, oc_nvmf_conn_t *c,
                           const char *why)
{
    if (c->w == self) {
        oc__nvmf_conn_close(c, why);
        return;
    }
    oc_debug(LOGC, "connection %llu (worker %d): asking its worker to "
             "close it: %s", (unsigned long long)c->id, c->w->idx, why);
    c->close_why = why;
    atomic_store_explicit(&c->close_req, 1, memory_order_release);
    atomic_store_explicit(&c->w->close_pending, 1, memory_order_release);
    oc__nvmf_worker_wake(c->w);
}

void oc__nvmf_conn_close(oc_nvmf_conn_t *c, const char *why)
{
    oc_nvmf_target_t *t = c->tgt;
    oc_nvmf_ctrl_t *ctrl = c->ctrl;

    if (c->state == OC_NVMF_CONN_CLOSING)
        return;
    oc_info(LOGC, "connection %llu (%s, qid %u) closed: %s",
            (unsigned long long)c->id, c->peer, c->qid, why);
    c->state = OC_NVMF_CONN_CLOSING;
    pthread_mutex_lock(&t->guard_lock);
    oc__guard_remove(&t->guard, &c->slot);
    pthread_mutex_unlock(&t->guard_lock);
    shutdown(c->fd, SHUT_RDWR);
    struct io_uring_sqe *sqe = oc__nvmf_sqe(c->w);
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
        if (c->qid == 0) {
            /* the admin queue: its controller goes with it (its admin
             * reference is dropped there) */
            if (ctrl->admin == c) {
                ctrl->admin = NULL;
                oc__nvmf_ctrl_destroy(ctrl);
            }
        } else {
            pthread_mutex_lock(&t->ctrl_lock);
            if (c->qid <= OC_NVMF_MAX_IO_QUEUES && ctrl->io[c->qid] == c)
                ctrl->io[c->qid] = NULL;
            pthread_mutex_unlock(&t->ctrl_lock);
            oc__nvmf_ctrl_put(ctrl);
        }
    }
    if (c->inflight_ops == 0)
        conn_free(c);
}

void oc__nvmf_ctrl_put(oc_nvmf_ctrl_t *ctrl)
{
    oc_nvmf_target_t *t = ctrl->tgt;
    int last;

    pthread_mutex_lock(&t->ctrl_lock);
    last = --ctrl->refs == 0;
    pthread_mutex_unlock(&t->ctrl_lock);
    if (last)
        free(ctrl);
}

/* A controller ends with its admin queue, and takes its I/O queues with
 * it: one file with oc__nvmf_conn_close(), which it calls and which
 * calls it.  Runs on the admin queue's worker.  I/O queues of other
 * workers are asked to close while ctrl_lock keeps them alive (each takes
 * itself out of io[] under it before it is freed); this worker's are
 * closed once the lock is let go. */
void oc__nvmf_ctrl_destroy(oc_nvmf_ctrl_t *ctrl)
{
    oc_nvmf_target_t *t = ctrl->tgt;
    oc_nvmf_conn_t *mine[OC_NVMF_MAX_IO_QUEUES + 1];
    oc_nvmf_worker_t *self = ctrl->w;
    int nmine = 0;

    pthread_mutex_lock(&t->ctrl_lock);
    for (oc_nvmf_ctrl_t **pp = &t->ctrls; *pp; pp = &(*pp)->next)
        if (*pp == ctrl) {
            *pp = ctrl->next;
            break;
        }
    /* no I/O from now on, whatever its queues still receive */
    atomic_store_explicit(&ctrl->csts, 0, memory_order_relaxed);
    for (int q = 1; q <= OC_NVMF_MAX_IO_QUEUES; q++) {
        oc_nvmf_conn_t *c = ctrl->io[q];
        if (!c)
            continue;
        ctrl->io[q] = NULL;
        if (c->w != self)
            oc__nvmf_conn_close_by(self, c, "its controller went away");
        else
            mine[nmine++] = c;
    }
    pthread_mutex_unlock(&t->ctrl_lock);
    for (int i = 0; i < nmine; i++)
        oc__nvmf_conn_close(mine[i], "its controller went away");
    if (ctrl->admin) {
        oc_nvmf_conn_t *c = ctrl->admin;
        ctrl->admin = NULL;
        c->ctrl = NULL;
        oc__nvmf_conn_close(c, "controller destroyed");
    }
    oc_info(LOGC, "controller %u of %s for %s destroyed", ctrl->cntlid,
            ctrl->subsys->conf ? ctrl->subsys->conf->nqn : OC_NVMF_DISCOVERY_NQN,
            ctrl->hostnqn);
    oc__nvmf_ctrl_put(ctrl); /* the admin side's reference */
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
    atomic_fetch_add_explicit(&c->w->st.pdu_fatal, 1, memory_order_relaxed);
    oc_warn_limited(&lim, LOGC, "connection %llu (%s): fatal transport "
                    "error %u at byte %u: %s; sending C2HTermReq",
                    (unsigned long long)c->id, c->peer, fes, fei, why);
    /* input stops here; the TermReq goes out after what is queued */
    memset(p, 0, OC_NVMF_TERM_HLEN);
    p[0] = OC_NVMF_PDU_C2H_TERM;
    p[2] = OC_NVMF_TERM_HLEN;
    oc__store_le32(p + 4, OC_NVMF_TERM_HLEN + n);
    oc__store_le16(p + 8, fes);
    oc__store_le32(p + 10, fei);
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
    oc_nvmf_worker_t *w = c->w;

    if (c->flush_queued)
        return;
    c->flush_queued = 1;
    c->flush_next = w->flush_list;
    w->flush_list = c;
}

void oc__nvmf_conn_flush_all(oc_nvmf_worker_t *w)
{
    while (w->flush_list) {
        oc_nvmf_conn_t *c = w->flush_list;
        w->flush_list = c->flush_next;
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
        oc_error(LOGC, "connection %llu: a piece of output queued "
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
    sqe = oc__nvmf_sqe(c->w);
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
    if (c->connected && !c->settled) { /* its Connect succeeded: no
                                        * deadline, not evictable */
        pthread_mutex_lock(&c->tgt->guard_lock);
        oc__guard_settle(&c->tgt->guard, &c->slot);
        pthread_mutex_unlock(&c->tgt->guard_lock);
        c->settled = 1;
    }
    if (cmd->status)
        atomic_fetch_add_explicit(&c->w->st.cmd_errors, 1,
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
        oc__store_le32(h + 4, OC_NVMF_DATA_HLEN + hd + cmd->data_len + dd);
        oc__store_le16(h + 8, cmd->cid);
        oc__store_le32(h + 12, 0);
        oc__store_le32(h + 16, cmd->data_len);
        if (hd)
            oc__store_le32(h + OC_NVMF_DATA_HLEN, oc__crc32c(0, h, OC_NVMF_DATA_HLEN));
        tx->iov[tx->niov].iov_base = h;
        tx->iov[tx->niov++].iov_len = OC_NVMF_DATA_HLEN + hd;
        tx->iov[tx->niov].iov_base = cmd->buf;
        tx->iov[tx->niov++].iov_len = cmd->data_len;
        if (dd) {
            oc__store_le32(cmd->ddgst, oc__crc32c(0, cmd->buf, cmd->data_len));
            tx->iov[tx->niov].iov_base = cmd->ddgst;
            tx->iov[tx->niov++].iov_len = dd;
        }
        tx->len = OC_NVMF_DATA_HLEN + hd + cmd->data_len + dd;
    }
    memset(r, 0, OC_NVMF_RSP_HLEN);
    r[0] = OC_NVMF_PDU_RSP;
    r[1] = hd ? OC_NVMF_F_HDGST : 0;
    r[2] = OC_NVMF_RSP_HLEN;
    oc__store_le32(r + 4, OC_NVMF_RSP_HLEN + hd);
    oc__nvmf_cqe(r + 8, cmd->dw0, cmd->dw1, c->sqhd, cmd->cid, cmd->status);
    if (hd)
        oc__store_le32(r + OC_NVMF_RSP_HLEN, oc__crc32c(0, r, OC_NVMF_RSP_HLEN));
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
    oc__store_le32(h + 4, OC_NVMF_DATA_HLEN + hd);
    oc__store_le16(h + 8, cmd->cid);
    oc__store_le16(h + 10, cmd->ttag);
    oc__store_le32(h + 12, cmd->h2c_got);
    oc__store_le32(h + 16, cmd->data_len - cmd->h2c_got);
    if (hd)
        oc__store_le32(h + OC_NVMF_DATA_HLEN, oc__crc32c(0, h, OC_NVMF_DATA_HLEN));
    cmd->r2t_tx.iov[0].iov_base = h;
    cmd->r2t_tx.iov[0].iov_len = OC_NVMF_DATA_HLEN + hd;
    cmd->r2t_tx.niov = 1;
    cmd->r2t_tx.len = OC_NVMF_DATA_HLEN + hd;
    cmd->r2t_tx.release_cmd = 0;
    cmd->r2t_tx.cmd = cmd;
    cmd->state = OC_NVMF_CMD_H2C;
    oc__nvmf_tx_push(c, &cmd->r2t_tx);
}
