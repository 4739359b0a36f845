#!/usr/bin/env python3
"""study.py — the placement study of docs/evaluation.md, in one command.

Runs every evaluation app with routing inline (in the ranks), through an
offcored on other cores ("agent") and through an offcored in its own network
namespace reached over veth and TCP ("dpu", the DPU profile), repeats each
case, and prints the table of the Buddy paper: speedup over inline, network
utilization, the memory-to-communication (M:C) ratio and the category it
puts the app in.  Then sweeps the remote bundle size, the runtime's buffer
count and the agent's routing threads on one app.  Writes CSV files and,
with gnuplot, PNG and SVG plots; progress goes to stderr.

Standard library only (python3 is already there: Meson needs it).
Usage: bench/study.py --build build [--out DIR] [--quick] ...  (--help)
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# ---- the apps -------------------------------------------------------------
# Default ("study") sizes: about 1-3 s of timed region per run on 2 ranks
# inline on an idle 2-core machine.  Quick sizes: a fraction of a second, for
# the test suite.  The large sizes (>= 10x the LLC) are listed in
# docs/evaluation.md; --size large uses them.
APPS = {
    'histogram': {
        'study': ['--updates', '40M', '--table', '10K'],
        'quick': ['--updates', '200K', '--table', '10K'],
        'large': ['--updates', '100M', '--table', '40M'],
    },
    'index-gather': {
        'study': ['--requests', '20M', '--table', '10K'],
        'quick': ['--requests', '200K', '--table', '10K'],
        'large': ['--requests', '50M', '--table', '40M'],
    },
}
APPS.update({
    'transpose': {
        'study': ['--rows', '1M', '--degree', '16'],
        'quick': ['--rows', '20K', '--degree', '8'],
        'large': ['--rows', '2M', '--degree', '16'],
    },
    'triangle': {
        'study': ['--graph', 'rmat', '--scale', '14', '--edge-factor', '8'],
        'quick': ['--graph', 'rmat', '--scale', '11'],
        # R-MAT's wedges grow much faster than its edges (hubs): the 10x-LLC
        # run uses Erdős–Rényi (4M vertices, 512 MiB of adjacency)
        'large': ['--graph', 'er', '--vertices', '2M', '--degree', '16'],
    },
    'sssp': {
        'study': ['--vertices', '300K', '--degree', '8'],
        'quick': ['--vertices', '20K'],
        'large': ['--vertices', '3M', '--degree', '8'],
    },
    'mcproxy': {
        'study': ['--particles', '100K', '--cycles', '2'],
        'quick': ['--particles', '5K', '--nx', '8', '--ny', '8', '--nz', '8',
                  '--groups', '32'],
        'large': ['--particles', '500K', '--nx', '48', '--ny', '48',
                  '--nz', '48'],
    },
})
APP_ORDER = ['histogram', 'index-gather', 'transpose', 'triangle', 'sssp',
             'mcproxy']

PLACEMENTS = ['inline', 'agent', 'dpu']

# M:C thresholds of the categories (docs/evaluation.md): the paper found
# host-dominated apps near M:C 2 or more gain from offload, communication-
# dominated ones near 0.5 do not.
MC_HOST = 1.5
MC_COMM = 0.75

DPU_NET = '198.19.200'   # the study's veth link (tests use 198.18.x)
DPU_PORT = 7790
# What the dpu profile creates is named by prefixes only the study uses,
# followed by the pid of the run that made it: the namespace ocs-dpuPID and
# the veth pair ocshPID (host end) / ocsdPID (namespace end).  A run that
# was killed (SIGKILL, a crash, a lost terminal) leaves them behind, still
# holding DPU_NET; the next run removes those of runs no longer alive.
DPU_NS_PREFIX = 'ocs-dpu'
DPU_HOST_PREFIX = 'ocsh'
DPU_PEER_PREFIX = 'ocsd'


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg, code=2):
    log('study: ' + msg)
    sys.exit(code)


def median(xs):
    return statistics.median(xs) if xs else float('nan')


def fmt(x, spec='.2f'):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return 'n/a'
    return format(x, spec)


# ---- the machine ----------------------------------------------------------

class Env:
    """Binaries, temp dir, keys, and the processes to clean up."""

    def __init__(self, build, ranks, verbose):
        self.build = os.path.abspath(build)
        self.ranks = ranks
        self.verbose = verbose
        self.tmp = tempfile.mkdtemp(prefix='oc-study-')
        self.procs = []
        self.netns = None
        self.links = []
        self.removed = []   # what cleanup() took down, said at the end
        self.job = 100
        self.offcore = self.bin('src/tools/offcore')
        self.offcored = self.bin('src/agent/offcored')
        self.ncpu = os.cpu_count() or 1
        key = os.path.join(self.tmp, 'cluster.key')
        with open(key, 'w') as f:
            f.write(self.check([self.offcore, 'keygen']))
        os.chmod(key, 0o600)
        self.key = key

    def bin(self, rel):
        p = os.path.join(self.build, rel)
        if not os.access(p, os.X_OK):
            die('%s not built (run `make build`, or give --build)' % p)
        return p

    def app_bin(self, app):
        for rel in ('apps/%s/%s' % (app, app), 'apps/%s' % app):
            p = os.path.join(self.build, rel)
            if os.access(p, os.X_OK) and not os.path.isdir(p):
                return p
        return None

    def check(self, argv, **kw):
        return subprocess.run(argv, check=True, capture_output=True,
                              text=True, **kw).stdout

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []
        for link in self.links:
            # gone with the namespace when it took the pair's other end
            r = subprocess.run(['ip', 'link', 'del', link],
                               capture_output=True)
            if r.returncode == 0:
                self.removed.append('veth ' + link)
        self.links = []
        if self.netns:
            subprocess.run(['ip', 'netns', 'del', self.netns],
                           capture_output=True)
            self.removed.append('namespace ' + self.netns)
            self.netns = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the DPU profile: a namespace with one veth link ------------------
    @staticmethod
    def study_alive(pid):
        """Whether @pid is a running study (not a recycled pid)."""
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                return b'study.py' in f.read()
        except OSError:
            return False

    def dpu_clean_stale(self):
        """Remove the namespaces and veths that interrupted studies left
        (named DPU_*_PREFIX + a pid no longer running a study), saying so;
        return None, or why DPU_NET cannot be had."""
        def owner(name, prefix):
            m = re.fullmatch(re.escape(prefix) + r'(\d+)', name)
            return int(m.group(1)) if m else None
        r = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                           text=True)
        for line in r.stdout.splitlines():
            name = line.split()[0] if line.split() else ''
            pid = owner(name, DPU_NS_PREFIX)
            if pid is None or pid == os.getpid():
                continue
            if self.study_alive(pid):
                return ('the dpu link %s.0/24 is in use by a running study '
                        '(pid %d, namespace %s)' % (DPU_NET, pid, name))
            # its agent outlives a SIGKILLed study, and keeps the
            # namespace (and the veth in it) alive after `netns del`
            pids = subprocess.run(['ip', 'netns', 'pids', name],
                                  capture_output=True, text=True).stdout
            for q in pids.split():
                try:
                    os.kill(int(q), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            d = subprocess.run(['ip', 'netns', 'del', name],
                               capture_output=True, text=True)
            log('study: removed stale namespace %s (left by pid %d, no '
                'longer running; %d process(es) in it killed)%s'
                % (name, pid, len(pids.split()), '' if d.returncode == 0
                   else ': ' + d.stderr.strip()))
        r = subprocess.run(['ip', '-o', 'link', 'show'], capture_output=True,
                           text=True)
        for line in r.stdout.splitlines():
            f = line.split(':')
            name = f[1].strip().split('@')[0] if len(f) > 1 else ''
            pid = owner(name, DPU_HOST_PREFIX)
            if pid is None or pid == os.getpid() or self.study_alive(pid):
                continue
            d = subprocess.run(['ip', 'link', 'del', name],
                               capture_output=True, text=True)
            log('study: removed stale veth %s (left by pid %d, no longer '
                'running)%s' % (name, pid, '' if d.returncode == 0
                                else ': ' + d.stderr.strip()))
        # anything else holding the link's addresses would take its traffic
        r = subprocess.run(['ip', '-o', '-4', 'addr', 'show'],
                           capture_output=True, text=True)
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) > 3 and f[3].startswith(DPU_NET + '.'):
                return ('%s is already on interface %s (not a study\'s): the '
                        'dpu link needs %s.0/24' % (f[3], f[1], DPU_NET))
        return None

    def dpu_setup(self):
        """Create the dpu namespace; return None or why it cannot be."""
        if os.geteuid() != 0:
            return 'needs root (ip netns)'
        if shutil.which('ip') is None:
            return 'no ip command (iproute2)'
        why = self.dpu_clean_stale()
        if why:
            return why
        ns = DPU_NS_PREFIX + str(os.getpid())
        host_if = DPU_HOST_PREFIX + str(os.getpid())
        dpu_if = DPU_PEER_PREFIX + str(os.getpid())
        steps = [
            ['ip', 'netns', 'add', ns],
            ['ip', '-n', ns, 'link', 'set', 'lo', 'up'],
            ['ip', 'link', 'add', host_if, 'type', 'veth', 'peer', 'name',
             dpu_if],
            ['ip', 'link', 'set', dpu_if, 'netns', ns],
            ['ip', 'addr', 'add', DPU_NET + '.1/24', 'dev', host_if],
            ['ip', 'link', 'set', host_if, 'up'],
            ['ip', '-n', ns, 'addr', 'add', DPU_NET + '.2/24', 'dev', dpu_if],
            ['ip', '-n', ns, 'link', 'set', dpu_if, 'up'],
        ]
        for i, s in enumerate(steps):
            r = subprocess.run(s, capture_output=True, text=True)
            if i == 0 and r.returncode == 0:
                self.netns = ns
            if i == 2 and r.returncode == 0:
                self.links.append(host_if)
            if r.returncode != 0:
                return '%s: %s' % (' '.join(s), r.stderr.strip())
        # checksum/segmentation offloads off on veth (docs/facts.md)
        if shutil.which('ethtool'):
            subprocess.run(['ethtool', '-K', host_if, 'tx', 'off', 'tso',
                            'off', 'gso', 'off'], capture_output=True)
            subprocess.run(['ip', 'netns', 'exec', ns, 'ethtool', '-K',
                            dpu_if, 'tx', 'off', 'tso', 'off', 'gso', 'off'],
                           capture_output=True)
        self.host_if, self.dpu_if = host_if, dpu_if
        return None

    # -- offcored ---------------------------------------------------------
    def agent_cpus(self, threads):
        """Cores for the agent: those the ranks do not use, when there are
        enough; else the last core (on 2 cores everything shares)."""
        if self.ncpu >= self.ranks + threads:
            return '%d-%d' % (self.ranks, self.ncpu - 1)
        return str(self.ncpu - 1) if self.ncpu > 1 else None

    def start_agent(self, placement, threads, extra_env):
        """Start offcored for @placement ('agent' or 'dpu'); return the
        OC_AGENT address and the environment the ranks need."""
        log_path = os.path.join(self.tmp, 'agent-%d.log' % self.job)
        env = dict(os.environ, OC_LOG='agent:info,router:info', **extra_env)
        argv = [self.offcored, '--cluster-key', self.key, '--metrics', 'off',
                '--threads', str(threads)]
        cpus = self.agent_cpus(threads)
        if placement == 'agent':
            addr = 'unix:' + os.path.join(self.tmp, 'agent.sock')
            argv += ['--listen', addr]
            env['UCX_TLS'] = 'sm,self'
        else:
            addr = 'tcp:%s.2:%d' % (DPU_NET, DPU_PORT)
            argv += ['--listen', addr]
            env['UCX_TLS'] = 'tcp'
            env['UCX_NET_DEVICES'] = self.dpu_if
            argv = ['ip', 'netns', 'exec', self.netns] + argv
        if cpus and shutil.which('taskset'):
            argv = ['taskset', '-c', cpus] + argv
        f = open(log_path, 'w')
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env)
        f.close()
        self.procs.append(p)
        deadline = time.time() + 10
        while time.time() < deadline:
            with open(log_path) as lf:
                if 'ready' in lf.read():
                    return p, addr
            if p.poll() is not None:
                break
            time.sleep(0.05)
        p.kill()
        with open(log_path) as lf:
            tail = lf.read()[-600:]
        raise RuntimeError('offcored did not start:\n' + tail)

    def stop_agent(self, p):
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        self.procs.remove(p)

    # -- one app run --------------------------------------------------------
    def run_app(self, app, args, placement, threads=1, env_extra=None,
                timeout=600):
        """Run @app once; return its parsed JSON line (raises on failure)."""
        argv = ['mpirun', '--allow-run-as-root', '--oversubscribe', '-np',
                str(self.ranks)]
        if self.ncpu >= 2 * self.ranks:
            argv += ['--cpu-set', '0-%d' % (self.ranks - 1), '--bind-to',
                     'core']
        else:
            argv += ['--bind-to', 'none']
        res = self.run_command(argv + [self.app_bin(app)] + args, placement,
                               threads, env_extra, timeout, name=app)
        if res is None:
            raise RuntimeError('%s (%s) printed no JSON line' % (app,
                                                                 placement))
        if res.get('verified') is not True:
            raise RuntimeError('%s (%s) did not verify' % (app, placement))
        return res

    def run_command(self, argv, placement, threads=1, env_extra=None,
                    timeout=600, name=None):
        """Run a launcher command line (mpirun ... APP ARGS) once in
        @placement, with the agent started for it; return the app's JSON
        line (None when it printed none) with 'wall_seconds' added.  The
        OC_* and UCX_* settings reach the ranks through the environment,
        and through -x when the launcher is Open MPI's (other nodes).
        Raises RuntimeError when the command fails."""
        env_extra = dict(env_extra or {})
        agent = None
        oc_env = {'OC_PLACEMENT': 'inline', 'UCX_TLS': 'sm,self'}
        if placement in ('agent', 'dpu'):
            agent_env = {k.replace('OC_', 'OC_AGENT_', 1): v
                         for k, v in env_extra.items()
                         if k == 'OC_BUNDLE_SIZE'}
            agent, addr = self.start_agent(placement, threads, agent_env)
            self.job += 1
            jk = self.check([self.offcore, 'job-key', '--job', str(self.job),
                             '--cluster-key', self.key]).strip()
            oc_env = {'OC_PLACEMENT': 'agent', 'OC_AGENT': addr,
                      'OC_JOB': str(self.job), 'OC_JOB_KEY': jk,
                      'UCX_TLS': 'sm,self' if placement == 'agent' else 'tcp'}
            if placement == 'dpu':
                oc_env['UCX_NET_DEVICES'] = self.host_if
        oc_env.update(env_extra)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1',
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', **oc_env)
        argv = list(argv)
        mpi = next((i for i, a in enumerate(argv) if os.path.basename(a)
                    in ('mpirun', 'mpiexec', 'orterun')), None)
        if mpi is not None:   # after a `taskset -c LIST` prefix, say
            xs = []
            for k in oc_env:
                xs += ['-x', k]
            argv[mpi + 1:mpi + 1] = xs
        name = name or ' '.join(argv)[-200:]
        t0 = time.time()
        try:
            r = subprocess.run(argv, capture_output=True, text=True, env=env,
                               timeout=timeout)
        finally:
            if agent is not None:
                self.stop_agent(agent)
        wall = time.time() - t0
        if r.returncode != 0:
            raise RuntimeError('%s (%s) exited %d: %s' % (
                name, placement, r.returncode, r.stderr.strip()[-800:]))
        line = next((ln for ln in r.stdout.splitlines()
                     if ln.startswith('{')), None)
        if line is None:
            return None
        res = json.loads(line)
        res['wall_seconds'] = wall
        return res

    # -- transport bandwidth: ucx_perftest ---------------------------------
    def bandwidth(self, transport, size):
        """UCX active-message bandwidth, bytes/s, at @size-byte messages:
        'sm' between two processes on this node, 'tcp' over the DPU
        profile's veth link.  None and a reason when it cannot run."""
        perftest = shutil.which('ucx_perftest')
        if perftest is None:
            return None, 'no ucx_perftest (Debian: ucx-utils)'
        port = 13500 + os.getpid() % 1000 + (1 if transport == 'tcp' else 0)
        iters = '200000' if transport == 'sm' else '20000'
        common = ['-t', 'ucp_am_bw', '-s', str(size), '-n', iters,
                  '-p', str(port)]
        env = dict(os.environ)
        if transport == 'sm':
            env['UCX_TLS'] = 'sm,self'
            server = [perftest] + common
            client = [perftest, '127.0.0.1'] + common
            cenv = env
        else:
            env['UCX_TLS'] = 'tcp'
            senv = dict(env, UCX_NET_DEVICES=self.dpu_if)
            cenv = dict(env, UCX_NET_DEVICES=self.host_if)
            server = ['ip', 'netns', 'exec', self.netns, 'env',
                      'UCX_TLS=tcp', 'UCX_NET_DEVICES=' + self.dpu_if,
                      perftest] + common
            client = [perftest, DPU_NET + '.2'] + common
            env = senv
        s = subprocess.Popen(server, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=env, text=True)
        self.procs.append(s)
        try:
            out = ''
            for _ in range(50):  # the server needs a moment to listen
                time.sleep(0.1)
                c = subprocess.run(client, capture_output=True, text=True,
                                   env=cenv, timeout=120)
                out = c.stdout + c.stderr
                if c.returncode == 0:
                    break
            m = re.search(r'^Final:\s+(\S+\s+){5}(\S+)', out, re.M)
            if m is None:
                return None, 'ucx_perftest: ' + out.strip()[-200:]
            return float(m.group(2)) * 1024 * 1024, None
        finally:
            s.kill()
            s.wait()
            self.procs.remove(s)


