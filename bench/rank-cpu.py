#!/usr/bin/env python3
"""rank-cpu.py — instructions the ranks spend inside liboffcore per message,
counted by callgrind (deterministic: valid on a loaded machine).

Each app runs with two ranks under `valgrind --tool=callgrind` in these
cases: inline, agent placement in stream mode, agent placement in per-dest
mode, both on the rank<->agent channel in use by default (shared memory,
OC_AGENT_CHANNEL=shm), and stream mode over UCX (agent-stream-ucx, what the
shared-memory channel replaces on one host); the agent, `offcored`, runs
natively.  From each rank's call graph
it sums the inclusive cost of the application's calls into liboffcore's
data-path API (oc_send, oc_send_burst, oc_send_many, oc_poll, oc_flush;
oc_quiesce and its parts separately: that is mostly waiting for the other
rank, so it is timing-dependent) and subtracts the application's own
handlers, which liboffcore calls (a handler's replies count as the
handler's, as with OC_APP_CPU=1).  One JSON line per app and case:
  {"bench":"rank-cpu","app":...,"mode":"inline"|"agent-stream"|"agent-per-dest"
   |"agent-stream-ucx"|"agent-per-dest-ucx","channel":"shm"|"ucx"|null,
   "instr_per_msg":<send+poll>,"send_instr_per_msg":..,"poll_instr_per_msg":..,
   "quiesce_instr_per_msg":..,"transport_copy_instr_per_msg":..,
   "agent_route_instr_per_msg":..,"msgs":..,"verified":true,
   "ratio_over_inline":..}
Agent modes run twice: ranks under callgrind (the figures above), then the
agent under callgrind with the ranks native: its routing per message (the
inclusive cost of oc__router_route_all: validation, sorting, hand-off and
UCX send or the write into a rank's ring; plus oc__router_shm_poll, its
reading of the ranks' rings; not its idle polling).  UCX copies bundles with rep movsb, which
callgrind counts once per byte: *_copy_instr_per_msg says how much of a
figure that is (bytes, not work a CPU does one at a time).
Exits non-zero when a run fails or does not verify; no target.

Usage: bench/rank-cpu.py --build build [--apps histogram,transpose]
       [--size small]  (--help)
Standard library only.
"""

import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

APPS = {
    'histogram': ['--updates', '1M', '--table', '10K'],
    'index-gather': ['--requests', '500K', '--table', '10K'],
    'transpose': ['--rows', '50K', '--degree', '16'],
    'mcproxy': ['--particles', '20K', '--cycles', '1'],
}
QUICK = {
    'histogram': ['--updates', '50K', '--table', '1K'],
    'index-gather': ['--requests', '50K', '--table', '1K'],
    'transpose': ['--rows', '5K', '--degree', '8'],
    'mcproxy': ['--particles', '2K', '--cycles', '1'],
}
MODES = ['inline', 'agent-stream', 'agent-per-dest', 'agent-stream-ucx']
ALL_MODES = MODES + ['agent-per-dest-ucx']

SEND = {'oc_send', 'oc_send_burst', 'oc_send_many', 'oc_flush'}
POLL = {'oc_poll'}
QUIESCE = {'oc_quiesce', 'oc_quiesce_start', 'oc_quiesce_test'}
# Call chains this deep tell a handler run by oc_poll from one run by
# oc_quiesce (handler <- deliver <- progress <- quiesce_test <- quiesce).
SEPARATE = 6


def die(msg, code=2):
    print('rank-cpu.py: ' + msg, file=sys.stderr)
    sys.exit(code)


