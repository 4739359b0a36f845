/*
 * nvmf_stream_seeds.c — the seed corpus of the NVMe/TCP stream target
 * (fuzz_nvmf_stream.c): whole sessions, each one segment or cut into
 * small ones, and the hostile shapes that ended connections wrongly (two
 * ICReqs in one segment, a bad PDU with more behind it).
 */
#include "fuzz_nvmf.h"

#include <string.h>

#include "nvmf/pdu.h"

static void emit(fuzz_nvmf_seed_fn fn, void *arg, uint8_t mode, uint8_t rng,
                 const fuzz_nvmf_stream_t *s, int valid, unsigned *n)
{
    static uint8_t buf[sizeof(((fuzz_nvmf_stream_t *)0)->b) +
                       FUZZ_NVMF_STREAM_PREFIX];
    buf[0] = mode;
    buf[1] = rng;
    memcpy(buf + FUZZ_NVMF_STREAM_PREFIX, s->b, s->n);
    fn(arg, buf, s->n + FUZZ_NVMF_STREAM_PREFIX, valid);
    (*n)++;
}

/* ICReq, Connect (admin), Property Get CAP, Property Set CC.EN, Identify
 * controller, Set Features (queues), Keep Alive */
static void admin(fuzz_nvmf_stream_t *s, int hd, int dd)
{
    static uint8_t connect[1024];
    const uint32_t conn[6] = {0, 31};
    const uint32_t cap[6] = {1, 0};
    const uint32_t cc[6] = {0, 0x14, (6 << 16) | (4 << 20) | 1};
    const uint32_t idc[6] = {1};
    const uint32_t nq[6] = {0x07, 0};

    fuzz_nvmf_stream_connect_data(connect, 0xffff);
    memset(s, 0, sizeof(*s));
    fuzz_nvmf_icreq(s, hd, dd);
    fuzz_nvmf_capsule_cdw(s, 0x7f, 0x01, 0, conn, 1024, connect, 1024);
    fuzz_nvmf_capsule_cdw(s, 0x7f, 0x04, 0, cap, 0, NULL, 0);
    fuzz_nvmf_capsule_cdw(s, 0x7f, 0x00, 0, cc, 0, NULL, 0);
    fuzz_nvmf_capsule_cdw(s, 0x06, 0, 0, idc, 4096, NULL, 0);
    fuzz_nvmf_capsule_cdw(s, 0x09, 0, 0, nq, 0, NULL, 0);
    fuzz_nvmf_capsule_cdw(s, 0x18, 0, 0, NULL, 0, NULL, 0);
}

/* (with the admin session of input bit 5) ICReq, I/O Connect to
 * controller 1, a 512-byte block written in the capsule, a read of it,
 * a block written through R2T and two H2CData (the 4th command slot: tag
 * 3, when the whole stream arrives before any answer has left), Flush */
static void io(fuzz_nvmf_stream_t *s, int hd, int dd)
{
    static uint8_t connect[1024], block[512];
    const uint32_t conn[6] = {1 << 16, 31};
    const uint32_t lba[6] = {5, 0, 0};

    fuzz_nvmf_stream_connect_data(connect, 1);
    memset(block, 0x3c, sizeof(block));
    memset(s, 0, sizeof(*s));
    fuzz_nvmf_icreq(s, hd, dd);
    fuzz_nvmf_capsule_cdw(s, 0x7f, 0x01, 0, conn, 1024, connect, 1024);
    fuzz_nvmf_capsule_cdw(s, 0x01, 0, 1, lba, 512, block, 512);
    fuzz_nvmf_capsule_cdw(s, 0x02, 0, 1, lba, 512, NULL, 0);
    fuzz_nvmf_capsule_cdw(s, 0x01, 0, 1, lba, 512, NULL, 0);
    fuzz_nvmf_h2c(s, 3, 0, 256, 0);
    fuzz_nvmf_h2c(s, 3, 256, 256, 1);
    fuzz_nvmf_capsule_cdw(s, 0x00, 0, 1, NULL, 0, NULL, 0);
}

/* (with the admin session of bit 5, and bit 6: the target must receive
 * the large data in place) ICReq, I/O Connect to controller 1, Writes of
 * 16 KiB and 20 KiB in the capsule (at least conn.c's DIRECT_MIN: received
 * straight into the command's buffer once the header is in), a read of
 * one block written, Flush */
