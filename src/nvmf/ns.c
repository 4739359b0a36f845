/*
 * ns.c — a namespace's backing store and its protection: a regular file
 * (created sparse when missing and sized) or a block device, opened
 * O_DIRECT when the file system allows it; optionally a CRC32C per block
 * in a sidecar file, checked on every read (a mismatch reads as an error,
 * never as data), and AES-256-XTS at rest (tweak: the block's LBA).  The
 * formats and guarantees: docs/nvmf.md, "Data protection".
 *
 * Threading: open and close before and after the workers run; verify and
 * seal on any worker, each with its own XTS object (xts.h: one call per
 * request, VAES/AVX-512 or EVP);
 * the checksum table is shared (workers write the entries of the blocks
 * they write; two writes of one block at once are the host's race, as
 * on one worker).
 * Trust: the key file must be the target's user's and unreadable by others.
 */
#include "target.h"
#include "xts.h"
#include "util/log.h"
#include "util/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOGC OC_COMP_NVMF
#define META_MAGIC "offcore-nvmf-crc32c-v1"
#define META_HDR 4096u

/* An XTS key file: 64 raw bytes, or 128 hex digits (util/secret.h). */
static int read_key(const char *path, uint8_t key[64])
{
    uint8_t buf[260];
    char why[PATH_MAX + 128];
    size_t n = 0;
    int rc = -1;

    if (oc__secret_read(path, buf, sizeof(buf), &n, why, sizeof(why)) != OC_OK) {
        oc_error(LOGC, "%s", why);
        goto out;
    }
    if (n == 64)
        memcpy(key, buf, 64);
    else if (oc__secret_hex(buf, n, key, 64) != 64) {
        oc_error(LOGC, "key file %s: want 64 raw bytes or 128 hex "
                 "digits (AES-256-XTS takes two 256-bit keys)", path);
        goto out;
    }
    if (!memcmp(key, key + 32, 32)) {
        oc_error(LOGC, "key file %s: the two halves of an XTS key must "
                 "differ", path);
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(buf, sizeof(buf));
    if (rc != 0)
        OPENSSL_cleanse(key, 64);
    return rc;
}

static int crypto_init(oc_nvmf_ns_t *ns, const char *key_path)
{
    uint8_t key[64];
    int rc;

    if (read_key(key_path, key))
        return -1;
    rc = oc__nvmf_xts_new(key, OC__NVMF_XTS_AUTO, &ns->xts);
    OPENSSL_cleanse(key, sizeof(key));
    if (rc) {
        oc_error(LOGC, "AES-256-XTS setup failed (OpenSSL or memory)");
        return -1;
    }
    return 0;
}

/* the sidecar: open it, or make it from the data already there */
static int meta_open(oc_nvmf_ns_t *ns, const char *path)
{
    size_t len = META_HDR + ((ns->nblocks * 4 + 4095) & ~(size_t)4095);
    uint8_t hdr[META_HDR];
    struct stat st;
    int created = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);

    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        created = 1;
    }
    if (fd < 0) {
        oc_error(LOGC, "checksum file %s: %s", path, strerror(errno));
        return -1;
    }
    if (!created) {
        if (fstat(fd, &st) || (size_t)st.st_size < len ||
            pread(fd, hdr, META_HDR, 0) != META_HDR ||
            memcmp(hdr, META_MAGIC, sizeof(META_MAGIC)) ||
            oc__load_le32(hdr + 32) != ns->bs || oc__load_le64(hdr + 40) != ns->nblocks) {
            oc_error(LOGC, "checksum file %s is not one for %s (%llu "
                     "blocks of %u bytes): move it away to rebuild it", path,
                     ns->path, (unsigned long long)ns->nblocks, ns->bs);
            close(fd);
            return -1;
        }
    } else if (ftruncate(fd, (off_t)len)) {
        oc_error(LOGC, "checksum file %s: %s", path, strerror(errno));
        goto err_unlink;
    }
    ns->meta_map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ns->meta_map == MAP_FAILED) {
        ns->meta_map = NULL;
        oc_error(LOGC, "checksum file %s: mmap: %s", path, strerror(errno));
        goto err_unlink;
    }
    ns->meta_map_len = len;
    ns->meta_fd = fd;
    ns->crc = (_Atomic uint32_t *)(void *)((uint8_t *)ns->meta_map + META_HDR);
    if (created) {
        /* checksum what the backing store holds now */
        uint8_t *buf = NULL; /* aligned: the data may be open O_DIRECT */
        uint64_t per = (1u << 20) >> ns->bs_shift;
        if (posix_memalign((void **)&buf, 4096, 1 << 20))
            goto err_unlink;
        oc_info(LOGC, "%s: building checksums of %llu blocks", path,
                (unsigned long long)ns->nblocks);
        for (uint64_t lba = 0; lba < ns->nblocks; lba += per) {
            uint64_t n = ns->nblocks - lba < per ? ns->nblocks - lba : per;
            ssize_t r = pread(ns->fd, buf, n << ns->bs_shift,
                              (off_t)(lba << ns->bs_shift));
            if (r < 0) {
                oc_error(LOGC, "%s: %s", ns->path, strerror(errno));
                free(buf);
                goto err_unlink;
            }
            if ((uint64_t)r < (n << ns->bs_shift))
                memset(buf + r, 0, (n << ns->bs_shift) - (uint64_t)r);
            for (uint64_t i = 0; i < n; i++)
                atomic_store_explicit(&ns->crc[lba + i],
                                      oc__crc32c(0, buf + (i << ns->bs_shift),
                                                 ns->bs),
                                      memory_order_relaxed);
        }
        free(buf);
        memset(hdr, 0, sizeof(hdr));
        memcpy(hdr, META_MAGIC, sizeof(META_MAGIC));
        oc__store_le32(hdr + 32, ns->bs);
        oc__store_le64(hdr + 40, ns->nblocks);
        memcpy(ns->meta_map, hdr, META_HDR);
        if (msync(ns->meta_map, len, MS_SYNC)) {
            oc_error(LOGC, "%s: %s", path, strerror(errno));
            goto err_unlink;
        }
    }
    return 0;
