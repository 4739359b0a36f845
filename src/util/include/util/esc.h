/*
 * esc.h — the one escaping of text that came from a peer or a file before
 * it reaches a log line or a terminal: every byte outside printable ASCII
 * (0x20..0x7e) is written as \xNN, so that a remote host's NQN, a word of
 * a config file or a mistyped command cannot move the cursor, recolour or
 * retitle a terminal, ring its bell, split a log line or forge one.
 *
 * The log writer (util/log.h) and the config error list (util/kv.h) run
 * every line through it, the Prometheus writer every label value
 * (src/metrics), the CLI what it prints of a daemon's answer or of its
 * own command line.  A backslash is kept as it is: escaping twice gives
 * what escaping once gave, so a layer may escape what another already
 * did.  (The price: "\x1b" typed literally and an escaped ESC read the
 * same.  These are messages for people, not a codec.)
 *
 * Pure; thread-safe.
 */
#ifndef OC_UTIL_ESC_H
#define OC_UTIL_ESC_H

#include <stddef.h>

/** Write @p s[0, @p n) escaped (above) into @p out, NUL-terminated, cut
 *  before an escape that would not fit whole in @p cap bytes.
 *  @return the length written (< @p cap; 0 when @p cap is 0). */
size_t oc__esc(const void *s, size_t n, char *out, size_t cap);

/** oc__esc() of the C string @p s.  @return @p out, for printf's "%s". */
const char *oc__esc_str(const char *s, char *out, size_t cap);

/** Whether @p s[0, @p n) needs no escaping (printable ASCII only). */
int oc__esc_clean(const void *s, size_t n);

/** The length (2..4) of the UTF-8 character @p s[0, @p n) starts with,
 *  when it is well-formed (shortest form, no surrogate, at most U+10FFFF)
 *  and not a C1 control (U+0080..U+009F, which terminals obey as ESC
 *  sequences); else 0.  For formats that carry UTF-8 (Prometheus label
 *  values), where such a character may pass and any other byte >= 0x80
 *  is escaped. */
size_t oc__esc_utf8(const void *s, size_t n);

#endif
