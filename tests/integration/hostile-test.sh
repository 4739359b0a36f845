#!/bin/bash
# hostile-test.sh BUILD_DIR CASE — offcored and the offcore CLI under
# hostile and careless use (issue #10).  Exit 0 PASS, 1 FAIL, 77 SKIP.
# Every process runs under a timeout and is killed by its pid on exit.
#
# Cases (the findings of issue #10 each covers in brackets):
#   flood      offcored under `ulimit -n 256`, 1,000 hostile connections
#              (idle, partial header, garbage, 64 KiB frames), re-opened as
#              the agent closes them: over an idle-attack window its CPU
#              stays under 5% of a core, its RSS grows by at most the
#              documented bound, its log by at most the documented rate;
#              then a real 2-rank job started during the attack verifies;
#              then the agent's descriptor limit is cut to 16 below what it
#              holds (prlimit)
#              under the attack: the agent meets the limit (waited for),
#              backs off (counted) and holds fewer connections to keep a
#              reserve, CPU and log stay within the same bounds, and
#              another job still verifies
#              [1 2 3 15: control-frame wording]
#   hold       2,000 connections (partial handshakes, unfinished 64 KiB frames)
#              with the default descriptor limit: past the handshake
#              deadline the agent holds at most its cap of them, and its
#              RSS grows by at most the documented bound [2]
#   slowloris  32 clients trickling header lines to /metrics: each is cut
#              at the whole-request deadline, and scrapes keep working [12]
#   cli        careless flags and settings, all of the following:
#   keyfifo    a FIFO as key file is refused at once [4]
#   keyorder   --cluster-key beats OC_CLUSTER_KEY in offcored and job-key
#              alike; OC_CLUSTER_KEY= counts as unset [5]
#   listen     empty --listen, --listen ,,, and OC_AGENT_LISTEN= [9]
#   metricsaddr  --metrics '' is an error; a bare port is announced as bound [10]
#   port0      the ports chosen for port 0 are logged [15]
#   flags      --bogus is an unknown option; OC_AGENT_THRAEDS is reported [11]
#   placement  OC_PLACEMENT=auto with a wrong key or a silent agent says
#              why it falls back, at the default log level; =agent fails
#              with a named error [13]
#   sigterm    SIGTERM during a job: no "Request canceled" noise [14]
#   sigstop    a SIGSTOPped agent: its ranks warn within seconds, and say
#              when it moves again [16]
#   unit       contrib/offcored.service.in sets LimitNOFILE (at least 4/3 of
#              the default connection cap) and the usual sandboxing, and
#              systemd-analyze verify accepts it (when installed)
#   handshake  a client that gives up mid-handshake (BYE) is not logged as
#              "unexpected control message" [15]
#
# Measured figures are printed as JSON lines ("measure": ...).
set -u -o pipefail
. "$(dirname "$0")/lib.sh"   # wait_for
B=${1:?usage: hostile-test.sh BUILD_DIR CASE}
CASE=${2:?case}
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
OFFCORED=$B/src/agent/offcored
OFFCORE=$B/src/tools/offcore
TR=$B/tests/integration/test_runtime
T=$(mktemp -d /tmp/oc-hostile-XXXXXX)
PIDS=()

