#!/bin/bash
# dp-tenant-test.sh BUILDDIR [THREADS] — two tenants through offcore-dp's tenant
# stages, with real traffic (root and network namespaces; exit 77 =
# skipped otherwise).  The remote end of each tenant's tunnel is a Linux
# kernel vxlan device (dstport 4789): an independent VXLAN peer.
#
#   HA (tenant A, 10.10.0.1)  --veth--  D: offcore-dp  --fabric veth--  RA: vxlan vni 100 (10.10.0.2)
#   HB (tenant B, 10.10.0.1)  --veth--  D: offcore-dp  --fabric veth--  RB: vxlan vni 200 (10.10.0.2)
#
# The two tenants use the same addresses.  Checks, in one run (setup 1):
#   - ping, curl and iperf3 TCP from HA to RA and from HB to RB pass, the
#     returns through connection tracking only (A has one ingress rule);
#   - the remotes have no static neighbour entry: they learn the tunnel
#     ends' MACs by ARP, which offcore-dp answers (counted); asked from A's
#     fabric, it answers for A's tunnel address only (not B's, not the
#     remote's own, not an unused one);
#   - default deny: RA reaches HA's server on the port A's ingress group
#     opens (27080) and not on another (27081): no_connection counted;
#   - a VXLAN frame with B's VNI sent from A's remote is unknown_vni, one
#     without the I flag is malformed (counters exact);
#   - A's host spoofing its source IP, its source MAC, and a gratuitous ARP
#     for an address it does not own: all three dropped, spoofed == 3;
#   - after a connection A opened closes and times out (time_wait 2 s), a
#     late segment from the remote is no_connection;
#   - policing: tenant B limited to 20 Mbit/s (200 KB bucket); iperf3 UDP offered 40 Mbit/s
#     receives between 16 and 22 Mbit/s;
#   - a tenant rule added live opens a port, deleted closes it; tenant
#     del closes an attachment without touching the other tenant's flows,
#     tenant add (with a rate) reopens it;
#   - conntrack count / list / flush through `offcore dp`.
# Then setup 2: two servers, each DPU running offcore-dp, joined by a veth
# fabric: ping, curl, iperf3 within each tenant, never across, and server
# 2's default deny.
set -u -o pipefail
. "$(dirname "$0")/tenant-lib.sh"
# THREADS (default 1): offcore-dp's workers and every veth's queues; with
# 2, frames whose flow another worker owns are handed to it
tl_init "$1" "${2:-1}" ping iperf3 curl python3
tl_scapy

id=$$
HA=octHA$id HB=octHB$id RA=octRA$id RB=octRB$id D=octD$id
HA2=octHA2$id HB2=octHB2$id D2=octD2$id
tl_netns oct-dp $D $HA $HB $RA $RB
fail_logs() {
    echo "--- offcore-dp log"; tail -30 "$tmp/dp.log" 2>/dev/null
    echo "--- counters"; ctl stat --raw 2>/dev/null | grep tenant | grep -v ' 0$'
}

# host links (tenant workloads) and fabric links, one of each per tenant
tl_veth $HA octha0 $D octha1
tl_veth $HB octhb0 $D octhb1
tl_veth $RA octfa0 $D octfa1
tl_veth $RB octfb0 $D octfb1
tl_host $HA octha0 02:00:0a:00:00:a1 10.10.0.1/24
tl_host $HB octhb0 02:00:0a:00:00:b1 10.10.0.1/24
ip -n $D link set octfa1 address 02:00:c0:00:00:a1
ip -n $D link set octfb1 address 02:00:c0:00:00:b1
ip -n $RA link set octfa0 address 02:00:c0:00:00:a2
ip -n $RB link set octfb0 address 02:00:c0:00:00:b2
tl_up $D octha1 octhb1 octfa1 octfb1
tl_up $RA octfa0
tl_up $RB octfb0
tl_nooffload $RA octfa0
tl_nooffload $RB octfb0
# the remote ends: kernel vxlan devices over the fabric links
ip -n $RA addr add 192.168.71.2/24 dev octfa0
ip -n $RB addr add 192.168.72.2/24 dev octfb0
# no static neighbour entries: the remotes learn the DPU's tunnel
# addresses by ARP, which offcore-dp answers
tl_vxlan $RA octvxa 100 192.168.71.2 192.168.71.1 octfa0 02:00:0a:00:00:a2 - 10.10.0.2/24
tl_vxlan $RB octvxb 200 192.168.72.2 192.168.72.1 octfb0 02:00:0a:00:00:b2 - 10.10.0.2/24

