#!/bin/bash
# dp-mattach-test.sh BUILDDIR [THREADS] — a tenant with two host-side attachments
# (two workloads of one customer on this server) beside another tenant, all
# on one uplink, with real traffic (root, network namespaces and scapy;
# exit 77 = skipped otherwise).  The remote ends are Linux kernel vxlan
# devices (an independent VXLAN peer), created in the fabric namespace R
# and moved into their own namespaces so that both tenants can use the same
# addresses (a vxlan device keeps its underlay socket in the namespace it
# was created in).
#
#   HA1 (A, 10.20.0.1) --veth--+
#   HA2 (A, 10.20.0.3) --veth--+-- D: offcore-dp --fabric veth-- R: vxlan 100 -> RA (10.20.0.2)
#   HB  (B, 10.20.0.1) --veth--+    (one wire port)                vxlan 200 -> RB (10.20.0.2)
#
# Checks:
#   - both attachments of A reach A's remote (ping), the remote reaches
#     each of them (it resolves both by ARP over the tunnel: a broadcast
#     request goes to the attachment that owns the address asked for);
#   - B reaches B's remote at the same address; B cannot reach an address
#     only A's remote has, A's attachments can;
#   - anti-spoofing per attachment: attachment 1 using attachment 2's IP
#     (with its own MAC or attachment 2's), attachment 2 using attachment
#     1's IP, and attachment 1's gratuitous ARP for attachment 2's address:
#     spoofed == 4 exactly, B's counter unchanged;
#   - host -> host between A's attachments is switched on the DPU through
#     A's groups: ping both ways, TCP to a port the ingress group opens,
#     not to another (no_connection); B cannot reach A's attachment;
#   - tenant list shows both attachments; tenant del A closes both, tenant
#     add A with the same lists reopens both; B keeps working.
# Netns and links: prefix ma; TCP ports 41910, 41911 in HA2; scapy's
# frames go to UDP 41900, which nothing receives.
set -u -o pipefail
. "$(dirname "$0")/tenant-lib.sh"
# THREADS (default 1): offcore-dp's workers and every veth's queues; with
# 2, frames whose flow the other worker owns are handed to it
tl_init "$1" "${2:-1}" ping
tl_scapy

id=$$
HA1=maHA1$id HA2=maHA2$id HB=maHB$id R=maR$id RA=maRA$id RB=maRB$id D=maD$id
tl_netns ma-dp $D $HA1 $HA2 $HB $R $RA $RB
fail_logs() {
    echo "--- offcore-dp log"; tail -30 "$tmp/dp.log" 2>/dev/null
    echo "--- counters"; ctl stat --raw 2>/dev/null | grep tenant | grep -v ' 0$'
    # MA_HOLD=SECONDS: keep the namespaces that long to look at a failure
    [ -n "${MA_HOLD:-}" ] && sleep "$MA_HOLD"
}

tl_veth $HA1 maa0 $D maa1
tl_veth $HA2 mac0 $D mac1
tl_veth $HB mab0 $D mab1
tl_veth $R maf0 $D maf1
tl_host $HA1 maa0 02:00:0a:14:00:a1 10.20.0.1/24
tl_host $HA2 mac0 02:00:0a:14:00:a3 10.20.0.3/24
tl_host $HB mab0 02:00:0a:14:00:b1 10.20.0.1/24
ip -n $D link set maf1 address 02:00:c0:a8:5b:01
ip -n $R link set maf0 address 02:00:c0:a8:5b:02
tl_up $D maa1 mac1 mab1 maf1
tl_up $R maf0
tl_up $RA
tl_up $RB
tl_nooffload $R maf0
ip -n $R addr add 192.168.91.2/24 dev maf0
# A's remote also has 10.20.0.5, which only it has
tl_vxlan $R mavxa 100 192.168.91.2 192.168.91.1 maf0 02:00:0a:14:00:a2 $RA \
    10.20.0.2/24 10.20.0.5/24
tl_vxlan $R mavxb 200 192.168.91.2 192.168.91.1 maf0 02:00:0a:14:00:b2 $RB \
    10.20.0.2/24

