#!/bin/bash
# coll-agent-test.sh COLL_CHECK OFFCORED OFFCORE NP MAXBYTES — the
# collectives in the agent placement: one offcored (UCX shared memory),
# coll_check on NP oversubscribed ranks through it (every type x op x
# size up to MAXBYTES against Open MPI's results), then with
# OC_COLL_REPRODUCIBLE=y in the agent placement and in the inline
# placement: the two result digests must be equal bit for bit.  The first
# agent moves the allreduce data by memory (the default; its log must say
# so); a second one started with OC_AGENT_COLL_CMA=n refuses, so the ranks
# fall back to UCX (its log must say why) and the digest must not change.
# All-to-all(v) goes by memory as well (the first agent's log must say so).
# Small allreduces, all-to-all(v)s and broadcasts go inline (OC_COLL_AGENT_INLINE, 4K:
# contribution in the descriptor, result in DONE; the first agent's log
# must say so for each); the fallback run turns that off, so that the
# tagged UCX path carries every size there (the second agent's log must
# not say so).
# COLL_AGENT_THREADS (1): the agents' routing threads (offcored --threads);
# with more than one, the first agent's large allreduces by memory must be
# split across them (its log must say so).
set -eu -o pipefail
bin=$1 offcored=$2 offcore=$3 np=$4 max=$5
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
T=$(mktemp -d /tmp/oc-collagent-XXXXXX)
APID= BPID=
cleanup() {
    [ -n "$APID" ] && kill "$APID" 2>/dev/null
    [ -n "$BPID" ] && kill "$BPID" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=sm,self
"$offcore" keygen > "$T/ck" && chmod 600 "$T/ck"
threads=${COLL_AGENT_THREADS:-1}
OC_LOG=agent:info,router:info "$offcored" --listen "unix:$T/a.sock" --cluster-key "$T/ck" \
    --metrics off --threads "$threads" > "$T/agent.log" 2>&1 &
APID=$!
OC_AGENT_COLL_CMA=n OC_LOG=agent:info,router:info "$offcored" --listen "unix:$T/b.sock" \
    --cluster-key "$T/ck" --metrics off --threads "$threads" \
    > "$T/agentb.log" 2>&1 &
BPID=$!
for log in agent agentb; do
    n=0
    until grep -qw ready "$T/$log.log"; do
        n=$((n + 1)); [ $n -lt 100 ] || { cat "$T/$log.log"; echo "FAIL: $log not ready"; exit 1; }
        sleep 0.1
    done
done
grep -q "$threads routing thread" "$T/agent.log" ||
    { cat "$T/agent.log"; echo "FAIL: the agent does not run $threads routing threads"; exit 1; }
job=1
# run PLACEMENT [VAR=VALUE...]: coll_check through mpirun, its output in
# $T/out (and on stderr); exits the script when it fails.  Never run it in
# a pipeline or $(...): its status would be lost (coll_check prints its
# digest before it decides whether it passed).
run() {
    pl=$1; shift
    job=$((job + 1))
    key=$("$offcore" job-key --job $job --cluster-key "$T/ck")
    env "$@" OC_PLACEMENT=$pl OC_AGENT="unix:$T/${SOCK:-a}.sock" OC_JOB=$job \
        OC_JOB_KEY="$key" timeout ${COLL_AGENT_TIMEOUT:-600} mpirun --oversubscribe --bind-to none \
        --mca btl self,vader --mca mpi_yield_when_idle 1 -x OC_PLACEMENT \
        -x OC_AGENT -x OC_JOB -x OC_JOB_KEY -x OC_COLL_REPRODUCIBLE -x OC_COLL_AGENT_INLINE \
        -np "$np" "$bin" --max "$max" --hash > "$T/out" ||
        { cat "$T/out"; sed 's/^/  agent: /' "$T/agent.log" | tail -20; echo "FAIL: $pl $*"; exit 1; }
    cat "$T/out" >&2
}
run agent OC_COLL_REPRODUCIBLE=n OC_COLL_AGENT_INLINE=4K
run agent OC_COLL_REPRODUCIBLE=y OC_COLL_AGENT_INLINE=4K
ha=$(grep '^hash' "$T/out")
run inline OC_COLL_REPRODUCIBLE=y OC_COLL_AGENT_INLINE=4K
hi=$(grep '^hash' "$T/out")
[ -n "$ha" ] && [ "$ha" = "$hi" ] ||
    { echo "FAIL: reproducible agent and inline results differ: $ha / $hi"; exit 1; }
# by memory, unless the kernel refuses it here (seccomp, Yama): then by
# UCX, and the agent must say why
grep -q "rank 0: collective data by memory" "$T/agent.log" ||
    grep -q "rank 0: collective data by UCX, not by memory: the kernel refuses" "$T/agent.log" ||
    { tail -20 "$T/agent.log"; echo "FAIL: the agent did not move the data by memory, nor say why not"; exit 1; }
grep -q "all-to-all blocks written by memory" "$T/agent.log" ||
    grep -q "rank 0: collective data by UCX, not by memory: the kernel refuses" "$T/agent.log" ||
    { tail -20 "$T/agent.log"; echo "FAIL: no all-to-all went by memory, and the agent did not say why"; exit 1; }
# several routing threads: the allreduces by memory of 256 KiB and more
# (OC_AGENT_COLL_SPLIT_MIN) are split across them, and the digests above
# held for those too
if [ "$threads" -gt 1 ] && grep -q "rank 0: collective data by memory" "$T/agent.log"; then
    grep -q "split across $threads routing threads" "$T/agent.log" ||
        { tail -20 "$T/agent.log"; echo "FAIL: no allreduce split across the $threads routing threads"; exit 1; }
fi
grep -q "small allreduce contributions inline" "$T/agent.log" ||
    { tail -20 "$T/agent.log"; echo "FAIL: no small allreduce went inline"; exit 1; }
for k in all-to-all bcast; do
    grep -q "small $k contributions inline" "$T/agent.log" ||
        { tail -20 "$T/agent.log"; echo "FAIL: no small $k went inline"; exit 1; }
done
SOCK=b run agent OC_COLL_REPRODUCIBLE=y OC_COLL_AGENT_INLINE=0
hf=$(grep '^hash' "$T/out")
if grep -q "contributions inline" "$T/agentb.log"; then
    echo "FAIL: OC_COLL_AGENT_INLINE=0 and still inline"; exit 1
fi
grep -q "rank 0: collective data by UCX, not by memory: OC_AGENT_COLL_CMA=n" "$T/agentb.log" ||
    { tail -20 "$T/agentb.log"; echo "FAIL: no fallback to UCX"; exit 1; }
[ "$hf" = "$ha" ] ||
    { echo "FAIL: by memory and by UCX (fallback) results differ: $ha / $hf"; exit 1; }
echo "PASS: $np ranks through the agent, small ones inline, by memory and by UCX (fallback, nothing inline); reproducible digest equals inline ($ha)"
