#!/bin/bash
# esp-test.sh BUILDDIR — two offcore-dp DPUs with ESP (AES-256-GCM) between
# them, real traffic (needs root, network namespaces, tshark; exit 77 =
# skipped otherwise).
#
#   HA 10.78.0.1 ── DA (offcore-dp, wire 192.0.2.1) ── F (fabric: a bridge)
#                  ── DB (offcore-dp, wire 192.0.2.2) ── HB 10.78.0.2
#
# Hosts' and wire MTU 1500 (esp_mtu): TCP fits by the DPUs' MSS clamp,
# larger datagrams are dropped and counted (too_big).  Checks, in one run:
#   - ping, iperf3 TCP and curl (a random 1 MB file, sha256 compared: the
#     inner traffic arrives byte-identical) between HA and HB;
#   - the fabric capture (tcpdump on F's port toward DA) has no IP packet
#     but ESP; tshark decrypts it with the configured keys and every ESP
#     packet's esp.icv_good is 1 (and the decrypted packets are the hosts');
#   - a captured packet sent again into DB (a raw socket in F) is refused
#     as a replay and counted; the same with a flipped ciphertext bit fails
#     the ICV and is counted; with an unknown SPI, and cut short, likewise;
#     traffic goes on after each;
#   - live SA changes: `sa del` stops the traffic (counted as unknown SPI on
#     the far side / clear drops), `sa add` with a new SPI (rekey) restores
#     it; `sa list` never shows a key; a key file with mode 0644 is refused.
set -u -o pipefail
# meson sets MALLOC_PERTURB_: it makes tshark ~80x slower on big captures
build=$1
dp=$build/src/dp/offcore-dp
cli=$build/src/tools/offcore
T0=$(date +%s)

. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root"
for t in ip ethtool ping iperf3 curl python3 tcpdump tshark timeout sha256sum; do
    command -v $t >/dev/null 2>&1 || skip "$t is not installed"
done

id=$$
HA=ocxHA$id HB=ocxHB$id DA=ocxDA$id DB=ocxDB$id F=ocxF$id
ip netns add $HA 2>/dev/null || skip "cannot create network namespaces"
tmp=$(mktemp -d /tmp/ocx-esp.XXXXXX)
pids=
cleanup_extra() {
    for p in $pids; do kill "$p" 2>/dev/null; done
}
cleanup_on_exit $HA $HB $DA $DB $F
fail_logs() {
    for x in a b; do
        echo "--- offcore-dp $x log"; tail -20 "$tmp/dp$x.log" 2>/dev/null
    done
}

for n in $HB $DA $DB $F; do ip netns add $n || fail "netns $n"; done
# host A - DPU A - fabric - DPU B - host B
ip link add ocxha0 netns $HA type veth peer name ocxha1 netns $DA || fail veth
ip link add ocxwa netns $DA type veth peer name ocxfa netns $F || fail veth
ip link add ocxwb netns $DB type veth peer name ocxfb netns $F || fail veth
ip link add ocxhb0 netns $HB type veth peer name ocxhb1 netns $DB || fail veth
ip -n $F link add ocxbr type bridge || fail bridge
ip -n $F link set ocxfa master ocxbr
ip -n $F link set ocxfb master ocxbr
for x in "$HA ocxha0" "$DA ocxha1" "$DA ocxwa" "$F ocxfa" "$F ocxfb" \
         "$F ocxbr" "$DB ocxwb" "$DB ocxhb1" "$HB ocxhb0"; do
    set -- $x
    ip -n $1 link set lo up
    ip -n $1 link set $2 up
done
for x in "$HA ocxha0 10.78.0.1" "$HB ocxhb0 10.78.0.2"; do
    set -- $x
    ip netns exec $1 sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip -n $1 addr add $3/24 dev $2
    ip netns exec $1 ethtool -K $2 tx off tso off gso off >/dev/null || fail ethtool
done

# keys: 32-byte key + 4-byte salt, as hex; mode 0600
key() { python3 -c "import os; print('0x' + os.urandom(36).hex())"; }
umask 077
key >"$tmp/ab.key"; key >"$tmp/ba.key"; key >"$tmp/ab2.key"
umask 022
for x in a b; do
    if [ $x = a ]; then
        host=ocxha1 wire=ocxwa me=192.0.2.1 peer=192.0.2.2 out=0x1001 in=0x2002
        okey=ab.key ikey=ba.key
    else
        host=ocxhb1 wire=ocxwb me=192.0.2.2 peer=192.0.2.1 out=0x2002 in=0x1001
        okey=ba.key ikey=ab.key
    fi
    cat >"$tmp/dp$x.conf" <<EOF
