#!/bin/sh
# bench/run-pkt-forward.sh BUILDDIR — forwarding through offcore-dp between
# two network namespaces, against its baselines in the same run (root).
#
# Topology: namespace A (10.78.0.1) and B (10.78.0.2), each on one end of a
# veth pair (checksum offload, TSO, GSO off on these endpoints); the other
# ends sit in namespace D, joined by one of the cases:
#   kernel-bridge     a Linux bridge in D (the kernel's own forwarding)
#   dp-bare           offcore-dp --stages none: the same AF_XDP ports and
#                     worker loop, no stage (the bare forwarder)
#   dp-acl1-10k       offcore-dp with the parser and the classifier holding
#                     the 10,000 acl1 ClassBench rules (action allow: every
#                     frame is looked up, first match counted, forwarded)
#   dp-tenant         offcore-dp with every tenant stage on (docs/tenants.md):
#                     anti-spoofing, the egress security group on the
#                     classifier (16 rules, the last one matching), connection
#                     tracking (1M-flow table), policing (rate 400 Gbit/s:
#                     the bucket runs, never limits), VXLAN encapsulation;
#                     B terminates the tunnel with a kernel vxlan device and
#                     the traffic runs over the overlay (10.79.0.0/24)
#   dp-bare-1450      dp-bare with A's route to B at MTU 1450, the tunnel's
#                     inner MTU: what the smaller TCP segments alone cost
#   dp-bare-vxlan     dp-bare carrying the traffic of case dp-tenant as A's
#                     own kernel vxlan device encapsulates it (the same
#                     frames on the wire, the same decapsulation in B, the
#                     same 1450-byte inner MTU), the forwarder bare: with
#                     dp-tenant, what offcore-dp's stages cost apart from
#                     the tunnel's own (B's decapsulation runs on the same
#                     2 cores, much of it in offcore-dp's send calls)
#   dp-bare-2hop      two attachments of one offcore-dp joined by a third
#                     veth pair in D (A - t0 - fabric - t1 - B), no stage:
#                     the baseline of the next case
#   dp-esp-ipfix-2hop the same with ESP AES-256-GCM on the fabric (t0
#                     encrypts, t1 decrypts, and back) and flow accounting
#                     exported over IPFIX to a UDP port on loopback
#   dp-tenant-esp-ipfix-2hop  the two-hop path with tenants on both
#                     attachments (every tenant stage, VXLAN VNI 100 between
#                     tunnel addresses 192.168.78.1 and .2), ESP on the VXLAN
#                     packets and flow export (docs/tenants.md, "Tenants with
#                     ESP and flow export"); against dp-bare-2hop
#   dp-bare-2dpu      the deployment of docs/tenants.md: two servers, each
#                     with its own DPU (two offcore-dp processes in D, one
#                     thread each): A - dp 1 (host ocpfa1, wire ocpff1) -
#                     fabric veth (MTU 1550) - dp 2 (wire ocpff2, host
#                     ocpfb1) - B, both forwarders bare: the baseline of
#   dp-tenant-2dpu    the same two DPUs with every tenant stage on at both
#                     ends (anti-spoofing, the egress group of case dp-tenant
#                     with its 16 rules, conntrack, policing at 400 Gbit/s,
#                     VXLAN VNI 100 between 192.168.78.1 and .2; dp 2's
#                     ingress group opens B's ports); the tunnel runs from
#                     DPU to DPU, no kernel vxlan device on the path.  The
#                     fabric's MTU (1550) carries the 50-byte VXLAN header,
#                     so the hosts keep MTU 1500 and the same TCP MSS as in
#                     dp-bare-2dpu (as an underlay is run: its MTU above the
#                     tenants')
#   dp-bare-2dpu-1450, dp-tenant-2dpu-1450  the same pair with a 1500-byte
#                     fabric and the hosts' routes at MTU 1450 (the
#                     tenants' MTU leaves room for the tunnel), both cases
#                     at that MSS
# Each repeat runs every case in turn (interleaved, BENCH_REPEATS times,
# default 5): iperf3 UDP with 64-byte payloads at full speed for
# BENCH_SECONDS (default 3) gives the packet rate that reached B (sent -
# lost, per second); iperf3 TCP for the same time gives Gbit/s.  One JSON
# line per run, then per case the medians and their ratio to dp-bare of the
# same run.  BENCH_DP_THREADS (default 1) sets offcore-dp's workers;
# BENCH_NETNS_PREFIX (default ocpf) starts the namespaces' names (several
# people benchmarking on one machine keep to their own).
# BENCH_PORT (default 23301) is iperf3's port in B.
# For the 2dpu cases the CPU figures are both DPUs' together per frame
# dp 1 forwarded (every frame crosses both).
# BENCH_PERF=DIR records each offcore-dp run with `perf record -e cpu-clock
# -g` into DIR/CASE.REPEAT.perf.data (perf report -i ... to read it).
# Figures on a shared 2-core machine are noisy: read the ratios.
set -u
build=${1:-build}
repeats=${BENCH_REPEATS:-5}
secs=${BENCH_SECONDS:-3}
threads=${BENCH_DP_THREADS:-1}
port=${BENCH_PORT:-23301}
here=$(cd "$(dirname "$0")/.." && pwd)
rules=$here/data/classbench/acl1_10k.rules.gz
dp=$build/src/dp/offcore-dp
cli=$build/src/tools/offcore

