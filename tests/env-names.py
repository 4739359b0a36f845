#!/usr/bin/env python3
"""env-names.py SOURCE_DIR — the one-place rules of the newcomer's path:

1. every OC_* environment name that src/ or apps/ reads (a config table's
   {"NAME", OC_CFG_...} entry with its OC_ prefix, a getenv("OC_..."), an
   *_ENV "OC_..." define) is in util/envnames.c's table, and the table
   lists nothing that nothing reads;
2. the default agent socket path, offcore-dp's socket path and the metrics
   port are spelled once in src/, include/ and contrib/'s C (util/defaults.h), and the
   version literal once (meson.build's project()).
Exit 0 PASS, 1 FAIL."""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "."
fails = []


def files(*roots, exts=(".c", ".h")):
    for root in roots:
        for d, _, fs in os.walk(os.path.join(src, root)):
            for f in fs:
                if f.endswith(exts):
                    p = os.path.join(d, f)
                    yield p, open(p, encoding="utf-8", errors="replace").read()


table_file = os.path.join(src, "src/util/envnames.c")
table = set(re.findall(r'\{"(OC_[A-Z0-9_]+)",', open(table_file).read()))
prefixes = {n for n in table if n.endswith("_")}

# which config table a file's entries belong to: the runtime's and the
# collectives' have no prefix of their own, the agent's names start AGENT_
read = {}
for path, text in files("src", "apps"):
    if path.endswith("envnames.c"):
        continue
    for m in re.finditer(r'\{"([A-Z][A-Z0-9_]*)", OC_CFG_', text):
        read.setdefault("OC_" + m.group(1), path)
    for m in re.finditer(r'(?:getenv|env_u32)\("(OC_[A-Z0-9_]+)"', text):
        read.setdefault(m.group(1), path)
    for m in re.finditer(r'#define OC_[A-Z0-9_]*ENV\s+"(OC_[A-Z0-9_]+)"', text):
        read.setdefault(m.group(1), path)
if len(read) < 40:
    fails.append("found only %d OC_* names in src/: the scan is broken" % len(read))
for name, path in sorted(read.items()):
    if name not in table:
        fails.append("%s (read in %s) is not in src/util/envnames.c: "
                     "the library and the daemons would call it a typo"
                     % (name, os.path.relpath(path, src)))
for name in sorted(table - prefixes - set(read)):
    fails.append("src/util/envnames.c lists %s, which nothing in src/ "
                 "reads" % name)

# one definition of each default
defaults = {
    "the agent's socket (offcored.sock)": r'offcored\.sock"',
    "offcore-dp's socket (dp.sock)": r'/dp\.sock"',
    "the metrics port 9464": r'(?<![0-9])9464(?![0-9])',
    "the runtime dir /run/offcore": r'"/run/offcore',
}
for what, rx in defaults.items():
    where = []
    for path, text in files("src", "include", "contrib"):
        # comments may mention a default; code must use the header's name
        code = re.sub(r'/\*.*?\*/|//[^\n]*', '', text, flags=re.S)
        if re.search(rx, code):
            where.append(os.path.relpath(path, src))
    if where != ["src/util/include/util/defaults.h"]:
        fails.append("%s is spelt in %s (want only "
                     "src/util/include/util/defaults.h)" % (what, where))

version = re.search(r"version\s*:\s*'([0-9.]+)'",
                    open(os.path.join(src, "meson.build")).read()).group(1)
for path, text in files("src", "include"):
    code = re.sub(r'/\*.*?\*/|//[^\n]*', '', text, flags=re.S)
    if re.search(r'"%s"' % re.escape(version), code):
        fails.append("%s spells the version %s: use util/version.h"
                     % (os.path.relpath(path, src), version))

for f in fails:
    print("FAIL:", f)
print("PASS: %d OC_* names read, all in the table; defaults spelt once"
      % len(read) if not fails else "FAIL (%d)" % len(fails))
sys.exit(1 if fails else 0)
