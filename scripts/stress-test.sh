#!/bin/sh
# scripts/stress-test.sh BUILDDIR ROUNDS [MESON TEST ARGS...] — run meson
# tests ROUNDS times while `stress-ng --cpu 4` loads the machine (what a
# busy 2-core CI host does to timing), to find the tests that fail under
# load before CI does.  Default tests: the suite pkt (--suite pkt).  Prints
# a JSON line per test run (round, name, result, seconds, load average)
# and, at the end, the pass count of each test.  For an ASan+UBSan build,
# export the sanitizer options scripts/asan-test.sh sets first.
# Root for the network-namespace tests (they skip otherwise).  Stops
# stress-ng on exit, SIGINT and SIGTERM.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILDDIR ROUNDS [MESON TEST ARGS...]" >&2; exit 2; }
dir=$1 rounds=$2
shift 2
[ $# -gt 0 ] || set -- --suite pkt
command -v stress-ng >/dev/null 2>&1 ||
    { echo "stress-test: stress-ng is not installed (apt-get install stress-ng)" >&2; exit 2; }
log=$(mktemp "${TMPDIR:-/tmp}/offcore-stress.XXXXXX")
stress-ng --cpu 4 --quiet &
sp=$!
trap 'kill $sp 2>/dev/null; rm -f "$log"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
r=1
while [ $r -le "$rounds" ]; do
    # a failing test does not stop the rounds: its result is in the log
    # (a run that wrote none, a wrong test name, stops them below)
    rm -f "$dir/meson-logs/stress-$r.json"
    meson test -C "$dir" --no-rebuild --logbase "stress-$r" "$@" >/dev/null 2>&1 || true
    # (captured, not piped into tee: dash has no pipefail, and a round
    # whose JSON log is missing must stop the run, not pass through tee)
    out=$(python3 - "$dir/meson-logs/stress-$r.json" "$r" "$(cut -d' ' -f1 /proc/loadavg)" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    print(json.dumps({"round": int(sys.argv[2]), "test": t["name"], "result": t["result"],
                      "s": round(t["duration"], 1), "load": float(sys.argv[3])}))
EOF
)
    printf '%s\n' "$out"
    printf '%s\n' "$out" >>"$log"
    r=$((r + 1))
done
python3 - "$log" <<'EOF'
import json, sys
runs = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    runs.setdefault(j["test"], []).append(j)
print("== stress-test: passes per test (runs under stress-ng --cpu 4)")
for name, rs in sorted(runs.items()):
    ok = sum(r["result"] in ("OK", "SKIP") for r in rs)
    bad = ", ".join("round %d %s" % (r["round"], r["result"]) for r in rs
                    if r["result"] not in ("OK", "SKIP"))
    print("%-40s %d/%d%s" % (name, ok, len(rs), "  (" + bad + ")" if bad else ""))
EOF