sock=$tmp/dp.sock
cat >"$tmp/dp.conf" <<EOF
# two tenants, each with one attachment and its own VXLAN tunnel
threads $nq
control unix:$sock
attach a host=octha1 wire=octfa1
attach b host=octhb1 wire=octfb1
tenant A vni=100 attach=a mac=02:00:0a:00:00:a1 ip=10.10.0.1 local=192.168.71.1 local_mac=02:00:c0:00:00:a1 remote=192.168.71.2 remote_mac=02:00:c0:00:00:a2
tenant B vni=200 attach=b mac=02:00:0a:00:00:b1 ip=10.10.0.1 local=192.168.72.1 local_mac=02:00:c0:00:00:b1 remote=192.168.72.2 remote_mac=02:00:c0:00:00:b2 rate=20 burst=200000
tenant_rule A ingress id=1 action=allow proto=tcp dport=27080
conntrack flows=65536 tcp_time_wait=2 tcp_close=2
EOF
tl_dp_start $D "$tmp/dp.conf" "$tmp/dp.log" $sock
ok "offcore-dp up: $(grep -o 'conntrack [0-9]* flows per worker, [0-9]* bytes ([0-9.]* per flow)' "$tmp/dp.log")"

# --- within each tenant: ping, curl, iperf3
# (the first echo waits for ARP on both sides of the DPU: up to 30 s)
for t in A B; do
    H=$(eval echo \$H$t)
    wait_for 30 ip netns exec $H ping -c 1 -W 1 10.10.0.2 || fail "first ping in tenant $t"
    ip netns exec $H ping -c 3 -i 0.2 -W 2 10.10.0.2 >/dev/null || fail "ping in tenant $t"
done
ok "ping within tenant A and within tenant B (same addresses)"
# the remotes resolved the tunnel ends by ARP: learnt entries (not
# PERMANENT) with the DPU's tunnel MACs, and the answers counted
arp_replies() {
    ctl stat --raw | sed -n "s/^offcore_dp_tenant_arp_replies_total{tenant=\"$1\"} //p"
}
ip -n $RA neigh show 192.168.71.1 dev octfa0 | grep -v PERMANENT |
    grep "lladdr 02:00:c0:00:00:a1" >/dev/null || fail "RA's neighbour entry: $(ip -n $RA neigh show dev octfa0)"
ip -n $RB neigh show 192.168.72.1 dev octfb0 | grep -v PERMANENT |
    grep "lladdr 02:00:c0:00:00:b1" >/dev/null || fail "RB's neighbour entry: $(ip -n $RB neigh show dev octfb0)"
[ "$(arp_replies A)" -ge 1 ] && [ "$(arp_replies B)" -ge 1 ] ||
    fail "ARP replies not counted: A $(arp_replies A), B $(arp_replies B)"
ok "the remotes learnt the tunnel ends by ARP (replies A $(arp_replies A), B $(arp_replies B))"
# asked from A's fabric: its own tunnel address is answered (broadcast and
# unicast requests); tenant B's tunnel address, the remote's own and an
# unused one are not, and count as not_vxlan
cat >"$tmp/arp.py" <<'EOF'
from scapy.all import Ether, ARP, srp, conf
conf.verb = 0
iface, mac = "octfa0", "02:00:c0:00:00:a2"
# an answer is awaited up to 5 s (srp returns when it comes), silence for 2
def ask(ip, dst="ff:ff:ff:ff:ff:ff", timeout=5):
    ans, _ = srp(Ether(src=mac, dst=dst) / ARP(op=1, hwsrc=mac, psrc="192.168.71.2", pdst=ip),
                 iface=iface, timeout=timeout)
    return [(r[ARP].hwsrc, r[ARP].psrc, r[ARP].op) for _, r in ans if ARP in r]
