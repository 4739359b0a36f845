/*
 * file.h — the one loader of the files a daemon reads: configuration
 * files (offcore-dp, offcore-nvmf), rule and trace files (src/pkt/acl,
 * offcore-dp's `rules` lines and `rules load`) and key files (secret.h).
 *
 * Every file is checked on its open descriptor before a byte is read
 * (what is checked is what is read):
 *   - opened O_NONBLOCK, so that a FIFO never waits for a writer (it is
 *     then refused as not a regular file: nothing ever blocks a loop);
 *   - a regular file only: FIFOs, devices (/dev/zero), sockets and
 *     directories are refused by name;
 *   - at most max_bytes long: a longer file is refused before it is read
 *     (its size), and the read itself stops at the cap (a file that grows,
 *     or reports size 0 as /proc files do), so memory stays bounded;
 *   - key files also: not a symbolic link, readable by the owner only,
 *     owned by root or by this process's user (OC_FILE_PRIVATE).
 * Messages are "WHAT PATH: reason" (WHAT: "rules file", "config file",
 * "key file"): they name the file, never its contents.
 *
 * Pure except for the file it opens; thread-safe.
 */
#ifndef OC_UTIL_FILE_H
#define OC_UTIL_FILE_H

#include <offcore/offcore.h>
#include <stddef.h>

/** Refuse a symbolic link (the final component), and a file others may
 *  read or that belongs to another user: the rules of key files. */
#define OC_FILE_PRIVATE 1u

typedef struct {
    const char *what;      /* "rules file": the start of every message */
    size_t      max_bytes; /* files of more bytes are refused (> 0) */
    unsigned    flags;     /* OC_FILE_PRIVATE or 0 */
} oc_file_rules_t;

/**
 * Open @p path for reading under @p r (above): checked, not read.
 * @return OC_OK and *@p fd (the caller closes it; O_CLOEXEC, left
 *         O_NONBLOCK, which a regular file ignores); OC_ERR_CONFIG with
 *         @p why ("WHAT PATH: reason"): cannot be opened (errno's text;
 *         EMFILE says the descriptor limit), not a regular file (a FIFO,
 *         a directory, a socket, a device), longer than max_bytes, a
 *         symbolic link / others may read it / another user's
 *         (OC_FILE_PRIVATE).
 */
oc_status_t oc__file_open(const char *path, const oc_file_rules_t *r,
                          int *fd, char *why, size_t whylen);

/**
 * Read from @p fd (opened by oc__file_open()) to its end into @p buf of
 * @p cap bytes.  Stops at @p cap: a file of @p cap bytes or more is an
 * error.  Does not close @p fd.
 * @return OC_OK and *@p len; OC_ERR_CONFIG with @p why ("WHAT PATH:
 *         reason"): read error, @p cap bytes or more.
 */
oc_status_t oc__file_read_fd(int fd, const char *path, const oc_file_rules_t *r,
                             void *buf, size_t cap, size_t *len, char *why,
                             size_t whylen);

/**
 * oc__file_open() and oc__file_read_fd() of the whole file into memory.
 * @return OC_OK, *@p buf (malloc'ed, @p *len bytes and a NUL after them;
 *         the caller frees it) and *@p len; OC_ERR_CONFIG with @p why as
 *         above, or "longer than max_bytes"; OC_ERR_NO_MEMORY (@p why
 *         says so).  Outputs are set on success only.
 */
oc_status_t oc__file_read(const char *path, const oc_file_rules_t *r,
                          char **buf, size_t *len, char *why, size_t whylen);

/** "64 MiB", "1 KiB", "100 bytes": a limit as messages and docs say it,
 *  in @p out (@p cap bytes; 32 suffice).  @return @p out. */
const char *oc__file_size_str(size_t bytes, char *out, size_t cap);

#endif
