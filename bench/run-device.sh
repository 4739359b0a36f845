#!/bin/bash
# run-device.sh — every 16-core figure the open issues ask for, in one
# time-boxed run: the command a session lent a 16-core GPU machine for a few
# minutes runs inside the device kit's root (cwd the project's root with
# build/, data/ and bench/ in it; see "One device session" in
# docs/results.md).  Steps, most important first, each one a process of its
# own under `timeout`, so that a crash or an overrun of one loses none of the
# others' lines:
#
#  1 placements  #22: every app, inline N ranks vs N ranks + agent AGENT_T
#                threads, REPS interleaved (app-major within a repeat)
#  2 threads     #22: histogram, N ranks + agent 1/2/4/8 routing threads
#  3 coll-split  #23: bench/run-coll-threads.sh, N ranks pinned, agent 1
#                and 4 threads (the allreduce split across threads on)
#  4 coll-nosplit #23: the same at 4 threads with OC_AGENT_COLL_SPLIT_MIN=0
#  5 classifier4 #25: bench-classifier --ip 4, acl1 and fw1, every rte_acl
#  6 classifier6      method (AVX-512 ones allowed), then --ip 6
#  7 nvmf        #24: bench/nvmf-bench.py --cores 0-7 --queues 8 vs --cores 0,
#                only where the root has fio and python3 (the kit packs
#                neither: the line says "skipped: no fio")
#  8 gpu         bench/run-gpu-coll.sh on the real GPU (2 and 8 ranks)
#
# Output: OUT_DIR/device.jsonl (default /out), appended line by line as the
# steps go: every bench's own JSON lines with "step" added in front, a
# {"dev":"step",...} line per step (rc, seconds, timed_out or skipped), and
# at the end one {"dev":"bar","issue":..,"bar":..,"measured":..,"met":..}
# line per bar of the issues, from the medians of what finished (met: null
# when nothing was measured).  OUT_DIR/step-NAME.log keeps each step's other
# output.  Nothing is asserted: exit 0 unless the script itself is misused.
# `run-device.sh --summary FILE` prints the bar lines of a device.jsonl
# again (for a run killed before its end, whose steps' lines are there).
#
# Environment (defaults): DEADLINE (540: seconds from the start by which
# the whole run, summary included, has ended)  DEVICE_SCALE (full; small:
# the same steps at tiny sizes on 2 ranks, unpinned, for a dry run on a
# 2-core machine)  REPS (3; small 2)  B (build)  OUT_DIR (/out)
# STEPS (all of the above, in that order; a list to run fewer).
#
# Costs on the 16-core machine, estimated from the issues' figures (tree
# 4c19bad) plus ~1 s of mpirun start-up per run; each step's box is its
# estimate with room, and no step starts a box that could end past
# DEADLINE - 20 s (a killed step's 10 s of grace, then the summary):
#  placements  4 apps x 2 cases x 3 = 24 runs of 1-3 s: ~70 s (box 170)
#  threads     4 cases x 3 = 12 runs, T=1 ~2.2 s of routing: ~35 s (box 80)
#  coll-split  2 agents x (3 ops x 8 sizes to 4 MiB + overlap + time to
#              solution), 21 ms an allreduce at 4 MiB today: ~60 s (box 110)
#  coll-nosplit 1 agent: ~30 s (box 60)
#  classifier  2 families x 6 contenders x 3 + builds (0.35-1.7 s a
#              method) + 1000 paced updates (1 s): ~25 s each (box 40)
#  gpu         2 and 8 ranks to 64 MiB, 3 repeats: ~30 s (the rest, >= 20)
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
    -h | --help) usage; exit 0 ;;
    --step) ;;
    --summary)
        [ -r "${2:-}" ] || { echo "run-device.sh: --summary FILE: no file '${2:-}'" >&2; exit 2; }
        # the scale the run had, from its start line
        DEVICE_SCALE=$(sed -n 's/.*"dev":"start","scale":"\([a-z]*\)".*/\1/p' "$2" | head -1)
        DEVICE_SCALE=${DEVICE_SCALE:-full} ;;
    "") ;;
    *) echo "run-device.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
