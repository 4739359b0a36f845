#!/bin/bash
# agent-test.sh BUILD_DIR CASE — offcored with real ranks.  Exit 0 PASS,
# 1 FAIL, 77 SKIP.  Every process runs under a timeout; everything started
# is killed and removed on exit.
#
# Cases:
#   local       one agent, ranks through it: every message checked
#   stream      the same in stream mode (OC_AGENT_MODE=stream)
#   shm         the shared-memory channel (the default on a Unix socket), in
#               both modes, and the default mode (auto: stream there, per-dest
#               over UCX): exact, back-pressure from a full ring (the rank
#               waits, counted), said at info level by rank and agent; an
#               agent offering none (OC_AGENT_SHM_SLOTS=0) and
#               OC_AGENT_CHANNEL=ucx fall back to UCX and say so
#   twojobs     two jobs share the agent at once, each exact
#   badkey      a rank with the wrong job key is refused with a clear error
#   kill-agent  SIGKILL the agent mid-run: every rank errors out within 5 s
#   kill-rank   SIGKILL a rank mid-run: its job fails, another job finishes
#   sigterm     SIGTERM the agent: it tells the ranks and exits 0
#   hostile     malformed, cross-job, forged and unauthenticated bundles and
#               control junk: rejected, counted, the agent keeps serving
#   metrics     /metrics answers valid text while a job runs; offcore stat
#   idle        after a job, an idle agent's routing threads sleep on their
#               UCX worker's event fd (counted) instead of napping every
#               50 us, and wake for the next job
set -u -o pipefail
. "$(dirname "$0")/lib.sh"   # wait_for
B=${1:?usage: agent-test.sh BUILD_DIR CASE}
CASE=${2:?case}
B=$(cd "$B" && pwd)
OFFCORED=$B/src/agent/offcored
OFFCORE=$B/src/tools/offcore
TR=$B/tests/integration/test_runtime
T=$(mktemp -d /tmp/oc-agent-XXXXXX)
PIDS=()

cleanup() {
    exec 2>/dev/null   # no "Killed" notices for what we kill here
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    pkill -9 -f -- "$T/" 2>/dev/null   # whatever still names this run's dir
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL $CASE: $*"; cp "$T/agent.log" "${OC_TEST_KEEP_LOG:-/dev/null}" 2>/dev/null; [ -f "$T/agent.log" ] && sed 's/^/  agent: /' "$T/agent.log" | tail -20; exit 1; }
pass() { echo "PASS $CASE"; exit 0; }

export UCX_TLS=${UCX_TLS:-sm,self}
export OC_BOOTSTRAP_DIR=$T   # unused in agent placement; harmless
"$OFFCORE" keygen > "$T/cluster.key" || fail "offcore keygen"
chmod 600 "$T/cluster.key"

start_agent() { # start_agent [extra args]: waits until it is ready
    OC_LOG=agent:info,router:info "$OFFCORED" --listen "unix:$T/agent.sock" --cluster-key "$T/cluster.key" \
        --metrics "${METRICS:-off}" "$@" > "$T/agent.log" 2>&1 &
    AGENT=$!
    PIDS+=("$AGENT")
    for _ in $(seq 100); do
        grep -qw "ready" "$T/agent.log" && return 0
        kill -0 "$AGENT" 2>/dev/null || fail "agent died at start"
        sleep 0.05
    done
    fail "agent not ready in 5 s"
}

wait_job() { # wait_job JOB: until the agent says every rank of it is in
    for _ in $(seq 600); do
        grep -q "job $1 ready" "$T/agent.log" && return 0
        sleep 0.05
    done
    fail "job $1 never became ready"
}

job_env() { # job_env JOB: the environment a launcher gives a job's ranks
    echo "OC_PLACEMENT=agent OC_AGENT=unix:$T/agent.sock OC_JOB=$1" \
         "OC_JOB_KEY=$("$OFFCORE" job-key --job "$1" --cluster-key "$T/cluster.key")"
}

case "$CASE" in
local)
    start_agent
    for s in "fixed 2" "mixed 3" "reqrep 2" "alternating 2" "fixed 1" \
             "stallrecv 3"; do
        env $(job_env 11) timeout 120 "$TR" $s > "$T/out" 2>&1 ||
            { cat "$T/out"; fail "$s through the agent"; }
    done
    pass ;;
