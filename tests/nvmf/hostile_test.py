#!/usr/bin/env python3
"""tests/nvmf/hostile_test.py BUILDDIR CASE — offcore-nvmf under hostile
hosts over loopback, one case per run (suites hostile and nvmf):

  segments  several PDUs in one TCP segment: two ICReqs (one C2HTermReq,
            then the connection closed; a new connection answered within
            1 s; the target idle under 5% CPU), a bad PDU followed by
            more, a whole session (ICReq, Connect, Property Set, Identify)
            and 16 I/O commands in one segment each, ICReq with
            H2CTermReq; then SIGTERM ends it
  emfile    the target under `ulimit -n 64` with 100 idle connections:
            under 5% CPU and under 100 KB of log in 5 s, and a real host
            still gets in; then the limit lowered to 40 under it (prlimit)
            and 60 more idle connections: the same bars
  idle      the default connection cap and handshake deadline: 1000 idle
            connections and 50 sending one byte a second are all closed
            by the target within the deadline (+ slack), a real host works
            among them
  cap       max-connections 16 from the configuration: 40 idle
            connections leave 16 held, real hosts take their places, and
            with all 16 connected a newcomer is refused
  sigpipe   hosts that reset their connection while 31 reads of 128 KiB
            are being sent to them: the target lives on and serves

CPU is the target's own (utime + stime, /proc/PID/stat), log growth the
size of its output file.  Every wait has a deadline.  Exits 0 PASS,
1 FAIL, 77 SKIP.
"""
import os
import resource
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvmf_client as nc  # noqa: E402
import nvmf_target as nt  # noqa: E402

SUB = "nqn.2026-11.io.offcore:hostile"
HOST = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-0000000d0001"
ICREQ = bytes([0, 0, 128, 0, 128, 0, 0, 0]) + bytes(120)
CLK = os.sysconf("SC_CLK_TCK")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def cpu_s(pid):
    """CPU seconds the process has used, all its threads."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def measure(t, logpath, seconds, during=None):
    """The target's CPU share and log growth over @seconds (@during runs
    meanwhile, if given, and must return within them)."""
    c0, l0, t0 = cpu_s(t.pid), os.path.getsize(logpath), time.monotonic()
    if during:
        during()
    left = seconds - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
    el = time.monotonic() - t0
    return (cpu_s(t.pid) - c0) / el, os.path.getsize(logpath) - l0, el


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def metrics(mport):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        out[k] = float(v)
    return out


def write_conf(work, port, mport=None, extra=""):
    conf = os.path.join(work, "nvmf.conf")
    with open(conf, "w") as f:
        f.write("listen 127.0.0.1:%d\n" % port)
        if mport:
            f.write("metrics 127.0.0.1:%d\n" % mport)
        f.write(extra)
        f.write("subsystem %s\n  allow-host %s\n  namespace 1 %s size=16M\n"
                % (SUB, HOST, os.path.join(work, "ns1.img")))
    return conf


def answered(port, within):
    """Whether a new connection gets its ICResp within @within seconds."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=within)
        s.settimeout(max(0.05, within - (time.monotonic() - t0)))
        s.sendall(ICREQ)
        r = b""
        while len(r) < 128:
            c = s.recv(128 - len(r))
            if not c:
                break
            r += c
        s.close()
        return len(r) == 128 and r[0] == nc.ICRESP, time.monotonic() - t0
    except OSError:
        return False, time.monotonic() - t0


def drain_pdus(h, seconds):
    """Every PDU the target sends until it closes (or @seconds pass):
    (list of (type, FES or None), closed)."""
    out, buf = [], b""
    end = time.monotonic() + seconds
    closed = False
    while time.monotonic() < end:
        h.s.settimeout(max(0.01, end - time.monotonic()))
        try:
            c = h.s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not c:
            closed = True
            break
        buf += c
        while len(buf) >= 8:
            plen = struct.unpack_from("<I", buf, 4)[0]
            if plen < 8 or len(buf) < plen:
                break
            p, buf = buf[:plen], buf[plen:]
            fes = struct.unpack_from("<H", p, 8)[0] if p[0] == nc.C2HTERM else None
            out.append((p[0], fes))
    return out, closed


