#!/bin/bash
# bench/run-slurm-launch.sh BUILD_DIR [REPEATS] — what --offcore costs a
# Slurm step's launch: a one-node Slurm of its own (tests/slurm/cluster-lib.sh)
# and an offcored, then steps `srun true` (2 tasks, in one allocation)
# without --offcore (the baseline),
# with --offcore=inline (the plugin, no agent check) and with
# --offcore=agent (the agent's HELLO/CHALLENGE and the job key, on the
# node), interleaved REPEATS (10) times.  Prints one JSON line: median
# wall seconds per step of each, and each over the baseline.  Root.
set -euo pipefail
B=${1:?usage: run-slurm-launch.sh BUILD_DIR [REPEATS]}
R=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stats-lib.sh"
. "$here/../tests/slurm/cluster-lib.sh"
trap slurm_down EXIT INT TERM
rc=0
slurm_up "$B/contrib/slurm/spank_offcore.so" "$B/src/tools/offcore" || rc=$?
[ $rc = 0 ] || exit $rc
agent_up "$B/src/agent/offcored"
# every step in one allocation (salloc): no scheduling between them
times=$(salloc -n2 --quiet bash -c '
step() { # step ARGS...: wall seconds of one srun ARGS true
    t0=$(date +%s.%N); srun "$@" true; t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.4f\", b - a }"
}
step > /dev/null # the first step warms slurmd up
for _ in $(seq '"$R"'); do
    echo "$(step) $(step --offcore=inline) $(step --offcore=agent)"
done')
none=$(awk '{ print $1 }' <<< "$times")
inl=$(awk '{ print $2 }' <<< "$times")
agt=$(awk '{ print $3 }' <<< "$times")
mn=$(median "$none") mi=$(median "$inl") ma=$(median "$agt")
printf '{"bench":"slurm-launch","repeats":%s,"none_s":%s,"inline_s":%s,"agent_s":%s,' "$R" "$mn" "$mi" "$ma"
printf '"inline_over_none":%s,"agent_over_none":%s,"spread_none":%s,"spread_agent":%s}\n' \
    "$(ratio "$mi" "$mn")" "$(ratio "$ma" "$mn")" "$(spread "$none")" "$(spread "$agt")"
