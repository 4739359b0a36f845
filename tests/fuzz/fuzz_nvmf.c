/*
 * fuzz_nvmf.c — libFuzzer target for offcore-nvmf's PDU checker and SGL
 * decoder (src/nvmf/pdu.c), the code that reads every byte a host sends.
 *
 * Input: byte [0] chooses what the receiver knows (bit 0: ICReq done;
 * bit 1: header digest; bit 2: data digest; bits 3-4: how the stream
 * arrives: whole, or in chunks of 64, 512 or 4096 bytes); the rest is the byte
 * stream from the host.  The stream is fed to oc__nvmf_pdu_check() the way
 * conn.c does (an exact-size heap window of what has arrived), PDU after
 * PDU, and each verdict is held to its invariants: an accepted PDU lies
 * inside what arrived and inside the largest PDU allowed, its data inside
 * the PDU, a header digest that was checked is right; NEED asks for more
 * than arrived yet no more than the largest PDU; a rejection names a
 * fatal error status.  Accepted capsules go through the SGL decoder both
 * ways.  The table CRC32C is the oracle for the SSE4.2 one.
 */
#include "fuzz_nvmf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmf/pdu.h"

unsigned long fuzz_nvmf_accepted;
int fuzz_nvmf_last_valid;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_nvmf.c:%d: invariant broken: %s\n",          \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void check_accepted(const uint8_t *p, size_t avail,
                           const oc_nvmf_pdu_limits_t *lim,
                           const oc_nvmf_pdu_info_t *in)
{
    uint32_t hd = 0, dd = 0;

    CHECK(in->plen <= avail && in->plen <= oc__nvmf_pdu_max(lim));
    CHECK(in->hlen >= 8 && in->hlen <= in->plen);
    if (in->type == OC_NVMF_PDU_CMD || in->type == OC_NVMF_PDU_H2C_DATA) {
        hd = lim->hdgst ? 4 : 0;
        dd = lim->ddgst ? 4 : 0;
        if (hd)
            CHECK(oc__crc32c_ref(0, p, in->hlen) == oc__load_le32(p + in->hlen));
    }
    if (in->data_len) {
        CHECK(in->data_off >= in->hlen + hd);
        CHECK((uint64_t)in->data_off + in->data_len + dd == in->plen);
    }
    if (in->type == OC_NVMF_PDU_CMD) {
        oc_nvmf_xfer_t kind;
        uint32_t len;
        CHECK(in->data_len <= lim->max_incap);
        for (int w = 0; w < 2; w++) {
            kind = OC_NVMF_XFER_NONE;
            len = 0;
            if (oc__nvmf_sgl_decode(p + 8, w, in->data_len, 128 * 1024, &kind,
                                   &len) == 0) {
                CHECK(len <= 128 * 1024);
                if (kind == OC_NVMF_XFER_INCAPSULE)
                    CHECK(w && len == in->data_len && len > 0);
                if (kind == OC_NVMF_XFER_R2T)
                    CHECK(w && in->data_len == 0);
                if (kind == OC_NVMF_XFER_C2H)
                    CHECK(!w && in->data_len == 0);
            }
        }
    }
    if (in->type == OC_NVMF_PDU_H2C_DATA)
        CHECK(in->data_len > 0 && in->data_len <= lim->max_h2c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t chunks[4] = {0, 64, 512, 4096};
    oc_nvmf_pdu_limits_t lim = {0};
    size_t pos = 0, arrived, chunk;
    uint8_t *win;

    fuzz_nvmf_last_valid = 0;
    if (size < FUZZ_NVMF_PREFIX)
        return 0;
    lim.ic_done = data[0] & 1;
    lim.hdgst = (data[0] >> 1) & 1;
    lim.ddgst = (data[0] >> 2) & 1;
    lim.max_incap = 8192;
    lim.max_h2c = 128 * 1024;
    chunk = chunks[(data[0] >> 3) & 3];
    data += FUZZ_NVMF_PREFIX;
    size -= FUZZ_NVMF_PREFIX;
    CHECK(oc__crc32c(0, data, size) == oc__crc32c_ref(0, data, size));

    arrived = chunk ? (chunk < size ? chunk : size) : size;
    while (pos < size) {
        oc_nvmf_pdu_info_t in;
        size_t avail = arrived - pos;
        oc_nvmf_pdu_rc_t rc;

        win = malloc(avail ? avail : 1); /* exact size: ASan sees overreads */
        CHECK(win != NULL);
        memcpy(win, data + pos, avail);
        rc = oc__nvmf_pdu_check(win, avail, &lim, &in);
        if (rc == OC_NVMF_PDU_NEED) {
            free(win);
            CHECK(in.need > avail && in.need <= oc__nvmf_pdu_max(&lim));
            if (arrived == size)
                return 0; /* the stream ends inside a PDU */
            arrived = arrived + chunk < size ? arrived + chunk : size;
            continue;
        }
        if (rc == OC_NVMF_PDU_BAD) {
            free(win);
            CHECK(in.fes >= 1 && in.fes <= 6 && in.why != NULL);
            return 0; /* fatal: the connection would end here */
        }
        CHECK(rc == OC_NVMF_PDU_OK);
        check_accepted(win, avail, &lim, &in);
        free(win);
        fuzz_nvmf_accepted++;
        if (in.type == OC_NVMF_PDU_ICREQ)
            lim.ic_done = 1;
        pos += in.plen;
        if (arrived < pos)
            arrived = pos;
    }
    fuzz_nvmf_last_valid = 1;
    return 0;
}
