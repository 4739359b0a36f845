#!/usr/bin/env python3
"""advise.py — `offcore advise -- LAUNCHER APP ARGS...`: will offload pay?
(`offcore advise --tts FILE`: will offloading a collective pay? advise_tts.py)

Runs the application (an offcore app: it prints the JSON line of
apps/common) inline and with the agent (offcored) on the cores the ranks
leave, and with --dpu in the DPU profile too (an agent in its own network
namespace over veth and TCP), interleaving the repeats; measures speedup,
network utilization and the memory-to-communication (M:C) ratio (LLC miss
counters through perf_event_open when the machine has them, else the
apps' software estimate, and says which); prints a recommendation —
inline, agent on spare host cores, or agent on a DPU — with the numbers
behind it and the Buddy paper's category.

The machinery (starting agents, keys, the DPU namespace, ucx_perftest
bandwidths, M:C, categories) is bench/study.py's; this file adds the
command-line front end and the decision rule (decide(), unit-tested in
tests/doctor/test_advise.py).  The `offcore` CLI runs it.
"""

import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# installed: study.py beside this file; in the source tree: bench/
sys.path[:0] = [HERE, os.path.join(HERE, '..', '..', 'bench')]
import study  # noqa: E402  (the placement study's machinery)
import advise_tts  # noqa: E402  (--tts: coll_bench's time-to-solution rows)

# A placement "clearly" beats inline when its median is this much faster
# and even its slowest run beats the fastest inline run: this machine's
# run-to-run spread is several percent (docs/facts.md), so smaller gains are
# noise.
GAIN = 1.05
# A DPU profile within this fraction of the host agent's speedup is
# preferred: it gives the host's cores back to the application.
DPU_PREFERENCE = 0.95
NET_BUSY = 0.5
# Between nodes the agents send each other runs per (source, destination)
# rank: an n-byte message costs the wire what inline's fixed bundles cost
# (docs/placement.md, rule 3), so the message size adds no wire caveat to
# an agent verdict (before the runs it did: an 8-byte header a message).


def decide(agent=None, dpu=None, mc=None, mc_source=None, net_util=None,
           spare_cores=0, inline_seconds=None, msg_bytes=None):
    """The recommendation.

    agent, dpu: None when not measured, else dict(speedup=float,
    clear=bool, and optionally seconds=[every run]) against inline, whose
    runs are inline_seconds.  mc: the M:C ratio (None unknown) from
    mc_source ('llc' or 'software').  net_util: the inline run's fraction
    of the transport's bandwidth.  spare_cores: cores the ranks leave for
    the agent.  msg_bytes: the app's mean message (payload bytes);
    reported, not weighed (see the note above decide).  Returns dict(recommendation='inline'|'agent'|'dpu',
    category=..., reasons=[...]).
    """
    cat = study.category(mc)
    reasons = []
    est = ' (software estimate)' if mc_source == 'software' else ''
    if mc is not None:
        reasons.append('M:C %.2f%s: %s (Buddy: host-dominated apps, M:C >= '
                       '%.2f, gained from offload; communication-dominated, '
                       '<= %.2f, did not)' % (mc, est, cat, study.MC_HOST,
                                              study.MC_COMM))
    a_ok = agent is not None and agent['clear']
    d_ok = dpu is not None and dpu['clear']
    if d_ok and (not a_ok or dpu['speedup'] >= DPU_PREFERENCE *
                 agent['speedup']):
        rec = 'dpu'
        reasons.append('the DPU profile ran %.2fx inline%s: it gains and '
                       'gives the host cores back to the application' % (
                           dpu['speedup'], '' if agent is None else
                           ' (host agent %.2fx)' % agent['speedup']))
    elif a_ok:
        rec = 'agent'
        reasons.append('the agent on spare host cores ran %.2fx inline' %
                       agent['speedup'])
        if dpu is not None:
            reasons.append('the DPU profile gained less (%.2fx)' %
                           dpu['speedup'])
        elif cat == 'host-dominated':
            reasons.append('a DPU would likely gain too (host-dominated); '
                           'measure it with --dpu')
    else:
        rec = 'inline'
        if agent is not None:
            reasons.append('the agent ran %.2fx inline: no clear gain (needs'
                           ' >= %.2fx, every run faster)' % (agent['speedup'],
                                                             GAIN))
            secs = agent.get('seconds')
            if secs and inline_seconds and min(secs) < max(inline_seconds):
                reasons.append('the runs overlap (inline %.3g-%.3g s, agent '
                               '%.3g-%.3g s): more --repeats, or a quieter '
                               'machine, may separate them' % (
                                   min(inline_seconds), max(inline_seconds),
                                   min(secs), max(secs)))
        if dpu is not None:
            reasons.append('the DPU profile ran %.2fx inline' %
                           dpu['speedup'])
        if cat == 'communication-dominated':
            reasons.append('routing is not what holds the ranks back: '
                           'offload moves the work without removing it')
        if spare_cores <= 0:
            reasons.append('the agent had no core of its own (the ranks use '
                           'every core); with spare cores or a DPU the '
                           'answer may differ%s' % (
                               ': M:C predicts a gain there'
                               if cat == 'host-dominated' else ''))
    if net_util is not None and net_util >= NET_BUSY:
        reasons.append('the network is %.0f%% busy: offload cannot add '
                       'bandwidth' % (net_util * 100))
    return dict(recommendation=rec, category=cat, reasons=reasons)