err_unlink:
    if (ns->meta_map)
        munmap(ns->meta_map, len);
    ns->meta_map = NULL;
    ns->crc = NULL;
    ns->meta_fd = -1;
    if (created)
        unlink(path);
    close(fd);
    return -1;
}

oc_status_t oc__nvmf_ns_open(const oc_nvmf_ns_conf_t *nc, const char *subnqn,
                            oc_nvmf_ns_t **out)
{
    oc_nvmf_ns_t *ns = calloc(1, sizeof(*ns));
    struct stat st;
    uint64_t size;
    int flags = O_RDWR | O_CLOEXEC;
    uint8_t md[32];
    unsigned mdlen = 0;
    char idsrc[OC_NVMF_NQN_MAX + 32];

    if (!ns)
        return OC_ERR_NO_MEMORY;
    ns->fd = ns->meta_fd = ns->fixed = -1;
    ns->nsid = nc->nsid;
    ns->bs = nc->block_size;
    ns->bs_shift = nc->block_size == 512 ? 9 : 12;
    snprintf(ns->path, sizeof(ns->path), "%s", nc->path);
    if (nc->size && stat(nc->path, &st) && errno == ENOENT)
        flags |= O_CREAT;
    ns->fd = nc->direct ? open(nc->path, flags | O_DIRECT, 0600) : -1;
    if (ns->fd >= 0)
        ns->direct = 1;
    else if (nc->direct == 1) {
        oc_error(LOGC, "%s: cannot open with O_DIRECT: %s", nc->path,
                 strerror(errno));
        goto err;
    }
    if (ns->fd < 0)
        ns->fd = open(nc->path, flags, 0600);
    if (ns->fd < 0 || fstat(ns->fd, &st)) {
        oc_error(LOGC, "%s: %s", nc->path, strerror(errno));
        goto err;
    }
    if (S_ISBLK(st.st_mode)) {
        if (nc->integrity && !nc->integrity_path[0]) {
            oc_error(LOGC, "%s: a block device keeps its checksums in "
                     "a file: add integrity-file=PATH", nc->path);
            goto err;
        }
        if (ioctl(ns->fd, BLKGETSIZE64, &size)) {
            oc_error(LOGC, "%s: size: %s", nc->path, strerror(errno));
            goto err;
        }
        if (nc->size > size) {
            oc_error(LOGC, "%s: device has %llu bytes, config asks %llu",
                     nc->path, (unsigned long long)size,
                     (unsigned long long)nc->size);
            goto err;
        }
    } else if (S_ISREG(st.st_mode)) {
        size = (uint64_t)st.st_size;
        if (nc->size > size && ftruncate(ns->fd, (off_t)nc->size)) {
            oc_error(LOGC, "%s: extend to %llu bytes: %s", nc->path,
                     (unsigned long long)nc->size, strerror(errno));
            goto err;
        }
    } else {
        oc_error(LOGC, "%s: neither a regular file nor a block device",
                 nc->path);
        goto err;
    }
    if (nc->size)
        size = nc->size;
    ns->nblocks = size >> ns->bs_shift;
    if (ns->nblocks == 0) {
        oc_error(LOGC, "%s: empty (give a size to create it)", nc->path);
        goto err;
    }
    /* a stable NGUID/UUID from the subsystem NQN and the NSID */
    snprintf(idsrc, sizeof(idsrc), "%s/%u", subnqn, nc->nsid);
    EVP_Digest(idsrc, strlen(idsrc), md, &mdlen, EVP_sha256(), NULL);
    memcpy(ns->uuid, md, 16);
    ns->uuid[6] = (uint8_t)((ns->uuid[6] & 0x0f) | 0x50); /* name-based */
    ns->uuid[8] = (uint8_t)((ns->uuid[8] & 0x3f) | 0x80);
    if (nc->key_path[0] && crypto_init(ns, nc->key_path))
        goto err;
    if (nc->integrity) {
        char mp[4200];
        if (nc->integrity_path[0])
            snprintf(mp, sizeof(mp), "%s", nc->integrity_path);
        else
            snprintf(mp, sizeof(mp), "%s.crc", nc->path);
        if (meta_open(ns, mp))
            goto err;
    }
    oc_info(LOGC, "namespace %u: %s, %llu blocks of %u bytes%s%s%s",
            ns->nsid, ns->path, (unsigned long long)ns->nblocks, ns->bs,
            ns->direct ? ", O_DIRECT" : "", ns->crc ? ", CRC32C per block" : "",
            ns->xts ? (oc__nvmf_xts_vector(ns->xts)
                           ? ", AES-256-XTS (VAES/AVX-512)"
                           : ", AES-256-XTS (OpenSSL)") : "");
    *out = ns;
    return OC_OK;
err:
    oc__nvmf_ns_close(ns);
    return OC_ERR_CONFIG;
}