got = ask("192.168.71.1")
assert got == [("02:00:c0:00:00:a1", "192.168.71.1", 2)], got
got = ask("192.168.71.1", dst="02:00:c0:00:00:a1")
assert got == [("02:00:c0:00:00:a1", "192.168.71.1", 2)], got
for ip in ("192.168.72.1", "192.168.71.2", "192.168.71.9"):
    got = ask(ip, timeout=2)
    assert got == [], (ip, got)
EOF
r0=$(arp_replies A) nv0=$(drop A not_vxlan)
ip netns exec $RA $SPY "$tmp/arp.py" || fail "ARP from A's fabric"
arp_replied() { [ "$(arp_replies A)" -ge $((r0 + 2)) ]; }
not_vxlan_counted() { [ "$(drop A not_vxlan)" -ge $((nv0 + 3)) ]; }
wait_for 20 arp_replied || fail "arp_replies A: $r0 -> $(arp_replies A), want +2"
wait_for 20 not_vxlan_counted || fail "not_vxlan A: $nv0 -> $(drop A not_vxlan), want +3"
ok "ARP: who-has 192.168.71.1 answered (broadcast, unicast); B's tunnel address, the remote's, an unused one: no answer"
echo "tenant-A-remote" >"$tmp/a.txt"
mkdir -p "$tmp/b" && echo "tenant-B-remote" >"$tmp/b/b.txt"
bg ip netns exec $RA python3 -m http.server 27090 --bind 10.10.0.2 --directory "$tmp" >/dev/null 2>&1
bg ip netns exec $RB python3 -m http.server 27090 --bind 10.10.0.2 --directory "$tmp/b" >/dev/null 2>&1
bg ip netns exec $RA iperf3 -s -p 27201 >/dev/null 2>&1
bg ip netns exec $RB iperf3 -s -p 27201 >/dev/null 2>&1
wait_for 30 listening $RA 27090 && wait_for 30 listening $RB 27090 || fail "http servers"
ip netns exec $HA curl -sf --max-time 10 http://10.10.0.2:27090/a.txt | grep tenant-A-remote >/dev/null || fail "curl in A"
ip netns exec $HB curl -sf --max-time 10 http://10.10.0.2:27090/b.txt | grep tenant-B-remote >/dev/null || fail "curl in B"
ip netns exec $HB curl -sf --max-time 2 http://10.10.0.2:27090/a.txt >/dev/null && fail "B reached A's remote"
ok "curl: A gets A's remote, B gets B's (same address), never the other's"
wait_for 30 listening $RA 27201 || fail "iperf3 server"
# conntrack list is checked while the iperf3 flow is open: with the test's
# 2 s TIME_WAIT/CLOSE timeouts a closed flow may be gone by the time it is
# listed (it was, on a quiet machine)
a_iperf_listed() {
    ctl conntrack list A | grep "src=10.10.0.1 dst=10.10.0.2 sport=[0-9]* dport=27201 state=ESTABLISHED" >/dev/null
}
timeout 60 ip netns exec $HA iperf3 -c 10.10.0.2 -p 27201 -t 3 -J >"$tmp/tcp.json" &
iperf_pid=$!
wait_for 15 a_iperf_listed || fail "conntrack list: $(ctl conntrack list A)"
[ "$(ctl conntrack count)" -ge 1 ] || fail "conntrack count"
wait $iperf_pid || fail "iperf3 TCP in A"
python3 - "$tmp/tcp.json" <<'EOF2' || fail "iperf3 TCP result"
import json, sys
b = json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]
print("ok: iperf3 TCP in tenant A: %.0f Mbit/s (VXLAN to a kernel vxlan device)" % (b / 1e6))
sys.exit(0 if b > 1e6 else 1)
EOF2
ok "conntrack count $(ctl conntrack count), list shows A's flows"

