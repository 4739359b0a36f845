#!/usr/bin/env python3
"""layering.py BUILD_DIR SOURCE_DIR — the module boundaries hold.

Each folder of src/ is a module that may include the public headers
(include/offcore/), its own folder, and the include/ folder of the modules
it is declared to sit on (LAYERS below; docs/design.md, "Layers", is the
same table in words).  The build gives each module exactly those paths
(every module's declare_dependency carries its include/ folder); this
test checks the result with the build's own compile commands
(compile_commands.json), so it tests the flags the code is really built
with:

  1. for every source file under src/, the preprocessor, run with that
     file's flags, finds (__has_include) no header of a module the file's
     module is not declared to sit on, and no private header of any module
     by its path under src/ ("runtime/runtime.h");
  2. no -I of a module points inside src/ except at those include/
     folders and the module's own folder (sub-folders without a
     meson.build of their own, such as src/dp/tenant, are part of it);
  3. a real compile of `#include "runtime/runtime.h"` with the CLI's flags
     fails (the reach the review found in src/tools/offcore.c), while
     `#include "runtime/settings.h"`, what the runtime exports to it,
     compiles;
  4. no source under src/ includes with a relative "../" path (which would
     walk around the include paths);
  5. the installed headers do not carry the internal reject reasons;
  6. every module folder is in LAYERS and in docs/design.md's map.

Exit 0 PASS, 1 FAIL (each failure named).  Takes about a second.
"""
import atexit
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# module -> the modules whose include/ folder it may use.  A module's
# name is its folder under src/ (src/pkt/acl is "acl"; the MPI interposer
# in src/coll/mpi is "coll-mpi").
LAYERS = {
    "util": [],
    "wire": ["util"],
    "ctl": ["util"],
    "transport": ["util"],
    "metrics": ["util"],
    "acl": ["util"],
    "engine": ["transport", "wire", "util"],
    "pkt": ["acl", "util"],
    "nvmf": ["metrics", "util"],
    "runtime": ["engine", "transport", "ctl", "wire", "util"],
    # linked into liboffcore above the runtime: runtime/ext.h, never the
    # context's private state (src/runtime/runtime.h)
    "gpu": ["util"],
    "coll": ["runtime", "gpu", "transport", "wire", "util"],
    "coll-mpi": ["util"],
    "agent": ["coll", "engine", "transport", "ctl", "wire", "metrics", "util"],
    "dp": ["pkt", "acl", "ctl", "metrics", "util"],
    "tools": ["runtime", "gpu", "transport", "ctl", "wire", "metrics", "util"],
}
# module -> its folder under src/
FOLDER = {m: m for m in LAYERS}
FOLDER.update({"acl": "pkt/acl", "coll-mpi": "coll/mpi"})


def module_of(rel):
    """Module of a path relative to src/."""
    for m, f in sorted(FOLDER.items(), key=lambda kv: -len(kv[1])):
        if rel == f or rel.startswith(f + "/"):
            return m
    return None


