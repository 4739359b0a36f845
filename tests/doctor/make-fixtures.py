#!/usr/bin/env python3
"""Write the recorded system trees of tests/doctor/fixtures/.

Each tree is the part of /sys, /proc and /dev that `offcore doctor --root`
reads, laid out as the kernel documents it:
Documentation/ABI/stable/sysfs-class-infiniband (ports/N/{state,
phys_state,link_layer,rate,gids/I,gid_attrs/{types,ndevs}/I}),
Documentation/ABI/testing/sysfs-bus-pci (vendor, class, numa_node),
/proc/driver/nvidia/{version,gpus/ADDR/information} as the NVIDIA driver
writes them, /proc/self/{limits,status}, /proc/mounts, /proc/meminfo.
Values are those of a DGX-like host: two sockets, a ConnectX-7 (RoCE) and
a BlueField-3 (InfiniBand), two H100s, each behind a PCIe switch with a
NIC.  The variants change one thing each.  The trees are committed; run
this again only to change them (it rewrites fixtures/).
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")

LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max file size             unlimited            unlimited            bytes
Max data size             unlimited            unlimited            bytes
Max stack size            8388608              unlimited            bytes
Max core file size        0                    unlimited            bytes
Max resident set          unlimited            unlimited            bytes
Max processes             2063353              2063353              processes
Max open files            1048576              1048576              files
Max locked memory         {memlock:<20} {memlock:<20} bytes
Max address space         unlimited            unlimited            bytes
Max file locks            unlimited            unlimited            locks
Max pending signals       2063353              2063353              signals
Max msgqueue size         819200               819200               bytes
Max nice priority         0                    0
Max realtime priority     0                    0
Max realtime timeout      unlimited            unlimited            us
"""

STATUS = """Name:\toffcore
Umask:\t0022
State:\tR (running)
Pid:\t4242
CapInh:\t0000000000000000
CapPrm:\t{cap}
CapEff:\t{cap}
CapBnd:\t{cap}
CapAmb:\t0000000000000000
"""

MEMINFO = """MemTotal:       2113570816 kB
MemFree:        2001234567 kB
HugePages_Total:    {huge}
HugePages_Free:     {huge}
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       2048 kB
"""

MOUNTS_BASE = """sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
"""
BPF_MOUNT = "bpf /sys/fs/bpf bpf rw,nosuid,nodev,noexec,relatime,mode=700 0 0\n"

DRIVER = {
    "proprietary": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
                   "535.129.03  Thu Oct 19 18:56:32 UTC 2023\n"
                   "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
    "open": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
            "550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  "
            "Tue Mar  5 22:15:33 UTC 2024\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
}

MODULES_PEERMEM = ("nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n")
MODULES = ("nvidia_uvm 1523712 0 - Live 0x0000000000000000 (OE)\n"
           "nvidia 56389632 2 nvidia_uvm, Live 0x0000000000000000 (OE)\n"
           "mlx5_ib 458752 0 - Live 0x0000000000000000\n"
           "ib_uverbs 184320 2 mlx5_ib, Live 0x0000000000000000\n"
           "mlx5_core 2207744 1 mlx5_ib, Live 0x0000000000000000\n")

GPU_INFO = ("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\n"
            "GPU UUID: \t GPU-00000000-0000-0000-0000-000000000000\n"
            "Video BIOS: \t 96.00.74.00.01\nBus Type: \t PCIe\n"
            "DMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n"
            "Bus Location: \t {addr}\nDevice Minor: \t {minor}\n"
            "GPU Excluded:\t No\n")


def w(root, path, text, mode=0o644):
    p = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)


def ln(root, path, target):
    p = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    os.symlink(target, p)


def rel(frm, to):
    return os.path.relpath(to, os.path.dirname(frm))


def pci_dev(root, devpath, vendor, cls, numa):
    addr = os.path.basename(devpath)
    w(root, devpath + "/vendor", vendor + "\n")
    w(root, devpath + "/class", cls + "\n")
    w(root, devpath + "/numa_node", "%d\n" % numa)
    ln(root, "/sys/bus/pci/devices/" + addr,
       rel("/sys/bus/pci/devices/" + addr, devpath))


