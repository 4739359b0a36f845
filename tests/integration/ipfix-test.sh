#!/bin/bash
# ipfix-test.sh BUILDDIR — offcore-dp's flow records exported over IPFIX to
# three real collectors at once (needs root, network namespaces, nfdump's
# nfcapd, pmacct's nfacctd, tshark; exit 77 = skipped otherwise).
#
#   A 10.79.0.1 ── offcore-dp (namespace D) ── B 10.79.0.2
#   collectors in D on loopback: nfcapd :28055, nfacctd :28056 (tcpdump
#   captures both for tshark's dissector), and :28057 where nothing
#   listens (a collector that is down).
#
# Traffic: ping -c 7, a curl, an iperf3 TCP run of 20 MB.  Ground truth:
# tcpdump in A (IP total lengths per direction).  Checks:
#   - nfdump (nfcapd's files), nfacctd (print plugin CSV) and tshark (its
#     IPFIX dissector) each show the three flows; the forward packet and
#     octet counts match the capture: ping's 7 packets exactly, iperf3's
#     and curl's packets and octets within 1% (exact in practice);
#   - tshark decodes every message: no malformed packet, template and data
#     sets, sequence numbers that add up, the observation domain;
#   - the down collector costs its messages (counted as failed), never a
#     packet: ping loses nothing;
#   - `offcore dp flows` lists the live iperf3 flow while it runs, with
#     round-trip time samples from TCP timestamps both ways (Linux sends
#     the option by default), and the ended flows' samples are in the
#     attachment's offcore_dp_attach_flow_tcp_rtt_seconds histogram.
# Every wait is on a condition (a counter, a file's content) with a
# generous limit: a loaded host makes the test slower, not wrong.
set -u -o pipefail
# meson sets MALLOC_PERTURB_: it makes tshark ~80x slower on big captures
build=$1
dp=$build/src/dp/offcore-dp
cli=$build/src/tools/offcore
T0=$(date +%s)

. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root"
for t in ip ethtool ping iperf3 curl python3 tcpdump tshark nfcapd nfdump nfacctd timeout; do
    command -v $t >/dev/null 2>&1 || skip "$t is not installed"
done

id=$$
A=ocxiA$id B=ocxiB$id D=ocxiD$id
ip netns add $A 2>/dev/null || skip "cannot create network namespaces"
tmp=$(mktemp -d /tmp/ocx-ipfix.XXXXXX)
chmod 755 "$tmp"
dppid=
cleanup_extra() {
    [ -n "$dppid" ] && kill "$dppid" 2>/dev/null
}
cleanup_on_exit $A $B $D
fail_logs() {
    echo "--- offcore-dp log"; tail -20 "$tmp/dp.log" 2>/dev/null
}

ip netns add $B && ip netns add $D || fail "netns"
ip link add ocxia0 netns $A type veth peer name ocxia1 netns $D || fail veth
ip link add ocxib0 netns $B type veth peer name ocxib1 netns $D || fail veth
ip -n $A addr add 10.79.0.1/24 dev ocxia0
ip -n $B addr add 10.79.0.2/24 dev ocxib0
for x in "$A ocxia0" "$B ocxib0" "$D ocxia1" "$D ocxib1"; do
    set -- $x
    ip -n $1 link set lo up
    ip -n $1 link set $2 up
done
for x in "$A ocxia0" "$B ocxib0"; do
    set -- $x
    ip netns exec $1 sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec $1 ethtool -K $2 tx off tso off gso off >/dev/null || fail ethtool
done

sock=$tmp/dp.sock
ctl() { "$cli" dp --control unix:$sock "$@"; }
metric() { ctl stat --raw | awk -v k="$1" '$1 == k {print $2}'; }
cat >"$tmp/dp.conf" <<EOF
control unix:$sock
attach t0 host=ocxia1 wire=ocxib1
flow_idle 2
ipfix 127.0.0.1:28055
ipfix 127.0.0.1:28056
ipfix 127.0.0.1:28057
ipfix_domain 77
ipfix_template 5
EOF

