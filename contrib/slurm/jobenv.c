/*
 * jobenv.c — the Slurm plugin's decisions (jobenv.h): its arguments, a
 * step's job id, and which variables a step gets.  Keys and the agent's
 * answer come from src/ctl: the same derivation as offcore job-key and
 * offcored, the same probe as any launcher.
 */
#include "jobenv.h"

#include "ctl/ctl.h"
#include "ctl/derive.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB_BITS  26u
#define STEP_BITS 6u

int oc__slurm_args(int argc, char **argv, oc_slurm_conf_t *conf, char *why,
                   size_t why_cap)
{
    const char *a = "";

    memset(conf, 0, sizeof(*conf));
    snprintf(conf->key, sizeof(conf->key), "%s", OC_CTL_CLUSTER_KEY_DEFAULT);
    snprintf(conf->agent, sizeof(conf->agent), "%s", OC_CTL_AGENT_DEFAULT);
    conf->timeout_ms = OC_SLURM_TIMEOUT_MS;
    for (int i = 0; i < argc; i++) {
        char *end;
        long v;

        a = argv[i] != NULL ? argv[i] : "";
        if (!strncmp(a, "key=/", 5)) {
            if (strlen(a + 4) >= sizeof(conf->key))
                goto bad;
            snprintf(conf->key, sizeof(conf->key), "%s", a + 4);
        } else if (!strncmp(a, "agent=", 6) && a[6] != '\0') {
            if (strlen(a + 6) >= sizeof(conf->agent))
                goto bad;
            snprintf(conf->agent, sizeof(conf->agent), "%s", a + 6);
        } else if (!strncmp(a, "timeout_ms=", 11)) {
            errno = 0;
            v = strtol(a + 11, &end, 10);
            if (errno != 0 || end == a + 11 || *end != '\0' || v < 1 ||
                v > 60000)
                goto bad;
            conf->timeout_ms = (int)v;
        } else {
            goto bad;
        }
    }
    return 0;
bad:
    snprintf(why, why_cap, "bad argument '%.100s' in plugstack.conf (known: "
             "key=/PATH agent=unix:/PATH|tcp:HOST:PORT timeout_ms=1..60000)",
             a);
    return -1;
}

int oc__slurm_mode(const char *s)
{
    if (s == NULL)
        return -1;
    if (!strcmp(s, "inline"))
        return OC_SLURM_INLINE;
    if (!strcmp(s, "agent"))
        return OC_SLURM_AGENT;
    if (!strcmp(s, "auto"))
        return OC_SLURM_AUTO;
    return -1;
}

int oc__slurm_job(uint32_t jobid, uint32_t stepid, uint32_t *job)
{
    if (jobid == 0 || jobid >= 1u << JOB_BITS)
        return -1;
    *job = jobid << STEP_BITS | (stepid & ((1u << STEP_BITS) - 1));
    return 0;
}

int oc__slurm_env(oc_slurm_mode_t mode, const oc_slurm_conf_t *conf,
                  uint32_t jobid, uint32_t stepid, oc_slurm_env_t *env,
                  char *why, size_t why_cap)
{
    char probe_why[512], src[PATH_MAX + 64];
    oc_ctl_key_t ck, jk;
    uint32_t job;

    memset(env, 0, sizeof(*env));
    why[0] = '\0';
    if (oc__slurm_job(jobid, stepid, &job) != 0) {
        snprintf(why, why_cap, "job id %u needs more than %u bits (a "
                 "federated cluster?): --offcore cannot give it a job key "
                 "of its own", jobid, JOB_BITS);
        return -1;
    }
    snprintf(env->job, sizeof(env->job), "%u", job);
    if (mode == OC_SLURM_INLINE)
        goto inline_;
    if (oc__ctl_agent_probe(conf->agent, job, conf->timeout_ms, probe_why,
                            sizeof(probe_why)) != OC_OK) {
        if (mode == OC_SLURM_AGENT) {
            snprintf(why, why_cap, "--offcore=agent: %s: start offcored on "
                     "this node (systemctl start offcored), or run with "
                     "--offcore=inline", probe_why);
            return -1;
        }
        snprintf(why, why_cap, "--offcore=auto: %s: placement inline",
                 probe_why);
        goto inline_;
    }
    if (oc__ctl_cluster_key_load(conf->key, &ck, src, sizeof(src)) != OC_OK) {
        snprintf(why, why_cap, "--offcore=%s: no usable cluster key in %s "
                 "(missing, unreadable, or readable by group or others: it "
                 "must be mode 0600; 'offcore job-key --job 64 "
                 "--cluster-key %s' as root on this node says which)",
                 mode == OC_SLURM_AGENT ? "agent" : "auto", conf->key,
                 conf->key);
        return -1;
    }
    oc__ctl_job_key(&ck, job, &jk);
    oc__ctl_key_clear(&ck);
    if (oc__ctl_key_hex(&jk, env->job_key, sizeof(env->job_key)) != OC_OK) {
        oc__ctl_key_clear(&jk);
        snprintf(why, why_cap, "--offcore: the job key does not fit");
        return -1;
    }
    oc__ctl_key_clear(&jk);
    snprintf(env->placement, sizeof(env->placement), "agent");
    snprintf(env->agent, sizeof(env->agent), "%s", conf->agent);
    env->chose = OC_SLURM_AGENT;
    if (mode == OC_SLURM_AUTO)
        snprintf(why, why_cap, "--offcore=auto: an agent answers at %s: "
                 "placement agent", conf->agent);
    return 0;
inline_:
    snprintf(env->placement, sizeof(env->placement), "inline");
    env->chose = OC_SLURM_INLINE;
    return 0;
}