def gid_v4(ip):
    a, b, c, d = (int(x) for x in ip.split("."))
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)


def rdma_dev(root, devpath, name, hca, board, ports):
    """ports: list of dicts(state, phys, ll, rate, netdev, mtu, gids)."""
    ib = devpath + "/infiniband/" + name
    ln(root, "/sys/class/infiniband/" + name,
       rel("/sys/class/infiniband/" + name, ib))
    w(root, ib + "/hca_type", hca + "\n")
    w(root, ib + "/fw_ver", "28.39.1002\n")
    w(root, ib + "/board_id", board + "\n")
    w(root, ib + "/node_type", "1: CA\n")
    ln(root, ib + "/device", rel(ib + "/device", devpath))
    for i, p in enumerate(ports, start=1):
        pp = "%s/ports/%d/" % (ib, i)
        w(root, pp + "state", p["state"] + "\n")
        w(root, pp + "phys_state", p["phys"] + "\n")
        w(root, pp + "link_layer", p["ll"] + "\n")
        w(root, pp + "rate", p["rate"] + "\n")
        w(root, pp + "lid", "0x0\n" if p["ll"] == "Ethernet" else "0x12\n")
        gids = p["gids"] + [("", "0000:0000:0000:0000:0000:0000:0000:0000",
                             "")] * 4
        for g, (typ, gid, nd) in enumerate(gids):
            w(root, pp + "gids/%d" % g, gid + "\n")
            # unused entries: the kernel answers EINVAL; the fixture an
            # empty file (doctor skips both)
            w(root, pp + "gid_attrs/types/%d" % g, typ + "\n" if typ else "")
            w(root, pp + "gid_attrs/ndevs/%d" % g, nd + "\n" if nd else "")
        if p.get("netdev"):
            w(root, devpath + "/net/%s/mtu" % p["netdev"], "%d\n" % p["mtu"])
            w(root, "/sys/class/net/%s/mtu" % p["netdev"], "%d\n" % p["mtu"])


def roce_gids(ip, netdev, v2=True):
    ll = "fe80:0000:0000:0000:0a5c:72ff:fe00:0001"
    g = [("IB/RoCE v1", ll, netdev)]
    if v2:
        g.append(("RoCE v2", ll, netdev))
    g.append(("IB/RoCE v1", gid_v4(ip), netdev))
    if v2:
        g.append(("RoCE v2", gid_v4(ip), netdev))
    return g


