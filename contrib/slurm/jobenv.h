/*
 * jobenv.h — what the Slurm plugin (spank_offcore.c) puts into a job
 * step's environment, apart from Slurm: its arguments, the offcore job id
 * of a Slurm step, and the variables of each placement.  No Slurm header
 * here, so the unit test (tests/slurm/test_jobenv.c) builds without one.
 */
#ifndef OC_SLURM_JOBENV_H
#define OC_SLURM_JOBENV_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    OC_SLURM_NONE = 0, /* no --offcore: the job runs as before */
    OC_SLURM_INLINE,
    OC_SLURM_AGENT,
    OC_SLURM_AUTO,
} oc_slurm_mode_t;

/* plugstack.conf arguments; oc__slurm_args() fills in the defaults. */
typedef struct {
    char key[PATH_MAX]; /* key=FILE: the node's cluster key */
    char agent[256];    /* agent=ADDR: the node's offcored */
    int  timeout_ms;    /* timeout_ms=N: how long the agent may take */
} oc_slurm_conf_t;

#define OC_SLURM_TIMEOUT_MS 2000

/* The variables of one step, NUL-terminated strings; a value left empty
 * is not set (inline gets no key). */
typedef struct {
    char placement[8];
    char agent[256];
    char job[16];
    char job_key[2 * 64 + 1];
    oc_slurm_mode_t chose; /* INLINE or AGENT */
} oc_slurm_env_t;

/** Parse plugstack.conf's arguments (key=FILE agent=ADDR timeout_ms=N).
 *  @return 0, or -1 with a reason in @p why. */
int oc__slurm_args(int argc, char **argv, oc_slurm_conf_t *conf, char *why,
                   size_t why_cap);

/** "inline", "agent", "auto" -> the mode; anything else -1. */
int oc__slurm_mode(const char *s);

/** The offcore job id of Slurm step (@p jobid, @p stepid): the job id in
 *  the upper 26 bits, the step id's low 6 bits below, so that concurrent
 *  steps of one job get distinct ids (steps 64 apart share one, which
 *  only matters if both run at once) and no Slurm step gets an id below
 *  64 (left to jobs started by hand with offcore job-key).
 *  @return 0, or -1 when @p jobid needs more than 26 bits (federated
 *  clusters put their cluster id above them: two jobs could share a key). */
int oc__slurm_job(uint32_t jobid, uint32_t stepid, uint32_t *job);

/**
 * The variables for a step in @p mode (INLINE, AGENT or AUTO), as root on
 * the node: AGENT and AUTO probe the agent (oc__ctl_agent_probe) and, when
 * it answers, derive the job key from the cluster key file; INLINE needs
 * neither.  AUTO falls back to inline when no agent answers.
 * @return 0 and *env; -1 with the reason for the user in @p why (the agent
 *   does not answer in AGENT mode, no usable cluster key, a job id out of
 *   range).  On 0, @p why may hold a note for the user (AUTO's choice).
 */
int oc__slurm_env(oc_slurm_mode_t mode, const oc_slurm_conf_t *conf,
                  uint32_t jobid, uint32_t stepid, oc_slurm_env_t *env,
                  char *why, size_t why_cap);

#endif