skip() { echo "{\"bench\":\"forward\",\"skipped\":\"$*\"}"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for t in ip ethtool iperf3 python3; do
    command -v $t >/dev/null 2>&1 || skip "$t is not installed"
done
[ -x "$dp" ] || skip "$dp is not built"
[ -f "$rules" ] || skip "$rules is missing"

id=$$
ns=${BENCH_NETNS_PREFIX:-ocpf}
A=${ns}A$id B=${ns}B$id D=${ns}D$id
tmp=$(mktemp -d /tmp/ocp-fwd.XXXXXX)
dppid= dppid2= srvpid= perfpid=
cleanup() {
    [ -n "$perfpid" ] && kill -INT "$perfpid" 2>/dev/null
    [ -n "$dppid" ] && kill "$dppid" 2>/dev/null
    [ -n "$dppid2" ] && kill "$dppid2" 2>/dev/null
    [ -n "$srvpid" ] && kill "$srvpid" 2>/dev/null
    wait 2>/dev/null
    for n in $A $B $D; do ip netns del $n 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
die() {
    echo "run-pkt-forward: $*" >&2
    tail -20 "$tmp/dp.log" >&2 2>/dev/null
    # the running DPUs' drop counters say where the path breaks
    for s in "$tmp"/dp*.sock; do
        [ -S "$s" ] || continue
        echo "== $s" >&2
        "$cli" dp --control "unix:$s" stat --raw 2>/dev/null |
            grep -E '^offcore_dp_.*(drop|forwarded|reason)' | grep -v ' 0$' >&2
    done
    exit 1
}

for n in $A $B $D; do ip netns add $n || die "netns $n"; done
ip link add ocpfa0 numtxqueues $threads numrxqueues $threads netns $A type veth \
    peer name ocpfa1 numtxqueues $threads numrxqueues $threads netns $D || die veth
ip link add ocpfb0 numtxqueues $threads numrxqueues $threads netns $B type veth \
    peer name ocpfb1 numtxqueues $threads numrxqueues $threads netns $D || die veth
ip -n $A addr add 10.78.0.1/24 dev ocpfa0
ip -n $B addr add 10.78.0.2/24 dev ocpfb0
ip -n $D link add ocpfw1 numtxqueues $threads numrxqueues $threads type veth \
    peer name ocpfw2 numtxqueues $threads numrxqueues $threads || die veth
ip -n $D link set ocpfw1 up
ip -n $D link set ocpfw2 up
# the fabric between the two DPUs of the 2dpu cases
ip -n $D link add ocpff1 numtxqueues $threads numrxqueues $threads type veth \
    peer name ocpff2 numtxqueues $threads numrxqueues $threads || die veth
ip -n $D link set ocpff1 up
ip -n $D link set ocpff2 up
(umask 077
 python3 -c "import os; print('0x' + os.urandom(36).hex())" >"$tmp/ab.key"
 python3 -c "import os; print('0x' + os.urandom(36).hex())" >"$tmp/ba.key")
for x in "$A ocpfa0" "$B ocpfb0" "$D ocpfa1" "$D ocpfb1"; do
    set -- $x
    ip -n $1 link set lo up
    ip -n $1 link set $2 up
done
ip netns exec $A ethtool -K ocpfa0 tx off tso off gso off >/dev/null
ip netns exec $B ethtool -K ocpfb0 tx off tso off gso off >/dev/null
# the overlay of case dp-tenant: A's tenant address, B's kernel vxlan device
amac=$(ip netns exec $A cat /sys/class/net/ocpfa0/address)
bmac=$(ip netns exec $B cat /sys/class/net/ocpfb0/address)
d1mac=$(ip netns exec $D cat /sys/class/net/ocpfb1/address)
ip -n $A addr add 10.79.0.1/24 dev ocpfa0
ip -n $A route replace 10.79.0.0/24 dev ocpfa0 src 10.79.0.1 mtu 1450
# (B learns the tunnel end's MAC by ARP: offcore-dp answers for it)
ip -n $B route add 192.168.78.1/32 dev ocpfb0
ip -n $B link add ocpfvx type vxlan id 100 local 10.78.0.2 remote 192.168.78.1 \
    dstport 4789 dev ocpfb0 || die "kernel vxlan device"
ip -n $B addr add 10.79.0.2/24 dev ocpfvx
ip -n $B link set ocpfvx up
ip netns exec $B ethtool -K ocpfvx tx off tso off gso off >/dev/null
ip netns exec $B iperf3 -s -p $port >/dev/null 2>&1 &
srvpid=$!

ctl_ok() { # [SOCKET]
    "$cli" dp --control "unix:${1:-$tmp/dp.sock}" ping >/dev/null 2>&1
}

# start offcore-dp in D on CONF, answering on SOCKET; its pid in $started
start_dp() { # CONF SOCKET LOG
    ip netns exec $D "$dp" --config "$1" >"$3" 2>&1 &
    started=$!
    n=0
    until ctl_ok "$2"; do
        n=$((n + 1))
        [ $n -lt 300 ] || die "offcore-dp did not start ($1)"
        kill -0 $started 2>/dev/null || { tail -20 "$3" >&2; die "offcore-dp exited ($1)"; }
        sleep 0.1
    done
}

# the configuration of DPU N (1: A's, 2: B's) of the 2dpu cases
conf_2dpu() { # CASE N
    f1=$(ip netns exec $D cat /sys/class/net/ocpff1/address)
    f2=$(ip netns exec $D cat /sys/class/net/ocpff2/address)
    echo "threads $threads"
    echo "control unix:$tmp/dp$2.sock"
    if [ $2 = 1 ]; then
        echo "attach t0 host=ocpfa1 wire=ocpff1"
        me=$amac mine=10.78.0.1 loc=192.168.78.1 locm=$f1 rem=192.168.78.2 remm=$f2
    else
        echo "attach t0 host=ocpfb1 wire=ocpff2"
        me=$bmac mine=10.78.0.2 loc=192.168.78.2 locm=$f2 rem=192.168.78.1 remm=$f1
    fi
    case $1 in
    dp-bare-2dpu*) echo "stages none"; return ;;
    esac
    echo "tenant T vni=100 attach=t0 mac=$me ip=$mine local=$loc" \
        "local_mac=$locm remote=$rem remote_mac=$remm rate=400000 burst=1000000"
    i=1
    while [ $i -le 15 ]; do
        echo "tenant_rule T egress id=$i action=deny proto=tcp dst=10.99.$i.0/24"
        i=$((i + 1))
    done
    echo "tenant_rule T egress id=16 action=allow dst=10.78.0.0/24"
    # B serves (ping, iperf3's control connection and data): its ingress
    # group opens them; B's replies reach A as the connections' own
    if [ $2 = 2 ]; then
        echo "tenant_rule T ingress id=1 action=allow proto=tcp dport=$port"
        echo "tenant_rule T ingress id=2 action=allow proto=udp dport=$port"
        echo "tenant_rule T ingress id=3 action=allow proto=icmp"
    fi
}

start_case() { # CASE REPEAT
    # B resolves the tunnel end again: offcore-dp (dp-tenant) or A's
    # kernel (dp-bare-vxlan) answers
    ip -n $B neigh del 192.168.78.1 dev ocpfb0 2>/dev/null
    case $1 in
    dp-bare-1450)
        ip -n $A route replace 10.78.0.0/24 dev ocpfa0 src 10.78.0.1 mtu 1450 ;;
    dp-bare-vxlan)
        # A's overlay address moves onto A's own vxlan device (A's MAC,
        # as in dp-tenant), whose tunnel end is the DPU's of dp-tenant
        ip -n $A addr del 10.79.0.1/24 dev ocpfa0 &&
            ip -n $A addr add 192.168.78.1/32 dev ocpfa0 &&
            ip -n $A link add ocpfvxa type vxlan id 100 local 192.168.78.1 \
                remote 10.78.0.2 dstport 4789 dev ocpfa0 &&
            ip -n $A link set ocpfvxa address $amac up &&
            ip -n $A addr add 10.79.0.1/24 dev ocpfvxa || die "A's vxlan device"
        ip netns exec $A ethtool -K ocpfvxa tx off tso off gso off >/dev/null
        ;;
    esac
    case $1 in
    *-2dpu-1450)
        ip -n $A route replace 10.78.0.0/24 dev ocpfa0 src 10.78.0.1 mtu 1450
        ip -n $B route replace 10.78.0.0/24 dev ocpfb0 src 10.78.0.2 mtu 1450 ;;
    *-2dpu)
        ip -n $D link set ocpff1 mtu 1550
        ip -n $D link set ocpff2 mtu 1550 ;;
    esac
    case $1 in
    kernel-bridge)
        ip -n $D link add ocpfbr type bridge &&
            ip -n $D link set ocpfa1 master ocpfbr &&
            ip -n $D link set ocpfb1 master ocpfbr &&
            ip -n $D link set ocpfbr up || die "bridge"
        ;;
    *-2dpu*)
        conf_2dpu $1 1 >"$tmp/dp1.conf"
        conf_2dpu $1 2 >"$tmp/dp2.conf"
        start_dp "$tmp/dp1.conf" "$tmp/dp1.sock" "$tmp/dp.log"
        dppid=$started
        start_dp "$tmp/dp2.conf" "$tmp/dp2.sock" "$tmp/dp2.log"
        dppid2=$started
        if [ -n "${BENCH_PERF:-}" ]; then
            perf record -q -e cpu-clock -g -p $dppid,$dppid2 \
                -o "$BENCH_PERF/$1.$2.perf.data" >/dev/null 2>&1 &
            perfpid=$!
        fi
        ;;
    dp-*)
        {
            echo "threads $threads"
            echo "control unix:$tmp/dp.sock"
            case $1 in
            *-2hop)
                echo "attach t0 host=ocpfa1 wire=ocpfw1"
                echo "attach t1 host=ocpfb1 wire=ocpfw2" ;;
            *)  echo "attach t0 host=ocpfa1 wire=ocpfb1" ;;
            esac
            case $1 in
            dp-bare*) echo "stages none" ;;
            dp-acl1-10k) echo "rules $rules action=allow" ;;
            dp-tenant)
                echo "tenant T vni=100 attach=t0 mac=$amac ip=10.79.0.1" \
                    "local=192.168.78.1 local_mac=$d1mac remote=10.78.0.2" \
                    "remote_mac=$bmac rate=400000 burst=1000000"
                i=1
                while [ $i -le 15 ]; do
                    echo "tenant_rule T egress id=$i action=deny proto=tcp dst=10.99.$i.0/24"
                    i=$((i + 1))
                done
                echo "tenant_rule T egress id=16 action=allow dst=10.79.0.0/24"
                echo "tenant_rule T ingress id=1 action=allow proto=udp" ;;
            dp-tenant-esp-ipfix-2hop)
                w1=$(ip netns exec $D cat /sys/class/net/ocpfw1/address)
                w2=$(ip netns exec $D cat /sys/class/net/ocpfw2/address)
                echo "tenant TA vni=100 attach=t0 mac=$amac ip=10.78.0.1" \
                    "local=192.168.78.1 local_mac=$w1 remote=192.168.78.2 remote_mac=$w2"
                echo "tenant TB vni=100 attach=t1 mac=$bmac ip=10.78.0.2" \
                    "local=192.168.78.2 local_mac=$w2 remote=192.168.78.1 remote_mac=$w1"
                echo "tenant_rule TB ingress id=1 action=allow proto=udp"
                echo "tenant_rule TB ingress id=2 action=allow proto=tcp"
                echo "tenant_rule TB ingress id=3 action=allow proto=icmp"
                echo "sa out spi=0x1001 local=192.168.78.1 peer=192.168.78.2 key=$tmp/ab.key match=192.168.78.2/32"
                echo "sa in spi=0x1001 local=192.168.78.2 peer=192.168.78.1 key=$tmp/ab.key"
                echo "sa out spi=0x2002 local=192.168.78.2 peer=192.168.78.1 key=$tmp/ba.key match=192.168.78.1/32"
                echo "sa in spi=0x2002 local=192.168.78.1 peer=192.168.78.2 key=$tmp/ba.key"
                echo "ipfix 127.0.0.1:28099"
                echo "flow_idle 1" ;;
            dp-esp-ipfix-2hop)
                # t0 encrypts toward B and decrypts from it; t1 the mirror
                echo "sa out spi=0x1001 local=192.0.2.1 peer=192.0.2.2 key=$tmp/ab.key match=10.78.0.2/32"
                echo "sa in spi=0x1001 local=192.0.2.2 peer=192.0.2.1 key=$tmp/ab.key"
                echo "sa out spi=0x2002 local=192.0.2.2 peer=192.0.2.1 key=$tmp/ba.key match=10.78.0.1/32"
                echo "sa in spi=0x2002 local=192.0.2.1 peer=192.0.2.2 key=$tmp/ba.key"
                echo "ipfix 127.0.0.1:28099"
                echo "flow_idle 1" ;;
            esac
        } >"$tmp/dp.conf"
        ip netns exec $D "$dp" --config "$tmp/dp.conf" >"$tmp/dp.log" 2>&1 &
        dppid=$!
        n=0
        until ctl_ok; do
            n=$((n + 1))
            [ $n -lt 300 ] || die "offcore-dp did not start"
            kill -0 $dppid 2>/dev/null || die "offcore-dp exited"
            sleep 0.1
        done
        if [ -n "${BENCH_PERF:-}" ]; then
            perf record -q -e cpu-clock -g -p $dppid \
                -o "$BENCH_PERF/$1.$2.perf.data" >/dev/null 2>&1 &
            perfpid=$!
        fi
        ;;
    esac
    # the path is up when a ping crosses it (ARP learnt, bridge forwarding)
    n=0
    until ip netns exec $A ping -c 1 -W 1 $dst >/dev/null 2>&1; do
        n=$((n + 1))
        [ $n -lt 20 ] || die "no path A -> B in case $1"
    done
    # the daemons' CPU so far (start-up: populating the 1M-flow tables and
    # the pools) is not the traffic's: stop_case counts from here
    dp_ticks >"$tmp/ticks0"
}

