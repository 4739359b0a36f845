/*
 * fuzz_nvmf.h — what the NVMe/TCP fuzz target (fuzz_nvmf.c), its seed
 * generator (nvmf_seeds.c) and its replay driver (fuzz_nvmf_main.c) share.
 * Input layout: fuzz_nvmf.c.
 */
#ifndef OC_TESTS_FUZZ_NVMF_H
#define OC_TESTS_FUZZ_NVMF_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_NVMF_PREFIX 1

/** PDUs accepted so far. */
extern unsigned long fuzz_nvmf_accepted;
/** Whether the last input was a stream of whole, accepted PDUs. */
extern int fuzz_nvmf_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_nvmf_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                  int valid);

/* Host byte streams for the seeds (nvmf_seeds.c): each builder appends
 * one PDU, with the digests ICReq asked for; commands have CID 7. */
typedef struct {
    uint8_t b[49152]; /* the large in-capsule Writes' seeds: 38 KiB */
    size_t n;
    int hd, dd;
} fuzz_nvmf_stream_t;

void fuzz_nvmf_icreq(fuzz_nvmf_stream_t *s, int hd, int dd);
/** A capsule: opcode (and FCTYPE for 0x7f), SGL length, optional
 *  in-capsule data (its SGL then in-capsule, else transport). */
void fuzz_nvmf_capsule(fuzz_nvmf_stream_t *s, uint8_t opc, uint8_t fct,
                       uint32_t sgl_len, const uint8_t *data, uint32_t dlen);
/** The same with NSID and command dwords 10..15 (NULL: zeros). */
void fuzz_nvmf_capsule_cdw(fuzz_nvmf_stream_t *s, uint8_t opc, uint8_t fct,
                           uint32_t nsid, const uint32_t cdw[6],
                           uint32_t sgl_len, const uint8_t *data,
                           uint32_t dlen);
/** H2CData for CID 7: @p len bytes of 0xa5 at @p off of the transfer. */
void fuzz_nvmf_h2c(fuzz_nvmf_stream_t *s, uint16_t ttag, uint32_t off,
                   uint32_t len, int last);

/** Generate the seed corpus: sessions as the Linux host sends them (ICReq,
 *  Connect with in-capsule data, commands, H2CData), with and without
 *  digests, and near misses.  @return the number of seeds. */
unsigned fuzz_nvmf_seeds(fuzz_nvmf_seed_fn fn, void *arg);

/* ---- the stream target (fuzz_nvmf_stream.c; input layout there) ---- */
#define FUZZ_NVMF_STREAM_PREFIX 2
/** CapsuleResps the target sent, over all inputs. */
extern unsigned long fuzz_nvmf_stream_accepted;
/** Whether the last input's connection ended without a C2HTermReq, still
 *  open when the host closed it. */
extern int fuzz_nvmf_stream_last_valid;
/** The 1024 bytes of a Connect to the stream target's subsystem, from
 *  its host (host id 0x11 x 16), for controller @p cntlid (0xffff: a new
 *  one). */
void fuzz_nvmf_stream_connect_data(uint8_t d[1024], uint16_t cntlid);
/** The stream target's seeds (nvmf_stream_seeds.c). */
unsigned fuzz_nvmf_stream_seeds(fuzz_nvmf_seed_fn fn, void *arg);

#endif
