#!/bin/bash
# coll-agent-net-test.sh CHECK OFFCORED OFFCORE CASE — the collectives in
# the agent placement with real processes started one by one (OC_RANK /
# OC_SIZE), each checking its own results (coll_agent_check.c).
#   faults   one agent (shared memory): 2 ranks whose buffers the agent
#            may not read or write (coll_agent_check badbuf, by memory),
#            then 3 ranks: kill rank 1 while ranks
#            0 and 2 wait in a 1 MiB allreduce, then kill the agent the
#            same way: each waiter must get OC_ERR_COLL_PEER_FAILED within
#            10 s (the bound is 5 s; loose for a loaded machine); prints
#            the measured times
#   twonode  two agents in network namespaces (UCX over TCP on a veth
#            pair), ranks 0-1 on node A, 2-3 on node B: every collective,
#            default and reproducible; then agent B is killed while the
#            ranks wait: node A's ranks get the error in time
#   planted  one agent: a fault planted in one rank's collective (its
#            descriptor rejected, its contribution short): every rank
#            gets an error for it, and the collectives around it verify
#   twonode-planted  the same across two agents (namespaces as twonode),
#            planted on a rank of node A, then of node B, with 1001
#            elements per rank and with 128 Ki (1 MiB: rendezvous), then
#            1001 again with every message over 256 bytes by rendezvous
#            (UCX_RNDV_THRESH, agents restarted): every rank on both nodes
#            gets the same named error for it, none waits
# COLL_AGENT_THREADS (1): the agents' routing threads (offcored --threads);
# with more, faults' badbuf allreduce (1 MiB) must be split across them.
# Exit 0 PASS, 1 FAIL, 77 SKIP.  Namespaces "ca*", ports 31001-31002: below
# the kernel's ephemeral range (32768-60999), which a connection UCX made
# (or its TIME_WAIT) could hold when the agents start again.
set -u -o pipefail
. "$(dirname "$0")/../integration/lib.sh"   # wait_for
BIN=$1 OFFCORED=$2 OFFCORE=$3 CASE=$4
T=$(mktemp -d /tmp/oc-collnet-XXXXXX)
ID=$$
PIDS=()
NS=()
cleanup() {
    exec 2>/dev/null
    for p in "${PIDS[@]}"; do kill -9 "$p"; done
    for n in "${NS[@]}"; do ip netns pids "$n" | xargs -r kill -9; done
    wait
    ip link del "caA$ID"
    for n in "${NS[@]}"; do ip netns del "$n"; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM   # the EXIT trap cleans up, once
trap 'exit 130' INT
fail() { echo "FAIL $CASE: $*"; for f in "$T"/*.log; do sed "s|^|  $(basename "$f"): |" "$f" | tail -8; done; exit 1; }
skip() { echo "SKIP $CASE: $*"; exit 77; }
"$OFFCORE" keygen > "$T/ck" && chmod 600 "$T/ck"
export OC_JOB=31 OC_PLACEMENT=agent
export OC_JOB_KEY=$("$OFFCORE" job-key --job 31 --cluster-key "$T/ck")
in_ns() { local n=$1; shift; if [ -n "$n" ]; then ip netns exec "$n" "$@"; else "$@"; fi; }
agent() { # agent NS NAME ARGS...
    local n=$1 name=$2; shift 2
    set -- env OC_LOG=agent:info,router:info "$OFFCORED" --cluster-key "$T/ck" \
        --metrics off --threads "${COLL_AGENT_THREADS:-1}" "$@"
    [ -n "$n" ] && set -- ip netns exec "$n" "$@"
    # a simple command, not a function: its pid is the agent's (each execs
    # the next), so that cleanup's kill reaches it outside a namespace too
    "$@" > "$T/$name.log" 2>&1 &
    PIDS+=("$!")
    for _ in $(seq 200); do grep -qw ready "$T/$name.log" && return 0; sleep 0.05; done
    fail "agent $name not ready"
}
rank() { # rank NS SOCK R SIZE ARGS...: background, output in rR.log
    local n=$1 sock=$2 r=$3 size=$4 lsan=${LSAN_OPTIONS:-} asan=${ASAN_OPTIONS:-}; shift 4
    # a rank whose collective failed exits with the receives it had
    # posted for the result still allocated (src/coll/coll.c's finalize
    # leaves them rather than risk a late callback): no leak check there
    [ "$1" = wait ] && lsan=detect_leaks=0 asan=$asan:detect_leaks=0
    in_ns "$n" env LSAN_OPTIONS="$lsan" ASAN_OPTIONS="$asan" OC_AGENT="unix:$sock" OC_RANK=$r OC_SIZE=$size \
        timeout "${RANK_TIMEOUT:-120}" "$BIN" "$@" > "$T/r$r.log" 2>&1 &
    RP[$r]=$!
}
ready() { # ready R...: each has said ready
    for _ in $(seq 300); do
        local all=1
        for r in "$@"; do grep -qw ready "$T/r$r.log" 2>/dev/null || all=0; done
        [ $all = 1 ] && return 0
        sleep 0.05
    done
    fail "ranks $* not ready"
}
now_ms() { date +%s%3N; }
contribs() { # contribs ADDR [NS]: allreduce contributions the agent with
    # /metrics at ADDR has taken from its ranks so far, by any path
    ${2:+ip netns exec "$2"} curl -sf -m 2 --noproxy '*' "http://$1/metrics" |
        awk '/^offcore_thread_coll_cma_total\{/ { s += $2 } END { print s + 0 }'
}
took() { [ "$(contribs "$1" "${3:-}")" -ge "$2" ]; }   # took ADDR N [NS]
waiters() { # waiters KILL_MS R...: each got the error within 10 s
    local k=$1; shift
    for r in "$@"; do
        wait "${RP[$r]}" || fail "rank $r: $(cat "$T/r$r.log")"
        at=$(sed -n "s/^rank $r: OC_ERR_COLL_PEER_FAILED.* at \([0-9]*\)$/\1/p" "$T/r$r.log")
        [ -n "$at" ] || fail "rank $r did not name OC_ERR_COLL_PEER_FAILED"
        d=$((at - k))
        echo "  rank $r: OC_ERR_COLL_PEER_FAILED $d ms after the kill"
        [ $d -lt 10000 ] || fail "rank $r: $d ms"
    done
}
twonode_up() { # two namespaces joined by a veth pair, an agent in each
    [ "$(id -u)" = 0 ] || skip "needs root for ip netns"
    ip netns add "caA$ID" 2>/dev/null || skip "cannot create network namespaces"
    NS+=("caA$ID"); ip netns add "caB$ID"; NS+=("caB$ID")
    ip link add "caA$ID" type veth peer name "caB$ID" || fail veth
    ip link set "caA$ID" netns "caA$ID"; ip link set "caB$ID" netns "caB$ID"
    for x in "A 1" "B 2"; do set -- $x
        ip -n "ca$1$ID" link set lo up
        ip -n "ca$1$ID" addr add "198.18.41.$2/24" dev "ca$1$ID"
        ip -n "ca$1$ID" link set "ca$1$ID" up
    done
    export UCX_TLS=tcp
    agents_up A 31001
}
agents_up() { # agents_up NAME PORT: agent NAME on node A and NAME with B
    # for A on node B (logs NAME.log, sockets name.sock), peers on PORT
    local a=$1 b=${1/A/B} p=$2
    UCX_NET_DEVICES="caA$ID" agent "caA$ID" "$a" --listen "unix:$T/${a,,}.sock,tcp:198.18.41.1:$p" \
        --peers "tcp:198.18.41.2:$p" --metrics "198.18.41.1:$((p + 1000))"
    UCX_NET_DEVICES="caB$ID" agent "caB$ID" "$b" --listen "unix:$T/${b,,}.sock,tcp:198.18.41.2:$p" \
        --peers "tcp:198.18.41.1:$p" --metrics "198.18.41.2:$((p + 1000))"
    AM=198.18.41.1:$((p + 1000)) BM=198.18.41.2:$((p + 1000))
    ASOCK=$T/${a,,}.sock BSOCK=$T/${b,,}.sock
    AP=($(pgrep -f -- "--listen unix:$ASOCK") $(pgrep -f -- "--listen unix:$BSOCK"))
}
nrank() { # nrank R ARGS...: rank R of 4, 0-1 on node A, 2-3 on node B
    local r=$1; shift
    if [ "$r" -lt 2 ]; then UCX_NET_DEVICES="caA$ID" rank "caA$ID" "$ASOCK" "$r" 4 "$@"
    else UCX_NET_DEVICES="caB$ID" rank "caB$ID" "$BSOCK" "$r" 4 "$@"; fi
}
planted_across() { # planted_across N: twonode-planted's faults, N elements
    local n=$1 f kind at r what got
    for f in desc short; do
        for kind in allreduce alltoall bcast; do
            for at in 1 2; do # a rank of node A, then one of node B
                # bcast: only the root (rank 0, node A) sends a contribution
                [ $f/$kind = short/bcast ] && { [ $at = 2 ] && continue; at=0; }
                job=$((job + 1)) what="$f/$kind/$n${UCX_RNDV_THRESH:+/rndv} on rank $at"
                export OC_JOB=$job OC_JOB_KEY=$("$OFFCORE" job-key --job $job --cluster-key "$T/ck")
                for r in 0 1 2 3; do
                    if [ $r = $at ]; then
                        OC_COLL_FAULT=$f OC_COLL_FAULT_AT=2 RANK_TIMEOUT=30 nrank $r planted $kind $n
                    else
                        RANK_TIMEOUT=30 nrank $r planted $kind $n
                    fi
                done
                for r in 0 1 2 3; do
                    wait "${RP[$r]}" || fail "$what: rank $r (exit $?)"
                done
                got=$(sed -n "s/^rank \([0-3]\): $kind 2: \(OC_[A-Z_]*\).*/\1 \2/p" "$T"/r[0-3].log | sort)
                echo "$what:" $got
                # one status for all, and the one the agent of the fault named
                [ "$(echo "$got" | wc -l)" = 4 ] &&
                    [ "$(echo "$got" | cut -d' ' -f2 | sort -u)" = OC_ERR_COLL_MISMATCH ] ||
                    fail "$what: not OC_ERR_COLL_MISMATCH on every rank"
            done
        done
    done
}
declare -a RP
case "$CASE" in
faults)
    export UCX_TLS=sm,self
    agent "" a --listen "unix:$T/a.sock" --metrics 127.0.0.1:0
    apid=$(pgrep -f -- "--listen unix:$T/a.sock")
    am=$(sed -n 's|.*metrics http://\(127.0.0.1:[0-9]*\)/metrics.*|\1|p' "$T/a.log")
    [ -n "$am" ] || fail "no metrics address in the agent's log"
    # by memory: buffers the agent may not read or write fail with a name.
    # Only where the kernel lets the agent read the ranks (a seccomp
    # profile or Yama may not): else their allreduces go by UCX, which
    # would fault on the unreadable buffer in the rank itself.  The probe
    # is 64 KiB: smaller ones go inline (OC_COLL_AGENT_INLINE), not by memory.
    export OC_JOB=34 OC_JOB_KEY=$("$OFFCORE" job-key --job 34 --cluster-key "$T/ck")
    for r in 0 1; do rank "" "$T/a.sock" $r 2 time 65536 1; done
    for r in 0 1; do wait "${RP[$r]}" || fail "probe, rank $r"; done
    if grep -q "rank 0: collective data by memory" "$T/a.log"; then
        export OC_JOB=33 OC_JOB_KEY=$("$OFFCORE" job-key --job 33 --cluster-key "$T/ck")
        for r in 0 1; do rank "" "$T/a.sock" $r 2 badbuf; done
        for r in 0 1; do wait "${RP[$r]}" || fail "badbuf, rank $r"; done
        # 1 MiB: through several routing threads, split across them
        # (rcsplit.c), and the faults were found by the slices
        if [ "${COLL_AGENT_THREADS:-1}" -gt 1 ]; then
            grep -q "split across ${COLL_AGENT_THREADS} routing threads" "$T/a.log" ||
                fail "badbuf's allreduce was not split across the routing threads"
        fi
        echo "buffers out of the agent's reach: OC_ERR_COLL_MEMORY on their rank, nothing else written"
    else
        grep -q "rank 0: collective data by UCX, not by memory: the kernel refuses" "$T/a.log" ||
            fail "the agent neither moved rank 0's data by memory nor said why not"
        echo "SKIP badbuf: the kernel refuses process_vm_readv here ($(grep -m1 'not by memory' "$T/a.log"))"
    fi
    export OC_JOB=31 OC_JOB_KEY=$("$OFFCORE" job-key --job 31 --cluster-key "$T/ck")
    c=$(contribs "$am")
    for r in 0 1 2; do rank "" "$T/a.sock" $r 3 wait 1; done
    ready 0 1 2
    wait_for 30 took "$am" $((c + 2)) || fail "job 31: ranks 0 and 2 not in their allreduce"
    vp=$(sed -n 's/^rank 1: ready pid //p' "$T/r1.log")
    k=$(now_ms); kill -9 "$vp"
    echo "kill rank 1 mid-allreduce:"; waiters "$k" 0 2
    export OC_JOB=32 OC_JOB_KEY=$("$OFFCORE" job-key --job 32 --cluster-key "$T/ck")
    c=$(contribs "$am")
    for r in 0 1 2; do rank "" "$T/a.sock" $r 3 wait 1; done
    ready 0 1 2
    wait_for 30 took "$am" $((c + 2)) || fail "job 32: ranks 0 and 2 not in their allreduce"
    k=$(now_ms); kill -9 "$apid"
    echo "kill the agent mid-allreduce:"; waiters "$k" 0 2
    kill -9 "$(sed -n 's/^rank 1: ready pid //p' "$T/r1.log")"
    echo "PASS $CASE" ;;
