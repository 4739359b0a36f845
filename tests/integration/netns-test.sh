#!/bin/bash
# netns-test.sh BUILD_DIR CASE — offcored across network namespaces joined
# by veth pairs, UCX over TCP.  Exit 0 PASS, 1 FAIL, 77 SKIP (no root or
# no namespaces here).  Namespaces, links and bridges are named
# ocn-<role><pid>, addresses are in 198.18.0.0/16 (RFC 2544's benchmarking
# range); all of them are removed on exit, on SIGTERM and SIGINT (meson's
# timeout) too, with every process started.  A run killed before it could
# clean up (SIGKILL) leaves its directory /tmp/oc-netns-*/ naming its pid,
# namespaces and links: the next run removes what such a dead run left.
# A namespace name or a root-namespace subnet that is already taken makes
# the run fail at once, saying which: never a stale agent answering.
#
#   twonode  two "nodes" (namespaces), an agent and two ranks in each: one
#            job of 4 ranks across both, every message checked (streams of
#            fixed-size messages, mixed sizes, request/reply); each agent
#            names the transport to the other (tcp) in its log, its
#            metrics, `offcore stat` and its --json
#   grid     three nodes on a bridge, agents with --route grid (1 -> 2 and
#            2 -> 1 take two hops through node 0): a 4-rank job, exact
#   killagent  SIGKILL one node's agent: a job spanning both nodes fails
#            on both within 5 s; a job on the other node finishes exactly
#   mpiapps  histogram and index-gather themselves, launched by mpirun over
#            two nodes (an orted per namespace through the rsh launcher),
#            two ranks and one agent per node: exact across nodes
#   stallpeer  bounded memory between agents (the per-peer credit window):
#            a 4-rank job over two nodes streams while first node B's ranks,
#            then node B's agent, are stopped (SIGSTOP) for 3 s each; the
#            agents' RSS may not grow by more than 32 MiB (without a window
#            the receiving agent queued every bundle its peer sent), the
#            senders are pushed back, and after SIGCONT every message
#            arrives exactly once
#   dpu      the DPU profile: the agent alone in a "dpu" namespace,
#            reachable from the ranks (in the host namespace) only over a
#            veth link, as a BlueField's Arm complex is a separate host
set -u -o pipefail
. "$(dirname "$0")/lib.sh"   # wait_for, metric_nonzero
B=${1:?usage: netns-test.sh BUILD_DIR CASE}
CASE=${2:?case}
B=$(cd "$B" && pwd)
OFFCORED=$B/src/agent/offcored
OFFCORE=$B/src/tools/offcore
TR=$B/tests/integration/test_runtime
ID=$$
NS=()
LINKS=()
PIDS=()

