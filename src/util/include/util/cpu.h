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
};

/** The OC__CPU_* bits this CPU has. */
unsigned oc__cpu_features(void);

#endif
