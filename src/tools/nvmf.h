/*
 * nvmf.h — `offcore nvmf`: a running offcore-nvmf's subsystems,
 * connections and counters, read from its /metrics (nvmf.c).
 */
#ifndef OC_TOOLS_NVMF_H
#define OC_TOOLS_NVMF_H

#include <stdio.h>

/** Environment variable holding the default target metrics address. */
#define OC_NVMF_CLI_ENV "OC_NVMF_METRICS"
/** Where `offcore nvmf` looks when neither --target nor the variable says
 *  (docs/nvmf.md's example configuration serves metrics there). */
#define OC_NVMF_CLI_DEFAULT "127.0.0.1:9465"

/**
 * Run `offcore nvmf`; @p argv[0] is "nvmf".  Tables to @p out, errors to
 * @p err.  Not thread-safe (libcurl's global init).
 * @return 0 done; 1 no target answers or its answer is not Prometheus
 *         text; 2 usage error.
 */
int oc__nvmf_cli_main(int argc, char **argv, FILE *out, FILE *err);

#endif
