#!/bin/bash
# run-multinode.sh BUILD_DIR [options] — the placements with several nodes:
# K emulated nodes (network namespaces), R ranks and one offcored of T
# routing threads per node, the apps launched by mpirun over the nodes (an
# orted per namespace through the rsh launcher, as netns-test.sh mpiapps),
# placements inline and agent, each app run MN_REPEATS times per placement,
# interleaved (inline, agent, inline, ...).
#
# The wire: every node has a "data" veth to a bridge in a switch namespace
# (198.18.72.0/24; UCX_NET_DEVICES names it, checksum/TSO/GSO off so a
# packet is a wire-sized frame) and a "control" veth to a bridge here
# (198.18.73.0/24: mpirun's and MPI's own traffic, the agents' /metrics).
# Only UCX crosses the data bridge, so the packets and bytes its ports
# received (/sys/class/net/*/statistics, read before and after each run)
# are what the job sent between the nodes.  UCX_TLS=sm,self,tcp; each node
# has its own boot id (bind-mounted over /proc/sys/kernel/random/boot_id
# inside its mount namespace), which is how UCX tells hosts apart, so it
# takes tcp between nodes and shared memory within one: the agents' peer
# transport and the inline ranks' connections are checked to say so.  Where
# the bind mount is refused, UCX_TLS=tcp,self throughout (said in "within").
#
# Cores: with K*(R+T) cores or more, node i's ranks and agent get cores of
# their own (taskset); with fewer, every node's ranks share cores 0..N-2 and
# every agent N-1 (on 2 cores: the ranks on core 0, the agents on core 1,
# as run-spare-core.sh's agent-spare: the agent runs on a core the ranks
# do not have).  MN_RANK_CPUS / MN_AGENT_CPUS set one list for every node.
#
# Prints each run's app JSON line and a "multinode-run" line (its rate,
# packets and bytes on the wire, messages), then per app and placement:
#   {"bench":"multinode","app":..,"placement":..,"nodes":K,
#    "ranks_per_node":R,"rate":<median>,"wire_pkts_per_msg":<median>,
#    "wire_bundle_bytes":<median>,"verified":true, ...every run's figures}
# A message is one the application sent (msgs_sent over all ranks, local
# destinations too: the same count for both placements).  wire_bundle_bytes
# is, for the agent, the agents' own count of what they sent their peers
# (offcore_peer_bytes_total / offcore_peer_bundles_total, dir="out"); for
# inline, whose ranks count no per-node figure, the ranks' bundles to every
# destination (wire_bytes_sent / bundles_sent): "bundle_bytes_from" says
# which.  With MN_CPU=1 (default) one more run per app and placement with
# OC_APP_CPU=1 prints "multinode-cpu" lines: the ranks' CPU inside
# liboffcore per message (apps/common/app_oc.h).
#
# Options (environment in brackets, defaults):
#   --nodes K (MN_NODES, 2)  --ranks R (MN_RANKS, 2)  --threads T (MN_THREADS, 1)
#   --apps "A B" (MN_APPS, histogram index-gather transpose mcproxy)
#   --repeats N (MN_REPEATS, 3)  --no-cpu (MN_CPU=0)
#   --min-pkt-ratio X (MN_MIN_PKT_RATIO, unset): fail unless, for every
#     app, inline's wire packets per message >= X times the agent's (the
#     bundling check of the smoke test: a count, not a timing)
#   sizes: MN_UPDATES (2M) MN_REQUESTS (1M) MN_ROWS (100K) MN_PARTICLES (50K)
#   OC_BUNDLE_SIZE, OC_AGENT_MODE, OC_AGENT_CHANNEL pass to the ranks;
#   OC_AGENT_* to the agents.
# Exits 0, 1 when a run fails, does not verify or misses the check, 77 when
# it cannot make namespaces (not root, no iproute2, no mpirun).  Every
# namespace, link and process it made goes on exit, failure or signal.
set -u -o pipefail
B=${1:?usage: run-multinode.sh BUILD_DIR [--nodes K] [--ranks R] [--threads T] [--apps LIST] [--repeats N] [--no-cpu] [--min-pkt-ratio X]}
shift
K=${MN_NODES:-2} R=${MN_RANKS:-2} TH=${MN_THREADS:-1}
APPS=${MN_APPS:-histogram index-gather transpose mcproxy}
REPEATS=${MN_REPEATS:-3} CPU=${MN_CPU:-1} MINR=${MN_MIN_PKT_RATIO:-}
while [ $# -gt 0 ]; do
    case $1 in
    --nodes) K=${2:?--nodes K}; shift ;;
    --ranks) R=${2:?--ranks R}; shift ;;
    --threads) TH=${2:?--threads T}; shift ;;
    --apps) APPS=${2:?--apps LIST}; shift ;;
    --repeats) REPEATS=${2:?--repeats N}; shift ;;
    --no-cpu) CPU=0 ;;
    --min-pkt-ratio) MINR=${2:?--min-pkt-ratio X}; shift ;;
    *) echo "run-multinode.sh: unknown option $1 (see the comment at the top)" >&2; exit 2 ;;
    esac
    shift
