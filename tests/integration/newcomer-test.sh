#!/bin/bash
# newcomer-test.sh BUILD_DIR CASE — the mistakes of a newcomer's first hour
# (issue 28), each one now answered.  Exit 0 PASS, 1 FAIL, 77 SKIP.  Every
# process runs under a timeout; what is started is killed, by PID, on exit.
#
#   version    offcored, offcore-dp, offcore-nvmf and offcore answer
#              --version with exit 0 and one version string, which the
#              agent's /metrics carries in offcore_build_info
#   otheruser  an agent started by root serves a rank run as nobody (its
#              socket is 0666 in a 0755 directory made for it; the job
#              key is the gate); with OC_AGENT_SOCKET_MODE=0600 the rank
#              and offcore doctor say EACCES, not "no agent" or "stale"
#   ctlversion a control frame of another protocol version gets an ERROR
#              framed in that version naming both; the agent logs both
#   envtypo    a misspelt OC_PLACMENT is said (did you mean OC_PLACEMENT?)
#              by the library; offcored leaves the library's OC_AGENT_MODE
#              alone and names its own misspelling
#   keys       inline jobs beside an agent print no key error; a
#              malformed OC_JOB_KEY is called malformed, not unset;
#              offcore keygen --out writes 0600 and never overwrites
#   peerkey    a peer agent with another cluster key shows in offcore
#              stat and fails offcore doctor, not only in the log
#   cli        exit codes and options: offcore config --bogus exits 2,
#              offcore-dp and offcore-nvmf refuse a bad config with 2,
#              offcore-dp --check refuses metrics port 99999; the shipped
#              example nvmf.conf passes --check; bash completion works
set -u -o pipefail
B=${1:?usage: newcomer-test.sh BUILD_DIR CASE}
CASE=${2:?case}
B=$(cd "$B" && pwd)
OFFCORED=$B/src/agent/offcored
OFFCORE=$B/src/tools/offcore
DP=$B/src/dp/offcore-dp
NVMF=$B/src/nvmf/offcore-nvmf
TR=$B/tests/integration/test_runtime
T=$(mktemp -d /tmp/oc-newcomer-XXXXXX)
chmod 755 "$T"   # other users reach the agent's socket directory below
PIDS=()

