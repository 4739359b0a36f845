#!/bin/sh
# coll-test.sh COLL_CHECK NP MAXBYTES [twice] — run coll_check on NP
# oversubscribed ranks, inline placement over shared memory: once by
# default, then with OC_COLL_REPRODUCIBLE=y (coll_check compares every
# reproducible result bit for bit with a serial rank-order reduction);
# with "twice", the reproducible run is repeated and both runs' result
# digests must be equal.
set -eu
bin=$1 np=$2 max=$3 twice=${4:-}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self
T=$(mktemp -d /tmp/oc-colltest-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
# each run's output goes to a file first: its status is mpirun's (a
# pipeline's would be the last command's, and coll_check prints its digest
# before it decides whether it passed)
run() { # run OUT
    timeout 850 mpirun --oversubscribe --bind-to none --mca btl self,vader \
        --mca mpi_yield_when_idle 1 -np "$np" "$bin" --max "$max" --hash > "$1" ||
        { cat "$1"; echo "FAIL: coll_check failed (OC_COLL_REPRODUCIBLE=${OC_COLL_REPRODUCIBLE:-n})"; exit 1; }
    cat "$1" >&2
}
run "$T/default"
OC_COLL_REPRODUCIBLE=y run "$T/r1"
h1=$(grep '^hash' "$T/r1")
[ -n "$twice" ] || exit 0
OC_COLL_REPRODUCIBLE=y run "$T/r2"
h2=$(grep '^hash' "$T/r2")
[ -n "$h1" ] && [ "$h1" = "$h2" ] || { echo "FAIL: reproducible runs differ: $h1 / $h2"; exit 1; }
echo "PASS: reproducible runs agree ($h1)"
