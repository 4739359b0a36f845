#!/bin/sh
# run-coll-threads.sh BUILD_DIR — the collectives of the agent placement
# through offcored with 1, 2 and 4 routing threads: bench/coll_bench.c's
# allreduce, all-to-all and bcast sweep (BENCH_COLL_MIN to BENCH_COLL_MAX) and the
# iallreduce overlap, with Open MPI in the same job as the baseline, one
# agent per thread count.  Prints coll_bench's JSON lines (each with
# "agent_threads" added) and one summary line per thread count: rows,
# rows verified, worst latency ratio to Open MPI.  Exits non-zero when a
# run fails or a row does not verify: results must not depend on the
# thread count.  No speed target is asserted.
#
# Environment (defaults): BENCH_RANKS (2)  BENCH_COLL_THREADS ("1 2 4")
# BENCH_COLL_MIN (8)  BENCH_COLL_MAX (1048576)  BENCH_COLL_REPEATS (3)  UCX_TLS (sm,self)
# BENCH_COLL_OVERLAP (65536,1048576: the iallreduce overlap sizes)
# BENCH_PIN (n; y: ranks on cores 0..RANKS-1, the agent's threads on the
# next cores, mpirun --bind-to hwthread: for a machine with
# RANKS + threads cores; n: no pinning, ranks oversubscribed as they come)
# mpirun runs under `timeout --foreground`, in this script's process group,
# so that a time box around the script (bench/run-device.sh) reaches it.
set -u
B=${1:?usage: run-coll-threads.sh BUILD_DIR}
B=$(cd "$B" && pwd)
RANKS=${BENCH_RANKS:-2} MIN=${BENCH_COLL_MIN:-8} MAX=${BENCH_COLL_MAX:-1048576}
REPEATS=${BENCH_COLL_REPEATS:-3} PIN=${BENCH_PIN:-n}
OVERLAP=${BENCH_COLL_OVERLAP:-65536,1048576}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=${UCX_TLS:-sm,self}
command -v mpirun >/dev/null || { echo "run-coll-threads: no mpirun: skipped"; exit 0; }
T=$(mktemp -d /tmp/oc-coll-threads-XXXXXX)
AGENT=
trap '[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; rm -rf "$T"' EXIT
# killed (a time box around this script): the rows the cut-off run had
# printed, marked "cut", then out through the EXIT trap (a trap that does
# not exit would carry on with the loop)
on_term() {
    [ -s "$T/out" ] && grep '^{' "$T/out" | sed "s/}\$/,\"agent_threads\":${t:-0},\"cut\":true}/"
    exit 143
}
trap on_term INT TERM
. "$(dirname "$0")/agent-lib.sh"
. "$(dirname "$0")/stats-lib.sh"
"$B/src/tools/offcore" keygen > "$T/key" && chmod 600 "$T/key"
rc=0 job=20
for t in ${BENCH_COLL_THREADS:-1 2 4}; do
    job=$((job + 1))
    agent_cpus= rank_pin= bind="--oversubscribe --bind-to none"
    if [ "$PIN" = y ]; then
        agent_cpus=$RANKS-$((RANKS + t - 1))
        rank_pin="taskset -c 0-$((RANKS - 1))"
        bind="--bind-to hwthread --map-by hwthread"
    fi
    rm -f "$T/agent.sock"
    start_agent "$agent_cpus" --threads "$t"
    OC_PLACEMENT=agent OC_AGENT="unix:$T/agent.sock" OC_JOB=$job \
    OC_JOB_KEY=$("$B/src/tools/offcore" job-key --job $job --cluster-key "$T/key") \
        timeout --foreground 900 $rank_pin mpirun $bind --mca btl self,vader \
        -x OC_PLACEMENT -x OC_AGENT -x OC_JOB -x OC_JOB_KEY -x UCX_TLS \
        -np "$RANKS" "$B/bench/coll-bench" --min "$MIN" --max "$MAX" \
        --repeats "$REPEATS" --overlap "$OVERLAP" > "$T/out" 2> "$T/err"
    r=$?
    stop_agent
    # every row with "agent_threads" added, then the thread count's summary
    # (awk, not python: the device kit's root has no python3)
    awk -v t="$t" -v r="$r" -v ranks="$RANKS" "$JF_AWK"'
        /^\{/ { line = $0; sub(/\}$/, ",\"agent_threads\":" t "}", line); print line; n++
                if (jf(line, "verified") == "true") ok++
                if (jf(line, "measure") == "" && jf(line, "mpi_us") + 0 > 0 &&
                    jf(line, "us") / jf(line, "mpi_us") > worst)
                    worst = jf(line, "us") / jf(line, "mpi_us") }
        END { printf "{\"bench\":\"coll-threads\",\"ranks\":%d,\"agent_threads\":%d,\"rc\":%d,\"rows\":%d,\"verified\":%d,\"worst_latency_ratio\":%.3f}\n",
                  ranks, t, r, n, ok, worst
              exit !(r == 0 && n > 0 && ok == n) }' "$T/out" || rc=1
    [ $r -eq 0 ] || { tail -5 "$T/err"; tail -5 "$T/agent.log"; }
done
exit $rc