esac

B=${B:-build}
OUT_DIR=${OUT_DIR:-/out}
DEADLINE=${DEADLINE:-540}
SCALE=${DEVICE_SCALE:-full}
HERE=$(cd "$(dirname "$0")" && pwd)
J=$OUT_DIR/device.jsonl
RESERVE=20 # seconds kept: a killed step's grace (10) and the summary
. "$HERE/stats-lib.sh"
case $SCALE in
    full) RANKS=8 AGENT_T=4 SWEEP="1 2 4 8" COLL_T="1 4" REPS=${REPS:-3}
          UPD=50M REQ=20M ROWS=1M PART=100K COLL_MAX=4194304 OVERLAP=65536,1048576
          NV_CORES=0-7 NV_ARGS="--seconds 5"
          CLS_ARGS="--repeats $REPS --update-ops 1000"
          GPU_RANKS="2 8" GPU_MAX=67108864 ;;
    small) RANKS=2 AGENT_T=2 SWEEP="1 2" COLL_T="1 2" REPS=${REPS:-2}
          UPD=1M REQ=500K ROWS=20K PART=2K COLL_MAX=65536 OVERLAP=1048576
          NV_CORES=0-1 NV_ARGS="--seconds 2 --size 64M"
          CLS_ARGS="--repeats 1 --keys 20000 --linear-keys 2000 --update-ops 200"
          GPU_RANKS="2" GPU_MAX=1048576 ;;
    *) echo "run-device.sh: DEVICE_SCALE is full or small, not '$SCALE'" >&2; exit 2 ;;
esac
case $DEADLINE in '' | *[!0-9]*) echo "run-device.sh: DEADLINE: seconds, not '$DEADLINE'" >&2; exit 2 ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=${UCX_TLS:-sm,self}
NCPU=$(nproc)

# tag STEP: each JSON line of stdin to $J with "step" in front, the rest to
# the step's log (OUT_DIR/step-STEP.raw, the step's whole output, stays when
# the run is killed before tagging it)
tag() {
    local l
    while IFS= read -r l; do
        case $l in
            '{'*) printf '{"step":"%s",%s\n' "$1" "${l#\{}" >> "$J" ;;
            *) printf '%s\n' "$l" >> "$OUT_DIR/step-$1.log" ;;
        esac
    done
}

# ---------------------------------------------------------------- steps
# Each runs as `run-device.sh --step NAME` under timeout, with START_S
# (the run's start) in the environment.

left() { echo $((DEADLINE - RESERVE - ($(date +%s) - START_S))); }

app_bin() { # APP
    if [ -x "$B/apps/$1/$1" ]; then echo "$B/apps/$1/$1"; else echo "$B/apps/$1"; fi
}
app_args() {
    case $1 in
        histogram) echo "--updates $UPD --table 10K" ;;
        index-gather) echo "--requests $REQ --table 10K" ;;
        transpose) echo "--rows $ROWS --degree 16" ;;
        mcproxy) echo "--particles $PART --cycles 2" ;;
    esac
}