# ---- the study -------------------------------------------------------------

def mc_ratios(inline_runs):
    """M:C from the inline runs: the app's own memory traffic against the
    bytes it routes, with nothing else on its cores.  Returns (from the
    LLC miss counters, from the apps' software count), each the median
    over the runs or None when some run lacks it."""
    def med(key):
        if not inline_runs or not all(key in r for r in inline_runs):
            return None
        return median([r[key] / max(1, r['counters']['wire_bytes_sent'])
                       for r in inline_runs])
    return med('llc_miss_bytes'), med('local_bytes')


def net_utilization(res, bandwidth):
    """Bundle bytes per second of run @res over the transport's measured
    bandwidth (bytes/s); None when either is unknown."""
    if not bandwidth or res.get('seconds', 0) <= 0:
        return None
    return res['counters']['wire_bytes_sent'] / res['seconds'] / bandwidth


def category(mc):
    if mc is None:
        return 'n/a'
    if mc >= MC_HOST:
        return 'host-dominated'
    if mc <= MC_COMM:
        return 'communication-dominated'
    return 'balanced'


class Progress:
    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.time()

    def step(self, what):
        self.done += 1
        el = time.time() - self.t0
        eta = el / self.done * (self.total - self.done)
        log('[%3d/%d %5.0fs, ~%.0fs left] %s' % (self.done, self.total, el,
                                                 eta, what))


