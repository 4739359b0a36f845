#!/usr/bin/env python3
"""offcore-nvmf against local fio, interleaved runs (run with --help).

Cases: 4 KiB random read and write at queue depth 32, 128 KiB sequential
read and write at queue depth 32.  For each case, --repeats times (3),
interleaved so that all see the same moments of a shared machine:

  fio        fio --ioengine=io_uring --direct=1 --iodepth=QD on plain.img
  plain      offcore-nvmf-load over loopback TCP -> offcore-nvmf, namespace
             = plain.img (the same file fio used), QD commands in flight in
             total, spread over --queues I/O queues (connections)
  integrity  a copy of plain.img with a CRC32C per block checked on reads
  encrypt    a copy with integrity and AES-256-XTS

The target opens every file O_DIRECT, as fio does with --direct=1.  Every
run prints a JSON line; a target run also gives the mean round trip the
load generator saw (rtt_us) and the mean time the target itself held a
command (target_us, from its latency histogram: command parsed to answer
queued), so that the time between the two (network, load generator,
scheduling) shows; the target's CPU time per I/O and how long it
waited, runnable, for a CPU during the run (/proc/PID/schedstat), and the
load generator's CPU time per I/O (its rusage); fio's line has fio's own.
Each case ends with a summary line: medians (IOPS, CPU per I/O), the
target's ratios to fio, the cost of integrity and encryption as ratios of
the plain target, every run's own ratios, and the load average.  Then a
bar line per target configuration at QD32 (4 KiB: plain and integrity
>= 0.85x fio, encrypted >= 0.8x; 128 KiB: 0.8x and 0.7x), reported, never
asserted (timings on a shared 2-core machine are noisy).  Files
live in BUILDDIR/nvmf-bench (3 of --size each, removed at the end).

--pin (auto by default) runs fio, the target's loop and the load generator
each on the same one CPU, the one that takes the disk's interrupts: there
a completion wakes the reader without an interrupt to the other CPU (on a
virtual machine, an exit to the hypervisor each), and over loopback the
target and the generator wake each other without one either.  The
kernel's work of both (TCP, block layer) then runs mostly on that CPU
too.  --pin none leaves placement to the scheduler (as before).
--cores LIST gives the target one worker per CPU listed instead (each
owning the queues handed to it; fio and the generator stay on --pin's
CPU): compare 1 and N workers with --queues N in alternate invocations.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "nvmf"))
import nvmf_target as nt  # noqa: E402

NQN = "nqn.2026-11.io.offcore:bench"
CASES = {"randread-4k": ("randread", 4096),
         "randwrite-4k": ("randwrite", 4096),
         "read-128k": ("read", 131072),
         "write-128k": ("write", 131072)}
CONFIGS = ("fio", "plain", "integrity", "encrypt")
# issue 24's bars at QD32, the target's median IOPS over fio's:
# BARS[4 KiB][encrypted]; plain and integrity share one
BARS = {True: (0.85, 0.8), False: (0.8, 0.7)}


def parse_args():
    ap = argparse.ArgumentParser(
        prog="nvmf-bench.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", metavar="BUILDDIR",
                    help="the meson build directory (holds src/nvmf/offcore-nvmf "
                         "and offcore-nvmf-load)")
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated, from: %s (all)" % ", ".join(CASES))
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma-separated, from: %s (all; fio and plain are "
                         "needed for the ratios)" % ", ".join(CONFIGS))
    ap.add_argument("--repeats", type=int,
                    default=int(os.environ.get("BENCH_NVMF_REPEATS", "3")),
                    help="interleaved runs per configuration ($BENCH_NVMF_REPEATS, 3)")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("BENCH_NVMF_SECONDS", "4")),
                    help="seconds per run ($BENCH_NVMF_SECONDS, 4)")
    ap.add_argument("--size", default=os.environ.get("BENCH_NVMF_SIZE", "1G"),
                    help="size of each backing file ($BENCH_NVMF_SIZE, 1G)")
    ap.add_argument("--qd", type=int, default=32,
                    help="queue depth: fio's --iodepth and the load "
                         "generator's commands in flight in total (32)")
    ap.add_argument("--queues", type=int, default=1,
                    help="I/O queues (TCP connections) the load generator "
                         "spreads its --qd commands over; must divide --qd (1)")
    ap.add_argument("--poll-us", type=int,
                    default=int(os.environ.get("BENCH_NVMF_POLL_US", "0")),
                    help="busy-poll this many us after work before sleeping, "
                         "in the target (its poll-us) and in the load "
                         "generator (its --poll-us); costs CPU, helps on an "
                         "idle machine ($BENCH_NVMF_POLL_US, 0: off)")
    ap.add_argument("--sched", choices=("normal", "fifo"), default="normal",
                    help="fifo: run fio, the target and the load generator "
                         "all under SCHED_FIFO (chrt -f 10, needs root), so "
                         "that other jobs on a shared machine do not decide "
                         "the ratio; every side gets the same (normal)")
    ap.add_argument("--pin", default=os.environ.get("BENCH_NVMF_PIN", "auto"),
                    help="CPU that fio, the target's loop (its `cpu`) and "
                         "the load generator (--cpu) each run on: a number, "
                         "'auto' (the CPU that takes most of the interrupts "
                         "of the disk holding the backing files; none if "
                         "that cannot be found) or 'none' (the scheduler's "
                         "choice) ($BENCH_NVMF_PIN, auto)")
    ap.add_argument("--cores", default=os.environ.get("BENCH_NVMF_CORES", ""),
                    help="the target's workers: its `cores` list (one worker "
                         "per CPU listed, as 0-3), in place of pinning its "
                         "one worker to --pin's CPU; give --queues at least "
                         "the number of workers to use them all "
                         "($BENCH_NVMF_CORES, none)")
    ap.add_argument("--port", type=int,
                    default=int(os.environ.get("BENCH_NVMF_PORT", "24900")),
                    help="first TCP port to try for the target and its "
                         "metrics ($BENCH_NVMF_PORT, 24900)")
    a = ap.parse_args()
    a.cases = [c for c in a.cases.split(",") if c]
    a.configs = [c for c in a.configs.split(",") if c]
    bad = [c for c in a.cases if c not in CASES] + \
          [c for c in a.configs if c not in CONFIGS]
    if bad:
        ap.error("unknown case or configuration: " + ", ".join(bad))
    if a.pin not in ("auto", "none") and not (a.pin.isdigit() and
                                              int(a.pin) < os.cpu_count()):
        ap.error("--pin: want auto, none or a CPU number below %d"
                 % os.cpu_count())
    if a.cores and not all(p.isdigit() or (p.count("-") == 1 and
                                           all(x.isdigit() for x in p.split("-")))
                           for p in a.cores.split(",")):
        ap.error("--cores: want a CPU list, as 0-3,6")
    if a.repeats < 1 or a.seconds <= 0 or a.qd < 1 or a.queues < 1 or \
            a.qd % a.queues or a.qd // a.queues > 127 or \
            not 0 <= a.poll_us <= 10000:
        ap.error("want --repeats >= 1, --seconds > 0, --queues dividing --qd, "
                 "at most 127 per queue, --poll-us 0..10000")
    return a


def sched_prefix(a):
    return ["chrt", "-f", "10"] if a.sched == "fifo" else []


def disk_irq_cpu(path):
    """The CPU that handled most interrupts of the disk holding @path
    (its PCI function's MSI vectors, from /proc/interrupts), or None"""
    try:
        st = os.stat(path)
        dev = "/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
        if os.path.exists(os.path.join(dev, "partition")):
            dev = os.path.join(dev, "..")
        d = os.path.realpath(os.path.join(dev, "device"))
        while d != "/" and not os.path.isdir(os.path.join(d, "msi_irqs")):
            d = os.path.dirname(d)
        irqs = set(os.listdir(os.path.join(d, "msi_irqs")))
        with open("/proc/interrupts") as f:
            ncpu = len(f.readline().split())
            per_cpu = [0] * ncpu
            for line in f:
                w = line.split()
                if w and w[0].rstrip(":") in irqs:
                    for i, v in enumerate(w[1:1 + ncpu]):
                        per_cpu[i] += int(v)
    except (OSError, ValueError):
        return None
    return per_cpu.index(max(per_cpu)) if max(per_cpu) > 0 else None


def pin_prefix(a):
    return ["taskset", "-c", str(a.cpu)] if a.cpu is not None else []


def fio(a, path, rw, bs):
    out = subprocess.run(
        sched_prefix(a) + pin_prefix(a) + ["fio", "--name=nvmf-baseline", "--filename=" + path, "--size=" + a.size,
         "--rw=" + rw, "--bs=%d" % bs, "--iodepth=%d" % a.qd, "--direct=1",
         "--ioengine=io_uring", "--runtime=%g" % a.seconds, "--time_based",
         "--output-format=json"], check=True, stdout=subprocess.PIPE,
        text=True).stdout
    j = json.loads(out)["jobs"][0]
    d = j["read"] if "read" in rw else j["write"]
    r = {"iops": d["iops"], "MBps": d["bw_bytes"] / 1e6,
         "lat_us": d["clat_ns"]["mean"] / 1000}
    if d.get("total_ios") and j.get("job_runtime"):  # fio's own CPU per I/O
        r["cpu_us_per_io"] = ((j["usr_cpu"] + j["sys_cpu"]) / 100 *
                              j["job_runtime"] * 1000 / d["total_ios"])
    return r


def target_latency(mport, nqn):
    """(sum of seconds, count) of the target's latency histogram for @nqn"""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                timeout=10) as r:
        text = r.read().decode()
    tot = {"sum": 0.0, "count": 0.0}
    for line in text.splitlines():
        for k in tot:
            if line.startswith("offcore_nvmf_ns_latency_seconds_%s{" % k) and \
                    'subsystem="%s"' % nqn in line:
                tot[k] += float(line.rsplit(" ", 1)[1])
    return tot["sum"], tot["count"]


