#!/usr/bin/env python3
"""Each module of src/ logs under its own name (util/log.h's components).

OC_LOG=nvmf:debug must reach offcore-nvmf's lines and nothing else's: a
file under src/ROOM may name only ROOM's log components (OC_COMP_*).  The
engine names none: its owner hands it one (engine_params.log_comp).
Usage: logcomp.py SOURCE_ROOT
"""
import os
import re
import sys

# the deepest matching folder decides; values: the components it may use
ROOMS = {
    "util": {"UTIL"},
    "wire": {"WIRE"},
    "ctl": {"CTL"},
    "transport": {"TRANSPORT"},
    # the runtime names the transport of each peer at transport:debug,
    # where doctor's "OC_LOG=transport:debug says why" sends the reader
    "runtime": {"RUNTIME", "TRANSPORT"},
    "coll": {"COLL"},
    "gpu": {"GPU"},
    "agent": {"AGENT"},
    "agent/router": {"ROUTER"},
    "metrics": {"METRICS"},
    "pkt": {"PKT"},
    "dp": {"DP"},
    "nvmf": {"NVMF"},
    "tools": {"APP"},
    "engine": set(),
}
# where the components are defined, and the one place they are named
DEFINING = {"util/include/util/log.h", "util/log.c"}
USE = re.compile(r"\bOC_COMP_([A-Z]+)\b")


def room_of(rel):
    parts = rel.split("/")
    best = None
    for i in range(1, len(parts)):
        cand = "/".join(parts[:i])
        if cand in ROOMS:
            best = cand
    return best


def main():
    src = os.path.join(sys.argv[1], "src")
    bad, files = [], 0
    for dirpath, _, names in os.walk(src):
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            if rel in DEFINING:
                continue
            room = room_of(rel)
            if room is None:
                bad.append("%s: in no known module (add it to ROOMS)" % rel)
                continue
            files += 1
            with open(path, encoding="utf-8") as f:
                for no, line in enumerate(f, 1):
                    for comp in USE.findall(line):
                        if comp != "MAX" and comp not in ROOMS[room]:
                            bad.append("src/%s:%d: logs as OC_COMP_%s; %s "
                                       "logs as %s" % (
                                           rel, no, comp, room,
                                           " or ".join(sorted(ROOMS[room]))
                                           or "its owner's component"))
    if files == 0:
        bad.append("no source files under %s" % src)
    for b in bad:
        print(b)
    if bad:
        print("FAIL: %d log calls under another module's name" % len(bad))
        return 1
    print("ok: %d files log under their own module's name" % files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