# user and system ticks of the running offcore-dp processes, summed
dp_ticks() {
    for p in $dppid $dppid2; do cat /proc/$p/stat; done |
        awk '{u += $14; s += $15} END {print u + 0, s + 0}'
}

stop_case() { # CASE
    case $1 in
    dp-bare-1450)
        ip -n $A route replace 10.78.0.0/24 dev ocpfa0 src 10.78.0.1 ;;
    dp-bare-vxlan)
        ip -n $A link del ocpfvxa
        ip -n $A addr del 192.168.78.1/32 dev ocpfa0
        ip -n $A addr add 10.79.0.1/24 dev ocpfa0
        ip -n $A route replace 10.79.0.0/24 dev ocpfa0 src 10.79.0.1 mtu 1450
        ;;
    esac
    case $1 in
    *-2dpu-1450)
        ip -n $A route replace 10.78.0.0/24 dev ocpfa0 src 10.78.0.1
        ip -n $B route replace 10.78.0.0/24 dev ocpfb0 src 10.78.0.2 ;;
    *-2dpu)
        ip -n $D link set ocpff1 mtu 1500
        ip -n $D link set ocpff2 mtu 1500 ;;
    esac
    case $1 in
    kernel-bridge) ip -n $D link del ocpfbr ;;
    *-2dpu*)
        fwd=$("$cli" dp --control "unix:$tmp/dp1.sock" stat --raw |
            sed -n 's/^offcore_dp_forwarded_packets_total \([0-9]*\)$/\1/p')
        # both DPUs' CPU time during the traffic, per frame dp 1 forwarded
        ticks=$(dp_ticks | awk -v t0="$(cat "$tmp/ticks0")" \
            '{split(t0, z, " "); print $1 - z[1], $2 - z[2]}')
        echo "$fwd $ticks $(getconf CLK_TCK)" >"$tmp/cpu"
        # the frames the tenant stages passed at dp 1 (both ways): the
        # JSON line shows the stages ran on the traffic (0 when bare)
        "$cli" dp --control "unix:$tmp/dp1.sock" stat --raw |
            awk '/^offcore_dp_tenant_packets_total/ {s += $NF} END {print s + 0}' \
            >"$tmp/stages"
        # and what the tenant stages of both DPUs dropped, by reason (a
        # conntrack that refused TCP segments, an MTU the tunnel does not
        # fit, would show here)
        for s in "$tmp/dp1.sock" "$tmp/dp2.sock"; do
            "$cli" dp --control "unix:$s" stat --raw
        done | sed -n 's/^offcore_dp_tenant_dropped_packets_total{.*reason="\([a-z_]*\)"} \([0-9]*\)$/\1 \2/p' \
            >"$tmp/tdrops"
        if [ -n "$perfpid" ]; then
            kill -INT $perfpid; wait $perfpid; perfpid=
        fi
        kill -TERM $dppid $dppid2
        wait $dppid || die "offcore-dp 1 exit status $?"
        wait $dppid2 || die "offcore-dp 2 exit status $?"
        dppid= dppid2=
        ;;
    dp-*)
        # CPU the daemon spent during the traffic (it sleeps in poll() when
        # idle) per frame it forwarded: the cost of its pipeline, apart
        # from the traffic tools
        fwd=$("$cli" dp --control "unix:$tmp/dp.sock" stat --raw |
            sed -n 's/^offcore_dp_forwarded_packets_total \([0-9]*\)$/\1/p')
        # user time is the pipeline; system time is the sockets' syscalls,
        # the kernel's copy-mode AF_XDP and whatever the kernel runs in
        # their context (the receiving namespace's stack, its vxlan
        # decapsulation in case dp-tenant)
        ticks=$(dp_ticks | awk -v t0="$(cat "$tmp/ticks0")" \
            '{split(t0, z, " "); print $1 - z[1], $2 - z[2]}')
        echo "$fwd $ticks $(getconf CLK_TCK)" >"$tmp/cpu"
        if [ -n "$perfpid" ]; then
            kill -INT $perfpid; wait $perfpid; perfpid=
        fi
        kill -TERM $dppid
        wait $dppid || die "offcore-dp exit status $?"
        dppid=
        ;;
    esac
}

