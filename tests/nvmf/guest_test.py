#!/usr/bin/env python3
"""tests/nvmf/guest_test.py BUILDDIR — the real-initiator test.

The Linux kernel's own nvme-tcp host driver, in a qemu guest, against
offcore-nvmf on this machine:

  * Debian's kernel (the package linux-image-amd64 depends on, looked up at
    run time, fetched with apt-get download: the only download) is cached
    under BUILDDIR/nvmf-guest/; its vmlinux is pulled out of the vmlinuz
    (xz) so that qemu boots it through PVH, which skips decompressing under
    TCG;
  * an initramfs: busybox, the ~27 modules nvme-tcp needs (depmod -b), a
    static discovery-log reader (guest-discover.c) and a generated script;
  * qemu TCG (no KVM here), user-mode networking: the guest reaches the
    target at 10.0.2.2.

In the guest: read the discovery log; connect to the NVM subsystem with
2 I/O queues, without and then with header and data digests; write a
random pattern with dd (O_DIRECT) at queue depth 1 (64 KiB writes: in-capsule
data, IOCCSZ allowing 128 KiB: no R2T) and with 32 dd processes at once (queue
depth up to 32), read it back and compare; a host the subsystem does not
allow is refused; with integrity on (namespace 2), bytes flipped in the
backing file under the guest make its read fail with an I/O error, and the
target counts and logs the block; an encrypted namespace (namespace 3)
round-trips with no plaintext on disk; fio (this machine's, with its
shared libraries) writes with --verify=crc32c over the integrity and the
encrypted namespace, two jobs at once, and checks every block it reads
back; and the target is killed (SIGKILL)
in the middle of a 12 MiB write and restarted: the host reconnects, the
write completes, and every byte reads back.  The guest prints PASS/FAIL
lines; this script checks every expected PASS line and the target's
counters, and tshark decodes the capture of the session (up to the kill).

Exit 0 pass, 1 fail, 77 skip (no qemu, no kernel package, no static libc,
no fio).
"""
import glob
import lzma
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvmf_target as nt  # noqa: E402

SKIP = 77
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-00000000a001"
BADHOST = "nqn.2014-08.org.nvmexpress:uuid:0c0ffee0-0000-4000-8000-00000000bad0"
SUBNQN = "nqn.2026-11.io.offcore:guest-test"
TIMEOUT = 240  # whole guest run, seconds

# modules nvme-tcp needs in the guest: the depends closure of these roots
# (plus the algorithms crc32c/crc-t10dif/crc64 load by name, not by symbol)
ROOTS = ["virtio_pci", "virtio_net", "nvme_tcp", "crc32c_intel",
         "crc32c_generic", "crct10dif_pclmul", "crct10dif_generic",
         "crc64_rocksoft_generic"]
APPLETS = ["sh", "mount", "modprobe", "ip", "dd", "cmp", "cat", "echo",
           "sleep", "ls", "mkdir", "poweroff", "seq", "sync", "head", "grep",
           "sed", "tr", "wc", "read", "printf", "test", "[", "rm", "true",
           "false", "dmesg", "tail", "cut", "hexdump", "od", "expr", "wait",
           "kill", "ps", "yes"]


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw).stdout


def kernel_package():
    try:
        out = run(["apt-cache", "depends", "linux-image-amd64"])
    except (OSError, subprocess.CalledProcessError) as e:
        skip("apt-cache cannot name the kernel package: %s" % e)
    m = re.search(r"Depends: (linux-image-(6\.[0-9.]+-[0-9]+-amd64))", out)
    if not m:
        skip("linux-image-amd64 depends on no linux-image-6.*-amd64")
    return m.group(1), m.group(2)