# --- default deny on ingress: only the port A's group opens
bg ip netns exec $HA python3 -m http.server 27080 --bind 10.10.0.1 --directory "$tmp" >/dev/null 2>&1
bg ip netns exec $HA python3 -m http.server 27081 --bind 10.10.0.1 --directory "$tmp" >/dev/null 2>&1
wait_for 30 listening $HA 27080 && wait_for 30 listening $HA 27081 || fail "servers in HA"
ip netns exec $RA curl -sf --max-time 10 http://10.10.0.1:27080/a.txt >/dev/null || fail "ingress rule port 27080"
nc0=$(drop A no_connection)
ip netns exec $RA curl -sf --max-time 2 http://10.10.0.1:27081/a.txt >/dev/null && fail "port 27081 reachable under default deny"
wait_drop_ge 20 A no_connection $((nc0 + 1))
nc1=$(drop A no_connection)
ok "default deny: 27080 (ingress rule) reachable, 27081 not; no_connection $nc0 -> $nc1"
# a rule added live opens 27081; deleted, closes it again
ctl tenant rule add A ingress id=2 action=allow proto=tcp dport=27081 >/dev/null || fail "tenant rule add"
ip netns exec $RA curl -sf --max-time 10 http://10.10.0.1:27081/a.txt >/dev/null || fail "27081 after a live rule"
ctl tenant rule del A ingress 2 >/dev/null || fail "tenant rule del"
ctl tenant rule del A ingress 2 >/dev/null 2>&1 && fail "deleting twice"
ip netns exec $RA curl -sf --max-time 2 http://10.10.0.1:27081/a.txt >/dev/null && fail "27081 open after the rule was deleted"
ok "tenant rule add/del live: 27081 opened, then closed"

# --- hostile frames from A's remote: B's VNI, and no I flag
cat >"$tmp/vx.py" <<'EOF'
import sys
from scapy.all import Ether, IP, UDP, Raw, sendp, conf
conf.verb = 0
iface, vni, flags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
inner = bytes(Ether(src="02:00:0a:00:00:b2", dst="02:00:0a:00:00:a1") /
              IP(src="10.10.0.2", dst="10.10.0.1") / UDP(sport=27300, dport=27301) / Raw(b"x" * 20))
vx = bytes([flags, 0, 0, 0]) + vni.to_bytes(3, "big") + b"\0"
sendp(Ether(src="02:00:c0:00:00:a2", dst="02:00:c0:00:00:a1") /
      IP(src="192.168.71.2", dst="192.168.71.1") / UDP(sport=50000, dport=4789) /
      Raw(vx + inner), iface=iface, count=int(sys.argv[4]))
EOF
u0=$(drop A unknown_vni) m0=$(drop A malformed_vxlan)
ip netns exec $RA $SPY "$tmp/vx.py" octfa0 200 8 5 || fail scapy
ip netns exec $RA $SPY "$tmp/vx.py" octfa0 100 0 3 || fail scapy
wait_drop 20 A unknown_vni $((u0 + 5))
wait_drop 20 A malformed_vxlan $((m0 + 3))
ok "5 frames with B's VNI on A's tunnel: unknown_vni +5; 3 without the I flag: malformed_vxlan +3"

# --- spoofing from A's host
cat >"$tmp/spoof.py" <<'EOF'
from scapy.all import Ether, IP, UDP, ARP, sendp, conf
conf.verb = 0
me, ip = "02:00:0a:00:00:a1", "10.10.0.1"
sendp(Ether(src=me, dst="02:00:0a:00:00:a2") / IP(src="10.10.0.9", dst="10.10.0.2") / UDP(dport=27302), iface="octha0")
sendp(Ether(src="02:00:0a:00:00:99", dst="02:00:0a:00:00:a2") / IP(src=ip, dst="10.10.0.2") / UDP(dport=27302), iface="octha0")
sendp(Ether(src=me, dst="ff:ff:ff:ff:ff:ff") / ARP(op=2, hwsrc=me, psrc="10.10.0.7", hwdst="ff:ff:ff:ff:ff:ff", pdst="10.10.0.7"), iface="octha0")
EOF
s0=$(drop A spoofed)
ip netns exec $HA $SPY "$tmp/spoof.py" || fail scapy
wait_drop 20 A spoofed $((s0 + 3))
ok "spoofed source IP, source MAC, gratuitous ARP for 10.10.0.7: spoofed +3"

