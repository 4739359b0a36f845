#!/bin/bash
# inline-ab-check.sh RUN_INLINE_AB BUILD_DIR — the meson test of
# run-inline-ab.sh (inline-ab-quick): compare this tree with its own HEAD
# at the sizes the environment gives, and check what a user relies on:
# every app's summary line says verified, and the temporary worktree is
# gone afterwards (directory and git's record).  Never a timing.
set -u -o pipefail
script=$1 b=$2
out=$(bash "$script" "$b" HEAD)
rc=$?
[ $rc -eq 0 ] || { printf '%s\n' "$out"; exit $rc; }
n=$(printf '%s\n' "$out" | grep '"bench":"inline-vs-rev",' | grep -c '"verified":true')
want=$(echo ${INLINE_AB_APPS:-histogram transpose index-gather mcproxy} | wc -w)
if [ "$n" -ne "$want" ]; then
    printf '%s\n' "$out"
    echo "FAIL: $n verified summary lines, expected $want"
    exit 1
fi
if ls -d "$b"/inline-ab-* >/dev/null 2>&1; then
    echo "FAIL: worktree directory left behind: $(ls -d "$b"/inline-ab-*)"
    exit 1
fi
if git -C "$(dirname "$script")" worktree list | grep '/inline-ab-' >/dev/null; then
    echo "FAIL: worktree still registered with git"
    exit 1
fi
printf '%s\n' "$out"
echo PASS
