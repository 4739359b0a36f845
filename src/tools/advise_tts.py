#!/usr/bin/env python3
"""advise_tts.py — `offcore advise --tts FILE`: does offloading a
collective to the agent pay for this application's compute?

Reads the time-to-solution rows that bench/coll_bench.c prints with --tts
(`"measure":"time_to_solution"`, one JSON object a line; the whole output
of bench/run-coll-bench.sh may be given: its other rows and its `#` lines
are passed over) and says, per message size, whether a step of a compute
loop that overlaps the collective with its compute (oc_iallreduce,
compute, oc_wait through the agent) beats `compute + MPI_Allreduce`, for
the application's compute per step (--compute-us, or --compute-factor:
compute over Open MPI's allreduce time at the size).

The rule (docs/coll.md, "Time to solution in advise"): offloading pays at a
size when the row's median gain is at least GAIN (1.05, advise's rule for
placements) and the spread agrees: the slowest offloaded step beats the
fastest compute + MPI_Allreduce step.  A median gain at or below 1 / GAIN
costs; anything between is no clear gain.  A size without an agent row
for the compute asked is "not measured", never guessed.

The file is the user's: every line is checked (types, ranges, the gain
against its own times) and a bad one ends the run with its line number
(TTSError), never with a traceback.  Fuzzed by tests/doctor/test_advise.py.
"""

import json
import math

GAIN = 1.05            # advise.GAIN: the same rule as for placements
MAX_LINE = 1 << 16     # a coll_bench row is a few hundred bytes
MAX_RUNS = 255         # coll_bench's --repeats limit
MAX_ROWS = 100000
LOW, HIGH = 1e-9, 1e15  # every figure (us, factors, gains) lies within


class TTSError(ValueError):
    """A bad input file: str() names the file, the line and why."""


def _num(row, key, where):
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TTSError('%s: "%s" must be a number, not %s' % (
            where, key, json.dumps(v)[:40]))
    try:
        v = float(v)
    except OverflowError:
        v = math.inf
    if not LOW <= v <= HIGH:
        raise TTSError('%s: "%s" must be a number from %g to %g (%.3g)' % (
            where, key, LOW, HIGH, v))
    return v


def _runs(row, key, where):
    v = row.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or not v or len(v) > MAX_RUNS:
        raise TTSError('%s: "%s" must be a list of 1-%d numbers' % (
            where, key, MAX_RUNS))
    return [_num({key: x}, key, where) for x in v]


def _reject_constant(name):
    raise ValueError('%s is not a number JSON allows' % name)


def parse(data, name='input'):
    """The time-to-solution rows of @data (bytes or str, JSON lines).
    Returns [dict(line, placement, op, bytes, compute_factor, compute_us,
    us, mpi_us, gain, runs, mpi_runs, compute_slice_us)]; raises TTSError
    on a bad line.  Rows of several runs (the same size and compute) are
    all kept: advise() weighs them together."""
    if isinstance(data, bytes):
        lines = data.split(b'\n')
    else:
        lines = data.split('\n')
    rows = []
    for no, raw in enumerate(lines, start=1):
        where = '%s:%d' % (name, no)
        if len(raw) > MAX_LINE:
            raise TTSError('%s: line longer than %d bytes' % (where,
                                                                MAX_LINE))
        if isinstance(raw, bytes):
            try:
                raw = raw.decode('utf-8')
            except UnicodeDecodeError as e:
                raise TTSError('%s: not UTF-8 text (byte %d)' % (
                    where, e.start + 1)) from None
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        try:
            row = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as e:
            raise TTSError('%s: not a JSON object: %s' % (
                where, str(e)[:80])) from None
        if not isinstance(row, dict):
            raise TTSError('%s: not a JSON object' % where)
        if row.get('measure') != 'time_to_solution':
            continue          # coll_bench's latency and overlap rows
        if row.get('bench') != 'coll':
            raise TTSError('%s: "bench" must be "coll" (coll_bench\'s rows)'
                           % where)
        op, pl = row.get('op'), row.get('placement')
        if not isinstance(op, str) or not op or len(op) > 32:
            raise TTSError('%s: "op" must name the collective' % where)
        if pl not in ('inline', 'agent'):
            raise TTSError('%s: "placement" must be "inline" or "agent"'
                           % where)
        b = row.get('bytes')
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0 \
                or b > 1 << 48:
            raise TTSError('%s: "bytes" must be a positive integer' % where)
        if row.get('verified') is not True:
            raise TTSError('%s: the row is not verified ("verified" is not '
                           'true): its figures are not a result' % where)
        r = dict(line=no, op=op, placement=pl, bytes=b,
                 compute_factor=_num(row, 'compute_factor', where),
                 compute_us=_num(row, 'compute_us', where),
                 us=_num(row, 'us', where), mpi_us=_num(row, 'mpi_us', where),
                 gain=_num(row, 'gain', where),
                 runs=_runs(row, 'runs_us', where),
                 mpi_runs=_runs(row, 'mpi_runs_us', where))
        # coll_bench prints gain = mpi_us / us to 3 decimals
        if abs(r['gain'] - r['mpi_us'] / r['us']) > 0.01 * r['gain'] + 0.002:
            raise TTSError('%s: "gain" %.3f is not mpi_us / us (%.3f)' % (
                where, r['gain'], r['mpi_us'] / r['us']))
        if (r['runs'] is None) != (r['mpi_runs'] is None):
            raise TTSError('%s: "runs_us" and "mpi_runs_us" come together'
                           % where)
        s = row.get('compute_slice_us', 0)
        r['compute_slice_us'] = 0 if s == 0 else _num(row, 'compute_slice_us',
                                                      where)
        rows.append(r)
        if len(rows) > MAX_ROWS:
            raise TTSError('%s: more than %d rows' % (where, MAX_ROWS))
    return rows


