#!/bin/bash
# run-coll-bench.sh BUILD_DIR — offcore's collectives vs Open MPI's in one
# run (bench/coll_bench.c): allreduce, all-to-all and bcast latency from 8 B
# to 64 MiB as ratios, the OSU-style overlap of oc_iallreduce vs
# MPI_Iallreduce, and the time to solution of a compute loop's step
# (compute then MPI_Allreduce, against oc_iallreduce overlapped with the
# compute) with compute 0.5, 1 and 2x Open MPI's allreduce time.  Prints coll_bench's JSON lines, then a summary.  Exits
# non-zero when a run fails or a result does not verify.  No speed target
# is asserted: the figures are reported.
#
# Environment (defaults): BENCH_RANKS (2)  BENCH_COLL_MIN (8: the latency
# sweeps' first size, bytes)  BENCH_COLL_MAX (64M in bytes)
# BENCH_COLL_REPEATS (5)  BENCH_COLL_OVERLAP (65536,1048576)
# UCX_TLS (sm,self)  BENCH_COLL_AGENT_MAX (1M: the latency sweep's top in
# the agent placement)  BENCH_COLL_AGENT_NICE (unset: offcored at the
# default priority; N: nice -n N, and its own session's scheduling group
# at nice N where the kernel groups sessions (autogroup), to give the agent
# its core on a machine where other jobs load core 1 as well).  Two runs: the inline placement, then the agent
# placement with one offcored pinned to core 1 and the ranks to core 0
# (the issue's 2-core method: the agent's core is one the ranks do not
# use); each run has its own same-run Open MPI baseline.  BENCH_COLL_SLICE_US
# (50): in the agent run the ranks' compute yields core 0 that often, then
# the overlap is measured once more with 0 (never); see coll_bench.c work().
# BENCH_COLL_RUNS ("inline agent"): which of the two runs.
# bash for pipefail: run as `sh run-coll-bench.sh`, it re-runs itself under bash
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u -o pipefail
B=${1:?usage: run-coll-bench.sh BUILD_DIR}
RANKS=${BENCH_RANKS:-2}
MIN=${BENCH_COLL_MIN:-8}
MAX=${BENCH_COLL_MAX:-67108864}
REPEATS=${BENCH_COLL_REPEATS:-5}
OVERLAP=${BENCH_COLL_OVERLAP:-65536,1048576}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=${UCX_TLS:-sm,self} OC_PLACEMENT=inline
command -v mpirun >/dev/null || { echo "run-coll-bench: no mpirun: skipped"; exit 0; }
OUT=$(mktemp /tmp/oc-coll-bench-XXXXXX)
trap 'rm -f "$OUT"' EXIT INT TERM
rc=0
case " ${BENCH_COLL_RUNS:-inline agent} " in *" inline "*)
echo "# collectives: offcore ($RANKS ranks, inline) vs Open MPI, same job"
timeout 900 mpirun --oversubscribe --bind-to none --mca btl self,vader \
    -np "$RANKS" "$B/bench/coll-bench" --min "$MIN" --max "$MAX" --repeats "$REPEATS" \
    --overlap "$OVERLAP" | tee "$OUT"
rc=$?
python3 - "$OUT" <<'PY' || rc=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
worst = 0
for r in rows:
    if r.get("measure") == "overlap":
        print("# %-18s %9d B  overlap offcore %5.1f%%  Open MPI %5.1f%%" %
              ("iallreduce overlap", r["bytes"], r["overlap_pct"], r["mpi_overlap_pct"]))
    elif r.get("measure") == "time_to_solution":
        print("# %-18s %9d B  compute %8.1f us (%gx MPI's allreduce): offcore overlapped %9.1f us  compute + MPI_Allreduce %9.1f us  gain %.2f" %
              ("time to solution", r["bytes"], r["compute_us"], r["compute_factor"], r["us"], r["mpi_us"], r["gain"]))
    else:
        ratio = r["us"] / r["mpi_us"]
        if r["op"] != "bcast":   # the bar is allreduce's and all-to-all's
            worst = max(worst, ratio)
        print("# %-18s %9d B  offcore %10.2f us  Open MPI %10.2f us  ratio %.2f" %
              (r["op"], r["bytes"], r["us"], r["mpi_us"], ratio))
    if not r["verified"]:
        print("# NOT VERIFIED:", r); sys.exit(1)
