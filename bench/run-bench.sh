#!/bin/bash
# run-bench.sh BUILD_DIR — offcore against its baselines, in one run.
#
# Runs, on one node: histogram over offcore (inline placement) and over
# plain MPI; index-gather, the sparse transpose and the Monte-Carlo proxy
# likewise; single-core memcpy.  Each offcore/MPI pair runs BENCH_REPEATS
# times, interleaved (offcore, MPI, offcore, MPI, ...), so both see the same
# moments of a shared machine.  Prints every JSON line the programs print,
# then one summary JSON line per app: the median rate of each, their ratio,
# every run's own offcore/MPI ratio, and offcore's wire bytes per operation
# next to the memcpy bandwidth (how far from memory-bound it is).
# Exits non-zero when any program fails or does not verify.
#
# Sizes and settings (environment; defaults in parentheses):
#   BENCH_REPEATS (3: runs of each program; the summary takes medians)
#   BENCH_RANKS (2)  BENCH_UPDATES (100M)  BENCH_REQUESTS (100M)
#   BENCH_ROWS (2M: transpose rows per rank, 16 nonzeros per row)
#   BENCH_PARTICLES (200K: mcproxy particles per rank and cycle, 2 cycles)
#   BENCH_TABLE (10K, per rank)  BENCH_IG_TABLE (BENCH_TABLE)
#   BENCH_POLL_INTERVAL (the apps' default)  BENCH_BATCH (the MPI apps' default)
#   BENCH_MEMCPY_MS (200 per size)  BENCH_SKIP (space-separated program names)
#   OC_PLACEMENT (inline)  UCX_TLS (sm,self: one node)  UCX_RNDV_THRESH (inf)
# UCX_RNDV_THRESH=inf: bundles are 64 KiB, and on shared memory UCX's eager
# copies beat its default cma rendezvous there (docs/facts.md, UCX).
set -u -o pipefail
. "$(dirname "$0")/stats-lib.sh"

B=${1:?usage: run-bench.sh BUILD_DIR (an already built meson build directory)}
RANKS=${BENCH_RANKS:-2}
UPDATES=${BENCH_UPDATES:-100M}
REQUESTS=${BENCH_REQUESTS:-100M}
ROWS=${BENCH_ROWS:-2M}
PARTICLES=${BENCH_PARTICLES:-200K}
TABLE=${BENCH_TABLE:-10K}
IG_TABLE=${BENCH_IG_TABLE:-$TABLE}
MEMCPY_MS=${BENCH_MEMCPY_MS:-200}
REPEATS=${BENCH_REPEATS:-3}
case $REPEATS in
''|*[!0-9]*|0) echo "run-bench.sh: BENCH_REPEATS must be a positive integer (got '$REPEATS')" >&2
    exit 2 ;;
esac
SKIP=" ${BENCH_SKIP:-} "

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=${OC_PLACEMENT:-inline}
export UCX_TLS=${UCX_TLS:-sm,self}
export UCX_RNDV_THRESH=${UCX_RNDV_THRESH:-inf}

for exe in apps/histogram apps/histogram-mpi apps/index-gather \
           apps/index-gather-mpi apps/transpose/transpose \
           apps/transpose/transpose-mpi apps/mcproxy/mcproxy \
           apps/mcproxy/mcproxy-mpi bench/bench-memcpy; do
    if [ ! -x "$B/$exe" ]; then
        echo "run-bench.sh: $B/$exe not found: build first (ninja -C $B)" >&2
        exit 2
    fi
done

OC_FLAGS=${BENCH_POLL_INTERVAL:+--poll-interval $BENCH_POLL_INTERVAL}
MPI_FLAGS=${BENCH_BATCH:+--batch $BENCH_BATCH}
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np $RANKS \
 -x OC_PLACEMENT -x UCX_TLS -x UCX_RNDV_THRESH"

failed=0

# run NAME CMD...: run one program, print its JSON line, keep it in $out.
run() {
    name=$1
    shift
    case $SKIP in *" $name "*) out=""; return 0 ;; esac
    out=$("$@")
    rc=$?
    printf '%s\n' "$out"
    if [ "$rc" -ne 0 ]; then
        echo "run-bench.sh: $name failed (exit $rc): $*" >&2
        failed=$((failed + 1))
    elif [ "$name" != memcpy ]; then
        case $out in
        *'"verified":true'*) ;;
        *)
            echo "run-bench.sh: $name did not verify: $*" >&2
            failed=$((failed + 1))
            ;;
        esac
    fi
}


# calc EXPR with a, b, c, d bound: awk arithmetic, "null" when an operand
# is missing or a division by zero would happen.
calc() {
    awk -v a="${2:-}" -v b="${3:-}" -v c="${4:-}" -v d="${5:-}" "BEGIN {
        if (a == \"\" || b == \"\") { print \"null\"; exit }
        $1 }"
}