def parse_callgrind(path, app_obj, lib_obj):
    """Sum the inclusive Ir of call edges app -> liboffcore API (by callee
    name) and liboffcore -> app (the handlers).  Returns a dict."""
    names = {'ob': {}, 'fn': {}}
    out = {'send': 0, 'poll': 0, 'quiesce': 0, 'handler': 0, 'handler_q': 0,
           'copy': 0}
    copy_fn = False
    cur_ob = cur_fn = None
    call_ob = call_fn = None
    pending = False  # the next cost line is a call's inclusive cost
    ref = re.compile(r'\((\d+)\)(?: (.*))?$')

    def name(kind, v):
        m = ref.match(v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), v)

    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if pending:
                pending = False
                parts = line.split()
                if len(parts) < 2:
                    continue
                cost = int(parts[1])
                cob = call_ob if call_ob is not None else cur_ob
                # --separate-callers: "callee'caller'caller's caller..."
                chain = (call_fn or '').split("'")
                callee = chain[0]
                if cur_ob and cob and cur_ob.endswith(app_obj) and \
                        os.path.basename(cob).startswith(lib_obj):
                    if callee in SEND:
                        out['send'] += cost
                    elif callee in POLL:
                        out['poll'] += cost
                    elif callee in QUIESCE:
                        out['quiesce'] += cost
                elif cur_ob and cob and cob.endswith(app_obj) and \
                        os.path.basename(cur_ob).startswith(lib_obj) and \
                        not callee.startswith('oc_'):
                    # the app's handlers; not the bootstrap's all-gather
                    # (oc__mpi_allgather, called from oc_init/oc_finalize)
                    if any(c in QUIESCE for c in chain[1:]):
                        out['handler_q'] += cost
                    else:
                        out['handler'] += cost
                call_ob = call_fn = None
                continue
            if copy_fn and line[:1].isdigit() or copy_fn and line[:1] in '+-*':
                parts = line.split()
                if len(parts) >= 2:
                    out['copy'] += int(parts[1])
                continue
            if line.startswith('ob='):
                cur_ob = name('ob', line[3:])
            elif line.startswith('fn='):
                cur_fn = name('fn', line[3:])
                call_ob = call_fn = None
                # UCX's copy into shared memory: rep movsb, which callgrind
                # counts once per byte
                copy_fn = cur_fn.split("'")[0] == 'ucp_dt_contig_pack'
            elif line.startswith('cob='):
                call_ob = name('ob', line[4:])
            elif line.startswith('cfn='):
                call_fn = name('fn', line[4:])
            elif line.startswith('calls='):
                pending = True
    del cur_fn
    return out


AGENT_FNS = ('oc__router_route_all', 'oc__router_shm_poll')


def parse_agent(path):
    """The agent's routing: inclusive Ir of oc__router_route_all (validate,
    sort, hand-off and send; not the idle polling), and UCX's copy."""
    names = {}
    ref = re.compile(r'\((\d+)\)(?: (.*))?$')
    route = copy = 0
    cur_fn = call_fn = None
    pending = False
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if pending:
                pending = False
                parts = line.split()
                if call_fn in AGENT_FNS and cur_fn not in AGENT_FNS and \
                        len(parts) >= 2:
                    route += int(parts[1])
                continue
            if line.startswith('fn=') or line.startswith('cfn='):
                k = 3 if line[0] == 'f' else 4
                m = ref.match(line[k:])
                v = line[k:]
                if m:
                    if m.group(2) is not None:
                        names[m.group(1)] = m.group(2)
                    v = names.get(m.group(1), v)
                if k == 3:
                    cur_fn = v
                else:
                    call_fn = v
            elif line.startswith('calls='):
                pending = True
            elif cur_fn == 'ucp_dt_contig_pack' and line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2:
                    copy += int(parts[1])
    return route, copy


