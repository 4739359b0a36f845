#!/bin/bash
# fault-test.sh BUILD_DIR CASE — the inline placement's collectives when a
# rank dies, and across two "nodes" (network namespaces joined by a veth,
# UCX over TCP).  Exit 0 PASS, 1 FAIL, 77 SKIP (no root or namespaces for
# the two-node cases, no mpirun for the MPI one).  Namespaces and links are
# named cf<role><pid> and removed on exit with every process started;
# addresses are in 198.18.150.0/24 (RFC 2544's benchmarking range), ports
# (Open MPI's) in 41100-41199.
#
#   kill1     4 ranks on this node (UCX_TLS=sm,self), a 16 MiB allreduce
#             (then all-to-all 16 MiB, then allreduce 64 B) again and
#             again; rank 2 (then 1, then 3) is SIGKILLed: every other
#             rank must
#             get OC_ERR_COLL_PEER_FAILED from oc_wait within the bound
#             (10 s asserted, 5 s promised on a quiet machine; each
#             survivor's time is printed), and its next collective must fail
#             at once with the same error
#   kill2     the same with 2 ranks per node, over TCP between namespaces,
#             for allreduce and then all-to-all; the killed rank shares its
#             node with one survivor
#   mpi2      coll_check (every type x op x size against Open MPI's results)
#             on 4 ranks over the two nodes, launched by mpirun (an orted per
#             namespace through the rsh launcher), inline placement over TCP
set -u -o pipefail
B=${1:?usage: fault-test.sh BUILD_DIR CASE}
CASE=${2:?case}
B=$(cd "$B" && pwd)
FAULT=$B/tests/coll/coll_fault
CHECK=$B/tests/coll/coll_check
. "$(dirname "$0")/../integration/lib.sh"
tmp=$(mktemp -d /tmp/oc-cf-XXXXXX)
ID=$$
NSA=cfa$ID NSB=cfb$ID
BOUND_S=10   # asserted; the promise is 5 s (docs/coll.md), the machine is shared

