#!/bin/bash
# dp-tenant-esp-test.sh BUILDDIR [WORKERS] — tenants, ESP and flow export together,
# two servers whose DPUs each have ONE uplink shared by both tenants (needs
# root, network namespaces, tshark, iperf3, curl; exit 77 = skipped
# otherwise).
#
#   HA1, HB1 (10.10.0.1) ── D1 (offcore-dp, uplink txu1, tunnel 192.168.90.1)
#        ── F (a bridge) ──
#   HA2, HB2 (10.10.0.2) ── D2 (offcore-dp, uplink txu2, tunnel 192.168.90.2)
#
# Tenant A is VNI 100, B is VNI 200, with the same addresses.  Tenant
# frames are VXLAN-encapsulated, then ESP-encrypted (AES-256-GCM) between
# the tunnel addresses; D1 exports flows over IPFIX to a collector on its
# loopback (tshark).  Checks, in one run:
#   - ping, curl and iperf3 within each tenant pass; each tenant reaches
#     its own server (the same address in the other tenant serves another
#     file); `offcore dp flows` lists the live iperf3 flow with its VNI;
#   - the fabric capture has nothing but ESP; tshark decrypts all of it
#     (esp.icv_good 1 on every packet) and finds VXLAN inside, with VNIs
#     100 and 200 only; a forged clear VXLAN frame injected on the fabric
#     is dropped by the ESP stage and counted, and never reaches the host; an authentic ESP packet
#     whose VXLAN VNI no tenant has is decrypted, then dropped at the shared
#     uplink and counted once (unknown_vni); live, tenant B deleted and
#     added again on the shared uplink, a duplicate VNI refused;
#   - the IPFIX records tshark decodes carry each tenant's VNI
#     (layer2SegmentId 0x01000000 | VNI) and the inner 5-tuple of its
#     curl; the per-tenant and per-attachment histograms count the flows
#     and `offcore dp stat` shows them (with the TCP timestamp RTTs both ways).
# With WORKERS > 1 (and as many queues on every veth), a frame that reaches
# the worker not owning its flow is handed over after its decryption.
set -u -o pipefail
. "$(dirname "$0")/tenant-lib.sh"
tl_init "$1" "${2:-1}" ping iperf3 curl python3 tcpdump tshark
python3 -c "import cryptography.hazmat.primitives.ciphers.aead" 2>/dev/null ||
    skip "python3-cryptography is not installed"

id=$$
HA1=txHA1$id HB1=txHB1$id HA2=txHA2$id HB2=txHB2$id D1=txD1$id D2=txD2$id F=txF$id
tl_netns tx-tesp $HA1 $HB1 $HA2 $HB2 $D1 $D2 $F
fail_logs() {
    for x in 1 2; do echo "--- offcore-dp $x log"; tail -20 "$tmp/dp$x.log" 2>/dev/null; done
}

# workloads: A and B on each server, 10.10.0.S in both tenants
for s in 1 2; do
    D=$(eval echo \$D$s)
    for t in a b; do
        H=$(eval echo \$H$(echo $t | tr ab AB)$s)
        tl_veth $H tx${t}$s $D txh${t}$s
        ip netns exec $H sysctl -qw net.ipv6.conf.all.disable_ipv6=1
        tl_host $H tx${t}$s 02:00:0a:00:0$s:${t}$s 10.10.0.$s/24
        tl_up $D txh${t}$s
    done
    tl_veth $D txu$s $F txf$s
    tl_up $D txu$s
done
ip -n $F link add txbr type bridge || fail bridge
tl_up $F txf1 txf2 txbr
ip -n $F link set txf1 master txbr
ip -n $F link set txf2 master txbr
mac() { ip netns exec $1 cat /sys/class/net/$2/address; }
u1=$(mac $D1 txu1) u2=$(mac $D2 txu2)

key() { python3 -c "import os; print('0x' + os.urandom(36).hex())"; }
umask 077
key >"$tmp/12.key"; key >"$tmp/21.key"
umask 022
for s in 1 2; do
    o=$((3 - s))
    me=192.168.90.$s peer=192.168.90.$o
    mym=$(eval echo \$u$s) pm=$(eval echo \$u$o)
    {
        echo "threads $nq"
        echo "control unix:$tmp/dp$s.sock"
        echo "attach a host=txha$s wire=txu$s"
        echo "attach b host=txhb$s wire=txu$s"
        for t in A B; do
            l=$(echo $t | tr AB ab) v=100; [ $t = B ] && v=200
            echo "tenant $t vni=$v attach=$l mac=02:00:0a:00:0$s:${l}$s ip=10.10.0.$s local=$me local_mac=$mym remote=$peer remote_mac=$pm"
        done
        echo "conntrack flows=65536"
        echo "sa out spi=0x${s}00${s} local=$me peer=$peer key=$s$o.key match=$peer/32"
        echo "sa in spi=0x${o}00${o} local=$me peer=$peer key=$o$s.key"
        echo "esp_mtu 1500"
        echo "flows on"
        echo "flow_idle 2"
    } >"$tmp/dp$s.conf"
