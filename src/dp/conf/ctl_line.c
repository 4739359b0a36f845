/*
 * ctl_line.c — the request line of offcore-dp's control socket (dp.h),
 * taken from the bytes a client sent: the one reader the control thread
 * runs before any command sees the text.  Pure, so that the fuzz target
 * (tests/fuzz/fuzz_dp_ctl.c) runs exactly what the daemon runs.
 *
 * The line is text: printable ASCII and tabs, then '\n' (a '\r' before it
 * is dropped).  A NUL would cut the line short where C strings end, and
 * terminal escapes or other control bytes would be echoed back in error
 * messages and logs: both are refused with the column, before anything
 * parses the line.  Thread-safe (the caller's buffers only).
 */
#include "dp.h"

#include <stdio.h>
#include <string.h>

int oc__dp_ctl_line(char *buf, size_t len, size_t cap, bool closed,
                    char *why, size_t whylen)
{
    const char *nl = memchr(buf, '\n', len);
    size_t n;

    if (nl == NULL) {
        if (len < cap && !closed)
            return 0;
        if (len >= cap)
            snprintf(why, whylen, "request line too long (at most %zu bytes)",
                     cap - 1);
        else
            snprintf(why, whylen, "no request line (no newline before the "
                     "client closed or went quiet)");
        return -1;
    }
    n = (size_t)(nl - buf);
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if ((c < 0x20 && c != '\t') || c >= 0x7f) {
            snprintf(why, whylen, "%s 0x%02x at column %zu: a request is one "
                     "line of printable ASCII",
                     c == 0 ? "NUL byte" : "control or non-ASCII byte", c,
                     i + 1);
            return -1;
        }
    }
    buf[n] = '\0';
    return 1;
}
