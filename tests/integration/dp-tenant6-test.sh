#!/bin/bash
# dp-tenant6-test.sh BUILDDIR [THREADS] — IPv6 inside two tenants through offcore-dp's
# tenant stages, with real traffic (root and network namespaces; exit 77 =
# skipped otherwise).  The tunnels stay IPv4; the remote end of each is a
# Linux kernel vxlan device (dstport 4789): an independent VXLAN peer whose
# kernel does IPv6 neighbor discovery through offcore-dp.
#
#   HA (tenant A, fd00::1)  --veth--  D: offcore-dp  --fabric--  RA: vxlan vni 100 (fd00::2)
#   HA2 (tenant A, fd00::3) --veth--  D   (a second attachment of A, on A's fabric port)
#   HB (tenant B, fd00::1)  --veth--  D: offcore-dp  --fabric--  RB: vxlan vni 200 (fd00::2, fd00::b2)
#
# The two tenants use the same IPv6 addresses.  Checks:
#   - ping6 (global and link-local) from HA to RA and HB to RB: neighbor
#     discovery both ways (multicast solicitations delivered to the
#     attachment owning the target), echo through IPv6 conntrack;
#   - A's two attachments: RA reaches HA2 (its solicitation for fd00::3
#     goes to HA2 only), HA and HA2 reach each other on the DPU (hairpin:
#     neighbor discovery, ping6, curl -6 through A's ingress group);
#   - never across tenants: HA cannot reach fd00::b2, which only tenant
#     B's remote has;
#   - default deny: RA reaches HA's server on the port A's ingress group
#     opens (41480) and not on another (41481): no_connection counted; a
#     connection HA opens to RA (curl -6) returns through conntrack alone;
#   - `conntrack list` shows IPv6 flows, the Prometheus text the IPv6
#     table and IPv6 packet counters;
#   - from HA (scapy): an IPv6 source not its own, a neighbor advertisement
#     for RA's address, a router advertisement: dropped, spoofed +3 exactly;
#   - tenant del / tenant add with ip6= live; tenant list shows it.
set -u -o pipefail
. "$(dirname "$0")/tenant-lib.sh"
# THREADS (default 1): offcore-dp's workers and every veth's queues; with
# 2, IPv6 frames whose flow the other worker owns are handed to it
tl_init "$1" "${2:-1}" ping curl python3 sysctl
tl_scapy

id=$$
HA=h12aHA$id HB=h12aHB$id RA=h12aRA$id RB=h12aRB$id D=h12aD$id HA2=h12aH2$id
tl_netns h12a-dp6 $D $HA $HB $RA $RB $HA2
fail_logs() {
    echo "--- offcore-dp log"; tail -30 "$tmp/dp.log" 2>/dev/null
    echo "--- counters"; ctl stat --raw 2>/dev/null | grep -E 'tenant|conntrack6' | grep -v ' 0$'
}

# no duplicate address detection (its wait is not what this tests); the
# DPU's own interfaces speak no IPv6 (offcore-dp owns them)
for n in $HA $HB $RA $RB $D $HA2; do
    ip netns exec $n sysctl -qw net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.accept_dad=0 || fail sysctl
done
ip netns exec $D sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
    net.ipv6.conf.all.disable_ipv6=1 || fail sysctl
