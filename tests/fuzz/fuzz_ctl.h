/*
 * fuzz_ctl.h — what the control-plane fuzz target, its seed generator and
 * its replay driver share.
 *
 * A fuzz input is FUZZ_CTL_PREFIX bytes, then the bytes under test:
 *   [0] bit 0 clear: decode mode: the rest is one frame for oc__ctl_decode();
 *       bit 0 set: stream mode: the rest is a byte stream that reaches an
 *       oc_ctl_conn_t in chunks, then ends; bit 1 set (stream mode): the
 *       connection takes frames of at most OC_CTL_PREAUTH_FRAME_MAX, as a
 *       server's does before the peer authenticates;
 *   [1] stream mode: chunk sizes: 1 + (b & 63) bytes each, or, with bit 7
 *       set, sizes drawn from a generator seeded with b; bit 6 set: every
 *       third read is interrupted (EINTR).
 */
#ifndef OC_TESTS_FUZZ_CTL_H
#define OC_TESTS_FUZZ_CTL_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_CTL_PREFIX 2
#define FUZZ_CTL_STREAM 0x01
#define FUZZ_CTL_PREAUTH 0x02

/** Frames accepted so far (decoded, or read whole from a stream). */
extern unsigned long fuzz_ctl_accepted;
/** Whether the last input was all valid: its frame decoded, or its stream
 *  was read to the end as whole, valid frames. */
extern int fuzz_ctl_last_valid;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fuzz_ctl_seed_fn)(void *arg, const uint8_t *data, size_t size,
                                 int valid);

/** Generate the seed corpus: one frame of every type (several shapes of
 *  some), streams of frames cut in chunks, and a few near misses.
 *  @return the number of seeds. */
unsigned fuzz_ctl_seeds(fuzz_ctl_seed_fn fn, void *arg);

#endif