# ---------------------------------------------------------------- segments
def good_session(port):
    """ICReq, Connect, Property Set (CC.EN), Identify, Set Features (one
    I/O queue): one segment; then the answers, in order."""
    h = nc.Host(port, timeout=5)
    h.hold()
    h.icreq()
    h.connect_capsule(SUB, HOST)
    h.capsule(h.sqe(0x7F, fct=0x00, cdw={11: 0x14, 12: (6 << 16) | (4 << 20) | 1}))
    h.capsule(h.sqe(0x06, sgl_len=4096, cdw={10: 1}))
    h.capsule(h.sqe(0x09, cdw={10: 0x07, 11: 0}))
    h.flush()
    h.icresp()
    r = [h.response() for _ in range(4)]
    ok = all(x["sc"] == 0 for x in r) and len(r[2]["data"]) == 4096
    check(ok, "ICReq, Connect, Property Set, Identify, Set Features in one "
          "segment: all answered, in order (%s)" % [hex(x["sc"]) for x in r])
    return h, r[0]["dw0"] & 0xFFFF


def io_burst(port, cntlid):
    """ICReq, I/O Connect and 8 in-capsule writes in one segment, then 8
    reads of them in another (NVMe orders no command after another in a
    queue): every answer, the data read back (matched by command id)."""
    h = nc.Host(port, timeout=5)
    h.hold()
    h.icreq()
    h.connect_capsule(SUB, HOST, qid=1, cntlid=cntlid)
    blocks = [bytes(((i * 31 + k) & 0xFF) for k in range(4096)) for i in range(8)]
    for i, b in enumerate(blocks):
        h.capsule(h.sqe(0x01, nsid=1, sgl_len=4096, sgl_type=0x01,
                        cdw={10: 100 + i, 12: 0}), b)
    seg = len(h.held)
    h.flush()
    h.icresp()
    r = [h.response() for _ in range(9)]
    h.hold()
    cids = {}
    for i in range(8):
        h.capsule(h.sqe(0x02, nsid=1, sgl_len=4096, cdw={10: 100 + i, 12: 0}))
        cids[h.cid] = blocks[i]
    h.flush()
    rd = [h.response() for _ in range(8)]
    ok = all(x["sc"] == 0 for x in r + rd) and \
        all(cids.get(x["cid"]) == x["data"] for x in rd)
    check(ok, "ICReq, I/O Connect and 8 writes in one %d-byte segment, 8 "
          "reads in one more: all answered, data read back (%s)"
          % (seg, [hex(x["sc"]) for x in r + rd]))
    h.close()