def schedstat(pid):
    """(seconds on a CPU, seconds runnable but waiting for one) of all of
    @pid's threads (its loop, the metrics thread, any io_uring workers),
    from /proc/PID/task/*/schedstat (None where the kernel lacks it)"""
    run = wait = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    r, w = f.read().split()[:2]
            except FileNotFoundError:  # a thread that just ended
                continue
            run += int(r)
            wait += int(w)
        return run / 1e9, wait / 1e9
    except (OSError, ValueError):
        return None


def load(a, port, mport, tgt_pid, nsid, rw, bs):
    # one subsystem per configuration, each with its namespace 1
    nqn = "%s-%d" % (NQN, nsid)
    s0, c0 = target_latency(mport, nqn)
    sch0 = schedstat(tgt_pid)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        sched_prefix(a) + [os.path.join(a.build, "src/nvmf/offcore-nvmf-load"), "--addr",
         "127.0.0.1:%d" % port, "--nqn", nqn, "--rw", rw, "--bs", str(bs),
         "--qd", str(a.qd // a.queues), "--queues", str(a.queues),
         "--seconds", str(a.seconds), "--poll-us", str(a.poll_us)] +
        (["--cpu", str(a.cpu)] if a.cpu is not None else []),
        check=True, stdout=subprocess.PIPE, text=True).stdout
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s1, c1 = target_latency(mport, nqn)
    sch1 = schedstat(tgt_pid)
    j = json.loads(out)
    r = {"iops": j["iops"], "MBps": j["MBps"]}
    if "lat_us" in j:  # load generators before this bench did not say
        r["rtt_us"] = j["lat_us"]
    if c1 > c0:
        r["target_us"] = (s1 - s0) / (c1 - c0) * 1e6
    if sch0 and sch1 and j["ops"]:
        r["target_cpu_us_per_io"] = (sch1[0] - sch0[0]) / j["ops"] * 1e6
        r["target_runq_wait_s"] = sch1[1] - sch0[1]
    if j["ops"]:  # the generator's user + system time (it has ended)
        r["gen_cpu_us_per_io"] = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime -
                                  ru0.ru_stime) / j["ops"] * 1e6
    return r