run_case() { # CASE REPEAT
    dst=10.78.0.2
    case $1 in dp-tenant | dp-bare-vxlan) dst=10.79.0.2 ;; esac
    rm -f "$tmp/ticks0"
    start_case "$1" "$2"
    ip netns exec $A iperf3 -c $dst -p $port -u -b 0 -l 64 -t "$secs" -J \
        >"$tmp/udp.json" 2>&1 || die "iperf3 UDP ($1): $(tail -3 "$tmp/udp.json")"
    ip netns exec $A iperf3 -c $dst -p $port -t "$secs" -J \
        >"$tmp/tcp.json" 2>&1 || die "iperf3 TCP ($1): $(tail -3 "$tmp/tcp.json")"
    rm -f "$tmp/cpu" "$tmp/stages" "$tmp/tdrops"
    stop_case "$1"
    python3 - "$1" "$2" "$tmp/udp.json" "$tmp/tcp.json" "$tmp/cpu" "$tmp/stages" "$tmp/ticks0" <<'EOF' | tee -a "$tmp/runs"
import json, os, sys
case, rep, udp, tcp, cpu, stages, ticks0 = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
u = json.load(open(udp))["end"]["sum"]
t = json.load(open(tcp))["end"]["sum_received"]
got = u["packets"] - u["lost_packets"]
out = {"bench": "forward", "case": case, "repeat": rep,
       "mpps": round(got / u["seconds"] / 1e6, 4),
       "udp_sent_mpps": round(u["packets"] / u["seconds"] / 1e6, 4),
       "udp_lost_pct": round(u["lost_percent"], 2),
       "tcp_gbps": round(t["bits_per_second"] / 1e9, 3)}
