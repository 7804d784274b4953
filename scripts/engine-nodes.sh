# Shared by scripts/cassandra.sh and scripts/kafka.sh (sourced, not run):
# waiting for a node to say in its log that it is ready, signalling a node
# and waiting for it to exit, and stopping every node under `directory`.
# The sourcing script sets `directory`, `engine` (its name in messages),
# `log_name` (the log file in DIR/node-N), `ready_line` (what the log says
# once the node serves) and `start_timeout` (seconds), and defines
# `launch N`, which starts node N in the background and records its pid.

# ready_count N: how many times node N's log says it is ready.
ready_count() {
    local count
    count=$(grep -c "$ready_line" "$directory/node-$1/$log_name" 2>/dev/null) || true
    echo "${count:-0}"
}

# ready N BEFORE: waits until node N's log says it is ready once more than
# BEFORE times; prints its log and fails if it does not.
ready() {
    local node_directory="$directory/node-$1" started
    started=$(date +%s)
    until (($(ready_count "$1") > $2)); do
        if ! kill -0 "$(cat "$node_directory/pid")" 2>/dev/null || (($(date +%s) - started > start_timeout)); then
            echo "$engine node $1 did not start; its log ($node_directory):" >&2
            tail -n 60 "$node_directory/$log_name" "$node_directory/stdout.log" >&2 || true
            exit 1
        fi
        sleep 0.2
    done
}

# signal SIGNAL N: sends SIGNAL to node N and waits until it has exited.
signal() {
    local pid_file="$directory/node-$2/pid"
    [ -f "$pid_file" ] || return 0
    local pid
    pid=$(cat "$pid_file")
    kill "-$1" "$pid" 2>/dev/null || true
    for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pid_file"
}

# stop_all: tells every node at once, then waits for each.
stop_all() {
    for pid_file in "$directory"/node-*/pid; do
        [ -f "$pid_file" ] && kill -TERM "$(cat "$pid_file")" 2>/dev/null || true
    done
    for node_directory in "$directory"/node-*; do
        [ -d "$node_directory" ] && signal TERM "${node_directory##*-}"
    done
}

# node_command COMMAND DIR [N]: the commands every engine script has beside
# its own `start`: stop, kill N, restart N.
node_command() {
    case "$1" in
    stop) stop_all ;;
    kill) signal KILL "${3:?which node}" ;;
    restart)
        local node="${3:?which node}" before
        signal TERM "$node"
        before=$(ready_count "$node")
        launch "$node"
        ready "$node" "$before"
        ;;
    *)
        echo "unknown command $1" >&2
        exit 2
        ;;
    esac
}