def case_segments(build, work):
    port = nt.free_port(25200 + os.getpid() % 100)
    conf = write_conf(work, port)
    logpath = os.path.join(work, "target.log")
    log = open(logpath, "w")
    t = nt.start(build, conf, log)
    try:
        # two ICReqs in one segment (the reproduction)
        h = nc.Host(port, timeout=5)
        h.send(ICREQ + ICREQ)
        pdus, closed = drain_pdus(h, 3)
        terms = [p for p in pdus if p[0] == nc.C2HTERM]
        check(pdus[:1] == [(nc.ICRESP, None)] and terms == [(nc.C2HTERM, 2)]
              and closed, "two ICReqs in one segment: ICResp, one C2HTermReq "
              "FES 2, closed (got %d PDUs: %s, closed %s)"
              % (len(pdus), pdus[:4], closed))
        h.close()
        ok, took = answered(port, 1.0)
        check(ok, "then a new connection is answered within 1 s (%.3f s)" % took)
        share, grew, el = measure(t, logpath, 2)
        check(share < 0.05, "then the target idles: %.1f%% CPU over %.1f s"
              % (100 * share, el))

        # the same from 20 hosts at once
        hs = []
        for _ in range(20):
            x = socket.create_connection(("127.0.0.1", port), timeout=5)
            x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            x.sendall(ICREQ + ICREQ)
            hs.append(x)
        closed_all = 0
        for x in hs:
            x.settimeout(3)
            try:
                got = b""
                while True:
                    c = x.recv(65536)
                    if not c:
                        break
                    got += c
                closed_all += len(got) == 128 + 24 + 128
            except OSError:
                pass
            x.close()
        check(closed_all == 20, "20 hosts sending two ICReqs at once: each "
              "got ICResp, one C2HTermReq, a close (%d of 20)" % closed_all)

        # 300 more, as fast as they go: the fatal errors are logged a few
        # lines a second, not one per connection
        with open(logpath, errors="replace") as f:
            before = f.read().count("fatal transport error")
        t0, answered_ok = time.monotonic(), 0
        for _ in range(300):
            x = socket.create_connection(("127.0.0.1", port), timeout=5)
            x.sendall(ICREQ + ICREQ)
            x.settimeout(3)
            got = b""
            try:
                while True:
                    c = x.recv(65536)
                    if not c:
                        break
                    got += c
            except OSError:
                pass
            answered_ok += len(got) == 128 + 24 + 128
            x.close()
        el = time.monotonic() - t0
        with open(logpath, errors="replace") as f:
            lines = f.read().count("fatal transport error") - before
        check(answered_ok == 300 and lines <= 12 * (el + 1),
              "300 more in %.1f s: each answered and closed (%d), %d lines "
              "logged (rate-limited: 10 a second)" % (el, answered_ok, lines))

        # a bad PDU followed by more PDUs, all in one segment
        h = nc.Host(port, timeout=5)
        bad = struct.pack("<BBBBI", nc.CMD, 0, 70, 0, 72) + bytes(64)
        h.send(ICREQ + bad + ICREQ + bad + bytes(300))
        pdus, closed = drain_pdus(h, 3)
        check(pdus == [(nc.ICRESP, None), (nc.C2HTERM, 1)] and closed,
              "ICReq, a bad capsule and more in one segment: ICResp, one "
              "C2HTermReq FES 1, closed (%s, closed %s)" % (pdus[:4], closed))
        h.close()

        # ICReq and H2CTermReq in one segment: closed, no C2HTermReq
        h = nc.Host(port, timeout=5)
        h.send(ICREQ + struct.pack("<BBBBIH", 0x02, 0, 24, 0, 24, 1) + bytes(14))
        pdus, closed = drain_pdus(h, 3)
        check(pdus in ([], [(nc.ICRESP, None)]) and closed,
              "ICReq and H2CTermReq in one segment: closed, no C2HTermReq "
              "(%s)" % pdus)
        h.close()

        # whole sessions in one segment each
        adm, cntlid = good_session(port)
        io_burst(port, cntlid)
        adm.close()

        ok, took = answered(port, 1.0)
        check(ok, "a new connection still answered within 1 s (%.3f s)" % took)
        share, grew, el = measure(t, logpath, 2)
        check(share < 0.05, "the target idles at the end: %.1f%% CPU over "
              "%.1f s" % (100 * share, el))
    finally:
        sigterm_ends(t)
        log.close()


def sigterm_ends(t, within=5):
    if t.poll() is not None:
        check(False, "the target was still running at the end (rc %s)"
              % t.returncode)
        return
    t0 = time.monotonic()
    t.send_signal(signal.SIGTERM)
    try:
        rc = t.wait(timeout=within)
        check(rc == 0, "SIGTERM: the target exits (rc %d) in %.2f s"
              % (rc, time.monotonic() - t0))
    except subprocess.TimeoutExpired:
        t.kill()
        t.wait()
        check(False, "SIGTERM: the target still ran after %d s (SIGKILLed)"
              % within)


