/*
 * io.c — the NVM command set on a namespace: Read, Write (FUA), Flush,
 * Write Zeroes, Dataset Management, through io_uring on the backing file
 * or block device, with the namespace's protection (ns.c) applied on the
 * way: checksums checked on every read, encryption both ways.
 *
 * Threading: the loop thread only.  Each command is a small state machine
 * (cmd->step); at most one io_uring operation per command is in flight,
 * and it is counted in its connection's inflight_ops so that the
 * connection outlives it.  A command completes to the host only when
 * every byte is on the backing store, and, when the host asked for it
 * (FUA, Flush), after fdatasync of the data and of the checksums.
 */
#include "target.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>

#define LOGC OC_COMP_NVMF

enum {
    ST_READ = 1,
    ST_WRITE,
    ST_SYNC_DATA, /* then ST_SYNC_META */
    ST_SYNC_META,
    ST_WZ_FALLOC,
    ST_WZ_WRITE,
    ST_DSM,
};

enum { IO_FLUSH = 0x00, IO_WRITE = 0x01, IO_READ = 0x02,
       IO_WRITE_ZEROES = 0x08, IO_DSM = 0x09 };

const uint32_t oc_nvmf_lat_bounds_us[11] = {25,   50,   100,   250,   500, 1000,
                                            2500, 5000, 10000, 50000, 250000};

void oc__nvmf_ns_stats_lat(oc_nvmf_ns_t *ns, oc_nvmf_conn_t *c,
                          uint64_t ns_elapsed)
{
    uint64_t us = ns_elapsed / 1000;
    int b = 0;
    while (b < 11 && us > oc_nvmf_lat_bounds_us[b])
        b++;
    oc__nvmf_stat_add(&ns->st[c->w->idx].lat_bucket[b], 1);
    oc__nvmf_stat_add(&ns->st[c->w->idx].lat_sum_ns, ns_elapsed);
    oc__nvmf_stat_add(&ns->st[c->w->idx].lat_count, 1);
    /* the queue's own copy: only this thread writes it */
    atomic_store_explicit(&c->lat_bucket[b], c->lat_bucket[b] + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&c->lat_sum_ns, c->lat_sum_ns + ns_elapsed,
                          memory_order_relaxed);
    atomic_store_explicit(&c->lat_count, c->lat_count + 1,
                          memory_order_relaxed);
}

static void finish(oc_nvmf_cmd_t *cmd, uint16_t status)
{
    oc_nvmf_ns_t *ns = cmd->ns;

    cmd->status = status;
    if (ns) {
        uint8_t opc = oc__sqe_opc(cmd->sqe);
        if (status)
            oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].errors, 1);
        else if (opc == IO_READ || opc == IO_WRITE)
            oc__nvmf_ns_stats_lat(ns, cmd->conn,
                                 oc__nvmf_now_ns() - cmd->start_ns);
        if (opc == IO_WRITE || opc == IO_WRITE_ZEROES || opc == IO_DSM)
            cmd->data_len = 0; /* nothing goes back to the host */
    }
    oc__nvmf_cmd_complete(cmd);
}

static struct io_uring_sqe *file_sqe(oc_nvmf_cmd_t *cmd)
{
    struct io_uring_sqe *sqe = oc__nvmf_sqe(cmd->conn->w);
    if (sqe) {
        io_uring_sqe_set_data(sqe, &cmd->op);
        cmd->conn->inflight_ops++;
    }
    return sqe;
}

static void submit_rw(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_ns_t *ns = cmd->ns;
    struct io_uring_sqe *sqe = file_sqe(cmd);
    uint64_t off = (cmd->slba << ns->bs_shift) + cmd->io_done;
    int fd = ns->fixed >= 0 ? ns->fixed : ns->fd;
    uint8_t *p = cmd->buf + cmd->io_done;
    unsigned len = cmd->data_len - cmd->io_done;

    if (!sqe)
        return finish(cmd, OC_NVME_SC_INTERNAL);
    /* a registered file spares the kernel a file lookup per I/O, a
     * registered buffer the pinning of its pages (qpair.c) */
    if (cmd->buf_reg)
        oc__nvmf_stat_add(&cmd->conn->w->st.fixed_io, 1);
    if (cmd->buf_reg && cmd->step == ST_READ)
        io_uring_prep_read_fixed(sqe, fd, p, len, off, cmd->buf_reg - 1);
    else if (cmd->buf_reg)
        io_uring_prep_write_fixed(sqe, fd, p, len, off, cmd->buf_reg - 1);
    else if (cmd->step == ST_READ)
        io_uring_prep_read(sqe, fd, p, len, off);
    else
        io_uring_prep_write(sqe, fd, p, len, off);
    if (ns->fixed >= 0)
        sqe->flags |= IOSQE_FIXED_FILE;
}

