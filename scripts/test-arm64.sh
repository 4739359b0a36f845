#!/bin/sh
# scripts/test-arm64.sh [DIR]: cross-build offcore for aarch64 (a DPU's Arm
# cores) in DIR (default build-arm64) with cross/aarch64-linux-gnu.ini and
# run the unit, packet and fuzz-replay tests under qemu-user (the cross
# file's exe_wrapper).  Called by `make test-arm64`; docs/arm64.md.
#
# Builds the daemons and libraries under src/ and the executables of the
# chosen tests, not the apps and benchmarks.  The tests that cannot run
# under qemu-user, or that would not fit the CI's time there, are in SKIP
# below, each with its reason; a name there that is not a test is an error
# (the list cannot go stale silently).  ARM64_DEPS=n leaves out the package
# check (scripts/deps.sh arm64).
set -eu
dir=${1:-build-arm64}

# NAME: why it does not run under qemu-user here (the native build runs it)
SKIP='
test_hugemem: qemu-user neither honours MAP_POPULATE nor MADV_POPULATE_WRITE (it answers 0 and faults nothing in), so the residency check (mincore) fails
test_ct_scale: the same: its 85 MB table is not resident at creation under qemu-user, so "filling it allocates nothing" (RSS) fails
fuzz_nvmf_replay: its seed replay takes about a minute under qemu-user (the parsers are replayed natively, and under ASan)
fuzz_nvmf_stream_replay: about two minutes under qemu-user
fuzz_dp_ctl_replay: about three minutes under qemu-user
fuzz_esp_replay: 16 s under qemu-user, the ESP path is covered by test_esp
advise-tts: python runs the aarch64 offcore CLI itself (the exe_wrapper wraps only the test command itself); advise_rule tests the same rule in python
dp-traffic: network namespaces, veth and AF_XDP (root networking, the same for every name below; not tried under qemu-user: it runs natively in the pkt suite)
dp-traffic-dpdk: DPDK ports (and no libdpdk-dev:arm64 in this build)
dp-traffic6: network namespaces, veth and AF_XDP
dp-tenant: network namespaces, veth and AF_XDP
dp-tenant-2threads: network namespaces, veth and AF_XDP
dp-tenant6: network namespaces, veth and AF_XDP
dp-tenant6-2threads: network namespaces, veth and AF_XDP
dp-mattach: network namespaces, veth and AF_XDP
dp-mattach-2threads: network namespaces, veth and AF_XDP
esp-traffic: network namespaces, veth and AF_XDP
ipfix-traffic: network namespaces, veth and AF_XDP, and x86 collectors (nfcapd, nfacctd)
dp-tenant-esp: network namespaces, veth and AF_XDP
dp-tenant-esp-2threads: network namespaces, veth and AF_XDP
'
# the suites that run: the unit tests, the packet library's, the fuzz
# targets' seed replays
SUITES='unit pkt fuzz'

[ "${ARM64_DEPS:-y}" = n ] || sh scripts/deps.sh arm64
sh scripts/meson-setup.sh "$dir" --cross-file cross/aarch64-linux-gnu.ini \
    --werror -Dmpi=disabled

# The test names to run and the build outputs they need (with every target
# defined under src/), from meson's introspection of DIR.
plan=$(mktemp)
intro=$(mktemp)
trap 'rm -f "$plan" "$intro"' EXIT
meson introspect --tests --targets "$dir" >"$intro"
DIR="$dir" SKIP="$SKIP" SUITES="$SUITES" python3 -c '
import json, os, sys
intro = json.load(sys.stdin)
skip = {}
for line in os.environ["SKIP"].strip().splitlines():
    name, why = line.split(":", 1)
    skip[name.strip()] = why.strip()
suites = {"offcore:" + s for s in os.environ["SUITES"].split()}
names = {t["name"] for t in intro["tests"]}
stale = sorted(set(skip) - names)
if stale:
    sys.exit("test-arm64: SKIP names no such test: " + ", ".join(stale))
by_id = {t["id"]: t for t in intro["targets"]}
src = os.path.realpath("src") + os.sep
out = {f for t in intro["targets"] if t["defined_in"].startswith(src)
       for f in t["filename"]}
run = []
for t in intro["tests"]:
    if not suites & set(t["suite"]):
        continue
    if t["name"] in skip:
        print("SKIP %s: %s" % (t["name"], skip[t["name"]]), file=sys.stderr)
        continue
    run.append(t["name"])
    for d in t["depends"]:
        out.update(by_id[d]["filename"] if d in by_id else [])
print(" ".join(sorted(run)))
bd = os.path.realpath(os.environ["DIR"])
print(" ".join(sorted(os.path.relpath(f, bd) for f in out)))
' <"$intro" >"$plan"
tests=$(sed -n 1p "$plan")
outputs=$(sed -n 2p "$plan")
[ -n "$tests" ] || { echo "test-arm64: no test selected" >&2; exit 1; }

# shellcheck disable=SC2086
ninja -C "$dir" $outputs
# shellcheck disable=SC2086
set -- $tests
echo "test-arm64: $# tests under qemu-user: $*"
meson test -C "$dir" --no-rebuild --print-errorlogs "$@"
