#!/bin/sh
# run-gpu-coll.sh BUILD_DIR — bench/gpu_coll.c on 2 and 8 ranks sharing the
# machine's GPUs (inline placement), then a summary per op and size: the
# same-run ratios against copy + MPI + copy back by hand and against
# offcore's host-buffer collective, and whether each run verified.  The
# issue's bars are printed beside the figures (reported, not asserted):
# allreduce on device buffers >= 1.5x by hand at >= 16 MiB and >= 1.0x at
# every size, >= 0.7x the host-buffer allreduce at >= 16 MiB.
#
# Environment (defaults): BENCH_GPU_RANKS ("2 8")  BENCH_GPU_MAX (256M in
# bytes)  BENCH_GPU_REPEATS (5)  UCX_TLS (sm,self).  Without a GPU the
# program says it skipped; exit 0.  Exit 1 when a run fails or a result
# does not verify.
set -u
B=${1:?usage: run-gpu-coll.sh BUILD_DIR}
MAX=${BENCH_GPU_MAX:-268435456}
REPEATS=${BENCH_GPU_REPEATS:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=${UCX_TLS:-sm,self} OC_PLACEMENT=inline
command -v mpirun >/dev/null || { echo "run-gpu-coll: no mpirun: skipped"; exit 0; }
OUT=$(mktemp /tmp/oc-gpu-coll-XXXXXX)
trap 'rm -f "$OUT"' EXIT
# killed (a time box around this script): what finished still comes out
trap 'cat "$OUT"; exit 143' INT TERM
. "$(dirname "$0")/stats-lib.sh"
rc=0
pass="-x OC_PLACEMENT -x UCX_TLS"
for v in OC_LIBCUDA OC_GPU_CHUNK OC_GPU_SLOTS; do
    eval "[ -z \"\${$v+set}\" ]" || pass="$pass -x $v"
done
for np in ${BENCH_GPU_RANKS:-2 8}; do
    echo "# gpu-coll: $np ranks, inline, device buffers vs by hand vs host buffers"
    # shellcheck disable=SC2086 # $pass: several words
    timeout --foreground 1800 mpirun --oversubscribe --bind-to none $pass -np "$np" \
        "$B/bench/gpu-coll" --max "$MAX" --repeats "$REPEATS" >> "$OUT" || rc=1
done
cat "$OUT"
grep -q '^gpu-coll: skipped' "$OUT" && exit 0
# ratio_byhand = byhand_us / device_us, ratio_host = host_us / device_us:
# the device path's speed as a multiple of the other's (awk, not python:
# the device kit's root has no python3)
awk "$JF_AWK"'
    /^\{/ { op = jf($0, "op"); gsub(/"/, "", op); big = jf($0, "bytes") + 0 >= 16777216
            rb = jf($0, "ratio_byhand") + 0; rh = jf($0, "ratio_host") + 0; bars = ""
            if (op == "allreduce") {
                want = big ? 1.5 : 1.0
                bars = sprintf(" byhand bar %.1fx %s", want, rb >= want ? "met" : "NOT met")
                if (big)
                    bars = bars sprintf(", host bar 0.7x %s", rh >= 0.7 ? "met" : "NOT met")
            }
            v = jf($0, "verified") == "true"; bad += !v
            printf "%-9s %d ranks %10d B: %.2fx by hand\047s speed, %.2fx the host path\047s%s%s\n",
                op, jf($0, "ranks"), jf($0, "bytes"), rb, rh, bars, v ? "" : "  NOT VERIFIED" }
    END { exit bad ? 1 : 0 }' "$OUT" || rc=1
exit $rc
