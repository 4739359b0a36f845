#!/usr/bin/env python3
"""bench/nvmf-bench.py BUILDDIR — offcore-nvmf against local fio, one run.

Cases: 4 KiB random read and write at queue depth 32, 128 KiB sequential
read and write at queue depth 32.  For each case, BENCH_NVMF_REPEATS times
(3), interleaved so that all see the same moments of a shared machine:

  fio        fio --ioengine=io_uring --direct=1 on plain.img itself
  plain      offcore-nvmf-load over loopback TCP -> offcore-nvmf, namespace 1
             = plain.img (the same file fio used)
  integrity  namespace 2, a copy with a CRC32C per block checked on reads
  encrypt    namespace 3, a copy with integrity and AES-256-XTS

Every run prints a JSON line; each case ends with a summary line: medians,
the target's ratio to fio, and the cost of integrity and encryption as
ratios of the plain target, with every run's own ratio.  The issue's bar,
integrity >= 0.7x fio at 4 KiB random read, is reported, never asserted
(timings on a shared 2-core machine are noisy).  Files live in
BUILDDIR/nvmf-bench (BENCH_NVMF_SIZE, default 1G each; 3 files, removed
at the end).
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

REPEATS = int(os.environ.get("BENCH_NVMF_REPEATS", "3"))
SECONDS = float(os.environ.get("BENCH_NVMF_SECONDS", "4"))
SIZE = os.environ.get("BENCH_NVMF_SIZE", "1G")
NQN = "nqn.2026-11.io.offcore:bench"
CASES = [("randread-4k-qd32", "randread", 4096),
         ("randwrite-4k-qd32", "randwrite", 4096),
         ("read-128k-qd32", "read", 131072),
         ("write-128k-qd32", "write", 131072)]


def free_port(lo):
    for p in range(lo, lo + 200):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    sys.exit("nvmf-bench: no free port")


def fio(path, rw, bs):
    out = subprocess.run(
        ["fio", "--name=nvmf-baseline", "--filename=" + path, "--size=" + SIZE,
         "--rw=" + rw, "--bs=%d" % bs, "--iodepth=32", "--direct=1",
         "--ioengine=io_uring", "--runtime=%g" % SECONDS, "--time_based",
         "--output-format=json"], check=True, stdout=subprocess.PIPE,
        text=True).stdout
    j = json.loads(out)["jobs"][0]
    d = j["read"] if "read" in rw else j["write"]
    return d["iops"], d["bw_bytes"] / 1e6


def load(build, port, nsid, rw, bs):
    # the load generator always uses namespace 1 of its subsystem: one
    # subsystem per configuration
    out = subprocess.run(
        [os.path.join(build, "src/nvmf/offcore-nvmf-load"), "--addr",
         "127.0.0.1:%d" % port, "--nqn", "%s-%d" % (NQN, nsid), "--rw", rw,
         "--bs", str(bs), "--qd", "32", "--seconds", str(SECONDS)],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    j = json.loads(out)
    return j["iops"], j["MBps"]


def main():
    build = os.path.abspath(sys.argv[1])
    if not shutil.which("fio"):
        print(json.dumps({"bench": "nvmf", "skipped": "fio not installed (apt-get install fio)"}))
        return 0
    work = os.path.join(build, "nvmf-bench")
    os.makedirs(work, exist_ok=True)
    plain = os.path.join(work, "plain.img")
    imgs = [plain, os.path.join(work, "integrity.img"),
            os.path.join(work, "encrypt.img")]
    subprocess.run(["fio", "--name=layout", "--filename=" + plain,
                    "--size=" + SIZE, "--rw=write", "--bs=1M", "--direct=1",
                    "--ioengine=io_uring"], check=True,
                   stdout=subprocess.DEVNULL)
    for p in imgs[1:]:
        shutil.copyfile(plain, p)
        if os.path.exists(p + ".crc"):
            os.remove(p + ".crc")
    key = os.path.join(work, "xts.key")
    with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(os.urandom(64))
    os.chmod(key, 0o600)
    port = free_port(24900)
    conf = os.path.join(work, "bench.conf")
    with open(conf, "w") as f:
        f.write("listen 127.0.0.1:%d\n" % port)
        opts = ["", " integrity=on", " integrity=on key=" + key]
        for i, (img, o) in enumerate(zip(imgs, opts), 1):
            f.write("subsystem %s-%d\n  allow-any-host\n  namespace 1 %s%s\n"
                    % (NQN, i, img, o))
    tgt = subprocess.Popen([os.path.join(build, "src/nvmf/offcore-nvmf"), "-c", conf])
    try:
        deadline = time.time() + 120  # building checksums of 2 GiB
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if tgt.poll() is not None or time.time() > deadline:
                    sys.exit("nvmf-bench: the target did not start")
                time.sleep(0.2)
        bar = None
        for case, rw, bs in CASES:
            res = {"fio": [], "plain": [], "integrity": [], "encrypt": []}
            for r in range(REPEATS):
                for cfg in res:
                    if cfg == "fio":
                        iops, mbps = fio(plain, rw, bs)
                    else:
                        nsid = {"plain": 1, "integrity": 2, "encrypt": 3}[cfg]
                        iops, mbps = load(build, port, nsid, rw, bs)
                    res[cfg].append((iops, mbps))
                    print(json.dumps({"bench": "nvmf", "case": case, "config": cfg,
                                      "run": r + 1, "iops": round(iops),
                                      "MBps": round(mbps, 1)}), flush=True)
            med = {k: statistics.median(x[0] for x in v) for k, v in res.items()}
            per_run = [{"plain/fio": round(res["plain"][i][0] / res["fio"][i][0], 3),
                        "integrity/fio": round(res["integrity"][i][0] / res["fio"][i][0], 3),
                        "integrity/plain": round(res["integrity"][i][0] / res["plain"][i][0], 3),
                        "encrypt/plain": round(res["encrypt"][i][0] / res["plain"][i][0], 3)}
                       for i in range(REPEATS)]
            summary = {"bench": "nvmf", "case": case, "summary": True,
                       "median_iops": {k: round(v) for k, v in med.items()},
                       "median_MBps": {k: round(statistics.median(x[1] for x in v), 1)
                                       for k, v in res.items()},
                       "plain_vs_fio": round(med["plain"] / med["fio"], 3),
                       "integrity_vs_fio": round(med["integrity"] / med["fio"], 3),
                       "integrity_vs_plain": round(med["integrity"] / med["plain"], 3),
                       "encrypt_vs_plain": round(med["encrypt"] / med["plain"], 3),
                       "runs": per_run}
            print(json.dumps(summary), flush=True)
            if case == "randread-4k-qd32":
                bar = summary["integrity_vs_fio"]
        print(json.dumps({"bench": "nvmf", "bar": "integrity randread 4K QD32 >= 0.7x fio",
                          "ratio": bar, "met": bar is not None and bar >= 0.7}))
    finally:
        tgt.terminate()
        tgt.wait(timeout=30)
        # the images are laid out afresh each run: do not leave 3 GiB behind
        for p in imgs:
            for f in (p, p + ".crc"):
                if os.path.exists(f):
                    os.remove(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
