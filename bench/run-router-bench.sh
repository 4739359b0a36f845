#!/bin/sh
# run-router-bench.sh BUILD_DIR [REV] — the routing kernel of one routing
# thread (bench/router/README.md): this tree's router against the bare
# partitioning loop and, given REV, against REV's router, in one process,
# runs interleaved.
#
# With REV, REV's router is built beside this one: a temporary git
# worktree under BUILD_DIR (its own build directory, the same meson
# buildtype), into which this tree's bench/router/ is copied (the harness
# and the in-process transport, built against REV's router sources: REV
# need not have router-bench), and only its router-kernel.so is built.
# Both modules are then loaded by this tree's router-bench, which prints
# one JSON line per shape and destination count, ratio_main the median of
# this tree's runs over REV's.  The worktree is removed at the end,
# whatever happens.
#
# Environment: ROUTER_BENCH_ARGS, passed to router-bench (its --help; the
# defaults: both shapes, 8,64,512 destinations, 7 repeats, 16M items per
# run).  Exit: router-bench's status (1: a run did not verify), 2 bad
# arguments or a failed build; without git (or outside a checkout) REV is
# skipped with a note and ratio_main is null.
set -u
usage() {
    echo "usage: run-router-bench.sh BUILD_DIR [REV]  (REV: a commit of this repository)" >&2
    exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
B=$(cd "$1" 2>/dev/null && pwd) || { echo "run-router-bench.sh: no build directory $1" >&2; exit 2; }
REV=${2:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)

ninja -C "$B" bench/router/router-bench bench/router/router-kernel.so >/dev/null ||
    { echo "run-router-bench.sh: building router-bench in $B failed" >&2; exit 2; }

if [ -n "$REV" ] && { ! command -v git >/dev/null ||
        ! git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; }; then
    echo "run-router-bench.sh: not a git checkout: no $REV to compare with (ratio_main null)" >&2
    REV=""
fi
if [ -z "$REV" ]; then
    # shellcheck disable=SC2086
    exec "$B/bench/router/router-bench" ${ROUTER_BENCH_ARGS:-}
fi

OLD=$(git -C "$SRC" rev-parse --verify --quiet "$REV^{commit}") ||
    { echo "run-router-bench.sh: $REV is not a commit of $SRC" >&2; exit 2; }
BUILDTYPE=$(sed -n "s/^ *buildtype *= *//p" "$B/meson-private/cmd_line.txt" 2>/dev/null | head -1)
BUILDTYPE=${BUILDTYPE:-$(meson introspect "$B" --buildoptions 2>/dev/null |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))' 2>/dev/null)}
[ -n "$BUILDTYPE" ] || { echo "run-router-bench.sh: $B is not a configured meson build" >&2; exit 2; }

W=$(mktemp -d "$B/router-ab-XXXXXX")
cleanup() {
    git -C "$SRC" worktree remove --force "$W/src" >/dev/null 2>&1
    rm -rf "$W"
    git -C "$SRC" worktree prune
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "run-router-bench.sh: building $REV's router ($OLD) in $W ($BUILDTYPE)" >&2
git -C "$SRC" worktree add --detach "$W/src" "$OLD" >/dev/null 2>&1 ||
    { echo "run-router-bench.sh: git worktree add $OLD failed" >&2; exit 2; }
# this tree's harness, whatever REV has (the same feed, sink and transport
# for both routers)
rm -rf "$W/src/bench/router"
cp -R "$SRC/bench/router" "$W/src/bench/router"
grep -q "subdir('router')" "$W/src/bench/meson.build" ||
    printf "\nsubdir('router')\n" >> "$W/src/bench/meson.build"
if ! meson setup "$W/build" "$W/src" -Dbuildtype="$BUILDTYPE" > "$W/setup.log" 2>&1; then
    tail -20 "$W/setup.log" >&2
    echo "run-router-bench.sh: meson setup of $REV failed" >&2
    exit 2
fi
if ! ninja -C "$W/build" bench/router/router-kernel.so > "$W/build.log" 2>&1; then
    tail -20 "$W/build.log" >&2
    echo "run-router-bench.sh: building $REV's router-kernel.so failed" >&2
    exit 2
fi
# shellcheck disable=SC2086
"$B/bench/router/router-bench" ${ROUTER_BENCH_ARGS:-} \
    --main-kernel "$W/build/bench/router/router-kernel.so" --rev "$OLD"