fail_logs() {
    for f in "$tmp"/*.log; do
        [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -20
    done
}

need_netns() {
    [ "$(id -u)" = 0 ] || skip "needs root for ip netns"
    command -v ip >/dev/null || skip "no ip (iproute2)"
    ip netns add "$NSA" 2>/dev/null || skip "cannot create network namespaces here"
    cleanup_on_exit "$NSA" "$NSB"
    ip netns add "$NSB" || fail "netns $NSB"
    ip link add "$NSA" type veth peer name "$NSB" || fail "veth"
    ip link set "$NSA" netns "$NSA" && ip link set "$NSB" netns "$NSB" || fail "veth move"
    for n in a b; do
        ns=cf$n$ID; addr=198.18.150.$([ $n = a ] && echo 1 || echo 2)
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$addr/24" dev "$ns" && ip -n "$ns" link set "$ns" up ||
            fail "address $addr"
        # checksum and segmentation offloads off on the endpoints (docs/facts.md)
        command -v ethtool >/dev/null &&
            ip netns exec "$ns" ethtool -K "$ns" tx off tso off gso off >/dev/null 2>&1
    done
    return 0
}

# ranks NP NODE_OF_RANK... -- ARGS: start NP coll_fault ranks, rank i in
# namespace NODE_OF_RANK[i] ("" = this one); pids in R_PIDS.
R_PIDS=()
ranks() {
    local np=$1; shift
    local nodes=()
    while [ "$1" != "--" ]; do nodes+=("$1"); shift; done
    shift
    rm -rf "$tmp/boot" "$tmp/release"; mkdir -p "$tmp/boot"
    R_PIDS=()
    for ((r = 0; r < np; r++)); do
        local n=${nodes[$r]}
        if [ -n "$n" ]; then
            ip netns exec "$n" env OC_RANK=$r OC_SIZE=$np UCX_NET_DEVICES="$n" \
                "$FAULT" --release "$tmp/release" "$@" > "$tmp/rank$r.log" 2>&1 &
        else
            env OC_RANK=$r OC_SIZE=$np "$FAULT" --release "$tmp/release" "$@" \
                > "$tmp/rank$r.log" 2>&1 &
        fi
        R_PIDS+=("$!")
        echo "$!" >> "$tmp/bg.pids"
    done
}

all_say() { # all_say NP WORDS: every rank's log has the line
    for ((r = 0; r < $1; r++)); do
        grep -q "$2" "$tmp/rank$r.log" || return 1
    done
}

# kill_one NP VICTIM LABEL: wait until every rank loops, SIGKILL VICTIM,
# check every survivor's error and time.
kill_one() {
    local np=$1 victim=$2 label=$3
    wait_for 60 all_say "$np" looping || fail "$label: the ranks never all ran a first checked round"
    # two more rounds done everywhere: all are in the loop, in oc_wait
    wait_for 60 all_say "$np" "in the loop" || fail "$label: the ranks did not loop"
    local t_kill
    t_kill=$(date +%s%N)
    kill -KILL "${R_PIDS[$victim]}"
    # every survivor reports before any leaves (coll_fault --release):
    # each must find the killed rank, not a survivor that already left
    for ((r = 0; r < np; r++)); do
        [ "$r" = "$victim" ] ||
            wait_for 60 grep -q '^{' "$tmp/rank$r.log" || fail "$label: rank $r printed no result"
    done
    touch "$tmp/release"
    for ((r = 0; r < np; r++)); do
        [ "$r" = "$victim" ] && continue
        wait "${R_PIDS[$r]}" 2>/dev/null ||
            fail "$label: rank $r did not report OC_ERR_COLL_PEER_FAILED twice"
        line=$(grep '^{' "$tmp/rank$r.log")
        python3 - "$line" "$t_kill" "$BOUND_S" "$label" "$r" <<'PY' || fail "$label: rank $r"
import json, sys
r = json.loads(sys.argv[1]); t_kill = int(sys.argv[2]); bound = float(sys.argv[3])
dt = (r["t_err_ns"] - t_kill) / 1e9
print('{"test":"coll-fault","case":"%s","rank":%d,"status":"%s","detect_s":%.3f,'
      '"next":"%s","next_us":%.1f}' % (sys.argv[4], r["rank"], r["status"], dt,
                                       r["next"], r["next_us"]))
ok = (r["status"] == "OC_ERR_COLL_PEER_FAILED" and r["next"] == r["status"]
      and dt < bound and r["next_us"] < 100000)
sys.exit(0 if ok else 1)
PY
        grep -q "lost rank $victim" "$tmp/rank$r.log" ||
            fail "$label: rank $r did not name the lost rank $victim"
    done
    wait "${R_PIDS[$victim]}" 2>/dev/null
    ok "$label: every survivor got OC_ERR_COLL_PEER_FAILED in time, then failed fast"
}

export OC_PLACEMENT=inline OC_BOOTSTRAP_DIR=$tmp/boot OC_BOOTSTRAP_TIMEOUT_S=60
case "$CASE" in
kill1)
    cleanup_on_exit
    export UCX_TLS=sm,self
    ranks 4 "" "" "" "" -- --op allreduce --bytes 16777216 --limit 120
    kill_one 4 2 "one node, allreduce 16 MiB"
    # all-to-all moves its large chunks by cma reads (single copy): a
    # survivor may be reading the killed rank's memory when it dies
    ranks 4 "" "" "" "" -- --op alltoall --bytes 16777216 --limit 120
    kill_one 4 1 "one node, all-to-all 16 MiB"
    # small ones go through the node's shared segment (src/coll/shm.c):
    # the survivors wait on the killed rank's slot, not on a UCX message
    ranks 4 "" "" "" "" -- --op allreduce --bytes 64 --limit 120
    kill_one 4 3 "one node, allreduce 64 B (shared memory)"
    ;;
kill2)
    need_netns
    export UCX_TLS=tcp
    ranks 4 "$NSA" "$NSA" "$NSB" "$NSB" -- --op allreduce --bytes 16777216 --limit 120
    kill_one 4 2 "two nodes, allreduce 16 MiB"
    ranks 4 "$NSA" "$NSA" "$NSB" "$NSB" -- --op alltoall --bytes 16777216 --limit 120
    kill_one 4 1 "two nodes, all-to-all 16 MiB"
    ;;
mpi2)
    command -v mpirun >/dev/null || skip "no mpirun"
    need_netns
    # rsh agent "HOST CMD...": CMD in HOST's namespace (.1 is cfa, .2 cfb),
    # each node its own session directory as two real nodes would have
    cat > "$tmp/rsh" <<EOS
#!/bin/sh
h=\$1; shift
ns=\$( [ "\${h##*.}" = 1 ] && echo $NSA || echo $NSB )
mkdir -p $tmp/node\${h##*.}
exec ip netns exec \$ns env TMPDIR=$tmp/node\${h##*.} sh -c "\$*"
EOS
    # each rank's UCX uses its own node's link
    cat > "$tmp/on-node" <<EOS
#!/bin/sh
UCX_NET_DEVICES=\$(ip netns identify) exec "\$@"
EOS
    chmod +x "$tmp/rsh" "$tmp/on-node"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_TLS=tcp
    unset OC_BOOTSTRAP_DIR
    # mpirun itself runs in node a: every socket stays in our namespaces
    ip netns exec "$NSA" timeout 280 mpirun --allow-run-as-root \
        --host 198.18.150.1:2,198.18.150.2:2 -np 4 --oversubscribe --bind-to none \
        --mca plm_rsh_agent "$tmp/rsh" --mca plm_rsh_no_tree_spawn 1 \
        --mca routed direct -x PMIX_MCA_gds=hash \
        --mca oob_tcp_if_include 198.18.150.0/24 --mca oob_tcp_static_ipv4_ports 41100-41109 \
        --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include 198.18.150.0/24 \
        --mca btl_tcp_port_min_v4 41110 --mca btl_tcp_port_range_v4 20 \
        --mca mpi_yield_when_idle 1 \
        -x OC_PLACEMENT -x UCX_TLS -x OC_LOG=runtime:info,transport:info \
        "$tmp/on-node" "$CHECK" --max 1048576 > "$tmp/mpi.log" 2>&1 ||
        fail "coll_check across the two nodes"
    grep -q "PASS" "$tmp/mpi.log" || fail "coll_check did not pass"
    grep -c "placement inline" "$tmp/mpi.log" | grep -x 4 >/dev/null ||
        fail "not every rank ran the inline placement"
    # ranks of different nodes reached each other over TCP on the veth
    grep -q "rank 0: to rank 2 via tcp/$NSA" "$tmp/mpi.log" ||
        fail "rank 0 did not reach rank 2 over TCP on $NSA"
    tail -3 "$tmp/mpi.log"
    ok "coll_check on 4 ranks over two namespaces (UCX over TCP) agrees with Open MPI"
    ;;
*) fail "unknown case $CASE" ;;
esac
echo "PASS $CASE"
