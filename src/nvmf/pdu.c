/*
 * pdu.c — the NVMe/TCP PDU checker, the SGL decoder and CRC32C.
 *
 * Pure functions over untrusted bytes (see pdu.h): no allocation, no I/O,
 * no global state except the CRC table built once.  tests/fuzz/fuzz_nvmf.c
 * drives all of it.
 *
 * CRC32C is written here rather than taken from a library: the digest is
 * one instruction per 8 bytes with SSE4.2 (crc32q), which no packaged
 * library beats, and the candidates (isa-l, the kernel's crypto API
 * through AF_ALG) would add a dependency or a system call per PDU for
 * twenty lines of code.  The table version is the portable fallback and
 * the oracle the unit tests hold the SSE4.2 version to.
 */
#include "pdu.h"

#include <pthread.h>

#include "util/cpu.h"

/* ------------------------------------------------------------- CRC32C */
#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t oc__crc32c_ref(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    pthread_once(&crc_once, crc_table_init);
    crc = ~crc;
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
/*
 * Several streams at once: crc32q has a latency of 3 cycles but a
 * throughput of one per cycle, so a chunk of 4 (or 3) x CHUNK bytes runs
 * as independent CRCs, then joins them: the raw CRC register is linear, so
 * crc(A||B) = shift(crc(A), |B|) ^ crc0(B), where shift() feeds |B| zero
 * bytes, a 32x32 bit matrix applied here by four 256-entry tables
 * (shift_tab, built once from the byte-wise table).  Four streams, not
 * three, because a 4 KiB block (integrity's unit) then has no 1 KiB tail
 * run at one crc32q per 3 cycles.  Each 4-stream round first prefetches
 * its 4 KiB: a block just read from the disk is not in this core's cache
 * (a read through O_DIRECT is DMA), and asking for all its lines at once
 * lets the memory system fetch them in parallel.  Measured on this VM
 * (a throwaway program timing oc__crc32c on 4 KiB blocks; cold: a 512 MiB
 * buffer walked once; 5 interleaved runs each, medians, load 10-12):
 * 3 streams 783 ns, 4 streams + prefetch 669 ns, a plain read of the
 * block 460-600 ns; hot (one block again and again): 284 vs 221 ns.
 */
#define CHUNK 1024
static uint32_t shift_tab[4][256];

static uint32_t raw_zeros(uint32_t c, size_t n)
{
    while (n--)
        c = crc_table[c & 0xff] ^ (c >> 8);
    return c;
}

static void shift_init(void)
{
    pthread_once(&crc_once, crc_table_init);
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            shift_tab[k][b] = raw_zeros(b << (8 * k), CHUNK);
}