# --- collectors, in D on loopback
mkdir -p "$tmp/nf"
bg ip netns exec $D nfcapd -b 127.0.0.1 -p 28055 -w "$tmp/nf" -t 3600 >"$tmp/nfcapd.log" 2>&1
nfpid=$(tail -1 "$tmp/bg.pids")
cat >"$tmp/nfacctd.conf" <<EOF
daemonize: false
nfacctd_ip: 127.0.0.1
nfacctd_port: 28056
plugins: print[p]
aggregate[p]: src_host, dst_host, src_port, dst_port, proto
print_output[p]: csv
print_output_file[p]: $tmp/pm.csv
print_output_file_append[p]: true
print_refresh_time[p]: 1
EOF
bg ip netns exec $D nfacctd -f "$tmp/nfacctd.conf" >"$tmp/nfacctd.log" 2>&1
# -U: each message is written when taken, so the file can be counted
ip netns exec $D tcpdump -i lo -nn -U -s 0 -w "$tmp/ipfix.pcap" \
    "udp port 28055 or udp port 28056" 2>"$tmp/tshark.log" &
tspid=$!
echo $tspid >>"$tmp/bg.pids"
udp_up() { ip netns exec $D ss -Hlun "sport = :$1" | grep . >/dev/null; }
wait_for 30 udp_up 28055 || fail "nfcapd did not come up: $(cat "$tmp/nfcapd.log")"
wait_for 30 udp_up 28056 || fail "nfacctd did not come up: $(cat "$tmp/nfacctd.log")"
wait_for 30 grep -q listening "$tmp/tshark.log" || fail "tcpdump on lo: $(cat "$tmp/tshark.log")"

OC_LOG=info ip netns exec $D "$dp" --config "$tmp/dp.conf" >"$tmp/dp.log" 2>&1 &
dppid=$!
wait_for 60 ctl ping || fail "offcore-dp did not come up"
ok "offcore-dp up, exporting to nfcapd, nfacctd and a collector that is down"

# --- traffic, captured in A: every frame of ocxia0 (the ground truth
# reads the IPv4 ones), so that the capture can be checked complete
# against the device's own packet counters before it is stopped
ip netns exec $A tcpdump -i ocxia0 -nn -U -s 128 -w "$tmp/a.pcap" 2>"$tmp/td.log" &
td=$!
echo $td >>"$tmp/bg.pids"
wait_for 30 grep -q listening "$tmp/td.log" || fail "tcpdump"
dev_packets() {
    echo $(($(ip netns exec $A cat /sys/class/net/ocxia0/statistics/rx_packets) +
            $(ip netns exec $A cat /sys/class/net/ocxia0/statistics/tx_packets)))
}
a0=$(dev_packets)
listening() { ip netns exec $B ss -Hltn "sport = :$1" | grep . >/dev/null; }
echo hello-ipfix >"$tmp/index.txt"
bg ip netns exec $B python3 -m http.server 28080 --bind 10.79.0.2 --directory "$tmp" >/dev/null 2>&1
bg ip netns exec $B iperf3 -s -p 28201 >/dev/null 2>&1
wait_for 30 listening 28080 || fail "http.server"
wait_for 30 listening 28201 || fail "iperf3 -s"
ip netns exec $A ping -c 7 -i 0.2 -W 2 10.79.0.2 >"$tmp/ping.out" || fail "ping"
grep -q " 0% packet loss" "$tmp/ping.out" || fail "ping lost packets: $(cat "$tmp/ping.out")"
ok "ping: 7 of 7 (while a collector is down)"
ip netns exec $A curl -sf --max-time 10 http://10.79.0.2:28080/index.txt >/dev/null || fail "curl"
ok "curl"
# paced (-b): 20 MB unpaced took ~0.1 s, and the flow was then listed
# only for flow_idle (2 s) after its end: on a loaded host a few slow
# `dp flows` calls (each waits up to 1 s for a sleeping worker's
# snapshot) missed it (CI, once).  At 64 Mbit/s it runs ~2.5 s.
timeout 60 ip netns exec $A iperf3 -c 10.79.0.2 -p 28201 -n 20M -b 64M -J >"$tmp/iperf.json" &
ip=$!
# the flow table is asked until it lists the iperf3 data connection with
# RTT samples both ways (the flow stays listed until 2 s idle after its
# end): columns 10 and 11, resp_rtt_ms and init_rtt_ms as
# min/mean/max:samples (max > 0: a sample taken within one microsecond
# reads 0, so the min may be 0); the data connection is the largest flow,
# listed first.  Every listing that shows the flow is kept for the failure
# message.
: >"$tmp/flows-seen.txt"
iperf_listed() {
    ctl flows >"$tmp/flows.txt" &&
        grep -q "10.79.0.1:[0-9]* *10.79.0.2:28201 *6 " "$tmp/flows.txt" &&
        { date +%T.%N; cat "$tmp/flows.txt"; } >>"$tmp/flows-seen.txt"
}
iperf_rtts() {
    iperf_listed &&
        grep "10.79.0.1:[0-9]* *10.79.0.2:28201 *6 " "$tmp/flows.txt" | head -1 |
        awk '{ split($10, r, ":"); split($11, i, ":"); split(r[1], m, "/");
               exit !(r[2] > 0 && i[2] > 0 && m[3] > 0) }'
}
wait_for 30 iperf_rtts
rtts=$?
wait $ip || fail "iperf3"
cat "$tmp/flows.txt"
grep -q "10.79.0.1:[0-9]* *10.79.0.2:28201 *6 " "$tmp/flows.txt" ||
    fail "flows: no live iperf3 flow (listings that showed it: $(tail -20 "$tmp/flows-seen.txt"))"