static void submit_sync(oc_nvmf_cmd_t *cmd, int step)
{
    oc_nvmf_ns_t *ns = cmd->ns;
    struct io_uring_sqe *sqe;
    int fd = step == ST_SYNC_DATA ? ns->fd : ns->meta_fd;

    if (fd < 0)
        return finish(cmd, 0);
    sqe = file_sqe(cmd);
    if (!sqe)
        return finish(cmd, OC_NVME_SC_INTERNAL);
    cmd->step = (uint8_t)step;
    io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
}

/* Write Zeroes the slow way (encrypted namespaces, or no fallocate): write
 * sealed zero blocks, a buffer at a time. */
static void submit_wz_chunk(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_ns_t *ns = cmd->ns;
    uint32_t max_blocks = OC_NVMF_MAX_XFER >> ns->bs_shift;
    uint64_t left = (uint64_t)cmd->zr_hi - cmd->zr_lo;
    uint32_t n = left < max_blocks ? (uint32_t)left : max_blocks;
    uint64_t lba = cmd->slba + cmd->zr_lo;
    struct io_uring_sqe *sqe;

    memset(cmd->buf, 0, (size_t)n << ns->bs_shift);
    if (oc__nvmf_ns_seal(ns, cmd->conn->w->idx, cmd->buf, lba, n))
        return finish(cmd, OC_NVME_SC_INTERNAL);
    sqe = file_sqe(cmd);
    if (!sqe)
        return finish(cmd, OC_NVME_SC_INTERNAL);
    cmd->step = ST_WZ_WRITE;
    cmd->io_done = n; /* blocks in this chunk */
    io_uring_prep_write(sqe, ns->fd, cmd->buf, n << ns->bs_shift,
                        lba << ns->bs_shift);
}

/* DSM: deallocate range zr_lo (punching a hole), then the next. */
static void submit_dsm(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_ns_t *ns = cmd->ns;

    while (cmd->zr_lo < cmd->zr_hi) {
        const uint8_t *r = cmd->buf + 16 * cmd->zr_lo;
        uint32_t nlb = oc__load_le32(r + 4);
        uint64_t slba = oc__load_le64(r + 8);
        struct io_uring_sqe *sqe;
        if (nlb == 0) {
            cmd->zr_lo++;
            continue;
        }
        sqe = file_sqe(cmd);
        if (!sqe)
            return finish(cmd, OC_NVME_SC_INTERNAL);
        cmd->step = ST_DSM;
        io_uring_prep_fallocate(sqe, ns->fd,
                                FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                slba << ns->bs_shift,
                                (uint64_t)nlb << ns->bs_shift);
        return;
    }
    finish(cmd, 0);
}

