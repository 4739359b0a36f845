/*
 * advise.h — `offcore advise -- LAUNCHER APP ARGS`: will offload pay?
 * (advise.c runs advise.py).
 */
#ifndef OC_TOOLS_ADVISE_H
#define OC_TOOLS_ADVISE_H

#include <stdio.h>

/** Replace this process with advise.py; argv[0] is "advise".  Returns
 *  only when it cannot (2, the reason written to @p err). */
int oc__advise_main(int argc, char **argv, FILE *err);

#endif
