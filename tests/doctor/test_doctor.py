#!/usr/bin/env python3
"""`offcore doctor` against the recorded trees of fixtures/ (every verdict
of every check that reads files), and live on this machine.

usage: test_doctor.py OFFCORE_BINARY fixtures|here
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures")
KEYS = {"id", "title", "verdict", "summary", "evidence", "fix"}
IDS = ["rdma_devices", "rdma_ports", "roce_gid", "dev_infiniband", "memlock",
       "ucx_transports", "nvidia_driver", "gpus", "gpudirect",
       "pcie_topology", "nccl", "gpu_memory", "dp_ready", "offcored",
       "offcore_dp"]

# fixture -> {check: (verdict, text the summary or evidence must hold)}
EXPECT = {
    "dgx-ok": {
        "rdma_devices": ("ok", "MT4129 (ConnectX-7)"),
        "rdma_ports": ("ok", "2 of 2 ports active"),
        "roce_gid": ("ok", "mlx5_0/1: 3 (IPv4)"),
        "dev_infiniband": ("ok", "2 uverbs nodes usable"),
        "memlock": ("ok", "unlimited"),
        "nvidia_driver": ("ok", "535.129.03"),
        "gpus": ("ok", "NVIDIA H100 80GB HBM3"),
        "gpudirect": ("ok", "nvidia_peermem loaded"),
        "pcie_topology": ("ok", "GPU 0000:83:00.0 -> mlx5_1: PIX (one PCIe "
                          "switch; common upstream: 0000:81:00.0)"),
        "dp_ready": ("ok", "DPDK has hugepages"),
        "ucx_transports": ("n/a", "not run against --root"),
        "nccl": ("n/a", "not run against --root"),
        "gpu_memory": ("n/a", "not run against --root"),
        "offcored": ("n/a", "not run against --root"),
    },
    "dgx-no-peermem": {"gpudirect": ("fail", "no nvidia_peermem")},
    "dgx-dmabuf": {"gpudirect": ("warn", "dma-buf"),
                   "nvidia_driver": ("ok", "Open Kernel Module"),
                   "dev_infiniband": ("ok", "uverbs1: opened read/write")},
    "devib-unopenable": {"dev_infiniband": (
        "fail", "no uverbs device can be opened read/write")},
    "bf3-port-down": {
        "rdma_devices": ("ok", "MT41692 (BlueField-3)"),
        "rdma_ports": ("fail", "mlx5_1/1 (2: INIT)"),
        "roce_gid": ("warn", "no RoCE port is active")},
    "roce-no-v2": {"roce_gid": ("fail", "without a RoCE v2 GID"),
                   "rdma_ports": ("warn", "1 of 2 ports active"),
                   "dev_infiniband": ("warn", "1 uverbs node usable for 2")},
    "container-no-devib": {
        "dev_infiniband": ("fail", "dev/infiniband is missing"),
        "memlock": ("fail", "64 KiB"),
        "dp_ready": ("warn", "missing capabilities")},
    "dgx-far-nic": {"pcie_topology": ("warn", "-> mlx5_0: SYS"),
                    "memlock": ("warn", "4096 MiB")},
    "gpu-no-driver": {
        "nvidia_driver": ("fail", "2 NVIDIA GPUs on the PCI bus but no driver"),
        "gpus": ("ok", "model: driver not loaded"),
        "dp_ready": ("warn", "kernel too old for AF_XDP")},
    "plain-vm": {
        "rdma_devices": ("warn", "no RDMA device"),
        "rdma_ports": ("n/a", ""), "roce_gid": ("n/a", ""),
        "dev_infiniband": ("n/a", ""), "nvidia_driver": ("n/a", ""),
        "gpus": ("n/a", "no GPU"), "gpudirect": ("n/a", "no GPU"),
        "pcie_topology": ("n/a", ""),
        "dp_ready": ("warn", "without bpffs")},
}
# fixture -> {requirement: reason substring, or None when met}
REQUIRE = {
    "dgx-ok": {"rdma": None, "gpu": None, "gpudirect": None, "dp": None},
    "dgx-no-peermem": {"rdma": None, "gpudirect": "no nvidia_peermem"},
    "dgx-dmabuf": {"gpudirect": None},
    "devib-unopenable": {"rdma": "/dev/infiniband access"},
    "bf3-port-down": {"rdma": "no active port",
                      "gpudirect": "no active port"},
    "roce-no-v2": {"rdma": "RoCE v2"},
    "container-no-devib": {"rdma": "/dev/infiniband", "dp": "capabilities"},
    "dgx-far-nic": {"gpudirect": None},
    "gpu-no-driver": {"gpu": "NVIDIA driver", "gpudirect": "NVIDIA driver"},
    "plain-vm": {"rdma": "no RDMA device", "gpu": "no NVIDIA driver"},
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(binary, *args):
    p = subprocess.run([binary, "doctor", *args], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def load(out, what):
    try:
        doc = json.loads(out)
    except ValueError as e:
        check(False, "%s: --json is not JSON: %s" % (what, e))
        return None
    check(set(doc) == {"version", "root", "checks", "requirements", "ok"},
          "%s: top-level keys %s" % (what, sorted(doc)))
    check([c["id"] for c in doc["checks"]] == IDS,
          "%s: check ids/order %s" % (what, [c["id"] for c in doc["checks"]]))
    for c in doc["checks"]:
        check(set(c) == KEYS, "%s: keys of %s" % (what, c["id"]))
        check(c["verdict"] in ("ok", "warn", "fail", "n/a"),
              "%s: verdict %s" % (what, c["verdict"]))
    return doc


def fixtures(binary):
    for name in sorted(os.listdir(FIX)):
        check(name in EXPECT, "fixture %s has expectations" % name)
    for name, exp in EXPECT.items():
        root = os.path.join(FIX, name)
        reqs = REQUIRE[name]
        rc, out, err = run(binary, "--root", root, "--json", "--require",
                           ",".join(reqs))
        doc = load(out, name)
        if doc is None:
            continue
        by = {c["id"]: c for c in doc["checks"]}
        for cid, (verdict, text) in exp.items():
            c = by[cid]
            blob = c["summary"] + "\n" + "\n".join(c["evidence"])
            check(c["verdict"] == verdict,
                  "%s %s: verdict %s, want %s (%s)" % (name, cid, c["verdict"],
                                                       verdict, c["summary"]))
            check(text in blob, "%s %s: %r not in %r" % (name, cid, text, blob))
            if verdict in ("warn", "fail"):
                check(c["fix"] != "", "%s %s: a fix is given" % (name, cid))
        got = {r["name"]: r for r in doc["requirements"]}
        any_unmet = False
        for req, reason in reqs.items():
            r = got.get(req)
            check(r is not None, "%s: requirement %s reported" % (name, req))
            if r is None:
                continue
            if reason is None:
                check(r["met"], "%s: %s met (%s)" % (name, req, r["reason"]))
            else:
                any_unmet = True
                check(not r["met"] and reason in r["reason"],
                      "%s: %s unmet with %r (%s)" % (name, req, reason,
                                                     r["reason"]))
                check("requirement '%s' not met" % req in err,
                      "%s: stderr names %s" % (name, req))
        any_fail = any(c["verdict"] == "fail" for c in doc["checks"])
        want_rc = 1 if (any_unmet or any_fail) else 0
        check(rc == want_rc, "%s: exit %d, want %d" % (name, rc, want_rc))
        check(doc["ok"] == (want_rc == 0), "%s: ok field" % name)
    # human output of one tree: verdict, evidence and fix lines
    rc, out, _ = run(binary, "--root", os.path.join(FIX, "container-no-devib"))
    check("[fail] /dev/infiniband access" in out and "fix: " in out,
          "human output has verdicts and fixes")
    rc, _, err = run(binary, "--require", "rdma,warp-drive")
    check(rc == 2 and "unknown requirement 'warp-drive'" in err,
          "an unknown requirement is a usage error (%d)" % rc)


def here(binary):
    if os.path.exists("/sys/class/infiniband") or \
            os.path.exists("/proc/driver/nvidia/version"):
        print("SKIP: this machine has RDMA or an NVIDIA driver; the "
              "'here' expectations are for one without")
        sys.exit(77)
    t = time.monotonic()
    rc, out, err = run(binary)
    took = time.monotonic() - t
    print("offcore doctor took %.2f s here" % took)
    print(out)
    check("no RDMA device" in out, "says no RDMA device")
    check("UCX will use tcp between hosts and sm within this one" in out,
          "says UCX uses tcp/sm")
    check("GPUDirect RDMA (nvidia_peermem or dma-buf): not applicable" in out,
          "says GPUDirect n/a")
    rc, out, err = run(binary, "--require", "rdma")
    check(rc == 1, "--require rdma exits 1 (got %d)" % rc)
    check("requirement 'rdma' not met: RDMA devices: no RDMA device" in err,
          "--require rdma names the reason: %r" % err)
    rc, out, err = run(binary, "--json")
    p = subprocess.run([sys.executable, "-m", "json.tool"], input=out,
                       capture_output=True, text=True)
    check(p.returncode == 0, "python3 -m json.tool accepts --json")
    doc = load(out, "here")
    if doc:
        by = {c["id"]: c for c in doc["checks"]}
        u = by["ucx_transports"]
        check(u["verdict"] == "warn" and any(
            "to a peer as on another host (no shared memory): tcp/" in e
            for e in u["evidence"]),
            "json: UCX picks tcp toward other hosts: %s" % u)
        check(any("to a peer on this host:" in e and "(sm)" in e
                  for e in u["evidence"]), "json: sm within the host")
        check(by["gpudirect"]["verdict"] == "n/a", "json: gpudirect n/a")


def nccl(binary, lib, broken):
    """The NCCL probe on a recorded GPU host, live, with fake_nccl.c; and
    a libnccl that exists but needs a library that does not: a warning
    naming the file and the loader's words, not "not installed"."""
    rc, out, err = run(binary, "--root", os.path.join(FIX, "dgx-ok"),
                       "--live", "--json", "--nccl", broken,
                       "--nccl-timeout", "2")
    doc = load(out, "nccl broken")
    if doc is not None:
        c = {c["id"]: c for c in doc["checks"]}["nccl"]
        check(c["verdict"] == "warn" and broken in c["summary"] and
              "libocmissing.so.0" in c["summary"],
              "nccl broken: %s %s" % (c["verdict"], c["summary"]))
    rc, out, err = run(binary, "--root", os.path.join(FIX, "dgx-ok"),
                       "--live", "--json", "--nccl", "/nonexistent/libnccl.so.2",
                       "--nccl-timeout", "2")
    doc = load(out, "nccl missing")
    if doc is not None:
        c = {c["id"]: c for c in doc["checks"]}["nccl"]
        check(c["verdict"] == "n/a" and "not installed" in c["summary"],
              "nccl missing: %s %s" % (c["verdict"], c["summary"]))
    for net, verdict, text, req in (
            ("IB", "ok", "NCCL uses NET/IB with GPUDirect RDMA", True),
            ("Socket", "fail", "NET/Socket (TCP) although RDMA", False),
            ("hang", "warn", "named no network", False)):
        os.environ["FAKE_NCCL_NET"] = net
        t = time.monotonic()
        rc, out, err = run(binary, "--root", os.path.join(FIX, "dgx-ok"),
                           "--live", "--json", "--nccl", lib,
                           "--nccl-timeout", "2", "--require", "nccl")
        took = time.monotonic() - t
        doc = load(out, "nccl " + net)
        if doc is None:
            continue
        c = {c["id"]: c for c in doc["checks"]}["nccl"]
        check(c["verdict"] == verdict and text in c["summary"],
              "nccl %s: %s %s" % (net, c["verdict"], c["summary"]))
        check(doc["requirements"][0]["met"] == req,
              "nccl %s: requirement nccl met=%s" % (net, req))
        if net == "IB":
            check(any("NET/IB : Using" in e for e in c["evidence"]),
                  "nccl IB: the log line is the evidence")
        if net == "hang":
            check(any("killed" in e for e in c["evidence"]) and took < 30,
                  "nccl hang: killed at the timeout (%.1f s)" % took)


