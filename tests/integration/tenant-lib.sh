# tests/integration/tenant-lib.sh — the set-up and teardown that the tenant
# integration tests (dp-tenant-test.sh, dp-tenant6-test.sh,
# dp-mattach-test.sh, dp-tenant-esp-test.sh) share: namespaces, veths with
# the workers' queue count, workloads, kernel vxlan peers, offcore-dp
# started and stopped, and the counter readers.  Sourced (it sources
# lib.sh) with `. "$(dirname "$0")/tenant-lib.sh"`; single shell process;
# trusts nothing but the calling script.  Every wait is on a condition with
# a generous limit (a loaded CI host is slow, never wrong): a check fails
# on what it sees, not on how long it took.
#
#   tl_init BUILDDIR THREADS TOOL...
#        root and TOOLs, else skip (77); sets build, nq (THREADS, default
#        1: offcore-dp's workers and every veth's queues), Q (the veths'
#        queue arguments), dp, cli, T0
#   tl_scapy             SPY = a python3 with scapy (Debian's python3-scapy
#                        is the system python's when another comes first
#                        in PATH), else skip
#   tl_netns TAG NS...   create the namespaces (skip if the first cannot
#                        be), tmp=/tmp/TAG.XXXXXX, and clean all up on exit
#   tl_netns_more NS...  create more namespaces, cleaned up on exit too
#   tl_veth NS0 DEV0 NS1 DEV1
#                        a veth pair, $nq queues on each end
#   tl_up NS DEV...      lo and DEVs up in NS
#   tl_nooffload NS DEV...
#                        checksum offload, TSO and GSO off (a forwarder
#                        gets finished, MTU-sized frames)
#   tl_host NS DEV MAC ADDR...
#                        a tenant workload: MAC, MTU 1450 (VXLAN's usual),
#                        up, its addresses, offloads off
#   tl_vxlan NS DEV VNI LOCAL REMOTE UNDERLAY MAC INTO ADDR...
#                        a kernel vxlan device (dstport 4789) made in NS
#                        over UNDERLAY, moved into namespace INTO unless
#                        INTO is "-" (a vxlan device keeps its underlay
#                        socket where it was made), with MAC, up, ADDRs,
#                        offloads off: the independent VXLAN peer
#   tl_dp_start NS CONF LOG SOCK
#                        offcore-dp in NS; returns once it answers on SOCK
#                        (fails with its log if it exits first); dppid is
#                        its pid, every started one is killed on exit
#   tl_dp_stop           SIGTERM to every running offcore-dp; fail unless
#                        each exits 0
#   tl_ctl SOCK ARGS     `offcore dp` on SOCK; ctl ARGS: the same on $sock
#   metric NAME          a counter's value on $sock's offcore-dp (0 if absent)
#   drop TENANT REASON   offcore_dp_tenant_dropped_packets_total's value
#   wait_drop SECS TENANT REASON N
#                        wait until that counter is exactly N (fail after
#                        SECS with its value)
#   wait_drop_ge SECS TENANT REASON N
#                        the same, until it is N or more
#   listening NS PORT    a TCP listener on PORT in NS
#   tl_handoffs SOCK     "A:n B:m " frames handed between workers per tenant

. "$(dirname "$0")/lib.sh"

tl_init() {
    build=$1
    nq=${2:-1}
    shift 2
    Q="numtxqueues $nq numrxqueues $nq"
    dp=$build/src/dp/offcore-dp
    cli=$build/src/tools/offcore
    T0=$(date +%s)
    tl_dp_pids=
    dppid=
    [ "$(id -u)" = 0 ] || skip "needs root"
    for tl_t in ip ethtool timeout "$@"; do
        command -v $tl_t >/dev/null 2>&1 || skip "$tl_t is not installed"
    done
}

tl_scapy() {
    SPY=
    for tl_p in python3 /usr/bin/python3; do
        $tl_p -c 'import scapy.all' 2>/dev/null && { SPY=$tl_p; break; }
    done
    [ -n "$SPY" ] || skip "python3-scapy is not installed"
}

tl_netns() {
    tl_tag=$1
    shift
    ip netns add $1 2>/dev/null || skip "cannot create network namespaces"
    tmp=$(mktemp -d /tmp/$tl_tag.XXXXXX)
    cleanup_on_exit "$@"
    shift
    for tl_x in "$@"; do ip netns add $tl_x || fail "netns $tl_x"; done
}

tl_netns_more() {
    oc__netns="$oc__netns $*"
    for tl_x in "$@"; do ip netns add $tl_x || fail "netns $tl_x"; done
}