static inline uint32_t shift_chunk(uint32_t c)
{
    return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^
           shift_tab[2][(c >> 16) & 0xff] ^ shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = ~crc;

    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    while (len >= 4 * CHUNK) {
        uint64_t c1 = 0, c2 = 0, c3 = 0;
        for (size_t i = 0; i < 4 * CHUNK; i += 64)
            __builtin_prefetch(p + i);
        for (size_t i = 0; i < CHUNK; i += 8) {
            uint64_t v0, v1, v2, v3;
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + CHUNK + i, 8);
            memcpy(&v2, p + 2 * CHUNK + i, 8);
            memcpy(&v3, p + 3 * CHUNK + i, 8);
            c = __builtin_ia32_crc32di(c, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
            c3 = __builtin_ia32_crc32di(c3, v3);
        }
        c = shift_chunk(shift_chunk(shift_chunk((uint32_t)c) ^ (uint32_t)c1) ^
                        (uint32_t)c2) ^
            (uint32_t)c3;
        p += 4 * CHUNK;
        len -= 4 * CHUNK;
    }
    if (len >= 3 * CHUNK) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < CHUNK; i += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + CHUNK + i, 8);
            memcpy(&v2, p + 2 * CHUNK + i, 8);
            c = __builtin_ia32_crc32di(c, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
        }
        c = shift_chunk(shift_chunk((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * CHUNK;
        len -= 3 * CHUNK;
    }
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

static int have_sse42;

static void cpu_init(void)
{
    have_sse42 = (oc__cpu_features() & OC__CPU_SSE42) ? 1 : 0;
    if (have_sse42)
        shift_init();
}
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
#endif

uint32_t oc__crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
    pthread_once(&cpu_once, cpu_init); /* tables ready before first use */
    if (have_sse42)
        return crc32c_sse42(crc, buf, len);
#endif
    return oc__crc32c_ref(crc, buf, len);
}

/* --------------------------------------------------------- PDU checks */
static oc_nvmf_pdu_rc_t bad(oc_nvmf_pdu_info_t *info, uint16_t fes,
                            uint32_t fei, const char *why)
{
    info->fes = fes;
    info->fei = fei;
    info->why = why;
    return OC_NVMF_PDU_BAD;
}

uint32_t oc__nvmf_pdu_max(const oc_nvmf_pdu_limits_t *lim)
{
    uint32_t m = OC_NVMF_IC_LEN;
    uint32_t cmd = OC_NVMF_CMD_HLEN + 2 * OC_NVMF_DGST_LEN + lim->max_incap;
    uint32_t h2c = OC_NVMF_DATA_HLEN + 2 * OC_NVMF_DGST_LEN + lim->max_h2c;
    uint32_t term = OC_NVMF_TERM_HLEN + OC_NVMF_TERM_MAX_DATA;

    if (cmd > m)
        m = cmd;
    if (h2c > m)
        m = h2c;
    if (term > m)
        m = term;
    return m;
}

oc_nvmf_pdu_rc_t oc__nvmf_pdu_check(const uint8_t *buf, size_t avail,
                                   const oc_nvmf_pdu_limits_t *lim,
                                   oc_nvmf_pdu_info_t *info)
{
    uint32_t hd, dd, want_hlen;
    uint8_t allowed;

    memset(info, 0, sizeof(*info));
    if (avail < OC_NVMF_CH_LEN) {
        info->need = OC_NVMF_CH_LEN;
        return OC_NVMF_PDU_NEED;
    }
    info->type = buf[0];
    info->flags = buf[1];
    info->hlen = buf[2];
    info->plen = oc__load_le32(buf + 4);
    const uint8_t pdo = buf[3];

    switch (info->type) {
    case OC_NVMF_PDU_ICREQ:
        want_hlen = OC_NVMF_IC_LEN;
        allowed = 0;
        break;
    case OC_NVMF_PDU_H2C_TERM:
        want_hlen = OC_NVMF_TERM_HLEN;
        allowed = 0;
        break;
    case OC_NVMF_PDU_CMD:
        want_hlen = OC_NVMF_CMD_HLEN;
        allowed = OC_NVMF_F_HDGST | OC_NVMF_F_DDGST;
        break;
    case OC_NVMF_PDU_H2C_DATA:
        want_hlen = OC_NVMF_DATA_HLEN;
        allowed = OC_NVMF_F_HDGST | OC_NVMF_F_DDGST | OC_NVMF_F_LAST;
        break;
    default:
        return bad(info, OC_NVMF_FES_HDR_FIELD, 0, "PDU type a host may not send");
    }
    if (!lim->ic_done && info->type != OC_NVMF_PDU_ICREQ &&
        info->type != OC_NVMF_PDU_H2C_TERM)
        return bad(info, OC_NVMF_FES_PDU_SEQ, 0, "PDU before ICReq");
    if (lim->ic_done && info->type == OC_NVMF_PDU_ICREQ)
        return bad(info, OC_NVMF_FES_PDU_SEQ, 0, "second ICReq");
    if (info->hlen != want_hlen)
        return bad(info, OC_NVMF_FES_HDR_FIELD, 2, "header length");
    if (info->flags & ~allowed)
        return bad(info, OC_NVMF_FES_HDR_FIELD, 1, "flags");

    hd = 0;
    dd = 0;
    if (info->type == OC_NVMF_PDU_CMD || info->type == OC_NVMF_PDU_H2C_DATA) {
        if (!!(info->flags & OC_NVMF_F_HDGST) != !!lim->hdgst)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 1, "header digest flag");
        hd = lim->hdgst ? OC_NVMF_DGST_LEN : 0;
        dd = lim->ddgst ? OC_NVMF_DGST_LEN : 0;
    }
    if (info->plen > oc__nvmf_pdu_max(lim))
        return bad(info, OC_NVMF_FES_DATA_LIMIT, 4, "PDU longer than allowed");

    switch (info->type) {
    case OC_NVMF_PDU_ICREQ:
        if (pdo != 0)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 3, "ICReq PDO");
        if (info->plen != OC_NVMF_IC_LEN)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 4, "ICReq length");
        break;
    case OC_NVMF_PDU_H2C_TERM:
        if (pdo != 0)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 3, "TermReq PDO");
        if (info->plen < OC_NVMF_TERM_HLEN ||
            info->plen > OC_NVMF_TERM_HLEN + OC_NVMF_TERM_MAX_DATA)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 4, "TermReq length");
        break;
    case OC_NVMF_PDU_CMD:
        if (info->plen < info->hlen + hd)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 4, "capsule shorter than its header");
        if (info->plen == info->hlen + hd) {
            if (pdo != 0)
                return bad(info, OC_NVMF_FES_HDR_FIELD, 3, "PDO without data");
            if (info->flags & OC_NVMF_F_DDGST)
                return bad(info, OC_NVMF_FES_HDR_FIELD, 1, "data digest flag without data");
            break;
        }
        if (pdo != info->hlen + hd)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 3, "capsule PDO");
        if (!!(info->flags & OC_NVMF_F_DDGST) != !!lim->ddgst)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 1, "data digest flag");
        if (info->plen <= (uint32_t)pdo + dd)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 4, "capsule length");
        info->data_off = pdo;
        info->data_len = info->plen - pdo - dd;
        if (info->data_len > lim->max_incap)
            return bad(info, OC_NVMF_FES_DATA_LIMIT, 4, "in-capsule data too long");
        break;
    case OC_NVMF_PDU_H2C_DATA: {
        if (pdo != info->hlen + hd)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 3, "H2CData PDO");
        if (!!(info->flags & OC_NVMF_F_DDGST) != !!lim->ddgst)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 1, "data digest flag");
        if (avail < OC_NVMF_DATA_HLEN) {
            info->need = OC_NVMF_DATA_HLEN;
            return OC_NVMF_PDU_NEED;
        }
        uint32_t datal = oc__load_le32(buf + 16);
        if (datal == 0)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 16, "H2CData without data");
        if (datal > lim->max_h2c)
            return bad(info, OC_NVMF_FES_DATA_LIMIT, 16, "H2CData above MAXH2CDATA");
        if ((uint64_t)pdo + datal + dd != info->plen)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 4, "H2CData length disagrees with DATAL");
        info->data_off = pdo;
        info->data_len = datal;
        break;
    }
    }

    if (avail < info->plen) {
        info->need = info->plen;
        return OC_NVMF_PDU_NEED;
    }
    if (hd && oc__crc32c(0, buf, info->hlen) != oc__load_le32(buf + info->hlen))
        return bad(info, OC_NVMF_FES_HDR_DIGEST, 0, "header digest");
    if (info->type == OC_NVMF_PDU_ICREQ) {
        if (oc__load_le16(buf + 8) != 0)
            return bad(info, OC_NVMF_FES_UNSUPPORTED, 8, "ICReq PDU format version");
        if (buf[10] > 31)
            return bad(info, OC_NVMF_FES_HDR_FIELD, 10, "ICReq HPDA");
        if (buf[11] & ~(OC_NVMF_IC_HDGST | OC_NVMF_IC_DDGST))
            return bad(info, OC_NVMF_FES_HDR_FIELD, 11, "ICReq digest bits");
    }
    return OC_NVMF_PDU_OK;
}