cleanup() {
    exec 2>/dev/null
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() {
    echo "FAIL $CASE: $*"
    [ -f "$T/agent.log" ] && sed 's/^/  agent: /' "$T/agent.log" | tail -20
    exit 1
}
pass() { echo "PASS $CASE"; exit 0; }

export UCX_TLS=${UCX_TLS:-sm,self}
"$OFFCORE" keygen --out "$T/cluster.key" || fail "offcore keygen --out"

start_agent() { # start_agent SOCKET [args]: waits until it is ready
    local sock=$1; shift
    env ${AGENT_ENV:-} OC_LOG=agent:info "$OFFCORED" --listen "unix:$sock" \
        --cluster-key "$T/cluster.key" --metrics "${METRICS:-off}" "$@" \
        > "$T/agent.log" 2>&1 &
    AGENT=$!
    PIDS+=("$AGENT")
    local end=$(($(date +%s) + 10))
    until grep -qw "ready" "$T/agent.log"; do
        kill -0 "$AGENT" 2>/dev/null || fail "agent died at start"
        [ "$(date +%s)" -lt $end ] || fail "agent not ready in 10 s"
        sleep 0.05
    done
}

job_env() { # job_env SOCKET JOB
    echo "OC_PLACEMENT=agent OC_AGENT=unix:$1 OC_JOB=$2" \
         "OC_JOB_KEY=$("$OFFCORE" job-key --job "$2" --cluster-key "$T/cluster.key")"
}

as_nobody() {
    setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}

case "$CASE" in
version)
    want=$("$OFFCORE" version) || fail "offcore version"
    v=${want#offcore }
    [ -n "$v" ] && [ "$v" != "$want" ] || fail "offcore version said '$want'"
    for b in "$OFFCORED" "$DP" "$NVMF" "$OFFCORE"; do
        n=$(basename "$b")
        out=$(timeout 10 "$b" --version) || fail "$n --version exits $?"
        [ "$out" = "$n $v" ] || fail "$n --version says '$out', want '$n $v'"
        timeout 10 "$b" --version -v | grep "compiler:" >/dev/null ||
            fail "$n --version -v has no build details"
    done
    "$OFFCORE" info | grep "control protocol" >/dev/null || fail "offcore info"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    METRICS=127.0.0.1:$port start_agent "$T/agent.sock"
    curl -sf "http://127.0.0.1:$port/metrics" > "$T/metrics" ||
        fail "no /metrics on $port"
    grep -qx "offcore_build_info{version=\"$v\"} 1" "$T/metrics" ||
        { grep build_info "$T/metrics"; fail "offcore_build_info is not $v"; }
    grep -q "offcore_agent_info{.*version=\"$v\"" "$T/metrics" ||
        fail "offcore_agent_info does not carry $v"
    pass ;;
otheruser)
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (runs a rank as nobody)"; exit 77; }
    command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
    as_nobody test -x "$TR" ||
        { echo "SKIP: nobody cannot run $TR (a private build tree)"; exit 77; }
    # UCX's shared-memory segments are owner-only: a rank of another user
    # reaches the agent's worker over tcp (or cma), which the agent offers
    # by default (here: named, on lo); the rank leaves sysv/posix out
    # itself (transport.h, oc__tr_context_create_xuser)
    export UCX_NET_DEVICES=lo
    AGENT_ENV="UCX_TLS=sm,self,tcp"
    # the directory does not exist: the agent makes it (0755)
    start_agent "$T/run/agent.sock"
    [ "$(stat -c %a "$T/run")" = 755 ] || fail "socket dir mode $(stat -c %a "$T/run")"
    [ "$(stat -c %a "$T/run/agent.sock")" = 666 ] ||
        fail "socket mode $(stat -c %a "$T/run/agent.sock")"
    env $(job_env "$T/run/agent.sock" 41) OC_LOG=runtime:info,transport:info \
        timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        "$TR" fixed 2 > "$T/out" 2>&1 || { cat "$T/out"; fail "a job of nobody through root's agent"; }
    grep -q "placement agent" "$T/out" ||
        { cat "$T/out"; fail "the job of nobody did not use the agent"; }
    grep -q "the agent runs as another user: UCX_TLS cma,self,tcp" "$T/out" ||
        { cat "$T/out"; fail "the rank did not leave UCX's sysv/posix out"; }
    # a plain inline job of nobody (auto, no key) keeps UCX's shared memory
    OC_AGENT=unix:$T/run/agent.sock OC_LOG=transport:info timeout 60 \
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        "$TR" fixed 2 > "$T/out" 2>&1 || { cat "$T/out"; fail "nobody's inline job"; }
    grep -q "runs as another user" "$T/out" &&
        { cat "$T/out"; fail "an inline job without a key left shared memory out"; }
    kill "$AGENT"; wait "$AGENT" 2>/dev/null
    # a site that closes the socket: EACCES is said as EACCES
    OC_AGENT_SOCKET_MODE=0600 start_agent "$T/run/agent.sock"
    env $(job_env "$T/run/agent.sock" 42) timeout 60 \
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        "$TR" fixed 1 > "$T/out" 2>&1 && fail "a 0600 socket let nobody in"
    grep -q "refuses this user (uid [0-9]*): EACCES" "$T/out" ||
        { cat "$T/out"; fail "the rank does not say EACCES"; }
    grep -q "no agent answers" "$T/out" &&
        { cat "$T/out"; fail "the rank still says no agent answers"; }
    OC_AGENT=unix:$T/run/agent.sock timeout 60 \
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        "$OFFCORE" doctor > "$T/doctor" 2>&1
    grep -q "EACCES" "$T/doctor" || { cat "$T/doctor"; fail "doctor does not say EACCES"; }
    grep -qi "stale" "$T/doctor" && { cat "$T/doctor"; fail "doctor calls it stale"; }
    OC_AGENT_SOCKET_MODE=888 timeout 10 "$OFFCORED" --listen "unix:$T/x.sock" \
        --cluster-key "$T/cluster.key" --metrics off > "$T/out" 2>&1 &&
        fail "OC_AGENT_SOCKET_MODE=888 accepted"
    grep -q "OC_AGENT_SOCKET_MODE '888'" "$T/out" || { cat "$T/out"; fail "no clear error"; }
    pass ;;
