#!/usr/bin/env bash
# Compares two projector builds where a rebuild is felt: `projector rebuild`
# of the same registry while the query API serves rights lookups, in
# alternating runs, and prints each run and the means: the rebuild's seconds
# and CPU seconds (/usr/bin/time -v), and the lookups served meanwhile
# (wrk, 64 connections: rate, p99, and failed requests: answers other than
# 2xx and 3xx, and socket errors).
#
#   scripts/compare-rebuilds.sh BINARY_A BINARY_B [PAIRS=3] [WORKS=200000]
#
# The rebuild shares the two cores with the API and wrk: a build that
# spends fewer CPU seconds on an idle machine (compare-projectors.sh) may
# still rebuild slower here. Version 1 is projected once (with A) and
# served by this tree's query API; each run rebuilds version 2, which is
# dropped after it. Copy a build out of target/ before building the other
# one. Nothing asserts on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bench/two_builds.sh
source scripts/bench/two_builds.sh
two_builds rebuild-compare "$@"
pairs="${3:-3}" works="${4:-200000}" connections=64
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh

cargo build --release --quiet -p query-api --bin query-api
query_api=target/release/query-api
data="$work_directory/data"

echo "generating and projecting $works works with $build_a"
"$build_a" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
RUST_LOG=warn "$build_a" run --source "file://$work_directory/events" --data-dir "$data" --admin-listen 127.0.0.1:0 \
    --exit-when-caught-up >/dev/null
export BENCH_API_KEY BENCH_WORKS="$works"
BENCH_API_KEY=$("$query_api" keys --data-dir "$data" issue --partner "Rebuild comparison" \
    --scopes rights:read --rate-limit 1000000000 2>/dev/null)
api_port=$(free_port)
RUST_LOG=warn "$query_api" serve --data-dir "$data" --listen "127.0.0.1:$api_port" --admin-listen 127.0.0.1:0 \
    --snapshot-interval-minutes 0 &
pids+=($!)
wait_for "http://127.0.0.1:$api_port/api/v1/public/v1/openapi.json"
warm "$api_port"

# One rebuild under load; appends "label seconds cpu_seconds lookups_per_second p99 failed kinds" to
# the results, kinds naming what failed ("timeout=2,read=1", or "-").
run() {
    local label="$1" binary="$2" start end
    sync
    wrk --threads 2 --connections "$connections" --duration 3600s --latency \
        --script scripts/bench/rights-lookups.lua "http://127.0.0.1:$api_port" >"$work_directory/wrk.txt" &
    local wrk_pid=$!
    start=$(date +%s.%N)
    /usr/bin/time -v "$binary" rebuild --into 2 --source "file://$work_directory/events" --data-dir "$data" \
        --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null 2>"$work_directory/time.txt"
    end=$(date +%s.%N)
    kill -INT "$wrk_pid"
    wait "$wrk_pid" || true
    "$binary" drop 2 --data-dir "$data" >/dev/null
    python3 - "$work_directory" "$label" "$start" "$end" >>"$work_directory/results" <<'PY'
import re, sys
sys.path.insert(0, "scripts/bench")
from wrk_rounds import failures, read_round
directory, label, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
timing = open(f"{directory}/time.txt").read()
field = lambda name: float(re.search(rf"{name}: ([\d.]+)", timing).group(1))
cpu = field(r"User time \(seconds\)") + field(r"System time \(seconds\)")
rate, _, p99, _, _ = read_round(f"{directory}/wrk.txt")
# A request that got no answer at all counts as failed too.
kinds = failures(f"{directory}/wrk.txt")
print(label, end - start, cpu, rate, p99, sum(kinds.values()), ",".join(f"{kind}={count}" for kind, count in kinds.items()) or "-")
PY
    tail -n 1 "$work_directory/results" |
        awk '{printf "%s  rebuild %6.1f s  cpu %6.1f s  lookups meanwhile %8.0f/s, p99 %.2f ms, %d failed (%s)\n", $1, $2, $3, $4, $5, $6, $7}'
}

alternate_pairs "$pairs"

python3 - "$work_directory/results" <<'PY'
import sys
runs = {}
for line in open(sys.argv[1]):
    label, seconds, cpu, rate, p99, failed, _ = line.split()
    runs.setdefault(label, []).append((float(seconds), float(cpu), float(rate), float(p99), int(failed)))
for label in ("A", "B"):
    seconds, cpus, rates, p99s, failed = zip(*runs[label])
    mean = lambda values: sum(values) / len(values)
    print(f"mean {label}: rebuild {mean(seconds):6.1f} s  cpu {mean(cpus):6.1f} s  "
          f"lookups meanwhile {mean(rates):8.0f}/s, p99 {mean(p99s):.2f} ms, {sum(failed)} failed  ({len(seconds)} runs)")
b_faster = sum(b[0] < a[0] for a, b in zip(runs["A"], runs["B"]))
print(f"B rebuilt faster than A in {b_faster} of {len(runs['A'])} pairs")
PY
