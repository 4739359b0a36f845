/*
 * runtime/settings.h — what liboffcore shows the rest of the tree beyond
 * its public API: its settings table, for `offcore config`.  The context's
 * private state (runtime.h) stays private to src/runtime.
 *
 * Threading: reads the environment; call it from one thread.
 */
#ifndef OC_RUNTIME_SETTINGS_H
#define OC_RUNTIME_SETTINGS_H

#include <offcore/status.h>
#include <stdio.h>

/**
 * Write every OC_* setting liboffcore reads, with its current value (from
 * the environment), default and meaning, to @p out (util/config.h's
 * listing format).
 * @return OC_OK; OC_ERR_CONFIG when a setting in the environment is not
 *   valid (logged, naming it), and then nothing is written.
 */
oc_status_t oc__runtime_settings_dump(FILE *out);

#endif /* OC_RUNTIME_SETTINGS_H */
