/*
 * admin.c — Fabrics commands (Connect, Property Get/Set) and the admin
 * command set: Identify, Get Log Page (with the discovery log), Set/Get
 * Features, Keep Alive, Async Event Request; a controller's creation
 * (Connect; qpair.c destroys it with its admin queue).
 *
 * Threading: the loop thread only.  Trust: the host's command fields are
 * untrusted: every field is range-checked and answered with the NVMe
 * status the specification names for it (NVMe Base 2.0 and NVMe over
 * Fabrics 1.1); the data it returns never exceeds the length the host's
 * SGL announced.
 */
#include "target.h"
#include "util/log.h"

#include <stdlib.h>

#define LOGC OC_COMP_NVMF

enum {
    ADM_GET_LOG = 0x02,
    ADM_IDENTIFY = 0x06,
    ADM_ABORT = 0x08,
    ADM_SET_FEAT = 0x09,
    ADM_GET_FEAT = 0x0a,
    ADM_AER = 0x0c,
    ADM_KEEP_ALIVE = 0x18,
};
enum { FCT_PROP_SET = 0x00, FCT_CONNECT = 0x01, FCT_PROP_GET = 0x04 };
enum { FEAT_NUM_QUEUES = 0x07, FEAT_ASYNC_EVENT = 0x0b, FEAT_KATO = 0x0f,
       FEAT_VWC = 0x06, FEAT_ARB = 0x01 };
enum { REG_CAP = 0x00, REG_VS = 0x08, REG_CC = 0x14, REG_CSTS = 0x1c };

#define NVME_VS_1_3 0x00010300u

static void done(oc_nvmf_cmd_t *cmd, uint16_t status)
{
    cmd->status = status;
    oc__nvmf_cmd_complete(cmd);
}

static void put_str(uint8_t *dst, size_t n, const char *s)
{
    size_t l = strlen(s);
    memset(dst, ' ', n);
    memcpy(dst, s, l < n ? l : n);
}

/* ------------------------------------------------------- controllers */
static int host_allowed(const oc_nvmf_subsys_t *s, const char *hostnqn)
{
    if (s->discovery || s->conf->allow_any)
        return 1;
    for (int i = 0; i < s->conf->nhosts; i++)
        if (!strcmp(s->conf->hosts[i], hostnqn))
            return 1;
    return 0;
}

/* copy a fixed-size NQN field out as a string; -1 if not NUL-terminated */
static int nqn_field(char *dst, const uint8_t *src)
{
    size_t l = strnlen((const char *)src, 256);
    if (l == 256 || l == 0 || l > OC_NVMF_NQN_MAX)
        return -1;
    memcpy(dst, src, l);
    dst[l] = 0;
    return 0;
}

#define IPO_SQE(off) (off)
#define IPO_DATA(off) ((1u << 16) | (off))

static void connect_reject(oc_nvmf_cmd_t *cmd, uint16_t sc, uint32_t ipo,
                           const char *why)
{
    atomic_fetch_add_explicit(&cmd->conn->w->st.connect_rejected, 1, memory_order_relaxed);
    oc_warn(LOGC, "connection %llu (%s): Connect rejected: %s",
            (unsigned long long)cmd->conn->id, cmd->conn->peer, why);
    cmd->dw0 = ipo;
    done(cmd, sc);
}

