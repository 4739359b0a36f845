/*
 * addr.c — the syntax of a metrics listen address, apart from resolving
 * it (metrics.h, oc__metrics_addr_split): the HTTP server and the
 * configuration checkers (offcore-dp --check) accept the same strings.
 * Pure; thread-safe.
 */
#include "metrics/metrics.h"

#include <string.h>

static int parse_port(const char *s, uint16_t *port)
{
    unsigned long v = 0;

    if (*s == '\0' || strlen(s) > 5)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (unsigned long)(*s - '0');
    }
    if (v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

oc_status_t oc__metrics_addr_split(const char *spec, char *host, size_t cap,
                                   uint16_t *port, int *any)
{
    const char *colon;

    if (spec == NULL || host == NULL || cap == 0 || port == NULL ||
        any == NULL)
        return OC_ERR_INVALID_PARAM;
    host[0] = '\0';
    *any = 0;
    *port = OC_METRICS_DEFAULT_PORT;
    if (*spec != '\0' && strspn(spec, "0123456789") == strlen(spec)) {
        *any = 1;
        return parse_port(spec, port) < 0 ? OC_ERR_CONFIG : OC_OK;
    }
    if (spec[0] == '[') {
        const char *rb = strchr(spec, ']');
        if (rb == NULL || (size_t)(rb - spec - 1) >= cap || rb == spec + 1)
            return OC_ERR_CONFIG;
        memcpy(host, spec + 1, (size_t)(rb - spec - 1));
        host[rb - spec - 1] = '\0';
        if (rb[1] != '\0' && (rb[1] != ':' || parse_port(rb + 2, port) < 0))
            return OC_ERR_CONFIG;
        return OC_OK;
    }
    if ((colon = strchr(spec, ':')) != NULL && strchr(colon + 1, ':') == NULL) {
        if ((size_t)(colon - spec) >= cap || parse_port(colon + 1, port) < 0)
            return OC_ERR_CONFIG;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        *any = host[0] == '\0';
        return OC_OK;
    }
    /* a bare name, IPv4 or IPv6 address: the default port */
    if (*spec == '\0' || strlen(spec) >= cap)
        return OC_ERR_CONFIG;
    strcpy(host, spec);
    return OC_OK;
}
