/*
 * cpu.c — CPU feature detection, once (util/cpu.h).  GCC's and clang's
 * __builtin_cpu_supports check that the OS saves the AVX-512 state; clang
 * 14 knows no "vaes", so VAES and VPCLMULQDQ come from CPUID leaf 7 (ECX
 * bits 9 and 10).
 */
#include "util/cpu.h"

#include <pthread.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static unsigned features;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#if defined(__x86_64__)
    unsigned a, b, c = 0, d;

    __builtin_cpu_init();
    if (__builtin_cpu_supports("aes"))
        features |= OC__CPU_AES;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        features |= OC__CPU_AVX512BW;
    if (__builtin_cpu_supports("sse4.2"))
        features |= OC__CPU_SSE42;
    if (__builtin_cpu_supports("avx2"))
        features |= OC__CPU_AVX2;
    if (__builtin_cpu_supports("avx512vl"))
        features |= OC__CPU_AVX512VL;
    if (__builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
        features |= OC__CPU_BMI;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        c = 0;
    if ((c >> 9 & 1) && (c >> 10 & 1))
        features |= OC__CPU_VAES;
#endif
}

unsigned oc__cpu_features(void)
{
    pthread_once(&once, detect);
    return features;
}