static void do_connect(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;
    oc_nvmf_target_t *t = c->tgt;
    const uint8_t *s = cmd->sqe, *d = cmd->buf;
    uint16_t recfmt = oc__load_le16(s + 40), qid = oc__load_le16(s + 42),
             sqsize = oc__load_le16(s + 44);
    uint32_t kato = oc__load_le32(s + 48);
    char subnqn[OC_NVMF_NQN_MAX + 1], hostnqn[OC_NVMF_NQN_MAX + 1];
    oc_nvmf_subsys_t *sub;
    uint16_t cntlid;

    if (c->connected)
        return done(cmd, OC_NVME_SC_CMD_SEQ);
    if (cmd->data_len != 1024)
        return connect_reject(cmd, OC_NVME_SC_SGL_LEN, 0,
                              "Connect data is not 1024 bytes");
    if (recfmt != 0)
        return connect_reject(cmd, OC_NVME_SC_CONNECT_FORMAT, IPO_SQE(40),
                              "record format");
    if (nqn_field(subnqn, d + 256))
        return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_DATA(256),
                              "subsystem NQN malformed");
    if (nqn_field(hostnqn, d + 512))
        return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_DATA(512),
                              "host NQN malformed");
    cntlid = oc__load_le16(d + 16);
    sub = oc__nvmf_subsys_find(t, subnqn);
    if (!sub)
        return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_DATA(256),
                              "no such subsystem");
    if (!host_allowed(sub, hostnqn)) {
        atomic_fetch_add_explicit(&c->w->st.host_denied, 1, memory_order_relaxed);
        oc_warn(LOGC, "host %s may not use %s", hostnqn, subnqn);
        return connect_reject(cmd, OC_NVME_SC_CONNECT_HOST, IPO_DATA(512),
                              "host not allowed");
    }
    if (sqsize == 0 || sqsize > OC_NVMF_QUEUE_DEPTH - 1)
        return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_SQE(44),
                              "queue size");

    if (qid == 0) {
        oc_nvmf_ctrl_t *ctrl;
        if (cntlid != 0xffff)
            return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_DATA(16),
                                  "admin Connect must ask for a dynamic "
                                  "controller (0xFFFF)");
        ctrl = calloc(1, sizeof(*ctrl));
        if (!ctrl)
            return done(cmd, OC_NVME_SC_INTERNAL);
        ctrl->tgt = t;
        ctrl->w = c->w;
        ctrl->subsys = sub;
        memcpy(ctrl->hostnqn, hostnqn, sizeof(hostnqn));
        memcpy(ctrl->hostid, d, 16);
        ctrl->kato_ms = sub->discovery && kato == 0 ? 0 : kato;
        ctrl->admin = c;
        ctrl->refs = 1;
        atomic_store_explicit(&ctrl->last_activity_ms, oc__nvmf_now_ms(),
                              memory_order_relaxed);
        pthread_mutex_lock(&t->ctrl_lock);
        if (sub->next_cntlid == 0 || sub->next_cntlid > 0xffef)
            sub->next_cntlid = 1;
        ctrl->cntlid = sub->next_cntlid++;
        ctrl->next = t->ctrls;
        t->ctrls = ctrl;
        pthread_mutex_unlock(&t->ctrl_lock);
        c->ctrl = ctrl;
        cmd->dw0 = ctrl->cntlid;
        oc_info(LOGC, "host %s connected to %s: controller %u "
                "(connection %llu, %s, queue size %u, keep-alive %u ms)",
                hostnqn, subnqn, ctrl->cntlid, (unsigned long long)c->id,
                c->peer, sqsize + 1, kato);
    } else {
        /* the controller may live on another worker: found, checked and
         * joined under ctrl_lock (target.h, Threading) */
        oc_nvmf_ctrl_t *ctrl;
        pthread_mutex_lock(&t->ctrl_lock);
        for (ctrl = t->ctrls; ctrl; ctrl = ctrl->next)
            if (ctrl->subsys == sub && ctrl->cntlid == cntlid)
                break;
        if (!ctrl || strcmp(ctrl->hostnqn, hostnqn) ||
            memcmp(ctrl->hostid, d, 16)) {
            pthread_mutex_unlock(&t->ctrl_lock);
            return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_DATA(16),
                                  "no such controller for this host");
        }
        if (!(atomic_load(&ctrl->cc) & 1) || !ctrl->nr_io_queues ||
            qid > ctrl->nr_io_queues || qid > OC_NVMF_MAX_IO_QUEUES ||
            ctrl->io[qid]) {
            pthread_mutex_unlock(&t->ctrl_lock);
            return connect_reject(cmd, OC_NVME_SC_CONNECT_PARAM, IPO_SQE(42),
                                  "queue id not granted or already connected");
        }
        ctrl->io[qid] = c;
        ctrl->refs++;
        pthread_mutex_unlock(&t->ctrl_lock);
        c->ctrl = ctrl;
        oc_debug(LOGC, "controller %u: I/O queue %u on connection %llu",
                 ctrl->cntlid, qid, (unsigned long long)c->id);
    }
    c->qid = qid;
    c->sqsize = sqsize;
    c->sqhd = 1 % (sqsize + 1);
    c->connected = 1;
    pthread_mutex_lock(&t->snap_lock);
    c->snap_qid = qid;
    c->snap_cntlid = c->ctrl->cntlid;
    snprintf(c->snap_host, sizeof(c->snap_host), "%s", hostnqn);
    snprintf(c->snap_sub, sizeof(c->snap_sub), "%s", subnqn);
    snprintf(c->snap_digest, sizeof(c->snap_digest), "%s",
             c->lim.hdgst && c->lim.ddgst ? "header+data"
             : c->lim.hdgst ? "header" : c->lim.ddgst ? "data" : "none");
    c->snap_connected = 1;
    pthread_mutex_unlock(&t->snap_lock);
    atomic_fetch_add_explicit(&c->w->st.connect_ok, 1, memory_order_relaxed);
    done(cmd, 0);
}