cleanup() {
    exec 2>/dev/null
    for p in "${PIDS[@]}"; do kill -CONT "$p"; kill -9 "$p"; done
    wait
    rm -rf "$T"
}
trap cleanup EXIT
fail() {
    echo "FAIL $CASE: $*"
    # OC_TEST_KEEP_LOG=DIR keeps the whole agent log and the job's output
    if [ -n "${OC_TEST_KEEP_LOG:-}" ]; then
        cp "$T"/*.log "$T"/*.out "$OC_TEST_KEEP_LOG"/ 2>/dev/null
        [ -n "${AGENT:-}" ] && ls -l /proc/"$AGENT"/fd > "$OC_TEST_KEEP_LOG/agent.fd" 2>&1
    fi
    [ -f "$T/agent.log" ] && tail -15 "$T/agent.log" | sed 's/^/  agent: /'
    exit 1
}
pass() { echo "PASS $CASE"; exit 0; }
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }

export UCX_TLS=${UCX_TLS:-sm,self}
export OC_BOOTSTRAP_DIR=$T
unset OC_CLUSTER_KEY OC_AGENT_CLUSTER_KEY OC_AGENT_LISTEN OC_AGENT_METRICS
"$OFFCORE" keygen > "$T/cluster.key" || fail "offcore keygen"
chmod 600 "$T/cluster.key"

# start_agent [args]: offcored (under $AGENT_ULIMIT descriptors if set) on
# $T/agent.sock; waits for "ready"
start_agent() {
    ( [ -n "${AGENT_ULIMIT:-}" ] && ulimit -n "$AGENT_ULIMIT"
      exec env OC_LOG="${AGENT_LOG:-agent:info,router:info}" "$OFFCORED" \
          --listen "unix:$T/agent.sock" --cluster-key "$T/cluster.key" \
          --metrics "${METRICS:-off}" "$@" ) > "$T/agent.log" 2>&1 &
    AGENT=$!
    PIDS+=("$AGENT")
    for _ in $(seq 200); do
        grep -qw "ready" "$T/agent.log" && return 0
        kill -0 "$AGENT" 2>/dev/null || fail "agent died at start"
        sleep 0.05
    done
    fail "agent not ready in 10 s"
}
metrics_port() {
    sed -n 's/.*metrics http:\/\/[^ ]*:\([0-9][0-9]*\)\/metrics.*/\1/p' "$T/agent.log" | head -1
}
job_env() { # job_env JOB
    echo "OC_PLACEMENT=agent OC_AGENT=unix:$T/agent.sock OC_JOB=$1" \
         "OC_JOB_KEY=$("$OFFCORE" job-key --job "$1" --cluster-key "$T/cluster.key")"
}
wait_job() {
    for _ in $(seq 600); do
        grep -q "job $1 ready" "$T/agent.log" && return 0
        sleep 0.05
    done
    fail "job $1 never became ready"
}
# Under AddressSanitizer freed memory sits in its quarantine: RSS then
# measures the sanitizer, not the agent; the RSS bounds are checked only
# in a normal build (the figures are printed either way).
if ldd "$OFFCORED" 2>/dev/null | grep libasan >/dev/null; then ASAN=1; else ASAN=0; fi
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

