#!/bin/bash
# run-inline-ab.sh BUILD_DIR REV — the inline placement of this tree against
# an earlier commit, built and run side by side: is the library's own
# routing (no agent) any slower than it was at REV?
#
# Builds REV's apps in a temporary git worktree under BUILD_DIR (its own
# build directory, the same meson buildtype as BUILD_DIR), then runs each
# app inline (2 ranks, `mpirun --bind-to none`, UCX_TLS=sm,self,
# OC_PLACEMENT=inline) INLINE_AB_REPEATS times per tree, old and new
# interleaved and the order swapped every repeat (old,new then new,old), so
# both trees see the same moments of a shared machine.  Prints one line per
# run:
#   {"bench":"inline-vs-rev-run","app":..,"tree":"old"|"new","repeat":..,
#    "rate":..,"verified":..}
# then one line per app:
#   {"bench":"inline-vs-rev","app":..,"rev":..,"rate_old":<median>,
#    "rate_new":<median>,"ratio":<new/old>,"rates_old":[...],
#    "rates_new":[...],"verified":true,...}
# with the commits compared and the 1-minute load average before and after
# (the figures are only as quiet as the machine).  The worktree and its
# build are removed at the end, whatever happens.  Exits non-zero when a
# build or a run fails or does not verify (2: bad arguments; 77, with the
# reason: git, meson, ninja or mpirun missing, or no git checkout); there is
# no speed target here.
#
# With INLINE_AB_CPU=1 the same interleaved runs are made once more with
# OC_APP_CPU=1 (apps/common/app_oc.h: the thread CPU clock around every
# library call, handlers subtracted), and one line per app compares what
# the ranks spent inside liboffcore per message, which a busy machine
# disturbs less than a rate (a rank that is descheduled spends no CPU):
#   {"bench":"inline-vs-rev-cpu","app":..,"lib_ns_old":<median>,
#    "lib_ns_new":<median>,"ratio":<new/old>,"lib_ns_olds":[...],...}
#
# Environment (defaults): INLINE_AB_REPEATS (5)  INLINE_AB_CPU (0)  INLINE_AB_APPS (histogram
# transpose index-gather mcproxy)  INLINE_AB_UPDATES (40M)  INLINE_AB_ROWS
# (1M)  INLINE_AB_REQUESTS (20M)  INLINE_AB_PARTICLES (100K): the sizes of
# bench/run-spare-core.sh's rows.
set -u -o pipefail
. "$(dirname "$0")/stats-lib.sh"
usage() {
    echo "usage: run-inline-ab.sh BUILD_DIR REV  (REV: a commit of this repository)" >&2
    exit 2
}
[ $# -eq 2 ] || usage
B=$(cd "$1" 2>/dev/null && pwd) || { echo "run-inline-ab.sh: no build directory $1" >&2; exit 2; }
REV=$2
REPEATS=${INLINE_AB_REPEATS:-5}
APPS=${INLINE_AB_APPS:-histogram transpose index-gather mcproxy}
SRC=$(cd "$(dirname "$0")/.." && pwd)

for tool in git meson ninja mpirun; do
    command -v $tool >/dev/null ||
        { echo "run-inline-ab.sh: $tool is missing" >&2; exit 77; }
done
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "run-inline-ab.sh: $SRC is not a git checkout: no REV to build" >&2; exit 77; }
OLD=$(git -C "$SRC" rev-parse --verify --quiet "$REV^{commit}") ||
    { echo "run-inline-ab.sh: $REV is not a commit of $SRC" >&2; exit 2; }
NEW=$(git -C "$SRC" rev-parse HEAD)
git -C "$SRC" diff --quiet HEAD -- src include apps 2>/dev/null || NEW="$NEW-dirty"
BUILDTYPE=$(sed -n "s/^ *buildtype *= *//p" "$B/meson-private/cmd_line.txt" 2>/dev/null | head -1)
BUILDTYPE=${BUILDTYPE:-$(meson introspect "$B" --buildoptions 2>/dev/null |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))' 2>/dev/null)}
[ -n "$BUILDTYPE" ] || { echo "run-inline-ab.sh: $B is not a configured meson build" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=sm,self OC_PLACEMENT=inline

W=$(mktemp -d "$B/inline-ab-XXXXXX")
cleanup() {
    git -C "$SRC" worktree remove --force "$W/src" >/dev/null 2>&1
    rm -rf "$W"
    git -C "$SRC" worktree prune
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin_of() {
    case $2 in
    histogram|index-gather) echo "$1/apps/$2" ;;
    *) echo "$1/apps/$2/$2" ;;
    esac
}
args_of() {
    case $1 in
    histogram) echo "--updates ${INLINE_AB_UPDATES:-40M} --table 10K" ;;
    transpose) echo "--rows ${INLINE_AB_ROWS:-1M} --degree 16" ;;
    index-gather) echo "--requests ${INLINE_AB_REQUESTS:-20M} --table 10K" ;;
    mcproxy) echo "--particles ${INLINE_AB_PARTICLES:-100K} --cycles 2" ;;
    *) echo "run-inline-ab.sh: unknown app $1" >&2; exit 2 ;;
    esac
}
for app in $APPS; do args_of "$app" >/dev/null || exit 2; done

