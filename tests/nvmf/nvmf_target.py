"""nvmf_target.py — start and stop an offcore-nvmf target process, for the
nvmf tests and bench/nvmf-bench.py (one copy of this logic, not five).

A target counts as up when ITS OWN "listening" line is in its log (the
line carries its pid), not when a connect succeeds: a target killed a
moment ago may still hold the port through its ring's pending accept, and
a connect would reach that one.  Everything here waits on a condition
with a deadline, never a fixed sleep.

Trust: local processes and files only; nothing read here comes from the
network.
"""
import os
import socket
import subprocess
import time


def free_port(lo, span=100, host="127.0.0.1"):
    """The first port in lo..lo+span-1 that binds now on @host."""
    for p in range(lo, lo + span):
        s = socket.socket()
        try:
            s.bind((host, p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("no free port in %d..%d" % (lo, lo + span - 1))


def port_free(port, timeout=10, host="127.0.0.1"):
    """Wait until nothing listens on @port.  Only a refused connection
    proves it: a lingering listener nobody accepts on can also make a
    connect time out."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection((host, port), 0.2).close()
        except ConnectionRefusedError:
            return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("port %d still answers %g s after the kill" % (port, timeout))


def binary(build):
    return os.path.join(build, "src", "nvmf", "offcore-nvmf")


def cores_for(workers):
    """--cores for @workers workers: the first CPUs this process may use
    (fewer when fewer are allowed: said on stdout)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < workers:
        print("note: %d worker(s) asked, %d CPU(s) allowed: %d worker(s)"
              % (workers, len(cpus), len(cpus)), flush=True)
    return ",".join(str(c) for c in cpus[:workers])


def workers_wanted():
    """The worker count the test suite asks of every target it starts
    (NVMF_WORKERS, set by tests/nvmf/meson.build), or None: the target's
    default (one worker per allowed CPU)."""
    w = os.environ.get("NVMF_WORKERS")
    if w is None:
        return None
    if not w.isdigit() or int(w) < 1:
        raise SystemExit("NVMF_WORKERS=%r: want a number of workers, 1 or more" % w)
    return int(w)


def start(build, conf, log, timeout=10, env=None, prefix=(), workers=None):
    """Start offcore-nvmf on @conf, its output appended to the open file
    @log, and return the Popen once it logs that it listens.  @workers: run
    that many workers (--cores, cores_for); None: NVMF_WORKERS, else the
    target's default.  On failure (exit or @timeout seconds, which must
    cover building checksums of large namespaces) the log is printed and
    SystemExit raised."""
    e = dict(os.environ if env is None else env)
    e.setdefault("OC_LOG", "nvmf:info")
    if workers is None:
        workers = workers_wanted()
    args = [binary(build), "-c", conf]
    if workers is not None:
        args += ["--cores", cores_for(workers)]
    log.flush()
    p = subprocess.Popen(list(prefix) + args, stdout=log,
                         stderr=subprocess.STDOUT, env=e)
    mine = "offcore[%d] nvmf info: listening on" % p.pid
    deadline = time.time() + timeout
    while True:
        log.flush()
        with open(log.name, errors="replace") as f:
            if mine in f.read():
                return p
        if p.poll() is not None or time.time() > deadline:
            if p.poll() is None:
                p.kill()
                p.wait()
            with open(log.name, errors="replace") as f:
                print(f.read()[-4000:])
            raise SystemExit("FAIL: the target did not start (%s)"
                             % ("exited %d" % p.returncode
                                if p.returncode is not None and p.returncode >= 0
                                else "timed out after %g s" % timeout))
        time.sleep(0.05)


def stop(p, timeout=30):
    """SIGTERM (the target drains), then wait; SIGKILL if it hangs.
    @return its exit status."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode
