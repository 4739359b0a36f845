/* keys.h — offcore keygen / job-key (keys.c). */
#ifndef OC_TOOLS_KEYS_H
#define OC_TOOLS_KEYS_H
#include <stdio.h>
int oc__keygen_main(int argc, char **argv, FILE *out, FILE *err);
int oc__jobkey_main(int argc, char **argv, FILE *out, FILE *err);
#endif
