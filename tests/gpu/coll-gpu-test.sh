#!/bin/sh
# coll-gpu-test.sh COLL_GPU_CHECK LIBCUDA NP — collectives on device
# buffers through the libcuda double on NP oversubscribed ranks, inline
# placement over shared memory; 16 KiB chunks so that vectors take many,
# and a lagging double (copies done only on the third query).
set -eu
bin=$1 lib=$2 np=$3
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self OC_LIBCUDA="$lib"
export OC_GPU_CHUNK=16K FAKE_CUDA_LAG=2
timeout 250 mpirun --oversubscribe --bind-to none --mca btl self,vader \
    --mca mpi_yield_when_idle 1 -x OC_PLACEMENT -x UCX_TLS -x OC_LIBCUDA \
    -x OC_GPU_CHUNK -x FAKE_CUDA_LAG -np "$np" "$bin"