ctlversion)
    start_agent "$T/agent.sock"
    timeout 20 python3 - "$T/agent.sock" > "$T/out" 2>&1 <<'PY' || { cat "$T/out"; fail "reply"; }
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
# an older release's HELLO: magic "OCC1", version 2, type 1 (HELLO)
s.sendall(struct.pack("<IHHII", 0x3143434f, 2, 1, 0, 0))
buf = b""
while len(buf) < 16:
    d = s.recv(4096)
    if not d:
        sys.exit("closed without an answer")
    buf += d
magic, ver, typ, plen, _ = struct.unpack("<IHHII", buf[:16])
while len(buf) < 16 + plen:
    buf += s.recv(4096)
status, tlen = struct.unpack("<iI", buf[16:24])
text = buf[24:24 + tlen].decode()
print("version", ver, "type", typ, "status", status, "text", text)
assert magic == 0x3143434f and ver == 2 and typ == 6, "not an ERROR framed in version 2"
assert "version 6" in text and "not 2" in text, text
PY
    grep -q "speaks control protocol version 2; this offcored (.*) speaks 6" \
        "$T/agent.log" || fail "the agent's log does not name both versions"
    pass ;;
envtypo)
    OC_PLACMENT=inline timeout 60 "$TR" fixed 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "job"; }
    grep -q "unknown environment variable OC_PLACMENT, ignored (did you mean OC_PLACEMENT?" \
        "$T/out" || { cat "$T/out"; fail "OC_PLACMENT not reported"; }
    [ "$(grep -c OC_PLACMENT "$T/out")" = 1 ] ||
        { cat "$T/out"; fail "reported more than once (once per process, rank 0)"; }
    OC_AGENT_MODE=stream OC_AGENT_THRAEDS=2 timeout 10 "$OFFCORED" --dump-config \
        > /dev/null 2> "$T/out" || fail "offcored --dump-config"
    grep -q "OC_AGENT_MODE" "$T/out" && { cat "$T/out"; fail "offcored calls OC_AGENT_MODE unknown"; }
    grep -q "OC_AGENT_THRAEDS.*did you mean OC_AGENT_THREADS" "$T/out" ||
        { cat "$T/out"; fail "offcored misses OC_AGENT_THRAEDS"; }
    pass ;;
keys)
    start_agent "$T/agent.sock"
    # OC_PLACEMENT=auto, an agent answers, no key: a plain inline job
    OC_AGENT=unix:$T/agent.sock timeout 60 "$TR" fixed 2 > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "inline job beside an agent"; }
    grep -Eq "error|no key|warn" "$T/out" &&
        { cat "$T/out"; fail "an inline job without a key printed errors"; }
    OC_PLACEMENT=agent OC_AGENT=unix:$T/agent.sock OC_JOB=3 OC_JOB_KEY=xyz \
        timeout 60 "$TR" fixed 1 > "$T/out" 2>&1 && fail "OC_JOB_KEY=xyz accepted"
    grep -q "OC_JOB_KEY is not a valid key" "$T/out" ||
        { cat "$T/out"; fail "a malformed key not called malformed"; }
    grep -q "is not set" "$T/out" && { cat "$T/out"; fail "a set key called unset"; }
    "$OFFCORE" keygen --out "$T/k2" || fail "keygen --out"
    [ "$(stat -c %a "$T/k2")" = 600 ] || fail "key file mode $(stat -c %a "$T/k2")"
    before=$(cat "$T/k2")
    "$OFFCORE" keygen --out "$T/k2" 2> "$T/out" && fail "keygen overwrote a key"
    grep -q "not overwritten" "$T/out" || { cat "$T/out"; fail "no reason given"; }
    [ "$(cat "$T/k2")" = "$before" ] || fail "the key changed"
    "$OFFCORED" --help | grep -- "--version" >/dev/null || fail "offcored --help"
    pass ;;