static void direct(fuzz_nvmf_stream_t *s, int hd, int dd)
{
    static uint8_t connect[1024], data[20480];
    const uint32_t conn[6] = {1 << 16, 31};
    const uint32_t w1[6] = {8, 0, 31}, w2[6] = {100, 0, 39}, rd[6] = {20};

    fuzz_nvmf_stream_connect_data(connect, 1);
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + (i >> 9));
    memset(s, 0, sizeof(*s));
    fuzz_nvmf_icreq(s, hd, dd);
    fuzz_nvmf_capsule_cdw(s, 0x7f, 0x01, 0, conn, 1024, connect, 1024);
    fuzz_nvmf_capsule_cdw(s, 0x01, 0, 1, w1, 16384, data, 16384);
    fuzz_nvmf_capsule_cdw(s, 0x01, 0, 1, w2, 20480, data, 20480);
    fuzz_nvmf_capsule_cdw(s, 0x02, 0, 1, rd, 512, NULL, 0);
    fuzz_nvmf_capsule_cdw(s, 0x00, 0, 1, NULL, 0, NULL, 0);
}

unsigned fuzz_nvmf_stream_seeds(fuzz_nvmf_seed_fn fn, void *arg)
{
    static fuzz_nvmf_stream_t s;
    static const uint8_t bad_capsule[8 + 64] = {OC_NVMF_PDU_CMD, 0, 70, 0,
                                                72};
    unsigned n = 0;

    /* an admin session in one segment; in 64-byte segments with the host
     * reading 333 bytes at a time; in segments of varying size with both
     * digests */
    admin(&s, 0, 0);
    emit(fn, arg, 0x00, 0, &s, 1, &n);
    emit(fn, arg, 0x03 | (3 << 3), 0, &s, 1, &n);
    admin(&s, 1, 1);
    emit(fn, arg, 0x06 | (2 << 3), 7, &s, 1, &n);
    /* an I/O queue, one segment, without and with digests */
    io(&s, 0, 0);
    emit(fn, arg, 0x20, 0, &s, 1, &n);
    io(&s, 1, 1);
    emit(fn, arg, 0x20 | (1 << 3), 0, &s, 1, &n);
    /* large in-capsule Writes received in place: 512-byte segments
     * without digests; 4096-byte ones and varying ones with both */
    direct(&s, 0, 0);
    emit(fn, arg, 0x60 | 0x04, 0, &s, 1, &n);
    direct(&s, 1, 1);
    emit(fn, arg, 0x60 | 0x05 | (2 << 3), 0, &s, 1, &n);
    emit(fn, arg, 0x60 | 0x06 | (3 << 3), 11, &s, 1, &n);
    /* the same with a byte of the first Write's data changed: its data
     * digest fails (that command only; the queue goes on) */
    s.b[128 + (72 + 4 + 1024 + 4) + 72 + 4 + 100] ^= 0x01;
    emit(fn, arg, 0x60 | 0x05, 0, &s, 0, &n);

    /* two ICReqs in one segment (issue 21: the target then sent
     * C2HTermReqs in a loop and never closed) */
    memset(&s, 0, sizeof(s));
    fuzz_nvmf_icreq(&s, 0, 0);
    fuzz_nvmf_icreq(&s, 0, 0);
    emit(fn, arg, 0x00, 0, &s, 0, &n);
    emit(fn, arg, 0x02 | (3 << 3), 0, &s, 0, &n);
    /* a bad capsule with more PDUs behind it in the same segment */
    memset(&s, 0, sizeof(s));
    fuzz_nvmf_icreq(&s, 0, 0);
    memcpy(s.b + s.n, bad_capsule, sizeof(bad_capsule));
    s.n += sizeof(bad_capsule);
    fuzz_nvmf_icreq(&s, 0, 0);
    fuzz_nvmf_capsule(&s, 0x06, 0, 4096, NULL, 0);
    emit(fn, arg, 0x00, 0, &s, 0, &n);
    /* H2CData outside its R2T, then a capsule */
    io(&s, 0, 0);
    s.n -= 72 + 2 * (24 + 256);                  /* drop Flush and H2CData */
    fuzz_nvmf_h2c(&s, 3, 128, 256, 1);
    fuzz_nvmf_capsule_cdw(&s, 0x00, 0, 1, NULL, 0, NULL, 0);
    emit(fn, arg, 0x20, 0, &s, 0, &n);
    return n;
}