static uint64_t reg_cap(void)
{
    return (uint64_t)(OC_NVMF_QUEUE_DEPTH - 1) /* MQES, 0-based */
           | (1ull << 16)                        /* CQR */
           | (30ull << 24)                       /* TO: 15 s */
           | (1ull << 37);                       /* CSS: NVM command set */
}

void oc__nvmf_fabrics_exec(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;
    oc_nvmf_ctrl_t *ctrl = c->ctrl;
    const uint8_t *s = cmd->sqe;
    uint8_t fct = s[4], size = s[40] & 7;
    uint32_t off = oc__load_le32(s + 44);
    uint64_t v;

    if (fct == FCT_CONNECT)
        return do_connect(cmd);
    if (c->qid != 0 || !ctrl) /* properties live on the admin queue */
        return done(cmd, OC_NVME_SC_INVALID_OPCODE);
    switch (fct) {
    case FCT_PROP_GET:
        if (off == REG_CAP && size == 1)
            v = reg_cap();
        else if (off == REG_VS && size == 0)
            v = NVME_VS_1_3;
        else if (off == REG_CC && size == 0)
            v = ctrl->cc;
        else if (off == REG_CSTS && size == 0)
            v = ctrl->csts;
        else
            return done(cmd, OC_NVME_SC_INVALID_FIELD);
        cmd->dw0 = (uint32_t)v;
        cmd->dw1 = (uint32_t)(v >> 32);
        return done(cmd, 0);
    case FCT_PROP_SET:
        if (off != REG_CC || size != 0)
            return done(cmd, OC_NVME_SC_INVALID_FIELD);
        v = oc__load_le64(s + 48);
        {
            uint32_t cc = (uint32_t)v, old = ctrl->cc;
            if ((cc & 1) && !(old & 1)) {
                /* enable: I/O entry sizes must be the standard ones */
                if (((cc >> 16) & 0xf) != 6 || ((cc >> 20) & 0xf) != 4 ||
                    ((cc >> 7) & 0xf) != 0)
                    ctrl->csts |= 2; /* CFS: a configuration we cannot run */
                else
                    ctrl->csts |= 1; /* RDY */
            } else if (!(cc & 1) && (old & 1)) {
                ctrl->csts &= ~1u;
            }
            if ((cc >> 14) & 3) /* shutdown notification: nothing to flush */
                ctrl->csts = (ctrl->csts & ~0xcu) | (2u << 2);
            ctrl->cc = cc;
        }
        return done(cmd, 0);
    default:
        atomic_fetch_add_explicit(&c->w->st.invalid_opcode, 1,
                                  memory_order_relaxed);
        return done(cmd, OC_NVME_SC_INVALID_OPCODE);
    }
}