done
for v in "$K" "$R" "$TH" "$REPEATS"; do
    case $v in ''|*[!0-9]*|0) echo "run-multinode.sh: --nodes, --ranks, --threads and --repeats take a number >= 1, not '$v'" >&2; exit 2 ;; esac
done
[ "$K" -ge 2 ] && [ "$K" -le 200 ] || { echo "run-multinode.sh: --nodes must be 2..200, not $K" >&2; exit 2; }
[ -z "$MINR" ] || awk -v x="$MINR" 'BEGIN { exit !(x + 0 > 0) }' ||
    { echo "run-multinode.sh: --min-pkt-ratio takes a positive number, not '$MINR'" >&2; exit 2; }
B=$(cd "$B" && pwd) || exit 2
OFFCORED=$B/src/agent/offcored OFFCORE=$B/src/tools/offcore
skip() { echo "run-multinode.sh: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
for c in ip mpirun taskset curl; do command -v $c >/dev/null || skip "no $c"; done
for app in $APPS; do
    case $app in histogram|index-gather|transpose|mcproxy) ;;
    *) echo "run-multinode.sh: unknown app $app" >&2; exit 2 ;; esac
done

ID=$$
SW=ocm-s$ID BR=ocmr$ID PORT=7709
T=$(mktemp -d /tmp/oc-multinode-XXXXXX)
NS=() PIDS=() RUN=""
cleanup() {
    set +e
    exec 2>/dev/null   # no "Killed" notices for what we end here
    [ -n "$RUN" ] && kill "$RUN"   # timeout: it passes the signal to mpirun
    for p in "${PIDS[@]}"; do kill "$p"; done
    for n in "${NS[@]}"; do ip netns pids "$n" | xargs -r kill -9; done
    wait
    for n in "${NS[@]}"; do ip netns del "$n"; done   # and the veths in them
    # the control veths' ends here: a namespace goes only when its last
    # user has, so these would outlive this script for a while
    for l in $(ip -o link show | awk -F': ' -v s="x$ID@" 'index($2, "ocmq") == 1 && index($2, s) { sub(/@.*/, "", $2); print $2 }'); do
        ip link del "$l"
    done
    ip link del "$BR"
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM   # the EXIT trap cleans up
trap 'exit 130' INT
die() { echo "run-multinode.sh: $*" >&2; for f in "$T"/*.log; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | tail -8 >&2; done; exit 1; }

mkns() {
    ip netns list | grep -q "^$1\b" && die "network namespace $1 exists already (ip netns del $1)"
    ip netns add "$1" || { [ ${#NS[@]} = 0 ] && skip "cannot create network namespaces here"; die "ip netns add $1"; }
    NS+=("$1")
    ip -n "$1" link set lo up
}
node_ns() { echo "ocm-n$1x$ID"; }
data_dev() { echo "ocmd$1x$ID"; }
noffload() { command -v ethtool >/dev/null && ip netns exec "$1" ethtool -K "$2" tx off tso off gso off >/dev/null 2>&1; return 0; }

# The switch of the data network, and the control bridge here.
mkns "$SW"
ip -n "$SW" link add br0 type bridge && ip -n "$SW" link set br0 up || die "data bridge"
on=$(ip -o -4 addr show to 198.18.73.0/24 | awk '{ print $2 }' | head -1)
[ -z "$on" ] || die "198.18.73.0/24 is already on $on here (a leftover? ip link del $on)"
ip link add "$BR" type bridge && ip addr add 198.18.73.254/24 dev "$BR" && ip link set "$BR" up ||
    die "control bridge"
PEERS=""
i=0
while [ $i -lt "$K" ]; do
    n=$(node_ns $i) d=$(data_dev $i)
    mkns "$n"
    ip link add "$d" type veth peer name "ocmw$i" netns "$SW" &&
        ip link set "$d" netns "$n" &&
        ip -n "$SW" link set "ocmw$i" master br0 && ip -n "$SW" link set "ocmw$i" up &&
        ip -n "$n" addr add "198.18.72.$((i + 1))/24" dev "$d" && ip -n "$n" link set "$d" up ||
        die "data link of node $i"
    noffload "$n" "$d"
    ip link add "ocmq${i}x$ID" type veth peer name "ocmc$i" netns "$n" &&
        ip link set "ocmq${i}x$ID" master "$BR" && ip link set "ocmq${i}x$ID" up &&
        ip -n "$n" addr add "198.18.73.$((i + 1))/24" dev "ocmc$i" && ip -n "$n" link set "ocmc$i" up ||
        die "control link of node $i"
    cat /proc/sys/kernel/random/uuid > "$T/bootid$i"
    mkdir -p "$T/node$i"
    PEERS="$PEERS tcp:198.18.72.$((i + 1)):$PORT"
    i=$((i + 1))
done

# enter I CMD...: run CMD as node I (its boot id, its TMPDIR); in its namespace
cat > "$T/enter" <<EOS
#!/bin/sh
i=\$1; shift
if [ "\${MN_SAME_BOOT_ID:-0}" != 1 ]; then
    mount --bind $T/bootid\$i /proc/sys/kernel/random/boot_id || exit 125
fi
export TMPDIR=$T/node\$i
exec "\$@"
EOS
# rsh agent for mpirun: "198.18.73.<i+1> CMD..." -> CMD on node i
cat > "$T/rsh" <<EOS
#!/bin/sh
h=\$1; shift
i=\$((\${h##*.} - 1))
exec ip netns exec ocm-n\${i}x$ID $T/enter \$i sh -c "\$*"
EOS
# on-node CMD...: a rank: its node's agent, data device and cores
cat > "$T/on-node" <<EOS
#!/bin/sh
n=\$(ip netns identify); i=\${n#ocm-n}; i=\${i%x$ID}
export OC_AGENT=unix:$T/n\$i.sock UCX_NET_DEVICES=ocmd\${i}x$ID
exec taskset -c "\$(cat $T/rcpus\$i)" "\$@"
EOS
chmod +x "$T/enter" "$T/rsh" "$T/on-node"

WITHIN=sm
export UCX_TLS=sm,self,tcp
if ! ip netns exec "$(node_ns 0)" "$T/enter" 0 true 2>"$T/enter.log"; then
    echo "run-multinode.sh: cannot give node 0 a boot id of its own ($(cat "$T/enter.log")): UCX_TLS=tcp,self within the nodes too" >&2
    export MN_SAME_BOOT_ID=1 UCX_TLS=tcp,self
    WITHIN=tcp
fi

# Cores.
NCPU=$(nproc)
if [ -n "${MN_RANK_CPUS:-}${MN_AGENT_CPUS:-}" ] || [ "$NCPU" -lt $((K * (R + TH))) ]; then
    if [ "$NCPU" -gt 2 ]; then
        rc=${MN_RANK_CPUS:-0-$((NCPU - 2))} ac=${MN_AGENT_CPUS:-$((NCPU - 1))}
    elif [ "$NCPU" = 2 ]; then
        rc=${MN_RANK_CPUS:-0} ac=${MN_AGENT_CPUS:-1}
    else
        rc=${MN_RANK_CPUS:-0} ac=${MN_AGENT_CPUS:-0}
    fi
    PARTITION="shared: every node's ranks on $rc, every agent on $ac"
    i=0; while [ $i -lt "$K" ]; do echo "$rc" > "$T/rcpus$i"; echo "$ac" > "$T/acpus$i"; i=$((i + 1)); done
else
    PARTITION="dedicated: node i's ranks on cores i*(R+T)..+R-1, its agent on the next T"
    i=0; while [ $i -lt "$K" ]; do
        f=$((i * (R + TH)))
        echo "$f-$((f + R - 1))" > "$T/rcpus$i"; echo "$((f + R))-$((f + R + TH - 1))" > "$T/acpus$i"
        i=$((i + 1))
    done
fi

"$OFFCORE" keygen > "$T/key" && chmod 600 "$T/key" || die "keygen"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The agents, one per node, for the whole run (idle, they sleep).
i=0
while [ $i -lt "$K" ]; do
    me="tcp:198.18.72.$((i + 1)):$PORT"
    peers=$(printf '%s\n' $PEERS | grep -vx "$me" | paste -sd, -)
    ip netns exec "$(node_ns $i)" env UCX_NET_DEVICES="$(data_dev $i)" "$T/enter" $i \
        taskset -c "$(cat "$T/acpus$i")" "$OFFCORED" --cluster-key "$T/key" --threads "$TH" \
        --listen "unix:$T/n$i.sock,$me" --peers "$peers" \
        --metrics "198.18.73.$((i + 1)):9464" > "$T/agent$i.log" 2>&1 &
    PIDS+=("$!")
    i=$((i + 1))
done
i=0
while [ $i -lt "$K" ]; do
    w=0
    until grep -qs ready "$T/agent$i.log"; do
        w=$((w + 1)); [ $w -gt 400 ] && die "agent of node $i not ready"
        kill -0 "${PIDS[$i]}" 2>/dev/null || die "agent of node $i exited"
        sleep 0.05
    done
    i=$((i + 1))
done

args_of() {
    case $1 in
    histogram) echo "--updates ${MN_UPDATES:-2M} --table 10K" ;;
    index-gather) echo "--requests ${MN_REQUESTS:-1M} --table 10K" ;;
    transpose) echo "--rows ${MN_ROWS:-100K} --degree 16" ;;
    mcproxy) echo "--particles ${MN_PARTICLES:-50K} --cycles 2" ;;
    esac
}
bin_of() {
    case $1 in
    histogram|index-gather) echo "$B/apps/$1" ;;
    *) echo "$B/apps/$1/$1" ;;
    esac
}
. "$(dirname "$0")/stats-lib.sh" || exit 2

# wire: "packets bytes" the nodes have put on the data bridge so far
wire() {
    ip netns exec "$SW" sh -c 'cat /sys/class/net/ocmw*/statistics/rx_packets /sys/class/net/ocmw*/statistics/rx_bytes' |
        awk -v k="$K" '{ if (NR <= k) p += $1; else b += $1 } END { printf "%d %d\n", p, b }'
}
# peer WHAT: offcore_peer_WHAT_total{dir="out"} summed over every agent
peer() {
    local i=0 s=0 v
    while [ $i -lt "$K" ]; do
        v=$(curl -sf --noproxy '*' "http://198.18.73.$((i + 1)):9464/metrics" |
            awk -v k="offcore_peer_$1_total" 'index($1, k "{") == 1 && $1 ~ /dir="out"/ { s += $2 } END { printf "%d\n", s }') ||
            { echo "run-multinode.sh: metrics of agent $i" >&2; return 1; }
        s=$((s + v)); i=$((i + 1))
    done
    echo "$s"
}

JOB=100
HOSTS=$(i=0; while [ $i -lt "$K" ]; do printf '198.18.73.%d:%d\n' $((i + 1)) "$R"; i=$((i + 1)); done | paste -sd, -)
PASS_ENV=""
for v in OC_BUNDLE_SIZE OC_AGENT_MODE OC_AGENT_CHANNEL; do
    [ -n "${!v:-}" ] && PASS_ENV="$PASS_ENV -x $v"
done
failed=0
# run APP PLACEMENT [ENV...]: one run; sets out, rate, msgs, pkts, bytes, bund
run() {
    local app=$1 pl=$2 w0 w1 pb0 pB0
    shift 2
    JOB=$((JOB + 1))
    export OC_JOB=$JOB OC_PLACEMENT=$pl
    OC_JOB_KEY=$("$OFFCORE" job-key --job $JOB --cluster-key "$T/key") || die "job-key"
    export OC_JOB_KEY
    w0=$(wire) || die "wire counters"
    if [ "$pl" = agent ]; then
        pb0=$(peer bundles) && pB0=$(peer bytes) || die "agents' metrics"
    fi
    # shellcheck disable=SC2046,SC2086
    # in the background: a signal's trap runs at once, not after mpirun
    env "$@" timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none \
          --host "$HOSTS" -np $((K * R)) --mca plm_rsh_agent "$T/rsh" \
          --mca plm_rsh_no_tree_spawn 1 --mca routed direct -x PMIX_MCA_gds=hash \
          --mca oob_tcp_if_include 198.18.73.0/24 --mca pml ob1 --mca btl self,tcp \
          --mca btl_tcp_if_include 198.18.73.0/24 \
          -x OC_PLACEMENT -x OC_JOB -x OC_JOB_KEY -x UCX_TLS -x OC_APP_CPU -x MN_SAME_BOOT_ID $PASS_ENV \
          "$T/on-node" $(bin_of "$app") $(args_of "$app") > "$T/run.out" 2> "$T/run.log" &
    RUN=$!
    wait $RUN
    local st=$?
    RUN=""
    out=$(grep '"app":' "$T/run.out")
    printf '%s\n' "$out"
    w1=$(wire) || die "wire counters"
    pkts=$(( ${w1% *} - ${w0% *} )) bytes=$(( ${w1#* } - ${w0#* } ))
    rate=$(field "$out" rate) msgs=$(field "$out" msgs_sent)
    if [ "$pl" = agent ]; then
        # the agents count a bundle when they send it, and the job ended
        # when all it sent was delivered: the counts are whole
        bund=$(peer bundles) || die "agents' metrics"
        pbytes=$(peer bytes) || die "agents' metrics"
        bund=$((bund - pb0)) pbytes=$((pbytes - pB0))
        # every agent reached every other over tcp: else the wire
        # counts would measure nothing
        local i=0 n
        while [ $i -lt "$K" ]; do
            n=$(curl -sf --noproxy '*' "http://198.18.73.$((i + 1)):9464/metrics" |
                grep -c '^offcore_peer_transport{.*class="tcp"} 1')
            [ "$n" = $((K - 1)) ] || {
                echo "run-multinode.sh: $app agent: agent $i reached $n of its $((K - 1)) peers over tcp" >&2
                st=1; }
            i=$((i + 1))
        done
        from="agents' peer counters"
    else
        bund=$(field "$out" bundles_sent) pbytes=$(field "$out" wire_bytes_sent)
        from="ranks' counters, every destination"
        # inline: the ranks reached the other nodes over tcp and their own over sm
        local tcp sm
        tcp=$(field "$out" conn_tcp) sm=$(field "$out" conn_sm)
        [ "${tcp:-0}" -gt 0 ] || { echo "run-multinode.sh: $app inline: no rank connection over tcp" >&2; st=1; }
        [ "$WITHIN" = tcp ] || [ "$R" = 1 ] || [ "${sm:-0}" -gt 0 ] ||
            { echo "run-multinode.sh: $app inline: no rank connection over shared memory within a node" >&2; st=1; }
    fi
    # what crossed between the nodes crossed the emulated wire, and all
    # the agents sent each other is in it
    if [ "$pkts" -le 0 ]; then
        echo "run-multinode.sh: $app ($pl): no packet crossed the data bridge" >&2; st=1
    elif [ "$pl" = agent ] && [ "$bytes" -lt "$pbytes" ]; then
        echo "run-multinode.sh: $app agent: the agents sent their peers $pbytes bytes, the wire carried $bytes" >&2; st=1
    fi
    if [ $st -ne 0 ] || [ -z "$rate" ] || [ -z "$msgs" ] || [ "$msgs" = 0 ] ||
       ! printf '%s' "$out" | grep -q '"verified":true'; then
        echo "run-multinode.sh: $app ($pl) failed (exit $st) or did not verify" >&2
        tail -20 "$T/run.log" >&2
        failed=$((failed + 1)); rate=""
        return 1
    fi
    ppm=$(awk -v p="$pkts" -v m="$msgs" 'BEGIN { printf "%.6g\n", p / m }')
    bpm=$(awk -v p="$bytes" -v m="$msgs" 'BEGIN { printf "%.6g\n", p / m }')
    bsz=$(awk -v b="$pbytes" -v n="$bund" 'BEGIN { if (n > 0) printf "%.6g\n", b / n; else print "null" }')
}

for app in $APPS; do
    # per placement: every run's rate, packets and bytes per message, bundle size
    declare -A RS=() PS=() BS=() ZS=() OK=([inline]=1 [agent]=1)
    k=0
    while [ $k -lt "$REPEATS" ]; do
        for pl in inline agent; do
            if run "$app" "$pl" OC_APP_CPU=0; then
                printf '{"bench":"multinode-run","app":"%s","placement":"%s","repeat":%d,"rate":%s,"msgs":%s,"wire_pkts":%d,"wire_bytes":%d,"wire_pkts_per_msg":%s,"wire_bytes_per_msg":%s,"bundles":%s,"bundle_bytes":%s}\n' \
                    "$app" "$pl" "$k" "$rate" "$msgs" "$pkts" "$bytes" "$ppm" "$bpm" "$bund" "$bsz"
                RS[$pl]="${RS[$pl]:-} $rate" PS[$pl]="${PS[$pl]:-} $ppm"
                BS[$pl]="${BS[$pl]:-} $bsz" ZS[$pl]="${ZS[$pl]:-} $bpm"
            else
                OK[$pl]=0
            fi
        done
        k=$((k + 1))
    done
    m_inline=$(median "${RS[inline]:-}") p_in=$(median "${PS[inline]:-}")
    for pl in inline agent; do
        rs=${RS[$pl]:-} ps=${PS[$pl]:-} bs=${BS[$pl]:-} zs=${ZS[$pl]:-} ok=${OK[$pl]}
        m=$(median "$rs") pm=$(median "$ps")
        [ "$pl" = agent ] && from="agents' peer counters" || from="ranks' counters, every destination"
        printf '{"bench":"multinode","app":"%s","placement":"%s","nodes":%d,"ranks_per_node":%d,"rate":%s,"wire_pkts_per_msg":%s,"wire_bundle_bytes":%s,"verified":%s,"threads":%d,"rates":[%s],"spread":%s,"ratio_over_inline":%s,"wire_pkts_per_msg_runs":[%s],"inline_pkts_over_this":%s,"wire_bytes_per_msg":%s,"bundle_bytes_from":"%s","within":"%s","cores":"%s","rank_cpus":"%s","agent_cpus":"%s"}\n' \
            "$app" "$pl" "$K" "$R" "$m" "$pm" "$(median "$bs")" \
            "$([ "$ok" = 1 ] && echo true || echo false)" "$TH" "$(list "$rs")" "$(spread "$rs")" \
            "$(ratio "$m" "$m_inline")" "$(list "$ps")" "$(ratio "$p_in" "$pm")" "$(median "$zs")" \
            "$from" "$WITHIN" "$PARTITION" "$(cat "$T/rcpus0")" "$(cat "$T/acpus0")"
        if [ "$pl" = agent ] && [ -n "$MINR" ]; then
            q=$(ratio "$p_in" "$pm")
            awk -v q="$q" -v x="$MINR" 'BEGIN { exit !(q != "null" && q + 0 >= x + 0) }' || {
                echo "run-multinode.sh: $app: inline sends $p_in wire packets per message, the agent $pm: $q x, not >= $MINR x" >&2
                failed=$((failed + 1)); }
        fi
    done
done

# The ranks' CPU inside the library per message, one run per app and placement.
if [ "$CPU" = 1 ]; then
    for app in $APPS; do
        for pl in inline agent; do
            run "$app" "$pl" OC_APP_CPU=1 || continue
            printf '{"bench":"multinode-cpu","app":"%s","placement":"%s","nodes":%d,"ranks_per_node":%d,"lib_ns_per_msg":%s,"handler_ns_per_msg":%s,"rate":%s,"clock":"CLOCK_THREAD_CPUTIME_ID around oc_* calls, handlers subtracted"}\n' \
                "$app" "$pl" "$K" "$R" "$(field "$out" lib_ns_per_msg)" "$(field "$out" handler_ns_per_msg)" "$rate"
        done
    done
fi
[ $failed = 0 ] || exit 1
exit 0