planted)
    # a fault planted in rank 1's second collective (OC_COLL_FAULT): its
    # descriptor rejected by the agent, or its contribution one element
    # short; every rank must get an error for it, none OC_OK, and the
    # collectives before and after it must verify
    export UCX_TLS=sm,self
    agent "" a --listen "unix:$T/a.sock"
    job=40
    for f in desc short; do
        for kind in allreduce alltoall bcast; do
            [ "$f/$kind" = short/bcast ] && continue # rank 1 sends none
            job=$((job + 1))
            export OC_JOB=$job OC_JOB_KEY=$("$OFFCORE" job-key --job $job --cluster-key "$T/ck")
            for r in 0 1 2; do
                if [ $r = 1 ]; then
                    OC_COLL_FAULT=$f OC_COLL_FAULT_AT=2 rank "" "$T/a.sock" $r 3 planted $kind
                else
                    rank "" "$T/a.sock" $r 3 planted $kind
                fi
            done
            for r in 0 1 2; do
                wait "${RP[$r]}" || { cat "$T/r$r.log"; fail "$f/$kind: rank $r"; }
            done
            echo "$f/$kind: $(grep -h "$kind 2:" "$T"/r[012].log | sort | tr '\n' ' ')"
        done
    done
    echo "PASS $CASE" ;;
