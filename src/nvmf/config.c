/*
 * config.c — offcore-nvmf's configuration file, checked in full before
 * the target starts: every error is reported as FILE:LINE: reason, all of
 * them, then the load fails.  The format (listen, metrics, subsystem,
 * allow-host, namespace ... and the admission limits): docs/nvmf.md,
 * "Configuration".
 *
 * Trust: the file is the operator's; still, nothing in it is used before
 * it has been checked (lengths, ranges, duplicates).  Not thread-safe.
 */
#include "target.h"
#include "util/file.h"
#include "util/kv.h"

#include <ctype.h>
#include <sched.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOK 16

/* where the parse is: errors go through util/kv.h's list, echoed to the
 * caller's stream as they are found */
typedef struct {
    const char *file;
    unsigned line;
    oc_conf_errors_t e;
} ctx_t;

#define cerr(x, ...) oc__conf_error(&(x)->e, (x)->file, (x)->line, __VA_ARGS__)

int oc__nvmf_parse_hostport(const char *s, char *host, size_t hlen,
                           uint16_t *port)
{
    const char *c = strrchr(s, ':');
    char *end;
    unsigned long p;

    if (!c || c == s || (size_t)(c - s) >= hlen)
        return -1;
    p = strtoul(c + 1, &end, 10);
    if (!c[1] || *end || p == 0 || p > 65535)
        return -1;
    memcpy(host, s, (size_t)(c - s));
    host[c - s] = 0;
    *port = (uint16_t)p;
    return 0;
}

static int valid_nqn(const char *s)
{
    size_t l = strlen(s);
    if (l < 5 || l > OC_NVMF_NQN_MAX || strncmp(s, "nqn.", 4))
        return 0;
    for (size_t i = 0; i < l; i++)
        if (!isgraph((unsigned char)s[i]))
            return 0;
    return 1;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    uint64_t mul = 1;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (end == s || errno)
        return -1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1ull << 10; break;
        case 'M': mul = 1ull << 20; break;
        case 'G': mul = 1ull << 30; break;
        case 'T': mul = 1ull << 40; break;
        default: return -1;
        }
        if (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
            return -1;
    }
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

static void parse_ns(ctx_t *x, oc_nvmf_subsys_conf_t *s, char **tok, int n)
{
    static const char *const keys[] = {"size", "block", "integrity",
                                       "integrity-file", "key", "direct",
                                       NULL};
    enum { SIZE, BLOCK, INTEGRITY, INTEGRITY_FILE, KEY, DIRECT };
    oc_nvmf_ns_conf_t *ns;
    uint64_t nsid;
    unsigned seen = 0;

    if (s->nns >= OC_NVMF_MAX_NS) {
        cerr(x, "more than %d namespaces in one subsystem", OC_NVMF_MAX_NS);
        return;
    }
    if (n < 3) {
        cerr(x, "namespace: want 'namespace NSID PATH [options]'");
        return;
    }
    ns = &s->ns[s->nns];
    memset(ns, 0, sizeof(*ns));
    ns->block_size = 4096;
    ns->direct = -1;
    ns->line = x->line;
    if (oc__kv_u64(tok[1], 1, 1024, &nsid) != 0) {
        cerr(x, "namespace id '%.32s': want 1..1024", tok[1]);
        return;
    }
    for (int i = 0; i < s->nns; i++)
        if (s->ns[i].nsid == nsid) {
            cerr(x, "namespace %u already defined on line %d",
                 (unsigned)nsid, s->ns[i].line);
            return;
        }
    ns->nsid = (uint32_t)nsid;
    if (strlen(tok[2]) >= sizeof(ns->path)) {
        cerr(x, "path too long");
        return;
    }
    strcpy(ns->path, tok[2]);
    for (int i = 3; i < n; i++) {
        char why[200], *v;
        int k = oc__kv_key(tok[i], keys, &seen, &v, why, sizeof(why));
        if (k < 0) {
            cerr(x, "namespace %u: %s", ns->nsid, why);
            continue;
        }
        if (k == SIZE) {
            if (parse_size(v, &ns->size) || ns->size == 0)
                cerr(x, "size '%s': want a number with K, M, G or T", v);
        } else if (k == BLOCK) {
            if (!strcmp(v, "512"))
                ns->block_size = 512;
            else if (!strcmp(v, "4096"))
                ns->block_size = 4096;
            else
                cerr(x, "block '%s': want 512 or 4096", v);
        } else if (k == INTEGRITY) {
            if (!strcmp(v, "on") || !strcmp(v, "crc32c"))
                ns->integrity = 1;
            else if (strcmp(v, "off"))
                cerr(x, "integrity '%s': want on or off", v);
        } else if (k == INTEGRITY_FILE) {
            if (strlen(v) >= sizeof(ns->integrity_path) || !*v)
                cerr(x, "integrity-file: empty or too long");
            else
                strcpy(ns->integrity_path, v);
        } else if (k == KEY) {
            if (strlen(v) >= sizeof(ns->key_path) || !*v)
                cerr(x, "key: empty or too long");
            else
                strcpy(ns->key_path, v);
        } else {
            if (!strcmp(v, "auto"))
                ns->direct = -1;
            else if (!strcmp(v, "on"))
                ns->direct = 1;
            else if (!strcmp(v, "off"))
                ns->direct = 0;
            else
                cerr(x, "direct '%s': want auto, on or off", v);
        }
    }
    if (ns->size % ns->block_size)
        cerr(x, "size %llu is not a multiple of the block size %u",
             (unsigned long long)ns->size, ns->block_size);
    if (ns->integrity_path[0] && !ns->integrity)
        cerr(x, "integrity-file without integrity=on");
    s->nns++;
}

