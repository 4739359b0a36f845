#!/bin/bash
# dp6-test.sh BUILDDIR — real IPv6 traffic through offcore-dp's classifier
# (needs root and network namespaces; exit 77 = skipped otherwise).
#
# Two namespaces A (fd77::1) and B (fd77::2) joined only through
# offcore-dp in a third namespace D (one queue, one worker; checksum
# offload, TSO and GSO off on the endpoint veths).  The kernel's neighbor
# discovery crosses offcore-dp too.  Checks, in one run:
#   - ping -6 and curl against python3's http.server on [fd77::2] pass;
#   - an IPv6 deny rule added live (src=fd77::1/128, the HTTP port) makes
#     curl fail while ping goes on; its counter moves; `rules list` writes
#     it back in the rule syntax; rules for another IPv6 prefix or an IPv4
#     one do not touch the traffic, one for ::/0 does; deleting restores;
#   - a rule naming no address (proto and port only) classifies IPv6 too;
#   - a rule file with a bad IPv6 prefix is refused with file:line and
#     reason, and changes nothing.
set -u -o pipefail
build=$1
dp=$build/src/dp/offcore-dp
cli=$build/src/tools/offcore
T0=$(date +%s)

. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root"
for t in ip ethtool ping curl python3 timeout; do
    command -v $t >/dev/null 2>&1 || skip "$t is not installed"
done

id=$$
A=oc6A$id B=oc6B$id D=oc6D$id
ip netns add $A 2>/dev/null || skip "cannot create network namespaces"
tmp=$(mktemp -d /tmp/oc6-dp.XXXXXX)
dppid=
cleanup_extra() {
    [ -n "$dppid" ] && kill "$dppid" 2>/dev/null
}
cleanup_on_exit $A $B $D
fail_logs() {
    echo "--- offcore-dp log"; tail -30 "$tmp/dp.log" 2>/dev/null
}

ip netns add $B && ip netns add $D || fail "netns"
ip link add oc6a0 netns $A type veth peer name oc6a1 netns $D || fail "veth A"
ip link add oc6b0 netns $B type veth peer name oc6b1 netns $D || fail "veth B"
# offcore-dp owns D's ends: they speak no IPv6 of their own
ip netns exec $D sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
    net.ipv6.conf.default.disable_ipv6=1 || fail sysctl
ip -n $A addr add fd77::1/64 dev oc6a0 nodad
ip -n $B addr add fd77::2/64 dev oc6b0 nodad
for x in "$A oc6a0" "$B oc6b0" "$D oc6a1" "$D oc6b1"; do
    set -- $x
    ip -n $1 link set lo up
    ip -n $1 link set $2 up
done
ip netns exec $A ethtool -K oc6a0 tx off tso off gso off >/dev/null || fail ethtool
ip netns exec $B ethtool -K oc6b0 tx off tso off gso off >/dev/null || fail ethtool

sock=$tmp/dp.sock
ctl() { "$cli" dp --control unix:$sock "$@"; }
cat >"$tmp/dp.conf" <<EOF
threads 1
control unix:$sock
attach t0 host=oc6a1 wire=oc6b1
rule id=1 prio=1000 action=count proto=58 src=fd77::/64
EOF
OC_LOG=info ip netns exec $D "$dp" --config "$tmp/dp.conf" >>"$tmp/dp.log" 2>&1 &
dppid=$!
wait_for 60 ctl ping || fail "offcore-dp did not come up"
ok "offcore-dp up"

bg ip netns exec $B python3 -m http.server 23080 --bind fd77::2 \
    --directory "$tmp" >/dev/null 2>&1