# ------------------------------------------------------------------ emfile
def open_idle(port, n):
    """@n connections that never send a byte (kept open by the caller)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        socks.append(s)
    return socks


def real_host_gets_in(port, within):
    """A host that does its whole session (admin Connect, Identify) within
    @within seconds, retrying connections the target closes."""
    end = time.monotonic() + within
    err = None
    while time.monotonic() < end:
        try:
            h = nc.Host(port, timeout=max(0.2, end - time.monotonic()))
            h.admin_session(SUB, HOST)
            r = h.identify(1)
            h.close()
            if r["sc"] == 0:
                return True, None
            err = "Identify %#x" % r["sc"]
        except (OSError, nc.Closed, AssertionError) as e:
            err = str(e)
        time.sleep(0.05)
    return False, err


def case_emfile(build, work):
    port = nt.free_port(25300 + os.getpid() % 100)
    conf = write_conf(work, port)
    logpath = os.path.join(work, "target.log")
    log = open(logpath, "w")
    raise_nofile()
    t = nt.start(build, conf, log,
                 prefix=["sh", "-c", 'ulimit -n 64 && exec "$@"', "sh"])
    socks = []
    try:
        socks += open_idle(port, 100)
        share, grew, el = measure(t, logpath, 5)
        check(share < 0.05, "ulimit -n 64, 100 idle connections: %.1f%% CPU "
              "over %.1f s" % (100 * share, el))
        check(grew < 100 * 1024, "... and the log grew %d bytes in %.1f s"
              % (grew, el))
        ok, err = real_host_gets_in(port, 5)
        check(ok, "... and a real host still gets in (%s)" % err)

        # below the cap: the limit lowered under the running target
        resource.prlimit(t.pid, resource.RLIMIT_NOFILE, (40, 40))
        socks += open_idle(port, 60)
        share, grew, el = measure(t, logpath, 3)
        check(share < 0.05, "limit lowered to 40, 60 more idle connections: "
              "%.1f%% CPU over %.1f s" % (100 * share, el))
        check(grew < 100 * 1024, "... and the log grew %d bytes in %.1f s"
              % (grew, el))
        ok, err = real_host_gets_in(port, 5)
        check(ok, "... and a real host still gets in (%s)" % err)
        ok, took = answered(port, 1.0)
        check(ok, "... and a new connection is answered within 1 s (%.3f s)"
              % took)
    finally:
        for s in socks:
            s.close()
        sigterm_ends(t)
        log.close()


# -------------------------------------------------------------------- idle
def case_idle(build, work):
    """1000 idle and 50 trickling connections against the defaults
    (docs/nvmf.md: handshake-ms 5000, max-connections 1024)."""
    deadline_s, nidle, ntrickle = 5.0, 1000, 50
    port = nt.free_port(25400 + os.getpid() % 100)
    mport = nt.free_port(25500 + os.getpid() % 100)
    conf = write_conf(work, port, mport)
    logpath = os.path.join(work, "target.log")
    log = open(logpath, "w")
    raise_nofile()
    t = nt.start(build, conf, log)
    sel = selectors.DefaultSelector()
    opened, lifetimes, trickle = {}, [], []
    try:
        t0 = time.monotonic()
        acc = 'offcore_connections_total{server="nvmf",outcome="accepted"}'
        for i in range(nidle + ntrickle):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setblocking(False)
            opened[s.fileno()] = (s, time.monotonic())
            sel.register(s, selectors.EVENT_READ)
            if i >= nidle:
                trickle.append(s)
            # paced: every 50, until the target has accepted them, so that
            # none waits in the listen backlog (the deadline runs from the
            # accept; a lifetime measured here from connect() would
            # include the wait: seconds under a sanitizer)
            if i % 50 == 49:
                wait_until = time.monotonic() + 5
                while (metrics(mport).get(acc, 0) < i + 1 and
                       time.monotonic() < wait_until):
                    time.sleep(0.01)
        print("opened %d connections in %.2f s" % (len(opened), time.monotonic() - t0),
              flush=True)
        t_real = time.monotonic()
        ok, err = real_host_gets_in(port, 5)
        # closes that happen meanwhile are seen only after it: its time is
        # added to the bound below
        t_real = time.monotonic() - t_real
        check(ok, "a real host gets in among %d idle and %d trickling "
              "connections (%s)" % (nidle, ntrickle, err))
        end = time.monotonic() + deadline_s + 3
        next_byte, k = time.monotonic(), 0
        while opened and time.monotonic() < end:
            if time.monotonic() >= next_byte:  # one byte a second each
                for s in trickle:
                    if s.fileno() in opened:
                        try:
                            s.send(ICREQ[k:k + 1])
                        except OSError:
                            pass
                k, next_byte = k + 1, next_byte + 1
            for key, _ in sel.select(timeout=0.1):
                s = key.fileobj
                try:
                    if s.recv(4096):
                        continue
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                _, born = opened.pop(s.fileno())
                sel.unregister(s)
                lifetimes.append(time.monotonic() - born)
                s.close()
        check(not opened, "every idle and trickling connection closed by the "
              "target (%d still open %.1f s after the last was opened)"
              % (len(opened), deadline_s + 3))
        longest = max(lifetimes) if lifetimes else 0
        check(longest < deadline_s + 1.5 + t_real, "none held longer than "
              "the %.0f s deadline + 1.5 s + the %.2f s the real host's check "
              "took (longest %.2f s)" % (deadline_s, t_real, longest))
        m = metrics(mport)
        exp = m.get('offcore_connections_total{server="nvmf",outcome="expired"}', 0)
        ev = m.get('offcore_connections_total{server="nvmf",outcome="evicted"}', 0)
        check(exp + ev >= nidle + ntrickle, "counted: %d expired, %d evicted at "
              "the cap" % (exp, ev))
        ok, took = answered(port, 1.0)
        check(ok, "a new connection is answered within 1 s (%.3f s)" % took)
    finally:
        for s, _ in opened.values():
            s.close()
        sigterm_ends(t)
        log.close()


# --------------------------------------------------------------------- cap
def closed_by_target(socks, within):
    """How many of @socks the target closes within @within seconds."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    left, n = set(socks), 0
    end = time.monotonic() + within
    while left and time.monotonic() < end:
        for key, _ in sel.select(timeout=0.05):
            try:
                if key.fileobj.recv(4096):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            sel.unregister(key.fileobj)
            left.discard(key.fileobj)
            n += 1
    sel.close()
    return n