case "$CASE" in
flood)
    N=${FLOOD_CONNS:-1000}; W=${FLOOD_WINDOW_S:-8}
    AGENT_ULIMIT=256 METRICS=127.0.0.1:0 start_agent
    rss0=$(rss_kib "$AGENT"); base_fds=$(ls /proc/"$AGENT"/fd | wc -l)
    python3 "$HERE/hostile.py" flood "$T/agent.sock" "$N" $((W + 40)) 50 \
        > "$T/flood.json" 2> "$T/flood.err" &
    ATT=$!
    PIDS+=("$ATT")
    for _ in $(seq 200); do grep -q '"phase"' "$T/flood.json" && break; sleep 0.05; done
    grep -q '"phase"' "$T/flood.json" || fail "the attacker did not start: $(cat "$T/flood.err")"
    # the window opens once the backlog has drained: the control server
    # has accepted or refused as many connections as the first round opened
    opened=$(sed -n 's/.*"phase": *"opened", *"opened": *\([0-9]*\).*/\1/p' "$T/flood.json")
    port=$(metrics_port)
    [ -n "$opened" ] && [ -n "$port" ] || fail "no count of opened connections or no metrics port"
    drained() {
        curl -sf -m 2 "http://127.0.0.1:$port/metrics" |
            awk -v n="$opened" '/^offcore_connections_total\{server="control",outcome="(accepted|refused)"\}/ { s += $2 }
                                END { exit !(s >= n) }'
    }
    wait_for 30 drained || fail "the agent did not take the $opened connections of the flood in 30 s"
    kill -0 "$AGENT" 2>/dev/null || fail "the agent died under the flood"
    l0=$(wc -l < "$T/agent.log"); c0=$(cpu_ticks "$AGENT"); t0=$(date +%s.%N)
    # 8 s by default: past the 5 s handshake deadline, so that expiries and
    # reconnects (what the log bound is about) fall in the window
    sleep "$W"   # the measured window (not a wait): attack on, no job
    l1=$(wc -l < "$T/agent.log"); c1=$(cpu_ticks "$AGENT"); t1=$(date +%s.%N)
    rss1=$(rss_kib "$AGENT")
    hz=$(getconf CLK_TCK)
    cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
          'BEGIN { printf "%.2f", 100 * (b - a) / hz / (t1 - t0) }')
    lines=$((l1 - l0))
    # documented bounds (docs/agent-limits.md): RSS <= cap x 8 KiB + 4 MiB
    # (cap = 3/4 x 256 = 192 here); log <= (rate + 1) lines/s per kind,
    # 8 kinds that peers can trigger, + 10 lines
    cap=192; rate=10
    rss_bound=$((cap * 8 + 4096)); log_bound=$(( (rate + 1) * 8 * W + 10 ))
    echo "{\"measure\":\"flood\",\"connections\":$N,\"ulimit_n\":256,\"window_s\":$W," \
         "\"agent_cpu_pct\":$cpu,\"rss_kib_before\":$rss0,\"rss_kib_after\":$rss1," \
         "\"rss_delta_kib\":$((rss1 - rss0)),\"rss_bound_kib\":$rss_bound," \
         "\"log_lines\":$lines,\"log_bound\":$log_bound}"
    # a real job during the attack
    env $(job_env 11) timeout 60 "$TR" fixed 2 > "$T/job.out" 2>&1 ||
        { cat "$T/job.out"; fail "a 2-rank job failed during the attack"; }
    kill -0 "$ATT" 2>/dev/null || fail "the attacker ended before the job did"
    # Phase 2: descriptors run out under the cap (as when UCX or files
    # take them): accept fails with EMFILE and must back off, not spin.
    # (16 below what it holds now: under its cap, so that the flood's next
    # connections hit the limit whatever the population is at this moment)
    # At least the agent's own descriptors at start + 48: room for what a
    # job adds (UCX, pidfds), the reserve of 16 and 16 connections or more;
    # below that the cap leaves no room for a job's two ranks (a limit
    # that low is refused service, not a test of it).
    lim=$(( $(ls /proc/"$AGENT"/fd | wc -l) - 16 ))
    [ $lim -ge $((base_fds + 48)) ] || lim=$((base_fds + 48))
    prlimit --pid "$AGENT" --nofile=$lim:256 || fail "prlimit"
    # the condition, not a time: the agent met the limit and took it as its
    # cap.  Soon, not at once: while descriptors numbered above the limit
    # are open, newcomers take the holes they leave under it, until the
    # handshakes holding those expire (5 s).  The count it was taken from
    # moves (the flood's population follows its reconnect rate, which a
    # loaded machine slows; the last job's descriptors are still closing):
    # a limit the population has meanwhile fallen under is never met, so
    # one not met in 6 s is lowered by 16 more, as an operator would, down
    # to the floor (CI: the population shrank and the limit held 30 s)
    for k in $(seq 600); do
        grep -q "control: out of descriptors" "$T/agent.log" && break
        if [ $((k % 120)) -eq 0 ] && [ $((lim - 16)) -ge $((base_fds + 48)) ]; then
            lim=$((lim - 16))
            prlimit --pid "$AGENT" --nofile=$lim:256 || fail "prlimit"
        fi
        sleep 0.05
    done
    grep -q "control: out of descriptors" "$T/agent.log" ||
        fail "the agent did not meet the lowered descriptor limit (now $lim) in 30 s"
    c2=$(cpu_ticks "$AGENT"); l2=$(wc -l < "$T/agent.log"); t2=$(date +%s.%N)
    # the reserve is there: descriptor numbers free under the limit, looked
    # at 8 times over the 4 s: 16 (OC_GUARD_FD_RESERVE), at least 14 in
    # half the looks (an accept swapping a handshake holds one more for a
    # moment).  The cap must come from the connections UNDER the limit:
    # one numbered above it frees nothing there when closed (taken from
    # all connections, the reserve measured 12-15, and 0 in the runs where
    # a job then hung).
    free_ok=0; frees=""
    for _ in $(seq 8); do
        used=$(ls /proc/"$AGENT"/fd 2>/dev/null | awk -v l="$lim" '$1 < l' | wc -l)
        frees="$frees $((lim - used))"
        [ $((lim - used)) -ge 14 ] && free_ok=$((free_ok + 1))
        sleep 0.5   # 8 samples over 4 s: a window, not a wait
    done
    c3=$(cpu_ticks "$AGENT"); l3=$(wc -l < "$T/agent.log"); t3=$(date +%s.%N)
    [ $free_ok -ge 4 ] ||
        fail "the agent kept less than its reserve of 16 descriptors under the limit $lim (free:$frees)"
    # a job still gets in and runs: the agent keeps a reserve of
    # descriptors under the limit (util/guard.h, "limit"); without it the
    # flood takes each one freed, UCX cannot open /proc/PID/stat for a
    # rank's endpoint ("ucp_ep_create: Endpoint timeout") and the job hangs
    env $(job_env 13) timeout 60 "$TR" fixed 2 > "$T/job.out" 2>&1 ||
        { cat "$T/job.out"; fail "a 2-rank job failed while the agent was out of descriptors"; }
    grep -q "ucp_ep_create" "$T/agent.log" &&
        fail "the agent could not make a rank's endpoint: $(grep -m1 ucp_ep_create "$T/agent.log")"
    prlimit --pid "$AGENT" --nofile=256:256
    for _ in $(seq 100); do   # looked at once a second
        grep -q "descriptor limit was raised" "$T/agent.log" && break
        sleep 0.05
    done
    grep -q "descriptor limit was raised to 256" "$T/agent.log" ||
        fail "the lowered cap stayed after the limit was raised again"
    cpu2=$(awk -v a="$c2" -v b="$c3" -v hz="$hz" -v t0="$t2" -v t1="$t3" \
           'BEGIN { printf "%.2f", 100 * (b - a) / hz / (t1 - t0) }')
    echo "{\"measure\":\"flood-emfile\",\"free_under_limit\":\"${frees# }\",\"nofile\":$lim,\"window_s\":4,\"agent_cpu_pct\":$cpu2,\"log_lines\":$((l3 - l2))}"
    kill "$ATT"; wait "$ATT" 2>/dev/null
    port=$(metrics_port)
    for _ in $(seq 100); do   # the metrics thread may still be backing off
        curl -sf "http://127.0.0.1:$port/metrics" > "$T/m" && break
        sleep 0.1
    done
    grep -E '^offcore_(connections|accept_backoffs)_total' "$T/m" | tr '\n' ' '
    echo
    grep -q '^offcore_accept_backoffs_total{server="control"} [1-9]' "$T/m" ||
        fail "the EMFILE phase never made accept back off"
    awk -v c="$cpu2" 'BEGIN { exit !(c < 5) }' || fail "agent CPU ${cpu2}% of a core while out of descriptors (>= 5%)"
    [ $((l3 - l2)) -le $(( (rate + 1) * 8 * 4 + 10 )) ] || fail "$((l3 - l2)) log lines in 4 s out of descriptors"
    awk -v c="$cpu" 'BEGIN { exit !(c < 5) }' || fail "agent CPU ${cpu}% of a core under an idle attack (>= 5%)"
    [ $ASAN = 1 ] || [ $((rss1 - rss0)) -le $rss_bound ] || fail "RSS grew $((rss1 - rss0)) KiB (bound $rss_bound)"
    [ "$lines" -le "$log_bound" ] || fail "$lines log lines in $W s (bound $log_bound)"
    grep -q "not an offcore bundle" "$T/agent.log" &&
        fail "control-frame errors are described as bundle errors"
    grep -q "not an offcore control frame" "$T/agent.log" ||
        fail "garbage frames were not reported as such"
    pass ;;