# teardown DIR NS... -- LINK...: what a run made, processes first
teardown() {
    local d=$1 n l
    shift
    # anything still naming the run's directory (agents carry its key path)
    pkill -9 -f -- "$d/" 2>/dev/null
    for n in "$@"; do   # and whatever still runs in its namespaces
        [ "$n" = -- ] && break
        ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
    done
    while [ $# -gt 0 ] && [ "$1" != -- ]; do ip netns del "$1" 2>/dev/null; shift; done
    [ $# -gt 0 ] && shift
    for l in "$@"; do ip link del "$l" 2>/dev/null; done
}
cleanup() {
    exec 2>/dev/null   # no "Killed" notices for what we kill here
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    teardown "$T" "${NS[@]}" -- "${LINKS[@]}"
    wait 2>/dev/null
    rm -rf "$T"
}
# Leftovers of runs killed before their cleanup: their owner is dead.
for d in /tmp/oc-netns-*/; do
    [ -f "$d/owner" ] || continue
    read -r owner < "$d/owner"
    if [ -n "$owner" ] && [ -r "/proc/$owner/cmdline" ] &&
       tr '\0' ' ' < "/proc/$owner/cmdline" | grep netns-test >/dev/null; then
        continue   # still running
    fi
    echo "removing what run $owner left (killed before its cleanup): $(cat "$d/made" 2>/dev/null | tr '\n' ' ')"
    teardown "${d%/}" $(sed -n 's/^ns //p' "$d/made" 2>/dev/null) -- \
        $(sed -n 's/^link //p' "$d/made" 2>/dev/null)
    rm -rf "$d"
done
T=$(mktemp -d /tmp/oc-netns-XXXXXX)
echo $$ > "$T/owner"
trap cleanup EXIT
trap 'exit 143' TERM   # the EXIT trap cleans up
trap 'exit 130' INT
skip() { echo "SKIP $CASE: $*"; exit 77; }
fail() {
    echo "FAIL $CASE: $*"
    # the ranks' logs first: they say why a rank ended, and a report that
    # keeps only the start of this output keeps them
    for f in "$T"/ranks*.log; do
        [ -f "$f" ] || continue
        # a sanitizer's report: its first lines (the fault and its stack)
        grep -m1 -A24 -E "ERROR: [A-Za-z]+Sanitizer|: runtime error: " "$f" |
            sed "s|^|  $(basename "$f") (sanitizer): |"
        sed "s|^|  $(basename "$f"): |" "$f" | tail -25
    done
    for f in "$T"/*.log; do
        case "$(basename "$f")" in ranks*) continue ;; esac
        [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -15
    done
    exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root for ip netns"
command -v ip >/dev/null || skip "no ip (iproute2)"
ip netns add "ocn-p$ID" 2>/dev/null || {
    ip netns list | grep "^ocn-p$ID\b" >/dev/null &&
        fail "network namespace ocn-p$ID already exists (another run's? ip netns del ocn-p$ID)"
    skip "cannot create network namespaces here"
}
ip netns del "ocn-p$ID"

# mkns NAME: a namespace of our own; one that exists is another run's
mkns() {
    ip netns list | grep "^$1\b" >/dev/null &&
        fail "network namespace $1 already exists (a leftover of another run? ip netns del $1)"
    ip netns add "$1" || fail "ip netns add $1"
    NS+=("$1")
    echo "ns $1" >> "$T/made"
    ip -n "$1" link set lo up
}
# free_subnet A.B.C: no interface of this namespace is on A.B.C.0/24 yet
# (a leftover veth there would route our ranks to a stale agent)
free_subnet() {
    local on
    on=$(ip -o -4 addr show to "$1.0/24" | awk '{ print $2 }' | head -1)
    [ -z "$on" ] || fail "$1.0/24 is already on $on here (a leftover of another run? ip link del $on)"
}
# side DEV NS ADDR: address and bring up one end (NS "" = this namespace)
side() {
    local ipc="ip"
    [ -n "$2" ] && ipc="ip -n $2"
    $ipc addr add "$3/24" dev "$1" && $ipc link set "$1" up || fail "addr $3"
    # checksum and segmentation offloads off on the endpoints (docs/facts.md)
    command -v ethtool >/dev/null &&
        in_ns "$2" ethtool -K "$1" tx off tso off gso off >/dev/null 2>&1
    return 0
}
# veth NAME_A NS_A ADDR_A NAME_B NS_B ADDR_B
veth() {
    ip link add "$1" type veth peer name "$4" || fail "veth $1 (a leftover of another run? ip link del $1)"
    LINKS+=("$1")
    echo "link $1" >> "$T/made"
    [ -z "$2" ] || ip link set "$1" netns "$2" || fail "veth $1 into $2"
    [ -z "$5" ] || ip link set "$4" netns "$5" || fail "veth $4 into $5"
    side "$1" "$2" "$3"
    side "$4" "$5" "$6"
}
in_ns() { local n=$1; shift; if [ -n "$n" ]; then ip netns exec "$n" "$@"; else "$@"; fi; }

"$OFFCORE" keygen > "$T/cluster.key" || fail "keygen"
chmod 600 "$T/cluster.key"
JOBKEY=$("$OFFCORE" job-key --job 77 --cluster-key "$T/cluster.key")
export OC_JOB=77 OC_JOB_KEY=$JOBKEY OC_PLACEMENT=agent UCX_TLS=tcp

agent() { # agent NS DEV NAME ARGS...: start and wait until ready
    local n=$1 dev=$2 name=$3; shift 3
    # no function or subshell between: $! must be the agent itself
    if [ -n "$n" ]; then
        ip netns exec "$n" env UCX_NET_DEVICES="$dev" "$OFFCORED" \
            --cluster-key "$T/cluster.key" --metrics off "$@" > "$T/$name.log" 2>&1 &
    else
        env UCX_NET_DEVICES="$dev" "$OFFCORED" --cluster-key "$T/cluster.key" \
            --metrics off "$@" > "$T/$name.log" 2>&1 &
    fi
    PIDS+=("$!")
    for _ in $(seq 200); do
        grep -qw ready "$T/$name.log" && return 0
        sleep 0.05
    done
    fail "agent $name not ready"
}

case "$CASE" in
twonode)
    A=ocn-a$ID; Bn=ocn-b$ID
    mkns "$A"; mkns "$Bn"
    veth "ocn-a$ID" "$A" 198.18.0.1 "ocn-b$ID" "$Bn" 198.18.0.2
    OC_LOG=agent:info,router:info agent "$A" "ocn-a$ID" agentA \
        --listen "unix:$T/a.sock,tcp:198.18.0.1:7701" \
        --peers tcp:198.18.0.2:7701 --metrics 198.18.0.1:9464
    OC_LOG=agent:info,router:info agent "$Bn" "ocn-b$ID" agentB \
        --listen "unix:$T/b.sock,tcp:198.18.0.2:7701" \
        --peers tcp:198.18.0.1:7701 --metrics 198.18.0.2:9464
    for s in fixed mixed reqrep; do
        in_ns "$A" env UCX_NET_DEVICES="ocn-a$ID" OC_AGENT="unix:$T/a.sock" \
            timeout 90 "$TR" $s 4 0 2 > "$T/ranksA.log" 2>&1 &
        ra=$!
        in_ns "$Bn" env UCX_NET_DEVICES="ocn-b$ID" OC_AGENT="unix:$T/b.sock" \
            timeout 90 "$TR" $s 4 2 2 > "$T/ranksB.log" 2>&1 &
        rb=$!
        wait $ra || fail "$s: ranks 0-1 (node A) exited $? (124: killed by timeout)"
        wait $rb || fail "$s: ranks 2-3 (node B) exited $? (124: killed by timeout)"
        export OC_JOB=$((OC_JOB + 1))
        export OC_JOB_KEY=$("$OFFCORE" job-key --job "$OC_JOB" --cluster-key "$T/cluster.key")
    done
    # Which transport each agent's endpoint to the other uses (UCX_TLS=tcp
    # here, over the one veth): in the log, the metrics and `offcore stat`.
    # Node numbers follow the sorted addresses: .1 is node 0.
    for x in "A 0 1 $A" "B 1 0 $Bn"; do
        set -- $x
        dev=ocn-$(echo "$1" | tr AB ab)$ID
        url=198.18.0.$(($2 + 1)):9464
        want="offcore_peer_transport{peer=\"$3\",transport=\"tcp/$dev\",class=\"tcp\"} 1"
        grep -q "peer node $3: via tcp/$dev (tcp)" "$T/agent$1.log" ||
            fail "agent $1 did not log the transport to node $3"
        in_ns "$4" curl -sf --noproxy '*' "http://$url/metrics" > "$T/metrics$1" ||
            fail "metrics of agent $1"
        grep -qxF "$want" "$T/metrics$1" ||
            { grep offcore_peer_transport "$T/metrics$1";
              fail "agent $1's metrics do not say: $want"; }
        # every message of the three jobs reached its rank: none dropped
        # (a job applied by a router before its ranks once dropped a
        # peer's first messages, and the ranks' quiesce waited for ever)
        grep -q "^offcore_thread_undeliverable_total" "$T/metrics$1" ||
            fail "agent $1's metrics have no offcore_thread_undeliverable_total"
        awk '/^offcore_thread_undeliverable_total/ && $NF != 0 { bad = 1 }
             END { exit bad }' "$T/metrics$1" ||
            { grep "^offcore_thread_undeliverable_total" "$T/metrics$1";
              fail "agent $1 dropped messages as undeliverable"; }
        in_ns "$4" "$OFFCORE" stat --agent "$url" > "$T/stat$1" 2>&1 ||
            fail "offcore stat on node $1"
        # the peers table: its heading, then the row of node $3
        awk '/^peers$/ { p = 1; next } p && /^$/ { p = 0 } p' "$T/stat$1" > "$T/peers$1"
        grep -q "^  peer  *transport " "$T/peers$1" &&
            grep -q "^  $3  *tcp/$dev  *[0-9]" "$T/peers$1" ||
            { cat "$T/stat$1"; fail "offcore stat on node $1: no transport in its peers table"; }
        in_ns "$4" "$OFFCORE" stat --json --agent "$url" | grep -F \
            '"name":"offcore_peer_transport","type":"gauge","labels":{"peer":"'"$3"'","transport":"tcp/'"$dev"'","class":"tcp"},"value":1' >/dev/null ||
            fail "offcore stat --json on node $1: no transport"
        echo "offcore stat on node $2, its peers table:"
        cat "$T/peers$1"
    done
    grep -h "peer node .*: via" "$T/agentA.log" "$T/agentB.log"
    echo "PASS twonode" ;;
grid)
    SW=ocn-s$ID
    mkns "$SW"
    ip -n "$SW" link add br0 type bridge && ip -n "$SW" link set br0 up || fail "bridge"
    for i in 0 1 2; do
        mkns "ocn-$i$ID"
        ip link add "ocn-$i$ID" type veth peer name "ocn-w$i$ID" || fail "veth"
        LINKS+=("ocn-$i$ID")
        echo "link ocn-$i$ID" >> "$T/made"
        ip link set "ocn-$i$ID" netns "ocn-$i$ID"
        ip link set "ocn-w$i$ID" netns "$SW"
        ip -n "$SW" link set "ocn-w$i$ID" master br0 && ip -n "$SW" link set "ocn-w$i$ID" up
        side "ocn-$i$ID" "ocn-$i$ID" "198.18.2.$((i + 1))"
    done
    addrs="tcp:198.18.2.1:7703,tcp:198.18.2.2:7703,tcp:198.18.2.3:7703"
    for i in 0 1 2; do
        me="tcp:198.18.2.$((i + 1)):7703"
        peers=$(echo "$addrs" | tr , '\n' | grep -v "^$me\$" | paste -sd, -)
        agent "ocn-$i$ID" "ocn-$i$ID" "agent$i" --route grid \
            --listen "unix:$T/n$i.sock,$me" --peers "$peers"
    done
    for s in fixed reqrep; do
        pids=""
        set -- "0 2" "2 1" "3 1"   # ranks 0-1 on node 0, 2 on node 1, 3 on node 2
        for i in 0 1 2; do
            eval "r=\${$((i + 1))}"
            in_ns "ocn-$i$ID" env UCX_NET_DEVICES="ocn-$i$ID" OC_AGENT="unix:$T/n$i.sock" \
                timeout 120 "$TR" $s 4 $r > "$T/ranks$i.log" 2>&1 &
            pids="$pids $!"
        done
        for p in $pids; do wait $p || fail "$s over the grid"; done
        export OC_JOB=$((OC_JOB + 1))
        export OC_JOB_KEY=$("$OFFCORE" job-key --job "$OC_JOB" --cluster-key "$T/cluster.key")
    done
    grep -q "rejected" "$T"/agent*.log && fail "a bundle was rejected on the grid"
    echo "PASS grid" ;;
killagent)
    # Two nodes.  Job 81 spans both; job 82 runs on node B only.  SIGKILL
    # node A's agent mid-run: every rank of job 81, on both nodes, must
    # exit with a clear error within 5 s (none hangs); job 82 must finish
    # exactly, and node B's agent must still serve a new job afterwards.
    A=ocn-a$ID; Bn=ocn-b$ID
    mkns "$A"; mkns "$Bn"
    veth "ocn-a$ID" "$A" 198.18.3.1 "ocn-b$ID" "$Bn" 198.18.3.2
    export OC_LOG=agent:info,router:info
    agent "$A" "ocn-a$ID" agentA --listen "unix:$T/a.sock,tcp:198.18.3.1:7705" \
        --peers tcp:198.18.3.2:7705 --metrics 198.18.3.1:9464
    agent "$Bn" "ocn-b$ID" agentB --listen "unix:$T/b.sock,tcp:198.18.3.2:7705" \
        --peers tcp:198.18.3.1:7705 --metrics 198.18.3.2:9464
    unset OC_LOG
    key() { "$OFFCORE" job-key --job "$1" --cluster-key "$T/cluster.key"; }
    # ranks NS DEV SOCK JOB SECONDS NAME ARGS...: one process of ranks, in
    # the background; NAME.end gets its exit status and when it ended
    ranks() {
        local n=$1 dev=$2 sock=$3 job=$4 secs=$5 name=$6
        shift 6
        ( in_ns "$n" env UCX_NET_DEVICES="$dev" OC_AGENT="unix:$sock" \
              OC_JOB="$job" OC_JOB_KEY="$(key "$job")" OC_TEST_SECONDS="$secs" \
              timeout 60 "$TR" endless "$@" > "$T/$name.log" 2>&1
          echo "$? $(date +%s.%N)" > "$T/$name.end" ) &
    }
    ranks "$A" "ocn-a$ID" "$T/a.sock" 81 30 x-a 4 0 2
    xa=$!
    ranks "$Bn" "ocn-b$ID" "$T/b.sock" 81 30 x-b 4 2 2
    xb=$!
    ranks "$Bn" "ocn-b$ID" "$T/b.sock" 82 6 y 2
    y=$!
    for _ in $(seq 600); do
        grep -q "job 81 ready" "$T/agentA.log" && grep -q "job 82 ready" "$T/agentB.log" && break
        sleep 0.05
    done
    grep -q "job 81 ready" "$T/agentA.log" || fail "job 81 never became ready"
    grep -q "job 82 ready" "$T/agentB.log" || fail "job 82 never became ready"
    # mid-run: both jobs' messages move through the agents
    wait_for 30 metric_nonzero 198.18.3.1:9464 'offcore_job_messages_total\{job="81"' "$A" ||
        fail "no message of job 81 through agent A in 30 s"
    wait_for 30 metric_nonzero 198.18.3.2:9464 'offcore_job_messages_total\{job="82"' "$Bn" ||
        fail "no message of job 82 through agent B in 30 s"
    [ -e "$T/x-a.end" ] || [ -e "$T/x-b.end" ] || [ -e "$T/y.end" ] &&
        fail "a job ended before the agent was killed"
    t0=$(date +%s.%N)
    { kill -9 "${PIDS[0]}"; wait "${PIDS[0]}"; } 2>/dev/null  # no "Killed" notice
    wait $xa $xb
    summary=""
    for x in x-a x-b; do
        read -r rc t1 < "$T/$x.end" || fail "$x: no exit status"
        [ "$rc" = 0 ] && fail "job 81's ranks ($x) did not notice"
        took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
        awk -v t="$took" 'BEGIN { exit !(t < 5) }' ||
            fail "job 81's ranks ($x) took $took s to fail (exit $rc)"
        grep -q "killed by signal" "$T/$x.log" && fail "$x: a rank was killed (hung?)"
        summary="$summary $x ${took}s"
    done
    # every rank's own call failed with OC_ERR_PEER_FAILED, and its library
    # said why: node A's ranks lost their agent, node B's were told by
    # theirs that node A's agent went away
    for r in 0 1 2 3; do
        x=x-a; [ $r -ge 2 ] && x=x-b
        grep -q "^rank $r: oc_[a-z]*: OC_ERR_PEER_FAILED" "$T/$x.log" ||
            fail "rank $r: its call did not return OC_ERR_PEER_FAILED"
    done
    for r in 0 1; do
        grep -q "rank $r: lost the agent: OC_ERR_PEER_FAILED" "$T/x-a.log" ||
            fail "rank $r (node A) ended without a clear error"
    done
    for r in 2 3; do
        grep -q "rank $r: the agent says: job 81 failed: the agent of node 0 went away" \
            "$T/x-b.log" || fail "rank $r (node B) ended without a clear error"
    done
    wait $y
    read -r rc _ < "$T/y.end" || fail "job 82: no exit status"
    [ "$rc" = 0 ] || fail "job 82 (node B only) was disturbed"
    grep -q "all of them" "$T/y.log" || fail "job 82 not exact"
    kill -0 "${PIDS[1]}" || fail "node B's agent died"
    in_ns "$Bn" env UCX_NET_DEVICES="ocn-b$ID" OC_AGENT="unix:$T/b.sock" \
        OC_JOB=83 OC_JOB_KEY="$(key 83)" timeout 60 "$TR" reqrep 2 > "$T/z.log" 2>&1 ||
        fail "node B's agent did not serve a new job"
    echo "job 81 failed on both nodes (from SIGKILL to the ranks' exit:$summary);" \
        "job 82 exact ($(sed -n 's/^endless: //p' "$T/y.log")); job 83 served"
    echo "PASS killagent" ;;
mpiapps)
    # The real apps, launched by mpirun the way a cluster launches them: an
    # orted per "node" (namespace), started through Open MPI's rsh launcher
    # (the rsh agent maps a node's address to `ip netns exec`), connecting
    # back to mpirun over a bridge in this namespace.
    command -v mpirun >/dev/null || skip "no mpirun"
    [ -x "$B/apps/histogram" ] || skip "apps not built"
    BR=ocn-r$ID
    free_subnet 198.18.60
    ip link add "$BR" type bridge || fail "bridge"
    LINKS+=("$BR")
    echo "link $BR" >> "$T/made"
    ip addr add 198.18.60.254/24 dev "$BR" && ip link set "$BR" up || fail "bridge addr"
    for i in 1 2; do
        mkns "ocn-m$i$ID"
        ip link add "ocn-m$i$ID" type veth peer name "ocn-q$i$ID" || fail "veth"
        LINKS+=("ocn-q$i$ID")
        echo "link ocn-q$i$ID" >> "$T/made"
        ip link set "ocn-m$i$ID" netns "ocn-m$i$ID"
        ip link set "ocn-q$i$ID" master "$BR" && ip link set "ocn-q$i$ID" up || fail "port"
        side "ocn-m$i$ID" "ocn-m$i$ID" "198.18.60.$i"
        OC_LOG=agent:info,router:info agent "ocn-m$i$ID" "ocn-m$i$ID" "agent$i" \
            --listen "unix:$T/m$i.sock,tcp:198.18.60.$i:7704" \
            --peers "tcp:198.18.60.$((3 - i)):7704" --metrics "198.18.60.$i:9464"
    done
    # rsh agent: "HOST CMD..." -> run CMD in HOST's namespace
    # (each node its own session directory: the namespaces share /tmp and
    # the host name, as two real nodes would not)
    cat > "$T/rsh" <<EOS
#!/bin/sh
h=\$1; shift
mkdir -p $T/node\${h##*.}
exec ip netns exec ocn-m\${h##*.}$ID env TMPDIR=$T/node\${h##*.} sh -c "\$*"
EOS
    # each rank talks to its own node's agent, and UCX uses that node's link
    cat > "$T/on-node" <<EOS
#!/bin/sh
n=\$(ip netns identify); i=\${n#ocn-m}; i=\${i%$ID}
OC_AGENT=unix:$T/m\$i.sock UCX_NET_DEVICES=\$n exec "\$@"
EOS
    chmod +x "$T/rsh" "$T/on-node"
    # val I WHAT LABELS: offcore_peer_WHAT_total{LABELS} in agent I's last scrape
    val() {
        awk -v k="offcore_peer_$2_total{$3}" '$1 == k { v = $2 } END { print v + 0 }' \
            "$T/metrics$1"
    }
    scrape() {
        for i in 1 2; do
            curl -sf --noproxy '*' "http://198.18.60.$i:9464/metrics" > "$T/metrics$i" ||
                fail "metrics of agent $i"
        done
    }
    prev1=0 prev2=0
    cross() { # cross APP: the counters balance (the last bundles may still
              # be on their way for a moment) and grew in both directions
        local ok=0 w
        for _ in $(seq 50); do
            scrape
            ok=1
            for w in messages bundles bytes; do
                [ "$(val 1 $w 'peer="1",dir="out"')" = "$(val 2 $w 'peer="0",dir="in"')" ] &&
                [ "$(val 2 $w 'peer="0",dir="out"')" = "$(val 1 $w 'peer="1",dir="in"')" ] ||
                    ok=0
            done
            [ $ok = 1 ] && break
            sleep 0.1
        done
        [ $ok = 1 ] || { grep -h offcore_peer "$T/metrics1" "$T/metrics2";
                         fail "$1: the agents' cross-node counters do not balance"; }
        local m1 m2
        m1=$(val 1 messages 'peer="1",dir="out"')
        m2=$(val 2 messages 'peer="0",dir="out"')
        [ "$m1" -gt "$prev1" ] && [ "$m2" -gt "$prev2" ] ||
            fail "$1: no messages crossed the link ($prev1 -> $m1, $prev2 -> $m2)"
        prev1=$m1 prev2=$m2
    }
    for app in "histogram --updates 2M --table 10K" "index-gather --requests 1M --table 10K"; do
        set -- $app
        name=$1
        shift
        timeout 120 mpirun --allow-run-as-root --host 198.18.60.1:2,198.18.60.2:2 \
            -np 4 --mca plm_rsh_agent "$T/rsh" --mca plm_rsh_no_tree_spawn 1 \
            --mca routed direct -x PMIX_MCA_gds=hash \
            --mca oob_tcp_if_include 198.18.60.0/24 --mca pml ob1 \
            --mca btl self,tcp --mca btl_tcp_if_include 198.18.60.0/24 \
            -x OC_PLACEMENT -x OC_JOB -x OC_JOB_KEY -x UCX_TLS \
            "$T/on-node" "$B/apps/$name" "$@" > "$T/$name.log" 2>&1 ||
            fail "$name across the two nodes"
        grep -q '"verified":true' "$T/$name.log" || fail "$name did not verify"
        grep -q '"placement":"agent"' "$T/$name.log" || fail "$name did not use the agents"
        # each node's agent served its own two ranks
        for i in 1 2; do
            grep -q "job $OC_JOB ready: 4 ranks on 2 nodes, 2 here" "$T/agent$i.log" ||
                fail "$name: agent $i did not serve two of the four ranks"
        done
        # What crossed the link, from the agents' counters: both directions
        # moved, and what each agent sent the other is what the other
        # accepted (nodes are numbered by address: .1 is node 0).
        cross "$name"
        echo "$name: $(grep -o '"rate":[^,]*' "$T/$name.log"), across the link" \
            "node 0 -> 1: $(val 1 messages peer=\"1\",dir=\"out\") messages" \
            "in $(val 1 bundles peer=\"1\",dir=\"out\") bundles," \
            "1 -> 0: $(val 2 messages peer=\"0\",dir=\"out\") messages" \
            "in $(val 2 bundles peer=\"0\",dir=\"out\") bundles (both apps so far)"
        export OC_JOB=$((OC_JOB + 1))
        export OC_JOB_KEY=$("$OFFCORE" job-key --job "$OC_JOB" --cluster-key "$T/cluster.key")
    done
    # Ranks 0-1 run on node 1 and 2-3 on node 2 (two slots each), every
    # rank sends to every rank, so an exact result needed both directions
    # across the link, as the counters show.
    echo "PASS mpiapps" ;;
stallpeer)
    A=ocn-a$ID; Bn=ocn-b$ID
    mkns "$A"; mkns "$Bn"
    veth "ocn-a$ID" "$A" 198.18.4.1 "ocn-b$ID" "$Bn" 198.18.4.2
    export OC_LOG=agent:info,router:info
    agent "$A" "ocn-a$ID" agentA --listen "unix:$T/a.sock,tcp:198.18.4.1:7707" \
        --peers tcp:198.18.4.2:7707
    agent "$Bn" "ocn-b$ID" agentB --listen "unix:$T/b.sock,tcp:198.18.4.2:7707" \
        --peers tcp:198.18.4.1:7707 --metrics 198.18.4.2:9464
    unset OC_LOG
    key84=$("$OFFCORE" job-key --job 84 --cluster-key "$T/cluster.key")
    rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }  # KiB
    in_ns "$A" env UCX_NET_DEVICES="ocn-a$ID" OC_AGENT="unix:$T/a.sock" \
        OC_JOB=84 OC_JOB_KEY="$key84" OC_TEST_SECONDS=14 \
        timeout 90 "$TR" endless 4 0 2 > "$T/ranksA.log" 2>&1 &
    ra=$!
    in_ns "$Bn" env UCX_NET_DEVICES="ocn-b$ID" OC_AGENT="unix:$T/b.sock" \
        OC_JOB=84 OC_JOB_KEY="$key84" OC_TEST_SECONDS=14 \
        timeout 90 "$TR" endless 4 2 2 > "$T/ranksB.log" 2>&1 &
    rb=$!
    for _ in $(seq 600); do
        grep -q "job 84 ready" "$T/agentA.log" && grep -q "job 84 ready" "$T/agentB.log" && break
        sleep 0.05
    done
    grep -q "job 84 ready" "$T/agentB.log" || fail "job 84 never became ready"
    # the baseline is taken under load, buffers in use: 2 s of traffic
    # first, while the agents' RSS settles
    sleep 2   # a window, not a wait for an event
    ka=${PIDS[0]} kb=${PIDS[1]}
    a0=$(rss "$ka") b0=$(rss "$kb")
    # 1. the receiving ranks stop: node B's agent must not queue what A sends
    bproc=$(ps -o pid= --ppid "$rb")   # timeout's child: the ranks' parent
    stopped="$bproc $(ps -o pid= --ppid "$bproc" 2>/dev/null)"
    kill -STOP $stopped
    sleep 3   # the measured window (not a wait): B's ranks stopped
    b1=$(rss "$kb") a1=$(rss "$ka")
    # B's agent routes job 84's messages out again once its ranks go on
    outB() {
        in_ns "$Bn" curl -sf -m 2 --noproxy '*' "http://198.18.4.2:9464/metrics" |
            awk '/^offcore_job_messages_total\{job="84",dir="out"\}/ { s += $2 } END { print s + 0 }'
    }
    o0=$(outB)
    resumed() { [ "$(outB)" -gt "$o0" ]; }
    kill -CONT $stopped
    wait_for 30 resumed || fail "node B's agent routed nothing for its ranks 30 s after they went on"
    # 2. node B's agent stops: node A's agent must hold back, not queue
    kill -STOP "$kb"
    sleep 3   # the measured window (not a wait): B's agent stopped
    a2=$(rss "$ka")
    kill -CONT "$kb"
    wait $ra || fail "ranks 0-1 (node A) after the stalls"
    wait $rb || fail "ranks 2-3 (node B) after the stalls"
    grep -q "all of them" "$T/ranksA.log" || fail "not exact after the stalls"
    grow() { echo $(( ($2 - $1) / 1024 )); }  # MiB
    echo "agent RSS (KiB): B before $b0, ranks of B stopped 3 s $b1 (+$(grow "$b0" "$b1") MiB);" \
         "A before $a0, then $a1, agent B stopped 3 s $a2 (+$(grow "$a0" "$a2") MiB)"
    [ "$(grow "$b0" "$b1")" -le 32 ] || fail "node B's agent grew $(grow "$b0" "$b1") MiB while its ranks were stopped"
    [ "$(grow "$a0" "$a2")" -le 32 ] || fail "node A's agent grew $(grow "$a0" "$a2") MiB while its peer was stopped"
    echo "PASS stallpeer" ;;
dpu)
    D=ocn-d$ID
    mkns "$D"
    free_subnet 198.18.1
    veth "ocn-h$ID" "" 198.18.1.1 "ocn-d$ID" "$D" 198.18.1.2
    agent "$D" "ocn-d$ID" dpu --listen tcp:198.18.1.2:7702
    for s in fixed reqrep; do
        env UCX_NET_DEVICES="ocn-h$ID" OC_AGENT=tcp:198.18.1.2:7702 \
            timeout 90 "$TR" $s 2 > "$T/ranks.log" 2>&1 || fail "$s through the DPU agent"
        export OC_JOB=$((OC_JOB + 1))
        export OC_JOB_KEY=$("$OFFCORE" job-key --job "$OC_JOB" --cluster-key "$T/cluster.key")
    done
    echo "PASS dpu" ;;
*)
    echo "unknown case $CASE"; exit 2 ;;
esac