ok "offcore dp flows shows the iperf3 flow live"
[ $rtts = 0 ] || fail "flows: no TCP timestamp RTT samples on the iperf3 flow (listings: $(tail -20 "$tmp/flows-seen.txt"))"
ok "offcore dp flows shows the iperf3 flow's RTT samples both ways"
# the traffic is over: the capture is stopped once it holds every frame
# the device counted since it started
a1=$(dev_packets)
a_captured() { [ "$(tcpdump -r "$tmp/a.pcap" 2>/dev/null | wc -l)" -ge $((a1 - a0)) ]; }
wait_for 30 a_captured || fail "capture in A: $(tcpdump -r "$tmp/a.pcap" 2>/dev/null | wc -l) of $((a1 - a0)) frames"
kill -INT $td; wait $td 2>/dev/null

# --- wait for the records: idle timeout 2 s, then the exporter's pass
exported() { [ "$(metric 'offcore_dp_ipfix_records_total{result="exported"}')" -ge 4 ] &&
             [ "$(metric offcore_dp_flows)" = 0 ]; }
wait_for 60 exported || fail "records not exported: $(ctl stat --raw | grep -E 'ipfix|flows')"
# nfacctd prints once a second: wait until its file has a row per record
recs=$(metric 'offcore_dp_ipfix_records_total{result="exported"}')
pm_rows() {
    python3 - "$tmp/pm.csv" "$recs" <<'EOF'
import csv, sys
try:
    rows = [r for r in csv.DictReader(open(sys.argv[1]))
            if (r.get("SRC_IP") or "")[:1].isdigit()]
except OSError:
    rows = []
sys.exit(0 if len(rows) >= int(sys.argv[2]) else 1)
EOF
}
wait_for 30 pm_rows || fail "nfacctd printed $(grep -c '^[0-9]' "$tmp/pm.csv" 2>/dev/null) rows for $recs records"
ctl stat --raw | grep -E '^offcore_dp_(ipfix|flows|flow_tcp)' | grep -v '_bucket'
for d in responder initiator; do
    n=$(metric "offcore_dp_attach_flow_tcp_rtt_seconds_count{attach=\"t0\",toward=\"$d\"}")
    s=$(metric "offcore_dp_attach_flow_tcp_rtt_seconds_sum{attach=\"t0\",toward=\"$d\"}")
    [ "${n:-0}" -gt 0 ] && awk -v s="${s:-0}" 'BEGIN { exit !(s > 0) }' ||
        fail "no RTT samples toward the $d in the histogram: $(ctl stat --raw | grep tcp_rtt)"
    echo "# RTT toward the $d: $n samples, mean $(awk -v s="$s" -v n="$n" 'BEGIN { printf "%.1f us", s / n * 1e6 }')"
