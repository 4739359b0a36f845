#!/bin/sh
# deb-test.sh SOURCE_DIR BUILD_DIR — `make deb`, then install the packages
# with dpkg -i into a throwaway root (an overlay of this machine's own
# root, in a private mount namespace: nothing changes on the machine) and
# run jobs from the installed files only: histogram on 2 ranks inline and
# through the installed offcored (at its default socket, as root and as
# user nobody), `offcore doctor`, a program built with
# the installed headers and pkg-config file.  Exit 0 PASS, 1 FAIL, 77 SKIP.
set -u
SRC=${1:?usage: deb-test.sh SOURCE_DIR BUILD_DIR}
B=${2:?build dir}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (mount namespace, overlay)"; exit 77; }
for t in unshare chroot dpkg-buildpackage dh mpirun; do
    command -v $t >/dev/null || { echo "SKIP: no $t"; exit 77; }
done
OUT=$B/deb-test
sh "$SRC/debian/make-deb.sh" "$OUT" > "$OUT.log" 2>&1 || {
    tail -30 "$OUT.log"; echo "FAIL: make deb"; exit 1; }
T=$(mktemp -d /tmp/oc-deb-XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/upper" "$T/work" "$T/root" "$T/upper/tmp/debs"
cp "$OUT"/liboffcore0_*.deb "$OUT"/liboffcore-dev_*.deb "$OUT"/offcore_*.deb \
   "$OUT"/offcore-apps_*.deb "$T/upper/tmp/debs/"

cat > "$T/upper/tmp/inside.sh" <<'INSIDE'
set -eu -o pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 UCX_TLS=sm,self
agent=
fail() { echo "FAIL: $*"; exit 1; }
# the agent this script starts ends with it, also on a failure
trap '[ -z "$agent" ] || { kill $agent; wait $agent; } 2>/dev/null || true' EXIT
dpkg -i /tmp/debs/*.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg -i"; }
for f in /usr/bin/offcore /usr/sbin/offcored /usr/libexec/offcore/histogram \
         /usr/lib/systemd/system/offcored.service /etc/offcore/offcored.env \
         /usr/include/offcore/offcore.h; do
    [ -e "$f" ] || fail "$f not installed"
done
# the Slurm plugin and its plugstack.conf snippet, which names it
dpkg -L offcore > /tmp/offcore.list
for f in /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_offcore.so \
         /etc/slurm/plugstack.conf.d/offcore.conf; do
    grep -qx "$f" /tmp/offcore.list || fail "dpkg -L offcore does not list $f"
done
plugin=$(sed -n 's/^required \([^ ]*\) .*/\1/p' /etc/slurm/plugstack.conf.d/offcore.conf)
[ "$plugin" = /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_offcore.so ] ||
    fail "offcore.conf names '$plugin', not the installed plugin"
for f in histogram sssp triangle bench-memcpy; do
    [ -e /usr/bin/$f ] && fail "/usr/bin/$f is on everyone's PATH"
done
man -w offcore-doctor >/dev/null 2>&1 || [ -e /usr/share/man/man1/offcore-doctor.1.gz ] ||
    fail "no man page offcore-doctor"
for p in offcore-dp.conf offcore-nvmf.conf; do
    [ -e /usr/share/man/man5/$p.5.gz ] || fail "no man page $p(5)"
done
ldd /usr/libexec/offcore/histogram | grep -E "liboffcore.so.0 => (/usr)?/lib/x86_64-linux-gnu/liboffcore.so.0" >/dev/null ||
    fail "histogram does not use the installed liboffcore"
out=$(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to none \
      -x OC_PLACEMENT=inline /usr/libexec/offcore/histogram --updates 200K --table 10K)
echo "$out" | grep '"verified":true' >/dev/null || fail "inline job: $out"
echo "inline job from the installed files: verified"
for b in /usr/bin/offcore /usr/sbin/offcored /usr/sbin/offcore-dp /usr/sbin/offcore-nvmf; do
    $b --version | grep "^$(basename $b) [0-9]" >/dev/null || fail "$b --version"
done
# the installed agent, at its default socket: /run/offcore is not there
# (a fresh tmpfs), the agent makes it; UCX as the unit would have it (all
# transports: ranks of other users reach it over tcp/cma)
mkdir -p /etc/offcore
offcore keygen --out /etc/offcore/cluster.key
[ "$(stat -c %a /etc/offcore/cluster.key)" = 600 ] || fail "keygen --out mode"
env -u UCX_TLS UCX_NET_DEVICES=lo OC_LOG=agent:info,router:info /usr/sbin/offcored --metrics off >/tmp/agent.log 2>&1 &
agent=$!
i=0
until grep -qw ready /tmp/agent.log; do
    i=$((i + 1)); [ $i -lt 200 ] || { cat /tmp/agent.log; fail "offcored not ready"; }
    kill -0 $agent || { cat /tmp/agent.log; fail "offcored died"; }
    sleep 0.05
done
key=$(offcore job-key --job 7)
out=$(OC_PLACEMENT=agent OC_JOB=7 OC_JOB_KEY=$key \
      mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to none \
      -x OC_PLACEMENT -x OC_JOB -x OC_JOB_KEY \
      /usr/libexec/offcore/histogram --updates 200K --table 10K)
echo "$out" | grep '"placement":"agent"' >/dev/null || fail "agent job: $out"
echo "$out" | grep '"verified":true' >/dev/null || fail "agent job: $out"
echo "agent job through the installed offcored: verified"
# a job of an ordinary user through root's agent (the job key is the gate)
if command -v setpriv >/dev/null; then
    key=$(offcore job-key --job 8)
    home=$(mktemp -d /tmp/nobody.XXXXXX) && chown nobody:nogroup "$home" ||
        fail "a home for nobody"
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
          env HOME=$home TMPDIR=$home UCX_NET_DEVICES=lo OC_PLACEMENT=agent \
          OC_JOB=8 OC_JOB_KEY=$key \
          mpirun --oversubscribe -np 2 --bind-to none \
          -x OC_PLACEMENT -x OC_JOB -x OC_JOB_KEY -x UCX_NET_DEVICES -x UCX_TLS \
          /usr/libexec/offcore/histogram --updates 200K --table 10K 2>&1) ||
        { cat /tmp/agent.log; fail "nobody's job: $out"; }
    echo "$out" | grep '"placement":"agent"' >/dev/null || fail "nobody's agent job: $out"
    echo "$out" | grep '"verified":true' >/dev/null || fail "nobody's agent job: $out"
    echo "a job of user nobody through the installed offcored: verified"
else
    echo "SKIP part: no setpriv, no job as another user"
fi
kill $agent; wait $agent || true
agent=
offcore doctor --json | python3 -m json.tool >/dev/null || fail "offcore doctor --json"
# a program built against liboffcore-dev
cat > /tmp/t.c <<'C'
#include <offcore/offcore.h>
#include <stdio.h>
int main(void) { puts(oc_status_string(OC_ERR_TRANSPORT_REQUIRED)); return 0; }
C
cc /tmp/t.c -o /tmp/t $(pkg-config --cflags --libs offcore) || fail "build with pkg-config"
/tmp/t | grep OC_ERR_TRANSPORT_REQUIRED >/dev/null || fail "program on the installed library"
echo "built and ran a program with pkg-config offcore"
INSIDE

unshare -m --propagation private sh -c '
    set -e
    T=$1
    mount -t overlay overlay -o lowerdir=/,upperdir=$T/upper,workdir=$T/work $T/root
    mount --rbind /proc $T/root/proc
    mount --rbind /sys $T/root/sys
    mount --rbind /dev $T/root/dev
    mount -t tmpfs tmpfs $T/root/run
    chroot $T/root timeout 240 bash /tmp/inside.sh
' sh "$T"
rc=$?
[ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)"
exit $rc