twonode)
    twonode_up
    job=40
    for repro in n y; do
        job=$((job + 1)); export OC_JOB=$job OC_COLL_REPRODUCIBLE=$repro
        export OC_JOB_KEY=$("$OFFCORE" job-key --job $job --cluster-key "$T/ck")
        for r in 0 1; do UCX_NET_DEVICES="caA$ID" rank "caA$ID" "$T/a.sock" $r 4 check; done
        for r in 2 3; do UCX_NET_DEVICES="caB$ID" rank "caB$ID" "$T/b.sock" $r 4 check; done
        for r in 0 1 2 3; do wait "${RP[$r]}" || fail "check (reproducible $repro), rank $r"; done
        cat "$T"/r?.log
    done
    job=$((job + 1)); export OC_JOB=$job
    export OC_JOB_KEY=$("$OFFCORE" job-key --job $job --cluster-key "$T/ck")
    ca=$(contribs "$AM" "caA$ID") cb=$(contribs "$BM" "caB$ID")
    for r in 0 1; do UCX_NET_DEVICES="caA$ID" rank "caA$ID" "$T/a.sock" $r 4 wait 3; done
    for r in 2 3; do UCX_NET_DEVICES="caB$ID" rank "caB$ID" "$T/b.sock" $r 4 wait 3; done
    ready 0 1 2 3
    wait_for 30 took "$AM" $((ca + 2)) "caA$ID" && wait_for 30 took "$BM" $((cb + 1)) "caB$ID" ||
        fail "ranks 0-2 not in their allreduce"
    bpid=$(pgrep -f -- "--listen unix:$T/b.sock")
    k=$(now_ms); kill -9 "$bpid"
    echo "kill agent B mid-allreduce:"; waiters "$k" 0 1 2
    kill -9 "$(sed -n 's/^rank 3: ready pid //p' "$T/r3.log")"
    echo "PASS $CASE" ;;
twonode-planted)
    # as planted, with ranks on two agents: the fault is local to one node
    # (its agent fails the collective for its ranks), and the other node's
    # agent must learn it from the inter-agent messages: every rank of
    # both nodes gets the same named error, none waits (a rank still
    # waiting after 30 s fails the case), and collectives 1 and 3 verify
    twonode_up
    job=50
    planted_across 1001
    planted_across 131072
    # again with every message over 256 bytes by rendezvous (a failed
    # collective's drain among them): agents that start with the threshold
    kill "${AP[@]}"
    gone() { ! kill -0 "$1" 2>/dev/null; }
    for p in "${AP[@]}"; do wait_for 20 gone "$p" || fail "agent $p still runs 20 s after SIGTERM"; done
    export UCX_RNDV_THRESH=256
    agents_up A2 31002
    planted_across 1001
    echo "PASS $CASE" ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
