#!/bin/sh
# scripts/fuzz.sh BUILDDIR RUNS: run every libFuzzer target of a -Dfuzz=true
# build for RUNS executions each, starting from its generated seed corpus in
# a temporary directory.  Fails on any crash, sanitizer report, leak or
# timeout; the input that caused it is kept in BUILDDIR/fuzz-artifacts/ and
# can be replayed with BUILDDIR/tests/fuzz/fuzz_TARGET_replay FILE (any
# build).  Targets: wire (bundles), ctl (control frames and streams), acl
# (ClassBench rule and trace files, then the classifier's tree builder), esp
# (ESP decapsulation), pkt
# (packet parser, offcore-dp rules and config).
# FUZZ_SEED=N makes a run repeatable (libFuzzer prints the seed it used).
set -eu
dir=$1
runs=$2
corpus=$(mktemp -d "${TMPDIR:-/tmp}/offcore-fuzz.XXXXXX")
trap 'rm -rf "$corpus"' EXIT INT TERM
artifacts=$dir/fuzz-artifacts
mkdir -p "$artifacts"

for target in wire ctl acl pkt esp; do
    # The control decoder runs ~10x slower per input (framing, and a
    # connection reader per input): 1M executions keep CI in its budget.
    runs=$2
    if [ "$target" = ctl ] && [ "$runs" -gt "${FUZZ_CTL_RUNS:-1000000}" ]; then
        runs=${FUZZ_CTL_RUNS:-1000000}
    fi
    # pkt: ~16K inputs/s here once the corpus grows (config texts
    # dominate): 1M keep it near a minute
    if [ "$target" = pkt ] && [ "$runs" -gt "${FUZZ_PKT_RUNS:-1000000}" ]; then
        runs=${FUZZ_PKT_RUNS:-1000000}
    fi
    # The classifier target builds trees for accepted rule files: slower
    # per input again.
    if [ "$target" = acl ] && [ "$runs" -gt "${FUZZ_ACL_RUNS:-1000000}" ]; then
        runs=${FUZZ_ACL_RUNS:-1000000}
    fi
    # esp: ~150K inputs/s here; 2M keep it near 15 s
    if [ "$target" = esp ] && [ "$runs" -gt "${FUZZ_ESP_RUNS:-2000000}" ]; then
        runs=${FUZZ_ESP_RUNS:-2000000}
    fi
    fuzzer=$dir/tests/fuzz/fuzz_$target
    log=$dir/fuzz-$target.log
    mkdir -p "$corpus/$target"
    "$dir/tests/fuzz/fuzz_${target}_replay" --write-seeds "$corpus/$target"
    echo "fuzz_$target: $runs runs (log: $log)"
    rc=0
    "$fuzzer" -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
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