control unix:$tmp/dp$x.sock
attach t0 host=$host wire=$wire
esp_mtu 1500
sa out spi=$out local=$me peer=$peer key=$okey match=10.78.0.0/24
sa in spi=$in local=$me peer=$peer key=$ikey
EOF
done
ctl() { x=$1; shift; "$cli" dp --control unix:$tmp/dp$x.sock "$@"; }
metric() { # DPU NAME{LABELS}: the value, 0 when absent
    v=$(ctl $1 stat --raw | awk -v k="$2" '$1 == k {print $2}')
    echo "${v:-0}"
}

# a key file others can read is refused, with the reason and no key
chmod 644 "$tmp/ba.key"
ip netns exec $DA "$dp" --check --config "$tmp/dpa.conf" >"$tmp/check.out" 2>&1 &&
    fail "a 0644 key file was accepted"
grep -q "dpa.conf:5: sa: key file .*ba.key: mode 644 .*chmod 600" "$tmp/check.out" ||
    fail "no file:line reason for the key mode: $(cat "$tmp/check.out")"
grep -qi "$(cut -c3-20 "$tmp/ba.key")" "$tmp/check.out" && fail "the key was printed"
chmod 600 "$tmp/ba.key"
ok "a key file with mode 0644 is refused (file:line, no key shown)"

for x in a b; do
    d=$DA; [ $x = b ] && d=$DB
    OC_LOG=info ip netns exec $d "$dp" --config "$tmp/dp$x.conf" >"$tmp/dp$x.log" 2>&1 &
    pids="$pids $!"
done
wait_for 60 ctl a ping || fail "offcore-dp A did not come up"
wait_for 60 ctl b ping || fail "offcore-dp B did not come up"
ok "two offcore-dp up"

# --- the fabric capture, during all the traffic below
ip netns exec $F tcpdump -i ocxfa -nn -U -s 0 -w "$tmp/fabric.pcap" 2>"$tmp/td.log" &
td=$!
echo $td >>"$tmp/bg.pids"
wait_for 10 grep -q listening "$tmp/td.log" || fail "tcpdump"

wait_for 30 ip netns exec $HA ping -c 1 -W 1 10.78.0.2 || fail "first ping"
ip netns exec $HA ping -c 5 -i 0.2 -W 2 10.78.0.2 >/dev/null || fail "ping"
ok "ping"
listening() { ip netns exec $HB ss -Hltn "sport = :$1" | grep . >/dev/null; }
head -c 1000000 /dev/urandom >"$tmp/blob.bin"
bg ip netns exec $HB python3 -m http.server 28080 --bind 10.78.0.2 \
    --directory "$tmp" >/dev/null 2>&1
bg ip netns exec $HB iperf3 -s -p 28201 >/dev/null 2>&1
wait_for 30 listening 28080 || fail "http.server"
ip netns exec $HA curl -sf --max-time 10 -o "$tmp/got.bin" \
    http://10.78.0.2:28080/blob.bin || fail "curl"
[ "$(sha256sum <"$tmp/blob.bin")" = "$(sha256sum <"$tmp/got.bin")" ] ||
    fail "curl: the file differs"
ok "curl: 1 MB arrived byte-identical"
wait_for 30 listening 28201 || fail "iperf3 server"
timeout 60 ip netns exec $HA iperf3 -c 10.78.0.2 -p 28201 -n 20M -J >"$tmp/tcp.json" ||
    fail "iperf3"
python3 - "$tmp/tcp.json" <<'EOF' || fail "iperf3 result"
import json, sys
j = json.load(open(sys.argv[1]))
b = j["end"]["sum_received"]["bits_per_second"]
print("ok: iperf3 TCP through ESP %.2f Gbit/s" % (b / 1e9))
sys.exit(0 if b > 1e6 else 1)
EOF
[ "$(metric a offcore_dp_esp_mss_clamped_total)" -gt 0 ] || fail "no SYN was clamped"
ok "TCP SYNs clamped to the ESP MSS ($(metric a offcore_dp_esp_mss_clamped_total))"
ip netns exec $HA ping -c 1 -W 1 -M do -s 1472 10.78.0.2 >/dev/null 2>&1 &&
    fail "a 1500-byte ping passed: it cannot fit ESP in 1500"
# (functions: wait_for reads the counters again on every try)
too_big_counted() { [ "$(metric a 'offcore_dp_esp_packets_total{dir="out",result="too_big"}')" -gt 0 ]; }
wait_for 20 too_big_counted || fail "too_big not counted"
ip netns exec $HA ping -c 1 -W 2 -M do -s 1415 10.78.0.2 >/dev/null ||
    fail "the largest ping that fits ESP in 1500 (1443 bytes) did not pass"
