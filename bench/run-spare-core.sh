#!/bin/sh
# run-spare-core.sh BUILD_DIR — the offload placement emulated on this
# machine: the ranks confined to one core set (core 0: `taskset -c 0
# mpirun --bind-to none`), UCX_TLS=sm,self, the same binaries, three cases:
#   inline        no agent: the ranks route themselves (the paper's "None")
#   agent-shared  offcored on the ranks' own cores (core 0)
#   agent-spare   offcored alone on the other cores (core 1..: the paper's
#                 "x86" placement, a spare socket)
# Each app runs SPARE_REPEATS times per case, the cases interleaved (inline,
# shared, spare, inline, ...), so all see the same moments of a shared
# machine.  Prints every app's JSON line, then one line per app and case:
#   {"bench":"spare-core","app":...,"case":...,"rate":<median>,
#    "rates":[...],"verified":true,"spread":<slowest/fastest>,
#    "ratio_over_inline":..,"ratio_over_agent_shared":..}
# and, with SPARE_CPU=1 (default), one "spare-core-cpu" line per app and
# case from one more run with OC_APP_CPU=1: the ranks' CPU inside
# liboffcore calls per message (apps/common/app_oc.h).
# Exits non-zero when a run fails or does not verify; no speed target.
#
# Environment (defaults): SPARE_REPEATS (3)  SPARE_APPS (histogram
# transpose index-gather mcproxy)  SPARE_UPDATES (40M)  SPARE_ROWS (1M)
# SPARE_REQUESTS (20M)  SPARE_PARTICLES (100K)  SPARE_CPU (1)
# OC_AGENT_MODE, OC_AGENT_CHANNEL (the library's defaults)  SPARE_RANK_CPUS (0)
# SPARE_AGENT_CPUS (the other cores: 1-(nproc-1))
set -u
B=${1:?usage: run-spare-core.sh BUILD_DIR}
B=$(cd "$B" && pwd)
REPEATS=${SPARE_REPEATS:-3}
APPS=${SPARE_APPS:-histogram transpose index-gather mcproxy}
NCPU=$(nproc)
RANK_CPUS=${SPARE_RANK_CPUS:-0}
if [ "$NCPU" -lt 2 ]; then
    echo "run-spare-core.sh: needs 2 cores or more (a spare core for the agent)" >&2
    exit 77
fi
AGENT_CPUS=${SPARE_AGENT_CPUS:-1-$((NCPU - 1))}
command -v taskset >/dev/null || { echo "run-spare-core.sh: taskset missing (util-linux)" >&2; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=sm,self
T=$(mktemp -d /tmp/oc-spare-XXXXXX)
AGENT=""
failed=0
cleanup() { [ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT INT TERM

"$B/src/tools/offcore" keygen > "$T/key" && chmod 600 "$T/key" || exit 2
MODE_ENV=""
[ -n "${OC_AGENT_MODE:-}" ] && MODE_ENV="-x OC_AGENT_MODE=$OC_AGENT_MODE"
[ -n "${OC_AGENT_CHANNEL:-}" ] && MODE_ENV="$MODE_ENV -x OC_AGENT_CHANNEL=$OC_AGENT_CHANNEL"

args_of() {
    case $1 in
    histogram) echo "--updates ${SPARE_UPDATES:-40M} --table 10K" ;;
    transpose) echo "--rows ${SPARE_ROWS:-1M} --degree 16" ;;
    index-gather) echo "--requests ${SPARE_REQUESTS:-20M} --table 10K" ;;
    mcproxy) echo "--particles ${SPARE_PARTICLES:-100K} --cycles 2" ;;
    *) echo "run-spare-core.sh: unknown app $1" >&2; exit 2 ;;
    esac
}
bin_of() {
    case $1 in
    histogram|index-gather) echo "$B/apps/$1" ;;
    *) echo "$B/apps/$1/$1" ;;
    esac
}

. "$(dirname "$0")/agent-lib.sh"
. "$(dirname "$0")/stats-lib.sh"