hold)
    N=2000
    start_agent
    rss0=$(rss_kib "$AGENT"); fd0=$(ls /proc/"$AGENT"/fd | wc -l)
    python3 "$HERE/hostile.py" flood "$T/agent.sock" "$N" 30 0 partial,bigpartial \
        > "$T/flood.json" 2> "$T/flood.err" &
    ATT=$!
    PIDS+=("$ATT")
    for _ in $(seq 200); do grep -q '"phase"' "$T/flood.json" && break; sleep 0.05; done
    grep -q '"phase"' "$T/flood.json" || fail "the attacker did not start: $(cat "$T/flood.err")"
    # past the 5 s handshake deadline of the first ones: the agent has
    # closed one that did not finish (it says so, rate-limited)
    wait_for 30 grep -q "did not finish its handshake" "$T/agent.log" ||
        fail "no hostile connection expired in 30 s"
    rss1=$(rss_kib "$AGENT"); fd1=$(ls /proc/"$AGENT"/fd | wc -l)
    kill "$ATT"; wait "$ATT" 2>/dev/null
    cap=1024; rss_bound=$((cap * 8 + 4096))
    echo "{\"measure\":\"hold\",\"connections\":$N,\"agent_fds_before\":$fd0," \
         "\"agent_fds_held\":$fd1,\"rss_delta_kib\":$((rss1 - rss0)),\"rss_bound_kib\":$rss_bound}"
    [ $((fd1 - fd0)) -le $((cap + 32)) ] || fail "the agent holds $((fd1 - fd0)) hostile connections (cap $cap)"
    [ $ASAN = 1 ] || [ $((rss1 - rss0)) -le $rss_bound ] || fail "RSS grew $((rss1 - rss0)) KiB holding them (bound $rss_bound)"
    env $(job_env 12) timeout 60 "$TR" fixed 2 > "$T/job.out" 2>&1 ||
        { cat "$T/job.out"; fail "a job failed after the attack"; }
    pass ;;