sock=$tmp/dp.sock
TA="A vni=100 attach=a1,a2 mac=02:00:0a:14:00:a1,02:00:0a:14:00:a3 ip=10.20.0.1,10.20.0.3 local=192.168.91.1 local_mac=02:00:c0:a8:5b:01 remote=192.168.91.2 remote_mac=02:00:c0:a8:5b:02"
cat >"$tmp/dp.conf" <<EOF
# tenant A: two attachments (a1, a2); tenant B: one; one uplink (maf1)
threads $nq
control unix:$sock
attach a1 host=maa1 wire=maf1
attach a2 host=mac1 wire=maf1
attach b host=mab1 wire=maf1
tenant $TA
tenant B vni=200 attach=b mac=02:00:0a:14:00:b1 ip=10.20.0.1 local=192.168.91.1 local_mac=02:00:c0:a8:5b:01 remote=192.168.91.2 remote_mac=02:00:c0:a8:5b:02
tenant_rule A ingress id=1 action=allow proto=icmp
tenant_rule A ingress id=2 action=allow proto=tcp dport=41910
conntrack flows=4096
EOF
tl_dp_start $D "$tmp/dp.conf" "$tmp/dp.log" $sock
ok "offcore-dp up: tenant A on a1,a2, tenant B on b, one uplink"
# pings NS ADDR: NS reaches ADDR; the first echo may wait for ARP through
# the DPU (up to 30 s), then 2 more
pings() {
    wait_for 30 ip netns exec $1 ping -c 1 -W 1 $2 &&
        ip netns exec $1 ping -c 2 -i 0.2 -W 2 $2 >/dev/null
}

# --- both attachments of A reach A's remote; the remote reaches each
pings $HA1 10.20.0.2 || fail "ping from A's attachment 1"
pings $HA2 10.20.0.2 || fail "ping from A's attachment 2"
ok "ping from A's attachments 1 (10.20.0.1) and 2 (10.20.0.3) to A's remote"
# the remote resolves both by ARP through the tunnel (broadcast requests
# each delivered to the attachment owning the address)
ip -n $RA neigh flush dev mavxa
pings $RA 10.20.0.1 || fail "ping from A's remote to attachment 1"
pings $RA 10.20.0.3 || fail "ping from A's remote to attachment 2"
ip -n $RA neigh show 10.20.0.1 | grep "lladdr 02:00:0a:14:00:a1" >/dev/null &&
    ip -n $RA neigh show 10.20.0.3 | grep "lladdr 02:00:0a:14:00:a3" >/dev/null ||
    fail "A's remote neighbours: $(ip -n $RA neigh show dev mavxa)"
ok "A's remote pings each attachment; ARP resolved each to its own MAC"

# --- B: its own remote at the same address, never A's
pings $HB 10.20.0.2 || fail "ping in tenant B"
pings $HA1 10.20.0.5 || fail "ping from A1 to 10.20.0.5"
ip netns exec $HB ping -c 2 -i 0.2 -W 1 10.20.0.5 >/dev/null 2>&1 && fail "B reached A's remote"
n=$(ip -n $RA neigh show) || fail "ip neigh show in $RA"
grep 02:00:0a:14:00:b1 <<<"$n" >/dev/null && fail "A's remote saw B's MAC"
ok "B reaches B's remote (same address), not 10.20.0.5 (A's remote only); A does"

# --- host -> host within A (hairpin on the DPU, through A's groups):
# ICMP and TCP 41910 are open by A's ingress group, the replies pass as
# their flows'; TCP 41911 and UDP 41912 are not: no_connection
echo "a2-server" >"$tmp/a2.txt"
bg ip netns exec $HA2 python3 -m http.server 41910 --bind 10.20.0.3 --directory "$tmp" >/dev/null 2>&1
bg ip netns exec $HA2 python3 -m http.server 41911 --bind 10.20.0.3 --directory "$tmp" >/dev/null 2>&1
wait_for 30 listening $HA2 41910 && wait_for 30 listening $HA2 41911 || fail "servers in HA2"
pings $HA1 10.20.0.3 || fail "ping from A's attachment 1 to attachment 2"
pings $HA2 10.20.0.1 || fail "ping from A's attachment 2 to attachment 1"
ip netns exec $HA1 curl -sf --max-time 10 http://10.20.0.3:41910/a2.txt | grep a2-server >/dev/null || fail "curl a1 -> a2:41910"
nc0=$(drop A no_connection)
ip netns exec $HA1 curl -sf --max-time 2 http://10.20.0.3:41911/a2.txt >/dev/null && fail "a2:41911 reachable under default deny"
wait_drop_ge 20 A no_connection $((nc0 + 1)) # a1 -> a2:41911
ip netns exec $HB ping -c 1 -W 1 10.20.0.3 >/dev/null 2>&1 && fail "B reached A's attachment 2"
ok "host -> host within A: ping both ways, curl to a2:41910 (ingress rule; replies by conntrack), a2:41911 refused (no_connection $nc0 -> $(drop A no_connection)); B cannot reach a2"