NAMES = {'inline': 'inline (no agent: the ranks route their own messages)',
         'agent': 'agent on spare host cores (offcored beside the ranks)',
         'dpu': 'agent on a DPU (offcored on the DPU cores, over the '
                'network)'}


class AdviseEnv(study.Env):
    """The study's environment; binaries from the build tree when run
    there, else from PATH (installed).  When the command confines its ranks
    (taskset -c LIST ...), the agent gets the other cores."""

    rank_cpus = None

    def agent_cpus(self, threads):
        if self.rank_cpus:
            rest = [c for c in range(self.ncpu) if c not in self.rank_cpus]
            if rest:
                return ','.join(str(c) for c in rest)
        return super().agent_cpus(threads)

    def bin(self, rel):
        p = os.path.join(self.build, rel)
        if os.access(p, os.X_OK):
            return p
        found = shutil.which(os.path.basename(rel), path=os.pathsep.join([
            os.environ.get('PATH', ''), '/usr/local/sbin', '/usr/sbin']))
        if found is None:
            study.die('%s not found (build tree %s, nor on PATH)' % (
                os.path.basename(rel), self.build))
        return found


def cpu_list(spec):
    """'0-2,5' -> {0, 1, 2, 5}; None when it does not parse."""
    cpus = set()
    try:
        for part in spec.split(','):
            lo, _, hi = part.partition('-')
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return None
    return cpus


def taskset_cpus(cmd):
    """The cores a `taskset -c LIST ...` prefix confines the job to."""
    if len(cmd) > 2 and os.path.basename(cmd[0]) == 'taskset':
        for i, a in enumerate(cmd[1:-1], start=1):
            if a in ('-c', '--cpu-list'):
                return cpu_list(cmd[i + 1])
    return None


def launcher(cmd):
    """The command without a `taskset [options] LIST` prefix."""
    if cmd and os.path.basename(cmd[0]) == 'taskset':
        i = 1
        while i < len(cmd) and cmd[i].startswith('-'):
            i += 2 if cmd[i] in ('-c', '--cpu-list') else 1
        if i < len(cmd) and not any(c in ('-c', '--cpu-list')
                                    for c in cmd[1:i]):
            i += 1   # taskset MASK COMMAND
        return cmd[i:]
    return cmd


