/*
 * fuzz_colld.c — libFuzzer target for oc__colld_decode(), the parser of the
 * collective descriptors a rank sends its agent (src/wire/colld.c).
 *
 * Input: one byte picks the job size the agent checks against (1, 2, 3,
 * 5, 64, 4096, ...), the rest is the descriptor, on an exact-size heap
 * copy so that AddressSanitizer sees any read past the end.  When it is
 * accepted, the invariants the agent (src/agent/router/rcoll.c) relies on are
 * checked: the arrays fill the input exactly, a memory block is an
 * allreduce's with in-range lengths that equal count x element size or
 * an all-to-allv's whose every block lies within its ranges, an
 * inline contribution an allreduce's, whole and at most
 * OC_COLLD_INLINE_MAX bytes, every count and
 * displacement times the element size stays below 2^48, re-encoding gives
 * back the same bytes.  The same bytes go to oc__colld_shape() (what a
 * rejected descriptor says it is: a known kind, a root of the job) and to
 * oc__colld_fail_decode(), the agents' failure message (accepted: 8
 * bytes, a status a collective ends with, re-encoded to the same bytes).
 * A broken invariant aborts.
 */
#include "fuzz_colld.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/colld.h"

unsigned long fuzz_colld_accepted;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_colld.c:%d: invariant broken: %s\n",         \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

const uint32_t fuzz_colld_sizes[8] = {1, 2, 3, 5, 64, 4096, 0, 7};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf, *again;
    oc_colld_t d;
    uint64_t *vals;
    uint32_t job_size;

    if (size < 1)
        return 0;
    job_size = fuzz_colld_sizes[data[0] & 7];
    buf = malloc(size - 1 ? size - 1 : 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data + 1, size - 1);
    {
        uint32_t seq;
        if (oc__colld_seq(buf, size - 1, &seq)) /* reads the fixed part only */
            CHECK(size - 1 >= OC_COLLD_HDR);
    }
    {
        uint8_t kind;
        uint32_t root;
        oc_status_t st;
        if (oc__colld_shape(buf, size - 1, job_size, &kind, &root)) {
            CHECK(size - 1 >= OC_COLLD_HDR);
            CHECK(kind >= OC_COLLD_ALLREDUCE && kind <= OC_COLLD_BARRIER);
            CHECK(kind == OC_COLLD_BCAST ? root < job_size : root == 0);
        }
        if (oc__colld_fail_decode(buf, size - 1, &st) == OC_OK) {
            uint8_t again8[OC_COLLD_FAIL_LEN];
            fuzz_colld_accepted++;
            CHECK(size - 1 == OC_COLLD_FAIL_LEN);
            CHECK(st < OC_OK && st != OC_INPROGRESS);
            oc__colld_fail_encode(st, again8);
            CHECK(memcmp(again8, buf, OC_COLLD_FAIL_LEN) == 0);
        }
    }
    if (oc__colld_decode(buf, size - 1, job_size, &d) == OC_OK) {
        fuzz_colld_accepted++;
        CHECK(oc__colld_size(&d) == size - 1);
        CHECK(d.kind >= OC_COLLD_ALLREDUCE && d.kind <= OC_COLLD_BARRIER);
        CHECK(d.nv == 0 || d.nv == job_size);
        if (d.flags & OC_COLLD_F_INLINE) { /* what rcoll.c relies on */
            /* bytes per element, an oracle apart from colld.c's table */
            static const uint8_t es[] = {4, 8, 8, 4, 8, 2, 2};
            size_t body = (size_t)(buf + size - 1 - d.data);
            CHECK(!(d.flags & OC_COLLD_F_CMA));
            CHECK(d.data == d.v + 32 * (size_t)d.nv);
            CHECK(body == d.dlen && body <= OC_COLLD_INLINE_MAX);
            if (d.kind == OC_COLLD_ALLTOALLV) {
                /* the send extent whole; the blocks DONE carries fit */
                uint64_t rsum = 0;
                CHECK(body == oc__colld_extent(&d, 0) * es[d.dtype]);
                for (uint32_t i = 0; i < d.nv; i++)
                    rsum += oc__colld_v(&d, 2, i) * es[d.dtype];
                CHECK(rsum <= OC_COLLD_INLINE_MAX);
            } else if (d.kind == OC_COLLD_BCAST) { /* the root's, or none */
                CHECK(d.count > 0 && d.count * es[d.dtype] <= OC_COLLD_INLINE_MAX);
                CHECK(body == 0 || body == d.count * es[d.dtype]);
            } else {
                CHECK(d.kind == OC_COLLD_ALLREDUCE);
                CHECK(body > 0 && d.count > 0 && body == d.count * es[d.dtype]);
            }
        } else {
            CHECK(d.data == NULL);
            CHECK(d.v + 32 * (size_t)d.nv == buf + size - 1);
        }
        /* its own block by the rank: only where the agent moves an
         * all-to-allv's blocks by memory */
        CHECK(!(d.flags & OC_COLLD_F_SELF) ||
              ((d.flags & OC_COLLD_F_CMA) && d.kind == OC_COLLD_ALLTOALLV));
        if (d.flags & OC_COLLD_F_CMA) { /* what src/agent/router/rcma.c relies on */
            CHECK(d.pid != 0 && d.slen > 0 && d.rlen > 0);
            CHECK(d.slen < ((uint64_t)1 << 51) && d.rlen < ((uint64_t)1 << 51));
            if (d.kind == OC_COLLD_ALLTOALLV) {
                /* every block within the ranges: rcma.c writes them so */
                for (uint32_t i = 0; i < d.nv; i++)
                    for (unsigned w = 0; w < 4; w += 2) {
                        uint64_t c = oc__colld_v(&d, w, i), o = oc__colld_v(&d, w + 1, i);
                        uint64_t lim = w == 0 ? d.slen : d.rlen;
                        CHECK(c == 0 || (c + o) * (lim / oc__colld_extent(&d, w)) <= lim);
                    }
            } else {
                CHECK(d.kind == OC_COLLD_ALLREDUCE && d.slen == d.rlen);
            }
            CHECK(d.saddr != 0 && d.saddr + d.slen > d.saddr);
            CHECK(d.raddr != 0 && d.raddr + d.rlen > d.raddr);
        } else {
            CHECK(d.pid == 0 && d.slen == 0 && d.rlen == 0);
        }
        vals = malloc(32 * (size_t)d.nv + 1);
        again = malloc(size);
        if (vals != NULL && again != NULL) {
            for (uint32_t i = 0; i < d.nv; i++)
                for (unsigned w = 0; w < 4; w++) {
                    vals[w * d.nv + i] = oc__colld_v(&d, w, i);
                    CHECK(vals[w * d.nv + i] < ((uint64_t)1 << 48));
                }
            oc__colld_encode(&d, vals, again);
            CHECK(memcmp(again, buf, size - 1) == 0);
        }
        free(vals);
        free(again);
    }
    free(buf);
    return 0;
}