tl_veth $HA h12aha0 $D h12aha1
tl_veth $HB h12ahb0 $D h12ahb1
tl_veth $RA h12afa0 $D h12afa1
tl_veth $RB h12afb0 $D h12afb1
tl_veth $HA2 h12aha2 $D h12aha3
tl_host $HA2 h12aha2 02:00:0a:00:00:a3 10.10.0.3/24 fd00::3/64
tl_host $HA h12aha0 02:00:0a:00:00:a1 10.10.0.1/24 fd00::1/64
tl_host $HB h12ahb0 02:00:0a:00:00:b1 10.10.0.1/24 fd00::1/64
ip -n $D link set h12afa1 address 02:00:c0:00:00:a1
ip -n $D link set h12afb1 address 02:00:c0:00:00:b1
ip -n $RA link set h12afa0 address 02:00:c0:00:00:a2
ip -n $RB link set h12afb0 address 02:00:c0:00:00:b2
tl_up $D h12aha1 h12ahb1 h12afa1 h12afb1 h12aha3
tl_up $RA h12afa0
tl_up $RB h12afb0
tl_nooffload $RA h12afa0
tl_nooffload $RB h12afb0
ip -n $RA addr add 192.168.71.2/24 dev h12afa0
ip -n $RB addr add 192.168.72.2/24 dev h12afb0
tl_vxlan $RA h12avxa 100 192.168.71.2 192.168.71.1 h12afa0 02:00:0a:00:00:a2 - \
    10.10.0.2/24 fd00::2/64
tl_vxlan $RB h12avxb 200 192.168.72.2 192.168.72.1 h12afb0 02:00:0a:00:00:b2 - \
    10.10.0.2/24 fd00::2/64 fd00::b2/64

sock=$tmp/dp.sock
cat >"$tmp/dp.conf" <<EOF
# two tenants with the same IPv4 and IPv6 addresses
threads $nq
control unix:$sock
attach a host=h12aha1 wire=h12afa1
attach b host=h12ahb1 wire=h12afb1
attach a2 host=h12aha3 wire=h12afa1
tenant A vni=100 attach=a,a2 mac=02:00:0a:00:00:a1,02:00:0a:00:00:a3 ip=10.10.0.1,10.10.0.3 ip6=fd00::1,fd00::3 local=192.168.71.1 local_mac=02:00:c0:00:00:a1 remote=192.168.71.2 remote_mac=02:00:c0:00:00:a2
tenant B vni=200 attach=b mac=02:00:0a:00:00:b1 ip=10.10.0.1 ip6=fd00::1 local=192.168.72.1 local_mac=02:00:c0:00:00:b1 remote=192.168.72.2 remote_mac=02:00:c0:00:00:b2
tenant_rule A ingress id=1 action=allow proto=tcp dport=41480
tenant_rule A ingress id=2 action=allow proto=tcp src=fd00::2/128 dport=41483
tenant_rule A ingress id=3 action=allow proto=tcp src=fd00::99 dport=41484
tenant_rule A ingress id=6 action=allow proto=58 dst=fd00::3
conntrack flows=65536 flows6=4096
EOF
tl_dp_start $D "$tmp/dp.conf" "$tmp/dp.log" $sock
ok "offcore-dp up: $(grep -o 'IPv6 [0-9]* flows, [0-9]* bytes ([0-9.]* per flow)' "$tmp/dp.log")"


# --- within each tenant: ping6, global and link-local
for t in A B; do
    H=$(eval echo \$H$t)
    wait_for 30 ip netns exec $H ping -6 -c 1 -W 1 fd00::2 ||
        fail "ping6 in tenant $t: $(ip -n $H -6 neigh)"
    ip netns exec $H ping -6 -c 3 -i 0.2 -W 2 fd00::2 >/dev/null || fail "ping6 in tenant $t"
done
ip -n $HA -6 neigh show fd00::2 | grep "lladdr 02:00:0a:00:00:a2" >/dev/null ||
    fail "HA did not learn RA by neighbor discovery: $(ip -n $HA -6 neigh)"
ip -n $RA -6 neigh show fd00::1 | grep "lladdr 02:00:0a:00:00:a1" >/dev/null ||
    fail "RA did not learn HA by neighbor discovery: $(ip -n $RA -6 neigh)"
ip netns exec $HA ping -6 -c 2 -i 0.2 -W 2 fe80::aff:fe00:a2%h12aha0 >/dev/null ||
    fail "ping6 link-local in tenant A"
ok "ping6 within tenant A and B (same addresses), neighbor discovery both ways, link-local too"

