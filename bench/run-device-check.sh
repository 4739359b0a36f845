#!/bin/bash
# run-device-check.sh RUN_DEVICE — the meson test of run-device.sh
# (run-device-check), which needs the 16-core machine to run for real: the
# script parses, --help names every step, bad settings are refused, the bar
# lines come out right from a made-up device.jsonl (--summary), and a run
# whose DEADLINE leaves no time skips every step and still ends with its
# bar lines.  No bench runs; well under a second.
set -u -o pipefail
script=$1
T=$(mktemp -d /tmp/oc-devcheck-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash -n "$script" || fail "bash -n"
help=$(bash "$script" --help) || fail "--help exited $?"
for s in placements threads coll-split coll-nosplit classifier4 classifier6 nvmf gpu DEADLINE DEVICE_SCALE; do
    case $help in *"$s"*) ;; *) fail "--help does not name $s" ;; esac
done
DEVICE_SCALE=huge bash "$script" > /dev/null 2>&1; [ $? -eq 2 ] || fail "DEVICE_SCALE=huge not refused"
DEADLINE=soon bash "$script" > /dev/null 2>&1; [ $? -eq 2 ] || fail "DEADLINE=soon not refused"
bash "$script" --summary "$T/none" > /dev/null 2>&1; [ $? -eq 2 ] || fail "--summary of a missing file not refused"

# bars from known lines: medians, ratios, met, nulls where nothing ran
{
    echo '{"dev":"start","scale":"full","deadline_s":540}'
    for r in 100 110 90; do echo "{\"step\":\"placements\",\"dev\":\"run\",\"app\":\"histogram\",\"case\":\"inline:8\",\"rate\":$r,\"verified\":true}"; done
    for r in 140 150 130; do echo "{\"step\":\"placements\",\"dev\":\"run\",\"app\":\"histogram\",\"case\":\"agent:8:4\",\"rate\":$r,\"verified\":true}"; done
    echo '{"step":"placements","dev":"run","app":"histogram","case":"agent:8:4","rate":1,"verified":false}'
    for r in 10 10 10; do echo "{\"step\":\"threads\",\"dev\":\"run\",\"app\":\"histogram\",\"case\":\"agent:8:1\",\"rate\":$r,\"verified\":true}"; done
    for r in 60 70 80; do echo "{\"step\":\"threads\",\"dev\":\"run\",\"app\":\"histogram\",\"case\":\"agent:8:8\",\"rate\":$r,\"verified\":true}"; done
    echo '{"step":"coll-split","bench":"coll","op":"allreduce","placement":"agent","bytes":8,"us":3.0,"mpi_us":2.0,"verified":true,"agent_threads":4}'
    echo '{"step":"coll-split","bench":"coll","op":"allreduce","placement":"agent","bytes":4194304,"us":2.2,"mpi_us":2.0,"verified":true,"agent_threads":4}'
    echo '{"step":"coll-split","bench":"coll","op":"allreduce","measure":"overlap","bytes":1048576,"us":500,"mpi_us":400,"overlap_pct":95.0,"verified":true,"agent_threads":4}'
    echo '{"step":"coll-split","bench":"coll","op":"allreduce","measure":"time_to_solution","bytes":1048576,"compute_factor":1,"us":1,"mpi_us":2,"gain":1.6,"verified":true,"agent_threads":4}'
    echo '{"step":"classifier4","bench":"classifier","ip":4,"family":"acl1","impl":"offcore","mpps":30,"verified":true,"method":"avx512","rte_acl_fastest":"avx512x32","ratio_vs_rte_acl":1.25}'
    echo '{"step":"classifier4","bench":"classifier","ip":4,"family":"acl1","impl":"offcore","mpps":9,"verified":true,"method":"scalar","rte_acl_fastest":"avx512x32","ratio_vs_rte_acl":0.3}'
    echo '{"step":"nvmf","bench": "nvmf", "case": "randread-4k-qd32", "config": "plain", "run": 1, "iops": 600000, "cores": "0-7"}'
    echo '{"step":"nvmf","bench": "nvmf", "case": "randread-4k-qd32", "config": "plain", "run": 1, "iops": 120000, "cores": "0"}'
} > "$T/dev.jsonl"
bash "$script" --summary "$T/dev.jsonl" > "$T/bars" || fail "--summary exited $?"
want() { grep -qF "$1" "$T/bars" || { cat "$T/bars"; fail "no bar line with: $1"; }; }
want '"bar":"histogram 8 ranks + agent 4 threads / inline 8 >= 1.3x","measured":1.400,"met":true,"agent_rates":[140,150,130],"inline_rates":[100,110,90]}'
want '"bar":"index-gather 8 ranks + agent 4 threads / inline 8 >= 1.3x","measured":null,"met":null'
want '"bar":"histogram agent 8 threads / 1 thread >= 7x","measured":7.000,"met":true'
want '"bar":"allreduce worst latency / Open MPI <= 1.2x, coll-split 4 threads","measured":1.500,"met":false}'
want '"bar":"iallreduce overlap at 1 MiB >= 90 %, coll-split 4 threads","measured":95.000,"met":true}'
want '"bar":"time to solution, compute = MPI allreduce, 1 MiB >= 1.5x, coll-split 4 threads","measured":1.600,"met":true}'
want '"bar":"offcore / IPv4 acl1 vs rte_acl avx512x32 >= 1.2x","measured":1.250,"met":true}'
want '"issue":24,"bar":"nvmf 4 KiB randread QD32, workers on cores 0-7 / 1 worker >= 6x (see step-nvmf.log)","measured":5.000,"met":false}'
want '"issue":"gpu","bar":"gpu collectives (see step-gpu.log)","measured":null,"met":null}'

# no time left: every step skipped, the run still ends with its bars
OUT_DIR=$T/out DEADLINE=22 B=$T/nobuild bash "$script" > "$T/run" 2>&1 || fail "deadline run exited $?"
n=$(grep -c '"dev":"step",.*"skipped":"deadline"' "$T/out/device.jsonl")
[ "$n" -eq 8 ] || { cat "$T/run"; fail "$n of 8 steps skipped for the deadline"; }
grep -q '"dev":"bar","issue":22,' "$T/out/device.jsonl" || fail "no bar lines after a deadline run"
echo "PASS: run-device.sh parses, refuses bad settings, its bars add up, its deadline holds"
