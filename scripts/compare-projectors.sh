#!/usr/bin/env bash
# Compares two projector builds on the same generated events, in alternating
# runs, and prints each run and the means: events per second, CPU seconds
# (user and system, from /usr/bin/time -v), peak memory, and the bytes the
# run had written to storage (its file system outputs: the write-ahead log
# and the pages copied from it into the database, each time they are
# written, so this shows the write amplification of a change).
#
#   scripts/compare-projectors.sh BINARY_A BINARY_B [PAIRS=3] [WORKS=193000] [BATCH_SIZE=30000]
#
# Runs of one build vary by up to a fifth on these machines, and the
# variation drifts within a session, so a single run of each build says
# little: the pairs alternate which build goes first, and a comparison
# quotes every pair. Copy a build out of target/ before building
# the other one. Nothing asserts on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bench/two_builds.sh
source scripts/bench/two_builds.sh
two_builds projector-compare "$@"
pairs="${3:-3}" works="${4:-193000}" batch_size="${5:-30000}"
trap 'rm -rf "$work_directory"' EXIT

echo "generating $works works with $build_a"
"$build_a" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$work_directory/events" >"$work_directory/manifest.json"

# One run into a fresh store; appends "label events seconds cpu_seconds peak_kib written_bytes" to the results.
run() {
    local label="$1" binary="$2" store="$work_directory/store"
    rm -rf "$store"
    # As in bench-projector.sh: pending writes are flushed before, not during, the timed run.
    sync
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -v "$binary" run --source "file://$work_directory/events" --data-dir "$store" \
        --batch-size "$batch_size" --admin-listen 127.0.0.1:0 --exit-when-caught-up \
        >"$work_directory/summary.json" 2>"$work_directory/time.txt"
    end=$(date +%s.%N)
    python3 - "$work_directory" "$label" "$start" "$end" >>"$work_directory/results" <<'PY'
import json, re, sys
directory, label, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
summary = json.loads(open(f"{directory}/summary.json").read().strip().splitlines()[-1])
timing = open(f"{directory}/time.txt").read()
field = lambda name: re.search(rf"{name}: ([\d.]+)", timing).group(1)
cpu = float(field(r"User time \(seconds\)")) + float(field(r"System time \(seconds\)"))
written = int(field(r"File system outputs")) * 512
print(label, summary["events"], end - start, cpu, field(r"Maximum resident set size \(kbytes\)"), written)
PY
    tail -n 1 "$work_directory/results" |
        awk '{printf "%s  %8.0f events/s  %6.1f s  cpu %6.1f s  peak %4.0f MiB  written %5.1f GB\n", $1, $2 / $3, $3, $4, $5 / 1024, $6 / 1e9}'
}

alternate_pairs "$pairs"

python3 - "$work_directory/results" <<'PY'
import sys
runs = {}
for line in open(sys.argv[1]):
    label, events, seconds, cpu, peak_kib, written = line.split()
    runs.setdefault(label, []).append(
        (int(events) / float(seconds), float(cpu), int(peak_kib) / 1024, int(written) / 1e9)
    )
for label in ("A", "B"):
    rates, cpus, peaks, writes = zip(*runs[label])
    print(f"mean {label}: {sum(rates) / len(rates):8.0f} events/s  cpu {sum(cpus) / len(cpus):6.1f} s  "
          f"peak {min(peaks):.0f}-{max(peaks):.0f} MiB  written {sum(writes) / len(writes):5.1f} GB  ({len(rates)} runs)")
b_faster = sum(b[0] > a[0] for a, b in zip(runs["A"], runs["B"]))
print(f"B faster than A in {b_faster} of {len(runs['A'])} pairs")
PY
