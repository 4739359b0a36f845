#!/bin/sh
# run-agent-modes.sh — histogram and index-gather through offcored by the
# rank's channel and mode (OC_AGENT_CHANNEL shm|ucx, OC_AGENT_MODE
# stream|per-dest): N ranks pinned to cores 0..N-1, the agent's T threads
# on the next cores; one JSON line a run, two interleaved repeats.  Meant
# for a machine with N + T cores (the devkit's 16-core one: B=/oc/build);
# B (the build, /oc/build), N (8), TS ("1 4"), UPD (50M), REQ (20M).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_TLS=sm,self OMPI_MCA_plm=isolated
B=${B:-/oc/build}; N=${N:-8}
B=$(cd "$B" && pwd)
T=$(mktemp -d /tmp/oc-agent-modes-XXXXXX)
AGENT=
trap '[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
. "$(dirname "$0")/agent-lib.sh"
$B/src/tools/offcore keygen > $T/key && chmod 600 $T/key
JOB=1
for rep in 1 2; do
for app in histogram index-gather; do
  case $app in histogram) args="--updates ${UPD:-50M} --table 10K";; *) args="--requests ${REQ:-20M} --table 10K";; esac
  for t in ${TS:-1 4}; do
  for cm in shm:stream ucx:stream ucx:per-dest; do
    ch=${cm%%:*}; md=${cm#*:}
    JOB=$((JOB + 1)); rm -f $T/agent.sock
    start_agent $N-$((N + t - 1)) --threads $t
    k=$($B/src/tools/offcore job-key --job $JOB --cluster-key $T/key)
    out=$(timeout 120 taskset -c 0-$((N-1)) mpirun --allow-run-as-root --bind-to hwthread --map-by hwthread -np $N -x UCX_TLS \
      -x OC_PLACEMENT=agent -x OC_AGENT=unix:$T/agent.sock -x OC_JOB=$JOB -x OC_JOB_KEY=$k -x OC_AGENT_CHANNEL=$ch -x OC_AGENT_MODE=$md \
      $B/apps/$app $args 2>$T/err); rc=$?
    stop_agent
    rate=$(printf '%s' "$out" | sed -n 's/.*"rate":\([0-9.e+-]*\).*/\1/p' | head -1)
    ok=false; printf '%s' "$out" | grep -q '"verified":true' && [ $rc -eq 0 ] && ok=true
    echo "{\"app\":\"$app\",\"threads\":$t,\"channel\":\"$ch\",\"mode\":\"$md\",\"rate\":${rate:-null},\"verified\":$ok,\"rc\":$rc}"
  done; done; done; done
