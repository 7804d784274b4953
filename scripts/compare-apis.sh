#!/usr/bin/env bash
# Compares two query API builds on the same store under the lookup load of
# bench-api.sh (rights by id, random ids, wrk), in alternating rounds; then
# under the open loop of bench-scale.sh (query-api/examples/open_loop_load.rs:
# requests due on a fixed schedule, a wait for a busy connection counted);
# then measures the current build's answer codings: bytes and time of a
# 1,000-row bulk page with each Accept-Encoding.
#
#   scripts/compare-apis.sh QUERY_API_A QUERY_API_B [WORKS=100000] [SECONDS=20] [CONNECTIONS=64]
#
# A is the baseline, B the build measured (its codings are measured). Copy
# a build out of target/ before building the other one; both must read the
# store's schema revision. Rounds alternate A, B, A, B, ... and the median
# round of each is reported, because back-to-back runs on these machines
# vary by up to 30%. The open loop asks OPEN_LOOP_RATE requests/s (default
# half of A's median round) for SECONDS, OPEN_LOOP_RUNS times per build
# (default 3), alternating, and reports each run's p99 and their median.
# DOCUMENT_CACHE_MIB, when set, is both builds' `--document-cache-mib`.
# Nothing asserts on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bench/two_builds.sh
source scripts/bench/two_builds.sh
two_builds api-compare "$@"
works="${3:-100000}" seconds="${4:-20}" connections="${5:-64}"
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh

cargo build --release --quiet -p projector
cargo build --release --quiet -p query-api --example open_loop_load
projector=target/release/projector
echo "generating and projecting $works works"
"$projector" generate --works "$works" --seed 7 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
RUST_LOG=warn "$projector" run --source "file://$work_directory/events" --data-dir "$work_directory/data" \
    --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null
export BENCH_API_KEY BENCH_WORKS="$works"
BENCH_API_KEY=$("$build_b" keys --data-dir "$work_directory/data" issue --partner "Load benchmark" \
    --scopes rights:read,bulk:read --rate-limit 1000000000 2>/dev/null)

start_api() {
    local binary="$1" port="$2"
    RUST_LOG=warn "$binary" serve --data-dir "$work_directory/data" --listen "127.0.0.1:$port" \
        --admin-listen "127.0.0.1:$(free_port)" --snapshot-interval-minutes 0 "${cache_flags[@]}" >/dev/null &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/api/v1/public/v1/openapi.json"
}
port_a=$(free_port)
port_b=$(free_port)
start_api "$build_a" "$port_a"
start_api "$build_b" "$port_b"

warm "$port_a" "$port_b"
for round in 1 2 3; do
    echo "round $round: A then B, ${seconds} s each ($connections connections)"
    load "http://127.0.0.1:$port_a" "$work_directory/a-$round.txt"
    load "http://127.0.0.1:$port_b" "$work_directory/b-$round.txt"
done

open_loop_rate="${OPEN_LOOP_RATE:-$(python3 -c "import sys; sys.path.insert(0, 'scripts/bench'); from wrk_rounds import median_round; print(int(median_round('$work_directory', 'a')[0]) // 2)" | tail -1)}"
for run in $(seq 1 "${OPEN_LOOP_RUNS:-3}"); do
    echo "open loop $run: A and B in turn, $open_loop_rate requests/s for ${seconds} s each"
    order=("a $port_a" "b $port_b")
    ((run % 2)) || order=("b $port_b" "a $port_a")
    for name_and_port in "${order[@]}"; do
        read -r name port <<<"$name_and_port"
        target/release/examples/open_loop_load "127.0.0.1:$port" "$works" "$open_loop_rate" "$seconds" \
            "$connections" >"$work_directory/open-$name-$run.json"
    done
done

python3 - "$work_directory" "$port_b" <<'PY'
import glob, json, os, statistics, sys, time, urllib.request
directory, port = sys.argv[1], sys.argv[2]
sys.path.insert(0, "scripts/bench")
from wrk_rounds import median_round
a, b = median_round(directory, "a"), median_round(directory, "b")
for name, (rate, p50, p99, failed, _) in (("A", a), ("B", b)):
    print(f"{name}: {rate:>10,.0f} requests/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   non-2xx {failed}")
print(f"B / A: {b[0] / a[0]:.2f}")
for name in ("a", "b"):
    runs = [json.load(open(path)) for path in sorted(glob.glob(f"{directory}/open-{name}-*.json"))]
    p99s = ", ".join(f"{run['p99Ms']:.2f}" for run in runs)
    print(f"{name.upper()} open loop: asked {runs[0]['rateAsked']:,.0f}/s, p99 by run {p99s} ms "
          f"(median {statistics.median(run['p99Ms'] for run in runs):.2f}), "
          f"errors {sum(run['errors'] for run in runs)}")

url = f"http://127.0.0.1:{port}/api/v1/public/v1/bulk/works?limit=1000"
print("a 1,000-row bulk page from B, 30 sequential requests per coding:")
for coding in ("identity", "gzip", "br", "zstd"):
    headers = {"x-api-key": os.environ["BENCH_API_KEY"]}
    if coding != "identity":
        headers["Accept-Encoding"] = coding
    times, size = [], 0
    for _ in range(30):
        started = time.perf_counter()
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as answer:
            body = answer.read()
            assert answer.headers.get("Content-Encoding") == (None if coding == "identity" else coding)
        times.append((time.perf_counter() - started) * 1000)
        size = len(body)
    print(f"  {coding:>8}: {size:>9,} bytes   p50 {statistics.median(times):6.2f} ms   max {max(times):6.2f} ms")
PY
