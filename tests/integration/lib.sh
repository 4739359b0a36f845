# tests/integration/lib.sh — the shell helpers the network-namespace
# integration tests (dp-test.sh, esp-test.sh, ipfix-test.sh, and through
# tenant-lib.sh the tenant tests; agent-test.sh and hostile-test.sh for
# wait_for and metric_nonzero) share; sourced with
# `. "$(dirname "$0")/lib.sh"`.
# Single shell process; trusts nothing but the calling script.
#
#   skip REASON          print SKIP and exit 77 (meson's skip)
#   ok MSG               print a passed check
#   fail MSG             print FAIL, then the script's fail_logs (if it
#                        defines one: its daemons' logs), exit 1
#   bg CMD...            run CMD in the background; cleanup kills it
#   wait_for SECS CMD... retry CMD every 0.1 s until it succeeds, or fail
#                        (return 1) once SECS seconds have passed.  CMD's arguments
#                        are expanded once, before the first try: to wait
#                        on a value that changes (a counter), make CMD a
#                        function that reads it
#   metric_nonzero ADDR ERE [NS]
#                        a sample of the /metrics at ADDR (HOST:PORT; from
#                        namespace NS if given) whose name (and labels)
#                        start with ERE is above 0: a CMD for wait_for (a
#                        daemon moved a counter)
#   capture_barrier NS IFACE PCAP
#                        before a capture on IFACE (in NS, writing PCAP with
#                        -U) is stopped: send a frame of the local
#                        experimental ethertype 0x88b5 out IFACE and wait
#                        (20 s at most) until PCAP holds it; the capture
#                        writes in order, so it then holds every frame that
#                        crossed IFACE before.  Readers of PCAP filter on IP
#   udp_rcvbuf_errors NS UDP datagrams namespace NS dropped at a full
#                        socket buffer (/proc/net/snmp's RcvbufErrors): a
#                        receiver starved of CPU, not a forwarder's loss
#   cleanup_on_exit NS...
#                        on exit, SIGTERM or SIGINT: the script's cleanup_extra (if
#                        it defines one: kill its daemons), then every bg
#                        process, whatever still runs in namespaces NS,
#                        the namespaces themselves and $tmp

skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok: $*"; }

fail() {
    echo "FAIL: $*"
    command -v fail_logs >/dev/null 2>&1 && fail_logs
    exit 1
}

bg() { "$@" & echo $! >>"$tmp/bg.pids"; }

wait_for() {
    # a deadline on the clock, not a count of tries: a CMD that is slow
    # itself (an ASan-built CLI starting on a loaded host: 0.3 s) made 10
    # tries a second last 4x SECS
    oc__end=$(($(date +%s) + $1)); shift
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        [ "$(date +%s)" -lt $oc__end ] || return 1
        sleep 0.1
    done
}

metric_nonzero() {
    ${3:+ip netns exec "$3"} curl -sf -m 2 --noproxy '*' "http://$1/metrics" |
        grep -E "^($2)[^ ]* [1-9]" >/dev/null
}

capture_barrier() {
    ip netns exec "$1" python3 -c '
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
s.send(b"\xff" * 6 + b"\x02\x00\x00\x00\xba\x22\x88\xb5" + b"barrier".ljust(46, b"\0"))' "$2" ||
        return 1
    oc__pcap=$3
    wait_for 20 oc__has_barrier
}
oc__has_barrier() {
    [ "$(tcpdump -nn -r "$oc__pcap" 'ether proto 0x88b5' 2>/dev/null | wc -l)" -gt 0 ]
}

udp_rcvbuf_errors() {
    ip netns exec $1 awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 }
                                     else print $c["RcvbufErrors"] }' /proc/net/snmp
}

oc__netns_empty() {
    for oc__n in $oc__netns; do
        [ -z "$(ip netns pids $oc__n 2>/dev/null)" ] || return 1
    done
}

oc__cleanup() {
    command -v cleanup_extra >/dev/null 2>&1 && cleanup_extra
    for oc__p in $(cat "$tmp"/bg.pids 2>/dev/null); do
        kill "$oc__p" 2>/dev/null
    done
    # what is left in our namespaces after 0.3 s (a daemon's own children,
    # such as nfacctd's plugins): killed.  Short: on a timeout meson sends
    # SIGTERM and SIGKILLs the test 0.5 s later, cleanup or not.
    for oc__i in 1 2 3; do
        oc__netns_empty && break
        sleep 0.1
    done
    for oc__n in $oc__netns; do
        for oc__p in $(ip netns pids $oc__n 2>/dev/null); do
            kill -KILL "$oc__p" 2>/dev/null
        done
    done
    wait 2>/dev/null
    for oc__n in $oc__netns; do ip netns del $oc__n 2>/dev/null; done
    rm -rf "$tmp"
}

cleanup_on_exit() {
    oc__netns="$*"
    trap oc__cleanup EXIT
    # a signal ends the script (the EXIT trap cleans up once), rather than
    # cleaning up and carrying on without its namespaces
    trap 'exit 143' TERM
    trap 'exit 130' INT
}