ok "a packet too big for ESP is dropped and counted; 1443 bytes pass"
capture_barrier $F ocxfa "$tmp/fabric.pcap" || fail "the fabric capture lacks its barrier frame"
kill -INT $td; wait $td 2>/dev/null

# --- the fabric: only ESP; tshark decrypts it and every ICV is good
nip=$(tcpdump -nn -r "$tmp/fabric.pcap" 'ip and not igmp' 2>/dev/null | wc -l)
# the namespaces' own kernels may announce multicast membership on a link
# that comes up (IGMPv3 reports from 0.0.0.0 to 224.0.0.22): not the hosts'
# traffic, so not counted; everything else must be ESP
nnot=$(tcpdump -nn -r "$tmp/fabric.pcap" 'ip and not ip proto 50 and not igmp' 2>/dev/null | wc -l)
t1=$(date +%s)
echo "fabric: $nip IP packets, $nnot of them not ESP"
[ "$nip" -gt 1000 ] || fail "fabric capture has $nip IP packets"
[ "$nnot" = 0 ] || fail "$nnot packets on the fabric are not ESP: $(tcpdump -nn -v -r "$tmp/fabric.pcap" 'ip and not ip proto 50 and not igmp' 2>/dev/null | head -6)"
kab=$(tr -d '\n' <"$tmp/ab.key") kba=$(tr -d '\n' <"$tmp/ba.key")
env -u MALLOC_PERTURB_ tshark -r "$tmp/fabric.pcap" \
    -o esp.enable_encryption_decode:TRUE -o esp.enable_authentication_check:TRUE \
    -o "uat:esp_sa:\"IPv4\",\"192.0.2.1\",\"192.0.2.2\",\"0x00001001\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"$kab\",\"NULL\",\"\"" \
    -o "uat:esp_sa:\"IPv4\",\"192.0.2.2\",\"192.0.2.1\",\"0x00002002\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"$kba\",\"NULL\",\"\"" \
    -Y esp -T fields -e esp.spi -e esp.icv_good -e ip.src -e esp.sequence \
    >"$tmp/dec.txt" 2>"$tmp/tshark.err" || fail "tshark: $(cat "$tmp/tshark.err")"
python3 - "$tmp/dec.txt" "$nip" <<'EOF' || fail "tshark decryption"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
nip = int(sys.argv[2])
good = sum(1 for r in rows if r[1] == "1")
inner = sum(1 for r in rows if "10.78.0." in r[2])  # the decrypted inner IP
print("tshark: %d ESP packets, icv_good=1 on %d, inner hosts' IP in %d" %
      (len(rows), good, inner))
sys.exit(0 if len(rows) == nip and good == len(rows) and inner == len(rows) else 1)
EOF
ok "fabric shows only ESP; tshark decrypts all of it, every esp.icv_good is 1 ($(($(date +%s) - t1)) s)"

# --- hostile packets into DB: replay, flipped bit, unknown SPI, short
python3 - "$tmp/fabric.pcap" "$tmp" <<'EOF' || fail "picking packets"
import struct, sys
d = open(sys.argv[1], "rb").read()
off, pick = 24, None
while off + 16 <= len(d):
    n = struct.unpack_from("<I", d, off + 8)[0]
    f = d[off + 16: off + 16 + n]
    off += 16 + n
    # an ESP packet A -> B (SPI 0x1001) carrying a 1400-byte inner packet
    if len(f) > 1000 and f[12:14] == b"\x08\x00" and f[23] == 50 and \
            f[34:38] == b"\x00\x00\x10\x01":
        pick = f  # the last one: its sequence number is near B's window top
if pick is None:
    sys.exit(1)