def fetch_kernel(cache):
    pkg, abi = kernel_package()
    root = os.path.join(cache, abi)
    vmlinux = os.path.join(root, "vmlinux")
    if os.path.exists(vmlinux):
        return root, abi
    os.makedirs(cache, exist_ok=True)
    debs = glob.glob(os.path.join(cache, pkg + "_*.deb"))
    if not debs:
        try:
            run(["apt-get", "download", pkg], cwd=cache)
        except (OSError, subprocess.CalledProcessError) as e:
            skip("apt-get download %s failed: %s" % (pkg, getattr(e, "output", e)))
        debs = glob.glob(os.path.join(cache, pkg + "_*.deb"))
        if not debs:
            skip("apt-get download %s left no .deb" % pkg)
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    run(["dpkg-deb", "-x", debs[0], tmp])
    # vmlinuz -> vmlinux: the payload is one xz stream inside the bzImage
    data = open(glob.glob(os.path.join(tmp, "boot", "vmlinuz-*"))[0], "rb").read()
    off = data.find(b"\xfd7zXZ\x00")
    if off < 0:
        skip("vmlinuz carries no xz payload (not CONFIG_KERNEL_XZ?)")
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    elf = dec.decompress(data[off:])
    if not elf.startswith(b"\x7fELF"):
        skip("decompressed kernel is not an ELF vmlinux")
    open(os.path.join(tmp, "vmlinux"), "wb").write(elf)
    os.remove(debs[0])  # the unpacked tree is the cache: keep only what
    shutil.rmtree(os.path.join(tmp, "usr"), ignore_errors=True)  # we boot
    _, paths, order = module_closure(tmp, abi)
    keep = set(paths[n] for n in order)
    for p in paths.values():
        if p not in keep:
            os.remove(p)
    os.remove(glob.glob(os.path.join(tmp, "boot", "vmlinuz-*"))[0])
    shutil.rmtree(root, ignore_errors=True)
    os.rename(tmp, root)
    return root, abi


def module_closure(kroot, abi):
    base = os.path.join(kroot, "lib", "modules", abi)
    paths = {}
    for p in glob.glob(os.path.join(base, "kernel", "**", "*.ko"), recursive=True):
        paths[os.path.basename(p)[:-3].replace("-", "_")] = p
    order, seen = [], set()

    def add(name):
        name = name.replace("-", "_")
        if name in seen or name not in paths:
            return
        seen.add(name)
        deps = run(["modinfo", "-F", "depends", paths[name]]).strip()
        for d in filter(None, deps.split(",")):
            add(d)
        order.append(name)

    for r in ROOTS:
        add(r)
    if "nvme_tcp" not in seen or "virtio_net" not in seen:
        skip("kernel package lacks nvme-tcp or virtio-net modules")
    return base, paths, order


def copy_fio(root):
    """This machine's fio, its shared libraries (ldd's list, into
    /lib/fio, which the guest names in LD_LIBRARY_PATH) and the loader at
    the path the binary names: fio's own verify runs in the guest."""
    fio = shutil.which("fio")
    out = run(["ldd", fio])
    os.makedirs(os.path.join(root, "lib", "fio"), exist_ok=True)
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m:
            shutil.copy(os.path.realpath(m.group(2)),
                        os.path.join(root, "lib", "fio", m.group(1)))
            continue
        m = re.match(r"\s*(/\S+ld-linux\S*)", line)
        if m:  # the loader, where the binary's PT_INTERP names it
            dst = root + m.group(1)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(os.path.realpath(m.group(1)), dst)
    shutil.copy(fio, os.path.join(root, "bin", "fio"))