# one_app STEP APP CASE: CASE inline:N or agent:N:T; ranks pinned to cores
# 0..N-1 and the agent to the next T cores where the machine has them,
# else unpinned (the small scale on 2 cores).  One JSON line.
JOB=100
one_app() {
    local step=$1 app=$2 c=$3 kind n t=0 envs pin="" bind agent_cpus="" rc t0 t1 out rate ok box
    kind=${c%%:*} n=${c#*:}
    if [ "$kind" = agent ]; then t=${n#*:} n=${n%%:*}; fi
    box=$(left)
    [ "$box" -gt 120 ] && box=120
    [ "$box" -lt 5 ] && { echo "deadline: $app $c not run" >&2; return; }
    bind="--oversubscribe --bind-to none"
    if [ "$NCPU" -ge $((n + t)) ]; then
        pin="taskset -c 0-$((n - 1))" bind="--bind-to hwthread --map-by hwthread"
        [ "$t" -gt 0 ] && agent_cpus=$n-$((n + t - 1))
    fi
    envs="-x OC_PLACEMENT=inline"
    if [ "$kind" = agent ]; then
        JOB=$((JOB + 1))
        rm -f "$T/agent.sock"
        start_agent "$agent_cpus" --threads "$t"
        envs="-x OC_PLACEMENT=agent -x OC_AGENT=unix:$T/agent.sock -x OC_JOB=$JOB"
        envs="$envs -x OC_JOB_KEY=$("$B/src/tools/offcore" job-key --job $JOB --cluster-key "$T/key")"
    fi
    t0=$(date +%s.%N)
    # --foreground: in the step's process group, so that the step's own
    # timeout reaches this mpirun (a plain timeout makes a group of its own)
    # shellcheck disable=SC2086,SC2046 # $pin $bind $envs $(app_args): several words
    out=$(timeout --foreground "$box" $pin mpirun $bind -np "$n" -x UCX_TLS $envs \
        "$(app_bin "$app")" $(app_args "$app") 2> "$T/err")
    rc=$?
    t1=$(date +%s.%N)
    [ "$kind" = agent ] && stop_agent
    rate=$(field "$out" rate)
    ok=false
    [ $rc -eq 0 ] && case $out in *'"verified":true'*) ok=true ;; esac
    printf '{"dev":"run","app":"%s","case":"%s","ranks":%d,"agent_threads":%d,"pinned":%s,"rate":%s,"verified":%s,"rc":%d,"wall_s":%s}\n' \
        "$app" "$c" "$n" "$t" "$([ -n "$pin" ] && echo true || echo false)" "${rate:-null}" \
        $ok $rc "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
    [ $ok = true ] || echo "FAILED $app $c rc $rc: $(tail -3 "$T/err" | tr '\n' ' ')" >&2
}

# cases STEP "APPS" "CASES": REPS rounds, each every app in every case
cases() {
    local step=$1 apps=$2 list=$3 app c
    T=$(mktemp -d /tmp/oc-device-XXXXXX)
    AGENT=
    trap '[ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; rm -rf "$T"' EXIT
    B=$(cd "$B" && pwd)
    . "$HERE/agent-lib.sh"
    "$B/src/tools/offcore" keygen > "$T/key" && chmod 600 "$T/key"
    for _ in $(seq 1 "$REPS"); do
        for app in $apps; do
            for c in $list; do one_app "$step" "$app" "$c"; done
        done
    done
}

coll_pin() { # THREADS: y when the machine has cores for ranks + threads
    local t m=0
    for t in $1; do [ "$t" -gt $m ] && m=$t; done
    [ "$NCPU" -ge $((RANKS + m)) ] && echo y || echo n
}

step() {
    case $1 in
        placements) cases "$1" "histogram index-gather transpose mcproxy" \
            "inline:$RANKS agent:$RANKS:$AGENT_T" ;;
        threads) cases "$1" histogram "$(for t in $SWEEP; do printf 'agent:%d:%d ' "$RANKS" "$t"; done)" ;;
        coll-split)
            BENCH_RANKS=$RANKS BENCH_PIN=$(coll_pin "$COLL_T") BENCH_COLL_THREADS=$COLL_T \
                BENCH_COLL_MAX=$COLL_MAX BENCH_COLL_REPEATS=$REPS BENCH_COLL_OVERLAP=$OVERLAP \
                sh "$HERE/run-coll-threads.sh" "$B" ;;
        coll-nosplit)
            set -- "${COLL_T##* }"
            OC_AGENT_COLL_SPLIT_MIN=0 BENCH_RANKS=$RANKS BENCH_PIN=$(coll_pin "$1") \
                BENCH_COLL_THREADS=$1 BENCH_COLL_MAX=$COLL_MAX BENCH_COLL_REPEATS=$REPS BENCH_COLL_OVERLAP=$OVERLAP \
                sh "$HERE/run-coll-threads.sh" "$B" ;;
        classifier4 | classifier6)
            # shellcheck disable=SC2086 # $CLS_ARGS: several words
            taskset -c $((NCPU - 1)) "$B/bench/bench-classifier" --data data/classbench \
                --families acl1,fw1 --ip "${1#classifier}" $CLS_ARGS ;;
        nvmf)
            command -v fio > /dev/null || { echo "skipped: no fio"; return 0; }
            command -v python3 > /dev/null || { echo "skipped: no python3"; return 0; }
            local w=$((${NV_CORES#*-} + 1))
            [ "$NCPU" -ge "$w" ] || { echo "skipped: fewer than $w cores"; return 0; }
            # W workers and 1, W queues each time, alternate invocations
            for _ in $(seq 1 "$REPS"); do
                for c in "$NV_CORES" 0; do
                    # shellcheck disable=SC2086 # $NV_ARGS: several words
                    python3 "$HERE/nvmf-bench.py" "$B" --cases randread-4k --configs fio,plain \
                        --cores "$c" --queues "$w" --repeats 1 $NV_ARGS
                done
            done ;;
        gpu)
            BENCH_GPU_RANKS=$GPU_RANKS BENCH_GPU_MAX=$GPU_MAX BENCH_GPU_REPEATS=$REPS \
                sh "$HERE/run-gpu-coll.sh" "$B" ;;
        *) echo "run-device.sh: no step '$1'" >&2; return 2 ;;
    esac
}