void oc__nvmf_io_file_done(oc_nvmf_cmd_t *cmd, int res)
{
    oc_nvmf_ns_t *ns = cmd->ns;

    if (cmd->conn->state == OC_NVMF_CONN_CLOSING) {
        cmd->state = OC_NVMF_CMD_FREE;
        return;
    }
    switch (cmd->step) {
    case ST_READ:
        if (res < 0) {
            oc_error(LOGC, "%s: read at byte %llu: %s", ns->path,
                     (unsigned long long)((cmd->slba << ns->bs_shift) +
                                          cmd->io_done), strerror(-res));
            return finish(cmd, OC_NVME_SC_READ_ERROR);
        }
        if (res == 0) /* past the end of a shorter file: zeros */
            memset(cmd->buf + cmd->io_done, 0, cmd->data_len - cmd->io_done),
                res = (int)(cmd->data_len - cmd->io_done);
        cmd->io_done += (uint32_t)res;
        if (cmd->io_done < cmd->data_len)
            return submit_rw(cmd);
        {
            int bad = 0;
            uint64_t lba = oc__nvmf_ns_verify(ns, cmd->conn->w->idx, cmd->buf,
                                             cmd->slba,
                                             cmd->data_len >> ns->bs_shift,
                                             &bad);
            if (bad) {
                oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].integrity_errors, 1);
                oc_error(LOGC, "%s: namespace %u: block %llu fails its "
                         "checksum: Unrecovered Read Error to the host",
                         ns->path, ns->nsid, (unsigned long long)lba);
                return finish(cmd, OC_NVME_SC_READ_ERROR);
            }
        }
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].reads, 1);
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].read_bytes, cmd->data_len);
        return finish(cmd, 0);
    case ST_WRITE:
        if (res <= 0) {
            oc_error(LOGC, "%s: write at byte %llu: %s", ns->path,
                     (unsigned long long)((cmd->slba << ns->bs_shift) +
                                          cmd->io_done),
                     res ? strerror(-res) : "no progress");
            return finish(cmd, OC_NVME_SC_WRITE_FAULT);
        }
        cmd->io_done += (uint32_t)res;
        if (cmd->io_done < cmd->data_len)
            return submit_rw(cmd);
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].writes, 1);
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].write_bytes, cmd->data_len);
        if (cmd->fua)
            return submit_sync(cmd, ST_SYNC_DATA);
        return finish(cmd, 0);
    case ST_SYNC_DATA:
    case ST_SYNC_META:
        if (res < 0) {
            oc_error(LOGC, "%s: fdatasync: %s", ns->path, strerror(-res));
            return finish(cmd, OC_NVME_SC_WRITE_FAULT);
        }
        if (cmd->step == ST_SYNC_DATA)
            return submit_sync(cmd, ST_SYNC_META);
        return finish(cmd, 0);
    case ST_WZ_FALLOC:
        if (res < 0) { /* no fallocate here: write the zeros */
            cmd->zr_lo = 0;
            return submit_wz_chunk(cmd);
        }
        oc__nvmf_ns_mark_zero(ns, cmd->slba, cmd->zr_hi);
        if (cmd->fua)
            return submit_sync(cmd, ST_SYNC_DATA);
        return finish(cmd, 0);
    case ST_WZ_WRITE:
        if (res != (int)(cmd->io_done << ns->bs_shift)) {
            oc_error(LOGC, "%s: writing zeros: %s", ns->path,
                     res < 0 ? strerror(-res) : "short write");
            return finish(cmd, OC_NVME_SC_WRITE_FAULT);
        }
        cmd->zr_lo += cmd->io_done;
        if (cmd->zr_lo < cmd->zr_hi)
            return submit_wz_chunk(cmd);
        if (cmd->fua)
            return submit_sync(cmd, ST_SYNC_DATA);
        return finish(cmd, 0);
    case ST_DSM: {
        const uint8_t *r = cmd->buf + 16 * cmd->zr_lo;
        if (res == 0)
            oc__nvmf_ns_mark_zero(ns, oc__load_le64(r + 8), oc__load_le32(r + 4));
        /* deallocation is advisory: a file system that cannot punch holes
         * keeps the data, which stays valid */
        cmd->zr_lo++;
        return submit_dsm(cmd);
    }
    }
    finish(cmd, OC_NVME_SC_INTERNAL);
}

static oc_nvmf_ns_t *ns_find(oc_nvmf_subsys_t *s, uint32_t nsid)
{
    for (int i = 0; i < s->nns; i++)
        if (s->ns[i]->nsid == nsid)
            return s->ns[i];
    return NULL;
}