# --- A's second attachment: from the wire (RA's solicitation for fd00::3
# goes to HA2), and from HA on the DPU (hairpin); rule 6 lets ICMPv6 in to
# fd00::3 only
wait_for 30 ip netns exec $RA ping -6 -c 1 -W 1 fd00::3 ||
    fail "RA -> HA2 (fd00::3): $(ip -n $RA -6 neigh)"
ip -n $RA -6 neigh show fd00::3 | grep "lladdr 02:00:0a:00:00:a3" >/dev/null ||
    fail "RA resolved fd00::3 to $(ip -n $RA -6 neigh show fd00::3)"
wait_for 30 ip netns exec $HA ping -6 -c 1 -W 1 fd00::3 ||
    fail "HA -> HA2 on the DPU: $(ip -n $HA -6 neigh)"
ip -n $HA -6 neigh show fd00::3 | grep "lladdr 02:00:0a:00:00:a3" >/dev/null ||
    fail "HA resolved fd00::3 to $(ip -n $HA -6 neigh show fd00::3)"
ip netns exec $HA2 ping -6 -c 1 -W 2 fd00::1 >/dev/null &&
    fail "HA2 -> HA ping6 passed: no rule lets ICMPv6 in to fd00::1"
ok "A's second attachment: RA pings fd00::3 (its solicitation went to HA2), HA pings HA2 on the DPU, HA2 -> HA ping6 refused (no rule)"

# --- never across tenants: fd00::b2 is only on B's remote
ip netns exec $HA ping -6 -c 2 -i 0.3 -W 1 fd00::b2 >/dev/null 2>&1 &&
    fail "HA reached tenant B's fd00::b2"
ip netns exec $HB ping -6 -c 1 -W 2 fd00::b2 >/dev/null || fail "HB cannot reach its own fd00::b2"
ok "HA cannot reach fd00::b2 (tenant B's remote), HB can"

# --- default deny, and the return path through conntrack
mkdir -p "$tmp/www" && echo hello6 >"$tmp/www/a.txt"
srv() { # srv NS PORT: an HTTP server on [::]:PORT serving $tmp/www
    bg ip netns exec $1 $SPY -m http.server --bind :: --directory "$tmp/www" $2 \
        >>"$tmp/http.log" 2>&1
}
srv $HA 41480; srv $HA 41481; srv $RA 41482; srv $HA 41483; srv $HA 41484
for p in 41480 41481 41483 41484; do
    wait_for 30 ip netns exec $HA sh -c "ss -ltn | grep -q ':$p '" || fail "server $p on HA"
done
wait_for 30 ip netns exec $RA sh -c 'ss -ltn | grep -q ":41482 "' || fail "server on RA"
[ "$(ip netns exec $RA curl -6 -sf --max-time 10 'http://[fd00::1]:41480/a.txt')" = hello6 ] ||
    fail "RA -> HA:41480 (opened by A's ingress group)"
nc0=$(drop A no_connection)
ip netns exec $RA curl -6 -sf --max-time 2 'http://[fd00::1]:41481/a.txt' >/dev/null &&
    fail "RA -> HA:41481 passed: no ingress rule opens it"
wait_drop_ge 20 A no_connection $((nc0 + 1)) # RA -> HA:41481
[ "$(ip netns exec $HA curl -6 -sf --max-time 10 'http://[fd00::2]:41482/a.txt')" = hello6 ] ||
    fail "HA -> RA:41482 (replies by conntrack only)"
[ "$(ip netns exec $HA2 curl -6 -sf --max-time 10 'http://[fd00::1]:41480/a.txt')" = hello6 ] ||
    fail "HA2 -> HA:41480 on the DPU (hairpin, rule 1)"
ip netns exec $HA2 curl -6 -sf --max-time 2 'http://[fd00::1]:41481/a.txt' >/dev/null &&
    fail "HA2 -> HA:41481 passed on the DPU: no rule opens it"
ok "default deny for IPv6: 41480 open by rule (from RA and from HA2 on the DPU), 41481 refused (no_connection $nc0 -> $(drop A no_connection)), HA's own connection returns"

