#!/bin/bash
# run-demo.sh BUILD_DIR — the DPU on one machine, no cluster, in about a
# minute (`make demo`).  Four parts, each ending in one line that says what
# it showed, or why it was skipped:
#
#   histogram  the distributed histogram on 2 ranks over offcore (tiny
#              messages aggregated by the runtime), verified exactly; then
#              its JSON line.  A failure here fails the demo.
#   dp         offcore-dp forwarding between two network namespaces (the
#              "host" and the "wire"), in a third one as a DPU's cores
#              would be: ping and a 2 s iperf3 through it, then its
#              counters (offcore dp stat).  Root, ip netns and AF_XDP.
#   nvmf       an offcore-nvmf target on a 32 MiB file with a CRC32C per
#              block, and offcore-nvmf-load against it over NVMe/TCP
#              (4 KiB random writes, then reads, QD32, 2 s each): IOPS, and
#              the target's integrity errors (0: every block read checked).
#   coll       allreduce (every type x op, up to 64 KiB), all-to-all, bcast
#              on 2 ranks, compared with Open MPI's results in the same
#              job: in the inline placement, then through an offcored.
#
# Parts after the histogram that fail print FAILED and make the demo exit
# 1; a part whose tool or privilege is missing is skipped, exit 0.
# Environment (defaults): DEMO_RANKS (2), DEMO_UPDATES (200M per rank),
# DEMO_TABLE (10K per rank), OC_PLACEMENT (inline), UCX_TLS (sm,self),
# DEMO_PARTS (histogram,dp,nvmf,coll), DEMO_NETNS_PREFIX (ocdemo: the
# namespaces and links are PREFIX{A,B,D}<pid>), DEMO_PORT (41620: the
# NVMe/TCP port on 127.0.0.1; the next one serves its metrics).
# Everything started is stopped, and every namespace removed, on exit and
# on SIGINT / SIGTERM.
set -u

B=${1:?usage: run-demo.sh BUILD_DIR (an already built meson build directory)}
B=$(cd "$B" && pwd) || exit 2
RANKS=${DEMO_RANKS:-2}
UPDATES=${DEMO_UPDATES:-200M}
TABLE=${DEMO_TABLE:-10K}
PARTS=${DEMO_PARTS:-histogram,dp,nvmf,coll}
PFX=${DEMO_NETNS_PREFIX:-ocdemo}
PORT=${DEMO_PORT:-41620}
for p in $(echo "$PARTS" | tr , ' '); do
    case $p in
    histogram|dp|nvmf|coll) ;;
    *) echo "run-demo.sh: DEMO_PARTS: unknown part '$p' (histogram, dp, nvmf, coll)" >&2; exit 2 ;;
    esac
done
EXE=$B/apps/histogram
if [ ! -x "$EXE" ]; then
    echo "run-demo.sh: $EXE not found: build first (ninja -C $B)" >&2
    exit 2
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=${OC_PLACEMENT:-inline}
export UCX_TLS=${UCX_TLS:-sm,self}

T=$(mktemp -d /tmp/oc-demo-XXXXXX)
ID=$$
NS=()
PIDS=()
cleanup() {
    exec 2>/dev/null
    for p in "${PIDS[@]}"; do kill "$p"; done
    for n in "${NS[@]}"; do ip netns pids "$n" | xargs -r kill -9; done
    for p in "${PIDS[@]}"; do kill -9 "$p"; done
    wait
    for n in "${NS[@]}"; do ip netns del "$n"; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
T0=$(date +%s.%N)
FAILED=0
want() { case ",$PARTS," in *",$1,"*) return 0 ;; esac; return 1; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
skipped() { echo "== $1: skipped: $2"; }
failed() { echo "== $1: FAILED: $2"; FAILED=1; }
# wait_for SECS CMD...: CMD until it succeeds, every 0.1 s
wait_for() {
    local n=$(($1 * 10))
    shift
    until "$@" > /dev/null 2>&1; do
        n=$((n - 1))
        [ $n -gt 0 ] || return 1
        sleep 0.1
    done
}

# ---- histogram ---------------------------------------------------------
if want histogram; then
    command -v mpirun > /dev/null || { echo "run-demo.sh: no mpirun (make deps)" >&2; exit 2; }
    out=$(mpirun --allow-run-as-root --oversubscribe -np "$RANKS" \
          -x OC_PLACEMENT -x UCX_TLS "$EXE" --updates "$UPDATES" --table "$TABLE")
    rc=$?
    get() {
        printf '%s\n' "$out" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | head -n 1 | tr -d '"'
    }
    case $out in
    *'"verified":true'*) verdict="verified exactly" ;;
    *) verdict="NOT VERIFIED" ;;
    esac
    awk -v r="$(get rate)" -v p="$(get ranks)" -v n="$(get updates_per_rank)" \
        -v t="$(get table_per_rank)" -v s="$(get seconds)" -v pl="$(get placement)" \
        -v v="$verdict" 'BEGIN {
        printf "== histogram over offcore (%s): %s ranks x %.0fM updates into %s counters/rank" \
               " in %.2f s = %.1f M updates/s, %s\n", pl, p, n / 1e6, t, s, r / 1e6, v }'
    printf '%s\n' "$out"
    if [ "$rc" -ne 0 ] || [ "$verdict" != "verified exactly" ]; then
        echo "run-demo.sh: the histogram failed (exit $rc)" >&2
        exit 1
    fi