slowloris)
    METRICS=127.0.0.1:0 start_agent
    port=$(metrics_port)
    [ -n "$port" ] || fail "no metrics port in the log"
    python3 "$HERE/hostile.py" slowloris 127.0.0.1 "$port" 32 12 1 > "$T/slow.json" &
    ATT=$!
    PIDS+=("$ATT")
    # the scrapes start once the metrics server has accepted the 32 (and
    # each of these polls: a scrape is a connection too)
    polls=0
    held() {
        polls=$((polls + 1))
        curl -sf -m 2 "http://127.0.0.1:$port/metrics" |
            awk -v n=$((32 + polls)) '/^offcore_connections_total\{server="metrics",outcome="accepted"\}/ { s += $2 }
                                      END { exit !(s >= n) }'
    }
    wait_for 20 held || fail "the metrics server did not accept the slowloris connections in 20 s"
    ok=0; tries=0
    for _ in $(seq 10); do   # scrapes while the slowloris runs
        tries=$((tries + 1))
        curl -sf -m 2 "http://127.0.0.1:$port/metrics" -o /dev/null && ok=$((ok + 1))
        sleep 1   # 10 scrapes over the attack's 12 s: a window, not a wait
    done
    wait "$ATT"
    echo "{\"measure\":\"slowloris\",\"scrapes_ok\":$ok,\"scrapes\":$tries,\"attack\":$(cat "$T/slow.json")}"
    [ "$ok" -eq "$tries" ] || fail "only $ok of $tries scrapes answered during the slowloris"
    python3 - "$T/slow.json" <<'EOF' || fail "slowloris connections outlived the request deadline"
import json, sys
r = json.load(open(sys.argv[1]))
# every one cut, none later than the 5 s deadline + one 1 s trickle + slack
sys.exit(0 if r["still_open"] == 0 and max(r["closed_after_s"]) <= 7.5 else 1)
EOF
    pass ;;
cli)
    "$0" "$B" keyfifo && "$0" "$B" keyorder && "$0" "$B" listen &&
        "$0" "$B" metricsaddr && "$0" "$B" port0 && "$0" "$B" flags ||
        fail "see above"
    pass ;;