stream)
    # stream mode: every message in one stream to the agent, sorted there;
    # the same exact checks as local, and the library says which mode
    start_agent
    for s in "fixed 2" "mixed 3" "reqrep 2" "alternating 2" "fixed 1" \
             "large 2" "stallrecv 3"; do
        env $(job_env 12) OC_AGENT_MODE=stream OC_LOG=runtime:info \
            timeout 120 "$TR" $s > "$T/out" 2>&1 ||
            { cat "$T/out"; fail "$s through the agent, stream mode"; }
        grep -q "mode stream" "$T/out" || { cat "$T/out"; fail "$s: mode not logged"; }
    done
    pass ;;
shm)
    start_agent
    for mode in stream per-dest; do
        for s in "fixed 2" "mixed 3" "reqrep 2" "backpressure 2" \
                 "alternating 2" "stallrecv 3"; do
            env $(job_env 13) OC_AGENT_MODE=$mode OC_LOG=runtime:info \
                timeout 120 "$TR" $s > "$T/out" 2>&1 ||
                { cat "$T/out"; fail "$s, $mode mode on shared memory"; }
            grep -q "channel shm" "$T/out" ||
                { cat "$T/out"; fail "$s: shared-memory channel not used"; }
            if [ "$s" = "backpressure 2" ]; then
                grep -Eq "shm channel: [1-9][0-9]* back-pressured waits" \
                    "$T/out" || { cat "$T/out"; fail "no wait counted"; }
            fi
        done
    done
    grep -q "rank 1/2 joined (router 0, shared memory)" "$T/agent.log" ||
        fail "the agent does not say it serves ranks on shared memory"
    # the default mode (auto): stream on shared memory, per-dest over UCX
    env $(job_env 16) OC_LOG=runtime:info \
        timeout 120 "$TR" fixed 2 > "$T/out" 2>&1 || { cat "$T/out"; fail "default"; }
    grep -q "mode stream.*channel shm" "$T/out" ||
        { cat "$T/out"; fail "default: not stream on shared memory"; }
    # who orders a publish before the look at the agent's sleeping flag:
    # the agent's membarrier where the kernel has it (util/spsc.h), else
    # the rank's own fence — said, either way
    grep -Eq "publish fence: (the agent's \(membarrier\)|own)" "$T/out" ||
        { cat "$T/out"; fail "default: the publish fence not said"; }
    env $(job_env 14) OC_AGENT_CHANNEL=ucx OC_LOG=runtime:info \
        timeout 120 "$TR" mixed 2 > "$T/out" 2>&1 || { cat "$T/out"; fail "ucx channel"; }
    grep -q "mode per-dest.*channel ucx" "$T/out" ||
        { cat "$T/out"; fail "ucx (auto: per-dest) not said"; }
    kill "$AGENT"; wait "$AGENT" 2>/dev/null
    OC_AGENT_SHM_SLOTS=0 start_agent
    env $(job_env 15) OC_AGENT_MODE=stream OC_LOG=runtime:info \
        timeout 120 "$TR" reqrep 2 > "$T/out" 2>&1 || { cat "$T/out"; fail "fallback"; }
    grep -q "channel ucx (the agent offered no shared memory)" "$T/out" ||
        { cat "$T/out"; fail "fallback to UCX not said"; }
    pass ;;