done
# server 2 accepts ICMP, HTTP and iperf3 in both tenants; server 1 nothing
for t in A B; do
    for r in "id=1 action=allow proto=icmp" "id=2 action=allow proto=tcp dport=41580" \
             "id=3 action=allow proto=tcp dport=41581"; do
        echo "tenant_rule $t ingress $r" >>"$tmp/dp2.conf"
    done
done
echo "ipfix 127.0.0.1:41539" >>"$tmp/dp1.conf"

# the collector: a UDP socket that takes the messages (with nothing bound,
# every other send would fail on the ICMP port unreachable); tcpdump
# captures them for tshark's dissector (-U: each packet is written when
# taken, so the file can be counted while it grows)
bg ip netns exec $D1 python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('127.0.0.1', 41539))
while True:
    s.recv(65535)"
ip netns exec $D1 tcpdump -i lo -nn -U -s 0 -w "$tmp/ipfix.pcap" udp port 41539 2>"$tmp/ts.log" &
tspid=$!
echo $tspid >>"$tmp/bg.pids"
udp_up() { ip netns exec $D1 ss -Hlun "sport = :41539" | grep . >/dev/null; }
wait_for 30 udp_up || fail "the IPFIX collector did not bind"
wait_for 30 grep -q listening "$tmp/ts.log" || fail "tcpdump: $(cat "$tmp/ts.log")"
for s in 1 2; do
    D=$(eval echo \$D$s)
    tl_dp_start $D "$tmp/dp$s.conf" "$tmp/dp$s.log" "$tmp/dp$s.sock"
done
ctl() { tl_s=$1; shift; tl_ctl "$tmp/dp$tl_s.sock" "$@"; }
metric() { v=$(ctl $1 stat --raw | awk -v k="$2" '$1 == k {print $2}'); echo "${v:-0}"; }
ok "two offcore-dp, each with one uplink for tenants A and B, ESP and IPFIX"

ip netns exec $F tcpdump -i txf1 -nn -U -s 0 -w "$tmp/fabric.pcap" 2>"$tmp/td.log" &
td=$!
echo $td >>"$tmp/bg.pids"
wait_for 30 grep -q listening "$tmp/td.log" || fail "tcpdump"

listening() { ip netns exec $1 ss -Hltn "sport = :$2" | grep . >/dev/null; }
for t in A B; do
    mkdir -p "$tmp/www$t"
    echo "tenant-$t-server2" >"$tmp/www$t/who.txt"
    H=$(eval echo \$H${t}2)
    bg ip netns exec $H python3 -m http.server 41580 --bind 10.10.0.2 --directory "$tmp/www$t"
    bg ip netns exec $H iperf3 -s -p 41581
done 2>/dev/null >/dev/null
for t in A B; do
    H=$(eval echo \$H${t}2)
    wait_for 30 listening $H 41580 && wait_for 30 listening $H 41581 || fail "servers in $t"
