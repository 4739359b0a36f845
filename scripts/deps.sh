#!/bin/sh
# scripts/deps.sh — install the Debian packages that building, testing and
# fuzzing offcore need; only those found missing, so that a machine that has
# them all needs neither root nor the network.  Called by `make deps`.
#
# Each package is checked by what the build uses from it (a command, a
# pkg-config module, a file).  Runs apt-get as root, or through sudo.
#
# `scripts/deps.sh arm64` instead installs what cross-building for aarch64
# and running its tests under qemu-user need (scripts/test-arm64.sh): the
# cross compiler, qemu-user and Debian's arm64 (multiarch) -dev packages,
# adding the arm64 architecture to dpkg first.  Not in `make deps`: only
# `make test-arm64` needs them.
set -eu

missing=""
need() { # need PACKAGE CHECK...: PACKAGE is missing unless CHECK succeeds
    pkg=$1
    shift
    if ! "$@" >/dev/null 2>&1; then
        missing="$missing $pkg"
    fi
}
has() { command -v "$1"; }
pc() { pkg-config --exists "$1"; }
fuzzer_rt() { # libFuzzer's runtime, from clang's resource directory
    test -f "$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
}

arm64=n
[ "${1:-}" = arm64 ] && arm64=y
have_arm64=n
for a in $(dpkg --print-foreign-architectures); do
    [ "$a" = arm64 ] && have_arm64=y
done
apc() { test -f "/usr/lib/aarch64-linux-gnu/pkgconfig/$1.pc"; }

if [ "$arm64" = y ]; then
need gcc-aarch64-linux-gnu aarch64-linux-gnu-gcc --version
need libc6-dev-arm64-cross test -f /usr/aarch64-linux-gnu/include/stdio.h
need qemu-user          has qemu-aarch64
# what the build needs from each, for the arm64 architecture; MPI and DPDK
# are left out there (meson: -Dmpi=disabled; DPDK is optional anyway)
need libucx-dev:arm64   apc ucx
need libcmocka-dev:arm64 apc cmocka
need liburcu-dev:arm64  apc liburcu-qsbr
need zlib1g-dev:arm64   apc zlib
need libxdp-dev:arm64   apc libxdp
need libbpf-dev:arm64   apc libbpf
need libssl-dev:arm64   apc libcrypto
need libmicrohttpd-dev:arm64 apc libmicrohttpd
need libcurl4-openssl-dev:arm64 apc libcurl
need liburing-dev:arm64 apc liburing
else
need meson              has meson
need ninja-build        has ninja
need pkg-config         has pkg-config
need gcc                has gcc
need libc6-dev          test -f /usr/include/stdio.h
need libucx-dev         pc ucx
need ucx-utils          has ucx_info
need libopenmpi-dev     pc ompi-c
need openmpi-bin        has mpirun
# mpirun looks for an rsh agent (ssh) at start-up even for local jobs
need openssh-client     has ssh
need libcmocka-dev      pc cmocka
need clang              has clang
need libclang-rt-14-dev fuzzer_rt
need libmicrohttpd-dev  pc libmicrohttpd
need libssl-dev         pc libcrypto
need libcurl4-openssl-dev pc libcurl
# the packet classifier: RCU (QSBR) reclamation, gzip-compressed rule sets
need liburcu-dev        pc liburcu-qsbr
need zlib1g-dev         pc zlib
# the packet data plane: AF_XDP ports (libxdp, libbpf) and the tools its
# real-traffic test and forwarding bench drive through it
need libxdp-dev         pc libxdp
need libbpf-dev         pc libbpf
need iputils-ping       has ping
need iperf3             has iperf3
need tcpdump            has tcpdump
need python3            has python3
need valgrind           has valgrind
# the ABI check of liboffcore (tests/abi-check.sh: abidiff against abi/)
need abigail-tools      has abidiff
need iproute2           has ip
need ethtool            has ethtool
need tshark             has tshark
need nfdump             has nfcapd
need pmacct             has nfacctd
need curl               has curl
# make bench: offcore-nvmf's baseline (bench/nvmf-bench.py)
need fio                has fio
# offcore-nvmf: every socket and file operation goes through io_uring
need liburing-dev       pc liburing
# offcore-dp's DPDK port backend and rte_acl in the classifier bench
# (optional in the build: without it those parts are left out and said so)
need libdpdk-dev        pc libdpdk
# the tenant test's spoofing workloads (scapy on Debian's python3)
need python3-scapy      test -d /usr/lib/python3/dist-packages/scapy
# dp-tenant-esp: an ESP packet encrypted by the test itself (AES-GCM)
need python3-cryptography test -d /usr/lib/python3/dist-packages/cryptography
# nvmf-guest: the Linux kernel's nvme-tcp initiator in a qemu guest
need qemu-system-x86    has qemu-system-x86_64
need busybox-static     test -x /bin/busybox
need cpio               has cpio
need kmod               has depmod
need xz-utils           has xz
# scripts/stress-test.sh: the tests again under a busy host's CPU load
need stress-ng          has stress-ng
# the unit-file check of the hostile suite
need systemd            has systemd-analyze
# the study's plots (bench/study.py: PNG and SVG)
need gnuplot-nox        has gnuplot
# the Slurm plugin (contrib/slurm: slurm/spank.h) and the slurm suite's
# one-node cluster (tests/slurm/slurm-test.sh: munged, slurmctld, slurmd,
# srun with its PMIx plugin)
need libslurm-dev       test -f /usr/include/slurm/spank.h
need munge              has munged
need slurmctld          has slurmctld
need slurmd             has slurmd
need slurm-client       has srun
# `make deb`: the Debian packaging tools
need debhelper          has dh
need lintian            has lintian
need fakeroot           has fakeroot
fi

if [ -z "$missing" ]; then
    echo "deps: all build and test dependencies are installed"
    exit 0
fi
echo "deps: installing:$missing"
if [ "$(id -u)" = 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "deps: not root and no sudo: install these packages first:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [ "$arm64" = y ] && [ "$have_arm64" = n ]; then
    $SUDO dpkg --add-architecture arm64
fi
# --no-install-recommends keeps a fresh install small (clang would pull the
# whole llvm-14-dev); libc6-dev, which gcc only recommends, is listed above.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends $missing
