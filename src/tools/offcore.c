/*
 * offcore.c — the operator CLI: the runtime's configuration, an agent's
 * live counters (stat.c), the fast-path checks (doctor.c) and the
 * placement advice (advise.c).
 */
#include "runtime/settings.h"
#include "advise.h"
#include "doctor.h"
#include "dp.h"
#include "keys.h"
#include "nvmf.h"
#include "stat.h"
#include "ctl/ctl.h"
#include "util/config.h"
#include "util/esc.h"
#include "util/log.h"
#include "util/version.h"
#include "wire/wire.h"

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
            "  stat [--agent ADDR] [--watch SECONDS] [--json]\n"
            "                          live counters of an offcored agent: per job,\n"
            "                          peer and routing thread (offcore stat --help)\n"
            "  doctor [--json] [--require rdma,gpudirect,...] [--root DIR]\n"
            "                          is the fast path really in use? RDMA,\n"
            "                          UCX, GPU, NCCL, daemons (doctor --help)\n"
            "  advise [--dpu] [--repeats N] -- LAUNCHER APP [ARGS]\n"
            "                          will offload pay? runs the app inline\n"
            "                          and with the agent, measures speedup,\n"
            "                          M:C, network use; recommends a placement\n"
            "  nvmf [subsystems|connections|counters] [--target ADDR]\n"
            "                          a running offcore-nvmf: namespaces,\n"
            "                          connected queues, counters\n"
            "  dp rules add|del|list|load, dp stat\n"
            "                          rules and counters of a running offcore-dp\n"
            "                          (offcore dp --help)\n"
            "  keygen [--out FILE]     a new random cluster key (hex): to FILE,\n"
            "                          made with mode 0600, or to stdout\n"
            "  job-key --job ID [--cluster-key FILE]\n"
            "                          print job ID's key, for its ranks' OC_JOB_KEY\n"
            "  version, --version [-v] print the version (-v: build details)\n"
            "  info                    the same as version -v\n"
            "  help, --help            this text\n");
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "help";

    if (!strcmp(cmd, "config") || !strcmp(cmd, "--dump-config")) {
        if (argc > 2) {
            char e[256];
            fprintf(stderr, "offcore config: unexpected argument '%s' (it "
                    "takes none; offcored --dump-config lists the agent's)\n",
                    oc__esc_str(argv[2], e, sizeof(e)));
            return 2;
        }
        /* a misspelt variable is the usual reason to look here */
        oc__env_check("offcore config");
        printf("# liboffcore settings: set as environment variables\n");
        if (oc__runtime_settings_dump(stdout) != OC_OK)
            return 2;
        printf("#\n# OC_LOG: log levels, e.g. 'warn' or 'transport:debug,"
               "runtime:info'\n# (levels error warn info debug trace)\n"
               "# default: warn\n");
        return 0;
    }
    if (!strcmp(cmd, "dp"))
        return oc__dp_cli_main(argc - 1, argv + 1, stdout, stderr);
    if (!strcmp(cmd, "keygen"))
        return oc__keygen_main(argc - 1, argv + 1, stdout, stderr);
    if (!strcmp(cmd, "job-key"))
        return oc__jobkey_main(argc - 1, argv + 1, stdout, stderr);
    if (!strcmp(cmd, "advise"))
        return oc__advise_main(argc - 1, argv + 1, stderr);
    if (!strcmp(cmd, "doctor"))
        return oc__doctor_main(argc - 1, argv + 1, stdout, stderr);
    if (!strcmp(cmd, "nvmf"))
        return oc__nvmf_cli_main(argc - 1, argv + 1, stdout, stderr);
    if (!strcmp(cmd, "stat"))
        return oc__stat_main(argc - 1, argv + 1, stdout, stderr);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") ||
        !strcmp(cmd, "info")) {
        int verbose = !strcmp(cmd, "info");
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "-v") && strcmp(argv[i], "--verbose")) {
                char e[256];
                fprintf(stderr, "offcore %s: unknown argument '%s' (-v is "
                        "the only one)\n", cmd, oc__esc_str(argv[i], e, sizeof(e)));
                return 2;
            }
            verbose = 1;
        }
        oc__version_print("offcore", verbose);
        if (verbose)
            printf("  wire:       bundle version %d, control protocol %d\n",
                   OC_WIRE_VERSION, OC_CTL_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    {
        char e[256]; /* a typed ESC must not reach the terminal raw */
        fprintf(stderr, "offcore: unknown command '%s'\n\n",
                oc__esc_str(cmd, e, sizeof(e)));
    }
    usage(stderr);
    return 2;
}
