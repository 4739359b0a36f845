#!/bin/bash
# slurm-test.sh PLUGIN HISTOGRAM COLL_CHECK OFFCORED OFFCORE — the SPANK
# plugin in a real Slurm: munged, slurmctld and slurmd from Debian's
# packages, one node, a generated slurm.conf and plugstack.conf in a temp
# dir (ports picked free, nothing of the machine's own Slurm or munge
# used; tests/slurm/cluster-lib.sh), and an offcored this test starts.
# Jobs, each through srun:
#   - no --offcore: no OC_* variable set, histogram runs as before;
#   - --offcore=agent and --offcore=inline: histogram and coll_check
#     verified, in the placement asked for (the agent's log shows the job);
#     the task's environment has the job key `offcore job-key` derives for
#     its OC_JOB, and nowhere the cluster key;
#   - two jobs at once through the agent, both verified, overlapping in
#     the agent's log; a task of one job that claims the other's id with
#     its own key is refused (the agent checks the key of every rank);
#   - sbatch --offcore=agent: the batch script gets no variables, the srun
#     inside it does and runs through the agent;
#   - --offcore=auto with the agent up: agent, and it says so;
#   - the agent stopped (SIGSTOP: its socket still accepts) and then gone:
#     --offcore=agent fails the step with the plugin's message; auto runs
#     inline and says so.
# The ranks start with `srun --mpi=pmix` (Slurm's PMIx plugin and Debian's
# Open MPI 4.1, which works here).  Runs as root (the daemons, and the
# agent's socket, root-only today); the tasks run as root too.
# Exit 0 PASS, 1 FAIL, 77 SKIP (not root, a package or the plugin missing,
# a sanitizer build's plugin, Slurm unable to start here).
set -euo pipefail
PLUGIN=${1:?usage: slurm-test.sh PLUGIN HISTOGRAM COLL_CHECK OFFCORED OFFCORE}
HIST=$2 COLL=$3 OFFCORED=$4 OFFCORE=$5

. "$(dirname "$0")/cluster-lib.sh"
JOBB= BPIDS=
cleanup() {
    [ -z "$BPIDS" ] || kill -CONT $BPIDS 2>/dev/null || true
    stop "$JOBB"
    slurm_down
}
trap cleanup EXIT INT TERM
fail() {
    echo "FAIL: $*"
    for f in out err slurmd.log slurmctld.log agent.log; do
        [ -f "$T/$f" ] && { echo "--- $f"; tail -15 "$T/$f"; }
    done
    exit 1
}
rc=0
slurm_up "$PLUGIN" "$OFFCORE" || rc=$?
[ $rc = 0 ] || { [ $rc = 77 ] || echo "FAIL: Slurm did not start"; exit $rc; }
agent_up "$OFFCORED" || fail "offcored not ready"

# The tasks inherit this environment (srun --export=ALL): shared memory
# for UCX, Open MPI's shared-memory transport, and nothing of offcore's.
unset OC_PLACEMENT OC_AGENT OC_JOB OC_JOB_KEY OC_CLUSTER_KEY OC_AGENT_CLUSTER_KEY
export UCX_TLS=sm,self OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
HARGS="--updates 200K --table 10K"

# job [SRUN ARGS...] -- PROGRAM...: srun, stdout in $T/out, stderr in $T/err
job() {
    timeout 120 srun --mpi=pmix "$@" > "$T/out" 2> "$T/err"
}
verified() { # verified PLACEMENT: the histogram's JSON line says so
    grep -q '"verified":true' "$T/out" && grep -q "\"placement\":\"$1\"" "$T/out"
}

# 1. no option: the job runs as before, without any OC_* variable
job -n1 env || fail "srun env"
! grep -q '^OC_' "$T/out" || fail "a job without --offcore got offcore variables"
job -n2 "$HIST" $HARGS || fail "histogram without --offcore"
verified inline || fail "histogram without --offcore: $(cat "$T/out")"
echo "ok: no --offcore: no OC_* variables, histogram verified (inline, as before)"

# 2. the variables of an agent step
job -n1 --offcore=agent env || fail "srun --offcore=agent env"
ocjob=$(sed -n 's/^OC_JOB=//p' "$T/out")
[ -n "$ocjob" ] || fail "no OC_JOB"
grep -qx "OC_PLACEMENT=agent" "$T/out" || fail "OC_PLACEMENT is not agent"
grep -qx "OC_AGENT=unix:$T/agent.sock" "$T/out" || fail "OC_AGENT is not the plugin's agent="
want=$("$OFFCORE" job-key --job "$ocjob" --cluster-key "$T/cluster.key")
grep -qx "OC_JOB_KEY=$want" "$T/out" || fail "OC_JOB_KEY is not offcore job-key --job $ocjob"
! grep -qi "$(cat "$T/cluster.key")" "$T/out" || fail "the cluster key reached the task"
echo "ok: --offcore=agent: OC_PLACEMENT, OC_AGENT, OC_JOB=$ocjob, OC_JOB_KEY = offcore job-key's; no cluster key"

# 3. histogram and coll_check, agent and inline
for pl in agent inline; do
    joined=$(grep -c "joined" "$T/agent.log" || true)
    job -n2 --offcore=$pl "$HIST" $HARGS || fail "histogram --offcore=$pl"
    verified $pl || fail "histogram --offcore=$pl: $(cat "$T/out")"
    job -n2 --offcore=$pl "$COLL" --max 16384 || fail "coll_check --offcore=$pl"
    grep -q "^PASS: 2 ranks" "$T/out" || fail "coll_check --offcore=$pl: $(cat "$T/out")"
    now=$(grep -c "joined" "$T/agent.log" || true)
    if [ $pl = agent ]; then
        [ "$now" -ge $((joined + 4)) ] || fail "the agent saw $((now - joined)) ranks join, not 4"
    else
        [ "$now" = "$joined" ] || fail "an inline job's ranks joined the agent"
    fi
    echo "ok: --offcore=$pl: histogram and coll_check verified"
