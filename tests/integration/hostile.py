#!/usr/bin/env python3
"""hostile.py — hostile clients for offcored's servers (hostile-test.sh).

  flood UNIX_PATH N SECONDS [REOPEN_PER_S [KIND,...]]
      N connections to the control socket, in four kinds taken in turn:
      idle (connects, says nothing), partial (half a frame header), garbage
      (64 bytes that are no frame) and big (a HELLO header announcing a
      64 KiB payload, then 64 KiB); or the KINDs listed, among those and
      bigpartial (the same header, then only half the payload).  Connections the agent closes are
      re-opened, at most REOPEN_PER_S a second (default 50), so the
      pressure lasts the whole run.  Prints one JSON line of counts.

  handshake-bye UNIX_PATH
      A rank's handshake cut short as a rank whose own timeout fired does
      it: HELLO, read the CHALLENGE, then BYE instead of AUTH.

  slowloris HOST PORT N SECONDS INTERVAL
      N connections to the /metrics endpoint, each sending one more header
      line every INTERVAL seconds and never finishing its request.  Prints
      one JSON line: how many the server closed, and after how long.

Python's standard library only; every socket is non-blocking; exits after
SECONDS whatever happens.
"""
import json
import os
import resource
import selectors
import socket
import struct
import sys
import time

KINDS = ("idle", "partial", "garbage", "big")
MAGIC = 0x3143434F  # "OCC1"


def frame_header(ftype, length):
    return struct.pack("<IHHII", MAGIC, 6, ftype, length, 0)  # OC_CTL_VERSION


def payload(kind):
    if kind == "partial":
        return frame_header(1, 60)[:8]
    if kind == "garbage":
        return bytes((i * 37 + 11) & 0xFF for i in range(64))
    if kind == "big":
        return frame_header(1, 65536) + b"\x41" * 65536
    if kind == "bigpartial":  # a 64 KiB frame that never ends
        return frame_header(1, 65536) + b"\x41" * 32768
    return b""


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def flood(path, n, seconds, reopen_rate, kinds=KINDS):
    raise_nofile()
    sel = selectors.DefaultSelector()
    stats = {k: 0 for k in ("opened", "closed_by_agent", "connect_refused",
                            "connect_again", "sent_bytes")}
    open_now = {}
    pending_opens = list(range(n))  # slot numbers waiting to (re)connect
    end = time.monotonic() + seconds
    bucket, last = float(n), time.monotonic()
    first_round = True

    def open_slot(slot):
        kind = kinds[slot % len(kinds)]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            stats["connect_again"] += 1  # backlog full: later
            s.close()
            return False
        except (ConnectionRefusedError, FileNotFoundError):
            stats["connect_refused"] += 1
            s.close()
            return False
        data = payload(kind)
        try:
            while data:
                k = s.send(data)
                stats["sent_bytes"] += k
                data = data[k:]
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            pass  # the rest would wait: enough pressure either way
        open_now[s.fileno()] = (s, slot)
        sel.register(s, selectors.EVENT_READ)
        stats["opened"] += 1
        return True

    while time.monotonic() < end:
        now = time.monotonic()
        bucket = min(float(n), bucket + (now - last) * reopen_rate)
        last = now
        retry = []
        while pending_opens and (first_round or bucket >= 1):
            slot = pending_opens.pop()
            if open_slot(slot):
                bucket -= 0 if first_round else 1
            else:
                retry.append(slot)
                if not first_round:
                    break
        pending_opens.extend(retry)
        if first_round:
            print(json.dumps({"phase": "opened", "opened": stats["opened"]}),
                  flush=True)
        first_round = False
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                continue  # an ERROR frame or CHALLENGE: read and ignore
            sel.unregister(s)
            _, slot = open_now.pop(s.fileno())
            s.close()
            stats["closed_by_agent"] += 1
            pending_opens.append(slot)
    stats["open_at_end"] = len(open_now)
    print(json.dumps(stats), flush=True)


def slowloris(host, port, n, seconds, interval):
    raise_nofile()
    conns, closed_after = [], []
    start = time.monotonic()
    end = start + seconds
    for i in range(n):
        s = socket.create_connection((host, port), timeout=2)
        s.setblocking(False)
        s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        conns.append([s, time.monotonic(), 0])
    while time.monotonic() < end and conns:
        time.sleep(min(interval, max(0.0, end - time.monotonic())))
        for c in list(conns):
            s, t0, k = c
            try:
                if s.recv(4096) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                pass
            except OSError:
                closed_after.append(round(time.monotonic() - t0, 2))
                conns.remove(c)
                s.close()
                continue
            try:
                s.send(b"X-Slow-%d: %d\r\n" % (k, k))
                c[2] = k + 1
            except OSError:
                closed_after.append(round(time.monotonic() - t0, 2))
                conns.remove(c)
                s.close()
    print(json.dumps({"connections": n, "closed_by_server": len(closed_after),
                      "closed_after_s": sorted(closed_after),
                      "still_open": len(conns)}), flush=True)


def handshake_bye(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    addr = b"\x01" * 16
    hello = struct.pack("<IIIII", 7, 0, 1, os.getpid(), 0) + b"\x22" * 16 + \
        struct.pack("<I", len(addr)) + addr
    s.sendall(frame_header(1, len(hello)) + hello)
    hdr = s.recv(16)
    ok = len(hdr) == 16 and struct.unpack("<IHHII", hdr)[2] == 2
    s.sendall(frame_header(7, 4) + struct.pack("<I", 0))
    time.sleep(0.2)
    s.close()
    print(json.dumps({"challenge": ok}), flush=True)
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 4 and argv[1] == "flood":
        flood(argv[2], int(argv[3]), float(argv[4]),
              float(argv[5]) if len(argv) > 5 else 50.0,
              tuple(argv[6].split(",")) if len(argv) > 6 else KINDS)
    elif len(argv) == 3 and argv[1] == "handshake-bye":
        return handshake_bye(argv[2])
    elif len(argv) == 7 and argv[1] == "slowloris":
        slowloris(argv[2], int(argv[3]), int(argv[4]), float(argv[5]),
                  float(argv[6]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