# --- anti-spoofing, per attachment
cat >"$tmp/spoof.py" <<'EOF'
import sys
from scapy.all import Ether, IP, UDP, ARP, sendp, conf
conf.verb = 0
a1, a2, r = "02:00:0a:14:00:a1", "02:00:0a:14:00:a3", "02:00:0a:14:00:a2"
def udp(iface, mac, ip):
    sendp(Ether(src=mac, dst=r) / IP(src=ip, dst="10.20.0.2") /
          UDP(sport=41900, dport=41900), iface=iface)
if sys.argv[1] == "1":
    udp("maa0", a1, "10.20.0.3")   # attachment 2's address
    udp("maa0", a2, "10.20.0.3")   # attachment 2's MAC and address
    sendp(Ether(src=a1, dst="ff:ff:ff:ff:ff:ff") /
          ARP(op=2, hwsrc=a1, psrc="10.20.0.3", hwdst="ff:ff:ff:ff:ff:ff",
              pdst="10.20.0.3"), iface="maa0")  # gratuitous ARP for it
else:
    udp("mac0", a2, "10.20.0.1")   # attachment 1's address
EOF
s0=$(drop A spoofed) sb0=$(drop B spoofed)
ip netns exec $HA1 $SPY "$tmp/spoof.py" 1 || fail scapy
ip netns exec $HA2 $SPY "$tmp/spoof.py" 2 || fail scapy
wait_drop 20 A spoofed $((s0 + 4))
[ "$(drop B spoofed)" -eq "$sb0" ] || fail "spoofed B moved: $sb0 -> $(drop B spoofed)"
pings $HA2 10.20.0.2 || fail "attachment 2 after the spoofing"
ip -n $RA neigh show 10.20.0.3 | grep "lladdr 02:00:0a:14:00:a3" >/dev/null || fail "RA's entry for 10.20.0.3 poisoned"
ok "attachment 1 with attachment 2's IP (own MAC, a2's MAC, gratuitous ARP), attachment 2 with 1's IP: spoofed +4 exactly"

# --- operator view and live del/add
ctl tenant list | grep "^A vni=100 attach=a1,a2 ip=10.20.0.1,10.20.0.3 " >/dev/null || fail "tenant list: $(ctl tenant list)"
ctl tenant del A | grep "a1,a2" >/dev/null || fail "tenant del A"
ip netns exec $HA1 ping -c 1 -W 1 10.20.0.2 >/dev/null 2>&1 && fail "attachment 1 forwards after tenant del"
ip netns exec $HA2 ping -c 1 -W 1 10.20.0.2 >/dev/null 2>&1 && fail "attachment 2 forwards after tenant del"
pings $HB 10.20.0.2 || fail "B after A's deletion"
ctl tenant add $TA >/dev/null || fail "tenant add A: $(ctl tenant add $TA)"
wait_for 20 ip netns exec $HA1 ping -c 1 -W 1 10.20.0.2 || fail "attachment 1 after tenant add"
wait_for 20 ip netns exec $HA2 ping -c 1 -W 1 10.20.0.2 || fail "attachment 2 after tenant add"
# refused: its status is not the pipeline's, its message is the check
out=$(ctl tenant add B2 vni=300 attach=a2 mac=02:00:0a:14:00:c1 ip=10.20.0.9 local=192.168.91.1 \
    local_mac=02:00:c0:a8:5b:01 remote=192.168.91.2 remote_mac=02:00:c0:a8:5b:02 2>&1)
grep "attachment 'a2' has a tenant" <<<"$out" >/dev/null || fail "a2 taken by a second tenant: $out"
ok "tenant list shows a1,a2; tenant del A closed both (B unaffected); tenant add A reopened both"

if [ "$nq" -gt 1 ]; then
    ok "$nq workers: $(tl_handoffs $sock)frames handed to the worker owning their flow"
fi
tl_dp_stop
echo "PASS ($(($(date +%s) - T0)) s)"