def ranks_of(cmd):
    cmd = launcher(cmd)
    for i, a in enumerate(cmd[:-1]):
        if a in ('-np', '-n', '--np', '-c'):
            try:
                return int(cmd[i + 1])
            except ValueError:
                pass
    return None


def summarize(runs, inline_secs):
    secs = [r['seconds'] for r in runs]
    med = study.median(secs)
    base = study.median(inline_secs)
    return dict(speedup=base / med if med > 0 else None,
                clear=(base / med >= GAIN and max(secs) < min(inline_secs)),
                seconds=secs, median=med)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if '--' not in argv:
        own, cmd = argv, []
    else:
        i = argv.index('--')
        own, cmd = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(
        prog='offcore advise',
        usage='offcore advise [options] -- LAUNCHER APP [ARGS...]',
        description='Run an offcore application inline, with the agent on '
        'the cores its ranks leave (and with --dpu in the DPU profile), and '
        'recommend a placement from the measured speedup, network '
        'utilization and M:C ratio.  Example: offcore advise -- mpirun -np '
        '2 /usr/libexec/offcore/histogram --updates 40M (the package puts '
        'the apps there; a build tree has them in build/apps).  A command that starts with taskset -c '
        'LIST confines the ranks to LIST; the agent then runs on the other '
        'cores.  With --tts FILE it runs nothing: it reads coll_bench\'s '
        'time-to-solution rows and says per message size whether '
        'offloading the collective to the agent pays for the application\'s '
        'compute per step.')
    ap.add_argument('--repeats', type=int, default=3,
                    help='runs per placement, interleaved (default 3)')
    ap.add_argument('--ranks', type=int, default=0,
                    help='ranks the command starts (default: its -np/-n)')
    ap.add_argument('--threads', type=int, default=1,
                    help='agent routing threads (default 1)')
    ap.add_argument('--dpu', action='store_true',
                    help='also measure the DPU profile (needs root: a '
                    'network namespace and a veth pair)')
    ap.add_argument('--build', default=os.environ.get('OC_BUILD_DIR', ''),
                    help='build tree holding offcored (default: the one '
                    'the offcore CLI ran from, else PATH)')
    ap.add_argument('--json', action='store_true',
                    help='print one JSON object instead of the report')
    ap.add_argument('--timeout', type=float, default=600,
                    help='seconds per run (default 600)')
    ap.add_argument('-v', '--verbose', action='store_true')
    ap.add_argument('--tts', metavar='FILE',
                    help='coll_bench --tts rows (JSON lines; the output of '
                    'bench/run-coll-bench.sh will do; - for stdin): '
                    'advise on offloading the collective, run nothing')
    ap.add_argument('--compute-us', type=float, metavar='US',
                    help='with --tts: the application\'s compute per step '
                    '(us) beside one collective (default: every measured '
                    'compute)')
    ap.add_argument('--compute-factor', type=float, metavar='F',
                    help='with --tts: that compute as a factor of Open '
                    'MPI\'s allreduce time at each size')
    ap.add_argument('--op', default='allreduce',
                    help='with --tts: the collective (default allreduce)')
    a = ap.parse_args(own)
    if a.tts is not None:
        if cmd:
            ap.error('--tts runs nothing: no command after --')
        return tts_main(ap, a)
    if a.compute_us is not None or a.compute_factor is not None:
        ap.error('--compute-us and --compute-factor go with --tts')
    if not cmd:
        ap.error('no command: offcore advise [options] -- LAUNCHER APP ARGS')
    if a.repeats < 1:
        ap.error('--repeats must be at least 1')
    if shutil.which(cmd[0]) is None and not os.access(cmd[0], os.X_OK):
        study.die('%s: command not found' % cmd[0])
    ranks = a.ranks or ranks_of(cmd) or 1
    env = AdviseEnv(a.build or '.', ranks, a.verbose)
    env.rank_cpus = taskset_cpus(cmd)
    try:
        return advise(a, env, cmd, ranks)
    except RuntimeError as e:
        study.log('offcore advise: ' + str(e))
        return 1
    finally:
        env.cleanup()


