/*
 * nvmf_seeds.c — the seed corpus of the NVMe/TCP fuzz target: host
 * byte streams built the way the Linux nvme-tcp host builds them; the
 * builders are shared with the stream target's seeds (nvmf_stream_seeds.c).
 */
#include "fuzz_nvmf.h"

#include <string.h>

#include "nvmf/pdu.h"

void fuzz_nvmf_icreq(fuzz_nvmf_stream_t *s, int hd, int dd)
{
    uint8_t *p = s->b + s->n;
    memset(p, 0, 128);
    p[0] = OC_NVMF_PDU_ICREQ;
    p[2] = 128;
    oc__store_le32(p + 4, 128);
    p[11] = (uint8_t)((hd ? 1 : 0) | (dd ? 2 : 0));
    s->n += 128;
    s->hd = hd;
    s->dd = dd;
}

void fuzz_nvmf_capsule(fuzz_nvmf_stream_t *s, uint8_t opc, uint8_t fct,
                       uint32_t sgl_len, const uint8_t *data, uint32_t dlen)
{
    fuzz_nvmf_capsule_cdw(s, opc, fct, 0, NULL, sgl_len, data, dlen);
}

void fuzz_nvmf_capsule_cdw(fuzz_nvmf_stream_t *s, uint8_t opc, uint8_t fct,
                           uint32_t nsid, const uint32_t cdw[6],
                           uint32_t sgl_len, const uint8_t *data,
                           uint32_t dlen)
{
    uint8_t *p = s->b + s->n;
    uint32_t hd = s->hd ? 4 : 0, dd = s->dd && dlen ? 4 : 0;
    uint32_t pdo = dlen ? 72 + hd : 0;
    uint32_t plen = 72 + hd + dlen + dd;

    memset(p, 0, 72);
    p[0] = OC_NVMF_PDU_CMD;
    p[1] = (uint8_t)((hd ? OC_NVMF_F_HDGST : 0) | (dd ? OC_NVMF_F_DDGST : 0));
    p[2] = 72;
    p[3] = (uint8_t)pdo;
    oc__store_le32(p + 4, plen);
    p[8] = opc;
    p[9] = 0x40; /* SGL */
    oc__store_le16(p + 10, 7);
    oc__store_le32(p + 8 + 4, nsid);
    if (opc == 0x7f)
        p[12] = fct; /* FCTYPE, where other commands have their NSID */
    for (int i = 0; cdw && i < 6; i++) /* command dwords 10..15 */
        oc__store_le32(p + 8 + 40 + 4 * i, cdw[i]);
    oc__store_le32(p + 8 + 32, sgl_len);
    p[8 + 39] = dlen ? OC_SGL_INCAPSULE : OC_SGL_TRANSPORT;
    if (hd)
        oc__store_le32(p + 72, oc__crc32c_ref(0, p, 72));
    if (dlen) {
        memcpy(p + pdo, data, dlen);
        if (dd)
            oc__store_le32(p + pdo + dlen, oc__crc32c_ref(0, data, dlen));
    }
    s->n += plen;
}

void fuzz_nvmf_h2c(fuzz_nvmf_stream_t *s, uint16_t ttag, uint32_t off,
                   uint32_t len, int last)
{
    uint8_t *p = s->b + s->n;
    uint32_t hd = s->hd ? 4 : 0, dd = s->dd ? 4 : 0;

    memset(p, 0, 24);
    p[0] = OC_NVMF_PDU_H2C_DATA;
    p[1] = (uint8_t)((hd ? OC_NVMF_F_HDGST : 0) | (dd ? OC_NVMF_F_DDGST : 0) |
                     (last ? OC_NVMF_F_LAST : 0));
    p[2] = 24;
    p[3] = (uint8_t)(24 + hd);
    oc__store_le32(p + 4, 24 + hd + len + dd);
    oc__store_le16(p + 8, 7);
    oc__store_le16(p + 10, ttag);
    oc__store_le32(p + 12, off);
    oc__store_le32(p + 16, len);
    if (hd)
        oc__store_le32(p + 24, oc__crc32c_ref(0, p, 24));
    memset(p + 24 + hd, 0xa5, len);
    if (dd)
        oc__store_le32(p + 24 + hd + len, oc__crc32c_ref(0, p + 24 + hd, len));
    s->n += 24 + hd + len + dd;
}

static void emit(fuzz_nvmf_seed_fn fn, void *arg, uint8_t prefix,
                 const fuzz_nvmf_stream_t *s, int valid, unsigned *n)
{
    static uint8_t buf[sizeof(((fuzz_nvmf_stream_t *)0)->b) + 1];
    buf[0] = prefix;
    memcpy(buf + 1, s->b, s->n);
    fn(arg, buf, s->n + 1, valid);
    (*n)++;
}

unsigned fuzz_nvmf_seeds(fuzz_nvmf_seed_fn fn, void *arg)
{
    static uint8_t connect[1024];
    static fuzz_nvmf_stream_t s;
    unsigned n = 0;

    memset(connect, 0, sizeof(connect));
    oc__store_le16(connect + 16, 0xffff);
    strcpy((char *)connect + 256, "nqn.2026-11.io.offcore:seed");
    strcpy((char *)connect + 512, "nqn.2014-08.org.nvmexpress:uuid:seed");
    for (int dg = 0; dg < 4; dg++) {
        for (uint8_t chunking = 0; chunking < 4; chunking++) {
            uint8_t prefix = (uint8_t)((dg << 1) | (chunking << 3));
            memset(&s, 0, sizeof(s));
            fuzz_nvmf_icreq(&s, dg & 1, dg & 2);
            fuzz_nvmf_capsule(&s, 0x7f, 0x01, 1024, connect, 1024); /* Connect */
            fuzz_nvmf_capsule(&s, 0x7f, 0x04, 0, NULL, 0);          /* Property Get */
            fuzz_nvmf_capsule(&s, 0x06, 0, 4096, NULL, 0);          /* Identify */
            fuzz_nvmf_capsule(&s, 0x01, 0, 512, connect, 512); /* in-capsule Write */
            fuzz_nvmf_capsule(&s, 0x01, 0, 65536, NULL, 0);         /* Write via R2T */
            fuzz_nvmf_h2c(&s, 3, 0, 256, 0);
            fuzz_nvmf_h2c(&s, 3, 256, 256, 1);
            emit(fn, arg, prefix, &s, 1, &n);
        }
    }
    /* near misses: a second ICReq, a bad header digest, a huge H2CData */
    memset(&s, 0, sizeof(s));
    fuzz_nvmf_icreq(&s, 0, 0);
    fuzz_nvmf_icreq(&s, 0, 0);
    emit(fn, arg, 0, &s, 0, &n);
    memset(&s, 0, sizeof(s));
    fuzz_nvmf_icreq(&s, 1, 0);
    fuzz_nvmf_capsule(&s, 0x06, 0, 4096, NULL, 0);
    s.b[128 + 72] ^= 1;
    emit(fn, arg, 2, &s, 0, &n);
    memset(&s, 0, sizeof(s));
    fuzz_nvmf_icreq(&s, 0, 0);
    fuzz_nvmf_h2c(&s, 1, 0, 16, 1);
    oc__store_le32(s.b + 128 + 16, 1u << 30);
    emit(fn, arg, 0, &s, 0, &n);
    return n;
}
