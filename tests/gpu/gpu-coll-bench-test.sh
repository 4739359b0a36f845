#!/bin/sh
# gpu-coll-bench-test.sh GPU_COLL LIBCUDA — bench/gpu_coll.c's plumbing under
# the libcuda double at tiny sizes, 2 ranks: every line verified, the
# ratios present (never a timing); then without a driver: one line saying
# it skipped, exit 0.
set -eu
bin=$1 cuda=$2
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self OC_GPU_CHUNK=16K
T=$(mktemp -d /tmp/oc-gpubench-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
run() { # run LIBCUDA OUT
    OC_LIBCUDA=$1 timeout 250 mpirun --oversubscribe --bind-to none \
        --mca btl self,vader -x OC_PLACEMENT -x UCX_TLS -x OC_GPU_CHUNK \
        -x OC_LIBCUDA -np 2 "$bin" --min 4096 --max 262144 --repeats 2 \
        > "$2" 2>&1
}
rc=0
run "$cuda" "$T/out" || rc=$?
cat "$T/out"
[ "$rc" -eq 0 ] || { echo "FAIL: gpu-coll exited $rc"; exit 1; }
# 4K, 16K, 64K, 256K for each of allreduce and alltoall
n=$(grep -c '"bench":"gpu-coll".*"ratio_byhand":[0-9.]*,"ratio_host":[0-9.]*,.*"verified":true' "$T/out" || true)
[ "$n" -eq 8 ] || { echo "FAIL: $n of 8 lines verified with ratios"; exit 1; }
rc=0
run "$cuda.missing" "$T/none" || rc=$?
cat "$T/none"
[ "$rc" -eq 0 ] && grep -q '^gpu-coll: skipped: no CUDA driver' "$T/none" ||
    { echo "FAIL: without a driver: exit $rc, no 'skipped' line"; exit 1; }
echo "PASS: gpu-coll under the double (8 lines verified), and skipped without a driver"
