/*
 * secret.h — reading key files, in one place for every daemon that takes
 * one: the cluster and job keys (src/ctl/auth.c), ESP SA keys
 * (src/pkt/esp_conf.c) and the NVMe/TCP target's XTS keys (src/nvmf/ns.c).
 * A key file must be a regular file (not a symlink, FIFO or device),
 * readable by its owner only, owned by root or by this process's user:
 * anything else is refused with the reason and the fix, never read
 * (util/file.h's loader, OC_FILE_PRIVATE).  Messages name the file, never
 * its contents.  Pure except for the file
 * it opens; thread-safe.
 */
#ifndef OC_UTIL_SECRET_H
#define OC_UTIL_SECRET_H

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Read key file @p path whole into @p buf (@p cap bytes: a file of @p cap
 * bytes or more is refused as "larger than CAP-1 bytes").  The caller zeroes
 * @p buf after use.
 * @return OC_OK and *@p len; OC_ERR_CONFIG with @p why ("key file PATH:
 *         reason"): cannot be opened, not a regular file (a FIFO is not
 *         waited on), mode lets others read it, owned by another user,
 *         read error, too long.
 */
oc_status_t oc__secret_read(const char *path, uint8_t *buf, size_t cap,
                           size_t *len, char *why, size_t whylen);

/**
 * Decode hex key text @p s[0, @p n): an optional "0x", then hex digits in
 * pairs; blanks (space, tab, CR, LF) anywhere are skipped.
 * @return the bytes written to @p out; -1 when a character is neither hex
 *         nor blank (not hex text: a raw key, say); -2 when the digits are
 *         odd in number or make more than @p cap bytes.  On error @p out
 *         may hold part of the key: zero it.
 */
long oc__secret_hex(const uint8_t *s, size_t n, uint8_t *out, size_t cap);

#endif