int oc__nvmf_parse_cores(const char *s, int *cpus, int max, char *why,
                        size_t whylen)
{
    cpu_set_t seen;
    int n = 0;

    CPU_ZERO(&seen);
    if (!*s) {
        snprintf(why, whylen, "an empty list (want CPUs, as 0-3,6)");
        return -1;
    }
    while (*s) {
        unsigned long a, b;
        char *end;
        if (*s < '0' || *s > '9')
            goto bad;
        a = strtoul(s, &end, 10);
        b = a;
        if (*end == '-') {
            if (end[1] < '0' || end[1] > '9')
                goto bad;
            b = strtoul(end + 1, &end, 10);
        }
        if (*end != ',' && *end != '\0')
            goto bad;
        if (a >= CPU_SETSIZE || b >= CPU_SETSIZE) {
            snprintf(why, whylen, "CPU numbers are 0..%d", CPU_SETSIZE - 1);
            return -1;
        }
        if (b < a) {
            snprintf(why, whylen, "range %lu-%lu: the first is larger", a, b);
            return -1;
        }
        for (unsigned long c = a; c <= b; c++) {
            if (CPU_ISSET(c, &seen)) {
                snprintf(why, whylen, "CPU %lu listed twice", c);
                return -1;
            }
            if (n == max) {
                snprintf(why, whylen, "more than %d CPUs (one worker each)",
                         max);
                return -1;
            }
            CPU_SET(c, &seen);
            cpus[n++] = (int)c;
        }
        s = *end == ',' ? end + 1 : end;
        if (*end == ',' && !*s)
            goto bad;
    }
    return n;
bad:
    snprintf(why, whylen, "want CPU numbers and ranges separated by commas, "
             "as 0-3,6");
    return -1;
}

