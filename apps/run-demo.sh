#!/bin/sh
# run-demo.sh BUILD_DIR — the distributed histogram on 2 ranks over offcore:
# a few seconds of tiny messages, aggregated by the runtime, verified
# exactly.  Prints one human-readable line, then the app's JSON line.
# Environment: DEMO_RANKS (2), DEMO_UPDATES (200M per rank: a few seconds), DEMO_TABLE
# (10K per rank), OC_PLACEMENT (inline), UCX_TLS (sm,self: one node).
set -u

B=${1:?usage: run-demo.sh BUILD_DIR (an already built meson build directory)}
RANKS=${DEMO_RANKS:-2}
UPDATES=${DEMO_UPDATES:-200M}
TABLE=${DEMO_TABLE:-10K}
EXE=$B/apps/histogram
if [ ! -x "$EXE" ]; then
    echo "run-demo.sh: $EXE not found: build first (ninja -C $B)" >&2
    exit 2
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=${OC_PLACEMENT:-inline}
export UCX_TLS=${UCX_TLS:-sm,self}

out=$(mpirun --allow-run-as-root --oversubscribe -np "$RANKS" \
      -x OC_PLACEMENT -x UCX_TLS "$EXE" --updates "$UPDATES" --table "$TABLE")
rc=$?

get() {
    printf '%s\n' "$out" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" | head -n 1 | tr -d '"'
}
rate=$(get rate)
case $out in
*'"verified":true'*) verdict="verified exactly" ;;
*) verdict="NOT VERIFIED" ;;
esac
awk -v r="${rate:-0}" -v p="$(get ranks)" -v n="$(get updates_per_rank)" \
    -v t="$(get table_per_rank)" -v s="$(get seconds)" -v pl="$(get placement)" \
    -v v="$verdict" 'BEGIN {
    printf "histogram over offcore (%s): %s ranks x %.0fM updates into %s counters/rank" \
           " in %.2f s = %.1f M updates/s, %s\n", pl, p, n / 1e6, t, s, r / 1e6, v }'
printf '%s\n' "$out"
if [ "$rc" -ne 0 ] || [ "$verdict" != "verified exactly" ]; then
    echo "run-demo.sh: the histogram failed (exit $rc)" >&2
    exit 1
fi
exit 0