def gpu_memory(binary, libcuda):
    """The "GPU memory in offcore" check live, with the libcuda double of
    tests/gpu: served; cuInit failing; no driver at all."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    cases = (({"OC_LIBCUDA": libcuda, "OC_GPU_CHUNK": "4K"}, "ok",
              "device buffers served", "CUDA driver API 12.8, 1 device(s)"),
             ({"OC_LIBCUDA": libcuda, "OC_GPU_CHUNK": "64K",
               "FAKE_CUDA_FAIL": "init"}, "warn", "cuInit", "no CUDA-capable"),
             ({"OC_LIBCUDA": libcuda + ".missing"}, "n/a", "no CUDA driver",
              "cannot open shared object file"),
             ({"OC_LIBCUDA": libcuda, "OC_GPU": "n"}, "n/a", "OC_GPU=n",
              "1 device(s)"),
             # below the staging: 64 KiB of limit for 3 x 2 x 1 MiB
             ({"OC_LIBCUDA": libcuda, "OC_GPU_CHUNK": "1M", "MEMLOCK": ""},
              "warn", "below the staging a rank needs (6 MiB)",
              "RLIMIT_MEMLOCK): 64 KiB"))
    for env, verdict, summary, evidence in cases:
        if "MEMLOCK" in env:
            env = {k: v for k, v in env.items() if k != "MEMLOCK"}
            if soft != resource.RLIM_INFINITY and soft < 64 << 10:
                continue
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 << 10, hard))
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            rc, out, err = run(binary, "--json")
        finally:
            os.environ.clear()
            os.environ.update(saved)
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
        doc = load(out, "gpu_memory " + verdict)
        if doc is None:
            continue
        c = {c["id"]: c for c in doc["checks"]}["gpu_memory"]
        check(c["verdict"] == verdict and summary in c["summary"] and
              any(evidence in e for e in c["evidence"]),
              "gpu_memory %s: %s %s %s" % (verdict, c["verdict"],
                                           c["summary"], c["evidence"]))


def daemons(binary, offcored):
    """The live daemon checks against a real offcored, a listening socket
    standing in for offcore-dp, and stale sockets nothing accepts on."""
    import socket
    import tempfile
    tmp = tempfile.mkdtemp(prefix="oc-doctor-")
    port = 25000 + os.getpid() % 900
    key = os.path.join(tmp, "cluster.key")
    with open(key, "w") as f:
        f.write(subprocess.run([binary, "keygen"], capture_output=True,
                               text=True, check=True).stdout)
    os.chmod(key, 0o600)
    sock = os.path.join(tmp, "agent.sock")
    log = open(os.path.join(tmp, "agent.log"), "w+")
    agent = subprocess.Popen([offcored, "--listen", "unix:" + sock,
                              "--cluster-key", key, "--metrics",
                              "127.0.0.1:%d" % port], stdout=log,
                             stderr=subprocess.STDOUT,
                             env=dict(os.environ, OC_LOG="agent:info,router:info",
                                      UCX_TLS="sm,self"))
    dp = os.path.join(tmp, "dp.sock")
    stale = os.path.join(tmp, "stale.sock")
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            log.seek(0)
            if re.search(r"\bready\b", log.read()):  # not "already in use"
                break
            check(agent.poll() is None, "offcored runs")
            time.sleep(0.05)
        lsn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsn.bind(dp)
        lsn.listen(4)
        s2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s2.bind(stale)       # a socket file nothing listens on
        s2.close()

        def doc_for(env_agent, agent_addr, dp_sock):
            os.environ["OC_AGENT"] = env_agent
            rc, out, err = run(binary, "--json", "--agent", agent_addr,
                               "--dp-socket", dp_sock, "--require", "agent")
            d = load(out, "daemons")
            return rc, {c["id"]: c for c in d["checks"]} if d else {}, d

        rc, by, d = doc_for("unix:" + sock, "127.0.0.1:%d" % port, dp)
        if by:
            c = by["offcored"]
            check(c["verdict"] == "ok" and "offcored answers" in c["summary"],
                  "a running offcored: %s" % c)
            check(any("accepts connections" in e for e in c["evidence"]),
                  "its control socket accepts")
            check(d["requirements"][0]["met"], "requirement agent met")
            c = by["offcore_dp"]
            check(c["verdict"] == "ok", "a listening dp socket: %s" % c)
        # offcored's socket answers but its metrics do not (wrong port)
        rc, by, d = doc_for("unix:" + sock, "127.0.0.1:%d" % (port + 1), stale)
        if by:
            check(by["offcored"]["verdict"] == "fail" and
                  "metrics do not" in by["offcored"]["summary"],
                  "socket without metrics: %s" % by["offcored"])
            check(by["offcore_dp"]["verdict"] == "fail" and
                  "stale" in by["offcore_dp"]["summary"],
                  "stale dp socket: %s" % by["offcore_dp"])
            check(rc == 1 and not d["requirements"][0]["met"],
                  "requirement agent unmet, exit 1")
        # a stale agent socket
        rc, by, d = doc_for("unix:" + stale, "127.0.0.1:%d" % (port + 1), dp)
        if by:
            check(by["offcored"]["verdict"] == "fail" and
                  "stale" in by["offcored"]["summary"],
                  "stale agent socket: %s" % by["offcored"])
    finally:
        agent.terminate()
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if mode == "daemons":
        daemons(binary, sys.argv[3])
    elif mode == "nccl":
        nccl(binary, sys.argv[3], sys.argv[4])
    elif mode == "gpu":
        gpu_memory(binary, sys.argv[3])
    else:
        {"fixtures": fixtures, "here": here}[mode](binary)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