# --- rules with IPv6 prefixes, from the config and live
[ "$(ip netns exec $RA curl -6 -sf --max-time 10 'http://[fd00::1]:41483/a.txt')" = hello6 ] ||
    fail "RA -> HA:41483 (rule 2: src=fd00::2/128)"
nc0=$(drop A no_connection)
ip netns exec $RA curl -6 -sf --max-time 2 'http://[fd00::1]:41484/a.txt' >/dev/null &&
    fail "RA -> HA:41484 passed: rule 3 is for src=fd00::99 only"
wait_drop_ge 20 A no_connection $((nc0 + 1)) # RA -> HA:41484
ctl tenant rule add A ingress id=4 action=allow proto=tcp src=fd00::/64 dport=41481 >"$tmp/rule.out" ||
    fail "tenant rule add with an IPv6 prefix: $(cat "$tmp/rule.out")"
grep -q "IPv6 src=fd00::/64" "$tmp/rule.out" || fail "rule add answer: $(cat "$tmp/rule.out")"
[ "$(ip netns exec $RA curl -6 -sf --max-time 10 'http://[fd00::1]:41481/a.txt')" = hello6 ] ||
    fail "RA -> HA:41481 after rule 4 was added"
ctl tenant rule del A ingress 4 >/dev/null || fail "tenant rule del 4"
ip netns exec $RA curl -6 -sf --max-time 2 'http://[fd00::1]:41481/a.txt' >/dev/null &&
    fail "RA -> HA:41481 passed after rule 4 was deleted"
out=$(ctl tenant rule add A ingress id=5 action=allow src=10.0.0.0/8 dst=fd00::1 2>&1) &&
    fail "a rule with IPv4 and IPv6 prefixes was taken"
# egress: a live deny rule for ICMPv6 to fd00::2 (neighbor discovery is
# no echo: it still passes), counted denied; deleted, ping6 works again
ctl tenant rule add A egress id=7 action=deny proto=58 dst=fd00::2/128 >/dev/null ||
    fail "tenant rule add A egress (IPv6)"
d0=$(drop A denied)
ip netns exec $HA ping -6 -c 2 -i 0.3 -W 1 fd00::2 >/dev/null 2>&1 &&
    fail "HA -> fd00::2 ping6 passed an egress deny rule"
wait_drop_ge 20 A denied $((d0 + 2))
ip netns exec $HA ping -6 -c 1 -W 2 fd00::3 >/dev/null || fail "HA -> HA2 denied by a rule for fd00::2"
ctl tenant rule del A egress 7 >/dev/null || fail "tenant rule del A egress 7"
ip netns exec $HA ping -6 -c 1 -W 2 fd00::2 >/dev/null || fail "ping6 after the egress rule's deletion"
ok "IPv6 prefix rules: src=fd00::2/128 opens 41483, src=fd00::99 keeps 41484 shut; a live src=fd00::/64 rule opens 41481, its del closes it; an egress deny for ICMPv6 to fd00::2/128 (denied $d0 -> $(drop A denied)), deleted"

# --- operators see IPv6 flows
ip netns exec $HA ping -6 -c 1 -W 2 fd00::2 >/dev/null || fail ping6
ctl conntrack list A | grep "proto=58 src=fd00::1 dst=fd00::2 " >/dev/null ||
    fail "conntrack list shows no IPv6 flow: $(ctl conntrack list A)"
ctl conntrack list A | grep "proto=6 src=fd00::2 dst=fd00::1 sport=[0-9]* dport=41480" >/dev/null ||
    fail "conntrack list: no RA -> HA:41480 flow: $(ctl conntrack list A)"