cli)
    "$OFFCORE" config --bogus > /dev/null 2> "$T/out"
    [ $? = 2 ] || fail "offcore config --bogus does not exit 2"
    grep -q "unexpected argument '--bogus'" "$T/out" || fail "no reason given"
    OC_PLACMENT=inline "$OFFCORE" config > /dev/null 2> "$T/out" ||
        fail "offcore config"
    grep -q "did you mean OC_PLACEMENT" "$T/out" || fail "offcore config misses a typo"
    printf 'attach x host=lo wire=lo\nmetrics 127.0.0.1:99999\n' > "$T/dp.conf"
    timeout 10 "$DP" --check --config "$T/dp.conf" > "$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] || { cat "$T/out"; fail "offcore-dp --check, metrics port 99999: exit $rc"; }
    grep -q "metrics '127.0.0.1:99999'" "$T/out" || { cat "$T/out"; fail "no reason given"; }
    printf 'bogus 1\n' > "$T/nvmf.conf"
    timeout 10 "$NVMF" --config "$T/nvmf.conf" --check > "$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] || { cat "$T/out"; fail "offcore-nvmf, a bad configuration: exit $rc (offcore-dp: 2)"; }
    timeout 10 "$DP" --config "$T/nvmf.conf" --check > "$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] || { cat "$T/out"; fail "offcore-dp, a bad configuration: exit $rc"; }
    for b in "$OFFCORED" "$DP" "$NVMF"; do
        timeout 10 "$b" --no-such-option > /dev/null 2>&1
        rc=$?
        [ $rc = 2 ] || fail "$(basename "$b") --no-such-option: exit $rc, want 2"
    done
    # the example the package ships passes --check (its state directory
    # moved here)
    sed "s|/var/lib/offcore|$T|" "$(dirname "$0")/../../contrib/examples/nvmf.conf" \
        > "$T/example.conf" || fail "contrib/examples/nvmf.conf"
    timeout 30 "$NVMF" --config "$T/example.conf" --check > "$T/out" 2>&1 ||
        { cat "$T/out"; fail "the shipped nvmf example does not pass --check"; }
    # bash completion: subcommands, and the options a --help lists
    comp=$(PATH="$(dirname "$OFFCORE"):$(dirname "$OFFCORED"):$PATH" bash -c '
        . "$1"
        COMP_WORDS=(offcore st); COMP_CWORD=1; _offcore; echo "${COMPREPLY[*]}"
        COMP_WORDS=(offcore stat --w); COMP_CWORD=2; _offcore; echo "${COMPREPLY[*]}"
        COMP_WORDS=(offcored --threa); COMP_CWORD=1; _offcore_daemon; echo "${COMPREPLY[*]}"
    ' sh "$(dirname "$0")/../../contrib/bash-completion/offcore") ||
        fail "the bash completion script"
    [ "$comp" = "$(printf 'stat\n--watch\n--threads')" ] ||
        fail "bash completion offers: $comp"
    "$OFFCORE" doctor --dp-control "unix:$T/none.sock" --json > "$T/out" 2>&1
    grep -q "$T/none.sock" "$T/out" || { cat "$T/out"; fail "doctor --dp-control"; }
    pass ;;
peerkey)
    # two agents with different cluster keys: said by stat and doctor,
    # not only in the logs
    free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
    pa=$(free_port); pb=$(free_port); ma=$(free_port)
    "$OFFCORE" keygen --out "$T/other.key" || fail "keygen"
    "$OFFCORED" --listen "unix:$T/b.sock,tcp:127.0.0.1:$pb" \
        --peers "tcp:127.0.0.1:$pa" --cluster-key "$T/other.key" \
        --metrics off > "$T/b.log" 2>&1 &
    PIDS+=($!)
    METRICS=127.0.0.1:$ma start_agent "$T/a.sock" --listen \
        "unix:$T/a.sock,tcp:127.0.0.1:$pa" --peers "tcp:127.0.0.1:$pb"
    refused() {
        curl -sf "http://127.0.0.1:$ma/metrics" > "$T/m" &&
            grep -Eq '^offcore_peer_auth_failures_total\{peer="[0-9]+"\} [1-9]' "$T/m"
    }
    end=$(($(date +%s) + 20))
    until refused; do
        [ "$(date +%s)" -lt $end ] || { cat "$T/b.log"; fail "no refused handshake counted in 20 s"; }
        sleep 0.1
    done
    "$OFFCORE" stat --agent "127.0.0.1:$ma" > "$T/stat" 2>&1 ||
        { cat "$T/stat"; fail "offcore stat"; }
    grep -q "handshakes\? refused: another cluster key" "$T/stat" ||
        { cat "$T/stat"; fail "offcore stat does not say it"; }
    OC_AGENT=unix:$T/a.sock timeout 60 "$OFFCORE" doctor --agent "127.0.0.1:$ma" \
        > "$T/doctor" 2>&1
    grep -q "another cluster key" "$T/doctor" ||
        { cat "$T/doctor"; fail "offcore doctor does not say it"; }
    pass ;;
*)
    echo "unknown case $CASE"; exit 2 ;;
esac