/* ----------------------------------------------------------- identify */
static void id_ctrl(oc_nvmf_cmd_t *cmd, uint8_t *b)
{
    oc_nvmf_ctrl_t *ctrl = cmd->conn->ctrl;
    oc_nvmf_subsys_t *s = ctrl->subsys;
    const char *nqn = s->discovery ? OC_NVMF_DISCOVERY_NQN : s->conf->nqn;
    uint32_t nn = 0;

    for (int i = 0; i < s->nns; i++)
        if (s->ns[i]->nsid > nn)
            nn = s->ns[i]->nsid;
    put_str(b + 4, 20, s->serial);
    put_str(b + 24, 40, "offcore-nvmf");
    put_str(b + 64, 8, "0.1");
    b[72] = 6;                          /* RAB */
    b[76] = s->discovery ? 0 : 0x02;    /* CMIC: several controllers */
    b[77] = OC_NVMF_MDTS;
    oc__store_le16(b + 78, ctrl->cntlid);
    oc__store_le32(b + 80, NVME_VS_1_3);
    oc__store_le32(b + 96, 1);                /* CTRATT: 128-bit host id */
    b[111] = s->discovery ? 2 : 1;      /* CNTRLTYPE */
    b[258] = 3;                         /* ACL */
    b[259] = OC_NVMF_AERL;
    b[260] = 0x03;                      /* FRMW: one slot, read-only */
    b[261] = 0x04;                      /* LPA: extended Get Log Page data */
    oc__store_le16(b + 320, 10);              /* KAS: 1 s granularity */
    b[512] = 0x66;                      /* SQES */
    b[513] = 0x44;                      /* CQES */
    oc__store_le16(b + 514, OC_NVMF_QUEUE_DEPTH); /* MAXCMD */
    oc__store_le32(b + 516, nn);
    if (!s->discovery) {
        oc__store_le16(b + 520, 0x0c);        /* ONCS: DSM, Write Zeroes */
        b[525] = 0x01;                  /* VWC present: Flush honoured */
    }
    oc__store_le32(b + 536, 1u | (1u << 20)); /* SGLS: SGLs, offsets in capsule */
    memcpy(b + 768, nqn, strlen(nqn));
    oc__store_le32(b + 1792, (OC_NVME_SQE_LEN + OC_NVMF_INCAP) / 16); /* IOCCSZ */
    oc__store_le32(b + 1796, 1);              /* IORCSZ */
    b[1803] = 1;                        /* MSDBD */
}

static oc_nvmf_ns_t *ns_find(oc_nvmf_subsys_t *s, uint32_t nsid)
{
    for (int i = 0; i < s->nns; i++)
        if (s->ns[i]->nsid == nsid)
            return s->ns[i];
    return NULL;
}

static uint16_t id_ns(oc_nvmf_ns_t *ns, uint8_t *b)
{
    oc__store_le64(b, ns->nblocks);          /* NSZE */
    oc__store_le64(b + 8, ns->nblocks);      /* NCAP */
    oc__store_le64(b + 16, ns->nblocks);     /* NUSE */
    b[24] = 0;                         /* NSFEAT */
    b[25] = 0;                         /* NLBAF: one format */
    b[26] = 0;                         /* FLBAS */
    b[30] = 1;                         /* NMIC: may be shared */
    memcpy(b + 104, ns->uuid, 16);     /* NGUID */
    b[128 + 2] = (uint8_t)ns->bs_shift; /* LBAF0: LBADS */
    return 0;
}

static void identify(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_subsys_t *s = cmd->conn->ctrl->subsys;
    uint8_t cns = cmd->sqe[40], csi = cmd->sqe[47];
    uint32_t nsid = oc__sqe_nsid(cmd->sqe);
    uint8_t *b = cmd->buf;
    oc_nvmf_ns_t *ns;

    if (cmd->data_len < 4096)
        return done(cmd, OC_NVME_SC_SGL_LEN);
    memset(b, 0, cmd->data_len);
    switch (cns) {
    case 0x00: /* namespace */
        if (s->discovery)
            return done(cmd, OC_NVME_SC_INVALID_FIELD);
        ns = ns_find(s, nsid);
        if (!ns)
            return done(cmd, nsid == 0 || nsid == 0xffffffffu
                                 ? OC_NVME_SC_INVALID_NS : 0); /* zeros: inactive */
        return done(cmd, id_ns(ns, b));
    case 0x01:
        id_ctrl(cmd, b);
        return done(cmd, 0);
    case 0x02: { /* active namespace ids above nsid, ascending */
        uint32_t list[OC_NVMF_MAX_NS];
        int n = 0;
        if (nsid >= 0xfffffffeu)
            return done(cmd, OC_NVME_SC_INVALID_NS);
        for (int i = 0; i < s->nns; i++)
            if (s->ns[i]->nsid > nsid)
                list[n++] = s->ns[i]->nsid;
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && list[j - 1] > list[j]; j--) {
                uint32_t x = list[j];
                list[j] = list[j - 1];
                list[j - 1] = x;
            }
        for (int i = 0; i < n; i++)
            oc__store_le32(b + 4 * i, list[i]);
        return done(cmd, 0);
    }
    case 0x03: /* namespace identification descriptors */
        ns = ns_find(s, nsid);
        if (!ns)
            return done(cmd, OC_NVME_SC_INVALID_NS);
        b[0] = 2;  /* NGUID */
        b[1] = 16;
        memcpy(b + 4, ns->uuid, 16);
        b[20] = 3; /* UUID */
        b[21] = 16;
        memcpy(b + 24, ns->uuid, 16);
        b[40] = 4; /* CSI: NVM */
        b[41] = 1;
        b[44] = 0;
        return done(cmd, 0);
    case 0x06: /* I/O command set specific controller: NVM, no limits */
        if (csi != 0)
            return done(cmd, OC_NVME_SC_INVALID_FIELD);
        return done(cmd, 0);
    default:
        return done(cmd, OC_NVME_SC_INVALID_FIELD);
    }
}

