#!/usr/bin/env bash
# How the service's costs grow with the registry: generates, projects and
# measures it at several sizes, and prints one table row per size.
#
#   scripts/bench-scale.sh [WORKS ...]        (default: 200000 1000000 3000000)
#
# At each size (deterministic registry, seed 42, from Avro files into SQLite):
# - the projector's events per second, CPU seconds (user and system) per
#   million events and peak memory (/usr/bin/time -v);
# - the store's bytes per work, in total and by table (SQLite's dbstat);
# - rights-by-id lookups of ids drawn uniformly from the whole registry,
#   with the document cache on and off, beside the constant-body axum
#   ceiling, in alternating rounds (the median round of three, 64
#   connections), the cached API's once it has answered for every work
#   (scripts/bench/every_work.py), so that its cache holds what it can;
#   and the API paced at about half the ceiling's rate, as an open loop
#   (query-api/examples/open_loop_load.rs: requests due on a fixed
#   schedule; one that waits for a busy connection counts its latency from
#   when it was due), with its document cache (the default) and
#   without, with the rate each reached, its p99 and its errors; and the
#   same open loop against the ceiling, whose p99 is what the machine, the
#   load and the framework alone give at that rate;
# - bulk page 1 against the last full bulk page, and a change-feed page from the
#   start against one from 1,000 changes before the newest (pages of 1,000,
#   sequential requests, medians of five alternating rounds of 30);
# - `projector rebuild` into model version 2 and its activation while the
#   API serves lookups: the rebuild's duration, and the API's rate, p99 and
#   failed requests meanwhile.
# It says how much disk it needs before it starts and removes each size's
# files before the next. wrk, the servers and the projector share the two
# cores; nothing asserts on the figures. Environment: SECONDS_PER_ROUND
# (default 15), CONNECTIONS (64), DOCUMENT_CACHE_MIB (the cached API's
# `--document-cache-mib`; the service's default when unset). Under the
# table it says how each size's cached API ended the lookups: the bytes its
# document cache held, whether as served or compressed as stored, and its
# hits and misses.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(200000 1000000 3000000)
seconds="${SECONDS_PER_ROUND:-15}"
connections="${CONNECTIONS:-64}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/scale-bench.XXXXXX")"
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh

# About 1,010 bytes of Avro files and 2,500 of store per work, the store
# twice during the rebuild, and a margin for SQLite's write-ahead log.
largest=0
for works in "${sizes[@]}"; do [ "$works" -gt "$largest" ] && largest="$works"; done
needed_bytes=$((largest * 7000))
available_bytes=$(df --output=avail -B1 "$work_directory" | tail -1)
echo "needs about $((needed_bytes / 1000000000 + 1)) GB of disk in $work_directory for $largest works; $((available_bytes / 1000000000)) GB available"
if [ "$available_bytes" -lt "$needed_bytes" ]; then
    echo "not enough disk" >&2
    exit 1
fi

cargo build --release --quiet -p projector -p query-api --bins --example constant_body_server --example open_loop_load
projector=target/release/projector
query_api=target/release/query-api
results="$work_directory/results.jsonl"

for works in "${sizes[@]}"; do
    size_directory="$work_directory/$works"
    mkdir -p "$size_directory"
    echo "== $works works: generating"
    "$projector" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$size_directory/events" \
        >"$size_directory/manifest.json"
    sync
    echo "== $works works: projecting"
    start=$(date +%s.%N)
    /usr/bin/time -v "$projector" run --source "file://$size_directory/events" --data-dir "$size_directory/data" \
        --admin-listen 127.0.0.1:0 --exit-when-caught-up >"$size_directory/summary.json" 2>"$size_directory/time.txt"
    end=$(date +%s.%N)

    export BENCH_API_KEY BENCH_WORKS="$works"
    BENCH_API_KEY=$("$query_api" keys --data-dir "$size_directory/data" issue --partner "Scale benchmark" \
        --scopes rights:read,bulk:read --rate-limit 1000000000 2>/dev/null)
    api_port=$(free_port)
    api_admin_port=$(free_port)
    uncached_port=$(free_port)
    RUST_LOG=warn "$query_api" serve --data-dir "$size_directory/data" --listen "127.0.0.1:$api_port" \
        --admin-listen "127.0.0.1:$api_admin_port" --snapshot-interval-minutes 0 "${cache_flags[@]}" &
    pids+=($!)
    RUST_LOG=warn "$query_api" serve --data-dir "$size_directory/data" --listen "127.0.0.1:$uncached_port" \
        --admin-listen 127.0.0.1:0 --snapshot-interval-minutes 0 --document-cache-mib 0 &
    pids+=($!)
    wait_for "http://127.0.0.1:$api_port/api/v1/public/v1/openapi.json"
    wait_for "http://127.0.0.1:$uncached_port/api/v1/public/v1/openapi.json"
    start_ceiling "$api_port" "$works"
    echo "== $works works: lookups"
    warm "$api_port" "$uncached_port" "$ceiling_port"
    # The cached API's rounds measure a cache that has seen every work, as
    # a service's has once it has run a while, not the cache filling.
    python3 scripts/bench/every_work.py "$api_port" "$works"
    for round in 1 2 3; do
        load "http://127.0.0.1:$api_port" "$size_directory/cached-$round.txt"
        load "http://127.0.0.1:$uncached_port" "$size_directory/uncached-$round.txt"
        load "http://127.0.0.1:$ceiling_port" "$size_directory/ceiling-$round.txt"
    done
    curl -s "http://127.0.0.1:$api_admin_port/metrics" >"$size_directory/cache-metrics.txt"
    # Open loop at half the ceiling's rate: requests sent on a fixed schedule,
    # a request that waits for a busy connection counted from when it was due.
    ceiling_rate=$(python3 -c "import sys; sys.path.insert(0, 'scripts/bench'); from wrk_rounds import median_round; print(int(median_round('$size_directory', 'ceiling')[0]))" | tail -1)
    for port_and_name in "$uncached_port open-loop" "$api_port open-loop-cached" "$ceiling_port open-loop-ceiling"; do
        read -r port name <<<"$port_and_name"
        target/release/examples/open_loop_load "127.0.0.1:$port" "$works" $((ceiling_rate / 2)) "$seconds" \
            "$connections" >"$size_directory/$name.json"
    done

    echo "== $works works: bulk and feed pages"
    python3 - "$size_directory" "$api_port" "$BENCH_API_KEY" >"$size_directory/pages.json" <<'PY'
