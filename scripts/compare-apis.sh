#!/usr/bin/env bash
# Compares two query API builds on the same store under the lookup load of
# bench-api.sh (rights by id, random ids, wrk), in alternating rounds, and
# then measures the current build's answer codings: bytes and time of a
# 1,000-row bulk page with each Accept-Encoding.
#
#   scripts/compare-apis.sh QUERY_API_A QUERY_API_B [WORKS=100000] [SECONDS=20] [CONNECTIONS=64]
#
# A is the baseline, B the build measured (its codings are measured). Copy
# a build out of target/ before building the other one; both must read the
# store's schema revision. Rounds alternate A, B, A, B, ... and the median
# round of each is reported, because back-to-back runs on these machines
# vary by up to 30%. Nothing asserts on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bench/two_builds.sh
source scripts/bench/two_builds.sh
two_builds api-compare "$@"
works="${3:-100000}" seconds="${4:-20}" connections="${5:-64}"
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh

cargo build --release --quiet -p projector
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
        --admin-listen "127.0.0.1:$(free_port)" --snapshot-interval-minutes 0 >/dev/null &
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

python3 - "$work_directory" "$port_b" <<'PY'
import os, statistics, sys, time, urllib.request
directory, port = sys.argv[1], sys.argv[2]
sys.path.insert(0, "scripts/bench")
from wrk_rounds import median_round
a, b = median_round(directory, "a"), median_round(directory, "b")
for name, (rate, p50, p99, failed, _) in (("A", a), ("B", b)):
    print(f"{name}: {rate:>10,.0f} requests/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   non-2xx {failed}")
print(f"B / A: {b[0] / a[0]:.2f}")

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