/* -------------------------------------------------------- log pages */
/* TRADDR: the advertised address; when listening on every address with
 * none advertised, the address this host reached us on */
static uint32_t discovery_log(oc_nvmf_target_t *t, const oc_nvmf_conn_t *c,
                              uint8_t *page, size_t cap)
{
    const char *traddr =
        !strcmp(t->traddr, "0.0.0.0") && c->local[0] ? c->local : t->traddr;
    uint32_t n = 0;

    memset(page, 0, cap);
    for (int i = 1; i <= t->nsubsys; i++) {
        oc_nvmf_subsys_t *s = &t->subsys[i];
        uint8_t *e = page + 1024 + 1024 * n;
        char svc[32];
        if ((size_t)(1024 + 1024 * (n + 1)) > cap)
            break;
        e[0] = 3;                     /* TRTYPE: TCP */
        e[1] = 1;                     /* ADRFAM: IPv4 */
        e[2] = 2;                     /* SUBTYPE: NVM subsystem */
        e[3] = 0x02;                  /* TREQ: secure channel not required */
        oc__store_le16(e + 4, 1);           /* PORTID */
        oc__store_le16(e + 6, 0xffff);      /* CNTLID: dynamic */
        oc__store_le16(e + 8, 32);          /* ASQSZ */
        snprintf(svc, sizeof(svc), "%u", t->port);
        put_str(e + 32, 32, svc);
        memcpy(e + 256, s->conf->nqn, strlen(s->conf->nqn));
        put_str(e + 512, 256, traddr);
        e[768] = 0;                   /* TSAS: no security */
        n++;
    }
    oc__store_le64(page, 1);                /* GENCTR: entries never change */
    oc__store_le64(page + 8, n);
    oc__store_le16(page + 16, 0);
    return 1024 + 1024 * n;
}

static void get_log(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_conn_t *c = cmd->conn;
    oc_nvmf_subsys_t *s = c->ctrl->subsys;
    const uint8_t *q = cmd->sqe;
    uint8_t lid = q[40];
    uint32_t numd =
        ((uint32_t)oc__load_le16(q + 42) | ((uint32_t)oc__load_le16(q + 44) << 16)) + 1;
    uint64_t off = oc__load_le64(q + 48);
    uint64_t len = (uint64_t)numd * 4;
    static uint8_t page[1024 + 1024 * OC_NVMF_MAX_SUBSYS];
    uint32_t plen;

    if (len > cmd->data_len || (off & 3))
        return done(cmd, OC_NVME_SC_INVALID_FIELD);
    memset(page, 0, 4096);
    switch (lid) {
    case 0x70:
        if (!s->discovery)
            return done(cmd, OC_NVME_SC_INVALID_LOG);
        plen = discovery_log(c->tgt, c, page, sizeof(page));
        break;
    case 0x01: /* error information: no entries */
        plen = 64;
        break;
    case 0x02: /* SMART / health: all zero, temperature 300 K */
        if (s->discovery)
            return done(cmd, OC_NVME_SC_INVALID_LOG);
        oc__store_le16(page + 1, 300);
        plen = 512;
        break;
    case 0x03: /* firmware slot: slot 1 active */
        if (s->discovery)
            return done(cmd, OC_NVME_SC_INVALID_LOG);
        page[0] = 1;
        put_str(page + 8, 8, "0.1");
        plen = 512;
        break;
    case 0x04: /* changed namespace list: none */
        if (s->discovery)
            return done(cmd, OC_NVME_SC_INVALID_LOG);
        plen = 4096;
        break;
    default:
        return done(cmd, OC_NVME_SC_INVALID_LOG);
    }
    if (off > plen)
        return done(cmd, OC_NVME_SC_INVALID_FIELD);
    memset(cmd->buf, 0, cmd->data_len);
    memcpy(cmd->buf, page + off, plen - off < len ? plen - off : len);
    done(cmd, 0);
}

