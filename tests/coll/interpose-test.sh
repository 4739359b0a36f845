#!/bin/sh
# interpose-test.sh APP LIB NP — the PMPI interposer: APP (built without
# any offcore header) prints the same with and without LD_PRELOAD=LIB, and
# with it the log (OC_LOG=info) shows the calls offcore served and those it
# passed through.
set -u
app=$1 lib=$2 np=$3
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self
T=$(mktemp -d /tmp/oc-interpose-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
mpi() { timeout 120 mpirun --oversubscribe --bind-to none --mca btl self,vader -np "$np" "$@"; }
mpi "$app" > "$T/plain" || { echo "FAIL: plain run"; exit 1; }
mpi -x LD_PRELOAD="$lib" -x OC_LOG=info "$app" > "$T/pre" 2> "$T/log" ||
    { cat "$T/log"; echo "FAIL: preloaded run"; exit 1; }
cat "$T/pre"
diff "$T/plain" "$T/pre" || { echo "FAIL: output differs with the interposer"; exit 1; }
for want in "MPI_Allreduce served by offcore" "MPI_Alltoall served by offcore" \
            "MPI_Alltoallv served by offcore" \
            "MPI_Allreduce passed through to MPI: communicator not congruent" \
            "MPI_Allreduce passed through to MPI: datatype not served" \
            "MPI_Iallreduce served by offcore" "MPI_Ialltoall served by offcore" \
            "MPI_Iallreduce passed through to MPI: communicator not congruent"; do
    grep -q "$want" "$T/log" || { cat "$T/log"; echo "FAIL: no log line '$want'"; exit 1; }
done
grep "offcore-mpi: MPI_Allreduce:" "$T/log" | head -1
for f in MPI_Allreduce MPI_Iallreduce MPI_Ialltoall; do
    grep -q "$f: [1-9][0-9]* served" "$T/log" || { echo "FAIL: no served count for $f"; exit 1; }
done
grep "offcore-mpi: MPI_I" "$T/log" | grep served | sort -u
echo "PASS: identical output with and without $lib ($np ranks)"