done
for t in A B; do
    H=$(eval echo \$H${t}1)
    wait_for 30 ip netns exec $H ping -c 1 -W 1 10.10.0.2 || fail "first ping in $t"
    ip netns exec $H ping -c 5 -i 0.2 -W 2 10.10.0.2 >/dev/null || fail "ping in $t"
    got=$(ip netns exec $H curl -sf --max-time 10 http://10.10.0.2:41580/who.txt) ||
        fail "curl in $t"
    [ "$got" = "tenant-$t-server2" ] || fail "tenant $t reached '$got'"
    timeout 60 ip netns exec $H iperf3 -c 10.10.0.2 -p 41581 -t 2 -b 20M -J >"$tmp/ip$t.json" &
    ipp=$!
    # the live iperf3 flow, listed with its tenant's VNI: asked for while
    # iperf3 runs (however slowly it starts), until it is listed
    v=100; [ $t = B ] && v=200
    listed() {
        ctl 1 flows >"$tmp/flows$t.txt" || return 1
        grep -q "^10.10.0.1:[0-9]* *10.10.0.2:41581 *6 .* $v$" "$tmp/flows$t.txt"
    }
    until listed; do
        kill -0 $ipp 2>/dev/null || break
        sleep 0.1
    done
    wait $ipp || fail "iperf3 in $t"
    grep -q "^10.10.0.1:[0-9]* *10.10.0.2:41581 *6 .* $v$" "$tmp/flows$t.txt" ||
        fail "offcore dp flows: no live iperf3 flow of tenant $t with vni $v: $(cat "$tmp/flows$t.txt")"
    python3 - "$tmp/ip$t.json" $t <<'EOF' || fail "iperf3 in $t"
import json, sys
b = json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]
print("ok: tenant %s: ping, curl (its own server), iperf3 (limited to 20 Mbit/s: the capture stays small) %.1f Mbit/s through VXLAN + ESP on one uplink" % (sys.argv[2], b / 1e6))
sys.exit(0 if b > 1e6 else 1)
EOF
done
# the workloads' MTU is VXLAN's usual 1450: TCP fits VXLAN + ESP in 1500 by
# the DPUs' MSS clamp; a larger non-TCP packet is dropped and counted
[ "$(metric 1 offcore_dp_esp_mss_clamped_total)" -gt 0 ] || fail "no SYN was clamped"
too=$(metric 1 'offcore_dp_esp_packets_total{dir="out",result="too_big"}')
ip netns exec $HA1 ping -c 1 -W 1 -M do -s 1422 10.10.0.2 >/dev/null 2>&1 &&
    fail "a 1450-byte ping passed: it cannot fit VXLAN and ESP in 1500"
too_big_moved() { [ "$(metric 1 'offcore_dp_esp_packets_total{dir="out",result="too_big"}')" -gt "$too" ]; }
wait_for 20 too_big_moved || fail "too_big not counted"
ip netns exec $HA1 ping -c 1 -W 2 -M do -s 1365 10.10.0.2 >/dev/null ||
    fail "the largest ping that fits VXLAN + ESP in 1500 (1393 bytes) did not pass"
ok "TCP SYNs clamped ($(metric 1 offcore_dp_esp_mss_clamped_total)); a 1450-byte ping is dropped and counted (too_big); 1393 bytes pass"
capture_barrier $F txf1 "$tmp/fabric.pcap" || fail "the fabric capture lacks its barrier frame"
kill -INT $td; wait $td 2>/dev/null

# --- the fabric: only ESP; decrypted, VXLAN with the tenants' VNIs
nip=$(tcpdump -nn -r "$tmp/fabric.pcap" 'ip and not igmp' 2>/dev/null | wc -l)
nnot=$(tcpdump -nn -r "$tmp/fabric.pcap" 'ip and not ip proto 50 and not igmp' 2>/dev/null | wc -l)
echo "fabric: $nip IP packets, $nnot of them not ESP"
[ "$nip" -gt 1000 ] || fail "fabric capture has $nip IP packets"
[ "$nnot" = 0 ] || fail "$nnot packets on the fabric are not ESP: $(tcpdump -nn -r "$tmp/fabric.pcap" 'ip and not ip proto 50 and not igmp' 2>/dev/null | head -4)"
k12=$(tr -d '\n' <"$tmp/12.key") k21=$(tr -d '\n' <"$tmp/21.key")
env -u MALLOC_PERTURB_ tshark -r "$tmp/fabric.pcap" \
    -o esp.enable_encryption_decode:TRUE -o esp.enable_authentication_check:TRUE \
    -o "uat:esp_sa:\"IPv4\",\"192.168.90.1\",\"192.168.90.2\",\"0x00001001\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"$k12\",\"NULL\",\"\"" \
    -o "uat:esp_sa:\"IPv4\",\"192.168.90.2\",\"192.168.90.1\",\"0x00002002\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"$k21\",\"NULL\",\"\"" \
    -Y esp -T fields -E occurrence=l -e esp.icv_good -e vxlan.vni -e ip.src -e arp.src.proto_ipv4 \
    >"$tmp/dec.txt" 2>"$tmp/tshark.err" || fail "tshark: $(cat "$tmp/tshark.err")"
python3 - "$tmp/dec.txt" "$nip" <<'EOF' || fail "tshark decryption"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
nip = int(sys.argv[2])
good = sum(1 for r in rows if r[0] == "1")
vni = {}
for r in rows:
    vni[r[1]] = vni.get(r[1], 0) + 1