done
ok "the ended flows' RTT samples are in offcore_dp_attach_flow_tcp_rtt_seconds"
failed=$(metric 'offcore_dp_ipfix_messages_total{collector="127.0.0.1:28057",result="failed"}')
[ "${failed:-0}" -gt 0 ] || fail "the down collector's failures were not counted"
for c in 28055 28056; do
    f=$(metric "offcore_dp_ipfix_messages_total{collector=\"127.0.0.1:$c\",result=\"failed\"}")
    [ "$f" = 0 ] || fail "collector $c: $f failed messages"
done
ok "the down collector cost $failed messages (counted), the others none"
# every message sent to nfcapd and nfacctd so far is in the capture before
# it is stopped
msgs=$(($(metric 'offcore_dp_ipfix_messages_total{collector="127.0.0.1:28055",result="sent"}') +
        $(metric 'offcore_dp_ipfix_messages_total{collector="127.0.0.1:28056",result="sent"}')))
ipfix_captured() { [ "$(tcpdump -r "$tmp/ipfix.pcap" 2>/dev/null | wc -l)" -ge $msgs ]; }
wait_for 30 ipfix_captured || fail "the capture on lo has $(tcpdump -r "$tmp/ipfix.pcap" 2>/dev/null | wc -l) of $msgs messages"
kill -TERM $nfpid 2>/dev/null
kill -INT $tspid; wait $tspid 2>/dev/null
wait_for 30 sh -c "ls $tmp/nf/nfcapd.2* >/dev/null 2>&1" || fail "nfcapd wrote no file: $(ls $tmp/nf; cat $tmp/nfcapd.log)"

# --- each collector's view against the capture
nfdump -R "$tmp/nf" -q -N -o "fmt:%pr|%sa|%sp|%da|%dp|%pkt|%byt" >"$tmp/nfdump.txt" 2>"$tmp/nfdump.err" ||
    fail "nfdump: $(cat "$tmp/nfdump.err")"
env -u MALLOC_PERTURB_ tshark -r "$tmp/ipfix.pcap" -d udp.port==28055,cflow -d udp.port==28056,cflow \
    -Y "udp.dstport == 28055" -T fields -E separator='|' -E aggregator=';' \
    -e cflow.protocol -e cflow.srcaddr -e cflow.srcport -e cflow.dstaddr \
    -e cflow.dstport -e cflow.packets -e cflow.octets \
    >"$tmp/tshark.txt" 2>"$tmp/tshark.err" || fail "tshark: $(cat "$tmp/tshark.err")"
malformed=$(env -u MALLOC_PERTURB_ tshark -r "$tmp/ipfix.pcap" -d udp.port==28055,cflow -d udp.port==28056,cflow \
    -Y '_ws.malformed || _ws.expert.severity >= "warning"' 2>/dev/null | wc -l)
env -u MALLOC_PERTURB_ tshark -r "$tmp/ipfix.pcap" -d udp.port==28055,cflow -Y "udp.dstport == 28055" \
    -T fields -e cflow.version -e cflow.od_id -e cflow.sequence -e cflow.flowset_id \
    >"$tmp/hdr.txt" 2>/dev/null
python3 - "$tmp" "$malformed" <<'EOF' || fail "collectors' view"
import json, struct, sys, csv
tmp, malformed = sys.argv[1], int(sys.argv[2])

# ground truth from A's capture: per direction of each 5-tuple
truth = {}
d = open(tmp + "/a.pcap", "rb").read()
off = 24
while off + 16 <= len(d):
    incl = struct.unpack_from("<I", d, off + 8)[0]
    f = d[off + 16: off + 16 + incl]
    off += 16 + incl
    if len(f) < 34 or f[12:14] != b"\x08\x00":
        continue
    ip = f[14:]
    proto, tot = ip[9], struct.unpack_from("!H", ip, 2)[0]
    src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
    hl = (ip[0] & 15) * 4
    sp = dp = 0
    if proto in (6, 17):
        sp, dp = struct.unpack_from("!HH", ip, hl)
    k = (proto, src, sp, dst, dp)
    p, b = truth.get(k, (0, 0))
    truth[k] = (p + 1, b + tot)

def largest(port):
    ks = [k for k in truth if k[0] == 6 and k[4] == port and k[1] == "10.79.0.1"]
    return max(ks, key=lambda k: truth[k][1])
want = {"ping": (1, "10.79.0.1", 0, "10.79.0.2", 0),
        "curl": largest(28080), "iperf3": largest(28201)}