void oc__nvmf_ns_close(oc_nvmf_ns_t *ns)
{
    if (!ns)
        return;
    if (ns->meta_map) {
        msync(ns->meta_map, ns->meta_map_len, MS_SYNC);
        munmap(ns->meta_map, ns->meta_map_len);
    }
    if (ns->meta_fd >= 0) {
        fdatasync(ns->meta_fd);
        close(ns->meta_fd);
    }
    if (ns->fd >= 0) {
        fdatasync(ns->fd);
        close(ns->fd);
    }
    oc__nvmf_xts_free(ns->xts);
    for (int i = 0; i < ns->nxts_w; i++)
        oc__nvmf_xts_free(ns->xts_w[i]);
    free(ns->xts_w);
    free(ns);
}

int oc__nvmf_ns_workers(oc_nvmf_ns_t *ns, int n)
{
    if (!ns->xts || n <= 1)
        return 0;
    ns->xts_w = calloc((size_t)n, sizeof(*ns->xts_w));
    if (!ns->xts_w)
        goto err;
    ns->nxts_w = n;
    for (int i = 0; i < n; i++)
        if (oc__nvmf_xts_dup(ns->xts, &ns->xts_w[i]))
            goto err;
    return 0;
err:
    oc_error(LOGC, "namespace %u: AES-256-XTS for %d workers: "
             "out of memory or refused (OpenSSL)", ns->nsid, n);
    return -1;
}

static oc__nvmf_xts_t *xts_of(const oc_nvmf_ns_t *ns, int w)
{
    return ns->xts_w ? ns->xts_w[w] : ns->xts;
}

/* CRCs over the ciphertext first, then one XTS pass over the request */
uint64_t oc__nvmf_ns_verify(oc_nvmf_ns_t *ns, int w, uint8_t *buf,
                           uint64_t lba, uint32_t n, int *bad)
{
    *bad = 0;
    for (uint32_t i = 0; ns->crc && i < n; i++)
        if (oc__crc32c(0, buf + ((size_t)i << ns->bs_shift), ns->bs) !=
            atomic_load_explicit(&ns->crc[lba + i], memory_order_relaxed)) {
            *bad = 1;
            return lba + i;
        }
    if (ns->xts && oc__nvmf_xts_run(xts_of(ns, w), buf, ns->bs, n, lba, 1)) {
        *bad = 1;
        return lba;
    }
    return 0;
}

int oc__nvmf_ns_seal(oc_nvmf_ns_t *ns, int w, uint8_t *buf, uint64_t lba,
                    uint32_t n)
{
    if (ns->xts && oc__nvmf_xts_run(xts_of(ns, w), buf, ns->bs, n, lba, 0))
        return -1;
    for (uint32_t i = 0; ns->crc && i < n; i++)
        atomic_store_explicit(&ns->crc[lba + i],
                              oc__crc32c(0, buf + ((size_t)i << ns->bs_shift),
                                         ns->bs),
                              memory_order_relaxed);
    return 0;
}

void oc__nvmf_ns_mark_zero(oc_nvmf_ns_t *ns, uint64_t lba, uint64_t n)
{
    static uint8_t zero[4096];
    uint32_t c;

    if (!ns->crc)
        return;
    c = oc__crc32c(0, zero, ns->bs);
    for (uint64_t i = 0; i < n; i++)
        atomic_store_explicit(&ns->crc[lba + i], c, memory_order_relaxed);
}
