/* dp.h — `offcore dp`: rules and counters of a running offcore-dp. */
#ifndef OC_TOOLS_DP_H
#define OC_TOOLS_DP_H

#include <stdio.h>

/** argv[0] is "dp".  @return the exit status (see `offcore dp --help`). */
int oc__dp_cli_main(int argc, char **argv, FILE *out, FILE *err);

#endif
