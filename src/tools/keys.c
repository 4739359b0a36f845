/*
 * keys.c — `offcore keygen` and `offcore job-key`: the two key operations
 * an operator and a launcher need.  The cluster key stays with the agents
 * (and the launcher); each job's ranks get only their job's key.
 */
#include "util/defaults.h"
#include "keys.h"

#include "ctl/ctl.h"
#include "ctl/derive.h"

#include <stdlib.h>
#include <string.h>

int oc__keygen_main(int argc, char **argv, FILE *out, FILE *err)
{
    oc_ctl_key_t key;
    char hex[2 * OC_CTL_KEY_MAX + 1];

    if (argc > 1) {
        fprintf(argc > 1 && !strcmp(argv[1], "--help") ? out : err,
                "usage: offcore keygen > FILE && chmod 600 FILE\n"
                "Prints a fresh random 32-byte cluster key in hex, for\n"
                "offcored --cluster-key FILE (the same file on every agent).\n");
        return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    if (oc__ctl_key_generate(&key) != OC_OK ||
        oc__ctl_key_hex(&key, hex, sizeof(hex)) != OC_OK) {
        fprintf(err, "offcore keygen: no random source\n");
        return 1;
    }
    fprintf(out, "%s\n", hex);
    oc__ctl_key_clear(&key);
    memset(hex, 0, sizeof(hex));
    return 0;
}

int oc__jobkey_main(int argc, char **argv, FILE *out, FILE *err)
{
    const char *file = NULL; /* --cluster-key: beats the environment */
    long long job = -1;
    oc_ctl_key_t ck, jk;
    char hex[2 * OC_CTL_KEY_MAX + 1], *end, src[OC_CTL_ADDR_STRLEN + 64];

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--job") && i + 1 < argc) {
            job = strtoll(argv[++i], &end, 10);
            if (*end != '\0' || job < 0 || job > UINT32_MAX)
                job = -2;
        } else if (!strcmp(argv[i], "--cluster-key") && i + 1 < argc) {
            file = argv[++i];
        } else {
            job = -3;
            break;
        }
    }
    if (job < 0) {
        fprintf(job == -1 && argc == 2 && !strcmp(argv[1], "--help") ? out : err,
                "usage: offcore job-key --job ID [--cluster-key FILE]\n"
                "Prints the key of job ID (hex), derived from the cluster key:\n"
                "--cluster-key FILE, else $OC_CLUSTER_KEY (hex), else the file\n"
                "$OC_AGENT_CLUSTER_KEY, else " OC_DEFAULT_CLUSTER_KEY " (the same\n"
                "order as offcored; a variable set but empty counts as unset).\n"
                "Launchers give it to the job's ranks as OC_JOB_KEY, with\n"
                "OC_JOB=ID; it admits them to the agents for that job only.\n");
        return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    if (oc__ctl_cluster_key_load(file, &ck, src, sizeof(src)) != OC_OK) {
        fprintf(err, "offcore job-key: no usable cluster key from %s (see "
                     "above)\n", src);
        return 1;
    }
    oc__ctl_job_key(&ck, (uint32_t)job, &jk);
    oc__ctl_key_hex(&jk, hex, sizeof(hex));
    fprintf(out, "%s\n", hex);
    oc__ctl_key_clear(&ck);
    oc__ctl_key_clear(&jk);
    return 0;
}
