/*
 * tls.c — UCX_TLS lists rewritten for a purpose (transport_int.h): the
 * transports of a list that reach other hosts (the agents' network
 * context), and a list for a peer of another user on this host.  Pure
 * string functions; thread-safe.
 */
#include "transport_int.h"

#include <stdio.h>
#include <string.h>

/* The names of a positive UCX_TLS list that reach other hosts. */
int oc__tr_net_tls(const char *tls, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const char *p = tls; *p;) {
        size_t n = strcspn(p, ",");
        int local = (n == 2 && !strncmp(p, "sm", 2)) ||
                    (n == 3 && !strncmp(p, "shm", 3)) ||
                    (n == 4 && !strncmp(p, "cuda", 4)) ||
                    (n == 4 && !strncmp(p, "rocm", 4)) ||
                    (oc__tr_class_of(p, n) & OC_TR_CLASS_INTRA_HOST);
        if (!local && n > 0 && used + n + 2 < len) {
            if (used)
                buf[used++] = ',';
            memcpy(buf + used, p, n);
            used += n;
            buf[used] = '\0';
        }
        p += n;
        p += *p == ',';
    }
    return used ? 0 : -1;
}

/* A UCX_TLS for a peer of another user on this host (the node's agent):
 * UCX 1.13 makes its sysv and posix segments owner-only (0600), so an
 * endpoint over them fails with "Shared memory error".  cma (the peer
 * reads by pid, which the agent may) and tcp remain; the bulk of the
 * traffic takes offcore's own channel, whose memory is passed by fd. */
void oc__tr_xuser_tls(const char *tls, char *buf, size_t len)
{
    size_t used = 0;
    int net = 0;

    if (tls == NULL || !strcmp(tls, "all") || !strcmp(tls, "any")) {
        snprintf(buf, len, "^sysv,posix");
        return;
    }
    if (tls[0] == '^') {
        snprintf(buf, len, "%s,sysv,posix", tls);
        return;
    }
    buf[0] = '\0';
    for (const char *p = tls; *p;) {
        size_t n = strcspn(p, ",");
        const char *put = p;
        size_t pn = n;
        if ((n == 2 && !strncmp(p, "sm", 2)) ||
            (n == 3 && !strncmp(p, "shm", 3))) {
            put = "cma";
            pn = 3;
        } else if ((n == 4 && !strncmp(p, "sysv", 4)) ||
                   (n == 5 && !strncmp(p, "posix", 5))) {
            pn = 0;
        }
        net |= n == 3 && !strncmp(p, "tcp", 3);
        if (pn > 0 && used + pn + 2 < len) {
            if (used)
                buf[used++] = ',';
            memcpy(buf + used, put, pn);
            used += pn;
            buf[used] = '\0';
        }
        p += n;
        p += *p == ',';
    }
    /* an active-message transport to reach the agent at all */
    if (!net && used + 5 < len)
        snprintf(buf + used, len - used, "%stcp", used ? "," : "");
}