import base64, http.client, json, sqlite3, sys, time
directory, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
connection = http.client.HTTPConnection("127.0.0.1", port)
def fetch(path):
    connection.request("GET", path, headers={"x-api-key": key})
    response = connection.getresponse()
    body = response.read()
    assert response.status == 200, (path, response.status, body[:200])
    return body
def get(path):
    return json.loads(fetch(path))
# A page is timed to its last byte; the client's decoding of its JSON
# (several milliseconds in Python for 1,000 items) is not the service's
# time, so each body is checked after its timing instead.
def timed(path, count=30):
    latencies = []
    for _ in range(count):
        began = time.perf_counter()
        body = fetch(path)
        latencies.append(time.perf_counter() - began)
        assert len(json.loads(body)["items"]) > 0, path
    return sorted(latencies)[len(latencies) // 2] * 1000
base = "/api/v1/public/v1"
first = get(f"{base}/bulk/works?page=1&limit=1000")
total = first["total"]
last_page = max(1, (total + 999) // 1000)
model = sqlite3.connect(f"file:{directory}/data/model-v1.sqlite?mode=ro", uri=True)
items = model.execute("SELECT count(*) FROM change_feed WHERE audience = 'production'").fetchone()[0]
sequence, lcc_id = model.execute(
    "SELECT sequence, lcc_id FROM change_feed WHERE audience = 'production' ORDER BY sequence LIMIT 1 OFFSET ?",
    (max(0, items - 1_001),),
).fetchone()
newest_cursor = "c1." + base64.urlsafe_b64encode(f"1.p.{sequence}.{lcc_id}".encode()).decode().rstrip("=")
pages = {
    "bulk_first": f"{base}/bulk/works?page=1&limit=1000",
    "bulk_last": f"{base}/bulk/works?page={last_page - 1 if last_page > 1 else 1}&limit=1000",
    "feed_first": f"{base}/bulk/changes?limit=1000",
    "feed_newest": f"{base}/bulk/changes?limit=1000&since={newest_cursor}",
}
for path in pages.values():
    timed(path, 5)
rounds = [{name: timed(path) for name, path in pages.items()} for _ in range(5)]
median = lambda name: sorted(r[name] for r in rounds)[len(rounds) // 2]
print(json.dumps({name: median(name) for name in pages} | {"bulk_total": total, "feed_items": items}))
PY

    echo "== $works works: rebuild under load"
    wrk --threads 2 --connections "$connections" --duration 3600s --latency \
        --script scripts/bench/rights-lookups.lua "http://127.0.0.1:$api_port" >"$size_directory/during-rebuild.txt" &
    wrk_pid=$!
    rebuild_start=$(date +%s.%N)
    "$projector" rebuild --into 2 --source "file://$size_directory/events" --data-dir "$size_directory/data" \
        --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null 2>"$size_directory/rebuild.txt"
    rebuild_end=$(date +%s.%N)
    "$projector" activate 2 --data-dir "$size_directory/data" >/dev/null
    sleep 3
    kill -INT "$wrk_pid"
    wait "$wrk_pid" || true

    python3 - "$size_directory" "$works" "$start" "$end" "$rebuild_start" "$rebuild_end" >>"$results" <<'PY'
import contextlib, json, re, sqlite3, sys
sys.path.insert(0, "scripts/bench")
from document_cache import document_cache
from wrk_rounds import described_failures, failures, median_round, read_round
directory, works = sys.argv[1], int(sys.argv[2])
start, end, rebuild_start, rebuild_end = map(float, sys.argv[3:7])
summary = json.loads(open(f"{directory}/summary.json").read().strip().splitlines()[-1])
time_report = open(f"{directory}/time.txt").read()
peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", time_report).group(1))
cpu_seconds = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", time_report).group(1)) for kind in ("User", "System"))
model = sqlite3.connect(f"file:{directory}/data/model-v1.sqlite?mode=ro", uri=True)
tables = dict(model.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
# median_round prints every round's rate: to the terminal, not into the results.
with contextlib.redirect_stdout(sys.stderr):
    cached, uncached, ceiling = (median_round(directory, name) for name in ("cached", "uncached", "ceiling"))
open_loop, open_loop_cached, open_loop_ceiling = (
    json.loads(open(f"{directory}/{name}.json").read()) for name in ("open-loop", "open-loop-cached", "open-loop-ceiling"))
during = read_round(f"{directory}/during-rebuild.txt")
print(json.dumps({
    "works": works,
    "events": summary["events"],
    "events_per_second": summary["events"] / (end - start),
    "peak_mib": peak_kib / 1024,
    "cpu_seconds_per_million_events": cpu_seconds / (summary["events"] / 1e6),
    "store_bytes_per_work": sum(tables.values()) / works,
    "tables_bytes_per_work": {name: size / works for name, size in sorted(tables.items(), key=lambda t: -t[1])},
    "cached": cached, "uncached": uncached, "ceiling": ceiling, "open_loop": open_loop,
    "open_loop_cached": open_loop_cached, "open_loop_ceiling": open_loop_ceiling,
    # The cached API's document cache once the lookup rounds were over.
    "document_cache": document_cache(f"{directory}/cache-metrics.txt"),
    "pages": json.loads(open(f"{directory}/pages.json").read()),
    "rebuild_seconds": rebuild_end - rebuild_start,
    "during_rebuild": during,
    "during_rebuild_failed": described_failures(failures(f"{directory}/during-rebuild.txt")),
}))
PY
    # Printed as it comes, so that a later size's failure keeps this one's figures.
    tail -1 "$results"
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    pids=()
    rm -rf "$size_directory"
done

python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print()
print("| works | events/s (CPU-s per million events, peak MiB) | bytes/work | lookups/s cached / uncached / ceiling (uncached ratio) | uncached p50/p99 ms | open loop at half the ceiling, uncached / cached: rate, p99 ms, errors | bulk page 1 / last ms | feed first / newest ms | rebuild s: rate during, p99 ms, failed |")
print("|---|---|---|---|---|---|---|---|---|")
for row in rows:
    cached, uncached, ceiling, pages, during = row["cached"], row["uncached"], row["ceiling"], row["pages"], row["during_rebuild"]
    open_loops = " / ".join(f"{loop['rateReached']:,.0f}/s, {loop['p99Ms']:.2f}, {loop['errors']}"
                            for loop in (row["open_loop"], row["open_loop_cached"]))
    print(f"| {row['works']:,} | {row['events_per_second']:,.0f} ({row['cpu_seconds_per_million_events']:.1f}, {row['peak_mib']:.0f}) | {row['store_bytes_per_work']:,.0f} "
          f"| {cached[0]:,.0f} / {uncached[0]:,.0f} / {ceiling[0]:,.0f} ({uncached[0] / ceiling[0]:.2f}) "
          f"| {uncached[1]:.2f} / {uncached[2]:.2f} | {open_loops} "
          f"| {pages['bulk_first']:.2f} / {pages['bulk_last']:.2f} | {pages['feed_first']:.2f} / {pages['feed_newest']:.2f} "
          f"| {row['rebuild_seconds']:.0f}: {during[0]:,.0f}/s, {during[2]:.2f}, {row['during_rebuild_failed']} |")
for row in rows:
    loop = row["open_loop_ceiling"]
    print(f"{row['works']:,} works, the open loop against the ceiling at the same rate: "
          f"{loop['rateReached']:,.0f}/s, p99 {loop['p99Ms']:.2f} ms, {loop['errors']} errors")
for row in rows:
    cache = row["document_cache"]
    held = "compressed as stored" if cache["holds_stored"] else "as served"
    print(f"{row['works']:,} works, the cached API's document cache after the lookups: "
          f"{cache['bytes'] / 1e6:,.0f} MB held {held}, {cache['hits_total']:,.0f} hits, {cache['misses_total']:,.0f} misses")
for row in rows:
    tables = ", ".join(f"{name} {size:,.0f}" for name, size in list(row["tables_bytes_per_work"].items())[:8])
    print(f"{row['works']:,} works, bytes per work by table: {tables}")
PY
