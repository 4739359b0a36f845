/*
 * load.c — offcore-nvmf-load: an NVMe/TCP load generator (a minimal host:
 * admin queue, Connect, CC.EN, Identify, I/O queues) for `make bench`.
 * Keeps --qd commands outstanding on each of --queues I/O queues of random
 * or sequential reads or writes and prints one JSON line (operations and
 * bytes per second, mean round trip); --verify-file checks read data.
 * Its options in full: docs/nvmf.md, "The load generator".
 *
 * Threading: one thread, non-blocking sockets and poll().  Trust: the
 * target's PDUs are length-checked before use and anything unexpected
 * ends the run with an error.
 */
#include "pdu.h"
#include "busypoll.h"
#include "util/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXQ 8
#define MAXQD 128
#define RXCAP (512 * 1024)
#define TXCAP (8 * 1024 * 1024)

typedef struct {
    int fd;
    uint8_t *rx, *tx;
    size_t rx_n, tx_head, tx_n;
    int outstanding;
    uint16_t cid;
    uint64_t sent_ns[MAXQD]; /* by command id */
    uint64_t lba[MAXQD];     /* by command id, for --verify-file */
} q_t;

static struct {
    const char *addr, *nqn, *hostnqn, *rw, *verify;
    uint32_t bs, qd, nq, poll_us;
    int cpu;
    double seconds;
    uint32_t lbads;
    uint32_t incap_max; /* the in-capsule data the target takes (IOCCSZ) */
    uint64_t nsze;
    int random, write;
} o = {.addr = "127.0.0.1:4420", .hostnqn = "nqn.2014-08.org.nvmexpress:uuid:"
       "0c0ffee0-0000-4000-8000-00000000b001", .rw = "randread", .bs = 4096,
       .qd = 32, .nq = 1, .seconds = 10, .cpu = -1};

static uint8_t *wdata, *vbuf;
static int vfd = -1;
static uint64_t verified;
static uint64_t seq_lba, rng = 0x9e3779b97f4a7c15ull;
static uint64_t lat_sum_ns, lat_n;

