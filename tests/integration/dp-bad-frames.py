# dp-bad-frames.py IFACE COUNT: send COUNT copies of each malformed or
# unusual frame (raw bytes, from source MAC 02:00:00:00:00:01) on IFACE, for
# dp-test.sh; prints the parser reason of each kind, in order.  All but the
# last (a non-first IPv4 fragment, passed) have policy drop.  Then one valid
# UDP datagram from port 23402, forwarded: the barrier that tells the
# receiver's capture holds every frame sent before it.
import socket, struct, sys
iface, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
eth = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01"
def ip(ihl=5, tot=None, frag=0, proto=17, payload=b""):
    hdr_len = 20
    tot = hdr_len + len(payload) if tot is None else tot
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot, 1, frag, 64, proto, 0,
                    bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2]))
    return h + payload
udp = struct.pack("!HHHH", 23400, 23401, 12, 0) + b"abcd"
frames = {
    "runt": eth + b"\x81\x00",  # a VLAN tag cut short (veth takes no frame under 14 bytes)
    "bad_ip_header_length": eth + b"\x08\x00" + ip(ihl=4, payload=udp),
    "bad_ip_total_length": eth + b"\x08\x00" + ip(tot=1000, payload=udp),
    "bad_l4_header": eth + b"\x08\x00" + ip(proto=6, payload=b"\x00" * 12 + b"\x20" + b"\x00" * 7),
    "unknown_ethertype": eth + b"\x88\xcc" + b"\x00" * 46,
    "vlan_depth": eth + b"\x81\x00\x00\x01" * 3 + b"\x08\x00" + ip(payload=udp),
    "ipv4_fragment": eth + b"\x08\x00" + ip(frag=100, payload=b"x" * 16),
}
for name, f in frames.items():
    for _ in range(n):
        s.send(f)
s.send(eth + b"\x08\x00" + ip(payload=struct.pack("!HHHH", 23402, 23401, 12, 0) + b"abcd"))
print(" ".join(frames))
