/*
 * memcpy.c — single-core memcpy bandwidth (binary `bench-memcpy`): the
 * physical limit the apps' data movement is compared with.  For each
 * buffer size, copies one buffer into another repeatedly for about
 * --seconds, and prints one JSON line
 *   {"bench":"memcpy","bytes":SIZE,"GBps":G,"seconds":S,"copies":N}
 * where GBps counts bytes copied (not read + written), in 10^9 bytes/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

/* Keep the compiler from proving the copies dead. */
static inline void clobber(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

static double copy_for(char *dst, const char *src, size_t bytes, uint64_t reps)
{
    double t0 = oc_app_now();
    for (uint64_t r = 0; r < reps; r++) {
        memcpy(dst, src, bytes);
        clobber(dst);
    }
    return oc_app_now() - t0;
}

int main(int argc, char **argv)
{
    static const char prog[] = "bench-memcpy";
    uint64_t ms = 200;
    const char *sizes = "4Ki,64Ki,8Mi";
    oc_app_flag_t flags[] = {
        {"sizes", OC_APP_FLAG_STRING, &sizes, 0, 0,
         "comma-separated buffer sizes in bytes (suffixes allowed)"},
        {"ms", OC_APP_FLAG_U64, &ms, 1, 600000,
         "milliseconds of copying per size"},
    };
    oc_app_parse_flags(argc, argv, prog,
                       "Single-core memcpy bandwidth, one JSON line per buffer size.",
                       flags, sizeof flags / sizeof flags[0]);

    char list[256];
    snprintf(list, sizeof list, "%s", sizes);
    int rc = OC_APP_EXIT_OK;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t bytes;
        if (!oc_app_parse_size(tok, &bytes) || bytes == 0 || bytes > (UINT64_C(1) << 34)) {
            fprintf(stderr, "%s: bad size '%s' in --sizes (try --help)\n", prog, tok);
            return OC_APP_EXIT_USAGE;
        }
        uint64_t n = (bytes + 7) / 8;
        uint64_t *src = oc_app_alloc_table(n), *dst = oc_app_alloc_table(n);
        if (src == NULL || dst == NULL) {
            fprintf(stderr, "%s: cannot allocate 2 x %llu bytes\n", prog,
                    (unsigned long long)bytes);
            oc_app_free_table(src, n);
            oc_app_free_table(dst, n);
            rc = OC_APP_EXIT_FAIL;
            continue;
        }
        memset(src, 0x5a, bytes);
        /* Warm up (caches, page tables, CPU clock), then calibrate by
         * doubling until a run takes a tenth of the target, then run. */
        const double target = (double)ms / 1000.0;
        uint64_t reps = 1;
        double t = copy_for((char *)dst, (const char *)src, bytes, reps);
        while (t < target / 10) {
            reps *= 2;
            t = copy_for((char *)dst, (const char *)src, bytes, reps);
        }
        reps = (uint64_t)((double)reps * target / t) + 1;
        t = copy_for((char *)dst, (const char *)src, bytes, reps);
        if (memcmp(src, dst, bytes) != 0) {
            fprintf(stderr, "%s: copy of %llu bytes is wrong\n", prog,
                    (unsigned long long)bytes);
            rc = OC_APP_EXIT_FAIL;
        }
        oc_app_json_t j;
        oc_app_json_begin(&j);
        oc_app_json_str(&j, "bench", "memcpy");
        oc_app_json_u64(&j, "bytes", bytes);
        oc_app_json_dbl(&j, "GBps", (double)bytes * (double)reps / t / 1e9);
        oc_app_json_dbl(&j, "seconds", t);
        oc_app_json_u64(&j, "copies", reps);
        oc_app_json_print(&j);
        oc_app_free_table(src, n);
        oc_app_free_table(dst, n);
    }
    return rc;
}
