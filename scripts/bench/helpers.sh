# Shared by the load benchmarks (sourced, not run): free ports, waiting for
# a server, and stopping what a benchmark started when it exits. A script
# that sources it sets `work_directory` first and adds the pids it starts
# to `pids`.
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work_directory"
}
trap cleanup EXIT
command -v wrk >/dev/null || { echo "wrk is required (Debian package wrk)" >&2; exit 1; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 1 300); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "$1 did not answer" >&2; exit 1; }