oc_status_t oc__nvmf_conf_load(const char *file, oc_nvmf_conf_t *conf,
                              FILE *err)
{
    ctx_t x = {.file = file, .e = {.echo = err}};
    oc_nvmf_subsys_conf_t *cur = NULL;
    static const oc_file_rules_t fr = {.what = "config file",
                                       .max_bytes = OC_NVMF_CONF_FILE_MAX};
    char line[8192], why[512], *text = NULL;
    size_t len = 0, pos = 0;
    int got;

    /* the tables are large (paths are PATH_MAX): clear what is counted,
     * entries are cleared as they are filled */
    memset(conf, 0, offsetof(oc_nvmf_conf_t, subsys));
    strcpy(conf->listen, "0.0.0.0:4420");
    conf->kato_grace_ms = 5000;
    conf->send_timeout_ms = 30000;
    conf->cpu = -1; /* the scheduler's choice */
    /* as offcored's control socket: 1024 queues is 60 hosts with 16
     * queues each; a Linux host sends ICReq and Connect within a round
     * trip of connecting, so 5 s is slack for a loaded one, and holds an
     * idle flood's sockets only that long; 100 ms of back-off makes an
     * accept out of descriptors cost ten tries a second */
    conf->max_conns = 1024;
    conf->handshake_ms = 5000;
    conf->accept_backoff_ms = 100;
    /* the file loader (util/file.h): a FIFO or a device is refused, never
     * waited on or read; lines too long or holding a NUL: util/kv.h */
    if (oc__file_read(file, &fr, &text, &len, why, sizeof(why)) != OC_OK) {
        oc__conf_error(&x.e, NULL, 0, "%s", why);
        return OC_ERR_CONFIG;
    }
    while ((got = oc__kv_next_line(text, len, &pos, line, sizeof(line), file,
                                   &x.line, &x.e)) != 0) {
        char *tok[MAX_TOK];
        int n;
        if (got < 0)
            continue; /* the error is added */
        n = oc__kv_split(line, tok, MAX_TOK);
        if (n == 0)
            continue;
        if (n < 0) {
            cerr(&x, "more than %d words", MAX_TOK);
            continue;
        }
        const char *k = tok[0];
        if (!strcmp(k, "listen") || !strcmp(k, "metrics")) {
            char h[256];
            uint16_t port;
            char *dst = !strcmp(k, "listen") ? conf->listen : conf->metrics;
            if (n != 2 || strlen(tok[1]) >= 256 ||
                oc__nvmf_parse_hostport(tok[1], h, sizeof(h), &port))
                cerr(&x, "%s: want HOST:PORT", k);
            else
                strcpy(dst, tok[1]);
        } else if (!strcmp(k, "advertise")) {
            if (n != 2 || strlen(tok[1]) >= sizeof(conf->advertise))
                cerr(&x, "advertise: want one address");
            else
                strcpy(conf->advertise, tok[1]);
        } else if (!strcmp(k, "kato-grace-ms")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 0, 600000, &v) != 0)
                cerr(&x, "kato-grace-ms: want 0..600000");
            else
                conf->kato_grace_ms = (int)v;
        } else if (!strcmp(k, "send-timeout-ms")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 100, 3600000, &v) != 0)
                cerr(&x, "send-timeout-ms: want 100..3600000");
            else
                conf->send_timeout_ms = (int)v;
        } else if (!strcmp(k, "poll-us")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 0, 10000, &v) != 0)
                cerr(&x, "poll-us: want 0..10000");
            else
                conf->poll_us = (int)v;
        } else if (!strcmp(k, "cpu")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 0, CPU_SETSIZE - 1, &v) != 0)
                cerr(&x, "cpu: want a CPU number, 0..%d", CPU_SETSIZE - 1);
            else if (conf->ncores)
                cerr(&x, "cpu: cores is given already (cpu N is cores N)");
            else
                conf->cpu = (int)v;
        } else if (!strcmp(k, "cores")) {
            char cwhy[128];
            int nc;
            if (n != 2)
                cerr(&x, "cores: want one CPU list, as 0-3,6");
            else if (conf->cpu >= 0)
                cerr(&x, "cores: cpu is given already (cpu N is cores N)");
            else if ((nc = oc__nvmf_parse_cores(tok[1], conf->cores,
                                               OC_NVMF_MAX_WORKERS, cwhy,
                                               sizeof(cwhy))) < 0)
                cerr(&x, "cores: %s", cwhy);
            else
                conf->ncores = nc;
        } else if (!strcmp(k, "max-connections")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 1, 1u << 20, &v) != 0)
                cerr(&x, "max-connections: want 1..%u", 1u << 20);
            else
                conf->max_conns = (uint32_t)v;
        } else if (!strcmp(k, "handshake-ms")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 100, 600000, &v) != 0)
                cerr(&x, "handshake-ms: want 100..600000");
            else
                conf->handshake_ms = (uint32_t)v;
        } else if (!strcmp(k, "accept-backoff-ms")) {
            uint64_t v;
            if (n != 2 || oc__kv_u64(tok[1], 1, 60000, &v) != 0)
                cerr(&x, "accept-backoff-ms: want 1..60000");
            else
                conf->accept_backoff_ms = (uint32_t)v;
        } else if (!strcmp(k, "subsystem")) {
            if (n != 2) {
                cerr(&x, "subsystem: want 'subsystem NQN'");
                cur = NULL;
                continue;
            }
            if (conf->nsubsys >= OC_NVMF_MAX_SUBSYS) {
                cerr(&x, "more than %d subsystems", OC_NVMF_MAX_SUBSYS);
                cur = NULL;
                continue;
            }
            if (!valid_nqn(tok[1]))
                cerr(&x, "'%s' is not an NQN (nqn.YYYY-MM.domain:name, at "
                     "most 223 bytes)", tok[1]);
            else if (!strcmp(tok[1], OC_NVMF_DISCOVERY_NQN))
                cerr(&x, "the discovery subsystem is built in");
            for (int i = 0; i < conf->nsubsys; i++)
                if (!strcmp(conf->subsys[i].nqn, tok[1]))
                    cerr(&x, "subsystem %s already defined on line %d",
                         tok[1], conf->subsys[i].line);
            cur = &conf->subsys[conf->nsubsys++];
            memset(cur, 0, offsetof(oc_nvmf_subsys_conf_t, ns));
            snprintf(cur->nqn, sizeof(cur->nqn), "%s", tok[1]);
            cur->line = x.line;
        } else if (!strcmp(k, "allow-host") || !strcmp(k, "allow-any-host") ||
                   !strcmp(k, "namespace")) {
            if (!cur) {
                cerr(&x, "'%s' outside a subsystem", k);
                continue;
            }
            if (!strcmp(k, "namespace")) {
                parse_ns(&x, cur, tok, n);
            } else if (!strcmp(k, "allow-any-host")) {
                if (n != 1)
                    cerr(&x, "allow-any-host takes nothing");
                cur->allow_any = 1;
            } else if (n != 2 || !valid_nqn(tok[1])) {
                cerr(&x, "allow-host: want one host NQN");
            } else if (cur->nhosts >= OC_NVMF_MAX_HOSTS) {
                cerr(&x, "more than %d hosts", OC_NVMF_MAX_HOSTS);
            } else {
                strcpy(cur->hosts[cur->nhosts++], tok[1]);
            }
        } else {
            cerr(&x, "unknown keyword '%s'", k);
        }
    }
    free(text);
    for (int i = 0; i < conf->nsubsys; i++) {
        oc_nvmf_subsys_conf_t *s = &conf->subsys[i];
        x.line = s->line;
        if (s->nns == 0)
            cerr(&x, "subsystem %s has no namespace", s->nqn);
        if (!s->allow_any && s->nhosts == 0)
            cerr(&x, "subsystem %s admits no host: add allow-host NQN or "
                 "allow-any-host", s->nqn);
        if (s->allow_any && s->nhosts)
            cerr(&x, "subsystem %s: allow-any-host and allow-host together",
                 s->nqn);
    }
    if (conf->nsubsys == 0) {
        x.line = 0;
        cerr(&x, "no subsystem defined");
    }
    if (x.e.count) {
        fprintf(err, "%s: %u error%s\n", file, x.e.count,
                x.e.count > 1 ? "s" : "");
        return OC_ERR_CONFIG;
    }
    return OC_OK;
}