def tts_main(ap, a):
    """--tts FILE: the collective's verdict per size; 2 on bad input."""
    if a.compute_us is not None and a.compute_factor is not None:
        ap.error('--compute-us or --compute-factor, not both')
    for v, n in ((a.compute_us, '--compute-us'),
                 (a.compute_factor, '--compute-factor')):
        if v is not None and not advise_tts.LOW <= v <= advise_tts.HIGH:
            ap.error('%s must be a positive number' % n)
    try:
        if a.tts == '-':
            data, name = sys.stdin.buffer.read(), 'stdin'
        else:
            with open(a.tts, 'rb') as f:
                data, name = f.read(), a.tts
        rows = advise_tts.parse(data, name)
    except OSError as e:
        study.log('offcore advise: %s: %s' % (a.tts, e.strerror or e))
        return 2
    except advise_tts.TTSError as e:
        study.log('offcore advise: %s' % e)
        return 2
    res = advise_tts.advise(rows, compute_us=a.compute_us,
                            compute_factor=a.compute_factor, op=a.op)
    if a.json:
        print(json.dumps(res))
    else:
        print('\n'.join(advise_tts.report(res, name)))
    return 0


BANDWIDTH_TRIES = 3


def best_bandwidth(env, transport, tries=BANDWIDTH_TRIES):
    """The transport's bandwidth: the best of @tries measurements.  Other
    work on the host only ever lowers a run (one baseline swung 1.01 to
    20.22 GB/s between two runs), so the best is the nearest to the limit.
    Returns (bytes/s, None) or (None, why)."""
    best, why = None, None
    for _ in range(tries):
        b, w = env.bandwidth(transport, 8000)
        if b is None:
            why = w
        elif best is None or b > best:
            best = b
    return (best, None) if best is not None else (None, why)


def plausible(util, placement, notes):
    """A utilization over 100% means the baseline was measured low (a busy
    host), not a network busier than full: n/a, with a note."""
    if util is None or util <= 1.0:
        return util
    notes.append('network utilization n/a for %s: the app moved %.0f%% of '
                 'the measured baseline, which was therefore measured low '
                 '(other work on the host); rerun on a quiet host'
                 % (placement, util * 100))
    return None


