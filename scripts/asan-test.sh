#!/bin/sh
# scripts/asan-test.sh DIR [MESON TEST ARGS...]: run the test suite of an
# ASan+UBSan build (`make test-asan`).
#
# Sanitizers stop at the first report, with a stack.  UCX and Open MPI leave
# global allocations unfreed at exit; their leak reports are suppressed by
# library name (scripts/lsan.supp), so leaks in offcore's own code still
# fail.  fast_unwind_on_malloc=0 because those distribution libraries have
# no frame pointers: the fast unwinder would stop before the frame that the
# suppressions name.  If LeakSanitizer cannot run at all here (it needs
# ptrace, which some containers forbid), leak checking is turned off with a
# warning rather than failing every test.
set -eu
dir=$1
shift
supp=$(cd "$(dirname "$0")" && pwd)/lsan.supp

leaks=1
probe=$(mktemp -d "${TMPDIR:-/tmp}/offcore-lsan.XXXXXX")
if ! ASAN_OPTIONS=detect_leaks=1 "$dir/tests/fuzz/fuzz_wire_replay" \
        --write-seeds "$probe" >"$probe/out" 2>&1; then
    echo "asan-test: WARNING: LeakSanitizer does not work on this machine" \
         "(ptrace not allowed?); leak checking is OFF:"
    cat "$probe/out"
    leaks=0
fi
rm -rf "$probe"

export ASAN_OPTIONS="halt_on_error=1:print_stacktrace=1:detect_leaks=$leaks:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
# The fuzz replays take 4,000 random inputs each here, not 20,000: the
# normal build runs them all, and the fuzz phase runs every seed and
# hundreds of thousands of mutations under ASan+UBSan as well (scripts/
# fuzz.sh); the seeds' systematic truncations and byte flips, which no
# other phase runs under the sanitizers, stay whole here.
export FUZZ_ITERATIONS="${FUZZ_ITERATIONS:-4000}"
# Suite "slow" (real traffic, qemu guests: tens of seconds each) runs in
# the normal build only; its code is covered here by the unit and fuzz suites.
exec meson test -C "$dir" --print-errorlogs --timeout-multiplier 3 --no-suite slow --no-suite long "$@"
