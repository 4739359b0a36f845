/*
 * shmseg.c — create and map the rank<->agent shared-memory segment
 * (shmseg.h).  Called on the control path only (registration).
 */
#include "wire/shmseg.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when the geometry is refused */
static size_t seg_bytes(size_t ring, uint32_t ndown, size_t cring)
{
    if (ring == 0 || cring == 0 || ndown == 0 || ndown > OC_SHMSEG_MAX_DOWN ||
        cring > SIZE_MAX / 4 ||
        ring > (SIZE_MAX - OC_SHMSEG_HDR - 2 * cring) / (1 + (size_t)ndown))
        return 0;
    return OC_SHMSEG_HDR + (1 + (size_t)ndown) * ring + 2 * cring;
}

static oc_status_t attach(oc_shmseg_t *seg, const oc_shmseg_hdr_t *h,
                          size_t ring, size_t cring, int format)
{
    const uint32_t nslots = h->nslots, slot_size = h->slot_size,
                   ndown = h->ndown;
    uint8_t *b = seg->base;
    oc_status_t st;

    if ((seg->down = calloc(ndown, sizeof(*seg->down))) == NULL)
        return OC_ERR_NO_MEMORY;
    seg->ndown = ndown;
    st = oc__spsc_attach(&seg->up, b + OC_SHMSEG_HDR, ring, nslots, slot_size,
                         format);
    for (uint32_t i = 0; i < ndown && st == OC_OK; i++)
        st = oc__spsc_attach(&seg->down[i],
                             b + OC_SHMSEG_HDR + (1 + (size_t)i) * ring, ring,
                             nslots, slot_size, format);
    if (st == OC_OK)
        st = oc__spsc_attach(&seg->cdown,
                             b + OC_SHMSEG_HDR + (1 + (size_t)ndown) * ring,
                             cring, h->cnslots, h->cslot_size, format);
    if (st == OC_OK)
        st = oc__spsc_attach(&seg->cup,
                             b + OC_SHMSEG_HDR + (1 + (size_t)ndown) * ring +
                                 cring,
                             cring, h->cnslots, h->cslot_size, format);
    return st;
}

oc_status_t oc__shmseg_create(uint32_t nslots, uint32_t slot_size,
                              uint32_t ndown, oc_shmseg_t *seg, int *fd_out)
{
    const size_t ring = oc__spsc_bytes(nslots, slot_size);
    const size_t cring = oc__spsc_bytes(OC_SHMSEG_CDOWN_SLOTS,
                                        OC_SHMSEG_CDOWN_SLOT);
    const size_t bytes = seg_bytes(ring, ndown, cring);
    oc_status_t st;
    void *base;
    int fd;

    if (bytes == 0 || seg == NULL || fd_out == NULL)
        return OC_ERR_INVALID_PARAM;
    fd = memfd_create("offcore-rank-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return OC_ERR_NO_RESOURCE;
    if (ftruncate(fd, (off_t)bytes) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        goto err;
    base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        goto err;
    memset(seg, 0, sizeof(*seg));
    seg->base = base;
    seg->bytes = bytes;
    seg->hdr = base;
    seg->hdr->magic = OC_SHMSEG_MAGIC;
    seg->hdr->version = OC_SHMSEG_VERSION;
    seg->hdr->nslots = nslots;
    seg->hdr->slot_size = slot_size;
    seg->hdr->ring_bytes = ring;
    seg->hdr->ndown = ndown;
    seg->hdr->cnslots = OC_SHMSEG_CDOWN_SLOTS;
    seg->hdr->cslot_size = OC_SHMSEG_CDOWN_SLOT;
    if ((st = attach(seg, seg->hdr, ring, cring, 1)) != OC_OK) {
        oc__shmseg_unmap(seg);
        close(fd);
        return st == OC_ERR_NO_MEMORY ? st : OC_ERR_NO_RESOURCE;
    }
    *fd_out = fd;
    return OC_OK;
err:
    close(fd);
    return OC_ERR_NO_RESOURCE;
}

oc_status_t oc__shmseg_map(int fd, oc_shmseg_t *seg)
{
    oc_shmseg_hdr_t h;
    struct stat sb;
    size_t ring, cring, bytes;
    oc_status_t st;
    void *base;

    if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)OC_SHMSEG_HDR ||
        pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        return OC_ERR_INVALID_PARAM;
    ring = oc__spsc_bytes(h.nslots, h.slot_size);
    cring = oc__spsc_bytes(h.cnslots, h.cslot_size);
    bytes = h.magic == OC_SHMSEG_MAGIC && h.version == OC_SHMSEG_VERSION
                ? seg_bytes(ring, h.ndown, cring)
                : 0;
    if (bytes == 0 || h.ring_bytes != ring || (uint64_t)sb.st_size != bytes)
        return OC_ERR_INVALID_PARAM;
    base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return OC_ERR_NO_RESOURCE;
    memset(seg, 0, sizeof(*seg));
    seg->base = base;
    seg->bytes = bytes;
    seg->hdr = base;
    if ((st = attach(seg, &h, ring, cring, 0)) != OC_OK) {
        oc__shmseg_unmap(seg);
        return st == OC_ERR_NO_MEMORY ? st : OC_ERR_INVALID_PARAM;
    }
    return OC_OK;
}

void oc__shmseg_unmap(oc_shmseg_t *seg)
{
    if (seg == NULL || seg->base == NULL)
        return;
    munmap(seg->base, seg->bytes);
    seg->base = NULL;
    free(seg->down);
    seg->down = NULL;
    seg->ndown = 0;
}
