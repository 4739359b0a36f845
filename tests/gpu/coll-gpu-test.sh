#!/bin/sh
# coll-gpu-test.sh COLL_GPU_CHECK LIBCUDA NP [OFFCORED OFFCORE] —
# collectives on device buffers through the libcuda double on NP
# oversubscribed ranks over shared memory; 16 KiB chunks so that vectors
# take many, and a lagging double (copies done only on the third query).
# With OFFCORED and OFFCORE: the agent placement, through one offcored
# (the ranks stage, the agent reduces).
set -eu
bin=$1 lib=$2 np=$3 offcored=${4:-} offcore=${5:-}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self OC_LIBCUDA="$lib"
export OC_GPU_CHUNK=16K FAKE_CUDA_LAG=2 FAKE_CUDA_DEVICES=2
T=$(mktemp -d /tmp/oc-gputest-XXXXXX)
APID=
cleanup() {
    [ -n "$APID" ] && kill "$APID" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT INT TERM
if [ -n "$offcored" ]; then
    "$offcore" keygen > "$T/ck" && chmod 600 "$T/ck"
    OC_LOG=agent:info "$offcored" --listen "unix:$T/a.sock" \
        --cluster-key "$T/ck" --metrics off > "$T/agent.log" 2>&1 &
    APID=$!
    n=0
    until grep -qw ready "$T/agent.log"; do
        n=$((n + 1)); [ $n -lt 100 ] || { cat "$T/agent.log"; echo "FAIL: agent not ready"; exit 1; }
        sleep 0.1
    done
    export OC_PLACEMENT=agent OC_AGENT="unix:$T/a.sock" OC_JOB=7
    OC_JOB_KEY=$("$offcore" job-key --job 7 --cluster-key "$T/ck")
    export OC_JOB_KEY
fi
rc=0
timeout 250 mpirun --oversubscribe --bind-to none --mca btl self,vader \
    --mca mpi_yield_when_idle 1 -x OC_PLACEMENT -x UCX_TLS -x OC_LIBCUDA \
    -x OC_GPU_CHUNK -x FAKE_CUDA_LAG -x FAKE_CUDA_DEVICES -x OC_AGENT -x OC_JOB -x OC_JOB_KEY \
    -np "$np" "$bin" > "$T/out" 2>&1 || rc=$?
cat "$T/out"
if [ "$rc" -ne 0 ]; then
    [ -z "$offcored" ] || tail -20 "$T/agent.log"
    echo "FAIL: coll_gpu_check exited $rc ($OC_PLACEMENT)"
    exit 1
fi
grep -q "^PASS: .* placement $OC_PLACEMENT " "$T/out" ||
    { echo "FAIL: no PASS line in the $OC_PLACEMENT placement"; exit 1; }
