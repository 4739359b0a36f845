/*
 * version.c — the build's version (util/version.h).  Only this file
 * includes the generated header, so a new commit recompiles one file.
 */
#include "util/version.h"

#include "version_gen.h"

#include <offcore/offcore.h>
#include <stdio.h>
#include <string.h>

const char *oc__version(void)
{
    return OC__BUILD_VERSION;
}

OC_API const char *oc_version(void)
{
    return OC__BUILD_VERSION;
}

void oc__version_print(const char *name, int verbose)
{
    printf("%s %s\n", name, OC__BUILD_VERSION);
    if (!verbose)
        return;
    printf("  compiler:   %s\n"
           "  build type: %s\n"
           "  host:       %s\n",
           OC__BUILD_CC, OC__BUILD_TYPE, OC__BUILD_HOST);
}

int oc__version_opt(int argc, char *const *argv, const char *name)
{
    int seen = 0, verbose = 0;

    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        seen |= !strcmp(argv[i], "--version");
        verbose |= !strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose");
    }
    if (seen)
        oc__version_print(name, verbose);
    return seen;
}
