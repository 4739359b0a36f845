#!/usr/bin/env python3
"""tests/nvmf/blockdev_test.py BUILDDIR — a namespace on a block device.

A loop device over a 32 MiB file backs namespace 1 (integrity on, the
checksums in a file of their own, AES-256-XTS): Identify reports the
device's size, data written reads back, the device holds ciphertext, Write Zeroes reads back zeros, and a
byte flipped on the device itself makes the read of that block fail with
Unrecovered Read Error while its neighbours read fine.  SKIP (77) when not
root or no loop device can be set up.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvmf_client as nc  # noqa: E402
import nvmf_target as nt  # noqa: E402

SUB = "nqn.2026-11.io.offcore:blockdev"
HOST = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-0000000d0001"


def main():
    build = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0 or not shutil.which("losetup"):
        print("SKIP: needs root and losetup")
        return 77
    work = tempfile.mkdtemp(prefix="oc-nvmf-blk.")
    img = os.path.join(work, "disk.img")
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    r = subprocess.run(["losetup", "--find", "--show", img],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        shutil.rmtree(work)
        print("SKIP: losetup: " + r.stdout.strip())
        return 77
    loop = r.stdout.strip()
    fails = []
    t = None
    try:
        key = os.path.join(work, "k")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(64))
        os.close(fd)
        port = nt.free_port(24800 + os.getpid() % 100)
        conf = os.path.join(work, "c.conf")
        open(conf, "w").write(
            "listen 127.0.0.1:%d\nsubsystem %s\n  allow-host %s\n"
            "  namespace 1 %s integrity=on integrity-file=%s key=%s\n"
            % (port, SUB, HOST, loop, os.path.join(work, "loop.crc"), key))
        # without integrity-file, a block device's checksums have nowhere to go
        nc_conf = os.path.join(work, "n.conf")
        open(nc_conf, "w").write("listen 127.0.0.1:%d\nsubsystem %s\n  allow-any-host\n"
                                 "  namespace 1 %s integrity=on\n" % (port, SUB, loop))
        r = subprocess.run([os.path.join(build, "src/nvmf/offcore-nvmf"), "-c", nc_conf,
                            "--check"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 1 or "add integrity-file=PATH" not in r.stdout:
            fails.append("block device without integrity-file accepted: " + r.stdout)
        log = open(os.path.join(work, "log"), "w")
        t = nt.start(build, conf, log)
        a = nc.Host(port)
        a.admin_session(SUB, HOST)
        nsze = struct.unpack_from("<Q", a.identify(0, nsid=1)["data"], 0)[0]
        if nsze != (32 << 20) // 4096:
            fails.append("Identify NSZE %d, want %d" % (nsze, (32 << 20) // 4096))
        a.set_queues(1)
        io = nc.io_session(port, SUB, HOST, a.cntlid)
        data = b"block-device-marker-" * 3277
        data = data[:65536]
        if io.write(1, 100, data)["sc"] != 0:
            fails.append("write failed")
        rd = io.read(1, 100, 65536)
        if rd["sc"] != 0 or rd["data"] != data:
            fails.append("read back differs")
        with open(loop, "rb") as f:
            f.seek(100 * 4096)
            raw = f.read(65536)
        if b"block-device-marker" in raw:
            fails.append("plaintext on the device")
        with open(loop, "r+b") as f:  # corrupt block 103 on the device
            f.seek(103 * 4096 + 9)
            b = f.read(1)
            f.seek(103 * 4096 + 9)
            f.write(bytes([b[0] ^ 0x40]))
            f.flush()
            os.fsync(f.fileno())
        r103 = io.read(1, 103, 4096)
        r102 = io.read(1, 102, 4096)
        if r103["sc"] != 0x281:
            fails.append("corrupted block: status %#x, want 0x281" % r103["sc"])
        if r102["sc"] != 0 or r102["data"] != data[2 * 4096:3 * 4096]:
            fails.append("neighbour block unreadable")
        # Write Zeroes on an encrypted namespace writes encrypted zeros
        r = io.cmd(io.sqe(0x08, nsid=1, cdw={10: 104, 12: 1}))
        rz = io.read(1, 104, 8192)
        if r["sc"] != 0 or rz["sc"] != 0 or rz["data"] != bytes(8192):
            fails.append("Write Zeroes on the encrypted namespace (%#x, %#x)"
                         % (r["sc"], rz["sc"]))
        t.terminate()
        if t.wait(timeout=20) != 0:
            fails.append("target exit status")
        log.close()
        if "block 103 fails its checksum" not in open(log.name).read():
            fails.append("log does not name block 103")
    finally:
        if t and t.poll() is None:
            t.kill()
            t.wait()
        subprocess.run(["losetup", "-d", loop])
        shutil.rmtree(work, ignore_errors=True)
    for f in fails:
        print("FAIL: " + f)
    print("blockdev-test: " + ("FAIL" if fails else "PASS") + " (%s)" % loop)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
