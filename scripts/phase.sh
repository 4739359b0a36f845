#!/bin/sh
# scripts/phase.sh NAME COMMAND...: run one phase of `make test` between
# banners, and say how long it took and whether it passed.
name=$1
shift
printf '\n==================================================================\n'
printf '== %s\n' "$name"
printf '==================================================================\n'
start=$(date +%s)
"$@"
rc=$?
secs=$(($(date +%s) - start))
if [ "$rc" -eq 0 ]; then
    printf '== %s: PASSED in %ss\n' "$name" "$secs"
else
    printf '== %s: FAILED (exit %s) after %ss\n' "$name" "$rc" "$secs"
fi
[ -n "${PHASE_TIMES:-}" ] && printf '%-44s %5ss  %s\n' "$name" "$secs" \
    "$([ "$rc" -eq 0 ] && echo ok || echo FAILED)" >>"$PHASE_TIMES"
exit "$rc"
