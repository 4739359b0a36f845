/*
 * pdu.h — the NVMe/TCP wire format (NVMe/TCP transport binding, TP 8000,
 * now part of the NVMe over Fabrics / TCP transport specification) and the
 * pieces of NVMe commands and completions the target reads and writes.
 *
 * Trust model: every byte here comes from an untrusted host.  The checks
 * in pdu.c are pure functions over byte buffers (no I/O, no state beyond
 * what the caller passes), so that tests/fuzz/fuzz_nvmf.c can drive them
 * directly.  All multi-byte fields are little-endian on the wire; the
 * accessors below read and write them byte by byte, so that no buffer needs
 * any alignment.
 */
#ifndef OC_NVMF_PDU_H
#define OC_NVMF_PDU_H

#include "util/bytes.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ PDU types */
enum {
    OC_NVMF_PDU_ICREQ = 0x00,
    OC_NVMF_PDU_ICRESP = 0x01,
    OC_NVMF_PDU_H2C_TERM = 0x02,
    OC_NVMF_PDU_C2H_TERM = 0x03,
    OC_NVMF_PDU_CMD = 0x04,
    OC_NVMF_PDU_RSP = 0x05,
    OC_NVMF_PDU_H2C_DATA = 0x06,
    OC_NVMF_PDU_C2H_DATA = 0x07,
    OC_NVMF_PDU_R2T = 0x09,
};

/* common-header flags */
#define OC_NVMF_F_HDGST 0x01
#define OC_NVMF_F_DDGST 0x02
#define OC_NVMF_F_LAST 0x04    /* H2CData / C2HData: last PDU of a transfer */
#define OC_NVMF_F_SUCCESS 0x08 /* C2HData: no CapsuleResp follows */

#define OC_NVMF_CH_LEN 8
#define OC_NVMF_IC_LEN 128     /* ICReq and ICResp: hlen == plen */
#define OC_NVMF_CMD_HLEN 72    /* 8 + a 64-byte submission queue entry */
#define OC_NVMF_RSP_HLEN 24    /* 8 + a 16-byte completion queue entry */
#define OC_NVMF_DATA_HLEN 24   /* H2CData, C2HData, R2T */
#define OC_NVMF_TERM_HLEN 24
#define OC_NVMF_TERM_MAX_DATA 152 /* offending header copied into a TermReq */
#define OC_NVMF_DGST_LEN 4

/* ICReq / ICResp digest bits */
#define OC_NVMF_IC_HDGST 0x01
#define OC_NVMF_IC_DDGST 0x02

/* Fatal error status (TermReq FES) */
enum {
    OC_NVMF_FES_HDR_FIELD = 0x01,  /* FEI: byte offset of the bad field */
    OC_NVMF_FES_PDU_SEQ = 0x02,
    OC_NVMF_FES_HDR_DIGEST = 0x03,
    OC_NVMF_FES_DATA_RANGE = 0x04, /* data outside what was asked for */
    OC_NVMF_FES_DATA_LIMIT = 0x05,
    OC_NVMF_FES_UNSUPPORTED = 0x06,
};

/* ------------------------------------------------------------- CRC32C */
/** CRC32C (Castagnoli) of @p len bytes, continuing @p crc (start with 0):
 *  the NVMe/TCP header and data digest.  SSE4.2 when the CPU has it, a
 *  table otherwise (pdu.c says why no library).  Thread-safe. */
uint32_t oc__crc32c(uint32_t crc, const void *buf, size_t len);
/** The table version, always: the oracle the tests hold the fast one to. */
uint32_t oc__crc32c_ref(uint32_t crc, const void *buf, size_t len);

/* ---------------------------------------------------- the PDU checker */

/** What the receiving side knows when it checks a PDU header. */
typedef struct {
    int      ic_done;     /* ICReq/ICResp exchanged */
    int      hdgst;       /* header digest negotiated */
    int      ddgst;       /* data digest negotiated */
    uint32_t max_incap;   /* largest in-capsule data accepted */
    uint32_t max_h2c;     /* MAXH2CDATA announced in ICResp */
} oc_nvmf_pdu_limits_t;

typedef enum {
    OC_NVMF_PDU_NEED = 1,  /* more bytes needed: see info->need */
    OC_NVMF_PDU_OK = 0,    /* a whole, well-formed PDU: see info */
    OC_NVMF_PDU_BAD = -1,  /* fatal: info->fes/fei say why (TermReq) */
} oc_nvmf_pdu_rc_t;

/** A checked PDU: where its parts are in the buffer. */
typedef struct {
    uint8_t  type;
    uint8_t  flags;
    uint32_t hlen;      /* header length (digest not included) */
    uint32_t plen;      /* whole PDU, digests included */
    uint32_t data_off;  /* offset of the data, 0 when none */
    uint32_t data_len;  /* bytes of data (digest not included) */
    uint32_t need;      /* on NEED: total bytes wanted so far */
    uint16_t fes;       /* on BAD */
    uint32_t fei;       /* on BAD: offset of the offending field */
    const char *why;    /* on BAD: a short reason for the log */
} oc_nvmf_pdu_info_t;

/**
 * Check the PDU that starts at @p buf, of which @p avail bytes have
 * arrived, as a controller receives it (host-to-controller types only).
 * Every length, offset and flag is checked against the type and @p lim
 * before any of it is trusted, and the header digest (when negotiated) is
 * verified; the data digest is left to the caller (a bad data digest is
 * not fatal: the command fails with a Transient Transport Error).
 * Never reads outside buf[0..avail).  Thread-safe.
 *
 * @return OC_NVMF_PDU_NEED (info->need bytes are needed before a verdict,
 *         never more than the largest PDU @p lim allows), OC_NVMF_PDU_OK,
 *         or OC_NVMF_PDU_BAD (info->fes, fei, why set).
 */
