/*
 * offcore.c — the operator CLI.  This first version lists the runtime's
 * configuration; stat, doctor, advise and bench come with the agent.
 */
#include "runtime/runtime.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: offcore COMMAND\n"
            "\n"
            "commands:\n"
            "  config, --dump-config   list every OC_* setting: its current value\n"
            "                          (from the environment), default and meaning\n"
            "  version, --version      print the version\n"
            "  help, --help            this text\n");
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "help";

    if (!strcmp(cmd, "config") || !strcmp(cmd, "--dump-config")) {
        oc__config_t cfg;
        if (oc_config_load(oc__runtime_config_table, &cfg) != OC_OK)
            return 2;
        printf("# liboffcore settings: set as environment variables\n");
        oc_config_dump(stdout, "runtime", oc__runtime_config_table, &cfg);
        printf("#\n# OC_LOG: log levels, e.g. 'warn' or 'transport:debug,"
               "runtime:info'\n# (levels error warn info debug trace)\n"
               "# default: warn\n");
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("offcore %d.%d (wire version %d)\n", OC_VERSION_MAJOR,
               OC_VERSION_MINOR, OC_WIRE_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "offcore: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