static void die(const char *m)
{
    fprintf(stderr, "offcore-nvmf-load: %s\n", m);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dial(void)
{
    char host[256];
    const char *c = strrchr(o.addr, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int fd, one = 1;

    if (!c || (size_t)(c - o.addr) >= sizeof(host))
        die("--addr: want IPv4:PORT");
    memcpy(host, o.addr, (size_t)(c - o.addr));
    host[c - o.addr] = 0;
    sa.sin_port = htons((uint16_t)atoi(c + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        die("--addr: want IPv4:PORT");
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
        die("cannot connect to the target");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void xsend(int fd, const void *b, size_t n)
{
    const uint8_t *p = b;
    while (n) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r <= 0)
            die("send failed");
        p += r;
        n -= (size_t)r;
    }
}

static void xrecv(int fd, void *b, size_t n)
{
    uint8_t *p = b;
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0)
            die("target closed the connection");
        p += r;
        n -= (size_t)r;
    }
}

/* blocking setup: one command, its data, its completion */
static uint16_t sync_cmd(int fd, const uint8_t sqe[64], const void *in,
                         uint32_t inlen, void *out, uint32_t outlen,
                         uint32_t *dw0)
{
    uint8_t h[8 + 64], ch[8], body[24];
    uint32_t plen = 72 + inlen;

    memset(h, 0, 8);
    h[0] = OC_NVMF_PDU_CMD;
    h[2] = 72;
    h[3] = inlen ? 72 : 0;
    oc__store_le32(h + 4, plen);
    memcpy(h + 8, sqe, 64);
    xsend(fd, h, sizeof(h));
    if (inlen)
        xsend(fd, in, inlen);
    for (;;) {
        uint32_t l;
        xrecv(fd, ch, 8);
        l = oc__load_le32(ch + 4);
        if (ch[0] == OC_NVMF_PDU_C2H_DATA) {
            uint8_t dh[16];
            uint32_t dl;
            xrecv(fd, dh, 16);
            dl = oc__load_le32(dh + 8);
            if (dl > outlen || l != 24 + dl)
                die("bad C2HData during setup");
            xrecv(fd, out, dl);
            continue;
        }
        if (ch[0] != OC_NVMF_PDU_RSP || l != 24)
            die("unexpected PDU during setup");
        xrecv(fd, body, 16);
        if (dw0)
            *dw0 = oc__load_le32(body);
        return (uint16_t)((oc__load_le16(body + 14) >> 1) & 0x7ff);
    }
}

static void sqe_init(uint8_t *s, uint8_t opc, uint32_t nsid, uint32_t len,
                     uint8_t sgl)
{
    memset(s, 0, 64);
    s[0] = opc;
    s[1] = 0x40;
    oc__store_le32(s + 4, nsid);
    oc__store_le32(s + 32, len);
    s[39] = sgl;
}

static int open_queue(uint16_t qid, uint16_t *cntlid)
{
    uint8_t ic[128] = {0}, sqe[64], d[1024] = {0};
    uint32_t dw0 = 0;
    int fd = dial();

    ic[0] = OC_NVMF_PDU_ICREQ;
    ic[2] = 128;
    oc__store_le32(ic + 4, 128);
    xsend(fd, ic, 128);
    xrecv(fd, ic, 128);
    if (ic[0] != OC_NVMF_PDU_ICRESP)
        die("no ICResp");
    memset(d, 0x5a, 16);
    oc__store_le16(d + 16, qid ? *cntlid : 0xffff);
    snprintf((char *)d + 256, 256, "%s", o.nqn);
    snprintf((char *)d + 512, 256, "%s", o.hostnqn);
    sqe_init(sqe, 0x7f, 0, 1024, OC_SGL_INCAPSULE);
    sqe[4] = 0x01;
    oc__store_le16(sqe + 42, qid);
    oc__store_le16(sqe + 44, (uint16_t)(qid ? o.qd : 31));
    if (sync_cmd(fd, sqe, d, 1024, NULL, 0, &dw0))
        die("Connect refused");
    if (!qid)
        *cntlid = (uint16_t)dw0;
    return fd;
}

static void submit(q_t *q)
{
    uint32_t nlb = o.bs >> o.lbads;
    uint64_t span = o.nsze / nlb, lba;
    int incap = o.write && o.bs <= o.incap_max;
    uint8_t *p;

    if (o.random) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        lba = (rng % span) * nlb;
    } else {
        lba = (seq_lba++ % span) * nlb;
    }
    if (q->tx_head + q->tx_n + 72 + o.bs > TXCAP) {
        memmove(q->tx, q->tx + q->tx_head, q->tx_n);
        q->tx_head = 0;
    }
    p = q->tx + q->tx_head + q->tx_n;
    memset(p, 0, 8);
    p[0] = OC_NVMF_PDU_CMD;
    p[2] = 72;
    p[3] = incap ? 72 : 0;
    oc__store_le32(p + 4, 72 + (incap ? o.bs : 0));
    sqe_init(p + 8, o.write ? 0x01 : 0x02, 1, o.bs,
             incap ? OC_SGL_INCAPSULE : OC_SGL_TRANSPORT);
    /* command ids are unique among outstanding commands: a slow one keeps
     * its id while others go round (at most MAXQD - 1 are outstanding) */
    while (q->sent_ns[q->cid % MAXQD])
        q->cid++;
    q->sent_ns[q->cid % MAXQD] = oc__now_ns();
    q->lba[q->cid % MAXQD] = lba;
    oc__store_le16(p + 10, q->cid++ % MAXQD);
    oc__store_le64(p + 48, lba);
    oc__store_le32(p + 56, nlb - 1);
    q->tx_n += 72;
    if (incap) {
        memcpy(p + 72, wdata, o.bs);
        q->tx_n += o.bs;
    }
    q->outstanding++;
}