def advise(a, env, cmd, ranks):
    places = ['inline', 'agent']
    notes = []
    if a.dpu:
        why = env.dpu_setup()
        if why:
            notes.append('DPU profile not measured: ' + why)
        else:
            places.append('dpu')
    bw = {}
    for tr in ['sm'] + (['tcp'] if 'dpu' in places else []):
        b, why = best_bandwidth(env, tr)
        bw[tr] = b
        if b is None:
            notes.append('network utilization n/a: ' + why)
    runs = {p: [] for p in places}
    for rep in range(a.repeats):      # interleaved: drift hits all alike
        for p in places:
            res = env.run_command(cmd, p, threads=a.threads,
                                  timeout=a.timeout)
            if res is None:
                raise RuntimeError('%s printed no JSON line: offcore advise '
                                   'needs an offcore app (apps/)' % cmd[-1])
            if res.get('verified') is False:
                raise RuntimeError('%s (%s) did not verify its result' % (
                    res.get('app', cmd[-1]), p))
            runs[p].append(res)
            study.log('advise: %s run %d: %.3f s timed' % (p, rep + 1,
                                                           res['seconds']))
    inl = runs['inline']
    inline_secs = [r['seconds'] for r in inl]
    mc_llc, mc_sw = study.mc_ratios(inl)
    mc, src = (mc_llc, 'llc') if mc_llc is not None else (mc_sw, 'software')
    if mc is None:
        src = None
    perf_why = next((r['perf_unavailable'] for r in inl
                     if 'perf_unavailable' in r), None)
    mid = min(inl, key=lambda r: abs(r['seconds'] -
                                     study.median(inline_secs)))
    util = plausible(study.net_utilization(mid, bw.get('sm')), 'inline',
                     notes)
    res = {p: summarize(runs[p], inline_secs) for p in places if p != 'inline'}
    for p, v in res.items():   # the transport each placement's bundles use
        mid_p = min(runs[p], key=lambda r: abs(r['seconds'] - v['median']))
        v['net_utilization'] = plausible(study.net_utilization(
            mid_p, bw.get('tcp' if p == 'dpu' else 'sm')), p, notes)
    spare = env.ncpu - (len(env.rank_cpus) if env.rank_cpus else ranks)
    cnt = mid.get('counters') or {}
    msg_bytes = (cnt['bytes_sent'] / cnt['msgs_sent']
                 if cnt.get('msgs_sent') and 'bytes_sent' in cnt else None)
    d = decide(agent=res.get('agent'), dpu=res.get('dpu'), mc=mc,
               mc_source=src, net_util=util, spare_cores=spare,
               inline_seconds=inline_secs, msg_bytes=msg_bytes)
    out = dict(command=cmd, ranks=ranks, cores=env.ncpu, repeats=a.repeats,
               app=mid.get('app'), inline_seconds=inline_secs,
               placements={p: dict(seconds=v['seconds'],
                                   speedup=v['speedup'], clear=v['clear'],
                                   net_utilization=v['net_utilization'])
                           for p, v in res.items()},
               mc=mc, mc_source=src, mc_llc=mc_llc, mc_software=mc_sw,
               msg_bytes=msg_bytes,
               perf_unavailable=perf_why, net_utilization=util,
               transport_bandwidth=bw, notes=notes, **d)
    if a.json:
        print(json.dumps(out))
        return 0
    f = study.fmt
    print('offcore advise: %s, %d ranks on %d cores (%d spare for the '
          'agent%s), %d interleaved run(s) per placement' % (
              out['app'] or cmd[-1], ranks, env.ncpu, max(0, spare),
              ': ' + env.agent_cpus(a.threads) if spare > 0 else '',
              a.repeats))
    print('  inline     median %s s   runs %s' % (
        f(study.median(inline_secs), '.3f'),
        ' '.join(f(s, '.3f') for s in inline_secs)))
    for p, v in res.items():
        u = v['net_utilization']
        print('  %-10s median %s s   runs %s   speedup %sx%s   network %s' % (
            p, f(v['median'], '.3f'), ' '.join(f(s, '.3f')
                                               for s in v['seconds']),
            f(v['speedup']), '' if v['clear'] else ' (not clear)',
            '%.2f%%' % (u * 100) if u is not None else 'n/a'))
    if mc is None:
        print('  M:C        n/a (the app reports neither LLC misses nor '
              'local_bytes)')
    else:
        print('  M:C        %.2f from %s%s' % (
            mc, 'LLC miss counters (perf_event_open)' if src == 'llc' else
            'the software estimate (local_bytes: bytes the app\'s own work '
            'touches)', '' if src == 'llc' or not perf_why else
            '; LLC counters unavailable: ' + perf_why))
    print('  category   %s (Buddy: host-dominated M:C >= %.2f, '
          'communication-dominated <= %.2f)' % (d['category'], study.MC_HOST,
                                                study.MC_COMM))
    print('  network    inline %s of %s (ucx_perftest, 8000-byte active '
          'messages over shared memory%s)' % (
              ('%.2f%%' % (util * 100)) if util is not None else 'n/a',
              ('%.2f GB/s' % (bw['sm'] / 1e9)) if bw.get('sm') else 'n/a',
              '; the DPU link (tcp): %.2f GB/s' % (bw['tcp'] / 1e9)
              if bw.get('tcp') else ''))
    for n in notes:
        print('  note       ' + n)
    print('\nrecommendation: %s' % NAMES[d['recommendation']])
    for r in d['reasons']:
        print('  - ' + r)
    return 0


if __name__ == '__main__':
    sys.exit(main())