tl_veth() {
    ip link add $2 $Q netns $1 type veth peer name $4 $Q netns $3 ||
        fail "veth $2 ($1) - $4 ($3)"
}

tl_up() {
    tl_n=$1
    shift
    ip -n $tl_n link set lo up
    for tl_x in "$@"; do ip -n $tl_n link set $tl_x up || fail "$tl_x up in $tl_n"; done
}

tl_nooffload() {
    tl_n=$1
    shift
    for tl_x in "$@"; do
        ip netns exec $tl_n ethtool -K $tl_x tx off tso off gso off >/dev/null 2>&1
    done
}

tl_host() {
    tl_n=$1 tl_d=$2
    ip -n $tl_n link set $tl_d address $3 mtu 1450 || fail "$tl_d in $tl_n"
    shift 3
    tl_up $tl_n $tl_d
    for tl_x in "$@"; do ip -n $tl_n addr add $tl_x dev $tl_d || fail "$tl_x on $tl_d"; done
    tl_nooffload $tl_n $tl_d
}

tl_vxlan() {
    tl_n=$1 tl_d=$2
    ip -n $tl_n link add $tl_d type vxlan id $3 local $4 remote $5 \
        dstport 4789 dev $6 || fail "kernel vxlan device $tl_d"
    tl_mac=$7
    [ "$8" = - ] || { ip -n $tl_n link set $tl_d netns $8 || fail "moving $tl_d"; tl_n=$8; }
    shift 8
    ip -n $tl_n link set $tl_d address $tl_mac up || fail "$tl_d up"
    for tl_x in "$@"; do ip -n $tl_n addr add $tl_x dev $tl_d || fail "$tl_x on $tl_d"; done
    tl_nooffload $tl_n $tl_d
}

cleanup_extra() {
    for tl_x in $tl_dp_pids; do kill "$tl_x" 2>/dev/null; done
}

tl_ctl() {
    tl_s=$1
    shift
    "$cli" dp --control unix:$tl_s "$@"
}
ctl() { tl_ctl "$sock" "$@"; }

tl_dp_start() {
    OC_LOG=info ip netns exec $1 "$dp" --config "$2" >>"$3" 2>&1 &
    dppid=$!
    tl_dp_pids="$tl_dp_pids $dppid"
    # up to 60 s: an ASan build on a loaded host maps its shadow memory
    # and the AF_XDP sockets slowly; a daemon that exits is a failure now
    tl_end=$(($(date +%s) + 60))
    until tl_ctl $4 ping >/dev/null 2>&1; do
        kill -0 $dppid 2>/dev/null || fail "offcore-dp ($2) exited: $(tail -5 "$3")"
        [ "$(date +%s)" -lt $tl_end ] || fail "offcore-dp ($2) did not answer in 60 s"
        sleep 0.1
    done
}

tl_dp_stop() {
    tl_rc=0
    for tl_x in $tl_dp_pids; do kill -TERM $tl_x 2>/dev/null; done
    for tl_x in $tl_dp_pids; do wait $tl_x || tl_rc=$?; done
    tl_dp_pids= dppid=
    [ $tl_rc = 0 ] || fail "offcore-dp exit status $tl_rc"
}

metric() {
    tl_v=$(ctl stat --raw | awk -v k="$1" '$1 == k {print $2}')
    echo "${tl_v:-0}"
}

drop() {
    ctl stat --raw | sed -n "s/^offcore_dp_tenant_dropped_packets_total{tenant=\"$1\",reason=\"$2\"} //p"
}

# (a function, so that wait_for reads the counter again on every try: a
# `test "$(drop ...)"` argument would be expanded once, before the wait)
tl_drop_is() { [ "$(drop $1 $2)" = "$3" ]; }
tl_drop_ge() { [ "$(drop $1 $2)" -ge "$3" ]; }
wait_drop() {
    wait_for $1 tl_drop_is $2 $3 $4 || fail "$3 of $2: $(drop $2 $3), want $4"
}
wait_drop_ge() {
    wait_for $1 tl_drop_ge $2 $3 $4 || fail "$3 of $2: $(drop $2 $3), want $4 or more"
}

listening() { ip netns exec $1 ss -Hltn "sport = :$2" | grep . >/dev/null; }

tl_handoffs() {
    tl_ctl $1 stat --raw | sed -n 's/^offcore_dp_tenant_handoff_packets_total{tenant="\(.\)"} \([0-9]*\)$/\1:\2/p' | tr '\n' ' '
}
