#!/usr/bin/env bash
# The catalogue copy at scale: generates and projects WORKS works (1,250,000
# by default, of which about 1,030,000 are published), then measures
#   - a production snapshot: rows per second and peak memory (from
#     /usr/bin/time -v), which must not grow with the catalogue;
#   - change-feed pages of 1,000 items, from the start of the feed and from
#     a cursor 1,000,000 changes deep (or as deep as the feed goes), as
#     p50/p99 of sequential requests against `query-api serve`.
#
#   scripts/bench-catalogue.sh [WORKS]
#
# About 12 GB of disk for 1,250,000 works; it cleans up after itself.
# Wall-clock figures vary with the machine; nothing asserts on them.
set -euo pipefail
cd "$(dirname "$0")/.."

works="${1:-1250000}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/catalogue-bench.XXXXXX")"
query_api=target/release/query-api
# shellcheck source=scripts/bench/served_store.sh
source scripts/bench/served_store.sh

cargo build --release --quiet --bin projector --bin query-api
projector=target/release/projector

echo "generating and projecting $works works in $work_directory"
"$projector" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
RUST_LOG=warn "$projector" run --source "file://$work_directory/events" --data-dir "$work_directory/data" \
    --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null
sync

start=$(date +%s.%N)
/usr/bin/time -v "$query_api" snapshot --data-dir "$work_directory/data" --audience production \
    >"$work_directory/snapshot.txt" 2>"$work_directory/snapshot-time.txt"
end=$(date +%s.%N)

serve_store "$work_directory/data"

python3 - "$work_directory" "$start" "$end" "$address" "$key" <<'PY'
import base64, http.client, json, re, sqlite3, sys, time
directory, start, end, address, key = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
timing = open(f"{directory}/snapshot-time.txt").read()
peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing).group(1))
rows = int(open(f"{directory}/snapshot.txt").read().split()[2])
seconds = end - start
print(f"snapshot rows:       {rows:,}")
print(f"snapshot time:       {seconds:.1f} s ({rows / seconds:,.0f} rows/s, process start to exit)")
print(f"snapshot peak:       {peak_kib / 1024:.0f} MiB (maximum resident set size)")

model = sqlite3.connect(f"file:{directory}/data/model-v1.sqlite?mode=ro", uri=True)
items = model.execute("SELECT count(*) FROM change_feed WHERE audience = 'production'").fetchone()[0]
depth = min(1_000_000, items - 1_000)
sequence, lcc_id = model.execute(
    "SELECT sequence, lcc_id FROM change_feed WHERE audience = 'production' ORDER BY sequence LIMIT 1 OFFSET ?",
    (depth - 1,),
).fetchone()
inner = f"1.p.{sequence}.{lcc_id}".encode()
deep_cursor = "c1." + base64.urlsafe_b64encode(inner).decode().rstrip("=")

host, port = address.rsplit(":", 1)
connection = http.client.HTTPConnection(host, int(port))
def timed(path, count=100):
    latencies, size = [], 0
    for _ in range(count):
        began = time.perf_counter()
        connection.request("GET", path, headers={"x-api-key": key})
        response = connection.getresponse()
        body = response.read()
        latencies.append(time.perf_counter() - began)
        assert response.status == 200, (response.status, body[:200])
        assert len(json.loads(body)["items"]) == 1000
        size = len(body)
    latencies.sort()
    return latencies[len(latencies) // 2] * 1000, latencies[int(len(latencies) * 0.99)] * 1000, size
base = "/api/v1/public/v1/bulk/changes?limit=1000"
deep = f"{base}&since={deep_cursor}"
timed(base, 20)
timed(deep, 20)
# Alternating rounds, so that both kinds of page see the same machine.
rounds = [(timed(base), timed(deep)) for _ in range(5)]
median = lambda values: sorted(values)[len(values) // 2]
start_p50, deep_p50 = median([r[0][0] for r in rounds]), median([r[1][0] for r in rounds])
start_p99, deep_p99 = median([r[0][1] for r in rounds]), median([r[1][1] for r in rounds])
print(f"feed items:          {items:,} (production)")
print(f"feed page of 1,000 from the start:        p50 {start_p50:.2f} ms, p99 {start_p99:.2f} ms, {rounds[0][0][2]:,} bytes")
print(f"feed page of 1,000 from {depth:,} deep:  p50 {deep_p50:.2f} ms, p99 {deep_p99:.2f} ms, {rounds[0][1][2]:,} bytes "
      f"({deep_p50 / start_p50:.2f} of the first; medians of 5 alternating rounds of 100)")

manifest = json.load(open(next(__import__("glob").iglob(f"{directory}/data/snapshots/production/*/manifest.json"))))
for format in ("ndjson.gz", "parquet"):
    size = sum(file["bytes"] for file in manifest["files"] if file["format"] == format)
    print(f"snapshot {format:10s} {size / 2**20:,.0f} MiB ({size / manifest['rowCount']:.0f} bytes per work)")
PY
du -sh "$work_directory/data" | awk '{print "store size:          " $1}'