# The commands of each pair (the JSON line lands in $out).
hist_oc() { run histogram $MPIRUN "$B/apps/histogram" --updates "$UPDATES" --table "$TABLE" $OC_FLAGS; }
hist_mpi() { run histogram-mpi $MPIRUN "$B/apps/histogram-mpi" --updates "$UPDATES" --table "$TABLE" $MPI_FLAGS; }
ig_oc() { run index-gather $MPIRUN "$B/apps/index-gather" --requests "$REQUESTS" --table "$IG_TABLE" $OC_FLAGS; }
ig_mpi() { run index-gather-mpi $MPIRUN "$B/apps/index-gather-mpi" --requests "$REQUESTS" --table "$IG_TABLE" $MPI_FLAGS; }
tp_oc() { run transpose $MPIRUN "$B/apps/transpose/transpose" --rows "$ROWS" $OC_FLAGS; }
tp_mpi() { run transpose-mpi $MPIRUN "$B/apps/transpose/transpose-mpi" --rows "$ROWS"; }
mc_oc() { run mcproxy $MPIRUN "$B/apps/mcproxy/mcproxy" --particles "$PARTICLES" $OC_FLAGS; }
mc_mpi() { run mcproxy-mpi $MPIRUN "$B/apps/mcproxy/mcproxy-mpi" --particles "$PARTICLES"; }


# pair TAG: run TAG_oc and TAG_mpi REPEATS times, interleaved; leaves the
# rates in ${TAG}_oc_rates / ${TAG}_mpi_rates, each run's ratio in
# ${TAG}_ratios and the last offcore line (for its counters) in ${TAG}_oc_line.
pair() {
    tag=$1 i=0 ocr="" mpir="" rat="" ocl=""
    while [ "$i" -lt "$REPEATS" ]; do
        "${tag}_oc"
        a=$(field "$out" rate)
        [ -n "$out" ] && ocl=$out
        "${tag}_mpi"
        b=$(field "$out" rate)
        ocr="$ocr $a" mpir="$mpir $b"
        if [ -n "$a" ] && [ -n "$b" ]; then
            rat="$rat $(calc 'if (b == 0) print "null"; else printf "%.3f\n", a / b' "$a" "$b")"
        fi
        i=$((i + 1))
    done
    eval "${tag}_oc_rates=\$ocr ${tag}_mpi_rates=\$mpir ${tag}_ratios=\$rat ${tag}_oc_line=\$ocl"
}

pair hist
pair ig
pair tp
pair mc
run memcpy "$B/bench/bench-memcpy" --ms "$MEMCPY_MS"
memcpy_out=$out

# The 64 KiB figure: the bundle size, so the copy a bundle costs.
mc64=$(printf '%s\n' "$memcpy_out" | grep '"bytes":65536,' | head -n 1)
mc64=$(field "$mc64" GBps)

# summary APP TAG OPS_PER_RANK_KEY: one line from pair TAG's runs.
summary() {
    app=$1 tag=$2 key=$3
    eval "oc=\$${tag}_oc_line ocr=\$${tag}_oc_rates mpir=\$${tag}_mpi_rates rat=\$${tag}_ratios"
    ranks=$(field "$oc" ranks)
    [ -n "$ranks" ] || ranks=$RANKS
    n=$(field "$oc" "$key")
    r_oc=$(median "$ocr")
    r_mpi=$(median "$mpir")
    wire=$(field "$oc" wire_bytes_sent)
    ratio=$(calc 'if (b == 0) print "null"; else printf "%.3f\n", a / b' "$r_oc" "$r_mpi")
    runs=$(printf '%s\n' $rat | paste -s -d, -)
    # Wire bytes per operation, over every rank's sends (requests and
    # replies for index-gather).
    per_op=$(calc 'if (b * c == 0) print "null"; else printf "%.2f\n", a / (b * c)' \
             "$wire" "$ranks" "$n")
    wire_gbps=$(calc 'printf "%.3f\n", a * b / 1e9' "$r_oc" "$per_op")
    # Memory-bound rate: every rank copies its wire bytes once at
    # single-core memcpy speed and does nothing else.
    bound=$(calc 'if (b == 0) print "null"; else printf "%.0f\n", c * a * 1e9 / b' \
            "$mc64" "$per_op" "$ranks")
    frac=$(calc 'if (b == 0) print "null"; else printf "%.3f\n", a / b' "$r_oc" "$bound")
    printf '{"bench":"%s","ranks":%s,"%s":%s,"runs":%s,"offcore_rate":%s,"mpi_rate":%s,' \
        "$app" "${ranks:-null}" "$key" "${n:-null}" "$REPEATS" "${r_oc:-null}" "${r_mpi:-null}"
    printf '"ratio_offcore_over_mpi":%s,"ratio_each_run":[%s],' "$ratio" "$runs"
    printf '"wire_bytes_per_op":%s,"offcore_wire_GBps":%s,' "$per_op" "$wire_gbps"
    printf '"memcpy_64KiB_GBps":%s,"memcpy_bound_rate":%s,"fraction_of_memcpy_bound":%s,' \
        "${mc64:-null}" "$bound" "$frac"
    printf '"placement":"%s","ucx_tls":"%s","ucx_rndv_thresh":"%s"}\n' \
        "$OC_PLACEMENT" "$UCX_TLS" "$UCX_RNDV_THRESH"
}

summary histogram hist updates_per_rank
summary index-gather ig requests_per_rank
summary transpose tp nonzeros_per_rank
summary mcproxy mc particles_per_rank_cycle

if [ "$failed" -ne 0 ]; then
    echo "run-bench.sh: $failed program(s) failed or did not verify" >&2
    exit 1
fi
exit 0