echo hello-offcore-dp6 >"$tmp/index.txt"
listening() { ip netns exec $B ss -Hltn "sport = :$1" | grep . >/dev/null; }
wait_for 30 listening 23080 || fail "http.server"
curl6() { ip netns exec $A curl -gsf --max-time 3 "http://[fd77::2]:23080/index.txt"; }
wait_for 30 curl6 || fail "curl -6 through offcore-dp"
ip netns exec $A ping -6 -c 3 -i 0.2 -W 2 fd77::2 >/dev/null || fail "ping -6"
ok "ping -6 and curl over IPv6"
rule_packets() { # ID: the packets counter of rule ID in `rules list`
    ctl rules list | sed -n "s/^id=$1 .* packets=\([0-9]*\) .*/\1/p"
}
[ "$(rule_packets 1)" -gt 0 ] || fail "the ICMPv6 count rule counted nothing"
ok "the ICMPv6 count rule on fd77::/64 counts ($(rule_packets 1))"

# --- an IPv6 deny rule, added live
ctl rules add id=100 prio=10 action=deny proto=tcp src=fd77::1/128 dport=23080 ||
    fail "rules add (IPv6)"
ctl rules list | grep '^id=100 prio=10 action=deny proto=tcp src=fd77::1/128 dst=any sport=any dport=23080 ' >/dev/null ||
    fail "rules list: $(ctl rules list)"
curl6 >/dev/null && fail "curl passed an IPv6 deny rule"
ip netns exec $A ping -6 -c 2 -i 0.2 -W 2 fd77::2 >/dev/null || fail "ping -6 under the deny rule"
[ "$(rule_packets 100)" -gt 0 ] || fail "the deny rule counted nothing"
ok "IPv6 deny rule: curl fails, ping goes on, $(rule_packets 100) packets denied"
ctl rules del 100 || fail "rules del"
wait_for 10 curl6 || fail "curl after rules del"
ok "curl works again after rules del"

# --- prefixes that do not match, and ones that do
ctl rules add id=101 prio=10 action=deny proto=tcp src=fd78::/64 dport=23080 || fail "rules add 101"
ctl rules add id=102 prio=10 action=deny proto=tcp src=10.77.0.0/16 dport=23080 || fail "rules add 102"
curl6 >/dev/null || fail "a rule of another prefix (or family) denied"
ok "rules on fd78::/64 and on IPv4 10.77.0.0/16 leave IPv6 from fd77::1 alone"
ctl rules add id=103 prio=10 action=deny proto=tcp src=::/0 dport=23080 || fail "rules add 103"
curl6 >/dev/null && fail "a ::/0 rule did not deny"
ctl rules del 103 || fail "rules del 103"
ctl rules add id=104 prio=10 action=deny proto=tcp dport=23080 || fail "rules add 104"
curl6 >/dev/null && fail "a rule naming no address did not deny IPv6"
ctl rules del 104 || fail "rules del 104"
wait_for 10 curl6 || fail "curl after rules del 104"
ok "::/0 and a rule naming no address deny IPv6; deleted, curl works"

# --- a rule file with a bad IPv6 prefix changes nothing
printf 'rule id=5 action=allow src=fd77::/64\nrule id=6 action=deny src=fd77::1/129\n' >"$tmp/bad6.rules"
ctl rules load "$tmp/bad6.rules" 2>"$tmp/load.err" && fail "a bad IPv6 rule file loaded"
grep -q "bad6.rules:2: src: expected an IPv6 ADDR\[/0..128\]" "$tmp/load.err" ||
    fail "load error: $(cat "$tmp/load.err")"
[ "$(ctl rules list | wc -l)" = 3 ] || fail "a failed load changed the rules: $(ctl rules list)"
printf 'rule id=5 action=deny proto=tcp src=fd77::1/127 dst=fd77::2\n' >"$tmp/good6.rules"
ctl rules load "$tmp/good6.rules" >/dev/null || fail "rules load (IPv6)"
curl6 >/dev/null && fail "a loaded IPv6 rule did not deny"
ok "rule files: a bad IPv6 prefix refused with file:line, a good set loaded and applied"

kill -TERM $dppid
wait $dppid
rc=$?
dppid=
[ $rc = 0 ] || fail "SIGTERM: exit $rc"
echo "PASS ($(($(date +%s) - T0)) s)"