/* ---------------------------------------------------------- features */
static void features(oc_nvmf_cmd_t *cmd, int set)
{
    oc_nvmf_ctrl_t *ctrl = cmd->conn->ctrl;
    uint8_t fid = cmd->sqe[40];
    uint32_t dw11 = oc__sqe_cdw(cmd->sqe, 11);

    if (set && ((oc__sqe_cdw(cmd->sqe, 10) >> 31) & 1))
        return done(cmd, OC_SC(1, 0x0d)); /* saving: not supported */
    if (!set && ((cmd->sqe[41] >> 0) & 7) == 3) { /* SEL: capabilities */
        cmd->dw0 = 0x4; /* changeable */
        return done(cmd, 0);
    }
    switch (fid) {
    case FEAT_NUM_QUEUES:
        if (ctrl->subsys->discovery)
            return done(cmd, OC_NVME_SC_INVALID_FIELD);
        if (set) {
            uint32_t nsq = (dw11 & 0xffff) + 1, ncq = (dw11 >> 16) + 1;
            uint32_t n = nsq < ncq ? nsq : ncq;
            if ((dw11 & 0xffff) == 0xffff || (dw11 >> 16) == 0xffff)
                return done(cmd, OC_NVME_SC_INVALID_FIELD);
            if (n > OC_NVMF_MAX_IO_QUEUES)
                n = OC_NVMF_MAX_IO_QUEUES;
            /* I/O queues connect on other workers: under ctrl_lock */
            pthread_mutex_lock(&ctrl->tgt->ctrl_lock);
            if (ctrl->nr_io_queues && ctrl->io[1]) {
                pthread_mutex_unlock(&ctrl->tgt->ctrl_lock);
                return done(cmd, OC_NVME_SC_CMD_SEQ);
            }
            ctrl->nr_io_queues = (uint16_t)n;
            pthread_mutex_unlock(&ctrl->tgt->ctrl_lock);
        }
        {
            uint32_t g = ctrl->nr_io_queues ? ctrl->nr_io_queues
                                            : OC_NVMF_MAX_IO_QUEUES;
            cmd->dw0 = (g - 1) | ((g - 1) << 16);
        }
        return done(cmd, 0);
    case FEAT_KATO:
        if (set)
            ctrl->kato_ms = dw11;
        cmd->dw0 = ctrl->kato_ms;
        return done(cmd, 0);
    case FEAT_ASYNC_EVENT:
        if (set)
            ctrl->aen_cfg = dw11;
        cmd->dw0 = ctrl->aen_cfg;
        return done(cmd, 0);
    case FEAT_VWC:
        if (set)
            return done(cmd, OC_NVME_SC_FEAT_NOT_CHANGEABLE);
        cmd->dw0 = 1;
        return done(cmd, 0);
    case FEAT_ARB:
        if (set)
            return done(cmd, 0);
        cmd->dw0 = 0;
        return done(cmd, 0);
    default:
        return done(cmd, OC_NVME_SC_INVALID_FIELD);
    }
}

void oc__nvmf_admin_exec(oc_nvmf_cmd_t *cmd)
{
    oc_nvmf_ctrl_t *ctrl = cmd->conn->ctrl;
    uint8_t opc = oc__sqe_opc(cmd->sqe);

    if (!(ctrl->csts & 1) && opc != ADM_KEEP_ALIVE)
        return done(cmd, OC_NVME_SC_CMD_SEQ); /* CC.EN not set yet */
    switch (opc) {
    case ADM_IDENTIFY:
        return identify(cmd);
    case ADM_GET_LOG:
        return get_log(cmd);
    case ADM_SET_FEAT:
        return features(cmd, 1);
    case ADM_GET_FEAT:
        return features(cmd, 0);
    case ADM_KEEP_ALIVE:
        return done(cmd, 0);
    case ADM_ABORT:
        cmd->dw0 = 1; /* not aborted: commands here finish promptly */
        return done(cmd, 0);
    case ADM_AER:
        if (ctrl->naer > OC_NVMF_AERL)
            return done(cmd, OC_NVME_SC_AER_LIMIT);
        ctrl->aer_cids[ctrl->naer++] = cmd->cid;
        cmd->state = OC_NVMF_CMD_HELD; /* no event ever fires: held */
        return;
    default:
        atomic_fetch_add_explicit(&cmd->conn->w->st.invalid_opcode, 1,
                                  memory_order_relaxed);
        return done(cmd, OC_NVME_SC_INVALID_OPCODE);
    }
}
