#!/bin/sh
# debian/make-deb.sh OUTDIR — `make deb`: build offcore's Debian packages
# with dpkg-buildpackage from a copy of this tree (the files git tracks or
# would add; dpkg-buildpackage writes next to the tree it builds, so it
# builds in OUTDIR, never in the checkout), then check them with lintian.
# The .deb files land in OUTDIR.
set -eu
out=${1:?usage: make-deb.sh OUTDIR}
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n "s/^  version : '\(.*\)',\$/\1/p" "$top/meson.build")
[ -n "$version" ] || { echo "make-deb: no version in meson.build" >&2; exit 1; }
for tool in dpkg-buildpackage dh lintian git; do
    command -v $tool >/dev/null || {
        echo "make-deb: $tool missing (make deps installs it)" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/offcore-$version
rm -rf "$src" "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$src"
echo "make deb: copying the tree (git ls-files) to $src"
# tracked and untracked-but-not-ignored files that exist
(cd "$top" && git ls-files -co --exclude-standard |
    while IFS= read -r f; do
        if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\n' "$f"; fi
    done | tar -cf - -T -) | tar -C "$src" -xf -
echo "make deb: building liboffcore0, liboffcore-dev, offcore, offcore-apps with" \
     "dpkg-buildpackage (meson, about a minute on 2 cores; log: $out/build.log)"
(cd "$src" && dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1 || {
    tail -40 "$out/build.log"; echo "make-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2; exit 1; }
ls -1 "$out"/*.deb
# lintian: errors and warnings fail the build; the informational tags
# that remain are explained in docs/tools.md (Packages)
echo "make deb: checking the packages with lintian (log: $out/lintian.log)"
rc=0
lintian -I --fail-on error,warning "$out"/*.changes > "$out/lintian.log" 2>&1 || rc=$?
grep -v "root privileges" "$out/lintian.log" || true
[ $rc = 0 ] || { echo "make-deb: lintian found errors or warnings" >&2; exit 1; }
echo "make deb: done: apt install $out/*.deb (liboffcore0, liboffcore-dev, offcore, offcore-apps)"
