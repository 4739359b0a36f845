#!/bin/sh
# coll-cores-test.sh COLL_CHECK — whether ranks have a core each, as the
# collectives judge it at oc_init (src/coll/shm.c): from the CPUs every
# rank of the host may run on, together.  A rank that shares its core
# gives it up at the first idle turn of a wait (oc_wait); one with a core
# of its own keeps polling.  Two ranks pinned to one CPU share; two ranks
# pinned one per CPU (mpirun --bind-to core) do not, though each may run
# on one CPU only; three ranks free on two CPUs share.  Each job also
# runs a small coll_check, which must pass.
set -eu
bin=$1
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
command -v taskset >/dev/null || { echo "SKIP: no taskset"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: fewer than 2 CPUs"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self OC_LOG=coll:debug
T=$(mktemp -d /tmp/oc-collcores-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
check() { # check NAME WANT NP MPIRUN...: coll_check on NP ranks, each must say WANT
    name=$1 want=$2 np=$3
    shift 3
    timeout 300 "$@" --mca btl self,vader -x OC_LOG -np "$np" "$bin" --max 4096 \
        > "$T/$name" 2>&1 || { cat "$T/$name"; echo "FAIL: $name: coll_check failed"; exit 1; }
    got=$(grep -c "through shared memory; $want" "$T/$name" || true)
    [ "$got" = "$np" ] || {
        grep "through shared memory" "$T/$name" || true
        echo "FAIL: $name: $got of $np ranks said \"$want\""; exit 1; }
    echo "PASS: $name: every rank said \"$want\""
}
check one-cpu "ranks share cores" 2 taskset -c 0 mpirun --oversubscribe --bind-to none
check pinned "a core for each rank" 2 mpirun --bind-to core --map-by core
check three-on-two "ranks share cores" 3 taskset -c 0,1 mpirun --oversubscribe --bind-to none
