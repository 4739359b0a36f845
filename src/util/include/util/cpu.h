/*
 * cpu.h — the CPU features that fast paths choose their code by, detected
 * once per process (the first call; thread-safe).  New vector paths ask
 * here rather than probing on their own; 0 on other architectures.
 */
#ifndef OC_UTIL_CPU_H
#define OC_UTIL_CPU_H

enum {
    OC__CPU_AES      = 1u << 0, /* AES-NI */
    OC__CPU_AVX512BW = 1u << 1, /* AVX-512 F and BW, their state saved by the OS */
    OC__CPU_VAES     = 1u << 2, /* VAES and VPCLMULQDQ (512-bit with AVX512BW) */
    OC__CPU_SSE42    = 1u << 3, /* SSE4.2 (crc32) */
    OC__CPU_AVX2     = 1u << 4, /* AVX2, its state saved by the OS */
    OC__CPU_AVX512VL = 1u << 5, /* AVX-512 VL (with F and BW: OC__CPU_AVX512BW) */
    OC__CPU_BMI      = 1u << 6, /* BMI1 and BMI2 */
};

/** The OC__CPU_* bits this CPU has. */
unsigned oc__cpu_features(void);

#endif