class Runner:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.tmp = tempfile.mkdtemp(prefix='oc-rankcpu-')
        atexit.register(shutil.rmtree, self.tmp, True)  # left behind otherwise
        self.key = os.path.join(self.tmp, 'key')
        with open(self.key, 'w') as f:
            subprocess.run([self.bin('src/tools/offcore'), 'keygen'],
                           stdout=f, check=True)
        os.chmod(self.key, 0o600)
        self.job = 1
        self.agent = None

    def bin(self, rel):
        return os.path.join(self.build, rel)

    def app_bin(self, app):
        d = self.bin('apps/' + app)
        return d if os.path.isfile(d) else os.path.join(d, app)

    def start_agent(self, callgrind=None):
        sock = os.path.join(self.tmp, 'agent.sock')
        log = open(os.path.join(self.tmp, 'agent.log'), 'w')
        pre = (['valgrind', '--tool=callgrind', '--quiet',
                '--callgrind-out-file=' + callgrind] if callgrind else [])
        self.agent = subprocess.Popen(
            pre + [self.bin('src/agent/offcored'), '--listen', 'unix:' + sock,
             '--cluster-key', self.key, '--metrics', 'off', '--threads', '1'],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(log.name) as f:
                if 'ready' in f.read():
                    return sock
            if self.agent.poll() is not None:
                break
            time.sleep(0.05)
        die('offcored did not start: ' + open(log.name).read())

    def stop_agent(self):
        if self.agent is not None:
            self.agent.terminate()
            self.agent.wait(timeout=30)
            self.agent = None

    def run(self, app, args, mode, agent_cg=None):
        """Ranks under callgrind; or, with @agent_cg (a file), the agent
        under callgrind and the ranks native."""
        self.job += 1
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1',
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1', UCX_TLS='sm,self',
                   OC_APP_CPU='0')
        xs = ['-x', 'UCX_TLS']
        if mode == 'inline':
            env['OC_PLACEMENT'] = 'inline'
            xs += ['-x', 'OC_PLACEMENT']
        else:
            sock = self.start_agent(agent_cg)
            key = subprocess.run(
                [self.bin('src/tools/offcore'), 'job-key', '--job',
                 str(self.job), '--cluster-key', self.key],
                stdout=subprocess.PIPE, check=True, text=True).stdout.strip()
            m = mode[len('agent-'):]
            env.update(OC_PLACEMENT='agent', OC_AGENT='unix:' + sock,
                       OC_JOB=str(self.job), OC_JOB_KEY=key,
                       OC_AGENT_MODE=m[:-4] if m.endswith('-ucx') else m,
                       OC_AGENT_CHANNEL='ucx' if m.endswith('-ucx') else 'shm')
            xs += ['-x', 'OC_PLACEMENT', '-x', 'OC_AGENT', '-x', 'OC_JOB',
                   '-x', 'OC_JOB_KEY', '-x', 'OC_AGENT_MODE',
                   '-x', 'OC_AGENT_CHANNEL']
        prefix = os.path.join(self.tmp, 'cg.%s.%s' % (app, mode))
        cg = ['valgrind', '--tool=callgrind', '--quiet',
              '--separate-callers=%d' % SEPARATE,
              '--callgrind-out-file=' + prefix + '.%p']
        cmd = (['mpirun', '--allow-run-as-root', '--oversubscribe',
                '--bind-to', 'none', '-np', '2'] + xs +
               ([] if agent_cg else cg) + [self.app_bin(app)] + args)
        try:
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               timeout=600)
        finally:
            self.stop_agent()
        line = next((l for l in p.stdout.splitlines()
                     if l.startswith('{')), None)
        res = json.loads(line) if line else None
        ok = p.returncode == 0 and res is not None and res.get('verified')
        if not ok:
            sys.stderr.write(p.stdout + p.stderr)
            return None
        if agent_cg:
            return res, None
        tot = {'send': 0, 'poll': 0, 'quiesce': 0, 'handler': 0,
               'handler_q': 0, 'copy': 0}
        files = [f for f in os.listdir(self.tmp)
                 if f.startswith(os.path.basename(prefix) + '.')]
        for f in files:
            r = parse_callgrind(os.path.join(self.tmp, f),
                                os.path.basename(self.app_bin(app)),
                                'liboffcore.so')
            for k in tot:
                tot[k] += r[k]
            if not os.environ.get("RANK_CPU_KEEP"):
                os.unlink(os.path.join(self.tmp, f))
        if len(files) != 2:
            die('expected 2 callgrind files for %s %s, found %d' %
                (app, mode, len(files)))
        return res, tot