def write_csv(path, header, rows):
    with open(path, 'w') as f:
        f.write(','.join(header) + '\n')
        for r in rows:
            f.write(','.join('' if v is None else str(v) for v in r) + '\n')


def plot(out, name, title, xlabel, csv, series, logx=False):
    """PNG and SVG of @csv: x in column 1, each (column, label) a line."""
    gp = shutil.which('gnuplot')
    if gp is None:
        return 'no gnuplot (Debian: gnuplot-nox): CSV only'
    made = []
    for term, ext in (('pngcairo size 800,500', 'png'),
                      ('svg size 800,500', 'svg')):
        target = os.path.join(out, '%s.%s' % (name, ext))
        lines = ', '.join("'%s' using 1:%d with linespoints title '%s'"
                          % (csv, col, label) for col, label in series)
        script = '\n'.join([
            'set terminal %s' % term, "set output '%s'" % target,
            "set datafile separator ','", 'set key autotitle columnhead',
            "set title '%s'" % title, "set xlabel '%s'" % xlabel,
            "set ylabel 'rate (ops/s)'", 'set yrange [0:*]', 'set grid',
            'set logscale x 2' if logx else 'set xtics 1',
            'plot ' + lines])
        r = subprocess.run([gp], input=script, capture_output=True,
                           text=True)
        if r.returncode != 0 and ext == 'png':
            # gnuplot without cairo: the plain png terminal
            script = script.replace('pngcairo', 'png')
            r = subprocess.run([gp], input=script, capture_output=True,
                               text=True)
        if r.returncode != 0:
            return 'gnuplot failed: ' + r.stderr.strip()[-200:]
        made.append(target)
    return None


