#!/usr/bin/env python3
"""callgraph.py BUILD_DIR SOURCE_DIR — no call circle across the files of a room.

A room's loop and its toolbox live in separate files (docs/design.md,
"Layout"): when file A calls into file B, nothing in B calls back into A,
directly or through other files of the room.  This test builds the graph
of calls between the files of each room below from the objects the build
compiled (compile_commands.json gives every source's object file): file A
calls file B when A's object needs (nm: undefined) a function that B's
object defines.  Static functions and inline functions of headers stay
inside one file, so only calls across files count, which is what a circle
needs.  A room's sub-folders (src/agent/router, src/dp/tenant) are part of
it: a circle between folders of one room is a circle too.

Every strongly connected component of more than one file is a circle and
fails, named with the calls that close it, unless ALLOWED lists it.

Exit 0 PASS, 1 FAIL (each circle named).  Takes well under a second.
"""
import json
import os
import subprocess
import sys

ROOMS = ["agent", "dp", "nvmf"]

# Circles known and owned elsewhere.  Each entry is the exact set of files
# of one circle; a circle that is this set or part of it passes (and is
# reported), any other circle fails, and so does one that grows past it.
ALLOWED = [
    # src/agent/router: the routing thread's loop and the routing kernel,
    # commands and agent collectives call each other (issue 26, item 2);
    # its split is someone else's work.  Remove the entry when it is done.
    # (rcma.c left it when the job lookup became an inline in router_int.h)
    {"agent/router/router.c", "agent/router/route.c", "agent/router/rcmd.c",
     "agent/router/rcoll.c"},
]


def symbols(paths):
    """{object: [(name, kind)]} of every object, by one run of nm."""
    r = subprocess.run(["nm", "-P", "-A"] + paths, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("nm: %s" % r.stderr.strip()[:300])
    out = {p: [] for p in paths}
    for line in r.stdout.splitlines():
        obj, sep, rest = line.partition(": ")
        f = rest.split()
        if sep and obj in out and len(f) >= 2:
            out[obj].append((f[0], f[1]))
    return out


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                out.append(comp)
    return out


def cycle_in(comp, edges):
    """The shortest circle through the component's first file (a list of
    files, the first again at the end), to name it."""
    start = sorted(comp)[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ())):
                if w not in comp:
                    continue
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def main():
    build, src_root = (os.path.realpath(a) for a in sys.argv[1:3])
    src = os.path.join(src_root, "src")
    fails, notes = [], []

    # the objects of each room's sources (a source compiled into several
    # targets counts once: the union of its objects' symbols)
    objs = {}  # "dp/pipeline.c" -> [object paths]
    for c in json.load(open(os.path.join(build, "compile_commands.json"))):
        path = os.path.realpath(os.path.join(c["directory"], c["file"]))
        if not path.startswith(src + os.sep) or not path.endswith(".c"):
            continue
        # a source compiled into a white-box test is the test's (stubs)
        if not c["output"].startswith("src" + os.sep):
            continue
        rel = os.path.relpath(path, src)
        if rel.split(os.sep)[0] not in ROOMS:
            continue
        objs.setdefault(rel, []).append(
            os.path.join(c["directory"], c["output"]))

    built = sorted(o for os_ in objs.values() for o in os_
                   if os.path.exists(o))
    for f in sorted(objs):
        fails += ["%s: object %s not built" % (f, o) for o in objs[f]
                  if not os.path.exists(o)]
    syms = symbols(built) if built else {}

    for room in ROOMS:
        files = sorted(f for f in objs if f.split(os.sep)[0] == room)
        if len(files) < 2:
            fails.append("room src/%s: %d source files found in "
                         "compile_commands.json" % (room, len(files)))
            continue
        defs, needs = {}, {}  # function -> files defining it; file -> names
        for f in files:
            needs[f] = set()
            for o in objs[f]:
                for name, kind in syms.get(o, ()):
                    if kind in ("T", "W"):  # global functions
                        defs.setdefault(name, set()).add(f)
                    elif kind in ("U", "w"):
                        needs[f].add(name)
        edges, why = {}, {}
        for f in files:
            for name in sorted(needs[f]):
                for g in defs.get(name, ()):
                    if g != f:
                        edges.setdefault(f, set()).add(g)
                        why.setdefault((f, g), name)
        ncalls = sum(len(v) for v in edges.values())
        if ncalls == 0:  # every room's files call each other: else the
            fails.append("src/%s: no call between files found" % room)
        circles = [c for c in sccs(files, edges) if len(c) > 1]
        for comp in sorted(circles, key=lambda c: sorted(c)):
            cyc = cycle_in(comp, edges)
            named = " -> ".join(
                "%s (%s)" % (a, why[(a, b)]) for a, b in zip(cyc, cyc[1:]))
            named += " -> " + cyc[-1]
            allowed = [a for a in ALLOWED if comp <= a]
            if allowed:
                notes.append("allowed circle in src/%s: %s" % (
                    room, ", ".join(sorted(comp))))
                if comp != allowed[0]:
                    notes.append("  (smaller than its ALLOWED entry: "
                                 "shrink the entry)")
                continue
            fails.append("call circle in src/%s across %d files (%s): %s"
                         % (room, len(comp), ", ".join(sorted(comp)), named))
            fails += ["  %s -> %s (%s)" % (a, b, why[(a, b)])
                      for a in sorted(comp) for b in sorted(edges.get(a, ()))
                      if b in comp]
        print("callgraph: src/%s: %d files, %d calls between files, "
              "%d circles" % (room, len(files), ncalls, len(circles)))

    for n in notes:
        print(n)
    for f in fails:
        print(f if f.startswith("  ") else "FAIL: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
