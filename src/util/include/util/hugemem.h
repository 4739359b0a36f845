/*
 * hugemem.h — large fixed regions (packet buffer pools, connection tables)
 * mapped on transparent huge pages where the kernel allows, every page
 * faulted in at creation.  Why: a packet path that touches a new 2 KB
 * buffer or a random 64-byte table entry per frame misses the TLB on 4 KB
 * pages once the region outgrows it (a 17 MB pool is 4,000 pages); on
 * 2 MB pages it is a handful of entries.  Best effort: where huge pages
 * are refused (THP "never", no contiguous memory) the region is on 4 KB
 * pages and works the same.  Thread-safe (plain system calls).
 */
#ifndef OC_UTIL_HUGEMEM_H
#define OC_UTIL_HUGEMEM_H

#include <stddef.h>

/**
 * Map @p len bytes of zeroed, private, read-write anonymous memory,
 * aligned to 2 MB when @p len is at least 1 MB (and then advised
 * MADV_HUGEPAGE), every page present on return.
 * @return the region (valid until oc__huge_unmap), or NULL when the
 *         memory cannot be had (errno set by mmap).
 */
void *oc__huge_map(size_t len);

/** Unmap a region oc__huge_map(@p len) returned.  NULL: a no-op. */
void oc__huge_unmap(void *p, size_t len);

#endif
