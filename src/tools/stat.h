/*
 * stat.h — `offcore stat`: fetch an agent's /metrics and print it as
 * tables (stat.c).  A function rather than a program of its own so that
 * the CLI dispatches to it and the unit tests run it in-process.
 */
#ifndef OC_TOOLS_STAT_H
#define OC_TOOLS_STAT_H

#include "util/defaults.h"

#include <stdio.h>

/** Environment variable holding the default agent address. */
#define OC_STAT_ENV "OC_AGENT_METRICS"

/** Where `offcore stat` looks when neither --agent nor OC_AGENT_METRICS
 *  says. */
#define OC_STAT_DEFAULT_AGENT OC_DEFAULT_METRICS_ADDR

/**
 * Run `offcore stat`.  @p argv[0] is "stat"; the options follow
 * (`offcore stat --help` lists them).  Tables go to @p out, errors to
 * @p err.  With --watch, SIGINT and SIGTERM end the loop (their previous
 * handlers are restored on return).  Not thread-safe (signal handlers,
 * curl_global_init).
 *
 * @return 0 done; 1 no agent answers (connection refused, unknown host,
 *         timed out); 2 usage error, a malformed address or an unsupported
 *         one (unix:, tcp:, a scheme other than http/https); 3 something
 *         answered that is not an offcored (HTTP error, invalid HTTP, not
 *         Prometheus text, no offcore_agent_info: empty or another
 *         exporter).  Label values are printed with control characters
 *         escaped (\xNN).
 */
int oc__stat_main(int argc, char **argv, FILE *out, FILE *err);

#endif