if os.path.exists(cpu):
    fwd, user, sys_, hz = (int(x) for x in open(cpu).read().split())
    if fwd > 0:
        out["dp_cpu_ns_per_pkt"] = round((user + sys_) / hz * 1e9 / fwd)
        out["dp_user_ns_per_pkt"] = round(user / hz * 1e9 / fwd)
        out["dp_sys_ns_per_pkt"] = round(sys_ / hz * 1e9 / fwd)
        # start-up (until the path was up), not in the figures above
        out["dp_start_cpu_ms"] = round(sum(int(x) for x in open(ticks0).read().split()) / hz * 1e3)
    if os.path.exists(stages):
        out["dp1_forwarded"] = fwd
        out["dp1_tenant_frames"] = int(open(stages).read())
        drops = {}
        for line in open(os.path.join(os.path.dirname(stages), "tdrops")):
            why, n = line.split()
            if int(n):
                drops[why] = drops.get(why, 0) + int(n)
        out["tenant_drops"] = drops
print(json.dumps(out))
EOF
}

cases=${BENCH_CASES:-kernel-bridge dp-bare dp-acl1-10k dp-tenant dp-bare-1450 dp-bare-vxlan dp-bare-2hop dp-esp-ipfix-2hop dp-tenant-esp-ipfix-2hop dp-bare-2dpu dp-tenant-2dpu dp-bare-2dpu-1450 dp-tenant-2dpu-1450}
r=1
while [ $r -le "$repeats" ]; do
    for c in $cases; do run_case $c $r; done
    r=$((r + 1))