out = sys.argv[2]
open(out + "/replay.bin", "wb").write(pick)
flip = bytearray(pick); flip[100] ^= 0x04          # inside the ciphertext
open(out + "/flip.bin", "wb").write(flip)
spi = bytearray(pick); spi[34:38] = b"\x00\x00\x77\x77"
open(out + "/spi.bin", "wb").write(spi)
short = bytearray(pick[:14 + 20 + 20])              # outer IP + 20 bytes
short[16:18] = struct.pack("!H", 40)
short[24:26] = b"\0\0"
s = sum(struct.unpack("!10H", bytes(short[14:34])))
s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
short[24:26] = struct.pack("!H", ~s & 0xffff)
open(out + "/short.bin", "wb").write(short)
EOF
inject() { # FILE: send the frame from F toward DB
    ip netns exec $F python3 -c "
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('ocxfb', 0))
s.send(open(sys.argv[1], 'rb').read())" "$1"
}
expect() { # RESULT BEFORE: wait until DB's in/RESULT counter passes BEFORE
    # (up to 30 s: a loaded host is slow, not wrong)
    n=300
    while [ $n -gt 0 ]; do
        v=$(metric b "offcore_dp_esp_packets_total{dir=\"in\",result=\"$1\"}")
        [ "$v" -gt "$2" ] && return 0
        sleep 0.1; n=$((n - 1))
    done
    return 1
}
hostile() { # FILE RESULT: inject FILE, DB counts exactly one more RESULT
    before=$(metric b "offcore_dp_esp_packets_total{dir=\"in\",result=\"$2\"}")
    inject "$tmp/$1.bin" || fail "inject $1"
    expect $2 $before || fail "$1: counter $2 did not move ($(ctl b stat --raw | grep esp_packets))"
    after=$(metric b "offcore_dp_esp_packets_total{dir=\"in\",result=\"$2\"}")
    [ $((after - before)) = 1 ] || fail "$1: counted $((after - before)) times"
}
hostile replay replay
ok "a captured packet sent again: dropped and counted as replay"
# A fresh window on B (the SA deleted and added again, same key), so that
# the captured packet's sequence number is new to it: a flipped bit in its
# ciphertext then fails on the ICV alone; the intact packet is accepted
# once (the failure did not burn its number), and its second copy is a
# replay.
ctl b sa del in 0x1001 >/dev/null || fail "sa del in"
ctl b sa add in spi=0x1001 local=192.0.2.2 peer=192.0.2.1 key="$tmp/ab.key" >/dev/null ||
    fail "sa add in"
hostile flip icv
ok "a flipped ciphertext bit: dropped and counted as icv"
hostile replay ok
hostile replay replay
ok "the intact packet is accepted once on the fresh window, then a replay"
hostile spi unknown_spi
ok "an unknown SPI: dropped and counted as unknown_spi"
hostile short short
ok "a short ESP packet: dropped and counted as short"
ip netns exec $HA ping -c 3 -i 0.2 -W 2 10.78.0.2 >/dev/null || fail "ping after the hostile packets"
ok "traffic goes on after the hostile packets"

# --- live SAs: delete A's out SA, traffic stops; rekey with a new SPI
ctl a sa list >"$tmp/sa.txt" || fail "sa list"
cat "$tmp/sa.txt"
grep -q "^out spi=0x00001001 .* packets=[1-9]" "$tmp/sa.txt" || fail "sa list counters"
grep -qi "$(cut -c3-20 "$tmp/ab.key")" "$tmp/sa.txt" && fail "sa list shows a key"
m=$(ctl a stat --raw) || fail "stat --raw"
grep -i "$(cut -c3-20 "$tmp/ab.key")" <<<"$m" >/dev/null && fail "metrics show a key"
ctl a sa del out 0x1001 || fail "sa del"
ip netns exec $HA ping -c 2 -i 0.2 -W 1 10.78.0.2 >/dev/null 2>&1 &&
    fail "ping passed without an out SA"
clear_counted() { [ "$(metric a 'offcore_dp_esp_clear_packets_total{dir="out",action="dropped"}')" -gt 0 ]; }
wait_for 20 clear_counted || fail "clear drops not counted"
ok "sa del: A's traffic to B is dropped (esp_clear deny) and counted"
ctl a sa add out spi=0x1003 local=192.0.2.1 peer=192.0.2.2 key="$tmp/ab2.key" \
    match=10.78.0.0/24 || fail "sa add out"
ip netns exec $HA ping -c 2 -i 0.2 -W 1 10.78.0.2 >/dev/null 2>&1 &&
    fail "ping passed with an SA B does not know"
spi_counted() { [ "$(metric b 'offcore_dp_esp_packets_total{dir="in",result="unknown_spi"}')" -gt 1 ]; }
wait_for 20 spi_counted || fail "B did not count the unknown SPI"
ctl b sa add in spi=0x1003 local=192.0.2.2 peer=192.0.2.1 key="$tmp/ab2.key" || fail "sa add in"
ip netns exec $HA ping -c 3 -i 0.2 -W 2 10.78.0.2 >/dev/null || fail "ping after the rekey"
ok "rekey: new SPI added live on both sides, traffic flows again"
ctl a sa add out spi=0x1003 local=192.0.2.1 peer=192.0.2.2 key="$tmp/ab2.key" 2>"$tmp/dup.err" &&
    fail "a duplicate SA was accepted"
grep -q "exists" "$tmp/dup.err" || fail "duplicate SA: $(cat "$tmp/dup.err")"
ok "a duplicate SPI is refused"

for x in a b; do
    echo "--- DPU $x ESP counters"
    ctl $x stat --raw | grep '^offcore_dp_esp' | grep -v ' 0$'
done
for p in $pids; do kill -TERM $p; done
for p in $pids; do wait $p || fail "offcore-dp exit status $?"; done
pids=
ok "clean stop"
echo "esp-test: passed in $(($(date +%s) - T0)) s"