/* ------------------------------------------------------------ the SGL */
uint16_t oc__nvmf_sgl_decode(const uint8_t *sqe, int dir_write, uint32_t incap,
                            uint32_t max_len, oc_nvmf_xfer_t *kind,
                            uint32_t *len)
{
    uint8_t psdt = (uint8_t)(oc__sqe_flags(sqe) >> 6);
    uint64_t addr = oc__load_le64(sqe + 24);
    uint32_t l = oc__load_le32(sqe + 32);
    uint8_t type = sqe[39];

    if (psdt != 1 && psdt != 2) /* NVMe/TCP carries SGLs only, no PRPs */
        return OC_NVME_SC_INVALID_FIELD;
    if (oc__sqe_flags(sqe) & 0x03) /* fused operations: not supported */
        return OC_NVME_SC_INVALID_FIELD;
    switch (type) {
    case OC_SGL_INCAPSULE:
        if (!dir_write)
            return OC_NVME_SC_SGL_TYPE;
        if (addr != 0)
            return OC_NVME_SC_SGL_OFFSET;
        if (l != incap || l == 0)
            return OC_NVME_SC_SGL_LEN;
        *kind = OC_NVMF_XFER_INCAPSULE;
        *len = l;
        return OC_NVME_SC_OK;
    case OC_SGL_TRANSPORT:
        if (incap)
            return OC_NVME_SC_SGL_LEN; /* data in the capsule it does not describe */
        if (l > max_len)
            return OC_NVME_SC_INVALID_FIELD; /* above MDTS */
        *kind = l == 0 ? OC_NVMF_XFER_NONE
                       : dir_write ? OC_NVMF_XFER_R2T : OC_NVMF_XFER_C2H;
        *len = l;
        return OC_NVME_SC_OK;
    default:
        return OC_NVME_SC_SGL_TYPE;
    }
}