def host(root, *, peermem=True, driver="proprietary", port0=None,
         port1=None, v2=True, devib=True, memlock="unlimited",
         cap="000001ffffffffff", bpffs=True, huge=1024, far_gpu=False,
         rdma=True, gpus=True, driver_loaded=True, kernel="6.1.0-18-amd64"):
    S0 = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    S1 = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0"
    if gpus:
        g0 = S0 + "/0000:02:00.0/0000:03:00.0"
        # far_gpu: the second GPU sits on socket 1 with no NIC there
        g1 = (S1 + "/0000:82:00.0/0000:83:00.0" if not far_gpu else
              "/sys/devices/pci0000:c0/0000:c0:01.0/0000:c1:00.0")
        for i, (g, numa) in enumerate(((g0, 0), (g1, 1))):
            pci_dev(root, g, "0x10de", "0x030200", numa)
            a = os.path.basename(g)
            if driver_loaded:
                w(root, "/proc/driver/nvidia/gpus/%s/information" % a,
                  GPU_INFO.format(addr=a, minor=i))
        if driver_loaded:
            w(root, "/proc/driver/nvidia/version", DRIVER[driver])
    if rdma:
        n0 = S0 + "/0000:02:01.0/0000:04:00.0"
        pci_dev(root, n0, "0x15b3", "0x020000", 0)
        rdma_dev(root, n0, "mlx5_0", "MT4129", "MT_0000000838", [dict(dict(
            state="4: ACTIVE", phys="5: LinkUp", ll="Ethernet",
            rate="200 Gb/sec (4X HDR)", netdev="eth2", mtu=9000,
            gids=roce_gids("10.0.0.11", "eth2", v2)), **(port0 or {}))])
        if not far_gpu:
            n1 = S1 + "/0000:82:01.0/0000:85:00.0"
            pci_dev(root, n1, "0x15b3", "0x020700", 1)
            rdma_dev(root, n1, "mlx5_1", "MT41692", "MT_0000000884", [dict(
                dict(state="4: ACTIVE", phys="5: LinkUp", ll="InfiniBand",
                     rate="400 Gb/sec (4X NDR)",
                     gids=[("IB/RoCE v1",
                            "fe80:0000:0000:0000:b83f:d203:00a1:b2c4", "")]),
                **(port1 or {}))])
        if devib == "null":
            # character devices this process can open: the open path
            for n in ("uverbs0", "uverbs1", "rdma_cm"):
                ln(root, "/dev/infiniband/" + n, "/dev/null")
        elif devib == "dangling":
            # nodes that cannot be opened (their device is gone)
            for n in ("uverbs0", "uverbs1"):
                ln(root, "/dev/infiniband/" + n, "/nonexistent/" + n)
        elif devib == "one":
            # one node for two devices (a container given only the first)
            w(root, "/dev/infiniband/uverbs0", "", 0o666)
        elif devib:
            for n in ("uverbs0", "uverbs1", "rdma_cm"):
                w(root, "/dev/infiniband/" + n, "", 0o666)
    mods = (MODULES_PEERMEM if peermem else "") + MODULES
    w(root, "/proc/modules", mods)
    w(root, "/proc/self/limits", LIMITS.format(memlock=memlock))
    w(root, "/proc/self/status", STATUS.format(cap=cap))
    w(root, "/proc/mounts", MOUNTS_BASE + (BPF_MOUNT if bpffs else ""))
    w(root, "/proc/meminfo", MEMINFO.format(huge=huge))
    w(root, "/proc/sys/kernel/osrelease", kernel + "\n")


FIXTURES = {
    # everything in place: every check ok
    "dgx-ok": {},
    # nvidia_peermem not loaded, proprietary driver: no GPUDirect RDMA
    "dgx-no-peermem": dict(peermem=False),
    # no nvidia_peermem, but the open kernel module on 6.1: dma-buf
    # (its /dev/infiniband nodes are links to /dev/null: really opened)
    "dgx-dmabuf": dict(peermem=False, driver="open", devib="null"),
    # /dev/infiniband nodes that cannot be opened
    "devib-unopenable": dict(devib="dangling"),
    # BlueField-3 host whose ports are not up: one disabled, one INIT
    # (no subnet manager)
    # (and no RoCE v2 GID on its down RoCE port)
    "bf3-port-down": dict(
        v2=False, port0=dict(state="1: DOWN", phys="3: Disabled"),
        port1=dict(state="2: INIT", phys="5: LinkUp")),
    # RoCE port whose GID table has only RoCE v1 entries; the IB port down;
    # one uverbs node for the two devices
    "roce-no-v2": dict(v2=False, devib="one",
                       port1=dict(state="1: DOWN", phys="2: Polling")),
    # a container: sysfs shows the NICs, /dev/infiniband not passed in,
    # docker's default memlock (64 KiB) and capabilities, no bpffs
    "container-no-devib": dict(devib=False, memlock="65536",
                               cap="00000000a80425fb", bpffs=False, huge=0),
    # the second GPU on a socket without a NIC; a finite 4 GiB memlock
    "dgx-far-nic": dict(far_gpu=True, memlock="4294967296"),
    # GPUs on the bus, no NVIDIA driver loaded; a kernel too old for AF_XDP
    "gpu-no-driver": dict(driver_loaded=False, kernel="4.15.0-213-generic"),
    # neither RDMA nor GPU (a plain VM, like CI's), no bpffs
    "plain-vm": dict(rdma=False, gpus=False, huge=0, bpffs=False),
}


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for name, kw in FIXTURES.items():
        host(os.path.join(OUT, name), **kw)
    print("wrote %d trees under %s" % (len(FIXTURES), OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
