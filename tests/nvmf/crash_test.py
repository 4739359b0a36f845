#!/usr/bin/env python3
"""tests/nvmf/crash_test.py BUILDDIR — kill the target in the middle of a
large write, restart it, and check what a host reads back.

A namespace with integrity on (CRC32C per block) holds generation 0 of
1024 blocks.  A host then rewrites all of them as generation 1 in 128 KiB
writes (R2T/H2CData), eight in flight, and the target is killed with
SIGKILL after the 12th completion.  After a restart on the same files,
every block is read alone:
  * a block the host was told was written reads back exactly generation 1;
  * any other block reads back exactly generation 0 or 1, or fails with
    Unrecovered Read Error (its data and checksum disagree);
  * never anything else: no block mixes generations, none is garbage.
Repeated 3 times with kills at different moments.
"""
import os
import shutil
import signal
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvmf_client as nc  # noqa: E402
import nvmf_target as nt  # noqa: E402

SUB = "nqn.2026-11.io.offcore:crash"
HOST = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-0000000c0001"
NBLK = 1024
PER = 32  # blocks per write: 128 KiB


def block(lba, gen):
    head = b"lba=%08d gen=%d " % (lba, gen)
    fill = bytes(((lba * 7 + gen * 131 + i) & 0xFF) for i in range(256))
    return (head + fill * 16)[:4096]


def session(port):
    a = nc.Host(port)
    a.admin_session(SUB, HOST)
    a.set_queues(1)
    return a, nc.io_session(port, SUB, HOST, a.cntlid)


def rewrite_until_killed(io, target, kill_after):
    """Pipelined 128 KiB writes of generation 1; SIGKILL the target after
    @kill_after completions.  @return the set of acknowledged blocks."""
    acked, pending, nxt = set(), {}, 0
    while nxt < NBLK and len(pending) < 8:
        s = io.sqe(0x01, nsid=1, sgl_len=PER * 4096,
                   cdw={10: nxt, 12: PER - 1})
        pending[io.cid] = nxt
        io.capsule(s)
        nxt += PER
    done = 0
    try:
        while pending:
            p = io.recv_pdu()
            if p.type == nc.R2T:
                cccid, ttag, off, ln = struct.unpack_from("<HHII", p.raw, 8)
                base = pending[cccid]
                data = b"".join(block(base + i, 1) for i in range(PER))
                io.h2c(cccid, ttag, off, data[off:off + ln])
            elif p.type == nc.RSP:
                r = p.cqe()
                base = pending.pop(r["cid"])
                if r["sc"] == 0:
                    acked.update(range(base, base + PER))
                done += 1
                if done == kill_after:
                    target.send_signal(signal.SIGKILL)
                    target.wait()
                    nt.port_free(io.s.getpeername()[1])
                    return acked
                if nxt < NBLK:
                    s = io.sqe(0x01, nsid=1, sgl_len=PER * 4096,
                               cdw={10: nxt, 12: PER - 1})
                    pending[io.cid] = nxt
                    io.capsule(s)
                    nxt += PER
    except (nc.Closed, OSError):
        pass
    return acked


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="oc-nvmf-crash.")
    port = nt.free_port(24300 + os.getpid() % 100)
    conf = os.path.join(work, "nvmf.conf")
    open(conf, "w").write("listen 127.0.0.1:%d\nsubsystem %s\n  allow-host %s\n"
                          "  namespace 1 %s size=%d integrity=on\n"
                          % (port, SUB, HOST, os.path.join(work, "ns.img"),
                             NBLK * 4096))
    log = open(os.path.join(work, "target.log"), "w")
    bad = 0
    t = None
    try:
        for rnd, kill_after in enumerate((12, 5, 20)):
            t = nt.start(build, conf, log)
            a, io = session(port)
            for lba in range(0, NBLK, 2):  # generation 0, 8 KiB in-capsule writes
                r = io.write(1, lba, block(lba, 0) + block(lba + 1, 0))
                assert r["sc"] == 0, "generation 0 write failed"
            acked = rewrite_until_killed(io, t, kill_after)
            a.close()
            io.close()
            t = nt.start(build, conf, log)
            a, io = session(port)
            exact1 = old = failed = mixed = 0
            for lba in range(NBLK):
                r = io.read(1, lba, 4096)
                if r["sc"] == 0x281:
                    failed += 1
                    if lba in acked:
                        print("FAIL: acknowledged block %d fails to read" % lba)
                        bad += 1
                    continue
                if r["sc"] != 0:
                    print("FAIL: block %d: status %#x" % (lba, r["sc"]))
                    bad += 1
                    continue
                d = r["data"]
                if d == block(lba, 1):
                    exact1 += 1
                elif d == block(lba, 0) and lba not in acked:
                    old += 1
                else:
                    mixed += 1
                    bad += 1
                    print("FAIL: block %d (%s): neither generation: %r"
                          % (lba, "acked" if lba in acked else "not acked", d[:24]))
            print("round %d: killed after %d completions: %d blocks acknowledged; "
                  "read back: %d new, %d old, %d failing their checksum, %d wrong"
                  % (rnd + 1, kill_after, len(acked), exact1, old, failed, mixed),
                  flush=True)
            if len(acked) < kill_after * PER:
                print("FAIL: fewer blocks acknowledged than completions seen")
                bad += 1
            a.close()
            io.close()
            nt.stop(t, timeout=20)
            t = None
    finally:
        if t and t.poll() is None:
            t.kill()
            t.wait()
        log.close()
        if bad or sys.exc_info()[0]:
            print(open(log.name).read()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    print("crash-test: " + ("FAIL" if bad else "PASS"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
