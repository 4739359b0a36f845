#!/bin/bash
# hostile-dp-test.sh BUILD_DIR CASE — offcore-dp, offcore-nvmf, offcored
# and the offcore CLI under hostile and careless use (issue #21).
# Exit 0 PASS, 1 FAIL, 77 SKIP (the dp- cases need root and network
# namespaces).  Every daemon runs under a deadline and is killed on exit.
#
# The dp- cases run offcore-dp between namespaces A (10.78.0.1) and B
# (10.78.0.2) joined only through it (namespace D), and check after each
# assault that it still answers and still forwards (ping A -> B).
# Cases (the findings of issue #21 each covers in brackets):
#   dp-ctlnul  control lines holding a NUL byte (the first crashed the
#              daemon), an ESC or a BEL: each answered "error: ...", and
#              offcore-dp forwards on [2]
#   dp-log     offcore dp log shows the levels and sets them live; a bad
#              spec is refused and changes nothing
#   dp-sighup  SIGHUP twice: offcore-dp stays up and forwards [5]
#   sighup     SIGHUP twice to offcored and to offcore-nvmf: both stay up
#              and accept connections [5]
#   dp-fifo    rules load of a FIFO is answered at once (refused), the
#              control socket and forwarding go on [6]
#   fifo       offcore-dp --config FIFO --check, a `rules FIFO` line, and
#              offcore-nvmf --config FIFO --check: each refused in < 5 s [6]
#   dp-devzero rules load /dev/zero: refused, the daemon's peak RSS grows
#              by less than 16 MiB (it grew to 2.1 GB) [7]
#   devzero    --config /dev/zero and `rules /dev/zero` refused at once,
#              the checker's peak RSS under 64 MiB [7]
#   dp-leak    rules load of a file of secret lines (and of a link to it)
#              answers with line numbers and reasons, never a word of the
#              file [8]
#   dp-nofile  offcore-dp under ulimit -n 64 with /metrics on: forwards,
#              answers, loads rules and sheds a flood of 200 idle /metrics
#              connections; a configuration needing more descriptors than
#              64 refuses to start naming the limit
#   escape     ESC, BEL and 0xff reach no terminal or log raw: the CLI's
#              unknown command, the daemons' unknown arguments, offcore-dp
#              and offcore-nvmf config errors,
#              and an NVMe host NQN under allow-any-host (target log,
#              /metrics, offcore nvmf connections) [9]
# Measured figures are printed as JSON lines ("measure": ...).
set -u -o pipefail
B=${1:?usage: hostile-dp-test.sh BUILD_DIR CASE}
CASE=${2:?case}
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
DP=$B/src/dp/offcore-dp
NVMF=$B/src/nvmf/offcore-nvmf
OFFCORED=$B/src/agent/offcored
OFFCORE=$B/src/tools/offcore
tmp=$(mktemp -d /tmp/oc-hdp-XXXXXX)
. "$HERE/lib.sh"
dppid=
cleanup_extra() { # SIGTERM, then SIGKILL: a daemon stuck in open() ignores TERM
    [ -n "$dppid" ] || return 0
    kill "$dppid" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        running "$dppid" || break
        sleep 0.1
    done
    { kill -9 "$dppid"; wait "$dppid"; } 2>/dev/null
}
cleanup_on_exit
fail_logs() {
    for f in "$tmp"/*.log; do
        [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }
    done
}
command -v python3 > /dev/null || skip "no python3"

# running PID: alive and not a zombie (a dead child stays one until waited)
running() {
    [ -r "/proc/$1/status" ] && ! grep -q '^State:.*Z' "/proc/$1/status"
}
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# raw REQUEST-BYTES: send stdin to the dp control socket, print the answer
raw() {
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.stdin.buffer.read())
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
sys.stdout.buffer.write(out)' "$tmp/dp.sock"
}
ctl() { timeout 10 "$OFFCORE" dp --control "unix:$tmp/dp.sock" "$@"; }
# a command's peak RSS in KiB and its exit status, as "KIB RC"
peak() {
    python3 -c '
import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, timeout=20).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)' "$@"
}
# no raw ESC, BEL, 0xff or other control byte (but newline) in FILE
clean() {
    ! LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177-\377]')" "$1"
}

# --- offcore-dp between namespaces A and B (root)
setup_dp() {
    [ "$(id -u)" = 0 ] || skip "needs root"
    for t in ip ping; do
        command -v $t > /dev/null || skip "$t is not installed"
    done
    local id=$$
    A=ochA$id Bn=ochB$id D=ochD$id
    ip netns add $A 2>/dev/null || skip "cannot create network namespaces"
    cleanup_on_exit $A $Bn $D
    ip netns add $Bn && ip netns add $D || fail "netns"
    ip link add ocha0 netns $A type veth peer name ocha1 netns $D || fail "veth A"
    ip link add ochb0 netns $Bn type veth peer name ochb1 netns $D || fail "veth B"
    ip -n $A addr add 10.78.0.1/24 dev ocha0
    ip -n $Bn addr add 10.78.0.2/24 dev ochb0
    for x in "$A ocha0" "$Bn ochb0" "$D ocha1" "$D ochb1"; do
        set -- $x
        ip -n $1 link set lo up
        ip -n $1 link set $2 up
    done
    cat > "$tmp/dp.conf" <<EOF
control unix:$tmp/dp.sock
metrics ${DP_METRICS:-off}
attach t0 host=ocha1 wire=ochb1
EOF
}
start_dp() { # start_dp [CONFIG]: under $DP_NOFILE descriptors when set
    ( [ -n "${DP_NOFILE:-}" ] && ulimit -n "$DP_NOFILE"
      exec ip netns exec $D env OC_LOG=dp:info "$DP" --config "${1:-$tmp/dp.conf}" \
      ) >> "$tmp/dp.log" 2>&1 &
    dppid=$!
    wait_for 30 ctl ping || fail "offcore-dp did not come up"
    wait_for 10 forwards || fail "no forwarding through offcore-dp"
}
forwards() { ip netns exec $A ping -c 1 -W 2 10.78.0.2 > /dev/null 2>&1; }
still_up() { # still_up WHAT: offcore-dp alive, answering and forwarding
    running "$dppid" || fail "offcore-dp died after $1"
    ctl ping > /dev/null || fail "offcore-dp does not answer after $1"
    forwards || fail "offcore-dp does not forward after $1"
}

# --- offcore-nvmf on loopback with one small namespace
start_nvmf() {
    NPORT=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import nvmf_target as t; print(t.free_port(24520))' "$HERE/../nvmf")
    MPORT=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import nvmf_target as t; print(t.free_port(24620))' "$HERE/../nvmf")
    cat > "$tmp/nvmf.conf" <<EOF
listen 127.0.0.1:$NPORT
metrics 127.0.0.1:$MPORT
subsystem nqn.2026-01.io.offcore:hostile
  allow-any-host
  namespace 1 $tmp/ns1.img size=1M
EOF
    OC_LOG=nvmf:info spawn "$tmp/nvmf.log" "$NVMF" --config "$tmp/nvmf.conf"
    NVPID=$SPAWNED
    for _ in $(seq 200); do
        grep -q "listening on" "$tmp/nvmf.log" && return 0
        running $NVPID || fail "offcore-nvmf did not start"
        sleep 0.05
    done
    fail "offcore-nvmf not listening in 10 s"
}
# spawn LOG CMD...: CMD in the background, output to LOG, killed on exit;
# its pid in SPAWNED
spawn() {
    local log=$1
    shift
    "$@" > "$log" 2>&1 &
    SPAWNED=$!
    echo $SPAWNED >> "$tmp/bg.pids"
}
tcp_ok() { python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2).close()' "$1"; }

case "$CASE" in
dp-ctlnul)
    setup_dp
    start_dp
    n=0
    for req in '\0\n' 'ping\0\n' '\033[2J\033]0;x\007ping\n' 'rules add id=1 action=deny\a\n'; do
        printf "$req" | raw > "$tmp/ans" 2>&1
        n=$((n + 1))
        grep -q "^error: " "$tmp/ans" ||
            { cat "$tmp/ans"; fail "request $n: no error answer"; }
        clean "$tmp/ans" || fail "request $n: the answer echoes control bytes"
        still_up "request $n"
    done
    grep -q "control request refused: NUL byte" "$tmp/dp.log" ||
        fail "the refusal is not logged"
    clean "$tmp/dp.log" || fail "raw control bytes in the log"
    echo "{\"measure\":\"dp-ctlnul\",\"requests\":$n,\"alive\":true}"
    ok "NUL, ESC and BEL lines refused; offcore-dp forwards on"
    ;;
dp-log)
    # the log levels changed while it runs (issue 28: ovs-appctl vlog/set)
    setup_dp
    start_dp
    ctl log > "$tmp/ans" 2>&1 || { cat "$tmp/ans"; fail "offcore dp log"; }
    grep -q "dp:info" "$tmp/ans" || { cat "$tmp/ans"; fail "levels not shown"; }
    ctl log dp:debug,pkt:info > "$tmp/ans" 2>&1 || { cat "$tmp/ans"; fail "log dp:debug"; }
    grep -q "dp:debug" "$tmp/ans" && grep -q "pkt:info" "$tmp/ans" ||
        { cat "$tmp/ans"; fail "levels not changed"; }
    grep -q "log levels set to dp:debug,pkt:info" "$tmp/dp.log" ||
        fail "the change is not logged"
    ctl log nosuch:loud > "$tmp/ans" 2>&1 && fail "a bad spec was taken"
    grep -q "log takes a level spec" "$tmp/ans" || { cat "$tmp/ans"; fail "no reason"; }
    ctl log > "$tmp/ans" 2>&1
    grep -q "dp:debug" "$tmp/ans" || { cat "$tmp/ans"; fail "a bad spec changed the levels"; }
    still_up "log level changes"
    ok "log levels shown and set live; a bad spec refused"
    ;;
dp-sighup)
    setup_dp
    start_dp
    # no wait needed: a signal that kills is delivered before the daemon
    # can answer still_up's ping, and wait below sees any death by it
    kill -HUP "$dppid"
    still_up "SIGHUP"
    kill -HUP "$dppid"
    still_up "a second SIGHUP"
    kill -TERM "$dppid"
    wait "$dppid"; rc=$?
    dppid=
    [ $rc -eq 0 ] || fail "exit $rc on SIGTERM after SIGHUP"
    ok "SIGHUP ignored, SIGTERM still stops it (0)"
    ;;
sighup)
    "$OFFCORE" keygen > "$tmp/cluster.key" && chmod 600 "$tmp/cluster.key" ||
        fail "offcore keygen"
    spawn "$tmp/agent.log" "$OFFCORED" --listen "unix:$tmp/agent.sock" \
        --metrics off --cluster-key "$tmp/cluster.key"
    AGPID=$SPAWNED
    wait_for 10 grep -qw ready "$tmp/agent.log" || fail "offcored not ready"
    start_nvmf
    for sig in 1 2; do # a death by it shows in the exit statuses below
        kill -HUP $AGPID $NVPID
        running $AGPID || fail "offcored died on SIGHUP $sig"
        running $NVPID || fail "offcore-nvmf died on SIGHUP $sig"
    done
    python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' \
        "$tmp/agent.sock" || fail "offcored does not accept after SIGHUP"
    tcp_ok $NPORT || fail "offcore-nvmf does not accept after SIGHUP"
    kill -TERM $AGPID $NVPID
    wait $AGPID; a=$?
    wait $NVPID; v=$?
    [ $a -eq 0 ] && [ $v -eq 0 ] || fail "exit $a / $v on SIGTERM after SIGHUP"
    ok "offcored and offcore-nvmf ignore SIGHUP"
    ;;
dp-fifo)
    setup_dp
    start_dp
    mkfifo "$tmp/rules.fifo"
    t0=$(date +%s%N)
    ctl rules load "$tmp/rules.fifo" > "$tmp/ans" 2>&1; rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "{\"measure\":\"dp-fifo\",\"answer_ms\":$ms,\"rc\":$rc}"
    [ $rc -ne 124 ] || fail "rules load of a FIFO hung the control socket"
    grep -q "not a regular file (a FIFO)" "$tmp/ans" ||
        { cat "$tmp/ans"; fail "no named refusal"; }
    still_up "rules load FIFO"
    ctl rules add id=5 action=count proto=icmp > /dev/null ||
        fail "rules add after the FIFO"
    ok "rules load FIFO refused in $ms ms"
    ;;
fifo)
    mkfifo "$tmp/c.fifo"
    printf 'attach t0 host=lo wire=lo\nrules %s\n' "$tmp/c.fifo" > "$tmp/rules-fifo.conf"
    for cmd in "$DP --config $tmp/c.fifo --check" \
               "$DP --config $tmp/rules-fifo.conf --check" \
               "$NVMF --config $tmp/c.fifo --check"; do
        timeout 5 $cmd > "$tmp/out" 2>&1; rc=$?
        [ $rc -ne 124 ] || fail "'$cmd' waited on the FIFO"
        [ $rc -ne 0 ] && grep -q "not a regular file (a FIFO)" "$tmp/out" ||
            { cat "$tmp/out"; fail "'$cmd': exit $rc without a named refusal"; }
    done
    ok "FIFOs refused at once by both daemons"
    ;;
dp-devzero)
    setup_dp
    start_dp
    h0=$(hwm_kib "$dppid")
    ctl rules load /dev/zero > "$tmp/ans" 2>&1; rc=$?
    h1=$(hwm_kib "$dppid")
    echo "{\"measure\":\"dp-devzero\",\"hwm_before_kib\":$h0,\"hwm_after_kib\":$h1,\"rc\":$rc}"
    [ $rc -ne 124 ] || fail "rules load /dev/zero hung"
    grep -q "not a regular file (a character device)" "$tmp/ans" ||
        { cat "$tmp/ans"; fail "no named refusal"; }
    [ $((h1 - h0)) -lt 16384 ] || fail "peak RSS grew by $((h1 - h0)) KiB"
    still_up "rules load /dev/zero"
    ok "rules load /dev/zero refused; peak RSS $h0 -> $h1 KiB"
    ;;
devzero)
    printf 'attach t0 host=lo wire=lo\nrules /dev/zero\n' > "$tmp/rules-zero.conf"
    for cfg in /dev/zero "$tmp/rules-zero.conf"; do
        set -- $(peak timeout 20 "$DP" --config "$cfg" --check)
        echo "{\"measure\":\"devzero\",\"config\":\"$cfg\",\"peak_rss_kib\":$1,\"rc\":$2}"
        [ "$2" = 2 ] || fail "--config $cfg: exit $2 (want 2)"
        [ "$1" -lt 65536 ] || fail "--config $cfg: peak RSS $1 KiB"
    done
    out=$("$DP" --config /dev/zero --check 2>&1) # exits 2, checked above
    grep "not a regular file" <<<"$out" >/dev/null ||
        fail "--config /dev/zero: no named refusal: $out"
    ok "/dev/zero refused as config and as rules file"
    ;;
dp-leak)
    setup_dp
    start_dp
    for i in 1 2 3; do echo "root:s3cret-$i-\$6\$salt:19000:0:99999:7:::"; done > "$tmp/secret"
    echo "PASSWORD=s3cret-4" >> "$tmp/secret"
    echo "id=1 action=allow dport=s3cret-5" >> "$tmp/secret"
    chmod 600 "$tmp/secret"
    ln -s "$tmp/secret" "$tmp/link.rules"
    for f in "$tmp/secret" "$tmp/link.rules"; do
        printf 'rules load %s\n' "$f" | raw > "$tmp/ans"
        grep -q "^error: 5 error(s)" "$tmp/ans" || { cat "$tmp/ans"; fail "$f: not refused"; }
        for l in 1 2 3 4 5; do
            grep -q ":$l: " "$tmp/ans" || { cat "$tmp/ans"; fail "line $l not named"; }
        done
        if grep -q "s3cret\|PASSWORD\|salt" "$tmp/ans"; then
            cat "$tmp/ans"; fail "the answer quotes the file"
        fi
    done
    ! grep -q "s3cret" "$tmp/dp.log" || fail "the log quotes the file"
    printf 'attach t0 host=lo wire=lo\nrules %s\n' "$tmp/secret" > "$tmp/leak.conf"
    "$DP" --config "$tmp/leak.conf" --check > "$tmp/out" 2>&1
    ! grep -q "s3cret" "$tmp/out" || { cat "$tmp/out"; fail "--check quotes the rules file"; }
    still_up "rules load of a secret file"
    ok "rule file errors name lines and reasons only"
    ;;
dp-nofile)
    DP_METRICS=127.0.0.1:19464 setup_dp
    DP_NOFILE=64 start_dp
    ip netns exec $D python3 -c '
import socket, sys, time
held = []
for i in range(200):
    try:
        held.append(socket.create_connection(("127.0.0.1", 19464), 1))
    except OSError:
        pass
    if i == 64: # past the limit: the flood is on
        open(sys.argv[1], "w").close()
time.sleep(8)' "$tmp/flooding" &
    fl=$!
    wait_for 30 test -e "$tmp/flooding" || fail "the /metrics flood did not start"
    nfd=$(ls /proc/$dppid/fd | wc -l)
    still_up "a /metrics flood under ulimit -n 64"
    printf 'id=1 action=count proto=icmp\n' > "$tmp/ok.rules"
    ctl rules load "$tmp/ok.rules" > /dev/null || fail "rules load under the flood"
    ctl stat > /dev/null || fail "stat under the flood"
    wait $fl
    ip netns exec $D curl -sf -m 5 http://127.0.0.1:19464/metrics > /dev/null ||
        fail "/metrics after the flood"
    echo "{\"measure\":\"dp-nofile\",\"fds_under_flood\":$nfd,\"limit\":64}"
    kill -TERM "$dppid"; wait "$dppid"; dppid=
    # more queues than 64 descriptors allow: refused, naming the limit
    for i in 0 1 2 3 4 5 6 7 8; do
        ip -n $D link add ochx${i}a type veth peer name ochx${i}b
        ip -n $D link set ochx${i}a up; ip -n $D link set ochx${i}b up
    done
    { echo "control unix:$tmp/dp2.sock"
      for i in 0 1 2 3 4 5 6 7; do echo "attach x$i host=ochx${i}a wire=ochx${i}b"; done
    } > "$tmp/many.conf"
    ( ulimit -n 64; exec timeout 60 ip netns exec $D "$DP" --config "$tmp/many.conf" ) \
        > "$tmp/many.log" 2>&1; rc=$?
    [ $rc -eq 1 ] || { cat "$tmp/many.log"; fail "16 ports under ulimit -n 64: exit $rc"; }
    grep -q "the descriptor limit is reached" "$tmp/many.log" ||
        { cat "$tmp/many.log"; fail "the refusal does not name the limit"; }
    ok "ulimit -n 64: forwards and answers under a flood; too many ports named"
    ;;
escape)
    "$OFFCORE" "$(printf '\033[31mfoo\007\377')" > "$tmp/cli.out" 2>&1
    grep -q "unknown command '\\\\x1b\[31mfoo\\\\x07\\\\xff'" "$tmp/cli.out" ||
        { cat -v "$tmp/cli.out"; fail "CLI: unknown command not escaped"; }
    clean "$tmp/cli.out" || fail "CLI: raw control bytes"
    "$DP" "$(printf '\033[2Jx')" > "$tmp/dparg.out" 2>&1
    "$OFFCORED" "$(printf -- '--\033[2Jx')" >> "$tmp/dparg.out" 2>&1
    [ "$(grep -c '\\x1b\[2Jx' "$tmp/dparg.out")" = 2 ] && clean "$tmp/dparg.out" ||
        { cat -v "$tmp/dparg.out"; fail "daemons: unknown arguments not escaped"; }
    printf 'attach t0 host=lo wire=lo\nthr\033[2Jeads 2\xff\n' > "$tmp/esc.conf"
    "$DP" --config "$tmp/esc.conf" --check > "$tmp/dp.out" 2>&1
    grep -q 'thr\\x1b\[2Jeads' "$tmp/dp.out" || { cat -v "$tmp/dp.out"; fail "dp config error"; }
    clean "$tmp/dp.out" || fail "dp config error: raw control bytes"
    printf 'listen 127.0.0.1:1\n\033]0;x\007 on\n' > "$tmp/esc-nvmf.conf"
    "$NVMF" --config "$tmp/esc-nvmf.conf" --check > "$tmp/nvmf.out" 2>&1
    grep -q '\\x1b]0;x\\x07' "$tmp/nvmf.out" || { cat -v "$tmp/nvmf.out"; fail "nvmf config error"; }
    clean "$tmp/nvmf.out" || fail "nvmf config error: raw control bytes"
    # a host picks its NQN: ESC, BEL and 0xff in it under allow-any-host
    start_nvmf
    cat > "$tmp/host.py" <<'EOF'
import sys, time
sys.path.insert(0, sys.argv[1])
import nvmf_client as nc
h = nc.Host(int(sys.argv[2]))
h.icreq()
h.icresp()
# Host.connect() takes a str: the NQN's bytes are built here
nqn = b"nqn.2014-08.org.evil:\x1b]0;pwned\x07\x1b[2J\xff"
sub = b"nqn.2026-01.io.offcore:hostile"
d = bytearray(1024)
d[0:16] = b"\x11" * 16
d[16:18] = b"\xff\xff"
d[256:256 + len(sub)] = sub
d[512:512 + len(nqn)] = nqn
r = h.cmd(h.sqe(0x7F, fct=0x01, sgl_len=1024, sgl_type=0x01,
                cdw={10: 0, 11: 31, 12: 0}), bytes(d))
print("connected" if r["sc"] == 0 else "Connect failed: %#x" % r["sc"], flush=True)
time.sleep(15)
EOF
    spawn "$tmp/host.out" python3 "$tmp/host.py" "$HERE/../nvmf" "$NPORT"
    wait_for 10 grep -q "onnect" "$tmp/host.out" || fail "the host did not connect"
    grep -q "^connected" "$tmp/host.out" || { cat "$tmp/host.out"; fail "Connect refused"; }
    wait_for 10 grep -q "connected to" "$tmp/nvmf.log" || fail "no connect logged"
    "$OFFCORE" nvmf connections --target 127.0.0.1:$MPORT > "$tmp/conns.out" 2>&1 ||
        { cat -v "$tmp/conns.out"; fail "offcore nvmf connections failed (the scrape?)"; }
    grep -q 'evil:\\x1b]0;pwned\\x07\\x1b\[2J\\xff' "$tmp/conns.out" ||
        { cat -v "$tmp/conns.out"; fail "connections: NQN not shown escaped"; }
    clean "$tmp/conns.out" || fail "connections: raw control bytes"
    python3 -c 'import urllib.request, sys; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=5).read())' \
        "http://127.0.0.1:$MPORT/metrics" > "$tmp/metrics.out" || fail "/metrics scrape"
    clean "$tmp/metrics.out" || fail "/metrics: raw control bytes"
    grep -q 'evil:\\x1b' "$tmp/nvmf.log" || fail "target log: NQN not escaped"
    clean "$tmp/nvmf.log" || fail "target log: raw control bytes"
    kill -TERM $NVPID; wait $NVPID
    ok "ESC, BEL and 0xff escaped in the CLI, config errors, log, metrics, listing"
    ;;
*)
    echo "unknown case $CASE"; exit 2 ;;
esac
echo "PASS $CASE"
exit 0
