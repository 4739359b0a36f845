#!/bin/bash
# run-coll-twonode.sh CHECK OFFCORE OFFCORED_A OFFCORED_B [BYTES ITERS ROUNDS]
# — the agent placement's collectives across two agents, A/B: two builds
# of offcored (a baseline and a change), each in turn serving the same
# ranks (tests/coll/coll_agent_check time) in two network namespaces
# joined by a veth pair (UCX over TCP, as coll-agent-net-test.sh twonode),
# PER_NODE ranks on each (2: ranks 0-1 on node A, 2-3 on B; on a machine
# of few cores, 1 keeps the spinning ranks from starving the agents).
# Per round, both builds and every
# kind (allreduce, bcast, alltoall, barrier: BYTES per rank, ITERS calls,
# 64 B and 1000 by default), in the order A B, then B A; a sample is the
# slowest rank's mean time per call; the figure is the median of ROUNDS (5)
# samples, with B/A.  On a machine with fewer cores than ranks and agents
# the spinning ranks and the sleeping agents share them: times are then
# scheduling as much as messaging.
# Needs root (ip netns).  Namespaces "cb*", port 41101.
set -eu -o pipefail
CHECK=$1 OFFCORE=$2 DA=$3 DB=$4 BYTES=${5:-64} ITERS=${6:-1000} ROUNDS=${7:-5}
P=${PER_NODE:-2}
T=$(mktemp -d /tmp/oc-twonode-bench-XXXXXX)
ID=$$
cleanup() {
    set +e # every step, whatever the one before it returned
    exec 2>/dev/null
    for n in "cbA$ID" "cbB$ID"; do ip netns pids "$n" | xargs -r kill -9; done
    wait
    ip netns del "cbA$ID"; ip netns del "cbB$ID" # and the veth pair in them
    rm -rf "$T"
}
trap cleanup EXIT
ip netns add "cbA$ID"; ip netns add "cbB$ID"
ip link add "cbA$ID" type veth peer name "cbB$ID"
ip link set "cbA$ID" netns "cbA$ID"; ip link set "cbB$ID" netns "cbB$ID"
for x in "A 1" "B 2"; do set -- $x
    ip -n "cb$1$ID" link set lo up
    ip -n "cb$1$ID" addr add "198.18.42.$2/24" dev "cb$1$ID"
    ip -n "cb$1$ID" link set "cb$1$ID" up
done
"$OFFCORE" keygen > "$T/ck" && chmod 600 "$T/ck"
export UCX_TLS=tcp OC_PLACEMENT=agent
job=60
agents() { # agents OFFCORED: one in each namespace, until stop
    for x in "A 1 2" "B 2 1"; do set -- $x
        ip netns exec "cb$1$ID" env UCX_NET_DEVICES="cb$1$ID" "$AGENT" \
            --cluster-key "$T/ck" --metrics off \
            --listen "unix:$T/$1.sock,tcp:198.18.42.$2:41101" \
            --peers "tcp:198.18.42.$3:41101" > "$T/$1.log" 2>&1 &
    done
    for n in A B; do
        for _ in $(seq 200); do grep -qw ready "$T/$n.log" && break; sleep 0.05; done
        grep -qw ready "$T/$n.log" || { cat "$T/$n.log"; exit 1; }
    done
}
stop() {
    local p
    for n in A B; do
        p=$(pgrep -f -- "--listen unix:$T/$n.sock") || continue
        kill "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
    done
}
sample() { # sample KIND: the slowest rank's microseconds per call
    local pids=()
    export OC_JOB=$job OC_JOB_KEY=$("$OFFCORE" job-key --job $job --cluster-key "$T/ck")
    for r in $(seq 0 $((2 * P - 1))); do
        n=$([ $r -lt $P ] && echo A || echo B)
        ip netns exec "cb$n$ID" env UCX_NET_DEVICES="cb$n$ID" OC_AGENT="unix:$T/$n.sock" \
            OC_RANK=$r OC_SIZE=$((2 * P)) timeout 120 "$CHECK" time "$BYTES" "$ITERS" "$1" \
            > "$T/r$r.out" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    sed -n 's/^rank [0-9]*: OC_OK[^,]*, \([0-9.]*\) us per .*/\1/p' "$T"/r?.out |
        sort -g | tail -1 | grep . || { cat "$T"/r?.out >&2; exit 1; }
}
KINDS="allreduce bcast alltoall barrier"
for round in $(seq "$ROUNDS"); do
    # A B, then B A: a drift of the machine's load weighs on both alike
    for b in $([ $((round % 2)) = 1 ] && echo A B || echo B A); do
        AGENT=$([ $b = A ] && echo "$DA" || echo "$DB")
        agents
        for k in $KINDS; do
            job=$((job + 1)) # a job per sample: it ends with its ranks
            v=$(sample "$k"); echo "$v" >> "$T/$b.$k"
        done
        stop
    done
done
median() { sort -g "$1" | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
echo "two agents over TCP (veth), $((2 * P)) ranks, $BYTES B per rank, $ITERS calls, median of $ROUNDS"
printf '%-10s %12s %12s %7s\n' kind "A us" "B us" "B/A"
for k in $KINDS; do
    a=$(median "$T/A.$k") b=$(median "$T/B.$k")
    awk -v k="$k" -v a="$a" -v b="$b" 'BEGIN { printf "%-10s %12s %12s %7.3f\n", k, a, b, b / a }'
done