fi

# ---- offcore-dp between two namespaces ----------------------------------
demo_dp() {
    local dp=$B/src/dp/offcore-dp cli=$B/src/tools/offcore t0
    local A=${PFX}A$ID Bn=${PFX}B$ID D=${PFX}D$ID
    local ha=${PFX}a$ID hb=${PFX}b$ID da=${PFX}x$ID db=${PFX}y$ID
    t0=$(date +%s.%N)
    [ "$(id -u)" = 0 ] || { skipped dp "needs root (network namespaces)"; return; }
    [ -x "$dp" ] || { skipped dp "offcore-dp was not built (libxdp missing?)"; return; }
    command -v ip > /dev/null || { skipped dp "no ip (iproute2)"; return; }
    ip netns add "$A" 2> /dev/null || { skipped dp "cannot create network namespaces here"; return; }
    NS+=("$A")
    ip netns add "$Bn" && NS+=("$Bn") && ip netns add "$D" && NS+=("$D") ||
        { failed dp "ip netns add"; return; }
    ip link add "$ha" netns "$A" type veth peer name "$da" netns "$D" &&
        ip link add "$hb" netns "$Bn" type veth peer name "$db" netns "$D" ||
        { failed dp "veth pairs"; return; }
    ip -n "$A" addr add 10.99.0.1/24 dev "$ha" && ip -n "$Bn" addr add 10.99.0.2/24 dev "$hb" ||
        { failed dp "addresses"; return; }
    for x in "$A $ha" "$Bn $hb" "$D $da" "$D $db"; do
        set -- $x
        ip -n "$1" link set lo up && ip -n "$1" link set "$2" up
    done
    # endpoints hand out frames with unfinished checksums otherwise
    if command -v ethtool > /dev/null; then
        ip netns exec "$A" ethtool -K "$ha" tx off tso off gso off > /dev/null 2>&1
        ip netns exec "$Bn" ethtool -K "$hb" tx off tso off gso off > /dev/null 2>&1
    fi
    cat > "$T/dp.conf" << EOF
threads 1
control unix:$T/dp.sock
attach t0 host=$da wire=$db
rule id=1 prio=1000 action=count proto=icmp
rule id=2 prio=1000 action=count proto=tcp
EOF
    ip netns exec "$D" "$dp" --config "$T/dp.conf" > "$T/dp.log" 2>&1 &
    PIDS+=("$!")
    wait_for 20 "$cli" dp --control "unix:$T/dp.sock" ping ||
        { failed dp "offcore-dp did not come up: $(tail -3 "$T/dp.log" | tr '\n' ' ')"; return; }
    ip netns exec "$A" ping -c 5 -i 0.2 -W 2 10.99.0.2 > "$T/ping" 2>&1 ||
        { failed dp "ping through offcore-dp: $(tail -2 "$T/ping" | tr '\n' ' ')"; return; }
    local rtt tcp="iperf3 not installed: ping only"
    rtt=$(sed -n 's|.*= [0-9.]*/\([0-9.]*\)/.*|\1|p' "$T/ping")
    if command -v iperf3 > /dev/null; then
        ip netns exec "$Bn" iperf3 -s -1 -p 5201 > /dev/null 2>&1 &
        PIDS+=("$!")
        wait_for 10 ip netns exec "$Bn" sh -c "ss -Hltn 'sport = :5201' | grep -q ." ||
            { failed dp "iperf3 server"; return; }
        if timeout 20 ip netns exec "$A" iperf3 -c 10.99.0.2 -p 5201 -t 2 -J > "$T/tcp.json" 2>&1; then
            tcp=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("TCP %.2f Gbit/s" % (j["end"]["sum_received"]["bits_per_second"] / 1e9))' "$T/tcp.json" 2> /dev/null) ||
                tcp="TCP: no iperf3 result"
        else
            failed dp "iperf3 through offcore-dp"; return
        fi
    fi
    "$cli" dp --control "unix:$T/dp.sock" stat > "$T/dp.stat" 2>&1 ||
        { failed dp "offcore dp stat"; return; }
    # its ports and the rules that matched (the rest: offcore dp stat)
    awk '/^[a-z]/ { show = ($1 == "ports" || $1 == "rules") } show' "$T/dp.stat" |
        sed 's/^/   /'
    echo "== dp: offcore-dp forwarded between two namespaces (AF_XDP, rules counting): ping 5/5 (avg ${rtt:-?} ms), $tcp; counters above ($(secs "$t0") s)"
}
want dp && demo_dp

