# tests/slurm/cluster-lib.sh — a one-node Slurm of its own for the slurm
# suite and bench/run-slurm-launch.sh (bash; source it): munged, slurmctld
# and slurmd from Debian's packages, with a generated slurm.conf and
# plugstack.conf in a fresh temp dir $T, free ports, nothing of the
# machine's own Slurm or munge; and an offcored on unix:$T/agent.sock.
#   slurm_up PLUGIN OFFCORE  start it (the plugin with key=$T/cluster.key
#                            agent=unix:$T/agent.sock timeout_ms=1000);
#                            prints SKIP: ... and returns 77 where it cannot
#   agent_up OFFCORED        start the agent ($AGENT), wait until ready
#   slurm_down               cancel the jobs, stop every daemon by its PID,
#                            remove $T (for a trap on EXIT)
# Needs root (the daemons; the agent's socket is root-only too).
T= MUNGE= CTLD= SLURMD= AGENT=
stop() { # stop PID: TERM, then wait for it (by PID: only what we started)
    [ -n "$1" ] || return 0
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
# until_ok DEADLINE_S CMD...: poll CMD every 0.1 s for at most DEADLINE_S
until_ok() {
    local n=$(($1 * 10))
    shift
    until "$@"; do
        n=$((n - 1))
        [ $n -gt 0 ] || return 1
        sleep 0.1
    done
}
slurm_down() {
    set +e
    if [ -n "$CTLD" ] && kill -0 "$CTLD" 2>/dev/null; then
        scancel --quiet --user=root 2>/dev/null # this cluster's jobs only
    fi
    [ -n "$AGENT" ] && kill -CONT "$AGENT" 2>/dev/null
    stop "$AGENT"
    stop "$SLURMD"
    stop "$CTLD"
    stop "$MUNGE"
    AGENT= SLURMD= CTLD= MUNGE=
    [ -n "$T" ] && rm -rf "$T"
    T=
}
agent_up() {
    OC_LOG=agent:info "$1" --listen "unix:$T/agent.sock" \
        --cluster-key "$T/cluster.key" --metrics off > "$T/agent.log" 2>&1 &
    AGENT=$!
    until_ok 20 grep -qw ready "$T/agent.log" ||
        { cat "$T/agent.log"; echo "offcored not ready"; return 1; }
}
slurm_up() {
    local PLUGIN=$1 OFFCORE=$2 libs mpis host PCTL PD
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (slurmd, slurmctld, munged)"; return 77; }
    [ -f "$PLUGIN" ] || { echo "SKIP: the plugin is not built (no slurm/spank.h: apt install libslurm-dev)"; return 77; }
    libs=$(ldd "$PLUGIN" 2>&1 || true)
    if [[ $libs == *libasan* || $libs == *libubsan* ]]; then
        echo "SKIP: a sanitizer build's plugin cannot load into Slurm's programs (built without ASan); the normal build runs this test"
        return 77
    fi
    for t in munged slurmctld slurmd srun sinfo squeue scancel python3; do
        command -v $t >/dev/null ||
            { echo "SKIP: no $t (apt install munge slurmctld slurmd slurm-client)"; return 77; }
    done

    T=$(mktemp -d /tmp/oc-slurm-XXXXXX)

    # munge: its own key and socket (the socket's directory must let others
    # in: srun and the tasks' steps talk to it)
    mkdir -p "$T/munge" "$T/state" "$T/spool"
    chmod 711 "$T" "$T/munge"
    head -c 1024 /dev/urandom > "$T/munge/key"
    chmod 400 "$T/munge/key"
    munged -F --force --socket="$T/munge/sock" --key-file="$T/munge/key" \
        --pid-file="$T/munge/pid" --seed-file="$T/munge/seed" \
        --log-file="$T/munge/log" > "$T/munge/out" 2>&1 &
    MUNGE=$!
    until_ok 10 test -S "$T/munge/sock" ||
        { cat "$T/munge/out"; echo "munged did not start"; return 1; }

    # two free TCP ports for slurmctld and slurmd
    read -r PCTL PD < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')

    "$OFFCORE" keygen > "$T/cluster.key"
    chmod 600 "$T/cluster.key"
    host=$(hostname)
    cat > "$T/slurm.conf" <<EOF
ClusterName=octest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PCTL
SlurmdPort=$PD
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
PlugStackConfig=$T/plugstack.conf
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=octest1 NodeHostname=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=octest1 Default=YES MaxTime=INFINITE State=UP
EOF
    echo "required $PLUGIN key=$T/cluster.key agent=unix:$T/agent.sock timeout_ms=1000" \
        > "$T/plugstack.conf"
    export SLURM_CONF=$T/slurm.conf
    slurmctld -D -f "$T/slurm.conf" > "$T/slurmctld.out" 2>&1 &
    CTLD=$!
    slurmd -D -f "$T/slurm.conf" -N octest1 > "$T/slurmd.out" 2>&1 &
    SLURMD=$!
    node_idle() { [ "$(sinfo -h -n octest1 -o %T 2>/dev/null)" = idle ]; }
    until_ok 30 node_idle || {
        cat "$T/slurmctld.out" "$T/slurmd.out"
        # our slurm.conf refused is this file's bug, not the machine's
        if grep -q "Parse error\|Unable to process configuration" \
                "$T/slurmctld.out" "$T/slurmd.out"; then
            echo "the generated slurm.conf is refused (see above)"; return 1
        fi
        echo "SKIP: Slurm did not start here (see above)"; return 77; }
    mpis=$(srun --mpi=list 2>&1 || true)
    [[ $mpis == *pmix* ]] ||
        { echo "SKIP: Slurm has no PMIx plugin here (srun --mpi=list: $mpis)"; return 77; }
}
