#!/usr/bin/env bash
# rights-sync at scale: generates WORKS works (1,000,000 by default), projects
# all but the last fifth of the stream, cuts a production snapshot and serves
# it, then measures
#   - the first sync (download, verify, load a SQLite copy): rows per second
#     and peak memory (/usr/bin/time -v), process start to exit;
#   - after the projector applies the rest of the stream, the next run,
#     which follows the change feed: feed items per second.
#
#   scripts/bench-sync.sh [WORKS]
#
# About 10 GB of disk for 1,000,000 works; it cleans up after itself. The
# server, the projector and rights-sync share the two cores; nothing asserts
# on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

works="${1:-1000000}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/sync-bench.XXXXXX")"
query_api=target/release/query-api
# shellcheck source=scripts/bench/served_store.sh
source scripts/bench/served_store.sh

cargo build --release --quiet --bin projector --bin query-api --bin rights-sync
projector=target/release/projector
rights_sync=target/release/rights-sync

echo "generating $works works in $work_directory"
"$projector" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$work_directory/generated" >/dev/null
mkdir -p "$work_directory/events"
mapfile -t files < <(find "$work_directory/generated" -name '*.avro' | sort)
first_part=$((${#files[@]} * 4 / 5))
cp "${files[@]:0:$first_part}" "$work_directory/events/"
project() {
    RUST_LOG=warn "$projector" run --source "file://$work_directory/events" --data-dir "$work_directory/data" \
        --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null
}
echo "projecting $first_part of ${#files[@]} files and cutting a snapshot"
project
"$query_api" snapshot --data-dir "$work_directory/data" --audience production >/dev/null 2>&1

serve_store "$work_directory/data"
base_url="http://$address/api/v1/public/v1"

# One run into the copy; writes its summary and timing as "NAME.json" and "NAME-time.txt".
timed_sync() {
    local name="$1" start end
    sync
    start=$(date +%s.%N)
    RUST_LOG=warn /usr/bin/time -v "$rights_sync" --from "$base_url" --key "$key" --into "$work_directory/copy.sqlite" \
        >"$work_directory/$name.json" 2>"$work_directory/$name-time.txt"
    end=$(date +%s.%N)
    echo "$start $end" >"$work_directory/$name-span.txt"
}
echo "first sync"
timed_sync first
echo "projecting the remaining $((${#files[@]} - first_part)) files"
cp "${files[@]:$first_part}" "$work_directory/events/"
project
echo "following the feed"
timed_sync follow

python3 - "$work_directory" <<'PY'
import json, re, sys
directory = sys.argv[1]
def run(name):
    summary = json.loads(open(f"{directory}/{name}.json").read().strip().splitlines()[-1])
    start, end = map(float, open(f"{directory}/{name}-span.txt").read().split())
    timing = open(f"{directory}/{name}-time.txt").read()
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing).group(1))
    return summary, end - start, peak / 1024
first, seconds, peak = run("first")
assert first["outcome"] == "caught_up", first
print(f"first sync:  {first['snapshotRows']:,} snapshot rows and {first['feedItems']:,} feed items in {seconds:.1f} s "
      f"({first['snapshotRows'] / seconds:,.0f} rows/s), peak {peak:.0f} MiB")
follow, seconds, peak = run("follow")
assert follow["outcome"] == "caught_up", follow
print(f"follow:      {follow['feedItems']:,} feed items in {seconds:.1f} s ({follow['feedItems'] / seconds:,.0f} items/s), "
      f"peak {peak:.0f} MiB")
PY
du -sh "$work_directory/copy.sqlite" | awk '{print "copy size:   " $1}'