twojobs)
    start_agent --threads 2
    env $(job_env 21) timeout 120 "$TR" mixed 2 > "$T/o1" 2>&1 &
    j1=$!
    env $(job_env 22) timeout 120 "$TR" reqrep 3 > "$T/o2" 2>&1 &
    j2=$!
    wait $j1 || { cat "$T/o1"; fail "job 21"; }
    wait $j2 || { cat "$T/o2"; fail "job 22"; }
    pass ;;
badkey)
    start_agent
    OC_PLACEMENT=agent OC_AGENT=unix:$T/agent.sock OC_JOB=5 \
        OC_JOB_KEY=$(printf '%064d' 0) timeout 30 "$TR" fixed 1 > "$T/out" 2>&1 &&
        fail "a wrong key was accepted"
    grep -q "OC_JOB_KEY is not this job's key" "$T/out" ||
        { cat "$T/out"; fail "no clear error"; }
    kill -0 "$AGENT" || fail "the agent died"
    pass ;;
kill-agent)
    start_agent
    env $(job_env 31) OC_TEST_SECONDS=30 timeout 120 "$TR" endless 2 > "$T/out" 2>&1 &
    job=$!
    wait_job 31
    kill -9 "$AGENT"
    t0=$(date +%s.%N)
    wait $job && fail "ranks did not notice"
    t1=$(date +%s.%N)
    grep -q "lost the agent" "$T/out" || { cat "$T/out"; fail "no clear error"; }
    for r in 0 1; do
        grep -q "^rank $r: oc_[a-z]*: OC_ERR_PEER_FAILED" "$T/out" ||
            { cat "$T/out"; fail "rank $r: its call did not return OC_ERR_PEER_FAILED"; }
    done
    awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }' ||
        fail "ranks took $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') s"
    pass ;;
hol)
    # No head-of-line blocking: job 71's receiver stops polling (until the
    # script releases it, 90 s at most), so the agent's next hop to it is
    # blocked and its senders are pushed back; job 72, sharing the agent
    # (one routing thread), must still run to the end while that receiver
    # is stalled, however slowly a loaded machine starts it.  Job 72
    # starts once the agent holds back toward the receiver: a next hop
    # blocklisted or bundles waiting (UCX), or its shared-memory ring full.
    METRICS=127.0.0.1:0 start_agent
    port=$(sed -n 's/.*metrics http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/agent.log")
    [ -n "$port" ] || fail "no metrics port in the log"
    env $(job_env 71) OC_TEST_STALL_SECONDS=90 OC_TEST_STALL_MARK="$T/resumed" \
        OC_TEST_STALL_UNTIL="$T/release" \
        timeout 120 "$TR" stallrecv 3 > "$T/o1" 2>&1 &
    stalled=$!
    wait_job 71
    wait_for 30 metric_nonzero "127.0.0.1:$port" 'offcore_thread_(blocklist_depth|backlog_bundles|shm_ring_full_total)' ||
        fail "the agent never held back toward job 71's receiver"
    [ -e "$T/resumed" ] && fail "job 71's receiver resumed before the test began"
    env $(job_env 72) timeout 60 "$TR" fixed 2 > "$T/o2" 2>&1 ||
        { cat "$T/o2"; fail "job 72 failed"; }
    [ -e "$T/resumed" ] &&
        fail "job 72 only finished after job 71's receiver resumed: head-of-line blocked"
    : > "$T/release"
    wait $stalled || { cat "$T/o1"; fail "job 71 (stalled receiver) failed"; }
    pass ;;
kill-rank)
    start_agent
    env $(job_env 41) OC_TEST_SECONDS=30 timeout 120 "$TR" endless 2 > "$T/o1" 2>&1 &
    victim=$!
    env $(job_env 42) timeout 120 "$TR" mixed 2 > "$T/o2" 2>&1 &
    other=$!
    wait_job 41
    # env execs timeout, whose child is test_runtime, whose children are
    # the ranks: kill one rank
    tr=$(pgrep -P "$victim" | head -1)
    rank=$(pgrep -P "$tr" | head -1)
    [ -n "$rank" ] || fail "no rank process found"
    kill -9 "$rank"
    wait $victim && fail "job 41 did not fail"
    wait $other || { cat "$T/o2"; fail "job 42 was disturbed"; }
    kill -0 "$AGENT" || fail "the agent died"
    grep -q "job 41 failed" "$T/agent.log" || fail "agent did not report it"
    pass ;;