print("# worst allreduce/all-to-all latency ratio offcore/Open MPI: %.2f (bar: 1.2)" % worst)
PY
esac
# the agent placement: ranks on core 0, offcored on core 1
AMAX=${BENCH_COLL_AGENT_MAX:-1048576}
OFFCORED=$B/src/agent/offcored OFFCORE=$B/src/tools/offcore
case " ${BENCH_COLL_RUNS:-inline agent} " in *" agent "*) ;; *) exit $rc ;; esac
if [ -x "$OFFCORED" ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    D=$(mktemp -d /tmp/oc-coll-bench-agent-XXXXXX)
    "$OFFCORE" keygen > "$D/ck" && chmod 600 "$D/ck"
    # nice alone does not reach past this session where the kernel
    # schedules each session as a group (autogroup: Linux's default where
    # /proc/sys/kernel/sched_autogroup_enabled is 1): the agent then runs
    # in a session of its own whose group gets that nice as well
    if [ -n "${BENCH_COLL_AGENT_NICE:-}" ]; then
        set -- setsid sh -c 'echo "$0" > /proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' "$BENCH_COLL_AGENT_NICE"
    else
        set --
    fi
    "$@" taskset -c 1 "$OFFCORED" --listen "unix:$D/a.sock" --cluster-key "$D/ck" \
        --metrics off > "$D/agent.log" 2>&1 &
    APID=$!
    n=0
    until grep -qw ready "$D/agent.log" 2>/dev/null || [ $n -ge 100 ]; do sleep 0.1; n=$((n + 1)); done
    echo "# collectives: offcore ($RANKS ranks on core 0, agent on core 1${BENCH_COLL_AGENT_NICE:+, nice $BENCH_COLL_AGENT_NICE}) vs Open MPI, same job; $(uptime)"
    # the ranks share core 0: their compute gives the core up every
    # $SLICE us so that they interleave as ranks on cores of their own
    # would (coll_bench.c, work()); the overlap is then measured again
    # without (slice 0: one rank computes a whole time slice before the
    # other starts its collective).  Both rows are printed.
    SLICE=${BENCH_COLL_SLICE_US:-50} job=9
    for s in "$SLICE" 0; do
        job=$((job + 1))
        if [ "$s" = "$SLICE" ]; then args="--min $MIN --max $AMAX"; else args="--min 2 --max 1"; fi
        OC_PLACEMENT=agent OC_AGENT="unix:$D/a.sock" OC_JOB=$job BENCH_COLL_SLICE_US=$s \
        OC_JOB_KEY=$("$OFFCORE" job-key --job $job --cluster-key "$D/ck") \
            timeout 900 taskset -c 0 mpirun --oversubscribe --bind-to none \
            --mca btl self,vader --mca mpi_yield_when_idle 1 \
            -x OC_PLACEMENT -x OC_AGENT -x OC_JOB -x OC_JOB_KEY -x BENCH_COLL_SLICE_US \
            -np "$RANKS" "$B/bench/coll-bench" $args --repeats "$REPEATS" \
            --overlap "$OVERLAP" || touch "$D/failed"
        [ "$s" = 0 ] && break
    done | tee "$OUT"
    [ -e "$D/failed" ] && rc=1
    kill "$APID" 2>/dev/null; wait "$APID" 2>/dev/null; rm -rf "$D"
    python3 - "$OUT" <<'PY' || rc=1
import json, sys
for r in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")):
    if r.get("measure") == "overlap":
        s = r.get("compute_slice_us", 0)
        print("# agent %-12s %9d B  overlap offcore %5.1f%%  Open MPI %5.1f%% (%s; bar: >= 90%% at 1 MiB)" %
              ("iallreduce overlap", r["bytes"], r["overlap_pct"], r["mpi_overlap_pct"],
               "compute yields core 0 every %d us" % s if s else "compute never yields"))
    elif r.get("measure") == "time_to_solution":
        print("# agent %-12s %9d B  compute %8.1f us (%gx MPI's allreduce): offcore overlapped %9.1f us  compute + MPI_Allreduce %9.1f us  gain %.2f%s" %
              ("time to sol.", r["bytes"], r["compute_us"], r["compute_factor"], r["us"], r["mpi_us"], r["gain"],
               " (bar on 16 cores: >= 1.5)" if r["compute_factor"] == 1 else ""))
    else:
        print("# agent %-12s %9d B  offcore %10.2f us  Open MPI %10.2f us  ratio %.2f" %
              (r["op"], r["bytes"], r["us"], r["mpi_us"], r["us"] / r["mpi_us"]))
    if not r["verified"]:
        print("# NOT VERIFIED:", r); sys.exit(1)
PY
fi
exit $rc
