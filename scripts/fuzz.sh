#!/bin/sh
# scripts/fuzz.sh BUILDDIR RUNS: run every libFuzzer target of a -Dfuzz=true
# build for RUNS executions each, starting from its generated seed corpus in
# a temporary directory.  Fails on any crash, sanitizer report, leak or
# timeout; the input that caused it is kept in BUILDDIR/fuzz-artifacts/ and
# can be replayed with BUILDDIR/tests/fuzz/fuzz_TARGET_replay FILE (any
# build).  Each target with its cap on RUNS (libFuzzer's executions per
# second differ by 100x between them; the caps keep CI's 2-core run within
# its budget, a few tens of seconds each):
#   wire       bundles                                      no cap
#   ctl        control frames and streams (~10x slower)     1M
#   prom       Prometheus text, as offcore stat reads it    1M (~25 s)
#   acl        ClassBench rule/trace files, tree builder     500K
#   acl6       IPv6 classifier: rules, live updates, every   1000 (~10 s)
#              lookup path (60-120/s: each run builds
#              classifiers and waits out their rebuild
#              thread's 2 ms sleep)
#   pkt        packet parser, offcore-dp rules and config    500K (~30 s)
#   tenant     VXLAN decap, anti-spoofing, conntrack paths   500K
#   esp        ESP decapsulation                             500K
#   nvmf       NVMe/TCP PDU streams                          500K (~25 s)
#   nvmf_stream  the target's connection code over a fake     35K (~35 s)
#              ring, several PDUs per segment (~1000/s);
#              inputs up to 48 KiB (others 4 KiB): a Write
#              with 16 KiB in the capsule, received in place,
#              must fit whole
#   nvmf_conf  offcore-nvmf configuration files              200K (~20 s)
#   colld      collective descriptors, rank -> agent         500K
#   dp_ctl     offcore-dp control lines, as the socket reads 1M (~9 s)
# A caps entry is TARGET:CAP[:MAX_LEN] (libFuzzer's -max_len, 4096 unless
# given).  FUZZ_CAP_<TARGET>=N overrides a cap.
# FUZZ_SEED=N makes a run repeatable (libFuzzer prints the seed it used);
# FUZZ_TARGETS="a b" runs only those.
set -eu
dir=$1
runs_all=$2
corpus=$(mktemp -d "${TMPDIR:-/tmp}/offcore-fuzz.XXXXXX")
trap 'rm -rf "$corpus"' EXIT INT TERM
artifacts=$dir/fuzz-artifacts
mkdir -p "$artifacts"

caps="wire:0 ctl:1000000 prom:1000000 acl:500000 acl6:1000 pkt:500000 tenant:500000 esp:500000 nvmf:500000 nvmf_stream:35000:49152 nvmf_conf:200000 colld:500000 dp_ctl:1000000"
for tc in $caps; do
    target=${tc%%:*}
    rest=${tc#*:}
    case $rest in
    *:*) max_len=${rest#*:} ;;
    *) max_len=4096 ;;
    esac
    cap=$(eval echo "\${FUZZ_CAP_$(echo "$target" | tr a-z A-Z):-${rest%%:*}}")
    if [ -n "${FUZZ_TARGETS:-}" ]; then
        case " $FUZZ_TARGETS " in *" $target "*) ;; *) continue ;; esac
    fi
    if [ ! -x "$dir/tests/fuzz/fuzz_$target" ]; then
        echo "fuzz_$target: not built in $dir" >&2
        exit 1
    fi
    runs=$runs_all
    if [ "$cap" -gt 0 ] && [ "$runs" -gt "$cap" ]; then
        runs=$cap
    fi
    fuzzer=$dir/tests/fuzz/fuzz_$target
    log=$dir/fuzz-$target.log
    mkdir -p "$corpus/$target"
    "$dir/tests/fuzz/fuzz_${target}_replay" --write-seeds "$corpus/$target"
    echo "fuzz_$target: $runs runs (log: $log)"
    rc=0
    "$fuzzer" -runs="$runs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} \
        -artifact_prefix="$artifacts/" "$corpus/$target" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
    if [ "$rc" -ne 0 ]; then
        tail -n 80 "$log"
        echo "fuzz_$target: FAILED (exit $rc); input saved in $artifacts/" >&2
        exit 1
    fi
    grep -E '^INFO: Seed:' "$log" || true
    echo "$cov"
    echo "fuzz_$target: ${execs:-?} executions, $(ls "$corpus/$target" | wc -l) corpus inputs, no crash"
    if [ -z "$execs" ] || [ "$execs" -lt "$runs" ]; then
        echo "fuzz_$target: ran fewer than $runs executions" >&2
        exit 1
    fi
done
