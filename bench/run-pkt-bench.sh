#!/bin/sh
# bench/run-pkt-bench.sh BUILDDIR — `make bench-pkt`: the packet data
# plane's benchmarks, each with its baselines measured in the same run.
#   1. the classifier, lookups only (bench/run-pkt-classifier.sh, when
#      present: offcore's classifier vs rte_acl vs the linear scan);
#   2. forwarding through offcore-dp between two network namespaces vs the
#      bare forwarder and the kernel bridge (bench/run-pkt-forward.sh).
# JSON lines on stdout.
set -eu
build=${1:-build}
here=$(dirname "$0")
if [ -f "$here/run-pkt-classifier.sh" ]; then
    sh "$here/run-pkt-classifier.sh" "$build"
fi
sh "$here/run-pkt-forward.sh" "$build"
