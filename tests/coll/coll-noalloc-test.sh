#!/bin/bash
# coll-noalloc-test.sh NOALLOC OFFCORED OFFCORE — small collectives through
# the agent allocate nothing per collective once warm: one offcored
# (shared memory, COLL_AGENT_THREADS routing threads, 1 by default), two
# ranks of coll_noalloc.c started one by one (OC_RANK / OC_SIZE).  After
# WARM rounds (an 8 B and a 1 KiB allreduce and a 1 KiB all-to-all each,
# inline in the descriptor) the script reads the agent's /metrics, lets
# the ranks run STEADY more rounds and reads it again:
#   - each rank's small-send pool allocated no buffer (the rank checks);
#   - the agent allocated no collective state (offcore_thread_coll_states_total
#     {from="new"} unchanged) and took every one from those it kept
#     ({from="kept"} up by at least 3 x STEADY);
#   - nor any data buffer (offcore_thread_coll_buffers_total{from="new"}
#     unchanged), each rank's contribution at least in one kept with the
#     state ({from="kept"} up by at least 3 x 2 ranks x STEADY);
#   - the contributions came inline (offcore_thread_coll_cma_total
#     {path="inline"} up by at least 2 ranks x 3 x STEADY): the path meant;
#   - every descriptor came through the ranks' descriptor rings
#     (offcore_thread_coll_descs_total{path="ring"} up by at least 2 ranks
#     x 3 x STEADY, {path="ucx"} unchanged) and every completion went back
#     through their completion rings (offcore_thread_coll_dones_total
#     {path="ring"} up as much, {path="ucx"} unchanged).
# COLL_AGENT_CHANNEL=ucx (OC_AGENT_CHANNEL for the ranks): no segment, both
# by UCX instead ({path="ucx"} up, {path="ring"} unchanged), and each
# descriptor through the rank's small-send pool (the rank checks).
# Before the steady rounds the script waits until the routing threads
# sleep (idle): the first descriptor then wakes the collectives' thread
# (on shared memory, an empty descriptor by UCX: {path="nudge"}; printed,
# not required: the thread may have woken on its own poll timeout).
# Exit 0 PASS, 1 FAIL, 77 SKIP.
set -u -o pipefail
. "$(dirname "$0")/../integration/lib.sh"   # wait_for
BIN=$1 OFFCORED=$2 OFFCORE=$3
WARM=${NOALLOC_WARM:-20} STEADY=${NOALLOC_STEADY:-200}
THREADS=${COLL_AGENT_THREADS:-1} CHANNEL=${COLL_AGENT_CHANNEL:-shm}
T=$(mktemp -d /tmp/oc-noalloc-XXXXXX)
PIDS=()
cleanup() {
    exec 2>/dev/null
    for p in "${PIDS[@]}"; do kill -9 "$p"; done
    wait
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM   # the EXIT trap cleans up, once
trap 'exit 130' INT
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do sed "s|^|  $(basename "$f"): |" "$f" | tail -8; done; exit 1; }
export UCX_TLS=sm,self OC_PLACEMENT=agent OC_JOB=41 OC_AGENT_CHANNEL=$CHANNEL
"$OFFCORE" keygen > "$T/ck" && chmod 600 "$T/ck" || fail keygen
OC_JOB_KEY=$("$OFFCORE" job-key --job 41 --cluster-key "$T/ck") || fail job-key
export OC_JOB_KEY
OC_LOG=agent:info,router:info "$OFFCORED" --listen "unix:$T/a.sock" --cluster-key "$T/ck" \
    --metrics 127.0.0.1:0 --threads "$THREADS" > "$T/agent.log" 2>&1 &