static void h2c(q_t *q, const uint8_t *r2t)
{
    uint32_t off = oc__load_le32(r2t + 12), len = oc__load_le32(r2t + 16);
    uint8_t *p;

    if (len > o.bs || off + len > o.bs)
        die("R2T out of range");
    if (q->tx_head + q->tx_n + 24 + len > TXCAP) {
        memmove(q->tx, q->tx + q->tx_head, q->tx_n);
        q->tx_head = 0;
    }
    p = q->tx + q->tx_head + q->tx_n;
    memset(p, 0, 24);
    p[0] = OC_NVMF_PDU_H2C_DATA;
    p[1] = OC_NVMF_F_LAST;
    p[2] = 24;
    p[3] = 24;
    oc__store_le32(p + 4, 24 + len);
    memcpy(p + 8, r2t + 8, 4); /* cccid, ttag */
    oc__store_le32(p + 12, off);
    oc__store_le32(p + 16, len);
    memcpy(p + 24, wdata + off, len);
    q->tx_n += 24 + len;
}

/* --verify-file: one C2HData (no digests were asked for) against the
 * backing file at its command's offset */
static void check_data(q_t *q, const uint8_t *p, uint32_t plen)
{
    uint16_t cid = oc__load_le16(p + 8);
    uint32_t datao = oc__load_le32(p + 12), datal = oc__load_le32(p + 16);
    off_t off;

    if (p[2] != 24 || p[3] != 24 || plen != 24 + datal || datao != 0 ||
        datal != o.bs || cid >= MAXQD || !q->sent_ns[cid]) {
        fprintf(stderr, "offcore-nvmf-load: C2HData (command %u, offset %u, "
                "%u bytes, PDU %u bytes) answers no outstanding read of "
                "--bs bytes\n", cid, datao, datal, plen);
        exit(1);
    }
    off = (off_t)(q->lba[cid] << o.lbads);
    if (pread(vfd, vbuf, o.bs, off) != (ssize_t)o.bs)
        die("--verify-file: cannot read the file at the command's offset");
    if (memcmp(vbuf, p + 24, o.bs)) {
        fprintf(stderr, "offcore-nvmf-load: data of LBA %llu differs from "
                "--verify-file\n", (unsigned long long)q->lba[cid]);
        exit(1);
    }
    verified++;
}