done
python3 - "$tmp/runs" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for c in ["kernel-bridge", "dp-bare", "dp-acl1-10k", "dp-tenant",
          "dp-bare-1450", "dp-bare-vxlan", "dp-bare-2hop",
          "dp-esp-ipfix-2hop", "dp-tenant-esp-ipfix-2hop",
          "dp-bare-2dpu", "dp-tenant-2dpu", "dp-bare-2dpu-1450",
          "dp-tenant-2dpu-1450"]:
    rs = [r for r in runs if r["case"] == c]
    if not rs:
        continue
    med[c] = {k: statistics.median(r[k] for r in rs) for k in ("mpps", "tcp_gbps")}
    for k in ("dp_cpu_ns_per_pkt", "dp_user_ns_per_pkt", "dp_sys_ns_per_pkt"):
        v = [r[k] for r in rs if k in r]
        if v:
            med[c][k] = statistics.median(v)
    med[c]["runs"] = len(rs)
for c, m in med.items():
    # two-hop cases against the two-hop bare forwarder, the others one hop
    # two-DPU cases against the two bare DPUs at the same MTU
    ref = med.get("dp-bare-2hop" if c.endswith("2hop") else
                  c.replace("tenant", "bare") if "2dpu" in c else "dp-bare")
    out = {"bench": "forward", "case": c, "summary": "median", "runs": m["runs"],
           "mpps": m["mpps"], "tcp_gbps": m["tcp_gbps"]}
    if ref:
        out["mpps_vs_bare"] = round(m["mpps"] / ref["mpps"], 3) if ref["mpps"] else None
        out["tcp_vs_bare"] = round(m["tcp_gbps"] / ref["tcp_gbps"], 3) if ref["tcp_gbps"] else None
    for k in ("dp_cpu_ns_per_pkt", "dp_user_ns_per_pkt", "dp_sys_ns_per_pkt"):
        if k in m:
            out[k] = m[k]
    print(json.dumps(out))