# --- the return path closes with the connection
ip netns exec $HA curl -sf --max-time 10 --local-port 27500 http://10.10.0.2:27090/a.txt >/dev/null || fail "curl from port 27500"
# TIME_WAIT is 2 s in this config: wait until conntrack no longer lists
# the connection (it lists no expired flow)
c27500_gone() { local l; l=$(ctl conntrack list A) && ! grep " sport=27500 " <<<"$l" >/dev/null; }
wait_for 30 c27500_gone || fail "the closed connection is still tracked: $(ctl conntrack list A | grep sport=27500)"
cat >"$tmp/late.py" <<'EOF'
from scapy.all import IP, TCP, send, conf
conf.verb = 0
send(IP(src="10.10.0.2", dst="10.10.0.1") / TCP(sport=27090, dport=27500, flags="A", seq=1, ack=1))
EOF
nc0=$(drop A no_connection)
ip netns exec $RA $SPY "$tmp/late.py" || fail scapy
wait_drop 20 A no_connection $((nc0 + 1))
ok "a segment of a closed, timed-out connection: no_connection +1"

# --- tenant del / add, live: B's attachment closes, A's flows stay
ip netns exec $HA ping -c 1 -W 2 10.10.0.2 >/dev/null || fail "ping A before"
# A's flows that live at least 15 s more (a flow opened early in the test
# may time out during this step on a slow machine), without their timers
lasting_a() {
    ctl conntrack list A | awk '/^tenant=/ { for (i = 1; i <= NF; i++)
        if ($i ~ /^expires_ms=/ && substr($i, 12) + 0 > 15000) {
            sub(/ expires_ms=.*/, ""); print } }' | sort
}
all_a() { ctl conntrack list A | sed -n 's/ expires_ms=.*//p' | sort; }
lasting_a >"$tmp/a-before"
[ -s "$tmp/a-before" ] || fail "no lasting flow of A to watch: $(ctl conntrack list A)"
ca0=$(wc -l <"$tmp/a-before")
ctl tenant del B >/dev/null || fail "tenant del B"
ip netns exec $HB ping -c 2 -i 0.2 -W 1 10.10.0.2 >/dev/null && fail "B still forwards after tenant del"
all_a >"$tmp/a-after"
[ -z "$(comm -23 "$tmp/a-before" "$tmp/a-after")" ] ||
    fail "A's flows changed with B's deletion: lost $(comm -23 "$tmp/a-before" "$tmp/a-after")"
tl=$(ctl tenant list) || fail "tenant list"
grep "^B " <<<"$tl" >/dev/null && fail "B still listed"
ctl tenant add B vni=200 attach=b mac=02:00:0a:00:00:b1 ip=10.10.0.1 local=192.168.72.1 \
    local_mac=02:00:c0:00:00:b1 remote=192.168.72.2 remote_mac=02:00:c0:00:00:b2 \
    rate=20 burst=200000 >/dev/null || fail "tenant add B"
wait_for 20 ip netns exec $HB ping -c 1 -W 1 10.10.0.2 || fail "B does not forward after tenant add"
ctl tenant add B vni=200 attach=b >/dev/null 2>&1 && fail "an incomplete tenant add was taken"
ok "tenant del B closed its attachment (A's $ca0 flows untouched), tenant add B reopened it"