def build_initramfs(work, kroot, abi, guest_script, tools_dir):
    base, paths, order = module_closure(kroot, abi)
    root = os.path.join(work, "root")
    for d in ["bin", "proc", "sys", "dev", "tmp", "lib/modules/" + abi]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for name in order:
        rel = os.path.relpath(paths[name], base)
        dst = os.path.join(root, "lib/modules", abi, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(paths[name], dst)
    run(["depmod", "-b", root, abi])
    shutil.copy(shutil.which("busybox") or "/bin/busybox",
                os.path.join(root, "bin", "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(root, "bin", a))
    shutil.copy(os.path.join(tools_dir, "guest-discover"),
                os.path.join(root, "bin", "guest-discover"))
    copy_fio(root)
    mods = " ".join(order)
    init = """#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
for m in %s; do modprobe $m 2>/dev/null; done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
echo GUEST-UP
. /test.sh
echo GUEST-DONE
poweroff -f
""" % mods
    open(os.path.join(root, "init"), "w").write(init)
    open(os.path.join(root, "test.sh"), "w").write(guest_script)
    os.chmod(os.path.join(root, "init"), 0o755)
    cpio = os.path.join(work, "initramfs.cpio")
    files = run(["sh", "-c", "cd %s && find . | sort" % root])
    with open(cpio, "wb") as f:
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root,
                       input=files.encode(), stdout=f, check=True)
    return cpio, len(order)


GUEST = r"""
H=10.0.2.2
P=@PORT@
SUB=@SUB@
HN=@HOSTNQN@
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }

# connect OPTIONS -> sets INST (controller instance) or returns 1
connect() {
    exec 3<>/dev/nvme-fabrics || return 1
    if ! printf '%s' "$1" >&3 2>/tmp/cerr; then exec 3>&-; return 1; fi
    read -r reply <&3
    exec 3>&-
    INST=$(echo "$reply" | sed -n 's/^instance=\([0-9]*\).*/\1/p')
    [ -n "$INST" ]
}
disconnect() { echo 1 > /sys/class/nvme/nvme$1/delete_controller; }
waitdev() { # waitdev INST NSID -> DEV
    i=0
    while [ $i -lt 100 ]; do
        for d in /sys/block/nvme*n$2; do
            b=$(basename $d)
            case "$b" in nvme*c*) continue;; esac   # hidden multipath paths
            [ -e "$d" ] || continue
            DEV=/dev/$b
            [ -b "$DEV" ] && return 0
        done
        sleep 0.1; i=$((i+1))
    done
    return 1
}

dd if=/dev/urandom of=/tmp/pat bs=64k count=64 2>/dev/null   # 4 MiB

# fio_verify TAG DEV: fio writes with a CRC32C in every block, reads back
# and checks: 4 KiB random writes at depth 16 and 128 KiB sequential at
# depth 4, two jobs each (on both CPUs, so both I/O queues), from 2 MiB on
fio_verify() {
    f="--filename=$2 --ioengine=libaio --direct=1 --thread --numjobs=2 --verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting"
    if LD_LIBRARY_PATH=/lib/fio fio --name=$1-4k $f --rw=randwrite --bs=4k --iodepth=16 --offset=2M --size=3M --offset_increment=3M > /tmp/fio 2>&1 &&
       LD_LIBRARY_PATH=/lib/fio fio --name=$1-128k $f --rw=write --bs=128k --iodepth=4 --offset=8M --size=4M --offset_increment=4M >> /tmp/fio 2>&1; then
        pass fio-verify-$1 "$(grep -c "err= 0" /tmp/fio) runs of 2 jobs, no error"
    else
        fail fio-verify-$1 "$(tail -5 /tmp/fio | tr '\n' ' ')"
    fi
}

# 1. discovery
if connect "transport=tcp,traddr=$H,trsvcid=$P,nqn=nqn.2014-08.org.nvmexpress.discovery,hostnqn=$HN"; then
    guest-discover /dev/nvme$INST > /tmp/disc 2>&1
    cat /tmp/disc
    if grep -q "subnqn=$SUB" /tmp/disc && grep -q "trsvcid=$P" /tmp/disc; then
        pass discovery
    else
        fail discovery "log lacks $SUB"
    fi
    disconnect $INST
else
    fail discovery "connect to the discovery controller: $(cat /tmp/cerr)"
fi

# 2. a host the subsystem does not allow
if connect "transport=tcp,traddr=$H,trsvcid=$P,nqn=$SUB,hostnqn=@BADHOST@"; then
    fail denied-host "connected"
    disconnect $INST
else
    pass denied-host
fi

rw_test() { # rw_test TAG DEV OFFSET_MIB
    tag=$1; dev=$2; off=$3
    # QD1: 64 KiB writes (in-capsule data, no R2T), 4 KiB reads (C2H)
    dd if=/tmp/pat of=$dev bs=64k count=64 seek=$((off*16)) oflag=direct conv=fsync 2>/tmp/e || { fail $tag-qd1-write "$(cat /tmp/e)"; return; }
    dd if=$dev of=/tmp/rd bs=4k count=1024 skip=$((off*256)) iflag=direct 2>/tmp/e || { fail $tag-qd1-read "$(cat /tmp/e)"; return; }
    if cmp -s /tmp/pat /tmp/rd; then pass $tag-qd1; else fail $tag-qd1 "data differs"; fi
    # QD32: 32 writers of 4 KiB blocks (in-capsule data) at once, 32 readers
    base=$(( (off+4)*256 ))
    for j in $(seq 0 31); do
        dd if=/tmp/pat of=$dev bs=4k count=32 skip=$((j*32)) seek=$((base+j*32)) oflag=direct 2>/dev/null &
    done
    wait
    sync
    for j in $(seq 0 31); do
        dd if=$dev of=/tmp/r$j bs=4k count=32 skip=$((base+j*32)) iflag=direct 2>/dev/null &
    done
    wait
    ok=1
    for j in $(seq 0 31); do
        dd if=/tmp/pat of=/tmp/x bs=4k count=32 skip=$((j*32)) 2>/dev/null
        cmp -s /tmp/x /tmp/r$j || ok=0
    done
    if [ $ok = 1 ]; then pass $tag-qd32; else fail $tag-qd32 "data differs"; fi
}

# 3. the NVM subsystem, without and with digests, 2 I/O queues, depth 32
n=0
for dg in "" ",hdr_digest,data_digest"; do
    tag=plain; [ -n "$dg" ] && tag=digest
    if ! connect "transport=tcp,traddr=$H,trsvcid=$P,nqn=$SUB,hostnqn=$HN,nr_io_queues=2,queue_size=32$dg"; then
        fail $tag-connect "$(cat /tmp/cerr)"; continue
    fi
    if ! waitdev $INST 1; then fail $tag-namespace "no block device: $(ls /sys/block | tr '\n' ' ')"; dmesg | grep -i nvme | tail -20; disconnect $INST; continue; fi
    # the I/O queues are those of the controller's path (nvmeXcYnZ)
    nq=$(ls -d /sys/block/nvme*c${INST}n1/mq/* 2>/dev/null | wc -l)
    if [ "$nq" = 2 ]; then pass $tag-ioqueues=2; else fail $tag-ioqueues "$nq"; fi
    rw_test $tag $DEV $((n*16))
    n=$((n+1))
    # 4. integrity, once: namespace 2 checks a CRC32C per block
    if [ $tag = plain ] && waitdev $INST 2; then
        d2=$DEV
        dd if=/tmp/pat of=$d2 bs=4k count=16 seek=100 oflag=direct conv=fsync 2>/dev/null
        echo "FLIP lba=105"
        read -r go
        if dd if=$d2 of=/tmp/b bs=4k count=1 skip=105 iflag=direct 2>/tmp/e; then
            fail integrity "read of a corrupted block succeeded"
        else
            pass integrity-read-fails "$(cat /tmp/e | head -1)"
        fi
        dd if=$d2 of=/tmp/b bs=4k count=1 skip=104 iflag=direct 2>/dev/null
        dd if=/tmp/pat of=/tmp/x bs=4k count=1 skip=4 2>/dev/null
        if cmp -s /tmp/b /tmp/x; then pass integrity-neighbour-ok; else fail integrity-neighbour; fi
    fi
    # 5. encryption at rest, once: namespace 3 (AES-256-XTS); the host
    # looks for the marker in the backing files afterwards
    if [ $tag = plain ] && waitdev $INST 3; then
        d3=$DEV
        yes offcore-plaintext-marker | head -c 1048576 > /tmp/mark
        dd if=/tmp/mark of=$d3 bs=64k count=16 oflag=direct conv=fsync 2>/dev/null
        dd if=/tmp/mark of=/dev/nvme${INST}n1 bs=64k count=16 seek=1000 oflag=direct conv=fsync 2>/dev/null
        dd if=$d3 of=/tmp/m2 bs=64k count=16 iflag=direct 2>/dev/null
        if cmp -s /tmp/mark /tmp/m2; then pass encrypt-roundtrip; else fail encrypt-roundtrip; fi
        # 6. fio's own verify over both checked namespaces (past block
        # 105 and the marker): 2 jobs at once on the 2 I/O queues
        fio_verify integrity $d2 && fio_verify encrypt $d3
    fi
    disconnect $INST
done

# 7. the target killed (SIGKILL) in the middle of a large write and
# restarted: the host reconnects, retries, and every byte reads back
if connect "transport=tcp,traddr=$H,trsvcid=$P,nqn=$SUB,hostnqn=$HN,nr_io_queues=2,queue_size=32,reconnect_delay=1,ctrl_loss_tmo=60" && waitdev $INST 2; then
    d2=$DEV
    dd if=/dev/urandom of=/tmp/big bs=64k count=192 2>/dev/null    # 12 MiB
    dd if=/tmp/big of=$d2 bs=16k count=768 oflag=direct 2>/tmp/e &
    ddpid=$!
    sleep 0.05   # some writes done, most to come (768 round trips)
    if kill -0 $ddpid 2>/dev/null; then pass kill-during-write; else fail kill-during-write "dd already done"; fi
    echo "KILL-TARGET"
    read -r go
    if wait $ddpid; then pass kill-write-completed; else fail kill-write-completed "$(cat /tmp/e)"; fi
    dd if=$d2 of=/tmp/rb bs=64k count=192 iflag=direct 2>/tmp/e
    if cmp -s /tmp/big /tmp/rb; then pass kill-readback; else fail kill-readback "data differs: $(cat /tmp/e)"; fi
    disconnect $INST
else
    fail kill-connect "$(cat /tmp/cerr)"
fi
"""

EXPECT = ["discovery", "denied-host", "plain-ioqueues=2", "plain-qd1",
          "plain-qd32", "integrity-read-fails", "integrity-neighbour-ok",
          "encrypt-roundtrip", "digest-ioqueues=2", "digest-qd1", "digest-qd32",
          "kill-during-write", "kill-write-completed", "kill-readback",
          "fio-verify-integrity", "fio-verify-encrypt"]


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=5) as r:
        return r.read().decode()


def metric(text, name, **labels):
    total = None
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        if all('%s="%s"' % kv in line for kv in labels.items()):
            total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    t0 = time.time()
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("qemu-system-x86_64 is not installed")
    for tool in ["busybox", "cpio", "depmod", "modinfo", "fio", "ldd"]:
        if not shutil.which(tool) and not os.path.exists("/bin/" + tool):
            skip(tool + " is not installed")
    cache = os.path.join(build, "nvmf-guest")
    kroot, abi = fetch_kernel(cache)
    t_kernel = time.time() - t0

    work = tempfile.mkdtemp(prefix="oc-nvmf-guest.")
    proc = qemu_p = None
    try:
        try:
            run(["cc", "-static", "-O2", "-o", os.path.join(work, "guest-discover"),
                 os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "guest-discover.c")])
        except subprocess.CalledProcessError as e:
            skip("cannot build a static guest tool (static libc missing?): "
                 + e.output[-300:])
        port = nt.free_port(24000 + os.getpid() % 300, 500)
        mport = nt.free_port(24500 + os.getpid() % 300, 500)
        img1 = os.path.join(work, "ns1.img")
        img2 = os.path.join(work, "ns2.img")
        img3 = os.path.join(work, "ns3.img")
        key = os.path.join(work, "ns3.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(64))
        os.close(fd)
        conf = os.path.join(work, "nvmf.conf")
        open(conf, "w").write(
            "listen 127.0.0.1:%d\nadvertise 10.0.2.2\nmetrics 127.0.0.1:%d\n"
            "subsystem %s\n  allow-host %s\n"
            "  namespace 1 %s size=64M\n"
            "  namespace 2 %s size=16M integrity=on\n"
            "  namespace 3 %s size=16M integrity=on key=%s\n"
            % (port, mport, SUBNQN, HOSTNQN, img1, img2, img3, key))
        script = (GUEST.replace("@PORT@", str(port)).replace("@SUB@", SUBNQN)
                  .replace("@HOSTNQN@", HOSTNQN).replace("@BADHOST@", BADHOST))
        cpio, nmods = build_initramfs(work, kroot, abi, script, work)
        tlog = open(os.path.join(work, "target.log"), "a")

        def start_target():
            return nt.start(build, conf, tlog, timeout=15)

        proc = start_target()
        # capture the session: tshark must decode it as NVMe/TCP, unmalformed
        pcap = os.path.join(work, "session.pcap")
        cap = None
        if shutil.which("tcpdump") and shutil.which("tshark"):
            cap = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-s", "0", "-w",
                                    pcap, "tcp port %d" % port],
                                   stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        t_boot = time.time()
        qemu_p = subprocess.Popen(
            [qemu, "-accel", "tcg", "-cpu", "max", "-m", "512", "-smp", "2",
             "-nodefaults", "-display", "none", "-serial", "stdio",
             "-monitor", "none", "-no-reboot",
             "-kernel", os.path.join(kroot, "vmlinux"), "-initrd", cpio,
             "-append", "console=ttyS0 quiet panic=-1 rdinit=/init",
             "-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        results, lines, buf = {}, [], b""
        metrics, killed = None, False
        deadline = time.time() + TIMEOUT
        done = False
        while not done and time.time() < deadline:
            r, _, _ = select.select([qemu_p.stdout], [], [], 1.0)
            if not r:
                if qemu_p.poll() is not None:
                    break
                continue
            chunk = os.read(qemu_p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode("utf-8", "replace").rstrip("\r")
                lines.append(line)
                print("guest: " + line, flush=True)
                m = re.match(r"^(PASS|FAIL) (\S+)", line)
                if m:
                    results[m.group(2)] = m.group(1)
                m = re.match(r"^FLIP lba=(\d+)", line)
                if m:
                    lba = int(m.group(1))
                    with open(img2, "r+b") as f:  # corrupt 3 bytes of it
                        f.seek(lba * 4096 + 100)
                        old = f.read(3)
                        f.seek(lba * 4096 + 100)
                        f.write(bytes(b ^ 0xff for b in old))
                        f.flush()
                        os.fsync(f.fileno())
                    qemu_p.stdin.write(b"go\n")
                    qemu_p.stdin.flush()
                if line.startswith("KILL-TARGET"):
                    # the capture ends here: a connection cut by SIGKILL
                    # ends mid-PDU, which is no fault of the protocol
                    if cap:
                        cap.send_signal(signal.SIGINT)
                        cap.wait(timeout=10)
                    metrics = scrape(mport)
                    proc.kill()
                    proc.wait()
                    nt.port_free(port)  # a killed target's ring may hold it
                    proc = start_target()
                    killed = True
                    qemu_p.stdin.write(b"go\n")
                    qemu_p.stdin.flush()
                if line.startswith("GUEST-DONE"):
                    done = True
        t_guest = time.time() - t_boot
        decoded = malformed = r2ts = None
        if cap:
            if cap.poll() is None:
                time.sleep(0.3)
                cap.send_signal(signal.SIGINT)
                cap.wait(timeout=10)
            tsh = ["tshark", "-r", pcap, "-d", "tcp.port==%d,nvme-tcp" % port]
            def tshark(*args):  # stdout only: tshark warns on stderr as root
                return subprocess.run(tsh + list(args), check=True, text=True,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL).stdout
            decoded = len(tshark("-Y", "nvme-tcp").splitlines())
            malformed = len(tshark("-Y", "_ws.malformed || _ws.expert.severity "
                                   ">= error").splitlines())
            # the host sends every write (at most 128 KiB: MDTS) in its
            # capsule, as IOCCSZ allows: the target never sends an R2T
            r2ts = len(tshark("-Y", "nvme-tcp.type == 9").splitlines())
            print("guest-test: tshark: %d NVMe/TCP packets decoded, %d malformed "
                  "or in error, %d R2T" % (decoded, malformed, r2ts))
            if malformed:
                print("\n".join(tshark("-Y", "_ws.malformed || "
                                        "_ws.expert.severity >= error",
                                        "-V").splitlines()[-80:]))
        if metrics is None:  # counters of the first target, before any kill
            metrics = scrape(mport)
        ierr = metric(metrics, "offcore_nvmf_ns_integrity_errors_total",
                      nsid="2")
        denied = metric(metrics, "offcore_nvmf_rejects_total",
                        reason="host_denied")
        print("guest-test: target: %s writes' data received in place, %s "
              "commands failed" % (metric(metrics, "offcore_nvmf_h2c_direct_total"),
                                   metric(metrics, "offcore_nvmf_command_errors_total")))
        reconnects = metric(scrape(mport), "offcore_nvmf_connects_total")
        print("guest-test: the restarted target accepted %s Connects (the "
              "host's reconnect: admin + 2 I/O queues)" % reconnects)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=20)
        tlog.close()
        tl = open(tlog.name).read()
        ok = True
        for e in EXPECT:
            st = results.get(e)
            if st != "PASS":
                print("FAIL: guest check %s: %s" % (e, st or "never reported"))
                ok = False
        for k, v in results.items():
            if v == "FAIL":
                print("FAIL: guest reported FAIL %s" % k)
                ok = False
        if not ierr or ierr < 1:
            print("FAIL: target counted no integrity error (%s)" % ierr)
            ok = False
        if "block 105 fails its checksum" not in tl:
            print("FAIL: target log does not name block 105")
            ok = False
        if killed and (not reconnects or reconnects < 3):
            print("FAIL: the host did not reconnect to the restarted target")
            ok = False
        if not killed:
            print("FAIL: the guest never asked for the kill")
            ok = False
        if not denied or denied < 1:
            print("FAIL: target counted no denied host")
            ok = False
        if cap and r2ts:
            print("FAIL: tshark: %s R2Ts: the host did not send its writes "
                  "in the capsule" % r2ts)
            ok = False
        if cap and (not decoded or malformed):
            print("FAIL: tshark: %s decoded, %s malformed" % (decoded, malformed))
            ok = False
        marker = b"offcore-plaintext-marker\n" * 8
        in1 = marker in open(img1, "rb").read()
        in3 = marker in open(img3, "rb").read()
        if not in1 or in3:
            print("FAIL: plaintext marker in the plain file: %s (want yes), in "
                  "the encrypted one: %s (want no)" % (in1, in3))
            ok = False
        if rc != 0:
            print("FAIL: target exited %d on SIGTERM" % rc)
            ok = False
        if not done:
            print("FAIL: guest did not finish within %d s" % TIMEOUT)
            ok = False
        if not ok:
            print("---- target log\n" + tl[-6000:])
        print("guest-test: kernel %s (%d modules), kernel ready in %.1f s, "
              "guest run %.1f s, total %.1f s"
              % (abi, nmods, t_kernel, t_guest, time.time() - t0))
        print("guest-test: " + ("PASS" if ok else "FAIL"))
        return 0 if ok else 1
    finally:
        for p in (qemu_p, proc, locals().get("cap")):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
