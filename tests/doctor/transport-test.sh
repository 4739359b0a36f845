#!/bin/bash
# transport-test.sh BUILD_DIR CASE — the runtime's transport watch with a
# real 2-rank job (tests/integration/test_runtime).  Exit 0 PASS, 1 FAIL,
# 77 SKIP.
#   require-rdma  OC_REQUIRE_TRANSPORT=rdma fails oc_init on every rank
#                 with OC_ERR_TRANSPORT_REQUIRED (this machine has no RDMA)
#   log           without it the job runs; OC_LOG=runtime:info names the
#                 transport of each connection: shared memory by default,
#                 tcp with UCX_TLS=tcp
#   require-conn  a connection on the wrong transport (tcp when only sm is
#                 allowed) fails oc_init naming that connection
#   require-ok    OC_REQUIRE_TRANSPORT=tcp with UCX on tcp: the job runs
set -u -o pipefail
B=${1:?usage: transport-test.sh BUILD_DIR CASE}
CASE=${2:?case}
TR=$B/tests/integration/test_runtime
T=$(mktemp -d /tmp/oc-doctor-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL $CASE: $*"; sed 's/^/  | /' "$T/log" | tail -20; exit 1; }

# the job: 2 ranks, placement inline (no agent on purpose), 60 s at most
job() { OC_PLACEMENT=inline OC_LOG=runtime:info timeout 60 "$TR" fixed 2 >"$T/log" 2>&1; }

case $CASE in
require-rdma)
    [ -e /sys/class/infiniband ] && { echo "SKIP: this machine has RDMA devices"; exit 77; }
    OC_REQUIRE_TRANSPORT=rdma job && fail "the job ran"
    # each rank names the error (its own line: ranks share the log)
    for r in 0 1; do
        grep -q "^rank $r: FAIL .*oc_init: OC_ERR_TRANSPORT_REQUIRED" "$T/log" ||
            fail "rank $r did not name OC_ERR_TRANSPORT_REQUIRED"
    done
    grep -q "OC_REQUIRE_TRANSPORT=rdma, but UCX offers no such transport toward other hosts" "$T/log" ||
        fail "no reason logged"
    ;;
log)
    job || fail "the job failed"
    grep -q "PASS fixed 2" "$T/log" || fail "no PASS"
    for r in 0 1; do
        grep -Eq "rank $r: to rank $((1 - r)) via [a-z]+/[a-z0-9]+ \(sm\)" "$T/log" ||
            fail "rank $r did not log its shared-memory connection"
        grep -q "rank $r: 1 connection: rdma 0, tcp 0, sm 1, other 0" "$T/log" ||
            fail "rank $r did not count it"
    done
    UCX_TLS=tcp job || fail "the job over tcp failed"
    grep -Eq "rank 0: to rank 1 via tcp/[a-z0-9]+ \(tcp\)" "$T/log" ||
        fail "no tcp connection logged"
    grep -q "rank 1: 1 connection: rdma 0, tcp 1, sm 0, other 0" "$T/log" ||
        fail "tcp connection not counted"
    ;;
require-conn)
    UCX_TLS=tcp OC_REQUIRE_TRANSPORT=sm job && fail "the job ran"
    grep -q "OC_REQUIRE_TRANSPORT=sm, but the connection to rank [01] uses tcp/" "$T/log" ||
        fail "the connection is not named"
    grep -q "oc_init: OC_ERR_TRANSPORT_REQUIRED" "$T/log" || fail "no named error"
    ;;
require-ok)
    UCX_TLS=tcp OC_REQUIRE_TRANSPORT=tcp job || fail "the job failed"
    grep -q "PASS fixed 2" "$T/log" || fail "no PASS"
    ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
echo "PASS $CASE"