/* parse what arrived; @return completions */
static uint64_t reap(q_t *q)
{
    uint64_t done = 0;
    size_t pos = 0;

    while (q->rx_n - pos >= 8) {
        const uint8_t *p = q->rx + pos;
        uint32_t plen = oc__load_le32(p + 4);
        if (plen < 8 || plen > RXCAP)
            die("bad PDU length from the target");
        if (q->rx_n - pos < plen)
            break;
        if (p[0] == OC_NVMF_PDU_RSP) {
            if (plen != 24)
                die("bad CapsuleResp");
            if ((oc__load_le16(p + 22) >> 1) & 0x7ff)
                die("a command failed");
            if (oc__load_le16(p + 20) >= MAXQD || !q->sent_ns[oc__load_le16(p + 20)])
                die("a response for no outstanding command");
            lat_sum_ns += oc__now_ns() - q->sent_ns[oc__load_le16(p + 20) % MAXQD];
            q->sent_ns[oc__load_le16(p + 20) % MAXQD] = 0; /* no longer outstanding */
            lat_n++;
            q->outstanding--;
            done++;
        } else if (p[0] == OC_NVMF_PDU_R2T) {
            h2c(q, p);
        } else if (p[0] == OC_NVMF_PDU_C2H_DATA && vfd >= 0) {
            check_data(q, p, plen);
        } else if (p[0] != OC_NVMF_PDU_C2H_DATA) {
            die("unexpected PDU from the target");
        }
        pos += plen;
    }
    memmove(q->rx, q->rx + pos, q->rx_n - pos);
    q->rx_n -= pos;
    return done;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"addr", 1, 0, 'a'}, {"nqn", 1, 0, 'n'}, {"hostnqn", 1, 0, 'H'},
        {"rw", 1, 0, 'r'}, {"bs", 1, 0, 'b'}, {"qd", 1, 0, 'q'},
        {"queues", 1, 0, 'Q'}, {"seconds", 1, 0, 's'}, {"poll-us", 1, 0, 'p'},
        {"verify-file", 1, 0, 'V'}, {"cpu", 1, 0, 'c'},
        {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    uint8_t sqe[64], id[4096];
    q_t q[MAXQ];
    uint16_t cntlid = 0;
    uint64_t ops = 0;
    oc_nvmf_poller_t bp = {0};
    double t0, t1;
    int c, admin;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'a': o.addr = optarg; break;
        case 'n': o.nqn = optarg; break;
        case 'H': o.hostnqn = optarg; break;
        case 'r': o.rw = optarg; break;
        case 'b': o.bs = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'q': o.qd = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'Q': o.nq = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 's': o.seconds = atof(optarg); break;
        case 'p': o.poll_us = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'V': o.verify = optarg; break;
        case 'c': o.cpu = (int)strtol(optarg, NULL, 0); break;
        default:
            printf("usage: offcore-nvmf-load --addr IP:PORT --nqn NQN "
                   "[--hostnqn NQN] [--rw randread|randwrite|read|write]\n"
                   "       [--bs BYTES (4096)] [--qd N (32)] [--queues N "
                   "(1)] [--seconds S (10)]\n"
                   "       [--poll-us N (0: sleep in poll() at once)] "
                   "[--verify-file PATH (reads: compare with PATH)]\n"
                   "       [--cpu N (run on CPU N only; default: any)]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (!o.nqn || o.qd < 1 || o.qd > MAXQD - 1 || o.nq < 1 || o.nq > MAXQ ||
        o.bs < 512 || o.bs > 128 * 1024 || o.seconds <= 0 ||
        o.poll_us > 10000)
        die("bad arguments (--help)");
    if (o.cpu >= 0) {
        cpu_set_t set;
        if (o.cpu >= CPU_SETSIZE)
            die("--cpu: no such CPU");
        CPU_ZERO(&set);
        CPU_SET(o.cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set))
            die("--cpu: not a CPU this process may run on");
    }
    o.random = !strncmp(o.rw, "rand", 4);
    o.write = strstr(o.rw, "write") != NULL;
    wdata = malloc(o.bs);
    vbuf = malloc(o.bs);
    if (!wdata || !vbuf)
        die("out of memory");
    if (o.verify) {
        if (o.write)
            die("--verify-file checks reads: use a read --rw");
        vfd = open(o.verify, O_RDONLY);
        if (vfd < 0)
            die("--verify-file: cannot open the file");
    }
    for (uint32_t i = 0; i < o.bs; i++)
        wdata[i] = (uint8_t)(i * 31 + 7);

    admin = open_queue(0, &cntlid);
    sqe_init(sqe, 0x7f, 0, 0, OC_SGL_TRANSPORT);
    sqe[4] = 0x00; /* Property Set CC: EN, IOSQES 6, IOCQES 4 */
    oc__store_le32(sqe + 44, 0x14);
    oc__store_le32(sqe + 48, 1 | (6 << 16) | (4 << 20));
    if (sync_cmd(admin, sqe, NULL, 0, NULL, 0, NULL))
        die("Property Set CC failed");
    /* writes go in the capsule when they fit IOCCSZ, as the Linux host
     * sends them; larger ones wait for an R2T */
    sqe_init(sqe, 0x06, 0, 4096, OC_SGL_TRANSPORT);
    oc__store_le32(sqe + 40, 0x01); /* CNS 1: the controller */
    if (sync_cmd(admin, sqe, NULL, 0, id, sizeof(id), NULL))
        die("Identify controller failed");
    o.incap_max = oc__load_le32(id + 1792) >= 4
                      ? oc__load_le32(id + 1792) * 16 - 64 : 0;
    sqe_init(sqe, 0x06, 1, 4096, OC_SGL_TRANSPORT);
    if (sync_cmd(admin, sqe, NULL, 0, id, sizeof(id), NULL))
        die("Identify namespace 1 failed");
    o.nsze = oc__load_le64(id);
    o.lbads = id[128 + 2];
    if (o.lbads < 9 || o.lbads > 12 || o.bs % (1u << o.lbads) || !o.nsze)
        die("namespace 1: unusable geometry for --bs");
    sqe_init(sqe, 0x09, 0, 0, OC_SGL_TRANSPORT);
    oc__store_le32(sqe + 40, 0x07);
    oc__store_le32(sqe + 44, (o.nq - 1) | ((o.nq - 1) << 16));
    if (sync_cmd(admin, sqe, NULL, 0, NULL, 0, NULL))
        die("Set Features (queues) failed");
    for (uint32_t i = 0; i < o.nq; i++) {
        memset(&q[i], 0, sizeof(q[i]));
        q[i].fd = open_queue((uint16_t)(i + 1), &cntlid);
        q[i].rx = malloc(RXCAP);
        q[i].tx = malloc(TXCAP);
        if (!q[i].rx || !q[i].tx)
            die("out of memory");
        fcntl(q[i].fd, F_SETFL, O_NONBLOCK);
        for (uint32_t k = 0; k < o.qd; k++)
            submit(&q[i]);
    }
    bp.poll_ns = o.poll_us * 1000ull;
    t0 = now();
    t1 = t0;
    while (t1 - t0 < o.seconds) {
        struct pollfd pf[MAXQ];
        int tmo = bp.poll_ns && oc__nvmf_poll_now(&bp, oc__now_ns())
                      ? 0 : 1000;
        for (uint32_t i = 0; i < o.nq; i++) {
            pf[i].fd = q[i].fd;
            pf[i].events = POLLIN | (q[i].tx_n ? POLLOUT : 0);
        }
        if (poll(pf, o.nq, tmo) < 0 && errno != EINTR)
            die("poll failed");
        for (uint32_t i = 0; i < o.nq; i++) {
            q_t *x = &q[i];
            if (pf[i].revents & (POLLERR | POLLHUP))
                die("connection lost");
            if (pf[i].revents & POLLIN) {
                ssize_t r = recv(x->fd, x->rx + x->rx_n, RXCAP - x->rx_n, 0);
                uint64_t d;
                if (r == 0 || (r < 0 && errno != EAGAIN))
                    die("target closed the connection");
                if (r > 0) {
                    x->rx_n += (size_t)r;
                    if (bp.poll_ns)
                        oc__nvmf_poll_work(&bp, oc__now_ns());
                }
                d = reap(x);
                ops += d;
                while (d--)
                    submit(x);
            }
            /* what was just queued goes now, not after another poll() */
            if (x->tx_n) {
                ssize_t r = send(x->fd, x->tx + x->tx_head, x->tx_n,
                                 MSG_NOSIGNAL);
                if (r > 0) {
                    x->tx_head += (size_t)r;
                    x->tx_n -= (size_t)r;
                    if (!x->tx_n)
                        x->tx_head = 0;
                } else if (r < 0 && errno != EAGAIN) {
                    die("send failed");
                }
            }
        }
        t1 = now();
    }
    printf("{\"tool\":\"offcore-nvmf-load\",\"rw\":\"%s\",\"bs\":%u,"
           "\"qd\":%u,\"queues\":%u,\"seconds\":%.3f,\"ops\":%llu,"
           "\"iops\":%.0f,\"MBps\":%.1f,\"lat_us\":%.1f,\"poll_us\":%u,"
           "\"verified\":%llu,\"poll_backoffs\":%llu}\n",
           o.rw, o.bs, o.qd, o.nq, t1 - t0, (unsigned long long)ops,
           ops / (t1 - t0), ops * (double)o.bs / (t1 - t0) / 1e6,
           lat_n ? lat_sum_ns / 1e3 / (double)lat_n : 0.0, o.poll_us,
           (unsigned long long)verified, (unsigned long long)bp.backoffs);
    for (uint32_t i = 0; i < o.nq; i++) {
        close(q[i].fd);
        free(q[i].rx);
        free(q[i].tx);
    }
    close(admin);
    free(wdata);
    return 0;
}
