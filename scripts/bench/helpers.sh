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
# DOCUMENT_CACHE_MIB, when set, as a query API's `--document-cache-mib`,
# for the benchmarks that let it size the cache they measure.
cache_flags=()
[ -z "${DOCUMENT_CACHE_MIB:-}" ] || cache_flags=(--document-cache-mib "$DOCUMENT_CACHE_MIB")
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 1 300); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "$1 did not answer" >&2; exit 1; }
# Drives rights lookups at URL $1 for `seconds` over `connections`
# connections and writes wrk's report to $2.
load() {
    wrk --threads 2 --connections "$connections" --duration "${seconds}s" --latency \
        --script scripts/bench/rights-lookups.lua "$1" >"$2"
}
# Warms each server on the ports given (page cache, memory maps,
# connections) with 5 s of lookups before anything is measured.
warm() {
    for port in "$@"; do
        wrk --threads 2 --connections "$connections" --duration 5s --script scripts/bench/rights-lookups.lua \
            "http://127.0.0.1:$port" >/dev/null
    done
}
# Starts the ceiling: the constant-body server answering with a body as
# large as an average profile served on port $1 over $2 works. Sets
# `ceiling_port` and `profile_bytes`.
start_ceiling() {
    profile_bytes=$(python3 scripts/bench/average_profile_bytes.py "$1" "$2")
    ceiling_port=$(free_port)
    target/release/examples/constant_body_server "127.0.0.1:$ceiling_port" "$profile_bytes" &
    pids+=($!)
    wait_for "http://127.0.0.1:$ceiling_port/"
}
# Waits until the processes whose pid files are given use less than a tenth
# of a core over 2 s (a Cassandra node compacting what a load wrote), or
# 3 minutes have passed, so that lookups are not measured beside that work.
wait_until_idle() {
    local deadline=$((SECONDS + 180)) before after
    cpu_ticks() { for file in "$@"; do cut -d' ' -f14,15 "/proc/$(cat "$file")/stat"; done | awk '{s += $1 + $2} END {print s}'; }
    while ((SECONDS < deadline)); do
        before=$(cpu_ticks "$@")
        sleep 2
        after=$(cpu_ticks "$@")
        # Clock ticks are hundredths of a second: 20 ticks in 2 s is a tenth of a core.
        if ((after - before < 20)); then
            echo "the nodes are idle (${SECONDS} s into the run)" >&2
            return
        fi
    done
    echo "the nodes were still busy after 3 minutes; measuring anyway" >&2
}
