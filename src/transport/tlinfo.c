/*
 * tlinfo.c — which UCX transports an endpoint or a context really uses,
 * read from UCX's own description of them.
 *
 * UCX 1.13 (Debian 12) has no ucp_ep_query() field that names an
 * endpoint's transports (UCP_EP_ATTR_FIELD_TRANSPORTS came in 1.14), so
 * we parse the lane table of ucp_ep_print_info() and the resource list of
 * ucp_context_print_info().  The parsers are pure functions over that
 * text (unit-tested on recorded output); the input is UCX's, in this
 * process, not untrusted.  Unknown lines are skipped, so a format change
 * shows as "nothing parsed" (class 0), never as a wrong answer.
 * Thread-safe (no state).
 */
#include "transport/transport.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned    cls;
} class_names[] = {
    {"self", OC_TR_CLASS_SELF}, {"sm", OC_TR_CLASS_SM},
    {"gpu", OC_TR_CLASS_GPU},   {"tcp", OC_TR_CLASS_TCP},
    {"rdma", OC_TR_CLASS_RDMA}, {"other", OC_TR_CLASS_OTHER},
};

const char *oc__tr_class_name(unsigned cls)
{
    for (size_t i = 0; i < sizeof(class_names) / sizeof(class_names[0]); i++)
        if (class_names[i].cls == cls)
            return class_names[i].name;
    return NULL;
}

const char *oc__tr_class_main(unsigned cls)
{
    if (cls & OC_TR_CLASS_RDMA)
        return "rdma";
    if (cls & OC_TR_CLASS_TCP)
        return "tcp";
    if (cls & OC_TR_CLASS_INTRA_HOST)
        return "sm";
    return cls ? "other" : "unknown";
}

unsigned oc__tr_class_parse(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(class_names) / sizeof(class_names[0]); i++)
        if (strlen(class_names[i].name) == len &&
            !strncmp(class_names[i].name, name, len))
            return class_names[i].cls;
    return 0;
}

static int is(const char *tl, size_t len, const char *name)
{
    return strlen(name) == len && !strncmp(tl, name, len);
}

/* "rc", "rc_verbs", "rc_mlx5", "dc_mlx5", "ud_verbs"...: verbs transports
 * over InfiniBand or RoCE. */
static int is_verbs(const char *tl, size_t len)
{
    return len >= 2 && (!strncmp(tl, "rc", 2) || !strncmp(tl, "ud", 2) ||
                        !strncmp(tl, "dc", 2)) &&
           (len == 2 || tl[2] == '_');
}

unsigned oc__tr_class_of(const char *tl, size_t len)
{
    if (is(tl, len, "self"))
        return OC_TR_CLASS_SELF;
    if (is(tl, len, "posix") || is(tl, len, "sysv") || is(tl, len, "cma") ||
        is(tl, len, "knem") || is(tl, len, "xpmem"))
        return OC_TR_CLASS_SM;
    if ((len >= 5 && !strncmp(tl, "cuda_", 5)) ||
        (len >= 5 && !strncmp(tl, "rocm_", 5)) || is(tl, len, "gdr_copy"))
        return OC_TR_CLASS_GPU;
    if (is(tl, len, "tcp") || is(tl, len, "sockcm"))
        return OC_TR_CLASS_TCP;
    if (is_verbs(tl, len))
        return OC_TR_CLASS_RDMA;
    return OC_TR_CLASS_OTHER;
}

/* Append "tl/dev" to out (sep first unless empty) unless already there. */
static void add_unique(char *out, size_t outlen, const char *item, size_t n,
                       char sep)
{
    size_t used = strlen(out);
    const char *p = out;

    while (*p) { /* scan the items already there */
        size_t l = strcspn(p, ", ");
        if (l == n && !strncmp(p, item, n))
            return;
        p += l;
        p += strspn(p, ", ");
    }
    if (used + (used ? 1 : 0) + n + 1 > outlen)
        return; /* full: keep what fits, whole items only */
    if (used)
        out[used++] = sep;
    memcpy(out + used, item, n);
    out[used + n] = '\0';
}

/* The lane's transport: after "lane[N]:" comes " IDX:tl/dev.PATH md[..]". */
unsigned oc__tr_parse_ep_info(const char *info, char *out, size_t outlen)
{
    unsigned cls = 0;
    const char *p = info;

    if (outlen)
        out[0] = '\0';
    while (outlen && (p = strstr(p, "lane[")) != NULL) {
        const char *eol = strchr(p, '\n'), *t, *arrow;
        size_t n, tln;

        if (eol == NULL)
            eol = p + strlen(p);
        t = strstr(p, "]:");
        p = eol;
        if (t == NULL || t > eol)
            continue;
        t += 2;
        t += strspn(t, " ");
        t += strspn(t, "0123456789");
        if (*t != ':')
            continue;
        t++;
        n = strcspn(t, " \n");
        if (t + n > eol || n == 0)
            continue;
        /* drop the ".PATH" index after the device */
        while (n > 0 && t[n - 1] >= '0' && t[n - 1] <= '9')
            n--;
        if (n > 0 && t[n - 1] == '.')
            n--;
        else
            n = strcspn(t, " \n");
        tln = strcspn(t, "/");
        if (tln >= n)
            continue;
        /* roles are listed after "->": keep lanes that carry active
         * messages ("am", "am_bw#N"); "wireup"-only lanes do not */
        arrow = strstr(t, "->");
        if (arrow == NULL || arrow > eol)
            continue;
        int am = 0;
        for (const char *r = arrow; r < eol && (r = strstr(r, " am")) != NULL &&
                                    r < eol; r += 3)
            if (r[3] == ' ' || r[3] == '_' || r[3] == '\n' || r[3] == '\0') {
                am = 1;
                break;
            }
        if (!am)
            continue;
        cls |= oc__tr_class_of(t, tln);
        add_unique(out, outlen, t, n, ',');
    }
    return cls;
}

/* "#      resource 1  :  md 1  dev 1  flags -- tcp/lo" */
unsigned oc__tr_parse_ctx_info(const char *info, char *out, size_t outlen)
{
    unsigned cls = 0;
    const char *p = info;

    if (outlen)
        out[0] = '\0';
    while (outlen && (p = strstr(p, "resource ")) != NULL) {
        const char *eol = strchr(p, '\n'), *t;
        size_t n, tln;

        if (eol == NULL)
            eol = p + strlen(p);
        t = strstr(p, "-- ");
        p = eol;
        if (t == NULL || t > eol)
            continue;
        t += 3;
        n = strcspn(t, " \n");
        tln = strcspn(t, "/");
        if (n == 0 || tln >= n)
            continue;
        cls |= oc__tr_class_of(t, tln);
        add_unique(out, outlen, t, n, ' ');
    }
    return cls;
}