# per-repeat ratios against the bare forwarder of the same repeat
# (dp-tenant's bar is against dp-bare; the pairs after it say where the
# difference comes from: the 1450-byte MTU, the tunnel itself)
for case, base, bar in (("dp-acl1-10k", "dp-bare", 0.9),
                        ("dp-tenant", "dp-bare", 0.8),
                        ("dp-bare-1450", "dp-bare", None),
                        ("dp-bare-vxlan", "dp-bare", None),
                        ("dp-tenant", "dp-bare-vxlan", None),
                        ("dp-esp-ipfix-2hop", "dp-bare-2hop", None),
                        ("dp-tenant-esp-ipfix-2hop", "dp-bare-2hop", None),
                        ("dp-tenant-2dpu", "dp-bare-2dpu", 0.8),
                        ("dp-tenant-2dpu-1450", "dp-bare-2dpu-1450", 0.8),
                        ("dp-bare-2dpu-1450", "dp-bare-2dpu", None)):
    ratios, tratios = [], []
    for r in sorted({x["repeat"] for x in runs}):
        a = [x for x in runs if x["repeat"] == r and x["case"] == case]
        b = [x for x in runs if x["repeat"] == r and x["case"] == base]
        if a and b and b[0]["mpps"]:
            ratios.append(round(a[0]["mpps"] / b[0]["mpps"], 3))
        if a and b and b[0]["tcp_gbps"]:
            tratios.append(round(a[0]["tcp_gbps"] / b[0]["tcp_gbps"], 3))
    if not ratios:
        continue
    out = {"bench": "forward", "case": case + "/" + base,
           "mpps_ratio_per_repeat": ratios,
           "mpps_ratio_median": statistics.median(ratios),
           "tcp_ratio_per_repeat": tratios,
           "tcp_ratio_median": statistics.median(tratios) if tratios else None}
    if bar:
        out["bar"] = bar
    print(json.dumps(out))
EOF