def main():
    ap = argparse.ArgumentParser(
        description='Instructions per message the ranks spend in liboffcore '
                    '(callgrind), inline vs agent stream vs agent per-dest.')
    ap.add_argument('--build', required=True, help='meson build directory')
    ap.add_argument('--apps', default='histogram,transpose',
                    help='comma-separated: ' + ','.join(APPS))
    ap.add_argument('--modes', default=','.join(MODES),
                    help='comma-separated: ' + ','.join(ALL_MODES))
    ap.add_argument('--quick', action='store_true',
                    help='tiny sizes (for the test suite)')
    ap.add_argument('--no-agent', dest='agent', action='store_false',
                    help='skip the run with the agent under callgrind '
                         '(agent_route_instr_per_msg: its routing per '
                         'message, ranks native)')
    a = ap.parse_args()
    for tool in ('valgrind', 'mpirun'):
        if subprocess.run(['sh', '-c', 'command -v ' + tool],
                          stdout=subprocess.DEVNULL).returncode != 0:
            print('rank-cpu.py: %s not found: skipped' % tool,
                  file=sys.stderr)
            return 77
    r = Runner(a.build)
    failed = 0
    sizes = QUICK if a.quick else APPS
    for app in a.apps.split(','):
        if app not in APPS:
            die('unknown app %s (%s)' % (app, ','.join(APPS)))
        base = None
        for mode in a.modes.split(','):
            if mode not in ALL_MODES:
                die('unknown mode %s (%s)' % (mode, ','.join(ALL_MODES)))
            got = r.run(app, sizes[app], mode)
            if got is None:
                print('rank-cpu.py: %s (%s) failed or did not verify' %
                      (app, mode), file=sys.stderr)
                failed += 1
                continue
            res, t = got
            msgs = res['counters']['msgs_sent']
            agent = {}
            if mode != 'inline' and a.agent:
                f = os.path.join(r.tmp, 'cg.agent')
                got2 = r.run(app, sizes[app], mode, agent_cg=f)
                if got2 is None:
                    failed += 1
                else:
                    route, copy = parse_agent(f)
                    os.unlink(f)
                    m2 = got2[0]['counters']['msgs_sent']
                    agent = {'agent_route_instr_per_msg': round(route / m2, 2),
                             'agent_copy_instr_per_msg': round(copy / m2, 2)}
            # The figure: sends and polls, handlers out.  oc_quiesce is
            # apart: mostly waiting for the other rank (timing, not work).
            send = t['send']
            poll = t['poll'] - t['handler']
            quiesce = t['quiesce'] - t['handler_q']
            per = (send + poll) / msgs
            if mode == 'inline':
                base = per
            print(json.dumps({
                'bench': 'rank-cpu', 'app': app, 'mode': mode,
                'channel': None if mode == 'inline' else
                           'ucx' if mode.endswith('-ucx') else 'shm',
                'instr_per_msg': round(per, 2),
                'send_instr_per_msg': round(send / msgs, 2),
                'poll_instr_per_msg': round(poll / msgs, 2),
                'quiesce_instr_per_msg': round(quiesce / msgs, 2),
                'transport_copy_instr_per_msg': round(t['copy'] / msgs, 2),
                'handler_instr_per_msg':
                    round((t['handler'] + t['handler_q']) / msgs, 2),
                'msgs': msgs, 'verified': True, **agent,
                'ratio_over_inline': round(per / base, 3) if base else None,
                'counter': 'callgrind Ir (rep movsb: 1 per byte), inclusive: '
                           'app->liboffcore send+poll calls minus the '
                           'handlers they run; 2 ranks summed'}),
                flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