[ "$(metric offcore_dp_conntrack6_flows)" -ge 1 ] || fail "offcore_dp_conntrack6_flows: $(metric offcore_dp_conntrack6_flows)"
[ "$(metric offcore_dp_conntrack6_capacity)" = $((4096 * nq)) ] || fail "conntrack6 capacity: $(metric offcore_dp_conntrack6_capacity)"
e6=$(ctl stat --raw | sed -n 's/^offcore_dp_tenant_ipv6_packets_total{tenant="A",direction="egress"} //p')
[ "${e6:-0}" -gt 0 ] || fail "no IPv6 packets counted for A: $e6"
ok "conntrack list shows IPv6 flows; conntrack6 flows $(metric offcore_dp_conntrack6_flows) of $((4096 * nq)); A's IPv6 egress packets $e6"

# --- spoofing from A's host
cat >"$tmp/spoof6.py" <<'EOF'
from scapy.all import (Ether, IPv6, ICMPv6EchoRequest, ICMPv6ND_NA,
                       ICMPv6NDOptDstLLAddr, ICMPv6ND_RA, sendp, conf)
conf.verb = 0
me, ll = "02:00:0a:00:00:a1", "fe80::aff:fe00:a1"
# a source address not its own
sendp(Ether(src=me, dst="02:00:0a:00:00:a2") / IPv6(src="fd00::99", dst="fd00::2") /
      ICMPv6EchoRequest(), iface="h12aha0")
# a neighbor advertisement for RA's address (ND's gratuitous ARP)
sendp(Ether(src=me, dst="33:33:00:00:00:01") / IPv6(src=ll, dst="ff02::1", hlim=255) /
      ICMPv6ND_NA(tgt="fd00::2", R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr=me),
      iface="h12aha0")
# a router advertisement
sendp(Ether(src=me, dst="33:33:00:00:00:01") / IPv6(src=ll, dst="ff02::1", hlim=255) /
      ICMPv6ND_RA(), iface="h12aha0")
EOF
s0=$(drop A spoofed)
ip netns exec $HA $SPY "$tmp/spoof6.py" || fail scapy
wait_drop 20 A spoofed $((s0 + 3))
# no pause for a 4th drop: the ping6 after them crosses the same port (its
# neighbour discovery too) and must not count as spoofed either
ip netns exec $HA ping -6 -c 1 -W 2 fd00::2 >/dev/null || fail "ping6 after the spoofing"
[ "$(drop A spoofed)" -eq $((s0 + 3)) ] || fail "spoofed: $s0 -> $(drop A spoofed), want exactly +3"
ok "spoofed IPv6 source, NA for fd00::2, RA: dropped, spoofed +3 exactly; A still works"

# --- live: tenant del / add with ip6=
ctl tenant del B >/dev/null || fail "tenant del B"
ip netns exec $HB ping -6 -c 2 -i 0.2 -W 1 fd00::2 >/dev/null && fail "B forwards after tenant del"
ctl tenant add B vni=200 attach=b mac=02:00:0a:00:00:b1 ip=10.10.0.1 ip6=fd00::1+fd00::11 \
    local=192.168.72.1 local_mac=02:00:c0:00:00:b1 remote=192.168.72.2 \
    remote_mac=02:00:c0:00:00:b2 >/dev/null || fail "tenant add B with ip6="
ctl tenant list | grep "^B .* ip6=fd00::1+fd00::11 " >/dev/null || fail "tenant list: $(ctl tenant list)"
wait_for 20 ip netns exec $HB ping -6 -c 1 -W 1 fd00::2 || fail "B does not forward IPv6 after tenant add"
out=$(ctl tenant add C vni=300 attach=b mac=02:00:0a:00:00:c1 ip=10.0.0.1 ip6=fd00::zz \
    local=192.168.72.1 local_mac=02:00:c0:00:00:b1 remote=192.168.72.2 \
    remote_mac=02:00:c0:00:00:b2 2>&1) && fail "a bad ip6= was taken"
echo "$out" | grep "ip6 'fd00::zz' is not valid" >/dev/null || fail "bad ip6= error: $out"
ok "tenant del B / tenant add B with ip6=fd00::1+fd00::11 live; a bad ip6= refused ($out)"
echo "PASS ($(($(date +%s) - T0)) s)"
