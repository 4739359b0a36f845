#!/bin/bash
# tests/abi-check.sh LIB BASELINE HEADERS — liboffcore's ABI against the
# committed baseline (abi/liboffcore.abi, made by abidw): abidiff of the
# built library LIB, restricted to the public headers in HEADERS.
#
# Fails (1) on a change callers see: a public function or variable
# removed, or a public type changed (a struct member's offset or size, an
# enumerator's value, a parameter's type).  Passes (0) on no change, and
# on functions added, which it names: the baseline then wants updating
# (docs/abi.md).  Skips
# (77) with the reason when abidiff is not installed (abigail-tools), and
# in a sanitizer build.
set -euo pipefail
lib=$1 base=$2 headers=$3

if ! command -v abidiff >/dev/null 2>&1; then
    echo "SKIP: abidiff not found (Debian: abigail-tools; make deps)"
    exit 77
fi
dynamic=$(readelf -d "$lib")
if [[ $dynamic == *libasan* || $dynamic == *libubsan* ]]; then
    echo "SKIP: a sanitizer build; the normal build checks the ABI"
    exit 77
fi
if ! [ -s "$base" ]; then
    echo "FAIL: no baseline $base (docs/abi.md says how to make one)"
    exit 1
fi
# the types come from the library's DWARF: without it abidiff would see
# the symbols only, and a changed struct would pass
sections=$(readelf -S "$lib")
if [[ $sections != *.debug_info* ]]; then
    echo "FAIL: $lib has no debug info (.debug_info): liboffcore is built"
    echo "  with -g for this check (src/runtime/meson.build)"
    exit 1
fi

st=0
out=$(abidiff --headers-dir2 "$headers" "$base" "$lib") || st=$?
printf '%s\n' "$out"
# abidiff's status is a bit field: 1 error, 2 usage, 4 ABI change, 8
# incompatible change.  It sets 8 only for a removed symbol: a public
# struct's member moved is "4" like an added function.  So: any change but
# added functions fails.
if [ $((st & 3)) -ne 0 ]; then
    echo "FAIL: abidiff could not compare (status $st)"
    exit 1
fi
if [ "$st" -eq 0 ]; then
    echo "PASS: liboffcore's ABI is the baseline's"
    exit 0
fi
re_fn='Functions changes summary: ([0-9]+) Removed, ([0-9]+) Changed[^,]*, ([0-9]+) Added'
re_var='Variables changes summary: ([0-9]+) Removed, ([0-9]+) Changed[^,]*, ([0-9]+) Added'
if [ $((st & 8)) -eq 0 ] && [[ $out =~ $re_fn ]]; then
    fr=${BASH_REMATCH[1]} fc=${BASH_REMATCH[2]} fa=${BASH_REMATCH[3]}
    if [[ $out =~ $re_var ]]; then
        vr=${BASH_REMATCH[1]} vc=${BASH_REMATCH[2]} va=${BASH_REMATCH[3]}
        # nothing removed or changed, and nothing else reported (the ELF
        # symbol tables, the soname: "... changed" lines of their own)
        # symbols without debug info (a function of a library linked in
        # without -g): counted apart by abidiff
        sr=0 sa=0
        re_sym='Function symbols changes summary: ([0-9]+) Removed, ([0-9]+) Added'
        if [[ $out =~ $re_sym ]]; then
            sr=${BASH_REMATCH[1]} sa=${BASH_REMATCH[2]}
        fi
        re_vsym='Variable symbols changes summary: ([0-9]+) Removed'
        if [[ $out =~ $re_vsym ]]; then
            sr=$((sr + BASH_REMATCH[1]))
        fi
        other=${out//changes summary/}
        if [ $((fr + fc + vr + vc + sr)) -eq 0 ] &&
            [ $((fa + va + sa)) -gt 0 ] &&
            [[ $other != *changed* && $other != *removed* ]]; then
            echo "PASS, with $((fa + va + sa)) added (above): a compatible change;"
            echo "  update $base (docs/abi.md) so that the next one is"
            echo "  measured from here"
            exit 0
        fi
    fi
fi
echo "FAIL: liboffcore's ABI changed against $base (above): a public"
echo "  function removed or changed, or a public type's layout.  If that is"
echo "  deliberate: docs/abi.md (a new soname, or a new baseline)."
exit 1