iperf = json.load(open(tmp + "/iperf.json"))["end"]["sum_received"]["bytes"]

def unzip(path):
    # tshark: one line a message, each field's occurrences joined by ';';
    # cflow.packets and cflow.octets hold the forward and the reverse
    # (RFC 5103) element of each record: every other one is forward
    out = []
    for line in open(path):
        cols = [c.split(";") for c in line.rstrip("\n").split("|")]
        if len(cols) == 7 and cols[0] != [""]:
            n = len(cols[0])
            if any(len(c) != n for c in cols[1:5]) or len(cols[5]) != 2 * n \
                    or len(cols[6]) != 2 * n:
                raise SystemExit("tshark: fields do not line up: " + line)
            cols[5], cols[6] = cols[5][0::2], cols[6][0::2]
            out += ["|".join(v) for v in zip(*cols)]
    open(path + ".rows", "w").write("\n".join(out) + "\n")
    return path + ".rows"

def load(path, cols):
    rows = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("proto"):
            continue
        parts = [x.strip() for x in line.split(cols)]
        if len(parts) < 7:
            continue
        try:
            pr = {"ICMP": 1, "TCP": 6, "UDP": 17}.get(parts[0], None)
            pr = pr if pr is not None else int(parts[0])
            dport = int(float(parts[4]))
            k = (pr, parts[1], int(float(parts[2])), parts[3], 0 if pr == 1 else dport)
            p, b = rows.get(k, (0, 0))
            rows[k] = (p + int(float(parts[5])), b + int(float(parts[6])))
        except ValueError:
            continue
    return rows

views = {"nfdump": load(tmp + "/nfdump.txt", "|"),
         "tshark": load(unzip(tmp + "/tshark.txt"), "|")}
pm = {}
with open(tmp + "/pm.csv") as fh:
    r = csv.DictReader(fh)
    for row in r:
        if row.get("SRC_IP") is None:
            continue
        pr = {"icmp": 1, "tcp": 6, "udp": 17}.get(row["PROTOCOL"].lower(), 0)
        k = (pr, row["SRC_IP"], int(row["SRC_PORT"]), row["DST_IP"],
             0 if pr == 1 else int(row["DST_PORT"]))
        p, b = pm.get(k, (0, 0))
        pm[k] = (p + int(row["PACKETS"]), b + int(row["BYTES"]))
views["nfacctd"] = pm

bad = 0
print("%-8s %-7s %10s %12s   %s" % ("collector", "flow", "packets", "bytes", "capture (packets, bytes)"))
for name, rows in views.items():
    for flow, k in want.items():
        got = rows.get(k)
        t = truth[k]
        print("%-8s %-7s %10s %12s   %s" % (name, flow, got and got[0], got and got[1], t))
        if got is None:
            print("  missing: %s %s" % (name, k)); bad += 1; continue
        if flow == "ping" and got[0] != 7:
            print("  ping packets %d != 7" % got[0]); bad += 1
        if abs(got[1] - t[1]) > 0.01 * t[1] or abs(got[0] - t[0]) > 0.01 * t[0] + 0.5:
            print("  %s %s: %s vs capture %s" % (name, flow, got, t)); bad += 1
# iperf3's own JSON counts (bytes written by the sender, bytes read in the
# receiver's measured intervals) differ from each other by more than 1%
# here; the capture is the ground truth for what crossed the DPU.
print("iperf3 reports %d bytes received; the capture's IP bytes %d" %
      (iperf, truth[want["iperf3"]][1]))
# headers: version 10, domain 77, sequence = records sent before
hdr = [l.rstrip("\n").split("\t") for l in open(tmp + "/hdr.txt")]
doms = set(h[1] for h in hdr)
print("IPFIX messages at nfcapd's port: %d, observation domains %s, malformed/warnings %d" %
      (len(hdr), doms, malformed))
if doms != {"77"} or not all(h[0] == "10" for h in hdr):
    bad += 1
if malformed:
    bad += 1
sys.exit(1 if bad else 0)
EOF
ok "nfdump, nfacctd and tshark show the flows with the capture's counts"
kill -TERM $dppid; wait $dppid || fail "offcore-dp exit status $?"
dppid=
ok "clean stop"
echo "ipfix-test: passed in $(($(date +%s) - T0)) s"
