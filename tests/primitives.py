#!/usr/bin/env python3
"""primitives.py SOURCE_DIR — each primitive of the tree is written once.

The tree keeps one definition of each mechanism it uses everywhere
(docs/design.md, "src/util/"): the byte-order loads and stores
(util/bytes.h), the single-writer counters (util/counter.h), the SPSC ring
(util/spsc.h), the branch hints (util/likely.h), the CPU feature detection
(util/cpu.h).  A second one is how the
tree drifted before (byte order about ten times, three rings whose head
and tail meant opposite things).  This test reads every .c and .h under
src/ and fails, naming file and line, where a pattern that defines or
re-implements a primitive appears outside its home.

Adding a primitive: one entry in CHECKS (a name, the one file allowed to
match, the patterns, a hint of what to use instead).

Exit 0 PASS, 1 FAIL (each hit named).
"""
import os
import re
import sys

CHECKS = [
    {
        "name": "byte-order helpers",
        "home": ["src/util/include/util/bytes.h"],
        "patterns": [
            r"__builtin_bswap(16|32|64)\b",
            r"\b(htobe|htole|be|le)(16|32|64)(toh)?\s*\(",
            r"\b(ntohl|htonl)\s*\((?!INADDR_)",
            # a local load/store helper: rd16, ld32, put32, oc__le16 ...
            r"\bstatic\s+(inline\s+)?\w+\s*\*?\s*\w*?"
            r"(rd|wr|ld|st|get|put|load|store|le|be)_?(16|32|64)\s*\(",
            # bytes assembled by shifts: (uint32_t)p[1] << 8, p[0] << 8 | p[1]
            r"\(uint(16|32|64)_t\)\s*\w+\[[^\]]+\]\s*<<\s*(8|16|24|32)\b",
            r"\b\w+\[\d+\]\s*<<\s*8\s*\|\s*\w+\[\d+\]",
        ],
        "hint": "use util/bytes.h (oc__load_be32, oc__store_le64, ...)",
    },
    {
        "name": "single-writer counters",
        "home": ["src/util/include/util/counter.h"],
        "patterns": [
            # a relaxed store of the field plus something: the one-writer add
            r"__atomic_store_n\(\s*&?\(?([\w.\->\[\]]+)\)?\s*,\s*"
            r"\(?\*?\1\)?\s*[-+][^;]*__ATOMIC_RELAXED",
            r"atomic_store_explicit\(\s*&?\(?([\w.\->\[\]]+)\)?\s*,\s*"
            r"\(?\*?\1\)?\s*[-+][^;]*memory_order_relaxed",
        ],
        "hint": "use util/counter.h (OC__CTR_ADD, OC__CTR_INC, OC__CTR_GET)",
        # offcore-nvmf's counters are C11 _Atomic fields (atomic_*_explicit)
        "except": ["src/nvmf/"],
    },
    {
        "name": "SPSC ring",
        "home": ["src/util/include/util/spsc.h", "src/util/spsc.c"],
        "patterns": [
            # publishing or releasing an index by a release store
            r"(__atomic_store_n|atomic_store_explicit)\(\s*&[^,]*\b"
            r"(head|tail)\s*,[^;]*(__ATOMIC_RELEASE|memory_order_release)",
        ],
        "hint": "use util/spsc.h (reserve/publish, peek/release)",
    },
    {
        "name": "likely/unlikely",
        "home": ["src/util/include/util/likely.h"],
        "patterns": [r"#\s*define\s+(likely|unlikely)\b"],
        "hint": 'include "util/likely.h"',
    },
    {
        "name": "CPU feature detection",
        "home": ["src/util/cpu.c"],
        "patterns": [r"__builtin_cpu_supports\s*\(", r"__get_cpuid"],
        "hint": 'use util/cpu.h (oc__cpu_features)',
    },
]


def code_lines(path):
    """(number, line) of a C file with comments blanked."""
    text = open(path, errors="replace").read()
    # blank comments, keep line breaks (so numbers stay right)
    text = re.sub(r"/\*.*?\*/",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    # join a statement split over lines so that patterns see it whole: a
    # line ending without ; { } or ) is continued
    out, buf, start = [], "", 0
    for n, line in enumerate(text.split("\n"), 1):
        if not buf:
            start = n
        buf += (" " if buf else "") + line.strip()
        if not buf or buf.endswith((";", "{", "}", ")", "\\")) or \
                buf.startswith("#"):
            out.append((start, buf))
            buf = ""
    if buf:
        out.append((start, buf))
    return out


def main():
    root = os.path.realpath(sys.argv[1])
    src = os.path.join(root, "src")
    files = []
    for d, _, names in os.walk(src):
        files += [os.path.join(d, f) for f in names
                  if f.endswith((".c", ".h"))]
    files.sort()
    fails = []
    homes_seen = {c["name"]: 0 for c in CHECKS}
    for path in files:
        rel = os.path.relpath(path, root)
        lines = code_lines(path)
        for c in CHECKS:
            if rel in c["home"]:
                homes_seen[c["name"]] += 1
                continue
            if any(rel.startswith(e) for e in c.get("except", [])):
                continue
            for n, line in lines:
                for p in c["patterns"]:
                    if re.search(p, line):
                        fails.append("%s:%d: a second %s: %s\n      %s"
                                     % (rel, n, c["name"], c["hint"],
                                        line[:160]))
                        break
    for c in CHECKS:
        if homes_seen[c["name"]] != len(c["home"]):
            fails.append("%s: the home %s is missing"
                         % (c["name"], ", ".join(c["home"])))
    for f in fails:
        print("FAIL:", f)
    print("primitives: %d files, %d checks, %d failures"
          % (len(files), len(CHECKS), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
