#!/usr/bin/env bash
# Instructions per event of one or two projector builds, under valgrind's
# callgrind, which counts instructions rather than time: the figure is the
# same however busy the machine is, where the rates of
# scripts/compare-projectors.sh vary by up to a third between runs on these
# machines and hide a change of a few percent. Each build projects the same
# generated registry (seed 42) from files into a fresh store, as a first
# run does (the sorted catch-up, spilling runs of RUN_EVENTS events so that
# the merge from files is counted too), and the total of every thread's
# instructions is divided by the events taken in. With two builds it also
# lists the functions whose own instructions per event changed most (B
# minus A). Callgrind runs a program about 60 times slower: 20,000 works
# (about 104,000 events) take about three minutes a build. Time spent
# waiting for the disk or for another thread is not counted, so this
# complements the timed comparison rather than replacing it.
#
#   scripts/instructions-per-event.sh PROJECTOR_A [PROJECTOR_B] [WORKS=20000] [RUN_EVENTS=20000]
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bench/two_builds.sh
source scripts/bench/two_builds.sh
callgrind_builds event-instructions "$@"
works="${3:-20000}"
run_events="${4:-20000}"
trap 'rm -rf "$work_directory"' EXIT

"${builds[0]}" generate --works "$works" --seed 42 --events-per-segment 50000 --out "$work_directory/events" >/dev/null

names=(A B)
for index in "${!builds[@]}"; do
    name="${names[$index]}"
    echo "$name: ${builds[$index]}"
    RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$work_directory/$name.out" \
        "${builds[$index]}" run --source "file://$work_directory/events" --data-dir "$work_directory/$name.store" \
        --admin-listen 127.0.0.1:0 --exit-when-caught-up --catch-up-run-events "$run_events" \
        >"$work_directory/$name.summary" 2>"$work_directory/$name.valgrind" || {
        # The work directory goes with the script; what the run said must not.
        tail -n 20 "$work_directory/$name.valgrind" >&2
        exit 1
    }
done

python3 - "$work_directory" "${names[@]:0:${#builds[@]}}" <<'PY'
import json, sys
sys.path.insert(0, "scripts/bench")
from callgrind_costs import largest_changes, self_costs, total
directory, names = sys.argv[1], sys.argv[2:]

def events(name):
    # The run prints its summary as the last line of its output.
    return json.loads(open(f"{directory}/{name}.summary").read().strip().splitlines()[-1])["events"]

per_event, costs = {}, {}
for name in names:
    count, instructions = events(name), total(f"{directory}/{name}.out")
    per_event[name] = instructions / count
    print(f"{name}: {per_event[name]:>9,.0f} instructions per event ({count:,} events, {instructions:,} instructions)")
    if len(names) == 2:
        costs[name] = {function: cost / count for function, cost in self_costs(f"{directory}/{name}.out").items()}
if len(names) == 2:
    print(f"B / A: {per_event['B'] / per_event['A']:.3f}; functions whose own instructions per event changed most (B - A):")
    for change, function in largest_changes(costs["A"], costs["B"], 15):
        print(f"  {change:>+9,.0f}  {function[:150]}")
PY
