/* config.c — parsing and listing of declarative configuration tables. */
#include "util/config.h"
#include "util/esc.h"

#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static oc_status_t parse_uint(const char *s, int with_suffix, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '\0')
        return OC_ERR_CONFIG;
    /* base 10 unless 0x: a leading zero must not make "010" mean 8 */
    v = strtoull(s, &end,
                 s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10);
    if (errno != 0 || end == s)
        return OC_ERR_CONFIG;
    if (with_suffix && *end) {
        unsigned shift = 0;
        switch (toupper((unsigned char)*end)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        default: return OC_ERR_CONFIG;
        }
        end++;
        /* K, KB, KiB (and Ki): one optional 'i', then one optional 'B' */
        if (toupper((unsigned char)*end) == 'I')
            end++;
        if (toupper((unsigned char)*end) == 'B')
            end++;
        if (v > (UINT64_MAX >> shift))
            return OC_ERR_CONFIG;
        v <<= shift;
    }
    if (*end != '\0')
        return OC_ERR_CONFIG;
    *out = v;
    return OC_OK;
}

static oc_status_t parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"y", "yes", "1", "true", "on"};
    static const char *const no[] = {"n", "no", "0", "false", "off"};
    for (size_t i = 0; i < 5; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return OC_OK; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return OC_OK; }
    }
    return OC_ERR_CONFIG;
}

static oc_status_t set_field(const oc_cfg_field_t *f, void *cfg,
                             const char *value)
{
    char *dst = (char *)cfg + f->offset;
    uint64_t u;
    int b;

    switch (f->type) {
    case OC_CFG_UINT:
    case OC_CFG_SIZE:
        if (parse_uint(value, f->type == OC_CFG_SIZE, &u) != OC_OK ||
            u < f->min || u > f->max)
            return OC_ERR_CONFIG;
        memcpy(dst, &u, sizeof(u));
        return OC_OK;
    case OC_CFG_BOOL:
        if (parse_bool(value, &b) != OC_OK)
            return OC_ERR_CONFIG;
        memcpy(dst, &b, sizeof(b));
        return OC_OK;
    case OC_CFG_STRING:
        if (strlen(value) >= OC_CFG_STRLEN)
            return OC_ERR_CONFIG;
        strcpy(dst, value);
        return OC_OK;
    case OC_CFG_ENUM:
        for (int i = 0; f->values[i]; i++)
            if (strcasecmp(value, f->values[i]) == 0) {
                memcpy(dst, &i, sizeof(i));
                return OC_OK;
            }
        return OC_ERR_CONFIG;
    }
    return OC_ERR_CONFIG;
}

static void explain_bad(const oc_cfg_field_t *f, const char *value,
                        const char *origin)
{
    char range[128] = "";
    if (f->type == OC_CFG_UINT || f->type == OC_CFG_SIZE)
        snprintf(range, sizeof(range), " (a number from %llu to %llu%s)",
                 (unsigned long long)f->min, (unsigned long long)f->max,
                 f->type == OC_CFG_SIZE ? ", K/M/G suffixes allowed" : "");
    else if (f->type == OC_CFG_BOOL)
        snprintf(range, sizeof(range), " (y or n)");
    else if (f->type == OC_CFG_ENUM) {
        size_t n = (size_t)snprintf(range, sizeof(range), " (one of");
        for (int i = 0; f->values[i] && n < sizeof(range); i++)
            n += (size_t)snprintf(range + n, sizeof(range) - n, " %s",
                                  f->values[i]);
        if (n < sizeof(range))
            snprintf(range + n, sizeof(range) - n, ")");
    }
    oc_error(OC_COMP_UTIL, "%s OC_%s='%s' is not valid%s", origin, f->name,
             value, range);
}

oc_status_t oc__config_load(const oc_cfg_field_t *table, void *cfg)
{
    char var[128];
    for (const oc_cfg_field_t *f = table; f->name; f++) {
        const char *v;
        if (set_field(f, cfg, f->dflt) != OC_OK) {
            oc_error(OC_COMP_UTIL, "built-in default of OC_%s is invalid",
                     f->name);
            return OC_ERR_CONFIG;
        }
        snprintf(var, sizeof(var), "OC_%s", f->name);
        v = getenv(var);
        if (v != NULL && set_field(f, cfg, v) != OC_OK) {
            explain_bad(f, v, "environment variable");
            return OC_ERR_CONFIG;
        }
    }
    return OC_OK;
}

oc_status_t oc__config_set(const oc_cfg_field_t *table, void *cfg,
                          const char *name, const char *value)
{
    char norm[128];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof(norm); i++)
        norm[i] = name[i] == '-' ? '_' : (char)toupper((unsigned char)name[i]);
    norm[i] = '\0';
    for (const oc_cfg_field_t *f = table; f->name; f++) {
        if (strcmp(f->name, norm) != 0)
            continue;
        if (set_field(f, cfg, value) != OC_OK) {
            explain_bad(f, value, "setting");
            return OC_ERR_CONFIG;
        }
        return OC_OK;
    }
    oc_error(OC_COMP_UTIL, "unknown setting '%s'", name);
    return OC_ERR_CONFIG;
}

