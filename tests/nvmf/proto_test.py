#!/usr/bin/env python3
"""tests/nvmf/proto_test.py BUILDDIR — every rejection path of offcore-nvmf,
driven by a host of our own (nvmf_client.py) over loopback.

Each case sends something wrong and checks the answer the NVMe/TCP and
NVMe specifications name for it — a completion with the right status, or a
C2HTermReq with the right fatal error status followed by a clean close —
then checks that the reason was counted (/metrics) and that a well-behaved
host, connected beside it all along, still writes and reads back.  A slow
host that stops reading its completions must not stall that other host.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvmf_client as nc  # noqa: E402
import nvmf_target as nt  # noqa: E402

SUB = "nqn.2026-11.io.offcore:proto"
HOST = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-0000000b0001"
OTHER = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-0000000b0bad"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def metrics(mport):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        out[k] = float(v)
    return out


def rej(m, reason):
    return m.get('offcore_nvmf_rejects_total{reason="%s"}' % reason, 0)


def fatal(h, fes, what):
    """Expect a C2HTermReq with FES @fes, then the connection closed."""
    try:
        p = h.recv_pdu()
        got = struct.unpack_from("<H", p.raw, 8)[0] if p.type == nc.C2HTERM else None
        check(p.type == nc.C2HTERM and got == fes,
              "%s: C2HTermReq FES %d (got type %d FES %s)" % (what, fes, p.type, got))
        check(h.expect_eof(), "%s: connection closed after the TermReq" % what)
    except nc.Closed as e:
        check(False, "%s: closed without a TermReq (%s)" % (what, e))
    h.close()


class Good:
    """The well-behaved host: an admin queue and one I/O queue."""

    def __init__(self, port):
        self.a = nc.Host(port)
        self.a.admin_session(SUB, HOST)
        self.a.set_queues(1)
        self.io = nc.io_session(port, SUB, HOST, self.a.cntlid)
        self.n = 0

    def roundtrip(self, what):
        self.n += 1
        data = bytes((self.n * 7 + i) & 0xFF for i in range(16384))
        w = self.io.write(1, 64 + self.n * 4, data)
        r = self.io.read(1, 64 + self.n * 4, len(data))
        check(w["sc"] == 0 and r["sc"] == 0 and r["data"] == data,
              "other host still served after: " + what)


def multiqueue(port, logpath):
    a = nc.Host(port)
    a.admin_session(SUB, HOST)
    r = a.set_queues(4)
    qs = [nc.io_session(port, SUB, HOST, a.cntlid, qid=q) for q in range(1, 5)]
    # in-capsule (8 KiB) and R2T (64 KiB) writes, one per queue, all sent
    # before any completion is read
    datas = [bytes(((q * 37 + i) * 13) & 0xFF for i in range(n))
             for q, n in enumerate((8192, 65536, 8192, 65536))]
    lba = [1024 + q * 32 for q in range(4)]
    ok = r["sc"] == 0
    for q, h in enumerate(qs):
        ok = h.write(1, lba[q], datas[q])["sc"] == 0 and ok
    for q, h in enumerate(qs):  # read through the next queue, all in flight
        nlb = len(datas[q]) // 4096
        qs[(q + 1) % 4].capsule(qs[(q + 1) % 4].sqe(
            0x02, nsid=1, sgl_len=len(datas[q]), cdw={10: lba[q], 12: nlb - 1}))
    for q in range(4):
        r = qs[(q + 1) % 4].response()
        ok = ok and r["sc"] == 0 and r["data"] == datas[q]
    check(ok, "4 I/O queues of one controller: writes read back through "
          "other queues, commands in flight on all at once")
    # the encrypted namespace: every worker seals and opens blocks at the
    # same moments (each with its own cipher context); 40 rounds of 4
    # writes then 4 reads in flight, each read through another queue
    ok = True
    for rnd in range(40):
        blobs = [os.urandom(8192) for _ in qs]
        for q, h in enumerate(qs):
            h.capsule(h.sqe(0x01, nsid=2, sgl_len=8192, sgl_type=0x01,
                            cdw={10: q * 2, 12: 1}), blobs[q])
        ok = all(h.response()["sc"] == 0 for h in qs) and ok
        for q, h in enumerate(qs):
            h.capsule(h.sqe(0x02, nsid=2, sgl_len=8192,
                            cdw={10: ((q + 1) % 4) * 2, 12: 1}))
        for q, h in enumerate(qs):
            r = h.response()
            ok = ok and r["sc"] == 0 and r["data"] == blobs[(q + 1) % 4]
    check(ok, "encrypted namespace through 4 queues at once: 160 writes "
          "read back through other queues")
    # which worker took each of the 5 connections
    mine = {"127.0.0.1:%d" % h.s.getsockname()[1] for h in [a] + qs}
    got = {}
    with open(logpath, errors="replace") as f:
        for line in f:
            m = re.search(r"connection \d+ from (\S+) \(worker (\d+)\)", line)
            if m and m.group(1) in mine:
                got[m.group(1)] = int(m.group(2))
    nw = int(re.findall(r"listening on \S+ \(\d+ subsystems?, (\d+) workers?\)",
                        open(logpath, errors="replace").read())[-1])
    check(len(got) == 5 and len(set(got.values())) == min(nw, 5),
          "the 5 connections spread over the target's %d worker(s): %s"
          % (nw, sorted(got.values())))
    # the controller goes with its admin queue, its I/O queues (on every
    # worker) with it
    a.close()
    check(all(h.expect_eof() for h in qs),
          "admin queue closed: its I/O queues on every worker close too")
    for h in qs:
        h.close()


def cores_errors(build, work):
    """--cores and `cores` refuse bad lists, saying why, before starting."""
    conf = os.path.join(work, "cores.conf")
    img = os.path.join(work, "cores.img")
    base = ("listen 127.0.0.1:1\nsubsystem nqn.2026-11.io.offcore:c\n"
            "  allow-any-host\n  namespace 1 %s size=1M\n" % img)
    binp = os.path.join(build, "src/nvmf/offcore-nvmf")
    open(conf, "w").write(base)
    for arg, why in (("", "an empty list"), ("1-0", "the first is larger"),
                     ("0,0", "CPU 0 listed twice"), ("0-2,1", "CPU 1 listed twice"),
                     ("x", "want CPU numbers"), ("0,", "want CPU numbers"),
                     ("-1", "want CPU numbers"), ("0-", "want CPU numbers"),
                     ("99999", "CPU numbers are 0..1023"),
                     ("0-99", "more than 64 CPUs")):
        r = subprocess.run([binp, "-c", conf, "--cores", arg, "--check"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        check(r.returncode == 2 and "--cores '%s': " % arg in r.stdout and
              why in r.stdout, "--cores '%s': refused (exit 2), %s (%s)"
              % (arg, why, r.stdout.strip()[-100:]))
    # a CPU this process may not use: exit 1 before starting
    r = subprocess.run([binp, "-c", conf, "--cores", "1000", "--check"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 1 and "cpu 1000: not a CPU this process may run on"
          in r.stdout, "--cores 1000: refused, not a CPU this process may use")
    first = min(os.sched_getaffinity(0))
    r = subprocess.run([binp, "-c", conf, "--cores", str(first), "--check"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 0, "--cores %d: configuration good" % first)
    # the file: `cores` with the line, and not beside `cpu`
    open(conf, "w").write("cores 3-1\ncpu 0\ncores 0\n" + base)
    r = subprocess.run([binp, "-c", conf, "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 2 and "cores.conf:1: cores: range 3-1" in r.stdout
          and "cores.conf:3: cores: cpu is given already" in r.stdout,
          "cores in the file: bad list and cores beside cpu refused with "
          "their lines (%s)" % r.stdout.strip()[-160:])


def config_errors(build, work):
    """A configuration with several mistakes: every one reported as
    FILE:LINE: reason, and the target does not start."""
    bad = os.path.join(work, "bad.conf")
    open(bad, "w").write(
        "listen 127.0.0.1\n"                       # 1: no port
        "subsystem not-an-nqn\n"                   # 2
        "  allow-host nqn.2014-08.org.x:h\n"
        "  namespace 0 /nonexistent size=12\n"    # 4: nsid 0, size
        "subsystem nqn.2026-11.io.offcore:b\n"     # 5: no namespace, no host
        "  bogus 1\n"                              # 6
        "namespace 1 /x\n")                        # 7: belongs to b; fine
    r = subprocess.run([os.path.join(build, "src/nvmf/offcore-nvmf"), "-c", bad,
                        "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    want = ["bad.conf:1:", "bad.conf:2:", "bad.conf:4:", "bad.conf:5:", "bad.conf:6:"]
    check(r.returncode == 2 and all(w in r.stdout for w in want),
          "bad configuration: every error with file and line, not started "
          "(exit 2, as offcore-dp)")
    if r.returncode != 2:
        print(r.stdout)
    # an encryption key others may read is refused, naming the fix
    key = os.path.join(work, "open.key")
    with open(key, "wb") as f:
        f.write(os.urandom(64))
    os.chmod(key, 0o644)
    kc = os.path.join(work, "key.conf")
    open(kc, "w").write("listen 127.0.0.1:1\nsubsystem nqn.2026-11.io.offcore:k\n"
                        "  allow-any-host\n  namespace 1 %s size=1M key=%s\n"
                        % (os.path.join(work, "k.img"), key))
    r = subprocess.run([os.path.join(build, "src/nvmf/offcore-nvmf"), "-c", kc,
                        "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 1 and "mode 644 lets others read it" in r.stdout
          and "config line 4" in r.stdout,
          "key file readable by others: refused with its mode and config line")
    if r.returncode != 1:
        print(r.stdout)
    os.chmod(key, 0o600)
    r = subprocess.run([os.path.join(build, "src/nvmf/offcore-nvmf"), "-c", kc,
                        "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    check(r.returncode == 0, "the same key at mode 600: configuration good")
    # `cpu N`: a CPU this process may not run on is refused before start
    cc = os.path.join(work, "cpu.conf")
    ncpu = len(os.sched_getaffinity(0))
    for cpu, good in ((min(os.sched_getaffinity(0)), True), (1023, False)):
        open(cc, "w").write("listen 127.0.0.1:1\ncpu %d\nsubsystem "
                            "nqn.2026-11.io.offcore:c\n  allow-any-host\n"
                            "  namespace 1 %s size=1M\n"
                            % (cpu, os.path.join(work, "c.img")))
        r = subprocess.run([os.path.join(build, "src/nvmf/offcore-nvmf"), "-c",
                            cc, "--check"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if good:
            check(r.returncode == 0, "cpu %d (of %d): configuration good"
                  % (cpu, ncpu))
        else:
            check(r.returncode == 1 and "cpu 1023: not a CPU this process "
                  "may run on" in r.stdout, "cpu 1023: refused, saying why")
        if (r.returncode == 0) != good:
            print(r.stdout)


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="oc-nvmf-proto.")
    port = nt.free_port(24200 + os.getpid() % 100)
    mport = nt.free_port(24700 + os.getpid() % 100)
    conf = os.path.join(work, "nvmf.conf")
    xkey = os.path.join(work, "xts.key")
    with open(os.open(xkey, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(os.urandom(64))
    open(conf, "w").write(
        "listen 127.0.0.1:%d\nmetrics 127.0.0.1:%d\nkato-grace-ms 200\n"
        "send-timeout-ms 1000\npoll-us 50\n"
        "subsystem %s\n"
        "  allow-host %s\n  namespace 1 %s size=16M integrity=on\n"
        "  namespace 2 %s size=4M integrity=on key=%s\n"
        % (port, mport, SUB, HOST, os.path.join(work, "ns1.img"),
           os.path.join(work, "ns2.img"), xkey))
    log = open(os.path.join(work, "target.log"), "w")
    t = nt.start(build, conf, log)
    try:
        good = Good(port)
        good.roundtrip("start")

        # 0. the discovery log names the subsystem, the address and the port
        d = nc.Host(port)
        d.admin_session(nc.DISC, OTHER)  # discovery admits any host
        hdr = d.cmd(d.sqe(0x02, sgl_len=1024, cdw={10: 0x70 | (255 << 16)}))
        nrec = struct.unpack_from("<Q", hdr["data"], 8)[0]
        full = d.cmd(d.sqe(0x02, sgl_len=2048, cdw={10: 0x70 | (511 << 16)}))
        e = full["data"][1024:2048]
        check(hdr["sc"] == 0 and nrec == 1 and e[0] == 3 and e[2] == 2
              and e[256:256 + len(SUB)] == SUB.encode()
              and e[512:521] == b"127.0.0.1" and e[32:32 + len(str(port))] == str(port).encode(),
              "discovery log: 1 record, TCP, NVM subsystem %s at 127.0.0.1:%d" % (SUB, port))
        r = d.set_queues(2)
        check(r["sc"] == 0x002, "no I/O queues on the discovery controller (%#x)" % r["sc"])
        d.close()

        # 1. bad lengths
        h = nc.Host(port)
        h.icreq(plen=100)
        fatal(h, 1, "ICReq with PDU length 100")
        h = nc.Host(port)
        h.icreq()
        h.icresp()
        h.capsule(h.sqe(0x06, sgl_len=4096), plen_delta=-10)
        fatal(h, 1, "capsule shorter than its header")
        h = nc.Host(port)
        h.icreq()
        h.icresp()
        h.send(struct.pack("<BBBBI", nc.CMD, 0, 72, 72, 72 + 128 * 1024 + 4) + bytes(64))
        fatal(h, 5, "in-capsule data above the 128 KiB announced")
        good.roundtrip("bad lengths")

        # 2. PDU before ICReq, a second ICReq
        h = nc.Host(port)
        h.capsule(h.sqe(0x06, sgl_len=4096))
        fatal(h, 2, "capsule before ICReq")
        h = nc.Host(port)
        h.icreq()
        h.icresp()
        h.icreq()
        fatal(h, 2, "second ICReq")

        # 3. bad digests: header (fatal), data (the command fails, retryable)
        m0 = metrics(mport)
        h = nc.Host(port)
        h.icreq(hd=True)
        h.icresp()
        h.capsule(h.sqe(0x06, sgl_len=4096), bad_hdgst=True)
        fatal(h, 3, "bad header digest")
        h = nc.Host(port)
        h.icreq(dd=True)
        h.icresp()
        d = bytearray(1024)
        d[256:256 + len(SUB)] = SUB.encode()
        d[512:512 + len(HOST)] = HOST.encode()
        struct.pack_into("<H", d, 16, 0xFFFF)
        h.capsule(h.sqe(0x7F, fct=1, sgl_len=1024, sgl_type=1, cdw={11: 31}),
                  bytes(d), bad_ddgst=True)
        r = h.response()
        check(r["sc"] == 0x022 and not (r["status"] & 0x8000),
              "bad data digest: Transient Transport Error, DNR clear (got %#x)" % r["sc"])
        r = h.connect(SUB, HOST)
        check(r["sc"] == 0, "same connection works after a data digest error")
        h.close()
        m1 = metrics(mport)
        check(rej(m1, "header_digest") - rej(m0, "header_digest") == 1,
              "header digest error counted")
        check(rej(m1, "data_digest") - rej(m0, "data_digest") == 1,
              "data digest error counted")
        good.roundtrip("bad digests")

        # 4. commands on a queue that is not connected
        h = nc.Host(port)
        h.icreq()
        h.icresp()
        r = h.identify(1)
        check(r["sc"] == 0x00C, "Identify before Connect: Command Sequence Error (%#x)" % r["sc"])
        r = h.read(1, 0, 4096)
        check(r["sc"] == 0x00C, "Read before Connect: Command Sequence Error (%#x)" % r["sc"])
        h.close()
        # an I/O queue for a controller that does not exist
        h = nc.Host(port)
        h.icreq()
        h.icresp()
        r = h.connect(SUB, HOST, qid=1, cntlid=4000)
        check(r["sc"] == 0x182, "I/O Connect to no controller: Connect Invalid Parameters (%#x)" % r["sc"])
        h.close()

        # 5. Connect from a host the subsystem does not allow; no such subsystem
        m0 = metrics(mport)
        h = nc.Host(port)
        h.icreq()
        h.icresp()
        r = h.connect(SUB, OTHER)
        check(r["sc"] == 0x184, "host not allowed: Connect Invalid Host (%#x)" % r["sc"])
        r = h.connect("nqn.2026-11.io.offcore:nope", HOST)
        check(r["sc"] == 0x182 and r["dw0"] == (1 << 16 | 256),
              "unknown subsystem: Invalid Parameters at data byte 256 (%#x, %#x)"
              % (r["sc"], r["dw0"]))
        h.close()
        m1 = metrics(mport)
        check(rej(m1, "host_denied") - rej(m0, "host_denied") == 1, "denied host counted")
        good.roundtrip("denied host")

        # 6. unknown opcodes: admin, I/O, fabrics
        m0 = metrics(mport)
        r = good.a.cmd(good.a.sqe(0xC1))
        check(r["sc"] == 0x001, "unknown admin opcode: Invalid Opcode (%#x)" % r["sc"])
        r = good.io.cmd(good.io.sqe(0x7E, nsid=1))
        check(r["sc"] == 0x001, "unknown I/O opcode: Invalid Opcode (%#x)" % r["sc"])
        r = good.a.cmd(good.a.sqe(0x7F, fct=0x33))
        check(r["sc"] == 0x001, "unknown fabrics type: Invalid Opcode (%#x)" % r["sc"])
        r = good.a.identify(0x55)
        check(r["sc"] == 0x002, "unknown Identify CNS: Invalid Field (%#x)" % r["sc"])
        r = good.a.cmd(good.a.sqe(0x02, sgl_len=4096, cdw={10: 0xC0 | (1023 << 16)}))
        check(r["sc"] == 0x109, "unknown log page: Invalid Log Page (%#x)" % r["sc"])
        r = good.io.read(1, (16 << 20) // 4096 - 1, 8192)
        check(r["sc"] == 0x080, "read past the end: LBA Out of Range (%#x)" % r["sc"])
        r = good.io.read(7, 0, 4096)
        check(r["sc"] == 0x00B, "read of namespace 7: Invalid Namespace (%#x)" % r["sc"])
        r = good.io.read(1, 0, 256 * 1024)
        check(r["sc"] == 0x002, "read above MDTS: Invalid Field (%#x)" % r["sc"])
        m1 = metrics(mport)
        check(rej(m1, "invalid_opcode") - rej(m0, "invalid_opcode") == 3,
              "unknown opcodes counted")
        good.roundtrip("unknown opcodes")

        # 7. data longer than announced
        m0 = metrics(mport)
        a = nc.Host(port)
        a.admin_session(SUB, HOST)
        a.set_queues(1)
        h = nc.io_session(port, SUB, HOST, a.cntlid)
        s = h.sqe(0x01, nsid=1, sgl_len=16384, cdw={12: 3})
        h.capsule(s)
        p = h.recv_pdu()
        check(p.type == nc.R2T, "write of 16 KiB: R2T")
        cccid, ttag, off, ln = struct.unpack_from("<HHII", p.raw, 8)
        h.h2c(cccid, ttag, 0, bytes(32768))
        fatal(h, 4, "H2CData longer than the R2T asked for")
        a.close()
        # in-capsule data longer than the SGL says
        r = good.io.cmd(good.io.sqe(0x01, nsid=1, sgl_len=4096, sgl_type=1), bytes(8192))
        check(r["sc"] == 0x00F, "in-capsule data longer than its SGL: SGL Length Invalid (%#x)" % r["sc"])
        # H2CData for a transfer nobody asked for
        x = nc.Host(port)
        x.icreq()
        x.icresp()
        x.h2c(1, 5, 0, bytes(512))
        fatal(x, 1, "H2CData without an R2T")
        m1 = metrics(mport)
        check(rej(m1, "h2c_out_of_range") - rej(m0, "h2c_out_of_range") == 1,
              "data beyond the R2T counted")
        good.roundtrip("data longer than announced")

        # 8. a slow host that stops reading: 32 reads of 128 KiB, never read
        a = nc.Host(port)
        a.admin_session(SUB, HOST)
        a.set_queues(1)
        m0 = metrics(mport)
        slow = nc.io_session(port, SUB, HOST, a.cntlid, rcvbuf=4096)
        for i in range(31):
            s = slow.sqe(0x02, nsid=1, sgl_len=131072, cdw={10: i * 32, 12: 31})
            slow.capsule(s)
        t0 = time.time()
        for i in range(5):
            good.roundtrip("slow host stalled (%d)" % i)
        check(time.time() - t0 < 5, "other host's 5 round trips took %.2f s" % (time.time() - t0))
        # 4 MiB of reads cannot fit its 2 MiB send buffer and our 4 KiB window:
        # after send-timeout-ms (1 s) of no progress the queue is closed
        deadline = time.time() + 6
        while time.time() < deadline and rej(metrics(mport), "host_stopped_reading") == rej(m0, "host_stopped_reading"):
            time.sleep(0.2)
        m1 = metrics(mport)
        check(rej(m1, "host_stopped_reading") - rej(m0, "host_stopped_reading") == 1,
              "a host that stops reading is disconnected after 1 s and counted")
        good.roundtrip("the slow host's disconnection")
        slow.close()
        a.close()

        m = metrics(mport)
        check(rej(m, "pdu_fatal") == 8, "8 fatal PDU errors counted (%d)" % rej(m, "pdu_fatal"))
        check(rej(m, "command_before_connect") == 2, "commands before Connect counted")
        qlat = sum(v for k, v in m.items()
                   if k.startswith("offcore_nvmf_queue_latency_seconds_count"))
        nlat = sum(v for k, v in m.items()
                   if k.startswith("offcore_nvmf_ns_latency_seconds_count"))
        check(qlat > 0 and nlat >= qlat,
              "latency histograms per queue (%d) and per namespace (%d)" % (qlat, nlat))
        good.roundtrip("everything")

        # 9. offcore nvmf: the live view names the subsystem, the queues, the counts
        cli = subprocess.run([os.path.join(build, "src/tools/offcore"), "nvmf",
                              "--target", "127.0.0.1:%d" % mport],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = cli.stdout
        check(cli.returncode == 0 and SUB in out and "host_denied 1" in out
              and " 1    none" in out, "offcore nvmf lists subsystem, queues, counters")
        if cli.returncode or SUB not in out:
            print(out)
        # 9b. the other NVM commands: Flush, FUA write, Write Zeroes, DSM
        io = good.io
        pat = bytes(range(256)) * 64  # 16 KiB
        check(io.write(1, 500, pat, fua=True)["sc"] == 0, "write with FUA")
        check(io.cmd(io.sqe(0x00, nsid=1))["sc"] == 0, "Flush")
        r = io.cmd(io.sqe(0x08, nsid=1, cdw={10: 501, 12: 1}))  # 2 blocks
        check(r["sc"] == 0, "Write Zeroes (%#x)" % r["sc"])
        rd = io.read(1, 500, 16384)
        check(rd["sc"] == 0 and rd["data"] == pat[:4096] + bytes(8192) + pat[12288:],
              "Write Zeroes zeroed exactly blocks 501-502, checksums follow")
        rng = struct.pack("<IIQ", 0, 1, 503)  # deallocate block 503
        r = io.cmd(io.sqe(0x09, nsid=1, sgl_len=16, sgl_type=1,
                          cdw={10: 0, 11: 4}), rng)
        check(r["sc"] == 0, "Dataset Management deallocate (%#x)" % r["sc"])
        rd = io.read(1, 503, 4096)
        check(rd["sc"] == 0 and rd["data"] == bytes(4096),
              "a deallocated block reads zeros and passes its checksum")
        r = io.cmd(io.sqe(0x08, nsid=1, cdw={10: 4095, 12: 1}))
        check(r["sc"] == 0x080, "Write Zeroes past the end: LBA Out of Range (%#x)" % r["sc"])

        # 9c. a large H2CData whose data arrives after its header goes
        # straight into place (no copy); with digests, the digest follows
        for dg in (False, True):
            a = nc.Host(port)
            a.admin_session(SUB, HOST)
            a.set_queues(1)
            h = nc.io_session(port, SUB, HOST, a.cntlid, hd=dg, dd=dg)
            m0 = metrics(mport)
            data = bytes((i * 13 + 5) & 0xFF for i in range(65536))
            h.capsule(h.sqe(0x01, nsid=1, sgl_len=65536, cdw={10: 600, 12: 15}))
            p = h.recv_pdu()
            cccid, ttag, off, ln = struct.unpack_from("<HHII", p.raw, 8)
            hd = 4 if dg else 0
            hdr = struct.pack("<BBBBIHHII4x", nc.H2C, (3 if dg else 0) | nc.F_LAST,
                              24, 24 + hd, 24 + hd + 65536 + hd, cccid, ttag, 0, 65536)
            h.send(hdr + (struct.pack("<I", nc.crc32c(hdr)) if dg else b"") + data[:1000])
            time.sleep(0.05)
            h.send(data[1000:40000])
            time.sleep(0.05)
            h.send(data[40000:] + (struct.pack("<I", nc.crc32c(data)) if dg else b""))
            r = h.response()
            rd = h.read(1, 600, 65536)
            m1 = metrics(mport)
            direct = (m1.get("offcore_nvmf_h2c_direct_total", 0)
                      - m0.get("offcore_nvmf_h2c_direct_total", 0))
            check(r["sc"] == 0 and rd["data"] == data and direct == 1,
                  "H2CData received in place%s (status %#x, direct %d)"
                  % (" with digests" if dg else "", r["sc"], direct))
            h.close()
            a.close()

        # 9c2. a 128 KiB Write with its data in the capsule (IOCCSZ allows
        # MDTS: no R2T) goes straight into place too once its header is in;
        # with digests the digest follows, and a bad one fails the command
        # (retryable) and leaves the queue working
        for dg, bad in ((False, False), (True, False), (True, True)):
            a = nc.Host(port)
            a.admin_session(SUB, HOST)
            a.set_queues(1)
            h = nc.io_session(port, SUB, HOST, a.cntlid, hd=dg, dd=dg)
            m0 = metrics(mport)
            data = bytes((i * 11 + (3 if bad else 1)) & 0xFF for i in range(131072))
            hd = 4 if dg else 0
            hdr = struct.pack("<BBBBI", nc.CMD, 3 if dg else 0, 72, 72 + hd,
                              72 + hd + len(data) + hd) + bytes(h.sqe(
                0x01, nsid=1, sgl_len=len(data), sgl_type=0x01,
                cdw={10: 800, 12: 31}))
            h.send(hdr + (struct.pack("<I", nc.crc32c(hdr)) if dg else b"") + data[:1000])
            deadline = time.monotonic() + 10
            direct = 0
            while direct == 0 and time.monotonic() < deadline:
                direct = (metrics(mport).get("offcore_nvmf_h2c_direct_total", 0)
                          - m0.get("offcore_nvmf_h2c_direct_total", 0))
                time.sleep(0.01)  # poll interval, not a wait for the target
            h.send(data[1000:70000])
            h.send(data[70000:] + (struct.pack("<I", nc.crc32c(data) ^ (1 if bad else 0))
                                   if dg else b""))
            r = h.response()
            rd = h.read(1, 800, len(data))
            if bad:
                check(r["sc"] == 0x022 and rd["sc"] == 0 and rd["data"] != data
                      and direct == 1,
                      "in-capsule data in place, bad data digest: Transient "
                      "Transport Error, queue still serves (status %#x, direct %d)"
                      % (r["sc"], direct))
            else:
                check(r["sc"] == 0 and rd["data"] == data and direct == 1,
                      "128 KiB in-capsule data received in place%s (status %#x, "
                      "direct %d)" % (" with digests" if dg else "", r["sc"], direct))
            h.close()
            a.close()

        # 9d. whole H2CData PDUs arriving back to back (as a busy host sends
        # them) still go straight into place: while R2Ts are out the target
        # receives a few headers' worth at a time, never whole PDUs into its
        # receive buffer to copy them from there
        a = nc.Host(port)
        a.admin_session(SUB, HOST)
        a.set_queues(1)
        h = nc.io_session(port, SUB, HOST, a.cntlid)
        m0 = metrics(mport)
        n, ln = 4, 65536
        datas = [bytes((i * 7 + k * 31 + 1) & 0xFF for i in range(ln))
                 for k in range(n)]
        bycid = {}
        for k in range(n):
            h.capsule(h.sqe(0x01, nsid=1, sgl_len=ln,
                            cdw={10: 700 + 16 * k, 12: 15}))
            bycid[h.cid] = datas[k]
        burst = b""
        for k in range(n):
            p = h.recv_pdu()
            check(p.type == nc.R2T, "R2T for write %d" % k)
            cccid, ttag = struct.unpack_from("<HH", p.raw, 8)
            burst += struct.pack("<BBBBIHHII4x", nc.H2C, nc.F_LAST, 24, 24,
                                 24 + ln, cccid, ttag, 0, ln) + bycid[cccid]
        h.send(burst)
        sc = [h.response()["sc"] for _ in range(n)]
        rd = [h.read(1, 700 + 16 * k, ln)["data"] for k in range(n)]
        m1 = metrics(mport)
        direct = (m1.get("offcore_nvmf_h2c_direct_total", 0)
                  - m0.get("offcore_nvmf_h2c_direct_total", 0))
        check(sc == [0] * n and rd == datas and direct == n,
              "back-to-back H2CData received in place (status %s, direct "
              "%d of %d)" % (sc, direct, n))
        # their writes and reads went from registered buffers
        # (READ_FIXED/WRITE_FIXED: no page pinning per I/O)
        fixed = (m1.get("offcore_nvmf_fixed_io_total", 0)
                 - m0.get("offcore_nvmf_fixed_io_total", 0))
        check(fixed == 2 * n, "writes and reads from registered buffers "
              "(%d of %d)" % (fixed, 2 * n))
        h.close()
        a.close()

        # 10. keep-alive: a controller silent past KATO (300 ms) + grace is dropped
        m0 = metrics(mport)
        k = nc.Host(port)
        k.icreq()
        k.icresp()
        r = k.connect(SUB, HOST, kato=300)
        check(r["sc"] == 0, "Connect with a 300 ms keep-alive")
        k.s.settimeout(5)
        t0 = time.time()
        closed = k.expect_eof()
        check(closed and time.time() - t0 < 3,
              "silent controller dropped after %.1f s" % (time.time() - t0))
        m1 = metrics(mport)
        check(rej(m1, "keep_alive_expired") - rej(m0, "keep_alive_expired") == 1,
              "keep-alive expiry counted")
        good.roundtrip("keep-alive expiry of another controller")

        # 10b. the load generator checks its data when asked: every read's
        # C2HData equals the backing file at that offset (plaintext here);
        # against a file of other bytes it stops with an error
        gen = os.path.join(build, "src", "nvmf", "offcore-nvmf-load")
        other = os.path.join(work, "other.img")
        with open(other, "wb") as f:
            f.write(os.urandom(16 << 20))
        for path, want_ok in ((os.path.join(work, "ns1.img"), True),
                              (other, False)):
            r = subprocess.run(
                [gen, "--addr", "127.0.0.1:%d" % port, "--nqn", SUB,
                 "--hostnqn", HOST, "--qd", "8", "--seconds", "0.3",
                 "--verify-file", path], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, timeout=30)
            if want_ok:
                j = json.loads(r.stdout.strip().splitlines()[-1]) \
                    if r.returncode == 0 else {}
                check(r.returncode == 0 and j.get("ops", 0) > 0 and
                      j.get("verified", 0) >= j["ops"],
                      "offcore-nvmf-load --verify-file: %s reads, each "
                      "C2HData equal to the backing file (%s)"
                      % (j.get("verified"), r.stdout.strip()[-160:]))
            else:
                check(r.returncode == 1 and "differs" in r.stdout,
                      "offcore-nvmf-load --verify-file against other bytes "
                      "fails (%d: %s)" % (r.returncode, r.stdout.strip()[-80:]))
        good.roundtrip("load generator runs")

        # 11. one controller's queues across workers: an admin queue and 4
        # I/O queues land round robin on the workers (the target's log names
        # each connection's worker); data written through one queue reads
        # back through another, with commands in flight on all at once
        multiqueue(port, log.name)
        good.roundtrip("queues across workers")

        # 12. SIGTERM drains: 16 reads of 128 KiB in flight all complete
        # (and are answered) before the connection closes
        for i in range(16):
            good.io.capsule(good.io.sqe(0x02, nsid=1, sgl_len=131072,
                                        cdw={10: i * 32, 12: 31}))
        t.terminate()
        answered = 0
        try:
            for i in range(16):
                r = good.io.response()
                answered += r["sc"] == 0 and len(r["data"]) == 131072
        except (nc.Closed, OSError):
            pass
        check(answered == 16, "SIGTERM: %d of 16 in-flight reads answered" % answered)
        check(good.io.expect_eof(), "SIGTERM: then the connection closes")
        rc = t.wait(timeout=20)
        check(rc == 0, "target exits 0 on SIGTERM")
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()
        log.close()
        if failures:
            print(open(log.name).read()[-4000:])
    config_errors(build, work)
    cores_errors(build, work)
    shutil.rmtree(work, ignore_errors=True)
    print("proto-test: %s (%d failure%s)" % ("FAIL" if failures else "PASS",
                                             len(failures), "" if len(failures) == 1 else "s"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
