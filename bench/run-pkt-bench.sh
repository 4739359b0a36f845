#!/bin/sh
# bench/run-pkt-bench.sh BUILDDIR — `make bench-pkt`: the packet data
# plane's benchmarks, each with its baselines measured in the same run.
#   0. connection tracking: inserts and lookups per second per core at 1M
#      flows, bytes per flow, vs the parser (bench/conntrack.c);
#   1. the classifier, lookups only (bench/run-pkt-classifier.sh, when
#      present: offcore's classifier vs rte_acl vs the linear scan);
#   2. forwarding through offcore-dp between two network namespaces vs the
#      bare forwarder and the kernel bridge (bench/run-pkt-forward.sh).
# JSON lines on stdout.
set -eu
build=${1:-build}
here=$(dirname "$0")
# connection tracking at 1M flows, one core (bench/conntrack.c)
"$build/bench/bench-conntrack"
if [ -f "$here/run-pkt-classifier.sh" ]; then
    sh "$here/run-pkt-classifier.sh" "$build"
fi
sh "$here/run-pkt-forward.sh" "$build"
