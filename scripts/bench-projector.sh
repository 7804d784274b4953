#!/usr/bin/env bash
# Projects about 1,000,000 generated events from files into a fresh SQLite
# store and prints events per second, peak memory and the bytes written to
# storage (from /usr/bin/time -v).
#
#   scripts/bench-projector.sh [WORKS] [BATCH_SIZE]
#
# 193,000 works generate just over 1,000,000 events. Wall-clock figures vary
# with the machine; nothing asserts on them.
set -euo pipefail
cd "$(dirname "$0")/.."

works="${1:-193000}"
batch_size="${2:-30000}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/projector-bench.XXXXXX")"
trap 'rm -rf "$work_directory"' EXIT

cargo build --release --quiet --bin projector
projector=target/release/projector

echo "generating $works works into $work_directory/events"
"$projector" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$work_directory/events" >"$work_directory/manifest.json"
events=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events'])" "$work_directory/manifest.json")
echo "generated $events events ($(du -sh "$work_directory/events" | cut -f1) of Avro files)"

# Flush the files just built and generated now, so that the kernel does not
# write them back during the timed run, on the same two cores (a run beside
# an earlier run's write-back was 10-15% slower).
sync
start=$(date +%s.%N)
/usr/bin/time -v "$projector" run --source "file://$work_directory/events" --data-dir "$work_directory/data" \
    --batch-size "$batch_size" --admin-listen 127.0.0.1:0 --exit-when-caught-up >"$work_directory/summary.json" 2>"$work_directory/time.txt"
end=$(date +%s.%N)

python3 - "$work_directory" "$start" "$end" <<'PY'
import json, re, sys
directory, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
summary = json.loads(open(f"{directory}/summary.json").read().strip().splitlines()[-1])
timing = open(f"{directory}/time.txt").read()
peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing).group(1))
written = int(re.search(r"File system outputs: (\d+)", timing).group(1)) * 512
seconds = end - start
print(f"events:           {summary['events']}")
print(f"applied:          {summary['applied']}  parked: {summary['parked']}  skipped: {summary['skippedAsDuplicates']}")
print(f"wall time:        {seconds:.1f} s (process start to exit, store open and migration included)")
print(f"throughput:       {summary['events'] / seconds:,.0f} events/s")
print(f"peak memory:      {peak_kib / 1024:.0f} MiB (maximum resident set size)")
print(f"written:          {written / 1e9:.1f} GB to storage (the write-ahead log and the pages copied from it)")
PY
du -sh "$work_directory/data" | awk '{print "store size:       " $1}'