def verdict(row):
    """'pays', 'costs' or 'unclear', and why, for one row."""
    g = row['gain']
    if row['runs']:
        worst = min(row['mpi_runs']) / max(row['runs'])
        spread = ('runs: offloaded %.1f-%.1f us, compute + MPI_Allreduce '
                  '%.1f-%.1f us' % (min(row['runs']), max(row['runs']),
                                    min(row['mpi_runs']),
                                    max(row['mpi_runs'])))
    else:
        worst, spread = None, 'no runs in the row: the spread is unknown'
    if g >= GAIN and worst is not None and worst > 1:
        return 'pays', 'gain %.2f (%s)' % (g, spread)
    if g <= 1 / GAIN:
        return 'costs', 'gain %.2f: the offloaded step is slower (%s)' % (
            g, spread)
    return 'unclear', 'gain %.2f, no clear gain (needs >= %.2f and every ' \
        'offloaded run faster; %s)' % (g, GAIN, spread)


def combine(rows):
    """One verdict for the rows of one size and compute factor: several
    runs of the bench (run-coll-bench.sh's agent run measures once with the
    ranks' compute yielding their core, once without) each have a say:
    it pays only when every run says so, costs when every run says so."""
    vs = [verdict(r) for r in rows]
    kinds = {v for v, _ in vs}
    v = next(iter(kinds)) if len(kinds) == 1 else 'unclear'
    whys = []
    for r, (rv, why) in zip(rows, vs):
        tag = ('line %d' % r['line']) + (
            ', compute yields every %g us' % r['compute_slice_us']
            if r['compute_slice_us'] else '')
        whys.append('%s%s: %s' % (tag, '' if len(rows) == 1 else
                                  ' (%s)' % rv, why))
    if len(kinds) > 1:
        whys.insert(0, 'the runs disagree')
    r0 = rows[0]
    return dict(compute_factor=r0['compute_factor'],
                compute_us=r0['compute_us'],
                gain=min(r['gain'] for r in rows), verdict=v,
                why='; '.join(whys), lines=[r['line'] for r in rows])


def _nearest(factors, want):
    """The measured factor nearest @want (by ratio)."""
    return min(factors, key=lambda f: abs(math.log(f / want)))


def advise(rows, compute_us=None, compute_factor=None, op='allreduce'):
    """Per size of @op: the agent rows' verdict for the compute asked
    (every measured factor when neither is given).  Returns dict(op,
    sizes=[dict(bytes, verdict, ...)], notes=[...])."""
    notes = []
    agent = [r for r in rows if r['op'] == op and r['placement'] == 'agent']
    sizes = sorted({r['bytes'] for r in rows if r['op'] == op})
    if not agent:
        notes.append('no time-to-solution rows of %s through the agent: '
                     'nothing to advise on (coll-bench measures allreduce\'s:'
                     ' BENCH_COLL_RUNS=agent sh bench/run-coll-bench.sh '
                     'BUILD)' % op)
    out = []
    for b in sizes:
        at = [r for r in agent if r['bytes'] == b]
        if not at:
            out.append(dict(bytes=b, verdict='not measured',
                            why='no agent row at this size (inline rows '
                            'only)'))
            continue
        mpi_us = at[0]['compute_us'] / at[0]['compute_factor']
        if compute_us is not None:
            want = compute_us / mpi_us
        elif compute_factor is not None:
            want = compute_factor
        else:
            want = None
        cands = sorted(at, key=lambda r: r['compute_factor'])
        if want is not None:
            f = _nearest([r['compute_factor'] for r in cands], want)
            cands = [r for r in cands if r['compute_factor'] == f]
        for f in sorted({r['compute_factor'] for r in cands}):
            e = combine([r for r in cands if r['compute_factor'] == f])
            e.update(bytes=b, mpi_allreduce_us=mpi_us)
            if want is not None and abs(math.log(f / want)) > math.log(1.5):
                e['note'] = ('the nearest measured compute is %gx the '
                             'collective, the application\'s %.2gx: measure '
                             'it (coll_bench --tts %.2g)' % (f, want, want))
            out.append(e)
    return dict(op=op, sizes=out, notes=notes)


def report(res, name):
    """The report's lines."""
    lines = ['offcore advise: %s through the agent, time to solution '
             '(%s): offloading pays at a size when the median gain is >= '
             '%.2f and every offloaded run beats every compute + '
             'MPI_Allreduce run' % (res['op'], name, GAIN)]
    for e in res['sizes']:
        if e['verdict'] == 'not measured':
            lines.append('  %10d B  not measured: %s' % (e['bytes'],
                                                        e['why']))
            continue
        what = {'pays': 'offload pays', 'costs': 'keep it in place',
                'unclear': 'no clear gain: keep it in place'}[e['verdict']]
        lines.append('  %10d B  compute %.1f us (%gx the collective): %s; '
                     '%s' % (e['bytes'], e['compute_us'],
                             e['compute_factor'], what, e['why']))
        if 'note' in e:
            lines.append('               note: ' + e['note'])
    for n in res['notes']:
        lines.append('  note: ' + n)
    return lines
