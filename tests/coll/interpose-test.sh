#!/bin/bash
# interpose-test.sh APP LIB NP [OFFCORED OFFCORE] — the PMPI interposer:
# APP (built without any offcore header) prints the same with and without
# LD_PRELOAD=LIB, and with it the log (OC_LOG=info) shows the calls offcore
# served and those it passed through.  With OFFCORED and OFFCORE, in the
# agent placement, through an offcored started here, of
# COLL_AGENT_THREADS routing threads (1).
set -u -o pipefail
app=$1 lib=$2 np=$3 offcored=${4:-} offcore=${5:-}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OC_PLACEMENT=inline UCX_TLS=sm,self
T=$(mktemp -d /tmp/oc-interpose-XXXXXX)
APID=
trap '[ -n "$APID" ] && kill $APID; rm -rf "$T"' EXIT INT TERM
if [ -n "$offcored" ]; then
    "$offcore" keygen > "$T/ck" && chmod 600 "$T/ck"
    "$offcored" --listen "unix:$T/a.sock" --cluster-key "$T/ck" --metrics off \
        --threads "${COLL_AGENT_THREADS:-1}" > "$T/agent.log" 2>&1 &
    APID=$!
    n=0
    until grep -qw ready "$T/agent.log"; do
        n=$((n + 1)); [ $n -lt 100 ] || { echo "FAIL: agent not ready"; exit 1; }
        sleep 0.1
    done
    grep -q "${COLL_AGENT_THREADS:-1} routing thread" "$T/agent.log" ||
        { cat "$T/agent.log"; echo "FAIL: not ${COLL_AGENT_THREADS:-1} routing threads"; exit 1; }
    export OC_PLACEMENT=agent OC_AGENT="unix:$T/a.sock" OC_JOB=4
    export OC_JOB_KEY=$("$offcore" job-key --job 4 --cluster-key "$T/ck")
fi
mpi() { timeout 120 mpirun --oversubscribe --bind-to none --mca btl self,vader \
    -x OC_PLACEMENT -x OC_AGENT -x OC_JOB -x OC_JOB_KEY -np "$np" "$@"; }
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
grep -q "placement $OC_PLACEMENT" "$T/log" || { cat "$T/log"; echo "FAIL: not served in the $OC_PLACEMENT placement"; exit 1; }
echo "PASS: identical output with and without $lib ($np ranks, $OC_PLACEMENT placement)"
