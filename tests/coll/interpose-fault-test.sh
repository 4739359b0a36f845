#!/bin/bash
# interpose-fault-test.sh APP LIB OFFCORED OFFCORE NP THREADS — correct or
# loud through the PMPI interposer: NP ranks of APP (interpose_fault.c)
# under LD_PRELOAD=LIB, in the agent placement through an offcored of
# THREADS routing threads; after a first allreduce that verifies, the
# agent is killed (SIGKILL); rank 0 then waits for the MPI_Iallreduce it
# had in flight, the others start theirs, and all call MPI_Allreduce.
# With MPI_ERRORS_RETURN every call returns an error code (none
# MPI_SUCCESS); with MPI_ERRORS_ARE_FATAL (the default) the job
# aborts, non-zero, at the first one.  Exit 0 PASS, 1 FAIL, 77 SKIP.
set -u -o pipefail
app=$1 lib=$2 offcored=$3 offcore=$4 np=$5 threads=$6
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_TLS=sm,self OC_PLACEMENT=agent OC_JOB=5
T=$(mktemp -d /tmp/oc-ipfault-XXXXXX)
APID=
trap '[ -n "$APID" ] && kill -9 $APID 2>/dev/null; rm -rf "$T"' EXIT INT TERM
"$offcore" keygen > "$T/ck" && chmod 600 "$T/ck"
export OC_AGENT="unix:$T/a.sock"
export OC_JOB_KEY=$("$offcore" job-key --job 5 --cluster-key "$T/ck")
one() { # one MODE: a job through a new agent, killed after the first allreduce
    mode=$1
    rm -f "$T/go" "$T/out"
    "$offcored" --listen "unix:$T/a.sock" --cluster-key "$T/ck" --metrics off \
        --threads "$threads" > "$T/agent.log" 2>&1 &
    APID=$!
    n=0
    until grep -qw ready "$T/agent.log" 2>/dev/null; do
        n=$((n + 1)); [ $n -lt 100 ] || { echo "FAIL: agent not ready"; exit 1; }
        sleep 0.1
    done
    timeout 120 mpirun --oversubscribe --bind-to none --mca btl self,vader \
        -x OC_PLACEMENT -x OC_AGENT -x OC_JOB -x OC_JOB_KEY -x UCX_TLS \
        -x LD_PRELOAD="$lib" -np "$np" "$app" "$mode" "$T/go" \
        > "$T/out" 2>&1 &
    mp=$!
    n=0
    until grep -q "first allreduce verified" "$T/out"; do
        n=$((n + 1))
        [ $n -lt 600 ] || { cat "$T/out"; kill $mp; echo "FAIL: $mode: no first allreduce"; exit 1; }
        sleep 0.1
    done
    kill -9 $APID; wait $APID 2>/dev/null; APID=
    touch "$T/go"
    wait $mp; rc=$?
    sed "s/^/  $mode: /" "$T/out" | grep -v "^  $mode: *$" | head -20
    if grep -q WRONG "$T/out"; then echo "FAIL: $mode: a call returned MPI_SUCCESS"; exit 1; fi
    [ $rc -ne 124 ] || { echo "FAIL: $mode: the job hung"; exit 1; }
}
one return
[ $rc -eq 0 ] || { echo "FAIL: return: exit $rc"; exit 1; }
[ "$(grep -c '^LOUD: .*MPI_Allreduce: ' "$T/out")" -eq "$np" ] ||
    { echo "FAIL: return: not every rank's MPI_Allreduce returned an error"; exit 1; }
[ "$(grep -c '^LOUD: .*MPI_Iallreduce' "$T/out")" -eq "$np" ] ||
    { echo "FAIL: return: not every rank's MPI_Iallreduce returned an error"; exit 1; }
grep -q "offcore: OC_ERR" "$T/out" ||
    { echo "FAIL: return: MPI_Error_string does not name offcore's error"; exit 1; }
one fatal
[ $rc -ne 0 ] || { echo "FAIL: fatal: the job did not abort"; exit 1; }
echo "PASS: after the agent died, every call failed loudly ($np ranks, $threads routing threads)"