done

# 4. two jobs at once, and one job's key does not open the other's
job_of() { # the OC_JOB of the 2-rank job whose rank 0 joined last
    sed -n 's/.*job \([0-9]*\) rank 0\/2 joined.*/\1/p' "$T/agent.log" | tail -n 1
}
before=$(grep -c "rank 0/2 joined" "$T/agent.log" || true)
timeout 120 srun --mpi=pmix -n2 --offcore=agent "$HIST" --updates 20M --table 10K \
    > "$T/outb" 2> "$T/errb" &
JOBB=$!
b_joined() { [ "$(grep -c "rank 0/2 joined" "$T/agent.log" || true)" -gt "$before" ]; }
until_ok 60 b_joined || fail "job B's ranks did not join the agent"
jb=$(job_of)
# hold B's ranks (stopped, still joined) until A has run, so that the two
# jobs are on the agent at once however slow A's launch is
BPIDS=$(pgrep -f -- "^$HIST --updates 20M" || true)
[ -n "$BPIDS" ] || fail "job B's ranks are not running"
kill -STOP $BPIDS
# while B runs, a task of another step claims job B's id with its own key
if job -n1 --offcore=agent env OC_JOB="$jb" "$HIST" $HARGS; then
    fail "a task with another job's id and its own key was admitted"
fi
grep -q "OC_ERR_CTL_AUTH\|not this job's key" "$T/err" "$T/agent.log" ||
    fail "the refused task does not say why: $(cat "$T/err")"
job -n2 --offcore=agent "$HIST" $HARGS || fail "job A beside job B"
verified agent || fail "job A beside job B: $(cat "$T/out")"
ja=$(job_of)
[ -n "$ja" ] && [ "$ja" != "$jb" ] || fail "jobs A and B got the same OC_JOB ($ja)"
kill -CONT $BPIDS
BPIDS=
wait $JOBB || fail "job B: $(cat "$T/errb")"
JOBB=
grep -q '"verified":true' "$T/outb" || fail "job B: $(cat "$T/outb")"
# at once: A's ranks joined before B ended (the agent logs in order)
a_at=$(sed -n "/job $ja rank 0\/2 joined/=" "$T/agent.log")
b_end=$(sed -n "/job $jb ended/=" "$T/agent.log")
[ -n "$a_at" ] && [ -n "$b_end" ] && [ "$a_at" -lt "$b_end" ] ||
    fail "job B ended before job A joined: the jobs did not overlap"
echo "ok: two jobs at once (OC_JOB $jb and $ja) verified; job $jb's id with another step's key refused"

# 4b. sbatch --offcore=agent: the batch script gets no variables (it runs
# no ranks); the srun steps inside it inherit the option and get theirs
timeout 120 sbatch --wait --offcore=agent -n2 -o "$T/batch.out" -e "$T/batch.err" \
    --wrap "env > $T/batch.env; srun --mpi=pmix $HIST $HARGS" > /dev/null ||
    fail "sbatch --offcore=agent: $(cat "$T/batch.err" 2>/dev/null)"
! grep -q '^OC_' "$T/batch.env" || fail "the batch script got offcore variables"
grep -q '"verified":true' "$T/batch.out" && grep -q '"placement":"agent"' "$T/batch.out" ||
    fail "srun inside sbatch --offcore=agent: $(cat "$T/batch.out" "$T/batch.err")"
echo "ok: sbatch --offcore=agent: the script gets no variables, its srun runs through the agent, verified"

# 5. auto with the agent up
job -n2 --offcore=auto "$HIST" $HARGS || fail "histogram --offcore=auto"
verified agent || fail "auto with an agent did not use it: $(cat "$T/out")"
grep -q "placement agent" "$T/err" || fail "auto did not say which placement: $(cat "$T/err")"
echo "ok: --offcore=auto with the agent up: agent, said so"

# 6. the agent stopped (its socket still accepts), then gone
kill -STOP "$AGENT"
if job -n2 --offcore=agent "$HIST" $HARGS; then
    fail "a step ran through a stopped agent"
fi
grep -q "offcore: .*does not answer within 1000 ms" "$T/err" ||
    fail "no message for a stopped agent: $(cat "$T/err")"
kill -CONT "$AGENT"
stop "$AGENT"
AGENT=
if job -n2 --offcore=agent "$HIST" $HARGS; then
    fail "a step ran with --offcore=agent and no agent"
fi
grep -q "offcore: .*--offcore=agent: no agent answers at unix:$T/agent.sock.*start offcored" "$T/err" ||
    fail "no message for a node without an agent: $(cat "$T/err")"
[ "$(grep -c "no agent answers" "$T/err")" = 1 ] || fail "the message is not said once per node"
! grep -q '"verified"' "$T/out" || fail "the program ran although the step failed"
said=$(grep -m1 "no agent answers" "$T/err")
job -n2 --offcore=auto "$HIST" $HARGS || fail "histogram --offcore=auto without an agent"
verified inline || fail "auto without an agent: $(cat "$T/out")"
grep -q "placement inline" "$T/err" || fail "auto did not say it fell back: $(cat "$T/err")"
echo "ok: agent stopped or down: --offcore=agent fails the step with the plugin's message; auto runs inline and says so"
echo "  (the user sees: $said)"
echo PASS