# ---- offcore-nvmf with integrity, and its load generator ---------------
demo_nvmf() {
    local tgt=$B/src/nvmf/offcore-nvmf load=$B/src/nvmf/offcore-nvmf-load t0 w r e
    local nqn=nqn.2026-11.io.offcore:demo mport=$((PORT + 1))
    t0=$(date +%s.%N)
    [ -x "$tgt" ] && [ -x "$load" ] || { skipped nvmf "offcore-nvmf was not built (liburing missing?)"; return; }
    command -v curl > /dev/null || { skipped nvmf "no curl (to read the target's metrics)"; return; }
    head -c 32M /dev/urandom > "$T/disk.img" || { failed nvmf "a 32 MiB file in $T"; return; }
    printf 'listen 127.0.0.1:%s\nmetrics 127.0.0.1:%s\nsubsystem %s\n  allow-any-host\n  namespace 1 %s integrity=on\n' \
        "$PORT" "$mport" "$nqn" "$T/disk.img" > "$T/nvmf.conf"
    OC_LOG=nvmf:info "$tgt" -c "$T/nvmf.conf" > "$T/nvmf.log" 2>&1 &
    PIDS+=("$!")
    local me=$!
    wait_for 30 grep -q "offcore\[$me\] nvmf info: listening on" "$T/nvmf.log" ||
        { failed nvmf "the target did not start: $(tail -2 "$T/nvmf.log" | tr '\n' ' ')"; return; }
    w=$("$load" --addr "127.0.0.1:$PORT" --nqn "$nqn" --rw randwrite --seconds 2 2>&1) ||
        { failed nvmf "randwrite: $w"; return; }
    r=$("$load" --addr "127.0.0.1:$PORT" --nqn "$nqn" --rw randread --seconds 2 2>&1) ||
        { failed nvmf "randread: $r"; return; }
    e=$(curl -sf "http://127.0.0.1:$mport/metrics" |
        sed -n 's/^offcore_nvmf_ns_integrity_errors_total{.*} \([0-9]*\)$/\1/p')
    printf '   %s\n   %s\n' "$w" "$r"
    iops() { printf '%s' "$1" | sed -n 's/.*"iops":\([0-9]*\).*/\1/p'; }
    [ "$e" = 0 ] || { failed nvmf "integrity errors on the target: ${e:-no metric}"; return; }
    echo "== nvmf: offcore-nvmf over NVMe/TCP, CRC32C per 4 KiB block: randwrite $(iops "$w") IOPS, randread $(iops "$r") IOPS (QD32, 2 s each), 0 integrity errors ($(secs "$t0") s)"
}
want nvmf && demo_nvmf

# ---- collectives, inline and through the agent --------------------------
demo_coll() {
    local chk=$B/tests/coll/coll_check od=$B/src/agent/offcored oc=$B/src/tools/offcore
    local t0 t1 ti ta mpi
    t0=$(date +%s.%N)
    command -v mpirun > /dev/null || { skipped coll "no mpirun"; return; }
    [ -x "$chk" ] || { skipped coll "$chk was not built"; return; }
    mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1 -np 2"
    OC_PLACEMENT=inline timeout 120 $mpi -x OC_PLACEMENT -x UCX_TLS "$chk" --max 65536 > "$T/coll-inline" 2>&1 ||
        { failed coll "inline: $(grep -m3 FAIL "$T/coll-inline" | tr '\n' ' ')"; return; }
    ti=$(secs "$t0")
    "$oc" keygen > "$T/ck" && chmod 600 "$T/ck"
    OC_LOG=agent:info,router:info "$od" --listen "unix:$T/agent.sock" --cluster-key "$T/ck" \
        --metrics off > "$T/agent.log" 2>&1 &
    PIDS+=("$!")
    wait_for 10 grep -q ready "$T/agent.log" || { failed coll "offcored did not start"; return; }
    t1=$(date +%s.%N)
    OC_PLACEMENT=agent OC_AGENT="unix:$T/agent.sock" OC_JOB=7 \
        OC_JOB_KEY=$("$oc" job-key --job 7 --cluster-key "$T/ck") \
        timeout 120 $mpi -x OC_PLACEMENT -x OC_AGENT -x OC_JOB -x OC_JOB_KEY -x UCX_TLS \
        "$chk" --max 65536 > "$T/coll-agent" 2>&1 ||
        { failed coll "agent: $(grep -m3 FAIL "$T/coll-agent" | tr '\n' ' ')"; return; }
    ta=$(secs "$t1")
    grep -q "^PASS" "$T/coll-inline" && grep -q "^PASS" "$T/coll-agent" ||
        { failed coll "no PASS line"; return; }
    echo "== coll: allreduce (every type x op, 4 B to 64 KiB), all-to-all(v), bcast on 2 ranks equal to Open MPI's results: inline ($ti s), through offcored ($ta s)"
}
want coll && demo_coll

echo "== demo: $(secs "$T0") s in all$([ $FAILED = 0 ] || echo ", with failures (above)")"
exit $FAILED