def case_cap(build, work):
    """max-connections and handshake-ms from the configuration: the cap
    holds, a real host evicts a pending connection, and with every slot
    connected a newcomer is refused."""
    cap = 16
    port = nt.free_port(25700 + os.getpid() % 100)
    mport = nt.free_port(25800 + os.getpid() % 100)
    conf = write_conf(work, port, mport,
                      "max-connections %d\nhandshake-ms 60000\n" % cap)
    logpath = os.path.join(work, "target.log")
    log = open(logpath, "w")
    t = nt.start(build, conf, log)
    idle, hosts = [], []
    try:
        idle = open_idle(port, 40)
        n = closed_by_target(idle, 2)
        check(n == 40 - cap, "max-connections %d, 40 idle connections: %d "
              "closed, %d held" % (cap, n, 40 - n))
        for i in range(cap):
            h = nc.Host(port, timeout=5)
            h.admin_session(SUB, HOST)
            hosts.append(h)
        check(len(hosts) == cap, "%d real hosts get in, each taking the "
              "place of an idle connection" % cap)
        ok, took = answered(port, 1.0)
        m = metrics(mport)
        refused = m.get('offcore_connections_total{server="nvmf",outcome="refused"}', 0)
        check(not ok and refused >= 1, "with all %d connected, a newcomer is "
              "refused (counted %d)" % (cap, refused))
        hosts.pop().close()
        time.sleep(0.2)
        ok, took = answered(port, 1.0)
        check(ok, "one host gone: a new connection is answered (%.3f s)" % took)
    finally:
        for s in idle:
            s.close()
        for h in hosts:
            h.close()
        sigterm_ends(t)
        log.close()


# ----------------------------------------------------------------- sigpipe
def case_sigpipe(build, work):
    port = nt.free_port(25600 + os.getpid() % 100)
    conf = write_conf(work, port)
    logpath = os.path.join(work, "target.log")
    log = open(logpath, "w")
    t = nt.start(build, conf, log)
    try:
        for rnd in range(10):
            adm = nc.Host(port, timeout=5)
            adm.admin_session(SUB, HOST)
            adm.set_queues(1)
            io = nc.io_session(port, SUB, HOST, adm.cntlid, rcvbuf=4096)
            io.hold()
            for i in range(31):
                io.capsule(io.sqe(0x02, nsid=1, sgl_len=128 * 1024,
                                  cdw={10: i * 32, 12: 31}))
            io.flush()
            io.recvn(1000)  # the replies have started
            # reset: the target's pending sends fail with EPIPE/ECONNRESET
            io.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
            io.close()
            adm.close()
        time.sleep(0.3)
        check(t.poll() is None, "10 hosts reset mid-write (31 reads of "
              "128 KiB each): the target lives (rc %s)" % t.returncode)
        ok, err = real_host_gets_in(port, 5)
        check(ok, "... and still serves (%s)" % err)
    finally:
        sigterm_ends(t)
        log.close()


CASES = {"segments": case_segments, "emfile": case_emfile, "idle": case_idle,
         "cap": case_cap, "sigpipe": case_sigpipe}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        sys.stderr.write("usage: hostile_test.py BUILDDIR %s\n" % "|".join(CASES))
        return 2
    build = os.path.abspath(sys.argv[1])
    if not os.path.exists(nt.binary(build)):
        print("SKIP: no %s" % nt.binary(build))
        return 77
    work = tempfile.mkdtemp(prefix="oc-nvmf-hostile.")
    try:
        CASES[sys.argv[2]](build, work)
    finally:
        if failures:
            with open(os.path.join(work, "target.log"), errors="replace") as f:
                print(f.read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print("%s: %s" % (sys.argv[2], "FAIL (%d)" % len(failures) if failures else "PASS"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
