/*
 * config.h — declarative configuration tables.
 *
 * A component declares its settings once as an array of oc_cfg_field_t; the
 * same table reads OC_<NAME> environment variables, takes --name=value
 * overrides, and prints the --dump-config listing with every default and
 * why it is what it is.
 */
#ifndef OC_UTIL_CONFIG_H
#define OC_UTIL_CONFIG_H

#include <offcore/offcore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    OC_CFG_UINT,   /* uint64_t; decimal or 0x */
    OC_CFG_SIZE,   /* uint64_t; accepts K, M, G suffixes (powers of 2) */
    OC_CFG_BOOL,   /* int; y/n, yes/no, 1/0, true/false, on/off */
    OC_CFG_STRING, /* char[OC_CFG_STRLEN] */
    OC_CFG_ENUM,   /* int: index into values[] */
} oc_cfg_type_t;

#define OC_CFG_STRLEN 256

typedef struct {
    const char          *name;   /* upper case, without OC_ */
    oc_cfg_type_t        type;
    const char          *dflt;
    const char          *doc;    /* what it does and why this default */
    size_t               offset; /* into the component's config struct */
    uint64_t             min, max; /* UINT/SIZE bounds (inclusive) */
    const char *const   *values; /* ENUM, NULL-terminated */
} oc_cfg_field_t;

#define OC_CFG_END {NULL, OC_CFG_UINT, NULL, NULL, 0, 0, 0, NULL}

/** Fill @p cfg from defaults, then from OC_<NAME> variables.  Logs the
 *  offending variable and returns OC_ERR_CONFIG on a bad value. */
oc_status_t oc__config_load(const oc_cfg_field_t *table, void *cfg);

/** Set one field by name (case-insensitive, without OC_); for command-line
 *  flags.  OC_ERR_CONFIG on unknown name or bad value (logged). */
oc_status_t oc__config_set(const oc_cfg_field_t *table, void *cfg,
                          const char *name, const char *value);

/**
 * Warn about every environment variable that starts with OC_@p prefix but
 * names no setting of @p table nor one of @p also (NULL-terminated list of
 * full names, may be NULL): a misspelt OC_AGENT_THRAEDS would otherwise be
 * silently ignored.  Suggests the closest setting.  @return how many.
 */
unsigned oc__config_check_env(const oc_cfg_field_t *table, const char *prefix,
                             const char *const *also);

/** One OC_* environment variable and who reads it (util/envnames.c). */
typedef struct {
    const char *name; /* "OC_PLACEMENT"; ending in '_': a prefix */
    const char *who;  /* "liboffcore", "offcored", ... */
} oc_env_name_t;

/** Every OC_* variable of offcore, NULL-terminated (util/envnames.c). */
extern const oc_env_name_t oc__env_names[];

/**
 * Warn (component util, level warn) about every OC_* variable in the
 * environment that oc__env_names does not list, suggesting the closest
 * listed name: "unknown environment variable OC_PLACMENT, ignored (did you
 * mean OC_PLACEMENT?)".  @p who names the caller in the line.  Not
 * thread-safe against setenv().  @return how many.
 */
unsigned oc__env_check(const char *who);

/** Print the table: name, current value (the default when @p cfg is
 *  NULL), default, description. */
void oc__config_dump(FILE *out, const char *component,
                    const oc_cfg_field_t *table, const void *cfg);

#endif