keyfifo)
    # [4] a FIFO as the key file: refused at once, never waited on
    mkfifo "$T/fifo.key"
    timeout 5 "$OFFCORED" --listen "unix:$T/a.sock" --metrics off \
        --cluster-key "$T/fifo.key" > "$T/out" 2>&1; rc=$?
    [ $rc -ne 124 ] || fail "offcored hung opening a FIFO key file"
    [ $rc -ne 0 ] && grep -q "not a regular file" "$T/out" ||
        { cat "$T/out"; fail "FIFO key: no clear refusal (exit $rc)"; }
    pass ;;
keyorder)
    # [5] precedence: --cluster-key beats OC_CLUSTER_KEY, for offcored and
    # offcore job-key alike; OC_CLUSTER_KEY= (empty) counts as unset
    export OC_CLUSTER_KEY=$("$OFFCORE" keygen)
    start_agent
    env $(job_env 21) timeout 60 "$TR" fixed 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "OC_CLUSTER_KEY set: offcored and job-key disagree on the key"; }
    kill "$AGENT"; wait "$AGENT"
    export OC_CLUSTER_KEY=
    start_agent
    env $(job_env 22) timeout 60 "$TR" fixed 1 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "OC_CLUSTER_KEY= (empty) overrode --cluster-key"; }
    "$OFFCORE" job-key --job 1 > /dev/null 2>&1 &&
        fail "job-key found a key with no source at all"
    kill "$AGENT"; wait "$AGENT"
    unset OC_CLUSTER_KEY
    pass ;;
listen)
    # [9] empty control addresses: a clear error, exit != 0
    for args in "--listen=" "--listen=,,," "--listen=unix:$T/x.sock,,tcp:127.0.0.1:0"; do
        timeout 10 "$OFFCORED" --cluster-key "$T/cluster.key" --metrics off \
            "$args" > "$T/out" 2>&1 && fail "offcored $args started"
        grep -qi "listen" "$T/out" || { cat "$T/out"; fail "offcored $args: no message"; }
    done
    OC_AGENT_LISTEN= timeout 10 "$OFFCORED" --cluster-key "$T/cluster.key" \
        --metrics off > "$T/out" 2>&1 && fail "OC_AGENT_LISTEN= started"
    grep -q "OC_AGENT_LISTEN" "$T/out" || { cat "$T/out"; fail "OC_AGENT_LISTEN=: no message naming it"; }
    pass ;;
metricsaddr)
    # [10] --metrics '': an error; a bare port: announced as bound
    timeout 10 "$OFFCORED" --listen "unix:$T/b.sock" --cluster-key "$T/cluster.key" \
        --metrics '' > "$T/out" 2>&1 && fail "--metrics '' started"
    grep -q "metrics" "$T/out" || { cat "$T/out"; fail "--metrics '': no message"; }
    METRICS=21471 start_agent
    grep -q "metrics http://0.0.0.0:21471/metrics" "$T/agent.log" ||
        fail "--metrics 21471 announced as: $(grep -o 'metrics http[^ ]*' "$T/agent.log")"
    curl -sf "http://127.0.0.1:21471/metrics" | grep offcore_agent_info >/dev/null || fail "nothing on the announced port"
    kill "$AGENT"; wait "$AGENT"
    pass ;;
port0)
    # [15] port 0: the chosen ports are said
    METRICS=127.0.0.1:0 start_agent --listen "tcp:127.0.0.1:0"
    grep -Eq "control tcp:127\.0\.0\.1:[1-9][0-9]*" "$T/agent.log" ||
        fail "the control port chosen for tcp:127.0.0.1:0 is not logged"
    grep -Eq "metrics http://127\.0\.0\.1:[1-9][0-9]*/metrics" "$T/agent.log" ||
        fail "the metrics port chosen for port 0 is not logged"
    kill "$AGENT"; wait "$AGENT"
    pass ;;