JOB=1
# run APP CASE [ENV...]: one run; its JSON line in $out, rate in $rate
run() {
    app=$1 case_=$2
    shift 2
    JOB=$((JOB + 1))
    case $case_ in
    inline) envs="-x OC_PLACEMENT=inline" ;;
    *)
        if [ "$case_" = agent-shared ]; then start_agent "$RANK_CPUS" --threads 1
        else start_agent "$AGENT_CPUS" --threads 1; fi
        key=$("$B/src/tools/offcore" job-key --job $JOB --cluster-key "$T/key")
        envs="-x OC_PLACEMENT=agent -x OC_AGENT=unix:$T/agent.sock -x OC_JOB=$JOB -x OC_JOB_KEY=$key $MODE_ENV"
        ;;
    esac
    # shellcheck disable=SC2046
    out=$(env "$@" taskset -c "$RANK_CPUS" mpirun --allow-run-as-root \
          --oversubscribe --bind-to none -np 2 -x UCX_TLS -x OC_APP_CPU \
          $envs $(bin_of "$app") $(args_of "$app"))
    rc=$?
    [ -n "$AGENT" ] && stop_agent
    printf '%s\n' "$out"
    rate=$(printf '%s' "$out" | sed -n 's/.*"rate":\([0-9.e+]*\).*/\1/p')
    if [ $rc -ne 0 ] || ! printf '%s' "$out" | grep -q '"verified":true'; then
        echo "run-spare-core.sh: $app ($case_) failed or did not verify" >&2
        failed=$((failed + 1))
        rate=""
    fi
}


export OC_APP_CPU=0
for app in $APPS; do
    r_inline="" r_shared="" r_spare="" bad=0
    i=0
    while [ $i -lt "$REPEATS" ]; do
        for c in inline agent-shared agent-spare; do
            run "$app" "$c"
            [ -n "$rate" ] || bad=1
            case $c in
            inline) r_inline="$r_inline $rate" ;;
            agent-shared) r_shared="$r_shared $rate" ;;
            agent-spare) r_spare="$r_spare $rate" ;;
            esac
        done
        i=$((i + 1))
    done
    m_inline=$(median "$r_inline") m_shared=$(median "$r_shared")
    for c in inline agent-shared agent-spare; do
        case $c in
        inline) rs=$r_inline ;;
        agent-shared) rs=$r_shared ;;
        agent-spare) rs=$r_spare ;;
        esac
        m=$(median "$rs")
        printf '{"bench":"spare-core","app":"%s","case":"%s","rate":%s,"rates":[%s],"verified":%s,"spread":%s,"ratio_over_inline":%s,"ratio_over_agent_shared":%s,"agent_mode":"%s","agent_channel":"%s","rank_cpus":"%s","agent_cpus":"%s"}\n' \
            "$app" "$c" "$m" "$(printf '%s\n' $rs | paste -s -d, -)" \
            "$([ $bad -eq 0 ] && echo true || echo false)" "$(spread "$rs")" \
            "$(ratio "$m" "$m_inline")" "$(ratio "$m" "$m_shared")" \
            "${OC_AGENT_MODE:-default}" "${OC_AGENT_CHANNEL:-default}" "$RANK_CPUS" \
            "$([ $c = agent-spare ] && echo "$AGENT_CPUS" || echo "$RANK_CPUS")"
    done
done

# The ranks' CPU inside the library per message, one run per case.
if [ "${SPARE_CPU:-1}" = 1 ]; then
    for app in $APPS; do
        for c in inline agent-spare; do
            run "$app" "$c" OC_APP_CPU=1
            lib=$(printf '%s' "$out" | sed -n 's/.*"lib_ns_per_msg":\([0-9.e+]*\).*/\1/p')
            hnd=$(printf '%s' "$out" | sed -n 's/.*"handler_ns_per_msg":\([0-9.e+]*\).*/\1/p')
            printf '{"bench":"spare-core-cpu","app":"%s","case":"%s","lib_ns_per_msg":%s,"handler_ns_per_msg":%s,"rate":%s,"clock":"CLOCK_THREAD_CPUTIME_ID around oc_* calls, handlers subtracted","agent_mode":"%s","agent_channel":"%s"}\n' \
                "$app" "$c" "${lib:-null}" "${hnd:-null}" "${rate:-null}" "${OC_AGENT_MODE:-default}" "${OC_AGENT_CHANNEL:-default}"
        done
    done
fi
exit $failed