# --- policing: B at 20 Mbit/s (the tenant added live above).  The bucket
# is 200 KB deep (80 ms at 20 Mbit/s): the policer reads the time when a
# burst is processed, so a worker descheduled for d ms on a loaded machine
# meets d x 2.5 KB of refill at once, and a bucket shallower than that
# loses rate (30 KB gave 15.8 Mbit/s, 100 KB 17.2, at load average 20
# with the 2-thread run beside it); the first 200 KB add 0.53 Mbit/s to
# the 3 s average, within the 1.1 R bound
wait_for 30 listening $RB 27201 || fail "iperf3 server B"
# The rate is what the DPU let through: datagrams RB's iperf3 server, if
# starved of CPU by a loaded host, lost at its full socket buffer (RB's
# RcvbufErrors) were delivered by the DPU, and count as such.
rb0=$(udp_rcvbuf_errors $RB)
timeout 60 ip netns exec $HB iperf3 -c 10.10.0.2 -p 27201 -u -b 40M -l 1200 -t 3 -J >"$tmp/pol.json" || fail "iperf3 UDP in B"
rb1=$(udp_rcvbuf_errors $RB)
python3 - "$tmp/pol.json" $((rb1 - rb0)) <<'EOF' || fail "policing"
import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum"]
# (iperf3 counts a loss by the gaps in the sequence numbers it received:
# the socket buffer may have dropped more, at the end of the run)
starved = min(int(sys.argv[2]), s["lost_packets"])
through = s["packets"] - s["lost_packets"] + starved
r = s["bits_per_second"] * through / max(s["packets"], 1) / 1e6
print("ok: policed at 20 Mbit/s, offered 40: %.1f Mbit/s through the DPU (%.1f%% lost; "
      "%d datagrams of them at RB's full socket buffer)" % (r, s["lost_percent"], starved))
sys.exit(0 if 16 <= r <= 22 and starved >= 0 else 1)
EOF
[ "$(drop B policed)" -gt 0 ] || fail "policed not counted"
if [ "$nq" -gt 1 ]; then
    ok "$nq workers: $(tl_handoffs $sock)frames handed to the worker owning their flow, $(drop A handoff_full) + $(drop B handoff_full) dropped on a full ring"
fi

# --- operator commands
ctl tenant list | grep "^B vni=200 attach=b" >/dev/null || fail "tenant list"
ctl conntrack flush A | grep "flushed" >/dev/null || fail "conntrack flush"
[ "$(ctl conntrack count A)" -eq 0 ] || fail "flows left after flush"
ok "tenant list, conntrack flush A (count A now 0, all $(ctl conntrack count))"

tl_dp_stop

# --- setup 2: two servers, both DPUs running offcore-dp, joined by a veth
# fabric (one link per tenant).  Server 1 keeps HA, HB and D (workloads
# 10.10.0.1); server 2 is HA2, HB2 (10.10.0.2) and D2.  Each tenant's
# ingress group on server 2 opens ICMP and its two TCP ports.
tl_netns_more $HA2 $HB2 $D2
ip -n $D link del octfa1; ip -n $D link del octfb1
tl_veth $HA2 octha2 $D2 octja1
tl_veth $HB2 octhb2 $D2 octjb1
tl_veth $D octka1 $D2 octka2
tl_veth $D octkb1 $D2 octkb2
tl_host $HA2 octha2 02:00:0a:00:00:a2 10.10.0.2/24
tl_host $HB2 octhb2 02:00:0a:00:00:b2 10.10.0.2/24
tl_up $D2 octja1 octjb1 octka2 octkb2
tl_up $D octka1 octkb1
mac() { ip netns exec $1 cat /sys/class/net/$2/address; }
ka1=$(mac $D octka1) kb1=$(mac $D octkb1) ka2=$(mac $D2 octka2) kb2=$(mac $D2 octkb2)
sock2=$tmp/dp2.sock
cat >"$tmp/s1.conf" <<EOF
threads $nq
control unix:$sock
attach a host=octha1 wire=octka1
attach b host=octhb1 wire=octkb1
tenant A vni=100 attach=a mac=02:00:0a:00:00:a1 ip=10.10.0.1 local=192.168.81.1 local_mac=$ka1 remote=192.168.81.2 remote_mac=$ka2
tenant B vni=200 attach=b mac=02:00:0a:00:00:b1 ip=10.10.0.1 local=192.168.82.1 local_mac=$kb1 remote=192.168.82.2 remote_mac=$kb2
conntrack flows=65536
EOF
cat >"$tmp/s2.conf" <<EOF
threads $nq
control unix:$sock2
attach a host=octja1 wire=octka2
attach b host=octjb1 wire=octkb2
tenant A vni=100 attach=a mac=02:00:0a:00:00:a2 ip=10.10.0.2 local=192.168.81.2 local_mac=$ka2 remote=192.168.81.1 remote_mac=$ka1
tenant B vni=200 attach=b mac=02:00:0a:00:00:b2 ip=10.10.0.2 local=192.168.82.2 local_mac=$kb2 remote=192.168.82.1 remote_mac=$kb1
conntrack flows=65536
EOF
for t in A B; do
    for r in "id=1 action=allow proto=icmp" "id=2 action=allow proto=tcp dport=27090" \
             "id=3 action=allow proto=tcp dport=27201"; do
        echo "tenant_rule $t ingress $r" >>"$tmp/s2.conf"
    done
