#!/usr/bin/env bash
# Load benchmark of the public API: rights-by-id lookups over generated works
# with a high-limit key (wrk), in the same run as the same load against a
# minimal axum server answering a constant body of the same size: the ceiling
# of this machine. Prints both rates, their ratio and the latency percentiles.
#
#   scripts/bench-api.sh [WORKS] [SECONDS] [CONNECTIONS]
#
# Defaults: 100,000 works, 3 rounds of 20 s per server, 64 connections. The
# API runs twice, with its document cache (the default) and without it
# (`--document-cache-mib 0`: every lookup reads SQLite). Each round also
# sends batches of 100 identifiers (`POST /rights/lookup`) to the cached
# API (`BENCH_BATCH=100`), and profiles per second of batches are compared
# with single lookups, and asks the cached API for signed evidence packages
# (`BENCH_SUFFIX=/evidence`: rendering, RFC 8785 canonical JSON and an
# Ed25519 signature per request). The three servers
# are measured in alternation (API, API without cache, ceiling, API, ...)
# and the median round of each is reported, because back-to-back runs on
# these machines vary by up to 30%. wrk, the service and the ceiling share the
# machine's cores. Nothing asserts on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

works="${1:-100000}"
seconds="${2:-20}"
connections="${3:-64}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/api-bench.XXXXXX")"
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh

cargo build --release --quiet -p projector -p query-api --bins --example constant_body_server
projector=target/release/projector
query_api=target/release/query-api

echo "generating and projecting $works works"
"$projector" generate --works "$works" --seed 7 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
"$projector" run --source "file://$work_directory/events" --data-dir "$work_directory/data" --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null
export BENCH_API_KEY
BENCH_API_KEY=$("$query_api" keys --data-dir "$work_directory/data" issue --partner "Load benchmark" \
    --scopes rights:read,evidence:read --rate-limit 1000000000 2>/dev/null)
export BENCH_WORKS="$works"

# Starts the query API on PORT with its admin listener on ADMIN_PORT (and any further flags).
start_api() {
    local port="$1" admin_port="$2"
    shift 2
    RUST_LOG=warn "$query_api" serve --data-dir "$work_directory/data" --listen "127.0.0.1:$port" \
        --admin-listen "127.0.0.1:$admin_port" "$@" &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/api/v1/public/v1/openapi.json"
}
api_port=$(free_port)
api_admin_port=$(free_port)
start_api "$api_port" "$api_admin_port"
uncached_port=$(free_port)
start_api "$uncached_port" "$(free_port)" --document-cache-mib 0

start_ceiling "$api_port" "$works"
warm "$api_port" "$uncached_port" "$ceiling_port"
for round in 1 2 3; do
    echo "round $round: query API, query API without cache, ceiling, batches of 100, evidence, ${seconds} s each ($connections connections)"
    load "http://127.0.0.1:$api_port" "$work_directory/api-$round.txt"
    load "http://127.0.0.1:$uncached_port" "$work_directory/uncached-$round.txt"
    load "http://127.0.0.1:$ceiling_port" "$work_directory/ceiling-$round.txt"
    BENCH_BATCH=100 load "http://127.0.0.1:$api_port" "$work_directory/batch-$round.txt"
    BENCH_SUFFIX=/evidence load "http://127.0.0.1:$api_port" "$work_directory/evidence-$round.txt"
done

curl -s "http://127.0.0.1:$api_admin_port/metrics" >"$work_directory/api-metrics.txt"

python3 - "$work_directory" "$profile_bytes" "$works" <<'PY'
import sys
directory, size, works = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, "scripts/bench")
from document_cache import document_cache
from wrk_rounds import median_round
api, uncached, ceiling = median_round(directory, "api"), median_round(directory, "uncached"), median_round(directory, "ceiling")
batch = median_round(directory, "batch")
evidence = median_round(directory, "evidence")
print(f"works: {works}, ceiling body: {size} bytes; median round of each:")
for name, (rate, p50, p99, failed, requests) in (("query API", api), ("no cache", uncached), ("ceiling", ceiling)):
    print(f"{name:>10}: {rate:>10,.0f} requests/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   "
          f"non-2xx {failed} of {requests}")
print(f"     ratio: {api[0] / ceiling[0]:.2f} (query API / ceiling)")
print(f"   without: {uncached[0] / ceiling[0]:.2f} (query API without its document cache / ceiling)")
cache = document_cache(f"{directory}/api-metrics.txt")
hits, misses = cache["hits_total"], cache["misses_total"]
print(f"     cache: {hits / max(hits + misses, 1):.4f} of {hits + misses:,.0f} document reads were hits, "
      f"{cache['bytes'] / 2**20:,.0f} MiB held (warm-up included)")
print(f"   batches: {batch[0]:,.0f} requests/s of 100 identifiers = {batch[0] * 100:,.0f} profiles/s, "
      f"{batch[0] * 100 / api[0]:.1f} times single lookups' {api[0]:,.0f}/s; p50 {batch[1]:.2f} ms, p99 {batch[2]:.2f} ms, "
      f"non-2xx {batch[3]}")
print(f"  evidence: {evidence[0]:,.0f} signed packages/s ({evidence[0] / api[0]:.2f} of single lookups' rate); "
      f"p50 {evidence[1]:.2f} ms, p99 {evidence[2]:.2f} ms, non-2xx {evidence[3]}")
PY
