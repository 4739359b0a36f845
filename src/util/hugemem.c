/*
 * hugemem.c — large regions on transparent huge pages (util/hugemem.h).
 * Thread-safe: plain system calls, no state.
 */
#include "util/hugemem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_SZ ((size_t)2 << 20)

/* the mapping's real length: huge regions end on a 2 MB boundary so that
 * the tail is a huge page too */
static size_t span(size_t len)
{
    return len < HUGE_SZ / 2 ? len : (len + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
}

void *oc__huge_map(size_t len)
{
    size_t n = span(len), page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *raw, *p;
    uintptr_t a;

    if (len == 0)
        return NULL;
    if (len < HUGE_SZ / 2) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* over-map by 2 MB, keep the aligned middle */
    raw = mmap(NULL, n + HUGE_SZ, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    a = ((uintptr_t)raw + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1);
    p = (uint8_t *)a;
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (raw + n + HUGE_SZ > p + n)
        munmap(p + n, (size_t)(raw + n + HUGE_SZ - (p + n)));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE); /* refused: 4 KB pages, still works */
#endif
    /* present now, so that the packet path never faults: one write per
     * 4 KB page faults in the huge page around it */
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, n, MADV_POPULATE_WRITE) == 0)
        return p;
#endif
    for (size_t off = 0; off < n; off += page)
        ((volatile uint8_t *)p)[off] = 0;
    return p;
}

void oc__huge_unmap(void *p, size_t len)
{
    if (p != NULL)
        munmap(p, span(len));
}