def ratio(x, y):
    return round(x / y, 3) if y else None


def main():
    a = parse_args()
    a.build = os.path.abspath(a.build)
    if not shutil.which("fio"):
        print(json.dumps({"bench": "nvmf", "skipped": "fio not installed (apt-get install fio)"}))
        return 0
    for b in ("offcore-nvmf", "offcore-nvmf-load"):
        if not os.access(os.path.join(a.build, "src/nvmf", b), os.X_OK):
            sys.exit("nvmf-bench: %s/src/nvmf/%s is missing: build first "
                     "(ninja -C %s)" % (a.build, b, a.build))
    if a.sched == "fifo" and subprocess.run(
            ["chrt", "-f", "10", "true"], stderr=subprocess.DEVNULL).returncode:
        sys.exit("nvmf-bench: --sched fifo: chrt -f 10 is refused here "
                 "(needs root or CAP_SYS_NICE)")
    work = os.path.join(a.build, "nvmf-bench")
    os.makedirs(work, exist_ok=True)
    plain = os.path.join(work, "plain.img")
    imgs = [plain, os.path.join(work, "integrity.img"),
            os.path.join(work, "encrypt.img")]
    # each file laid out the same way (fio writing 1 MiB blocks, O_DIRECT)
    for p in imgs:
        for f in (p, p + ".crc"):
            if os.path.exists(f):
                os.remove(f)
        subprocess.run(["fio", "--name=layout", "--filename=" + p,
                        "--size=" + a.size, "--rw=write", "--bs=1M", "--direct=1",
                        "--ioengine=io_uring"], check=True,
                       stdout=subprocess.DEVNULL)
    key = os.path.join(work, "xts.key")
    with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(os.urandom(64))
    os.chmod(key, 0o600)
    a.cpu = (disk_irq_cpu(plain) if a.pin == "auto" else
             None if a.pin == "none" else int(a.pin))
    print(json.dumps({"bench": "nvmf", "pin": a.pin, "cpu": a.cpu,
                      "cores": a.cores or None}), flush=True)
    port = nt.free_port(a.port)
    mport = nt.free_port(port + 1)
    conf = os.path.join(work, "bench.conf")
    with open(conf, "w") as f:
        f.write("listen 127.0.0.1:%d\nmetrics 127.0.0.1:%d\npoll-us %d\n"
                % (port, mport, a.poll_us))
        if a.cores:
            f.write("cores %s\n" % a.cores)
        elif a.cpu is not None:
            f.write("cpu %d\n" % a.cpu)
        opts = ["", " integrity=on", " integrity=on key=" + key]
        for i, (img, o) in enumerate(zip(imgs, opts), 1):
            f.write("subsystem %s-%d\n  allow-any-host\n  namespace 1 %s%s\n"
                    % (NQN, i, img, o))
    log = open(os.path.join(work, "target.log"), "w")
    # builds checksums first
    tgt = nt.start(a.build, conf, log, timeout=300, prefix=sched_prefix(a))
    try:
        for case in a.cases:
            rw, bs = CASES[case]
            name = "%s-qd%d" % (case, a.qd)
            res = {c: [] for c in a.configs}
            load0 = os.getloadavg()[0]
            for r in range(a.repeats):
                for cfg in a.configs:
                    if cfg == "fio":
                        m = fio(a, plain, rw, bs)
                    else:
                        nsid = {"plain": 1, "integrity": 2, "encrypt": 3}[cfg]
                        m = load(a, port, mport, tgt.pid, nsid, rw, bs)
                    res[cfg].append(m)
                    line = {"bench": "nvmf", "case": name, "config": cfg,
                            "run": r + 1, "iops": round(m["iops"]),
                            "MBps": round(m["MBps"], 1)}
                    if cfg != "fio":
                        line["queues"] = a.queues
                        line["qd_per_queue"] = a.qd // a.queues
                        line["poll_us"] = a.poll_us
                        line["cores"] = a.cores or None
                    line["sched"] = a.sched
                    line["cpu"] = a.cpu
                    for k in ("lat_us", "cpu_us_per_io", "rtt_us", "target_us",
                              "target_cpu_us_per_io", "gen_cpu_us_per_io",
                              "target_runq_wait_s"):
                        if k in m:
                            line[k] = round(m[k], 1)
                    line["loadavg"] = round(os.getloadavg()[0], 2)
                    print(json.dumps(line), flush=True)
            med = {k: statistics.median(x["iops"] for x in v) for k, v in res.items()}
            g = lambda k, i: res[k][i]["iops"] if k in res else None  # noqa: E731
            per_run = []
            for i in range(a.repeats):
                pr = {}
                for num, den in (("plain", "fio"), ("integrity", "fio"),
                                 ("integrity", "plain"), ("encrypt", "plain")):
                    if num in res and den in res:
                        pr["%s/%s" % (num, den)] = ratio(g(num, i), g(den, i))
                per_run.append(pr)
            summary = {"bench": "nvmf", "case": name, "summary": True,
                       "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)],
                       "queues": a.queues, "qd_total": a.qd,
                       "poll_us": a.poll_us, "sched": a.sched, "cpu": a.cpu,
                       "cores": a.cores or None,
                       "median_cpu_us_per_io": {
                           k: {m: round(statistics.median(x[m] for x in v), 2)
                               for m in ("cpu_us_per_io", "target_cpu_us_per_io",
                                         "gen_cpu_us_per_io")
                               if all(m in x for x in v)}
                           for k, v in res.items()},
                       "median_iops": {k: round(v) for k, v in med.items()},
                       "median_MBps": {k: round(statistics.median(x["MBps"] for x in v), 1)
                                       for k, v in res.items()}}
            for num, den in (("plain", "fio"), ("integrity", "fio"),
                             ("encrypt", "fio"), ("integrity", "plain"),
                             ("encrypt", "plain")):
                if num in med and den in med:
                    summary["%s_vs_%s" % (num, den)] = ratio(med[num], med[den])
            summary["runs"] = per_run
            print(json.dumps(summary), flush=True)
            # the bars, one line per case and target configuration
            # (reported, never asserted)
            for cfg in ("plain", "integrity", "encrypt"):
                r = summary.get("%s_vs_fio" % cfg)
                if r is None or a.qd != 32:
                    continue
                want = BARS[bs == 4096][cfg == "encrypt"]
                print(json.dumps({"bench": "nvmf",
                                  "bar": "%s %s >= %gx fio" % (cfg, name, want),
                                  "ratio": r, "met": r >= want}), flush=True)
    finally:
        rc = nt.stop(tgt)
        log.close()
        if rc != 0:
            print(open(log.name).read()[-3000:], file=sys.stderr)
        # the images are laid out afresh each run: do not leave 3 GiB behind
        for p in imgs:
            for f in (p, p + ".crc"):
                if os.path.exists(f):
                    os.remove(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
