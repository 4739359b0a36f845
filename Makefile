# Makefile — wraps the README's commands and installs the Debian packages
# they need (docs/design.md: Meson + Ninja build the code; this file only drives
# them).
#
#   make deps    install what is missing (apt-get; root or sudo)
#   make build   configure (-Werror) and build in $(BUILDDIR)
#   make test    build, run every test; again under ASan+UBSan; then fuzz;
#                then cross-build for aarch64 and run the unit tests under
#                qemu-user (prints a banner and the time of each phase)
#   make test-arm64  the last phase alone: cross/aarch64-linux-gnu.ini in
#                $(ARM64_DIR), Debian's arm64 libraries, qemu-user
#                (scripts/test-arm64.sh; docs/arm64.md)
#   make demo    the DPU on this machine in about a minute: histogram on 2
#                ranks, offcore-dp between namespaces, offcore-nvmf under
#                its load generator, collectives vs Open MPI (apps/run-demo.sh)
#   make bench   the benchmarks, side by side with their baselines: the
#                routing kernel alone (router-bench: vs a bare partitioning
#                loop and the router of ROUTER_BASE, below), the
#                placements (inline vs agent, agent threads 1 vs 2), the
#                spare-core emulation (ranks on core 0; inline, agent on
#                their core, agent on the other core), the ranks' and the
#                agent's instructions per message (bench/rank-cpu.py,
#                callgrind), several emulated nodes (inline vs agent, the
#                packets and bytes between them: bench/run-multinode.sh,
#                root: network namespaces; MULTINODE_ARGS), offcore-nvmf against
#                local fio (bench/nvmf-bench.py) and its XTS against EVP
#                (bench/nvmf_xts.c), and bench-pkt
#   make bench-router-ab REV=<commit>  one routing thread's kernel, this
#                tree's router vs REV's and the bare partitioning loop, in
#                one process (bench/run-router-bench.sh; ROUTER_BENCH_ARGS)
#   make bench-inline-ab REV=<commit>  the inline placement of this tree vs
#                REV built beside it (a temporary worktree under
#                $(BUILDDIR), removed after), the four apps interleaved
#                old/new (bench/run-inline-ab.sh; INLINE_AB_REPEATS, 5)
#   make bench-pkt  the packet data plane: the classifier vs DPDK rte_acl vs
#                a linear scan, IPv4 then IPv6 (bench/classifier.c; BENCH_PKT_ARGS passes
#                flags, --help), then forwarding through offcore-dp vs the
#                bare forwarder and the kernel bridge (bench/run-pkt-forward.sh,
#                root: network namespaces)
#   make study   the placement study (docs/evaluation.md): every app inline,
#                agent and dpu; table, sweeps, CSV and plots in
#                $(BUILDDIR)/study.  STUDY_ARGS passes flags to
#                bench/study.py (--help lists them).
#   make deb     Debian packages (debian/, dpkg-buildpackage) of a copy of
#                this tree, built in $(BUILDDIR)/deb; lintian checks them
#   make clean
#
# Phases of `make test` can be run alone: test-build, test-asan, test-fuzz,
# test-arm64.
# Build directories can be moved: make test BUILDDIR=b ASAN_DIR=b-asan ...

BUILDDIR  ?= build
ASAN_DIR  ?= build-asan
FUZZ_DIR  ?= build-fuzz
ARM64_DIR ?= build-arm64
FUZZ_RUNS ?= 5000000
FUZZ_CC   ?= clang

# Open MPI refuses to start as root (CI runs as root) unless told twice.
export OMPI_ALLOW_RUN_AS_ROOT = 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = 1

SETUP = sh scripts/meson-setup.sh
PHASE = sh scripts/phase.sh

.PHONY: all deps build test test-build test-asan test-fuzz test-arm64 demo \
        bench bench-pkt \
        bench-inline-ab bench-router-ab \
        study clean compile asan-build fuzz-build deb

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@$(PHASE) "build ($(BUILDDIR))" $(MAKE) --no-print-directory compile

compile:
	$(SETUP) $(BUILDDIR) --werror
	ninja -C $(BUILDDIR)

test:
	@times=$$(mktemp); export PHASE_TIMES=$$times; \
	$(MAKE) --no-print-directory deps && \
	$(PHASE) "build ($(BUILDDIR))" $(MAKE) --no-print-directory compile && \
	$(PHASE) "tests ($(BUILDDIR))" $(MAKE) --no-print-directory test-build && \
	$(PHASE) "ASan+UBSan build and tests ($(ASAN_DIR))" $(MAKE) --no-print-directory test-asan && \
	$(PHASE) "fuzz build and run ($(FUZZ_DIR))" $(MAKE) --no-print-directory test-fuzz && \
	$(PHASE) "arm64 cross build, qemu tests ($(ARM64_DIR))" $(MAKE) --no-print-directory test-arm64; \
	rc=$$?; \
	printf '\n== make test: time per phase\n'; cat $$times; rm -f $$times; \
	if [ $$rc -eq 0 ]; then echo "== make test: ALL PASSED"; \
	else echo "== make test: FAILED"; fi; \
	exit $$rc