# REV's apps only (and what they link), in its own build directory.
echo "run-inline-ab.sh: building $REV ($OLD) in $W ($BUILDTYPE)" >&2
git -C "$SRC" worktree add --detach "$W/src" "$OLD" >/dev/null 2>&1 ||
    { echo "run-inline-ab.sh: git worktree add $OLD failed" >&2; exit 2; }
targets=""
for app in $APPS; do targets="$targets $(bin_of . "$app" | sed 's|^\./||')"; done
if ! meson setup "$W/build" "$W/src" -Dbuildtype="$BUILDTYPE" > "$W/setup.log" 2>&1; then
    tail -20 "$W/setup.log" >&2
    echo "run-inline-ab.sh: meson setup of $REV failed" >&2
    exit 2
fi
# shellcheck disable=SC2086
if ! ninja -C "$W/build" $targets > "$W/build.log" 2>&1; then
    tail -20 "$W/build.log" >&2
    echo "run-inline-ab.sh: building $REV's apps failed" >&2
    exit 2
fi
# shellcheck disable=SC2086
ninja -C "$B" $targets > "$W/build-new.log" 2>&1 ||
    { tail -20 "$W/build-new.log" >&2; echo "run-inline-ab.sh: building $B failed" >&2; exit 2; }

failed=0
export OC_APP_CPU=0
# run TREE APP REPEAT: one run; its rate in $rate (empty when it failed),
# with OC_APP_CPU=1 the library's CPU per message in $lib
run() {
    tree=$1 app=$2
    if [ "$tree" = old ]; then dir=$W/build; else dir=$B; fi
    # shellcheck disable=SC2046
    out=$(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
          -x UCX_TLS -x OC_PLACEMENT -x OC_APP_CPU $(bin_of "$dir" "$app") $(args_of "$app") 2>&1)
    rc=$?
    rate=$(printf '%s\n' "$out" | sed -n 's/.*"rate":\([0-9.e+]*\).*/\1/p' | head -1)
    lib=$(printf '%s\n' "$out" | sed -n 's/.*"lib_ns_per_msg":\([0-9.e+]*\).*/\1/p' | head -1)
    ok=true
    if [ $rc -ne 0 ] || [ -z "$rate" ] || ! printf '%s' "$out" | grep '"verified":true' >/dev/null; then
        printf '%s\n' "$out" | tail -25 >&2
        echo "run-inline-ab.sh: $app ($tree tree) failed or did not verify" >&2
        failed=$((failed + 1))
        rate="" ok=false
    fi
    printf '{"bench":"inline-vs-rev-run","app":"%s","tree":"%s","repeat":%s,"rate":%s,"lib_ns_per_msg":%s,"verified":%s}\n' \
        "$app" "$tree" "$3" "${rate:-null}" "${lib:-null}" "$ok"
}
load1() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo null; }

# ab_pass METRIC: every app, old and new interleaved, REPEATS times; METRIC
# is "rate" (the apps' rate) or "lib" (OC_APP_CPU=1: ns in liboffcore per
# message).  One summary line per app.
ab_pass() {
    for app in $APPS; do
        v_old="" v_new="" bad=0 l0=$(load1)
        i=1
        while [ $i -le "$REPEATS" ]; do
            if [ $((i % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
            for t in $order; do
                run "$t" "$app" "$i"
                eval "v=\$$1"
                [ -n "$rate" ] && [ -n "$v" ] || bad=1
                if [ "$t" = old ]; then v_old="$v_old $v"; else v_new="$v_new $v"; fi
            done
            i=$((i + 1))
        done
        m_old=$(median "$v_old") m_new=$(median "$v_new")
        if [ "$1" = rate ]; then
            printf '{"bench":"inline-vs-rev","app":"%s","rev":"%s","rev_commit":"%s","new_commit":"%s","rate_old":%s,"rate_new":%s,"ratio":%s,"rates_old":[%s],"rates_new":[%s],' \
                "$app" "$REV" "$OLD" "$NEW" "$m_old" "$m_new" "$(ratio "$m_new" "$m_old")" \
                "$(list "$v_old")" "$(list "$v_new")"
        else
            printf '{"bench":"inline-vs-rev-cpu","app":"%s","rev":"%s","rev_commit":"%s","new_commit":"%s","lib_ns_old":%s,"lib_ns_new":%s,"ratio":%s,"lib_ns_olds":[%s],"lib_ns_news":[%s],"clock":"CLOCK_THREAD_CPUTIME_ID around oc_* calls, handlers subtracted, ns per message",' \
                "$app" "$REV" "$OLD" "$NEW" "$m_old" "$m_new" "$(ratio "$m_new" "$m_old")" \
                "$(list "$v_old")" "$(list "$v_new")"
        fi
        printf '"verified":%s,"repeats":%s,"load1_start":%s,"load1_end":%s}\n' \
            "$([ $bad -eq 0 ] && echo true || echo false)" "$REPEATS" "$l0" "$(load1)"
    done
}

ab_pass rate
[ "${INLINE_AB_CPU:-0}" = 1 ] || exit $failed
export OC_APP_CPU=1
ab_pass lib
exit $failed
