#!/bin/sh
# expect-exit.sh CODE PATTERN CMD [ARGS...]
# Run CMD; pass when it exits with CODE and its output (stdout and stderr
# together) contains PATTERN (a fixed string).  Used by the apps' usage tests.
want=$1
pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -ne "$want" ]; then
    printf 'FAIL: %s exited %s, expected %s; output:\n%s\n' "$*" "$rc" "$want" "$out"
    exit 1
fi
case $out in
*"$pattern"*) ;;
*)
    printf 'FAIL: %s: output lacks "%s":\n%s\n' "$*" "$pattern" "$out"
    exit 1
    ;;
esac
printf 'PASS: %s -> %s\n' "$*" "$rc"
exit 0