# every meson test of the normal (-Werror, release) build but the suite
# 'long' (the 64 MiB collective sweeps: tens of minutes on 2 cores)
test-build:
	meson test -C $(BUILDDIR) --print-errorlogs --no-suite long

# the whole suite again with AddressSanitizer + UndefinedBehaviorSanitizer.
# No -Werror here: GCC's sanitizer instrumentation produces false
# -Wmaybe-uninitialized / -Wstringop-* warnings; the normal build has it.
asan-build:
	$(SETUP) $(ASAN_DIR) --buildtype=debugoptimized \
	    -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C $(ASAN_DIR)

# Sanitizer options and the LSan suppressions for UCX and Open MPI:
# scripts/asan-test.sh.
test-asan: asan-build
	sh scripts/asan-test.sh $(ASAN_DIR)

# libFuzzer targets (clang, -Dfuzz=true), run from generated seeds.
fuzz-build:
	CC=$(FUZZ_CC) $(SETUP) $(FUZZ_DIR) --buildtype=debugoptimized -Dfuzz=true
	ninja -C $(FUZZ_DIR)

test-fuzz: fuzz-build
	sh scripts/fuzz.sh $(FUZZ_DIR) $(FUZZ_RUNS)

# aarch64 (a DPU's Arm cores): packages, cross build, the unit, packet and
# fuzz-replay tests under qemu-user; what cannot run there is listed with
# its reason in the script.
test-arm64:
	sh scripts/test-arm64.sh $(ARM64_DIR)

demo: build
	bash apps/run-demo.sh $(BUILDDIR)

# The router before issue 22's rewrite of the routing kernel: `make bench`
# prints router-bench's ratio_main against it (ROUTER_BASE=<commit> to
# change; the commit router-bench was written on).
ROUTER_BASE ?= 85d9d56f4b47c1d9b93d514077e6020fb91226da

bench: build
	sh bench/run-router-bench.sh $(BUILDDIR) $(ROUTER_BASE)
	bash bench/run-bench.sh $(BUILDDIR)
	sh bench/run-agent-bench.sh $(BUILDDIR)
	bash bench/run-coll-bench.sh $(BUILDDIR)
	sh bench/run-spare-core.sh $(BUILDDIR)
	python3 bench/rank-cpu.py --build $(BUILDDIR) --apps histogram,transpose
	bash bench/run-multinode.sh $(BUILDDIR) $(MULTINODE_ARGS); \
	    rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]
	python3 bench/nvmf-bench.py $(BUILDDIR)
	$(BUILDDIR)/bench/bench-nvmf-xts
	$(MAKE) --no-print-directory bench-pkt

# connection tracking at 1M flows, one core, IPv4 then IPv6 tables
# (bench/conntrack.c); the
# classifier: one core, lookups only (bench/classifier.c); ESP:
# AES-256-GCM encap/decap vs the bare EVP calls (bench/esp.c); forwarding:
# two network namespaces through offcore-dp (bench/run-pkt-forward.sh),
# every stage against the bare forwarder, ESP + IPFIX against a two-hop one,
# two DPUs with every tenant stage against two bare ones.  JSON lines.
# not part of `make bench`: it needs a commit to compare with
bench-inline-ab: build
	@if [ -z "$(REV)" ]; then \
	    echo "usage: make bench-inline-ab REV=<commit>  (e.g. REV=HEAD~1)" >&2; exit 2; fi
	bash bench/run-inline-ab.sh $(BUILDDIR) $(REV)

bench-router-ab: build
	@if [ -z "$(REV)" ]; then \
	    echo "usage: make bench-router-ab REV=<commit>  (e.g. REV=main)" >&2; exit 2; fi
	sh bench/run-router-bench.sh $(BUILDDIR) $(REV)

bench-pkt: build
	$(BUILDDIR)/bench/bench-conntrack
	$(BUILDDIR)/bench/bench-conntrack --ipv6
	$(BUILDDIR)/bench/bench-classifier --data data/classbench $(BENCH_PKT_ARGS)
	$(BUILDDIR)/bench/bench-classifier --data data/classbench --ip 6 $(BENCH_PKT_ARGS)
	$(BUILDDIR)/bench/bench-esp $(BENCH_ESP_ARGS)
	$(BUILDDIR)/bench/bench-flow
	sh bench/run-pkt-forward.sh $(BUILDDIR)

study: build
	python3 bench/study.py --build $(BUILDDIR) $(STUDY_ARGS)

deb: deps
	sh debian/make-deb.sh $(BUILDDIR)/deb

clean:
	rm -rf $(BUILDDIR) $(ASAN_DIR) $(FUZZ_DIR) $(ARM64_DIR)