PIDS+=("$!")
wait_for 20 grep -qw ready "$T/agent.log" || fail "agent not ready"
grep -q "$THREADS routing thread" "$T/agent.log" || fail "the agent does not run $THREADS routing threads"
AM=$(sed -n 's|.*metrics http://\(127.0.0.1:[0-9]*\)/metrics.*|\1|p' "$T/agent.log")
[ -n "$AM" ] || fail "no metrics address in the agent's log"
metric() { # metric FAMILY LABEL=VALUE: summed over the routing threads
    curl -sf -m 2 --noproxy '*' "http://$AM/metrics" |
        awk -v f="$1" -v l="$2" 'index($0, f "{") == 1 && index($0, l) { s += $2; n++ }
            END { if (!n) exit 1; print s }'
}
snapshot() { # snapshot: NEW KEPT BNEW BKEPT INLINE now
    NEW=$(metric offcore_thread_coll_states_total 'from="new"') || fail "no coll_states{from=new} on /metrics"
    KEPT=$(metric offcore_thread_coll_states_total 'from="kept"') || fail "no coll_states{from=kept}"
    BNEW=$(metric offcore_thread_coll_buffers_total 'from="new"') || fail "no coll_buffers{from=new} on /metrics"
    BKEPT=$(metric offcore_thread_coll_buffers_total 'from="kept"') || fail "no coll_buffers{from=kept}"
    INL=$(metric offcore_thread_coll_cma_total 'path="inline"') || fail "no coll_cma{path=inline}"
    DRING=$(metric offcore_thread_coll_dones_total 'path="ring"') || fail "no coll_dones{path=ring}"
    DUCX=$(metric offcore_thread_coll_dones_total 'path="ucx"') || fail "no coll_dones{path=ucx}"
    QRING=$(metric offcore_thread_coll_descs_total 'path="ring"') || fail "no coll_descs{path=ring}"
    QUCX=$(metric offcore_thread_coll_descs_total 'path="ucx"') || fail "no coll_descs{path=ucx}"
    QNUDGE=$(metric offcore_thread_coll_descs_total 'path="nudge"') || fail "no coll_descs{path=nudge}"
    SLEEPS=$(metric offcore_thread_sleeps_total 'thread="0"') || fail "no sleeps{thread=0}"
}
RP=()
for r in 0 1; do
    # no timeout(1) between: the pid is the rank's, for cleanup's kill (a
    # rank stuck in a collective ends with meson's timeout, through it)
    OC_AGENT="unix:$T/a.sock" OC_RANK=$r OC_SIZE=2 \
        "$BIN" "$WARM" "$STEADY" "$T/go" > "$T/r$r.log" 2>&1 &
    RP[$r]=$!; PIDS+=("$!")
done
warm() { grep -q "warm small_allocs" "$T/r0.log" && grep -q "warm small_allocs" "$T/r1.log"; }
wait_for 60 warm || fail "the ranks did not finish their $WARM warm-up rounds"
snapshot; n0=$NEW k0=$KEPT bn0=$BNEW bk0=$BKEPT i0=$INL dr0=$DRING du0=$DUCX
qr0=$QRING qu0=$QUCX qn0=$QNUDGE s0=$SLEEPS
asleep() { snapshot; [ "$SLEEPS" -gt "$s0" ]; }
wait_for 10 asleep || echo "note: the collectives' thread did not sleep before the steady rounds"
touch "$T/go"
for r in 0 1; do wait "${RP[$r]}" || fail "rank $r"; done
snapshot
echo "$THREADS routing thread(s), channel $CHANNEL, $STEADY rounds after $WARM: agent states new $n0 -> $NEW, kept $k0 -> $KEPT; data buffers new $bn0 -> $BNEW, kept $bk0 -> $BKEPT; inline contributions $i0 -> $INL; descriptors by ring $qr0 -> $QRING, by UCX $qu0 -> $QUCX, nudges $qn0 -> $QNUDGE; completions by ring $dr0 -> $DRING, by UCX $du0 -> $DUCX"
cat "$T/r0.log" "$T/r1.log"
[ "$NEW" = "$n0" ] || fail "the agent allocated $((NEW - n0)) collective states in steady state"
[ $((KEPT - k0)) -ge $((3 * STEADY)) ] || fail "only $((KEPT - k0)) collectives reused a kept state, not $((3 * STEADY))"
[ "$BNEW" = "$bn0" ] || fail "the agent allocated $((BNEW - bn0)) collective data buffers in steady state"
[ $((BKEPT - bk0)) -ge $((6 * STEADY)) ] || fail "only $((BKEPT - bk0)) data buffers reused, not $((6 * STEADY))"
[ $((INL - i0)) -ge $((6 * STEADY)) ] || fail "only $((INL - i0)) contributions inline, not $((6 * STEADY))"
if [ "$CHANNEL" = ucx ]; then
    [ $((QUCX - qu0)) -ge $((6 * STEADY)) ] || fail "only $((QUCX - qu0)) descriptors by UCX, not $((6 * STEADY))"
    [ $((DUCX - du0)) -ge $((6 * STEADY)) ] || fail "only $((DUCX - du0)) completions by UCX, not $((6 * STEADY))"
    [ "$QRING" = "$qr0" ] && [ "$DRING" = "$dr0" ] || fail "rings used without a segment"
else
    [ $((QRING - qr0)) -ge $((6 * STEADY)) ] || fail "only $((QRING - qr0)) descriptors through the ranks' rings, not $((6 * STEADY))"
    [ "$QUCX" = "$qu0" ] || fail "$((QUCX - qu0)) descriptors went by UCX in steady state"
    [ $((DRING - dr0)) -ge $((6 * STEADY)) ] || fail "only $((DRING - dr0)) completions through the ranks' rings, not $((6 * STEADY))"
    [ "$DUCX" = "$du0" ] || fail "$((DUCX - du0)) completions went by UCX in steady state"
fi
echo "PASS: no allocation per collective in steady state ($THREADS routing thread(s))"
