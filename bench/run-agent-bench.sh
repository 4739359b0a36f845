#!/bin/sh
# run-agent-bench.sh BUILD_DIR — the placements side by side, in one run:
# histogram and index-gather with routing inline (in the ranks) and through
# offcored (agent placement) with 1 and 2 routing threads.  Prints every
# app's JSON line, then one summary line per app and case with the rate
# relative to inline.  No speed target on 2 cores: these figures are the
# baseline of the evaluation.  Exits non-zero when anything fails or does
# not verify.
#
# Environment (defaults): BENCH_RANKS (2)  BENCH_AGENT_UPDATES (20M per
# rank)  BENCH_AGENT_REQUESTS (20M)  BENCH_TABLE (10K)  UCX_TLS (sm,self)
# The agent is pinned to the last core (taskset) when there is more than
# one, as a DPU's or a spare socket's cores would be its own.
set -u
B=${1:?usage: run-agent-bench.sh BUILD_DIR}
B=$(cd "$B" && pwd)
RANKS=${BENCH_RANKS:-2}
UPDATES=${BENCH_AGENT_UPDATES:-20M}
REQUESTS=${BENCH_AGENT_REQUESTS:-20M}
TABLE=${BENCH_TABLE:-10K}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=${UCX_TLS:-sm,self}
T=$(mktemp -d /tmp/oc-bench-XXXXXX)
AGENT=""
failed=0
cleanup() { [ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT INT TERM

"$B/src/tools/offcore" keygen > "$T/key" && chmod 600 "$T/key" || exit 2
NCPU=$(nproc)
PIN=""
[ "$NCPU" -gt 1 ] && command -v taskset >/dev/null && PIN="$((NCPU - 1))"

. "$(dirname "$0")/agent-lib.sh"

JOB=1
# run CASE APP ARGS...: one app run; prints its JSON line; rate in $rate
run() {
    case_=$1; app=$2; shift 2
    JOB=$((JOB + 1))
    if [ "$case_" = inline ]; then
        envs="-x OC_PLACEMENT=inline"
    else
        key=$("$B/src/tools/offcore" job-key --job $JOB --cluster-key "$T/key")
        envs="-x OC_PLACEMENT=agent -x OC_AGENT=unix:$T/agent.sock -x OC_JOB=$JOB -x OC_JOB_KEY=$key"
    fi
    out=$(mpirun --allow-run-as-root --oversubscribe -np "$RANKS" -x UCX_TLS \
          $envs "$B/apps/$app" "$@")
    rc=$?
    printf '%s\n' "$out"
    rate=$(printf '%s' "$out" | sed -n 's/.*"rate":\([0-9.e+]*\).*/\1/p')
    if [ $rc -ne 0 ] || ! printf '%s' "$out" | grep -q '"verified":true'; then
        echo "run-agent-bench.sh: $app ($case_) failed or did not verify" >&2
        failed=$((failed + 1))
        rate=0
    fi
}

summary() { # APP CASE RATE BASE
    awk -v app="$1" -v c="$2" -v r="$3" -v b="$4" -v n="$RANKS" 'BEGIN {
        printf "{\"bench\":\"placement\",\"app\":\"%s\",\"case\":\"%s\",\"ranks\":%d,\"rate\":%.4g,\"inline_rate\":%.4g,\"ratio_over_inline\":%.3f}\n",
               app, c, n, r, b, (b > 0 ? r / b : 0) }'
}

for app in histogram index-gather; do
    if [ $app = histogram ]; then args="--updates $UPDATES --table $TABLE"
    else args="--requests $REQUESTS --table $TABLE"; fi
    run inline $app $args; base=$rate
    for th in 1 2; do
        start_agent "$PIN" --threads $th
        run agent $app $args
        stop_agent
        summary $app "agent-threads-$th" "$rate" "$base"
    done
done
exit $failed
