/*
 * settings.c — liboffcore's settings listing (runtime/settings.h), so that
 * the CLI shows them without reaching into the context's private state.
 */
#include "runtime.h"

#include "runtime/settings.h"

oc_status_t oc__runtime_settings_dump(FILE *out)
{
    oc__config_t cfg;
    oc_status_t st = oc__config_load(oc__runtime_config_table, &cfg);

    if (st != OC_OK)
        return st;
    oc__config_dump(out, "runtime", oc__runtime_config_table, &cfg);
    return OC_OK;
}