# inside the VXLAN: the tenants' IP packets, or their ARP
inner = sum(1 for r in rows if r[2] in ("10.10.0.1", "10.10.0.2") or
            r[3] in ("10.10.0.1", "10.10.0.2"))
print("tshark: %d ESP packets, icv_good=1 on %d; VXLAN VNIs inside: %s; a tenant's IP or ARP in %d" %
      (len(rows), good, vni, inner))
ok = (len(rows) == nip and good == nip and set(vni) == {"100", "200"}
      and min(vni.values()) > 100 and inner == nip)
sys.exit(0 if ok else 1)
EOF
ok "the fabric shows only ESP; tshark decrypts every packet (icv_good 1) to VXLAN with VNIs 100 and 200"
if [ "$nq" -gt 1 ]; then
    ok "$nq workers: frames handed to the worker owning their flow: $(ctl 1 stat --raw | sed -n 's/^offcore_dp_tenant_handoff_packets_total{tenant="\(.\)"} \([0-9]*\)$/\1:\2/p' | tr '\n' ' ')(server 1), $(ctl 2 stat --raw | sed -n 's/^offcore_dp_tenant_handoff_packets_total{tenant="\(.\)"} \([0-9]*\)$/\1:\2/p' | tr '\n' ' ')(server 2)"
fi

# --- a forged clear VXLAN frame for tenant A, injected on the fabric toward
# D2, is refused by the ESP stage (counted), never decapsulated: A's host
# on server 2 does not see it
before=$(metric 2 'offcore_dp_esp_clear_packets_total{dir="in",action="dropped"}')
ip netns exec $HA2 tcpdump -i txa2 -nn -U -w "$tmp/forged.pcap" 'icmp[8:4] = 0x666f7267 or ether proto 0x88b5' 2>"$tmp/tdf.log" &
tdf=$!
echo $tdf >>"$tmp/bg.pids"
wait_for 30 grep -q listening "$tmp/tdf.log" || fail "tcpdump in HA2"
ip netns exec $F python3 - "$u1" "$u2" <<'EOF' || fail "inject"
import socket, struct, sys
mac = lambda s: bytes.fromhex(s.replace(":", ""))
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
icmp = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"forged" * 4
icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
iip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 1, 0, 64, 1, 0,
                  bytes([10, 10, 0, 1]), bytes([10, 10, 0, 2]))
iip = iip[:10] + struct.pack("!H", csum(iip)) + iip[12:]
inner = mac("02:00:0a:00:02:a2") + mac("02:00:0a:00:01:a1") + b"\x08\x00" + iip + icmp
vx = struct.pack("!II", 0x08000000, 100 << 8) + inner
udp = struct.pack("!HHHH", 50000, 4789, 8 + len(vx), 0) + vx
oip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0x4000, 64, 17, 0,
                  bytes([192, 168, 90, 1]), bytes([192, 168, 90, 2]))
oip = oip[:10] + struct.pack("!H", csum(oip)) + oip[12:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("txf2", 0))
s.send(mac(sys.argv[2]) + mac(sys.argv[1]) + b"\x08\x00" + oip + udp)
EOF
clear_moved() { [ "$(metric 2 'offcore_dp_esp_clear_packets_total{dir="in",action="dropped"}')" -gt "$before" ]; }
wait_for 20 clear_moved || fail "the forged clear VXLAN frame was not counted"
capture_barrier $HA2 txa2 "$tmp/forged.pcap" || fail "HA2's capture lacks its barrier frame"
kill -INT $tdf; wait $tdf 2>/dev/null
# (the count may include the namespaces' own multicast reports: not exact)
[ "$(tcpdump -nn -r "$tmp/forged.pcap" icmp 2>/dev/null | wc -l)" = 0 ] ||
    fail "the forged frame reached tenant A's host"
ok "a forged clear VXLAN frame for tenant A on the fabric is dropped by the ESP stage and counted; A's host never sees it"