oc_nvmf_pdu_rc_t oc__nvmf_pdu_check(const uint8_t *buf, size_t avail,
                                   const oc_nvmf_pdu_limits_t *lim,
                                   oc_nvmf_pdu_info_t *info);

/** Largest PDU a host may send under @p lim: the receive buffer size. */
uint32_t oc__nvmf_pdu_max(const oc_nvmf_pdu_limits_t *lim);

/* --------------------------------------------- NVMe command fields (SQE) */
#define OC_NVME_SQE_LEN 64
#define OC_NVME_CQE_LEN 16

static inline uint8_t oc__sqe_opc(const uint8_t *s) { return s[0]; }
static inline uint8_t oc__sqe_flags(const uint8_t *s) { return s[1]; }
static inline uint16_t oc__sqe_cid(const uint8_t *s) { return oc__load_le16(s + 2); }
static inline uint32_t oc__sqe_nsid(const uint8_t *s) { return oc__load_le32(s + 4); }
/* command dwords 10..15 */
static inline uint32_t oc__sqe_cdw(const uint8_t *s, int n)
{
    return oc__load_le32(s + 4 * n);
}

/* SGL descriptor in DPTR (bytes 24..39) */
#define OC_SGL_INCAPSULE 0x01  /* data block descriptor, offset address */
#define OC_SGL_TRANSPORT 0x5a  /* transport data block, transport-specific */

typedef enum {
    OC_NVMF_XFER_NONE = 0,
    OC_NVMF_XFER_INCAPSULE,
    OC_NVMF_XFER_R2T,  /* host-to-controller via R2T/H2CData */
    OC_NVMF_XFER_C2H,  /* controller-to-host via C2HData */
} oc_nvmf_xfer_t;

/**
 * Decode the data pointer of a command (an SGL, the only form NVMe/TCP
 * allows): @p dir_write says whether the command moves data to the
 * controller.  @p incap is the in-capsule data length of the PDU.
 * @return 0 and *kind / *len set, or the NVMe status (SCT<<8|SC) to
 * complete the command with.
 */
uint16_t oc__nvmf_sgl_decode(const uint8_t *sqe, int dir_write, uint32_t incap,
                            uint32_t max_len, oc_nvmf_xfer_t *kind,
                            uint32_t *len);

/* ------------------------------------------------------ NVMe statuses */
/* (SCT << 8) | SC; the CQE status field holds it shifted left by one,
 * with DNR (bit 15) set for errors a retry cannot fix. */
#define OC_SC(sct, sc) ((uint16_t)(((sct) << 8) | (sc)))
enum {
    OC_NVME_SC_OK = 0,
    OC_NVME_SC_INVALID_OPCODE = OC_SC(0, 0x01),
    OC_NVME_SC_INVALID_FIELD = OC_SC(0, 0x02),
    OC_NVME_SC_DATA_XFER = OC_SC(0, 0x04),
    OC_NVME_SC_INTERNAL = OC_SC(0, 0x06),
    OC_NVME_SC_ABORT_REQ = OC_SC(0, 0x07),
    OC_NVME_SC_INVALID_NS = OC_SC(0, 0x0b),
    OC_NVME_SC_CMD_SEQ = OC_SC(0, 0x0c),
    OC_NVME_SC_SGL_LEN = OC_SC(0, 0x0f),
    OC_NVME_SC_SGL_TYPE = OC_SC(0, 0x11),
    OC_NVME_SC_SGL_OFFSET = OC_SC(0, 0x16),
    OC_NVME_SC_TRANSIENT_XPORT = OC_SC(0, 0x22),
    OC_NVME_SC_LBA_RANGE = OC_SC(0, 0x80),
    OC_NVME_SC_INVALID_QID = OC_SC(1, 0x01),
    OC_NVME_SC_AER_LIMIT = OC_SC(1, 0x05),
    OC_NVME_SC_INVALID_LOG = OC_SC(1, 0x09),
    OC_NVME_SC_FEAT_NOT_CHANGEABLE = OC_SC(1, 0x0e),
    OC_NVME_SC_CONNECT_FORMAT = OC_SC(1, 0x80),
    OC_NVME_SC_CONNECT_BUSY = OC_SC(1, 0x81),
    OC_NVME_SC_CONNECT_PARAM = OC_SC(1, 0x82),
    OC_NVME_SC_CONNECT_HOST = OC_SC(1, 0x84),
    OC_NVME_SC_WRITE_FAULT = OC_SC(2, 0x80),
    OC_NVME_SC_READ_ERROR = OC_SC(2, 0x81),
};

/** Fill a 16-byte CQE. */
static inline void oc__nvmf_cqe(uint8_t *cqe, uint32_t dw0, uint32_t dw1,
                               uint16_t sqhd, uint16_t cid, uint16_t status)
{
    uint16_t sf = (uint16_t)(status << 1);
    if (status)
        sf |= 0x8000; /* DNR: every error here is final for the command */
    if (status == OC_NVME_SC_TRANSIENT_XPORT)
        sf &= 0x7fff; /* a digest error may be retried */
    oc__store_le32(cqe, dw0);
    oc__store_le32(cqe + 4, dw1);
    oc__store_le16(cqe + 8, sqhd);
    oc__store_le16(cqe + 10, 0);
    oc__store_le16(cqe + 12, cid);
    oc__store_le16(cqe + 14, sf);
}

#endif