def main():
    build, src_root = (os.path.realpath(a) for a in sys.argv[1:3])
    src = os.path.join(src_root, "src")
    fails = []

    # exported headers (as included: "util/log.h") and private ones
    exported, private = {}, {}
    for m, f in FOLDER.items():
        inc = os.path.join(src, f, "include")
        exported[m] = []
        for d, _, files in os.walk(inc):
            exported[m] += [os.path.relpath(os.path.join(d, h), inc)
                            for h in files if h.endswith(".h")]
        # the module's other headers, in its folder and in the sub-folders
        # that are part of it (src/dp/tenant: no meson.build of their own),
        # as the module's files include them ("tenant/tenant.h")
        folder = os.path.join(src, f)
        private[m] = []
        for d, dirs, files in os.walk(folder):
            rel = os.path.relpath(d, folder)
            dirs[:] = [x for x in dirs if x != "include" and
                       module_of(os.path.relpath(os.path.join(d, x), src))
                       == m]
            private[m] += [os.path.normpath(os.path.join(rel, h))
                           for h in files if h.endswith(".h")]
        private[m].sort()
    for m in LAYERS:
        if m not in ("runtime", "coll", "coll-mpi", "agent", "dp", "nvmf",
                     "tools") and not exported[m]:
            fails.append("module %s exports no header (src/%s/include/)"
                         % (m, FOLDER[m]))

    # 6. every folder with a meson.build is a declared module, and the
    # design's map names it
    design = open(os.path.join(src_root, "docs", "design.md")).read()
    for d, _, files in os.walk(src):
        rel = os.path.relpath(d, src)
        if "meson.build" in files:
            m = module_of(rel)
            if m is None or FOLDER[m] != rel:
                fails.append("src/%s has a meson.build but is not a module "
                             "in tests/layering.py LAYERS" % rel)
            if "src/%s/" % rel not in design:
                fails.append("docs/design.md's map does not name src/%s/"
                             % rel)

    probes = []  # (kind, module, header as included)
    for m in LAYERS:
        probes += [("export", m, h) for h in exported[m]]
        probes += [("private", m, FOLDER[m] + "/" + h) for h in private[m]]
        probes += [("bare", m, h) for h in private[m]]

    tmp = tempfile.mkdtemp(prefix="oc-layering-")
    atexit.register(shutil.rmtree, tmp, True)  # left behind otherwise
    probe_c = os.path.join(tmp, "probe.c")
    with open(probe_c, "w") as f:
        for i, (_, _, h) in enumerate(probes):
            f.write('#if __has_include("%s")\nOC_REACH_%d\n#endif\n' % (h, i))

    cmds = json.load(open(os.path.join(build, "compile_commands.json")))
    checked = 0
    seen = set()
    for c in cmds:
        path = os.path.realpath(os.path.join(c["directory"], c["file"]))
        if not path.startswith(src + os.sep) or not path.endswith(".c"):
            continue
        # a source under src/ compiled into a white-box test is the test's
        if not c["output"].startswith("src" + os.sep):
            continue
        rel = os.path.relpath(path, src)
        m = module_of(rel)
        if m is None:
            fails.append("%s: in no declared module" % rel)
            continue
        args = shlex.split(c["command"])
        # the flags, without the source, the outputs and the dependency files
        flags, skip = [], False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MQ", "-MF", "-MT"):
                skip = True
                continue
            if a in ("-c", "-MD", "-MMD") or a == c["file"]:
                continue
            flags.append(a)
        key = (m, tuple(flags))
        if key in seen:
            continue
        seen.add(key)
        allowed = set(LAYERS[m]) | {m}
        own = os.path.dirname(rel)
        # 2. the -I folders inside src/ (a file in a sub-folder of its
        # module, src/dp/tenant, has the module's folder too)
        ok_dirs = {os.path.join(src, FOLDER[x], "include") for x in allowed}
        ok_dirs |= {os.path.join(src, own), os.path.join(src, FOLDER[m])}
        for a in flags:
            if a.startswith("-I"):
                d = os.path.realpath(os.path.join(c["directory"], a[2:]))
                if (d == src or d.startswith(src + os.sep)) and \
                        d not in ok_dirs:
                    fails.append("%s (module %s): -I%s is not allowed"
                                 % (rel, m, os.path.relpath(d, src_root)))
        # 1. what the preprocessor finds with these flags
        r = subprocess.run([args[0]] + flags + ["-E", "-P", probe_c],
                           cwd=c["directory"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            fails.append("%s: probe did not preprocess: %s"
                         % (rel, r.stderr.strip()[:300]))
            continue
        found = {int(x) for x in re.findall(r"OC_REACH_(\d+)", r.stdout)}
        if not found:  # every module reaches something: else the probe is
            fails.append("%s: the probe reached nothing" % rel)  # broken
        for i, (kind, x, h) in enumerate(probes):
            reach = i in found
            if kind == "export":
                if reach and x not in allowed:
                    fails.append('%s (module %s) can include "%s" of module '
                                 '%s, which it does not sit on'
                                 % (rel, m, h, x))
                if not reach and x == m:
                    fails.append('%s (module %s) cannot include its own '
                                 '"%s"' % (rel, m, h))
            elif kind == "private" and reach:
                fails.append('%s (module %s) can reach the private header '
                             '"%s"' % (rel, m, h))
            elif kind == "bare" and reach and x != m and \
                    not os.path.exists(os.path.join(src, own, h)) and \
                    not os.path.exists(os.path.join(src, FOLDER[m], h)):
                fails.append('%s (module %s) can reach "%s", private to '
                             '%s' % (rel, m, h, x))
        checked += 1
    if checked < len(LAYERS) - 1:
        fails.append("only %d compile commands under src/ checked" % checked)

    # 3. the reach the review found, compiled for real
    tools = [c for c in cmds if c["file"].endswith("src/tools/offcore.c")]
    if not tools:
        fails.append("no compile command for src/tools/offcore.c")
    else:
        c = tools[0]
        args = shlex.split(c["command"])
        flags = [a for a in args[1:] if a.startswith(("-I", "-D", "-std"))]
        for hdr, want_ok in (("runtime/runtime.h", False),
                             ("runtime/settings.h", True)):
            t = os.path.join(tmp, "reach.c")
            with open(t, "w") as f:
                f.write('#include "%s"\nint oc_layering_probe;\n' % hdr)
            r = subprocess.run([args[0]] + flags + ["-fsyntax-only", t],
                               cwd=c["directory"], capture_output=True,
                               text=True)
            if (r.returncode == 0) != want_ok:
                fails.append('src/tools: #include "%s" %s (want %s): %s'
                             % (hdr, "compiles" if r.returncode == 0
                                else "fails",
                                "compiles" if want_ok else "fails",
                                r.stderr.strip()[:300]))
            elif not want_ok and "No such file" not in r.stderr:
                fails.append('src/tools: #include "%s" failed for another '
                             'reason: %s' % (hdr, r.stderr.strip()[:300]))

    # 4. relative includes
    for d, _, files in os.walk(src):
        for fn in files:
            if not fn.endswith((".c", ".h")):
                continue
            p = os.path.join(d, fn)
            for n, line in enumerate(open(p, errors="replace"), 1):
                if re.match(r'\s*#\s*include\s*"[^"]*\.\./', line):
                    fails.append("%s:%d: relative include: %s"
                                 % (os.path.relpath(p, src_root), n,
                                    line.strip()))

    # 5. the installed headers
    pub = os.path.join(src_root, "include", "offcore")
    for fn in sorted(os.listdir(pub)):
        text = open(os.path.join(pub, fn)).read()
        for bad in re.findall(r"OC_ERR_(?:WIRE_\w+|CTL_TYPE|CTL_VALUE)",
                              text):
            fails.append("include/offcore/%s names the internal %s"
                         % (fn, bad))

    for f in fails:
        print("FAIL:", f)
    print("layering: %d compile flag sets checked, %d probes each, %d "
          "failures" % (checked, len(probes), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