sigterm)
    start_agent
    env $(job_env 51) OC_TEST_SECONDS=30 timeout 120 "$TR" endless 2 > "$T/out" 2>&1 &
    job=$!
    wait_job 51
    kill -TERM "$AGENT"
    wait "$AGENT"; rc=$?
    [ $rc -eq 0 ] || fail "agent exit $rc on SIGTERM"
    wait $job && fail "ranks did not notice"
    grep -q "shutting down" "$T/out" || { cat "$T/out"; fail "not told"; }
    pass ;;
hostile)
    METRICS=127.0.0.1:0 start_agent
    port=$(sed -n 's/.*metrics http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/agent.log")
    env $(job_env 71) OC_TEST_RELEASE="$T/release" timeout 120 "$TR" evil 1 \
        > "$T/out" 2>&1 &
    evil=$!
    seen=0
    for _ in $(seq 200); do   # up to 10 s for the agent to count them all
        curl -sf "http://127.0.0.1:$port/metrics" > "$T/m" || fail "curl"
        seen=0
        for r in OC_ERR_WIRE_MAGIC OC_ERR_WIRE_JOB unknown_sender control; do
            grep -q "^offcore_rejects_total{reason=\"$r\"} [1-9]" "$T/m" &&
                seen=$((seen + 1))
        done
        # the forged source and the rank out of range: two RANK rejects;
        # on shared memory a third, a destination read in place
        nrank=2
        grep -q "shm-injected" "$T/out" && nrank=3
        grep -q "^offcore_rejects_total{reason=\"OC_ERR_WIRE_RANK\"} [$nrank-9]" "$T/m" &&
            seen=$((seen + 1))
        [ $seen -eq 5 ] && break
        sleep 0.05
    done
    touch "$T/release"
    wait $evil || { cat "$T/out"; fail "hostile rank run"; }
    [ $seen -eq 5 ] || { grep rejects "$T/m"; fail "not every reject counted"; }
    env $(job_env 72) timeout 120 "$TR" mixed 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "the agent stopped serving"; }
    pass ;;