flags)
    # [11] unknown flags and misspelt variables
    timeout 10 "$OFFCORED" --bogus > "$T/out" 2>&1 && fail "--bogus accepted"
    grep -q "unknown option '--bogus'" "$T/out" || { cat "$T/out"; fail "--bogus: $(cat "$T/out")"; }
    OC_AGENT_THRAEDS=2 timeout 10 "$OFFCORED" --dump-config > /dev/null 2> "$T/out"
    grep -q "OC_AGENT_THRAEDS.*OC_AGENT_THREADS" "$T/out" ||
        { cat "$T/out"; fail "a misspelt OC_AGENT_THRAEDS went unnoticed"; }
    pass ;;
placement)
    start_agent
    # wrong key, auto: inline, and says why at the default log level
    env -u OC_LOG OC_PLACEMENT=auto OC_AGENT="unix:$T/agent.sock" OC_JOB=31 \
        OC_JOB_KEY=$(printf '%064d' 0) timeout 60 "$TR" fixed 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "auto with a wrong key did not run inline"; }
    grep -q "falling back to inline because" "$T/out" ||
        { cat "$T/out"; fail "auto fell back without saying why"; }
    # ... and OC_PLACEMENT=agent makes it an error with a name
    env -u OC_LOG OC_PLACEMENT=agent OC_AGENT="unix:$T/agent.sock" OC_JOB=32 \
        OC_JOB_KEY=$(printf '%064d' 0) timeout 60 "$TR" fixed 1 > "$T/out" 2>&1 &&
        fail "OC_PLACEMENT=agent ran without its agent"
    grep -q "OC_PLACEMENT=agent requires the agent.*OC_ERR_CTL_AUTH" "$T/out" ||
        { cat "$T/out"; fail "OC_PLACEMENT=agent: no named error"; }
    # a silent agent (stopped): auto falls back and says so
    kill -STOP "$AGENT"
    env -u OC_LOG OC_PLACEMENT=auto $(job_env 33 | sed 's/OC_PLACEMENT=agent//') \
        timeout 60 "$TR" fixed 1 > "$T/out" 2>&1 ||
        { kill -CONT "$AGENT"; cat "$T/out"; fail "auto with a silent agent did not run inline"; }
    kill -CONT "$AGENT"
    grep -q "falling back to inline because .*did not answer in time" "$T/out" ||
        { cat "$T/out"; fail "auto with a silent agent fell back without a word"; }
    # no agent at all: a job key says the launcher meant one (warn); with
    # no key it is the plain inline case (quiet at the default level)
    env -u OC_LOG OC_PLACEMENT=auto OC_AGENT="unix:$T/none.sock" OC_JOB=34 \
        OC_JOB_KEY=$(printf '%064d' 0) timeout 60 "$TR" fixed 1 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "auto with no agent did not run inline"; }
    grep -q "falling back to inline because no agent answers at unix:$T/none.sock" "$T/out" ||
        { cat "$T/out"; fail "auto with a job key and no agent fell back without a word"; }
    env -u OC_LOG -u OC_JOB_KEY OC_PLACEMENT=auto OC_AGENT="unix:$T/none.sock" \
        timeout 60 "$TR" fixed 1 > "$T/out" 2>&1 || { cat "$T/out"; fail "plain inline"; }
    grep -q "falling back" "$T/out" && { cat "$T/out"; fail "plain inline use warns"; }
    pass ;;
sigterm)
    METRICS=127.0.0.1:0 start_agent
    port=$(metrics_port)
    [ -n "$port" ] || fail "no metrics port in the log"
    # a receiver that stops polling: the agent has sends in flight to it
    # (up to OC_AGENT_MAX_INFLIGHT) when SIGTERM closes its endpoints
    env $(job_env 51) OC_TEST_STALL_SECONDS=8 OC_TEST_STALL_MARK="$T/resumed" \
        timeout 120 "$TR" stallrecv 3 > "$T/out" 2>&1 &
    job=$!
    wait_job 51
    # the agent holds bundles back toward the stalled receiver
    wait_for 30 metric_nonzero "127.0.0.1:$port" 'offcore_thread_(blocklist_depth|backlog_bundles|shm_ring_full_total)' ||
        fail "the agent never held back toward job 51's receiver"
    kill -TERM "$AGENT"
    wait "$AGENT"; rc=$?
    wait $job
    [ $rc -eq 0 ] || fail "agent exit $rc on SIGTERM"
    n=$(cat "$T/agent.log" "$T/out" | grep -c "Request canceled")
    echo "{\"measure\":\"sigterm\",\"request_canceled_lines\":$n}"
    [ "$n" -eq 0 ] || fail "$n lines of 'Request canceled' on a clean shutdown"
    grep -q "shutting down" "$T/out" || { cat "$T/out"; fail "ranks not told"; }
    pass ;;