done
tl_dp_start $D "$tmp/s1.conf" "$tmp/dp.log" $sock
tl_dp_start $D2 "$tmp/s2.conf" "$tmp/dp2.log" $sock2
ok "setup 2: two servers, offcore-dp on both DPUs"
echo "tenant-A-server2" >"$tmp/s2a.txt"
mkdir -p "$tmp/s2b" && echo "tenant-B-server2" >"$tmp/s2b/s2b.txt"
bg ip netns exec $HA2 python3 -m http.server 27090 --bind 10.10.0.2 --directory "$tmp" >/dev/null 2>&1
bg ip netns exec $HB2 python3 -m http.server 27090 --bind 10.10.0.2 --directory "$tmp/s2b" >/dev/null 2>&1
bg ip netns exec $HA2 iperf3 -s -p 27201 >/dev/null 2>&1
bg ip netns exec $HA2 python3 -m http.server 27081 --bind 10.10.0.2 --directory "$tmp" >/dev/null 2>&1
wait_for 30 listening $HA2 27090 && wait_for 30 listening $HB2 27090 &&
    wait_for 30 listening $HA2 27201 && wait_for 30 listening $HA2 27081 ||
    fail "servers on server 2"
for t in A B; do
    H=$(eval echo \$H$t)
    wait_for 30 ip netns exec $H ping -c 1 -W 1 10.10.0.2 || fail "setup 2: first ping in tenant $t"
    ip netns exec $H ping -c 3 -i 0.2 -W 2 10.10.0.2 >/dev/null || fail "setup 2: ping in tenant $t"
done
ip netns exec $HA curl -sf --max-time 10 http://10.10.0.2:27090/s2a.txt | grep tenant-A-server2 >/dev/null || fail "setup 2: curl in A"
ip netns exec $HB curl -sf --max-time 10 http://10.10.0.2:27090/s2b.txt | grep tenant-B-server2 >/dev/null || fail "setup 2: curl in B"
ip netns exec $HB curl -sf --max-time 2 http://10.10.0.2:27090/s2a.txt >/dev/null && fail "setup 2: B reached A's server"
timeout 60 ip netns exec $HA iperf3 -c 10.10.0.2 -p 27201 -t 2 -J >"$tmp/tcp2.json" || fail "setup 2: iperf3 TCP in A"
python3 - "$tmp/tcp2.json" <<'EOF' || fail "setup 2: iperf3 TCP result"
import json, sys
b = json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]
print("ok: setup 2: ping, curl within A and within B; iperf3 TCP in A %.0f Mbit/s (offcore-dp to offcore-dp)" % (b / 1e6))
sys.exit(0 if b > 1e6 else 1)
EOF
# server 2's default deny: a port its group does not open
ip netns exec $HA curl -sf --max-time 2 http://10.10.0.2:27081/s2a.txt >/dev/null && fail "setup 2: 27081 open under default deny"
ok "setup 2: server 2 refuses a port its ingress group does not open"
tl_dp_stop
echo "PASS ($(($(date +%s) - T0)) s)"