# --- flows: histograms per tenant and attachment, then the IPFIX records
# flow_idle 2 s; an idle worker's expiry pass takes up to ~10 s (it wakes
# once a second: flow_stage.c), then the exporter's next pass: 60 s for a
# loaded host
hist_ok() { # SERVER TENANT VNI ATTACH: at least ping, curl and iperf3's two
    # connections ended (duration and bytes), the three TCP ones with an RTT
    [ "$(metric $1 "offcore_dp_tenant_flow_duration_seconds_count{tenant=\"$2\",vni=\"$3\"}")" -ge 4 ] &&
    [ "$(metric $1 "offcore_dp_tenant_flow_tcp_handshake_rtt_seconds_count{tenant=\"$2\",vni=\"$3\"}")" -ge 3 ] &&
    [ "$(metric $1 "offcore_dp_tenant_flow_tcp_rtt_seconds_count{tenant=\"$2\",vni=\"$3\",toward=\"responder\"}")" -ge 1 ] &&
    [ "$(metric $1 "offcore_dp_tenant_flow_tcp_rtt_seconds_count{tenant=\"$2\",vni=\"$3\",toward=\"initiator\"}")" -ge 1 ] &&
    [ "$(metric $1 "offcore_dp_attach_flow_bytes_count{attach=\"$4\"}")" -ge 4 ]
}
for s in 1 2; do
    wait_for 60 hist_ok $s A 100 a || fail "server $s: tenant A's histograms: $(ctl $s stat --raw | grep -E '_count\{(tenant="A"|attach="a")'; ctl $s flows)"
    wait_for 60 hist_ok $s B 200 b || fail "server $s: tenant B's histograms: $(ctl $s stat --raw | grep -E '_count\{(tenant="B"|attach="b")'; ctl $s flows)"
done
ctl 1 stat >"$tmp/stat.txt" || fail "offcore dp stat"

grep -q "tenant_flow_duration_seconds .*A.*100" "$tmp/stat.txt" &&
    grep -q "attach_flow_bytes .*b" "$tmp/stat.txt" || fail "stat shows no histograms: $(cat "$tmp/stat.txt")"
sed -n '/^flow histograms/,/^$/p' "$tmp/stat.txt" | head -14
ok "per-tenant and per-attachment histograms (handshake RTT, timestamp RTTs both ways, duration, bytes) count the flows; offcore dp stat shows them"

# --- live on the shared uplink: B deleted (its frames are dropped, A goes
# on), a tenant with A's VNI on the same port refused, B added back
bline=$(grep "^tenant B " "$tmp/dp1.conf" | cut -d' ' -f2-)
ctl 1 tenant del B >/dev/null || fail "tenant del B"
ip netns exec $HB1 ping -c 2 -i 0.2 -W 1 10.10.0.2 >/dev/null 2>&1 &&
    fail "tenant B still reaches server 2 after tenant del"
ip netns exec $HA1 ping -c 2 -i 0.2 -W 2 10.10.0.2 >/dev/null || fail "A stopped with B's deletion"
ctl 1 tenant add $(echo "$bline" | sed 's/vni=200/vni=100/') >"$tmp/dup.out" 2>&1 &&
    fail "a second tenant with VNI 100 on the uplink was accepted"
grep -q "vni 100 is tenant A's on the same wire port" "$tmp/dup.out" || fail "dup VNI: $(cat "$tmp/dup.out")"
ctl 1 tenant add $bline >/dev/null || fail "tenant add B"
wait_for 30 ip netns exec $HB1 ping -c 1 -W 1 10.10.0.2 || fail "B after tenant add"
ok "live on the shared uplink: tenant del B stops B (A goes on), a duplicate VNI is refused, tenant add B restores it"

# --- the shared uplink: an authentic ESP packet (encrypted here with A->B's
# key, a sequence number far above the window) carrying VXLAN with a VNI no
# tenant has: decrypted, then dropped and counted as unknown_vni on the
# uplink, delivered to no tenant.  (Last: it moves D2's replay window.)
before=$(metric 2 'offcore_dp_uplink_dropped_packets_total{port="txu2",reason="unknown_vni"}')
ip netns exec $F python3 - "$u1" "$u2" "$tmp/12.key" <<'EOF' || fail "inject ESP"
import socket, struct, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
mac = lambda s: bytes.fromhex(s.replace(":", ""))
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def ipv4(proto, src, dst, payload, df=0):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, df, 64,
                    proto, 0, bytes(src), bytes(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload
icmp = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"vni-300!" * 4
icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
inner = mac("02:00:0a:00:02:a2") + mac("02:00:0a:00:01:a1") + b"\x08\x00" + \
    ipv4(1, [10, 10, 0, 1], [10, 10, 0, 2], icmp)
vx = struct.pack("!II", 0x08000000, 300 << 8) + inner
vxip = ipv4(17, [192, 168, 90, 1], [192, 168, 90, 2],
            struct.pack("!HHHH", 50000, 4789, 8 + len(vx), 0) + vx, 0x4000)
k = bytes.fromhex(open(sys.argv[3]).read().strip()[2:])
key, salt = k[:32], k[32:]
spi, seq = 0x1001, 0x7fff0000
iv = struct.pack("!Q", seq)
pad = (4 - (len(vxip) + 2) % 4) % 4
pt = vxip + bytes(range(1, pad + 1)) + bytes([pad, 4])
hdr = struct.pack("!II", spi, seq)
ct = AESGCM(key).encrypt(salt + iv, pt, hdr)
esp = ipv4(50, [192, 168, 90, 1], [192, 168, 90, 2], hdr + iv + ct)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("txf2", 0))
s.send(mac(sys.argv[2]) + mac(sys.argv[1]) + b"\x08\x00" + esp)
EOF
vni_moved() { [ "$(metric 2 'offcore_dp_uplink_dropped_packets_total{port="txu2",reason="unknown_vni"}')" -gt "$before" ]; }
wait_for 20 vni_moved || fail "VNI 300 not counted: $(ctl 2 stat --raw | grep -E 'uplink|esp_packets')"
[ "$(metric 2 'offcore_dp_uplink_dropped_packets_total{port="txu2",reason="unknown_vni"}')" = $((before + 1)) ] ||
    fail "VNI 300 counted more than once"
ok "an authentic ESP packet with VXLAN VNI 300 (no tenant's) is decrypted, then dropped at the shared uplink and counted once"

tl_dp_stop  # the last records go out at stop
# offcore-dp 1 logs at its stop how many messages the collector was sent:
# the capture holds them all before it is stopped
sent=$(sed -n 's/.*ipfix 127.0.0.1:41539: \([0-9]*\) messages sent.*/\1/p' "$tmp/dp1.log")
[ -n "$sent" ] && [ "$sent" -gt 0 ] || fail "offcore-dp 1 logged no IPFIX total: $(tail -5 "$tmp/dp1.log")"
captured() { [ "$(tcpdump -r "$tmp/ipfix.pcap" 2>/dev/null | wc -l)" -ge "$sent" ]; }
wait_for 30 captured || fail "the capture has $(tcpdump -r "$tmp/ipfix.pcap" 2>/dev/null | wc -l) of the $sent IPFIX messages"
kill -INT $tspid; wait $tspid 2>/dev/null
env -u MALLOC_PERTURB_ tshark -r "$tmp/ipfix.pcap" -d udp.port==41539,cflow \
    -Y "cflow.srcaddr" -T fields -E separator='|' -E aggregator=';' \
    -e cflow.layer2_segment_id -e cflow.protocol -e cflow.srcaddr \
    -e cflow.dstaddr -e cflow.dstport >"$tmp/flows.txt" 2>"$tmp/tsf.err" ||
    fail "tshark IPFIX: $(cat "$tmp/tsf.err")"
python3 - "$tmp/flows.txt" <<'EOF' || fail "IPFIX records"
import sys
recs = []
for line in open(sys.argv[1]):
    cols = [c.split(";") for c in line.rstrip("\n").split("|")]
    if len(set(len(c) for c in cols)) != 1:
        raise SystemExit("tshark: fields do not line up: " + line)
    for r in zip(*cols):
        recs.append(r)
def vni(x):
    v = int(x, 0)
    return v & 0xffffff if v >> 56 == 1 else None
seen = {}
for seg, proto, src, dst, dport in recs:
    k = (vni(seg), proto, src, dst, dport)
    seen[k] = seen.get(k, 0) + 1
print("IPFIX: %d records; (vni, proto, src, dst, dport): %s" % (len(recs), sorted(seen, key=str)[:12]))
need = [(v, "6", "10.10.0.1", "10.10.0.2", p) for v in (100, 200) for p in ("41580", "41581")]
missing = [k for k in need if k not in seen]
# the pings (ICMP: the record's ports are the type and code)
missing += [(v, "1") for v in (100, 200)
            if not any(k[0] == v and k[1] == "1" for k in seen)]
bad = [k for k in seen if k[0] not in (100, 200)]
if missing or bad:
    print("missing %s, not a tenant's VNI %s" % (missing, bad))
sys.exit(1 if missing or bad else 0)
EOF
ok "IPFIX: every record carries its tenant's VNI (layer2SegmentId, VXLAN type) and the inner 5-tuple"
echo "PASS ($(($(date +%s) - T0)) s)"