void oc__nvmf_io_exec(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_ctrl_t *ctrl = cmd->conn->ctrl;
    const uint8_t *s = cmd->sqe;
    uint8_t opc = oc__sqe_opc(s);
    uint32_t cdw12 = oc__sqe_cdw(s, 12);
    uint64_t nlb;
    oc_nvmf_ns_t *ns;

    if (!ctrl || !(ctrl->csts & 1))
        return finish(cmd, OC_NVME_SC_CMD_SEQ);
    if (ctrl->subsys->discovery)
        return finish(cmd, OC_NVME_SC_INVALID_OPCODE);
    ns = ns_find(ctrl->subsys, oc__sqe_nsid(s));
    if (opc != IO_FLUSH && opc != IO_WRITE && opc != IO_READ &&
        opc != IO_WRITE_ZEROES && opc != IO_DSM) {
        atomic_fetch_add_explicit(&cmd->conn->w->st.invalid_opcode, 1,
                                  memory_order_relaxed);
        return finish(cmd, OC_NVME_SC_INVALID_OPCODE);
    }
    if (!ns)
        return finish(cmd, OC_NVME_SC_INVALID_NS);
    cmd->ns = ns;
    cmd->slba = oc__load_le64(s + 40);
    nlb = (cdw12 & 0xffff) + 1;
    cmd->fua = (cdw12 >> 30) & 1;

    switch (opc) {
    case IO_FLUSH:
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].flushes, 1);
        return submit_sync(cmd, ST_SYNC_DATA);
    case IO_READ:
    case IO_WRITE:
        if (cmd->slba >= ns->nblocks || nlb > ns->nblocks - cmd->slba)
            return finish(cmd, OC_NVME_SC_LBA_RANGE);
        if ((nlb << ns->bs_shift) != cmd->data_len)
            return finish(cmd, OC_NVME_SC_SGL_LEN);
        cmd->io_done = 0;
        cmd->step = opc == IO_READ ? ST_READ : ST_WRITE;
        /* the block's checksum, compared when the read completes: a random
         * LBA's entry is a cache miss (perf: ~4% of the target's time,
         * all on that load); fetched now, it is there by then */
        if (opc == IO_READ && ns->crc)
            __builtin_prefetch(&ns->crc[cmd->slba]);
        if (opc == IO_WRITE &&
            oc__nvmf_ns_seal(ns, cmd->conn->w->idx, cmd->buf, cmd->slba,
                             (uint32_t)nlb))
            return finish(cmd, OC_NVME_SC_INTERNAL);
        return submit_rw(cmd);
    case IO_WRITE_ZEROES: {
        struct io_uring_sqe *sqe;
        if (cmd->slba >= ns->nblocks || nlb > ns->nblocks - cmd->slba)
            return finish(cmd, OC_NVME_SC_LBA_RANGE);
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].write_zeroes, 1);
        cmd->zr_lo = 0;
        cmd->zr_hi = (uint32_t)nlb;
        if (oc__nvmf_cmd_buf(cmd))
            return finish(cmd, OC_NVME_SC_INTERNAL);
        if (ns->xts)
            return submit_wz_chunk(cmd);
        sqe = file_sqe(cmd);
        if (!sqe)
            return finish(cmd, OC_NVME_SC_INTERNAL);
        cmd->step = ST_WZ_FALLOC;
        io_uring_prep_fallocate(sqe, ns->fd, FALLOC_FL_ZERO_RANGE,
                                cmd->slba << ns->bs_shift, nlb << ns->bs_shift);
        return;
    }
    case IO_DSM: {
        uint32_t nr = (oc__sqe_cdw(s, 10) & 0xff) + 1;
        if (cmd->data_len < nr * 16)
            return finish(cmd, OC_NVME_SC_SGL_LEN);
        for (uint32_t i = 0; i < nr; i++) {
            const uint8_t *r = cmd->buf + 16 * i;
            uint64_t sl = oc__load_le64(r + 8), n = oc__load_le32(r + 4);
            if (sl > ns->nblocks || n > ns->nblocks - sl)
                return finish(cmd, OC_NVME_SC_LBA_RANGE);
        }
        oc__nvmf_stat_add(&ns->st[cmd->conn->w->idx].dsm, 1);
        /* only Deallocate does anything; encrypted blocks are never
         * punched (zeros would decrypt to noise) */
        if (!((oc__sqe_cdw(s, 11) >> 2) & 1) || ns->xts)
            return finish(cmd, 0);
        cmd->zr_lo = 0;
        cmd->zr_hi = nr;
        return submit_dsm(cmd);
    }
    }
}
