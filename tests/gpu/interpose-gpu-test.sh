#!/bin/sh
# interpose-gpu-test.sh APP LIBOFFCORE_MPI LIBCUDA NP — an MPI program
# hands device buffers of the libcuda double to MPI; offcore's interposer
# must serve them (the log says so) with the right results.
set -eu
app=$1 lib=$2 cuda=$3 np=$4
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d /tmp/oc-gpuipose-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
rc=0
OC_PLACEMENT=inline UCX_TLS=sm,self OC_LIBCUDA=$cuda OC_GPU_CHUNK=16K \
    OC_LOG=coll:info timeout 250 mpirun --oversubscribe --bind-to none \
    --mca btl self,vader -x LD_PRELOAD="$lib" -x OC_PLACEMENT -x UCX_TLS \
    -x OC_LIBCUDA -x OC_GPU_CHUNK -x OC_LOG -np "$np" "$app" \
    > "$T/out" 2>&1 || rc=$?
cat "$T/out"
[ "$rc" -eq 0 ] || { echo "FAIL: the program failed ($rc)"; exit 1; }
for f in MPI_Allreduce MPI_Iallreduce MPI_Alltoall MPI_Alltoallv; do
    grep -q "$f served by offcore" "$T/out" ||
        { echo "FAIL: $f on device buffers was not served by offcore"; exit 1; }
done
if grep -q "passed through to MPI" "$T/out"; then
    echo "FAIL: a call was passed through"; exit 1
fi
echo "PASS: MPI_Allreduce, MPI_Iallreduce, MPI_Alltoall(v) on device buffers served"
