#!/usr/bin/env python3
"""tests/nvmf/bench_smoke.py BUILDDIR — bench/nvmf-bench.py still runs end
to end: --help helps, bad options are refused, and a tiny run (16 MiB
files, 0.3 s per run, one repeat, 4 KiB random read over 2 queues) prints a
line per configuration with IOPS, the target's latency and CPU fields, a
summary with every ratio, and a bar line per target configuration.  Speed is never checked (a
shared machine), only that every number is there and positive.
SKIP (77) without fio.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench", "nvmf-bench.py")
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        fails.append(what)


def main():
    build = os.path.abspath(sys.argv[1])
    r = subprocess.run([sys.executable, BENCH, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=30)
    check(r.returncode == 0 and "usage: nvmf-bench.py" in r.stdout
          and "--queues" in r.stdout, "--help prints the usage and exits 0")
    r = subprocess.run([sys.executable, BENCH, build, "--queues", "3"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    check(r.returncode == 2 and "--queues dividing --qd" in r.stdout,
          "--queues 3 (does not divide 32) refused with exit 2")
    r = subprocess.run([sys.executable, BENCH, build, "--cases", "nope"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    check(r.returncode == 2 and "unknown case" in r.stdout,
          "an unknown case refused with exit 2")
    r = subprocess.run([sys.executable, BENCH, build, "--cores", "0-x"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    check(r.returncode == 2 and "--cores: want a CPU list" in r.stdout,
          "--cores 0-x refused with exit 2")
    if not shutil.which("fio"):
        print("SKIP: fio is not installed (the run itself needs it)")
        return 77 if not fails else 1
    port = 24950 + os.getpid() % 40
    # the target's workers on the first two CPUs allowed (one if only one)
    cores = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:2])
    r = subprocess.run([sys.executable, BENCH, build, "--cases", "randread-4k",
                        "--repeats", "1", "--seconds", "0.3", "--size", "16M",
                        "--queues", "2", "--poll-us", "20", "--pin", "0",
                        "--cores", cores, "--port", str(port)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=240)
    print(r.stdout[-4000:])
    check(r.returncode == 0, "a tiny run exits 0")
    lines = []
    for ln in r.stdout.splitlines():
        try:
            lines.append(json.loads(ln))
        except ValueError:
            pass
    runs = {j.get("config"): j for j in lines if "config" in j}
    check(set(runs) == {"fio", "plain", "integrity", "encrypt"},
          "one line per configuration (%s)" % sorted(runs))
    check(all(j.get("iops", 0) > 0 for j in runs.values()), "every run has IOPS")
    check(all(j.get("queues") == 2 and j.get("qd_per_queue") == 16
              for k, j in runs.items() if k != "fio"),
          "the target runs spread QD32 over 2 queues of 16")
    check(all(j.get("poll_us") == 20 for k, j in runs.items() if k != "fio"),
          "the target runs say they polled 20 us")
    check(all(j.get("rtt_us", 0) > 0 and j.get("target_us", 0) > 0
              for k, j in runs.items() if k != "fio"),
          "target runs give the round trip and the target's own latency")
    check(all(j.get("cpu") == 0 for j in runs.values()),
          "--pin 0: every run says it ran on CPU 0")
    check(all(j.get("cores") == cores for k, j in runs.items() if k != "fio"),
          "--cores %s: every target run says its workers' CPUs" % cores)
    check(all(j.get("gen_cpu_us_per_io", 0) > 0 and
              j.get("target_cpu_us_per_io", 0) > 0
              for k, j in runs.items() if k != "fio"),
          "target runs give the target's and the generator's CPU per I/O")
    summ = [j for j in lines if j.get("summary")]
    check(len(summ) == 1 and all(summ[0].get(k, 0) > 0 for k in (
        "plain_vs_fio", "integrity_vs_fio", "integrity_vs_plain",
        "encrypt_vs_plain")), "the summary has every ratio")
    bar = [j for j in lines if "bar" in j]
    check(sorted(j["bar"].split()[0] for j in bar) ==
          ["encrypt", "integrity", "plain"] and
          all(isinstance(j.get("met"), bool) and j.get("ratio", 0) > 0
              for j in bar), "a bar line per target configuration, each "
          "with its ratio and met or not")
    check(summ and summ[0].get("encrypt_vs_fio", 0) > 0,
          "the summary has encrypt_vs_fio")
    check(not os.path.exists(os.path.join(build, "nvmf-bench", "plain.img")),
          "the backing files are removed")
    print("bench-smoke: %s" % ("FAIL" if fails else "PASS"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