metrics)
    METRICS=127.0.0.1:0 start_agent
    port=$(sed -n 's/.*metrics http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/agent.log")
    [ -n "$port" ] || fail "no metrics port in the log"
    env $(job_env 61) OC_TEST_SECONDS=8 timeout 120 "$TR" endless 2 > "$T/out" 2>&1 &
    job=$!
    wait_job 61
    for _ in $(seq 100); do  # up to 10 s for the first routed messages
        curl -sf "http://127.0.0.1:$port/metrics" > "$T/m1" || fail "curl"
        grep -q '^offcore_thread_messages_total{thread="0"} [1-9]' "$T/m1" && break
        sleep 0.1
    done
    grep -q '^offcore_thread_messages_total{thread="0"} [1-9]' "$T/m1" ||
        fail "no traffic counted"
    moved=0
    for _ in $(seq 50); do   # and then the counters must move
        sleep 0.1
        curl -sf "http://127.0.0.1:$port/metrics" > "$T/m2" || fail "curl"
        [ "$(grep '^offcore_thread_messages_total' "$T/m1")" != \
          "$(grep '^offcore_thread_messages_total' "$T/m2")" ] && { moved=1; break; }
    done
    [ $moved = 1 ] || fail "counters did not move"
    # the transport of each local rank's link (UCX_TLS=sm,self: shared
    # memory), in /metrics and offcore stat's "local ranks" table
    for r in 0 1; do
        grep -Eq '^offcore_rank_transport\{job="61",rank="'$r'",transport="[a-z_0-9]+/[^"]*",class="sm"\} 1$' "$T/m2" ||
            { grep rank_transport "$T/m2"; fail "rank $r's transport not in /metrics"; }
    done
    "$OFFCORE" stat --agent "127.0.0.1:$port" > "$T/stat" || fail "offcore stat"
    grep -q "61" "$T/stat" || { cat "$T/stat"; fail "job not in offcore stat"; }
    for r in 0 1; do
        tl=$(sed -n 's/^offcore_rank_transport{job="61",rank="'$r'",transport="\([^"]*\)".*/\1/p' "$T/m2")
        sed -n '/^local ranks$/,/^$/p' "$T/stat" | grep -E "^  61/$r +$tl\$" >/dev/null ||
            { cat "$T/stat"; fail "rank $r's transport ($tl) not in offcore stat"; }
    done
    wait $job || { cat "$T/out"; fail "job"; }
    pass ;;
idle)
    METRICS=127.0.0.1:0 start_agent --threads 2
    port=$(sed -n 's/.*metrics http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/agent.log")
    [ -n "$port" ] || fail "no metrics port in the log"
    env $(job_env 91) timeout 120 "$TR" fixed 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "job 91"; }
    # every delivery to a local rank goes through shared memory, whichever
    # thread routes it (each thread has a down ring in every rank's
    # segment; through UCX, a thread's bundles to the other thread's rank
    # would not count as shared-memory ones)
    curl -sf "http://127.0.0.1:$port/metrics" > "$T/m" || fail "curl"
    for t in 0 1; do
        out=$(sed -n 's/^offcore_thread_bundles_total{thread="'$t'",dir="out"} \([0-9]*\)$/\1/p' "$T/m")
        shm=$(sed -n 's/^offcore_thread_shm_bundles_total{thread="'$t'",dir="out"} \([0-9]*\)$/\1/p' "$T/m")
        [ -n "$out" ] && [ "$out" -gt 0 ] && [ "$shm" = "$out" ] ||
            { grep -E '^offcore_thread_(shm_)?bundles_total' "$T/m"
              fail "thread $t sent ${shm:-?} of its ${out:-?} bundles through shared memory"; }
    done
    # wake-ups (context switches) of every thread of the agent
    wakeups() { cat /proc/"$AGENT"/task/*/status | awk '/ctxt_switches/ { s += $2 } END { print s }'; }
    slept=0
    for _ in $(seq 100); do   # a routing thread sleeps after 10 ms idle
        curl -sf "http://127.0.0.1:$port/metrics" > "$T/m" || fail "curl"
        [ "$(grep -c '^offcore_thread_sleeps_total{thread="[01]"} [1-9]' "$T/m")" = 2 ] &&
            { slept=1; break; }
        sleep 0.1
    done
    [ $slept = 1 ] || { grep sleeps "$T/m"; fail "the routing threads never slept"; }
    w0=$(wakeups); c0=$(awk '{ print $14 + $15 }' /proc/"$AGENT"/stat)
    sleep 2   # the measured window (not a wait): wake-ups of an idle agent
    w1=$(wakeups); c1=$(awk '{ print $14 + $15 }' /proc/"$AGENT"/stat)
    # Sleeping, the control and routing threads wake ~10 times a second
    # each (100 ms poll timeouts); napping 50 us, a routing thread woke
    # ~7000 times a second.
    echo "idle agent, 2 s: $((w1 - w0)) wake-ups of its threads," \
         "$((c1 - c0)) ticks of CPU ($(getconf CLK_TCK)/s)"
    [ $((w1 - w0)) -lt 2000 ] || fail "an idle agent woke $((w1 - w0)) times in 2 s"
    env $(job_env 92) timeout 120 "$TR" reqrep 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "the sleeping agent did not serve job 92"; }
    pass ;;
*)
    echo "unknown case $CASE"; exit 2 ;;
esac
