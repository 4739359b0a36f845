/*
 * nvmf_xts.c — bench-nvmf-xts: offcore-nvmf's whole-request AES-256-XTS
 * (src/nvmf/xts.c) against OpenSSL's EVP, one core, in the same run.
 *
 * Each repeat measures, interleaved (the order swapped every repeat), EVP
 * (one EVP call per 4 KiB unit, what ns.c did before) and the automatic
 * path (VAES/AVX-512 when the CPU has it, else EVP again), encrypting then
 * decrypting --size-byte requests (128 KiB: 32 units) in place until
 * --mib MiB went through.  Time is the thread's CPU time (the machine is
 * shared).  JSON lines: one per measurement, then one per direction with
 * the medians and the median of the per-repeat ratios.
 */
#include "nvmf/xts.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "median.h"

/* GB/s of one path over @p total bytes */
static double run(oc__nvmf_xts_t *x, uint8_t *buf, uint32_t size,
                  uint64_t total, int dec)
{
    uint64_t t0 = oc__thread_cpu_ns(), lba = 0;

    for (uint64_t done = 0; done < total; done += size, lba += size / 4096)
        if (oc__nvmf_xts_run(x, buf, 4096, size / 4096, lba, dec)) {
            fprintf(stderr, "bench-nvmf-xts: XTS failed\n");
            exit(1);
        }
    return (double)total / (double)(oc__thread_cpu_ns() - t0);
}

int main(int argc, char **argv)
{
    int repeats = 7;
    double mib = 64;
    uint32_t size = 128 * 1024;
    uint8_t key[64];
    oc__nvmf_xts_t *evp = NULL, *vec = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = atof(argv[++i]);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = (uint32_t)strtoul(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: bench-nvmf-xts [--repeats N (7)] "
                    "[--mib M (64)] [--size BYTES (131072)]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > 1000 || mib <= 0 || size < 4096 ||
        size % 4096 || size > (64u << 20)) {
        fprintf(stderr, "bench-nvmf-xts: --repeats 1..1000, --mib > 0, "
                "--size a multiple of 4096 up to 64 MiB\n");
        return 2;
    }
    uint64_t total = (uint64_t)(mib * 1048576.0);
    total = total < size ? size : total - total % size;
    uint8_t *buf = aligned_alloc(64, size);
    double g[2][2][1000], r[2][1000];

    if (!buf)
        return 1;
    for (int i = 0; i < 64; i++)
        key[i] = (uint8_t)(i * 37 + 11);
    for (uint32_t i = 0; i < size; i++)
        buf[i] = (uint8_t)i;
    if (oc__nvmf_xts_new(key, OC__NVMF_XTS_EVP, &evp) ||
        oc__nvmf_xts_new(key, OC__NVMF_XTS_AUTO, &vec)) {
        fprintf(stderr, "bench-nvmf-xts: XTS setup failed\n");
        return 1;
    }
    for (int k = 0; k < repeats; k++)
        for (int dec = 0; dec < 2; dec++) {
            for (int j = 0; j < 2; j++) {
                int which = (j + k) % 2; /* 0 EVP, 1 ours */
                g[dec][which][k] = run(which ? vec : evp, buf, size, total,
                                       dec);
            }
            r[dec][k] = g[dec][1][k] / g[dec][0][k];
            printf("{\"bench\":\"nvmf-xts\",\"op\":\"%s\",\"repeat\":%d,"
                   "\"size\":%u,\"evp_gbs\":%.3f,\"xts_gbs\":%.3f,"
                   "\"vector\":%s}\n", dec ? "decrypt" : "encrypt", k, size,
                   g[dec][0][k], g[dec][1][k],
                   oc__nvmf_xts_vector(vec) ? "true" : "false");
        }
    for (int dec = 0; dec < 2; dec++)
        printf("{\"bench\":\"nvmf-xts\",\"op\":\"%s\",\"size\":%u,"
               "\"repeats\":%d,\"evp_gbs_median\":%.3f,"
               "\"xts_gbs_median\":%.3f,\"ratio_median\":%.2f}\n",
               dec ? "decrypt" : "encrypt", size, repeats,
               median(g[dec][0], repeats), median(g[dec][1], repeats),
               median(r[dec], repeats));
    oc__nvmf_xts_free(evp);
    oc__nvmf_xts_free(vec);
    free(buf);
    return 0;
}
