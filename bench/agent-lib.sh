# agent-lib.sh — sourced by the bench scripts: start and stop an offcored.
# Needs $B (absolute build dir) and $T (a temp dir holding the cluster key
# in $T/key); sets $AGENT to its pid.

# start_agent CPUS [OFFCORED ARGS...]: pinned to CPUS (taskset list; empty:
# anywhere), listening on $T/agent.sock; waits until it is ready.
start_agent() {
    cpus=$1
    shift
    if [ -n "$cpus" ]; then
        taskset -c "$cpus" "$B/src/agent/offcored" --listen "unix:$T/agent.sock" \
            --cluster-key "$T/key" --metrics off "$@" > "$T/agent.log" 2>&1 &
    else
        "$B/src/agent/offcored" --listen "unix:$T/agent.sock" \
            --cluster-key "$T/key" --metrics off "$@" > "$T/agent.log" 2>&1 &
    fi
    AGENT=$!
    _w=0
    while ! grep -qw ready "$T/agent.log" 2>/dev/null; do
        _w=$((_w + 1))
        [ $_w -gt 200 ] && { echo "agent did not start" >&2; cat "$T/agent.log" >&2; exit 1; }
        sleep 0.05
    done
}

stop_agent() { kill "$AGENT"; wait "$AGENT" 2>/dev/null; AGENT=""; }
