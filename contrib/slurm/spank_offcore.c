/*
 * spank_offcore.c — the Slurm SPANK plugin: `srun --offcore=inline|agent|auto`
 * gives a job step's tasks their offcore placement and, for the agent, the
 * job's own key, derived as root on each node from the node's cluster key
 * (which never reaches the tasks).  Without the option a step runs as
 * before.  The decisions are in jobenv.c; this file is Slurm's side only.
 *
 * plugstack.conf:  required spank_offcore.so [key=/etc/offcore/cluster.key]
 *                  [agent=unix:/run/offcore/offcored.sock] [timeout_ms=2000]
 * (docs/operations.md; the package's snippet is offcore.conf here).
 */
#include "jobenv.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Slurm finds the plugin's symbols by name: they are exported although
 * the project builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)
#include <slurm/slurm.h> /* SLURM_MAX_NORMAL_STEP_ID */
#include <slurm/spank.h>

SPANK_PLUGIN(offcore, 1);

static oc_slurm_mode_t mode;  /* from --offcore (in every context) */
static oc_slurm_conf_t conf;  /* from plugstack.conf */
/* What init_post_opt has to tell the step's user: Slurm shows a remote
 * plugin's log lines only in slurmd's log, so task_init writes them to the
 * task's stderr, which srun shows (once per node, from its first task). */
static char note[1100];
static int  failed;

static int option_cb(int val, const char *optarg, int remote)
{
    int m = oc__slurm_mode(optarg);

    (void)val;
    (void)remote;
    if (m < 0) {
        slurm_error("offcore: --offcore=%s: expected inline, agent or auto",
                    optarg != NULL ? optarg : "");
        return -1;
    }
    mode = (oc_slurm_mode_t)m;
    return 0;
}

static struct spank_option offcore_option = {
    "offcore", "inline|agent|auto",
    "offcore placement of the step's ranks: inline (routing in the ranks), "
    "agent (through this node's offcored; the step fails if it does not "
    "answer), auto (agent where one answers, else inline). Sets "
    "OC_PLACEMENT, OC_JOB, and for the agent OC_AGENT and OC_JOB_KEY.",
    1, 0, option_cb};

int slurm_spank_init(spank_t sp, int argc, char **argv)
{
    spank_context_t ctx = spank_context();
    char why[512];

    if (oc__slurm_args(argc, argv, &conf, why, sizeof(why)) != 0) {
        slurm_error("offcore: %s", why);
        return -1;
    }
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;
    if (spank_option_register(sp, &offcore_option) != ESPANK_SUCCESS) {
        slurm_error("offcore: cannot register --offcore");
        return -1;
    }
    return 0;
}

static int put(spank_t sp, const char *name, const char *value)
{
    spank_err_t e;

    if (value[0] == '\0')
        e = spank_unsetenv(sp, name);
    else
        e = spank_setenv(sp, name, value, 1);
    if (e != ESPANK_SUCCESS && !(value[0] == '\0' && e == ESPANK_ENV_NOEXIST)) {
        slurm_error("offcore: cannot set %s in the step's environment: %s",
                    name, spank_strerror(e));
        return -1;
    }
    return 0;
}

/* In slurmstepd, as root, once per step and node, before the tasks start:
 * the key file is readable here and nowhere later. */
int slurm_spank_init_post_opt(spank_t sp, int argc, char **argv)
{
    uint32_t jobid = 0, stepid = 0;
    oc_slurm_env_t env;
    char why[768], host[256]; /* note = host + why */
    int rc;

    (void)argc;
    (void)argv;
    if (spank_remote(sp) != 1 || mode == OC_SLURM_NONE)
        return 0;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS) {
        slurm_error("offcore: no job or step id from Slurm");
        return -1;
    }
    /* the batch script, the extern and interactive steps run no ranks:
     * the steps their sruns start get their own ids and keys */
    if (stepid > SLURM_MAX_NORMAL_STEP_ID)
        return 0;
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    rc = oc__slurm_env(mode, &conf, jobid, stepid, &env, why, sizeof(why));
    if (why[0] != '\0') {
        snprintf(note, sizeof(note), "offcore: %s: %s", host, why);
        if (rc != 0)
            slurm_error("%s", note);
        else
            slurm_info("%s", note);
    }
    if (rc != 0) {
        failed = 1; /* task_init says why and fails each task */
        return 0;
    }
    rc = put(sp, "OC_PLACEMENT", env.placement) ||
         put(sp, "OC_JOB", env.job) || put(sp, "OC_AGENT", env.agent) ||
         put(sp, "OC_JOB_KEY", env.job_key);
    memset(&env, 0, sizeof(env));
    return rc ? -1 : 0;
}

/* In each task, as the user, just before it runs the program: its stderr
 * is the user's. */
int slurm_spank_task_init(spank_t sp, int argc, char **argv)
{
    int local = 0;

    (void)argc;
    (void)argv;
    if (spank_remote(sp) != 1 || note[0] == '\0')
        return failed ? -1 : 0;
    if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS || local == 0) {
        fprintf(stderr, "%s\n", note);
        fflush(stderr);
    }
    return failed ? -1 : 0;
}
#pragma GCC visibility pop