sigstop)
    METRICS=127.0.0.1:0 start_agent
    port=$(metrics_port)
    [ -n "$port" ] || fail "no metrics port in the log"
    env $(job_env 61) OC_TEST_SECONDS=8 timeout 120 "$TR" endless 2 > "$T/out" 2>&1 &
    job=$!
    PIDS+=("$job")
    wait_job 61
    # the job's messages move through the agent before it stops
    wait_for 30 metric_nonzero "127.0.0.1:$port" 'offcore_job_messages_total\{job="61"' ||
        fail "no message of job 61 through the agent in 30 s"
    kill -STOP "$AGENT"; t0=$(date +%s.%N)
    for _ in $(seq 300); do   # 15 s at most; the warning is due after 5
        grep -q "no progress from the agent" "$T/out" && break
        sleep 0.05
    done
    t1=$(date +%s.%N)
    kill -CONT "$AGENT"
    grep -q "no progress from the agent" "$T/out" ||
        { cat "$T/out"; fail "ranks spun on a stopped agent without a word"; }
    echo "{\"measure\":\"sigstop\",\"warned_after_s\":$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')," \
         "\"warnings\":$(grep -c 'no progress from the agent' "$T/out")}"
    wait $job || { cat "$T/out"; fail "the job failed after the agent resumed"; }
    grep -q "moves again" "$T/out" || { cat "$T/out"; fail "no word when the agent moved again"; }
    pass ;;
handshake)
    start_agent
    python3 "$HERE/hostile.py" handshake-bye "$T/agent.sock" > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "no CHALLENGE to a HELLO"; }
    # a job after it: by its end the agent has long read the BYE
    env $(job_env 71) timeout 60 "$TR" fixed 2 > "$T/out" 2>&1 || fail "job after"
    grep -q "unexpected" "$T/agent.log" &&
        fail "a client leaving mid-handshake is logged as unexpected"
    pass ;;
unit)
    U=$HERE/../../contrib/offcored.service.in
    nofile=$(sed -n 's/^LimitNOFILE=\([0-9]*\).*/\1/p' "$U")
    [ -n "$nofile" ] || fail "the unit sets no LimitNOFILE"
    cap=$("$OFFCORED" --dump-config | sed -n 's/^OC_AGENT_MAX_CONNS=//p')
    [ "$nofile" -ge $((cap * 4 / 3)) ] ||
        fail "LimitNOFILE=$nofile leaves fewer than OC_AGENT_MAX_CONNS=$cap connections"
    for d in NoNewPrivileges=yes ProtectSystem=strict ReadWritePaths=/run/offcore \
             ProtectHome=yes PrivateTmp=yes ProtectKernelTunables=yes \
             ProtectKernelModules=yes ProtectControlGroups=yes RestrictSUIDSGID=yes \
             RestrictNamespaces=yes RestrictAddressFamilies= SystemCallArchitectures=native; do
        grep -q "^$d" "$U" || fail "the unit lacks $d"
    done
    if command -v systemd-analyze > /dev/null; then
        sed "s|^ExecStart=.*|ExecStart=$OFFCORED|; s|@[A-Z]*DIR@|/usr|g" "$U" > "$T/offcored.service"
        systemd-analyze verify --man=no "$T/offcored.service" > "$T/out" 2>&1 ||
            { cat "$T/out"; fail "systemd-analyze verify refuses the unit"; }
    fi
    pass ;;
*)
    echo "unknown case $CASE"; exit 2 ;;
esac
