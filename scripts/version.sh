#!/bin/sh
# version.sh VERSION SOURCE_DIR — the build's version string (meson's
# vcs_tag runs it at every build): VERSION+DESCRIBE when SOURCE_DIR is a
# git checkout (git describe --always --dirty), else exit 1 so that meson
# uses VERSION alone.
d=$(git -C "$2" describe --always --dirty 2>/dev/null) || exit 1
[ -n "$d" ] || exit 1
echo "$1+$d"