/* Edit distance of two short names, capped (enough for "did you mean"). */
static unsigned distance(const char *a, const char *b)
{
    unsigned row[64], la = (unsigned)strlen(a), lb = (unsigned)strlen(b);

    if (la >= 63 || lb >= 63)
        return 99;
    for (unsigned j = 0; j <= lb; j++)
        row[j] = j;
    for (unsigned i = 1; i <= la; i++) {
        unsigned diag = row[0], tmp;
        row[0] = i;
        for (unsigned j = 1; j <= lb; j++) {
            tmp = row[j];
            row[j] = diag + (a[i - 1] != b[j - 1]);
            if (row[j - 1] + 1 < row[j])
                row[j] = row[j - 1] + 1;
            if (tmp + 1 < row[j])
                row[j] = tmp + 1;
            diag = tmp;
        }
    }
    return row[lb];
}

extern char **environ;

unsigned oc__config_check_env(const oc_cfg_field_t *table, const char *prefix,
                             const char *const *also)
{
    char want[64], name[128];
    unsigned n = 0;

    snprintf(want, sizeof(want), "OC_%s", prefix);
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        const char *best = NULL;
        unsigned bestd = 3;
        int known = 0;

        if (eq == NULL || strncmp(*e, want, strlen(want)) != 0)
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
        for (const oc_cfg_field_t *f = table; f->name && !known; f++) {
            unsigned d = distance(name + 3, f->name);
            known = d == 0;
            if (d < bestd) {
                bestd = d;
                best = f->name;
            }
        }
        for (size_t i = 0; also != NULL && also[i] != NULL && !known; i++)
            known = strcmp(name, also[i]) == 0;
        if (known)
            continue;
        n++;
        if (best != NULL)
            oc_warn(OC_COMP_UTIL, "unknown environment variable %s, ignored "
                    "(did you mean OC_%s?)", name, best);
        else
            oc_warn(OC_COMP_UTIL, "unknown environment variable %s, ignored "
                    "(--dump-config lists the settings)", name);
    }
    return n;
}

unsigned oc__env_check(const char *who)
{
    char name[128];
    unsigned n = 0;

    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        const oc_env_name_t *best = NULL;
        unsigned bestd = 3;
        int known = 0;

        if (eq == NULL || strncmp(*e, "OC_", 3) != 0)
            continue;
        /* as typed, escaped: it comes from anyone's environment */
        oc__esc(*e, (size_t)(eq - *e), name, sizeof(name));
        for (const oc_env_name_t *v = oc__env_names; v->name && !known; v++) {
            size_t len = strlen(v->name);
            unsigned d;
            if (v->name[len - 1] == '_') { /* a prefix */
                known = strncmp(name, v->name, len) == 0;
                continue;
            }
            d = distance(name, v->name);
            known = d == 0;
            if (d < bestd) {
                bestd = d;
                best = v;
            }
        }
        if (known)
            continue;
        n++;
        if (best != NULL)
            oc_warn(OC_COMP_UTIL, "%s: unknown environment variable %s, "
                    "ignored (did you mean %s? read by %s)", who, name,
                    best->name, best->who);
        else
            oc_warn(OC_COMP_UTIL, "%s: unknown environment variable %s, "
                    "ignored (offcore config and --dump-config list the "
                    "settings)", who, name);
    }
    return n;
}

static void format_value(const oc_cfg_field_t *f, const void *cfg, char *buf,
                         size_t n)
{
    const char *src = (const char *)cfg + f->offset;
    uint64_t u;
    int i;
    switch (f->type) {
    case OC_CFG_UINT:
    case OC_CFG_SIZE:
        memcpy(&u, src, sizeof(u));
        snprintf(buf, n, "%llu", (unsigned long long)u);
        break;
    case OC_CFG_BOOL:
        memcpy(&i, src, sizeof(i));
        snprintf(buf, n, "%s", i ? "y" : "n");
        break;
    case OC_CFG_STRING:
        snprintf(buf, n, "%s", src);
        break;
    case OC_CFG_ENUM:
        memcpy(&i, src, sizeof(i));
        snprintf(buf, n, "%s", f->values[i]);
        break;
    }
}

void oc__config_dump(FILE *out, const char *component,
                    const oc_cfg_field_t *table, const void *cfg)
{
    char val[OC_CFG_STRLEN + 32];
    fprintf(out, "# %s\n", component);
    for (const oc_cfg_field_t *f = table; f->name; f++) {
        const char *p = f->doc;
        fprintf(out, "#\n");
        while (*p) { /* wrap the description at about 76 columns */
            size_t n = strlen(p), cut = n;
            if (n > 74) {
                cut = 74;
                while (cut > 0 && p[cut] != ' ')
                    cut--;
                if (cut == 0)
                    cut = 74;
            }
            fprintf(out, "# %.*s\n", (int)cut, p);
            p += cut;
            while (*p == ' ')
                p++;
        }
        fprintf(out, "# default: %s\n", f->dflt);
        if (cfg != NULL)
            format_value(f, cfg, val, sizeof(val));
        else
            snprintf(val, sizeof(val), "%s", f->dflt);
        fprintf(out, "OC_%s=%s\n", f->name, val);
    }
}
