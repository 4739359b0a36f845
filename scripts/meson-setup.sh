#!/bin/sh
# scripts/meson-setup.sh DIR [MESON OPTIONS...]: configure DIR, or
# reconfigure it with these options when it is already configured; start
# it afresh (--wipe) if reconfiguring fails, e.g. after a compiler change.
set -eu
dir=$1
shift
if [ -f "$dir/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$dir" "$@" || meson setup --wipe "$dir" "$@"
else
    meson setup "$dir" "$@"
fi
