/*
 * advise.c — `offcore advise`: hands over to advise.py (the placement
 * study's machinery is Python: bench/study.py), found installed beside
 * the other helpers (libexec/offcore) or, in a build tree, in the source
 * tree.  A build tree's offcore tells the script where its offcored is.
 */
#include "advise.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *script(void)
{
    const char *env = getenv("OC_ADVISE_SCRIPT");
    if (env != NULL && *env)
        return env;
    if (access(OC_ADVISE_INSTALLED, R_OK) == 0)
        return OC_ADVISE_INSTALLED;
    if (access(OC_ADVISE_SOURCE, R_OK) == 0)
        return OC_ADVISE_SOURCE;
    return NULL;
}

int oc__advise_main(int argc, char **argv, FILE *err)
{
    const char *s = script();
    char exe[PATH_MAX], **args;
    ssize_t n;

    if (s == NULL) {
        fprintf(err, "offcore advise: advise.py not found (looked in %s "
                     "and %s; OC_ADVISE_SCRIPT names another)\n",
                OC_ADVISE_INSTALLED, OC_ADVISE_SOURCE);
        return 2;
    }
    /* run from a build tree (BUILD/src/tools/offcore): its offcored */
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0 && getenv("OC_BUILD_DIR") == NULL) {
        exe[n] = '\0';
        const char *tail = "/src/tools/offcore";
        size_t tl = strlen(tail);
        if ((size_t)n > tl && !strcmp(exe + n - tl, tail)) {
            exe[n - tl] = '\0';
            setenv("OC_BUILD_DIR", exe, 1);
        }
    }
    args = calloc((size_t)argc + 3, sizeof(*args));
    if (args == NULL)
        return 2;
    args[0] = "python3";
    args[1] = (char *)s;
    for (int i = 1; i < argc; i++) /* argv[0] is "advise" */
        args[i + 1] = argv[i];
    fflush(NULL);
    execvp("python3", args);
    fprintf(err, "offcore advise: cannot run python3: %m\n");
    free(args);
    return 2;
}
