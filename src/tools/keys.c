/*
 * keys.c — `offcore keygen` and `offcore job-key`: the two key operations
 * an operator and a launcher need.  The cluster key stays with the agents
 * (and the launcher); each job's ranks get only their job's key.
 */
#include "util/defaults.h"
#include "keys.h"

#include "ctl/ctl.h"
#include "ctl/derive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The key file, 0600 from its creation on (O_EXCL: an existing key is
 * never overwritten, a planted link never followed). */
static int write_key_file(const char *path, const char *hex, FILE *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
    size_t len = strlen(hex), off = 0;

    if (fd < 0) {
        fprintf(err, "offcore keygen: %s: %s%s\n", path, strerror(errno),
                errno == EEXIST ? " (not overwritten: remove it first, and "
                                  "give every agent the new key)" : "");
        return 1;
    }
    while (off < len) {
        ssize_t n = write(fd, hex + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(err, "offcore keygen: %s: %s\n", path, strerror(errno));
            close(fd);
            unlink(path);
            return 1;
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        fprintf(err, "offcore keygen: %s: %s\n", path, strerror(errno));
        unlink(path);
        return 1;
    }
    return 0;
}

int oc__keygen_main(int argc, char **argv, FILE *out, FILE *err)
{
    oc_ctl_key_t key;
    char hex[2 * OC_CTL_KEY_MAX + 2];
    const char *file = NULL;
    int help = argc == 2 && (!strcmp(argv[1], "--help") ||
                             !strcmp(argv[1], "-h"));
    int rc = 0;

    if (argc == 3 && (!strcmp(argv[1], "--out") || !strcmp(argv[1], "-o")))
        file = argv[2];
    else if (argc > 1) {
        fprintf(help ? out : err,
                "usage: offcore keygen [--out FILE]\n"
                "Writes a fresh random 32-byte cluster key in hex, for\n"
                "offcored --cluster-key FILE (the same file on every agent):\n"
                "to FILE, created with mode 0600 (never an existing one), or\n"
                "to stdout.  The agents' default file: " OC_DEFAULT_CLUSTER_KEY
                "\n");
        return help ? 0 : 2;
    }
    if (oc__ctl_key_generate(&key) != OC_OK ||
        oc__ctl_key_hex(&key, hex, sizeof(hex) - 1) != OC_OK) {
        fprintf(err, "offcore keygen: no random source\n");
        return 1;
    }
    strcat(hex, "\n");
    if (file != NULL)
        rc = write_key_file(file, hex, err);
    else
        fputs(hex, out);
    oc__ctl_key_clear(&key);
    memset(hex, 0, sizeof(hex));
    return rc;
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