if [ "${1:-}" = --step ]; then
    # the time box's TERM: bash first waits for the foreground child (which
    # got the TERM too, and may still print what it finished), then exits
    trap 'exit 143' INT TERM
    step "$2"
    exit $?
fi

# ---------------------------------------------------------------- summary
# One bar line per bar of the issues, from the medians of the steps' lines.
summary() {
    awk -v ranks="$RANKS" -v at="$AGENT_T" -v sweep="$SWEEP" "$JF_AWK"'
    function med(list,   n, a, i, j, t) {
        n = split(list, a, " "); if (n == 0) return ""
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
        return n % 2 ? a[(n+1)/2] + 0 : (a[n/2] + a[n/2+1]) / 2
    }
    function bar(issue, name, m, want, ge, extra) {
        printf "{\"dev\":\"bar\",\"issue\":%s,\"bar\":\"%s\",\"measured\":%s,\"met\":%s%s}\n", issue, name,
            m == "" ? "null" : sprintf("%.3f", m),
            m == "" ? "null" : (ge ? m >= want : m <= want) ? "true" : "false", extra
    }
    function str(s) { gsub(/"/, "", s); return s }
    function lst(s) { sub(/^ /, "", s); gsub(/ /, ",", s); return "[" s "]" }
    { st = str(jf($0, "step")) }
    st == "placements" || st == "threads" {
        if (jf($0, "verified") == "true") runs[st SUBSEP str(jf($0, "app")) SUBSEP str(jf($0, "case"))] = runs[st SUBSEP str(jf($0, "app")) SUBSEP str(jf($0, "case"))] " " jf($0, "rate")
    }
    (st == "coll-split" || st == "coll-nosplit") && jf($0, "bench") == "\"coll\"" && jf($0, "op") == "\"allreduce\"" {
        k = st " " jf($0, "agent_threads") " threads"; cfg[k] = 1
        if (jf($0, "verified") != "true") unver[k]++
        ms = str(jf($0, "measure"))
        if (ms == "" && jf($0, "mpi_us") + 0 > 0 && (!(k in worst) || jf($0, "us") / jf($0, "mpi_us") > worst[k]))
            worst[k] = jf($0, "us") / jf($0, "mpi_us")
        if (ms == "overlap" && jf($0, "bytes") + 0 == 1048576) ovl[k] = jf($0, "overlap_pct")
        if (ms == "time_to_solution" && jf($0, "bytes") + 0 == 1048576 && jf($0, "compute_factor") + 0 == 1) tts[k] = jf($0, "gain")
    }
    st ~ /^classifier/ && jf($0, "bench") == "\"classifier\"" && jf($0, "impl") == "\"offcore\"" && jf($0, "ratio_vs_rte_acl") != "" {
        k = "IPv" jf($0, "ip") " " str(jf($0, "family")) " vs rte_acl " str(jf($0, "rte_acl_fastest"))
        if (!(k in cls)) { cls[k] = jf($0, "ratio_vs_rte_acl"); clsv[k] = jf($0, "verified") }
    }
    st == "gpu" && jf($0, "bench") == "\"gpu-coll\"" && jf($0, "op") == "\"allreduce\"" {
        k = jf($0, "ranks") " ranks"; g[k] = 1; big = jf($0, "bytes") + 0 >= 16777216
        if (!(k in gall) || jf($0, "ratio_byhand") + 0 < gall[k]) gall[k] = jf($0, "ratio_byhand") + 0
        if (big && (!(k in gbig) || jf($0, "ratio_byhand") + 0 < gbig[k])) gbig[k] = jf($0, "ratio_byhand") + 0
        if (big && (!(k in ghost) || jf($0, "ratio_host") + 0 < ghost[k])) ghost[k] = jf($0, "ratio_host") + 0
        if (jf($0, "verified") != "true") gunver[k]++
    }
    st == "nvmf" && jf($0, "config") == "\"plain\"" && jf($0, "case") ~ /^"randread-4k/ && jf($0, "summary") == "" {
        c = str(jf($0, "cores")); nvr[c] = nvr[c] " " jf($0, "iops"); if (c != "0") nvw = c
    }
    END {
        split("histogram index-gather transpose mcproxy", apps, " ")
        for (i = 1; i <= 4; i++) {
            a = med(runs["placements" SUBSEP apps[i] SUBSEP "agent:" ranks ":" at])
            b = med(runs["placements" SUBSEP apps[i] SUBSEP "inline:" ranks])
            x = ",\"agent_rates\":" lst(runs["placements" SUBSEP apps[i] SUBSEP "agent:" ranks ":" at]) \
                ",\"inline_rates\":" lst(runs["placements" SUBSEP apps[i] SUBSEP "inline:" ranks])
            bar(22, apps[i] " " ranks " ranks + agent " at " threads / inline " ranks " >= 1.3x", a != "" && b > 0 ? a / b : "", 1.3, 1, x)
        }
        n = split(sweep, ts, " ")
        a = med(runs["threads" SUBSEP "histogram" SUBSEP "agent:" ranks ":" ts[n]])
        b = med(runs["threads" SUBSEP "histogram" SUBSEP "agent:" ranks ":" ts[1]])
        x = ""
        for (i = 1; i <= n; i++) x = x ",\"rates_" ts[i] "\":" lst(runs["threads" SUBSEP "histogram" SUBSEP "agent:" ranks ":" ts[i]])
        bar(22, "histogram agent " ts[n] " threads / 1 thread >= 7x", a != "" && b > 0 ? a / b : "", 7, 1, x)
        for (k in cfg) {
            x = unver[k] ? ",\"unverified_rows\":" unver[k] : ""
            bar(23, "allreduce worst latency / Open MPI <= 1.2x, " k, (k in worst) ? worst[k] : "", 1.2, 0, x)
            bar(23, "iallreduce overlap at 1 MiB >= 90 %, " k, (k in ovl) ? ovl[k] : "", 90, 1, x)
            bar(23, "time to solution, compute = MPI allreduce, 1 MiB >= 1.5x, " k, (k in tts) ? tts[k] : "", 1.5, 1, x)
        }
        if (!length(cfg)) bar(23, "collectives through the agent", "", 0, 1, "")
        for (k in cls) bar(25, "offcore / " k " >= 1.2x", cls[k], 1.2, 1, clsv[k] == "true" ? "" : ",\"unverified\":true")
        if (!length(cls)) bar(25, "offcore vs rte_acl AVX512X32", "", 0, 1, "")
        a = med(nvr[nvw]); b = med(nvr["0"])
        bar(24, "nvmf 4 KiB randread QD32, workers on cores " (nvw == "" ? "0-7" : nvw) " / 1 worker >= 6x (see step-nvmf.log)", a != "" && b > 0 ? a / b : "", 6, 1, "")
        for (k in g) {
            x = gunver[k] ? ",\"unverified_rows\":" gunver[k] : ""
            bar("\"gpu\"", "allreduce device / by hand >= 1.0x every size, " k, gall[k], 1.0, 1, x)
            bar("\"gpu\"", "allreduce device / by hand >= 1.5x at >= 16 MiB, " k, (k in gbig) ? gbig[k] : "", 1.5, 1, x)
            bar("\"gpu\"", "allreduce device / host buffers >= 0.7x at >= 16 MiB, " k, (k in ghost) ? ghost[k] : "", 0.7, 1, x)
        }
        if (!length(g)) bar("\"gpu\"", "gpu collectives (see step-gpu.log)", "", 0, 1, "")
    }' "$J"
}

if [ "${1:-}" = --summary ]; then
    J=$2
    summary
    exit 0
fi

START_S=$(date +%s)
export START_S DEADLINE B OUT_DIR DEVICE_SCALE=$SCALE REPS
mkdir -p "$OUT_DIR" || exit 2
: >> "$J"
trap 'summary | tee -a "$J"' EXIT
printf '{"dev":"start","scale":"%s","deadline_s":%d,"cpus":%d,"cpu":"%s","avx512f":%s,"tree":"%s"}\n' \
    "$SCALE" "$DEADLINE" "$NCPU" "$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -1 | tr -d '"')" \
    "$(grep -q avx512f /proc/cpuinfo && echo true || echo false)" \
    "$("$B/src/tools/offcore" --version 2>/dev/null | head -1 | tr -d '"')" | tee -a "$J"

# step budgets (seconds), in priority order; the small scale uses the same
declare -A BOX=([placements]=170 [threads]=80 [coll-split]=110 [coll-nosplit]=60
                [classifier4]=40 [classifier6]=40 [nvmf]=120 [gpu]=600)
for s in ${STEPS:-placements threads coll-split coll-nosplit classifier4 classifier6 nvmf gpu}; do
    [ -n "${BOX[$s]:-}" ] || { echo "run-device.sh: no step '$s'" >&2; continue; }
    box=$(( DEADLINE - RESERVE - ($(date +%s) - START_S) ))
    [ "$box" -gt "${BOX[$s]}" ] && box=${BOX[$s]}
    if [ "$box" -lt 5 ]; then
        printf '{"dev":"step","step":"%s","skipped":"deadline"}\n' "$s" | tee -a "$J"
        continue
    fi
    t0=$(date +%s)
    # to a file, tagged once the step is over: a step's leftovers (ranks a
    # killed mpirun has not reaped yet) cannot hold the run up on a pipe
    timeout -k 10 "$box" bash "$0" --step "$s" > "$OUT_DIR/step-$s.raw" 2>&1
    rc=$?
    tag "$s" < "$OUT_DIR/step-$s.raw" && rm -f "$OUT_DIR/step-$s.raw"
    why=$(grep -m1 -o 'skipped: [^"]*' "$OUT_DIR/step-$s.log" 2> /dev/null)
    printf '{"dev":"step","step":"%s","rc":%d,"secs":%d,"box_s":%d,"timed_out":%s%s}\n' "$s" "$rc" \
        $(($(date +%s) - t0)) "$box" "$([ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo true || echo false)" \
        "${why:+,\"skipped\":\"${why#skipped: }\"}" | tee -a "$J"
done
exit 0