def main():
    ap = argparse.ArgumentParser(
        description='The offcore placement study: every app inline, agent '
        'and dpu; speedup, network utilization, M:C ratio and category; '
        'sweeps of bundle size, buffer count and routing threads. '
        'See docs/evaluation.md.')
    ap.add_argument('--build', default='build', help='build directory')
    ap.add_argument('--out', default=None,
                    help='output directory (default BUILD/study)')
    ap.add_argument('--ranks', type=int, default=0,
                    help='ranks per run (default: half the cores, at least '
                    '2, so that the agent has the other half)')
    ap.add_argument('--repeats', type=int, default=3,
                    help='runs per case (the median is reported)')
    ap.add_argument('--apps', default=','.join(APP_ORDER),
                    help='comma-separated apps (default: all built)')
    ap.add_argument('--placements', default=','.join(PLACEMENTS),
                    help='comma-separated: inline, agent, dpu (default: all)')
    ap.add_argument('--size', choices=['quick', 'study', 'large'],
                    default='study', help='app sizes (default study)')
    ap.add_argument('--quick', action='store_true',
                    help='--size quick --repeats 1 and short sweeps (tests)')
    ap.add_argument('--sweeps', default='bundle,buffers,threads',
                    help="which sweeps, or 'none'")
    ap.add_argument('--sweep-app', default='histogram')
    ap.add_argument('--max-threads', type=int, default=0,
                    help='routing threads sweep up to this (default: the '
                    'cores the ranks leave, at least 2)')
    ap.add_argument('--spare-core', choices=['on', 'off'], default='on',
                    help='also run the spare-core emulation '
                    '(bench/run-spare-core.sh: ranks confined to core 0, '
                    'inline / agent-shared / agent-spare) and write '
                    'spare-core.jsonl (default on; needs 2+ cores)')
    ap.add_argument('-v', '--verbose', action='store_true')
    a = ap.parse_args()
    if a.quick:
        a.size, a.repeats = 'quick', 1
    if a.ranks == 0:
        a.ranks = max(2, (os.cpu_count() or 1) // 2)
    if a.ranks < 1 or a.repeats < 1:
        die('--ranks and --repeats must be at least 1')
    out = a.out or os.path.join(a.build, 'study')
    os.makedirs(out, exist_ok=True)
    if shutil.which('mpirun') is None:
        die('mpirun not found (Debian: openmpi-bin)')

    env = Env(a.build, a.ranks, a.verbose)
    status = 0

    # SIGTERM and SIGHUP (a lost terminal, `timeout`) end the run through
    # the finally below like ^C does, so that its namespace, veths, agents
    # and temp dir go; only SIGKILL leaves them (the next run removes them)
    def terminated(signum, frame):
        log('study: %s: stopping' % signal.Signals(signum).name)
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    try:
        status = study(a, env, out)
        if a.spare_core == 'on':
            status = spare_core(a, out) or status
    except KeyboardInterrupt:
        log('study: interrupted')
        status = 130
    finally:
        # a second signal must not cut the cleanup short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        env.cleanup()
        if env.removed:
            log('study: removed %s' % ', '.join(env.removed))
    sys.exit(status)


# The spare-core emulation's sizes per study size (SPARE_* of the script).
SPARE_SIZES = {
    'quick': {'SPARE_UPDATES': '200K', 'SPARE_ROWS': '20K',
              'SPARE_REQUESTS': '200K', 'SPARE_PARTICLES': '5K'},
    'study': {},
    'large': {'SPARE_UPDATES': '100M', 'SPARE_ROWS': '2M',
              'SPARE_REQUESTS': '50M', 'SPARE_PARTICLES': '200K'},
}


def spare_core(a, out):
    """Run bench/run-spare-core.sh (the same script as make bench) with this
    study's repeats and sizes; keep its summary lines in spare-core.jsonl and
    print them as a table.  Returns the script's status (77: skipped)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'run-spare-core.sh')
    env = dict(os.environ, SPARE_REPEATS=str(a.repeats),
               **SPARE_SIZES[a.size])
    apps = [x for x in a.apps.split(',') if x in
            ('histogram', 'transpose', 'index-gather', 'mcproxy')]
    if a.size == 'quick':  # the test suite: the two apps the bars name
        apps = [x for x in apps if x in ('histogram', 'transpose')]
    if not apps:
        return 0
    env['SPARE_APPS'] = ' '.join(apps)
    log('spare-core emulation: %s' % ', '.join(apps))
    p = subprocess.run(['sh', script, a.build], env=env, text=True,
                       stdout=subprocess.PIPE)
    if p.returncode == 77:
        log('spare-core emulation skipped (needs 2 cores and taskset)')
        return 0
    rows = [json.loads(l) for l in p.stdout.splitlines()
            if l.startswith('{"bench":"spare-core')]
    with open(os.path.join(out, 'spare-core.jsonl'), 'w') as f:
        for r in rows:
            f.write(json.dumps(r) + '\n')
    print('\nspare-core emulation (ranks on core 0; median of %d, '
          'slowest/fastest):' % a.repeats)
    print('%-13s %-13s %12s %8s %9s %9s' % ('app', 'case', 'rate', 'spread',
                                            'x inline', 'x shared'))
    for r in rows:
        if r['bench'] == 'spare-core':
            print('%-13s %-13s %12s %8s %9s %9s' % (
                r['app'], r['case'], fmt(r['rate'], '.4g'),
                fmt(r['spread'], '.2f'), fmt(r['ratio_over_inline'], '.2f'),
                fmt(r['ratio_over_agent_shared'], '.2f')))
    for r in rows:
        if r['bench'] == 'spare-core-cpu':
            print('%-13s %-13s library CPU %s ns/message (handlers %s)' % (
                r['app'], r['case'], fmt(r['lib_ns_per_msg'], '.1f'),
                fmt(r['handler_ns_per_msg'], '.1f')))
    return p.returncode


def study(a, env, out):
    apps, skipped = [], []
    for name in a.apps.split(','):
        name = name.strip()
        if name not in APPS and name not in APP_ORDER:
            die('unknown app %r (known: %s)' % (name, ', '.join(APP_ORDER)))
        if name not in APPS or env.app_bin(name) is None:
            skipped.append(name)
        else:
            apps.append(name)
    for name in skipped:
        log('study: %s is not built here; skipped' % name)
    placements = [p.strip() for p in a.placements.split(',')]
    for p in placements:
        if p not in PLACEMENTS:
            die('unknown placement %r (inline, agent, dpu)' % p)
    unavailable = {}
    if 'dpu' in placements:
        why = env.dpu_setup()
        if why:
            unavailable['dpu'] = why
            log('study: DPU profile unavailable: ' + why)

    sweeps = [] if a.sweeps == 'none' else a.sweeps.split(',')
    sizes = [4096, 65536] if a.quick else [4096, 8192, 16384, 32768, 65536]
    bufs = [1, 16] if a.quick else [1, 2, 4, 8, 16]
    maxth = a.max_threads or max(2, env.ncpu - a.ranks)
    threads = [1, maxth] if a.quick else list(range(1, maxth + 1))
    runnable = [p for p in placements if p not in unavailable]
    total = len(apps) * len(runnable) * a.repeats
    total += sum({'bundle': (3 if 'dpu' in runnable else 2) * len(sizes),
                  'buffers': 2 * len(bufs),
                  'threads': len(threads)}.get(s, 0) for s in sweeps)
    total += 2
    prog = Progress(total)
    failures = []

    # transport bandwidths, measured now, in this run
    bw = {}
    for tr, need in (('sm', True), ('tcp', 'dpu' in runnable)):
        if not need:
            continue
        b, why = env.bandwidth(tr, 8000)
        bw[tr] = b
        prog.step('transport bandwidth %s: %s' % (
            tr, '%.2f GB/s' % (b / 1e9) if b else why))

    # the table
    results = {}
    for app in apps:
        args = APPS[app][a.size]
        for p in runnable:
            for rep in range(a.repeats):
                try:
                    t0 = time.time()
                    res = env.run_app(app, args, p)
                    results.setdefault((app, p), []).append(res)
                    prog.step('%s %s run %d: %.3f s timed (%.1f s wall)' % (
                        app, p, rep + 1, res['seconds'], time.time() - t0))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(str(e))
                    prog.step('%s %s run %d FAILED: %s' % (app, p, rep + 1,
                                                            str(e)[:300]))

    rows = []
    for app in apps:
        inl = results.get((app, 'inline'), [])
        base = median([r['seconds'] for r in inl])
        mc_llc, mc_sw = mc_ratios(inl)
        mc = mc_llc if mc_llc is not None else mc_sw
        for p in placements:
            row = dict(app=app, placement=p, mc_llc=mc_llc, mc_software=mc_sw,
                       category=category(mc),
                       category_from=('llc' if mc_llc is not None else
                                      'software' if mc_sw is not None else ''))
            rs = results.get((app, p), [])
            if p in unavailable:
                row['note'] = 'unavailable: ' + unavailable[p]
            elif not rs:
                row['note'] = 'failed'
            else:
                secs = [r['seconds'] for r in rs]
                med = median(secs)
                mid = min(rs, key=lambda r: abs(r['seconds'] - med))
                wire = mid['counters']['wire_bytes_sent']
                tr_bw = bw.get('tcp' if p == 'dpu' else 'sm')
                row.update(runs=len(rs), seconds_median=med,
                           seconds_min=min(secs), seconds_max=max(secs),
                           rate=mid['rate'], rate_unit=mid.get('rate_unit', ''),
                           speedup_vs_inline=(base / med if inl else None),
                           wire_bytes=wire,
                           net_utilization=net_utilization(mid, tr_bw))
                if 'perf_unavailable' in mid:
                    row['perf_unavailable'] = mid['perf_unavailable']
            rows.append(row)
    header = ['app', 'placement', 'runs', 'seconds_median', 'seconds_min',
              'seconds_max', 'rate', 'rate_unit', 'speedup_vs_inline',
              'net_utilization', 'wire_bytes', 'mc_llc', 'mc_software',
              'category', 'category_from', 'note']
    write_csv(os.path.join(out, 'table.csv'), header,
              [[r.get(h) for h in header] for r in rows])
    print_table(rows, bw, a, env, out)

    # the sweeps
    sweep_app = a.sweep_app
    if sweeps and (sweep_app not in apps):
        log('study: sweep app %s not available; sweeps skipped' % sweep_app)
        sweeps = []
    sargs = APPS.get(sweep_app, {}).get(a.size, [])
    sweep_place = ['inline', 'agent'] if 'agent' in runnable else ['inline']
    for s in sweeps:
        if s == 'bundle':
            pts, var, xlabel = sizes, 'OC_BUNDLE_SIZE', 'bundle size (bytes)'
        elif s == 'buffers':
            pts, var, xlabel = bufs, 'OC_BUFFERS_PER_DEST', \
                'runtime buffers per destination'
        elif s == 'threads':
            pts, var, xlabel = threads, None, 'agent routing threads'
        else:
            die("unknown sweep %r (bundle, buffers, threads)" % s)
        places = ['agent'] if s == 'threads' else sweep_place
        if s == 'bundle' and 'dpu' in runnable:
            places = places + ['dpu']  # "remote": where bundles cross TCP
        if s == 'threads' and 'agent' not in runnable:
            continue
        srows = []
        for x in pts:
            row = [x]
            for p in places:
                try:
                    res = env.run_app(
                        sweep_app, sargs, p,
                        threads=x if s == 'threads' else 1,
                        env_extra={var: str(x)} if var else None)
                    row.append(res['rate'])
                    prog.step('sweep %s=%s %s %s: %.4g %s' % (
                        s, x, sweep_app, p, res['rate'],
                        res.get('rate_unit', 'ops/s')))
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(str(e))
                    row.append(None)
                    prog.step('sweep %s=%s %s FAILED: %s' % (s, x, p,
                                                           str(e)[:300]))
            srows.append(row)
        csv = os.path.join(out, 'sweep-%s.csv' % s)
        write_csv(csv, [s] + ['%s_%s_rate' % (sweep_app, p) for p in places],
                  srows)
        why = plot(out, 'sweep-%s' % s,
                   '%s, %d ranks: %s' % (sweep_app, a.ranks, xlabel), xlabel,
                   csv, [(i + 2, p) for i, p in enumerate(places)],
                   logx=(s != 'threads'))
        print('\nsweep %s (%s, rate in ops/s): %s' % (s, sweep_app, csv))
        for r in srows:
            print('  %-8s %s' % (r[0], '  '.join(
                '%s %s' % (p, fmt(v, '.4g')) for p, v in zip(places, r[1:]))))
        if why:
            print('  plots: ' + why)
        else:
            print('  plots: %s/sweep-%s.png, .svg' % (out, s))

    if failures:
        print('\nFAILED: %d run(s); first: %s' % (len(failures), failures[0]))
        return 1
    print('\nstudy: every run verified; results in %s' % out)
    return 0


def print_table(rows, bw, a, env, out):
    print('offcore placement study: %d ranks, %d run(s) per case, %d cores,'
          ' sizes "%s"' % (a.ranks, a.repeats, env.ncpu, a.size))
    for tr, b in bw.items():
        print('transport bandwidth (ucx_perftest ucp_am_bw, 8000 B): %s %s'
              % (tr, '%.2f GB/s' % (b / 1e9) if b else 'n/a'))
    print()
    hdr = ('%-13s %-9s %9s %8s %12s %9s %8s %8s  %s' % (
        'app', 'placement', 'seconds', 'speedup', 'rate', 'net util',
        'M:C llc', 'M:C sw', 'category'))
    print(hdr)
    print('-' * len(hdr))
    notes = set()
    for r in rows:
        if r.get('note'):
            print('%-13s %-9s %s' % (r['app'], r['placement'], r['note']))
            continue
        util = r.get('net_utilization')
        print('%-13s %-9s %9s %7sx %12s %8s%% %8s %8s  %s%s' % (
            r['app'], r['placement'], fmt(r['seconds_median'], '.3f'),
            fmt(r['speedup_vs_inline']), fmt(r['rate'], '.4g'),
            fmt(util * 100 if util is not None else None, '.2f'),
            fmt(r['mc_llc']), fmt(r['mc_software']), r['category'],
            ' (est.)' if r['category_from'] == 'software' else ''))
        if 'perf_unavailable' in r:
            notes.add(r['perf_unavailable'])
    if notes:
        print('\nM:C llc n/a: the last-level-cache counters cannot be read '
              'here: %s.' % '; '.join(sorted(notes)))
        print("Categories marked (est.) come from the apps' software count "
              'of the bytes their own work touches (local_bytes), an upper '
              'bound of the memory traffic: see docs/evaluation.md.')
    print('\ntable: %s/table.csv' % out)


if __name__ == '__main__':
    main()
