#!/usr/bin/env bash
# Instructions per rights-by-id lookup of one or two query API builds, under
# valgrind's callgrind, which counts instructions rather than time, so the
# figure is the same however busy the machine is. Each build serves the
# same generated store twice for the same time, idle and under wrk; the
# difference of the two totals over the requests served is the cost of a
# lookup (cache on, the default). Each run first answers 20 s of lookups
# that are not counted (callgrind's counters are zeroed after them), so the
# figure is a lookup's cost once the document cache holds the works, not
# the cold misses of a run's first seconds, whose share would depend on
# how fast the build is. The constant-body server of
# query-api/examples/ is measured the same way, answering a body as large as
# an average profile: the ceiling of a request on this stack, printed beside
# each build. With two builds it also lists the functions whose cost per
# lookup changed most (self cost, B minus A). DOCUMENT_CACHE_MIB sets the
# builds' `--document-cache-mib`: 0 measures the lookup that reads the store
# and decompresses the document on every request. The tree's projector
# writes the store both builds serve; PROJECTOR_A and PROJECTOR_B, when
# set, write a store for each build instead (a change of the stored format
# needs each build's own).
#
#   [DOCUMENT_CACHE_MIB=N] [PROJECTOR_A=P] [PROJECTOR_B=P] scripts/instructions-per-lookup.sh QUERY_API_A [QUERY_API_B] [WORKS=10000] [SECONDS=30]
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bench/two_builds.sh
source scripts/bench/two_builds.sh
callgrind_builds lookup-instructions "$@"
works="${3:-10000}"
seconds="${4:-30}"
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh

cargo build --release --quiet -p projector -p query-api --bins --example constant_body_server
projector=target/release/projector
ceiling=target/release/examples/constant_body_server
"$projector" generate --works "$works" --seed 7 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
export BENCH_WORKS="$works"
names=(A B)
writers=("$(realpath "${PROJECTOR_A:-$projector}")" "$(realpath "${PROJECTOR_B:-$projector}")")
stores=() keys=()
for index in "${!builds[@]}"; do
    if ((index > 0)) && [[ "${writers[$index]}" == "${writers[0]}" ]]; then
        stores+=("${stores[0]}") keys+=("${keys[0]}")
        continue
    fi
    stores+=("$work_directory/data-${names[$index]}")
    RUST_LOG=warn "${writers[$index]}" run --source "file://$work_directory/events" --data-dir "${stores[$index]}" \
        --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null
    keys+=("$("${builds[$index]}" keys --data-dir "${stores[$index]}" issue --partner "Instruction count" \
        --scopes rights:read --rate-limit 1000000000 2>/dev/null)")
done

# Runs the server command given after NAME, MODE and PORT (it listens on
# PORT) under callgrind for $seconds, idle or under load (MODE); the profile
# goes to $work_directory/NAME.MODE and wrk's report to $work_directory/NAME.wrk.
profile() {
    local name="$1" mode="$2" port="$3"
    shift 3
    RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$work_directory/$name.$mode" "$@" >/dev/null 2>&1 &
    local pid=$!
    pids+=("$pid")
    wait_for "http://127.0.0.1:$port/"
    wrk --threads 1 --connections 4 --duration 20s --script scripts/bench/rights-lookups.lua \
        "http://127.0.0.1:$port" >/dev/null
    callgrind_control --zero "$pid" >/dev/null 2>&1
    if [[ "$mode" == load ]]; then
        wrk --threads 1 --connections 4 --duration "${seconds}s" --script scripts/bench/rights-lookups.lua \
            "http://127.0.0.1:$port" >"$work_directory/$name.wrk"
    else
        sleep "$seconds"
    fi
    # SIGTERM: a program started in the background of a script ignores
    # SIGINT, and the ceiling installs no handler of its own; callgrind
    # writes its profile when the program ends either way.
    kill -TERM "$pid"
    wait "$pid" || true
}

# The ceiling's body is as large as an average profile the first build serves.
export BENCH_API_KEY="${keys[0]}"
port=$(free_port)
RUST_LOG=warn "${builds[0]}" serve --data-dir "${stores[0]}" --listen "127.0.0.1:$port" \
    --admin-listen "127.0.0.1:$(free_port)" --snapshot-interval-minutes 0 &
pids+=($!)
wait_for "http://127.0.0.1:$port/"
profile_bytes=$(python3 scripts/bench/average_profile_bytes.py "$port" "$works")
kill "${pids[-1]}"

for index in "${!builds[@]}"; do
    echo "${names[$index]}: ${builds[$index]} ${cache_flags[*]} (idle, then under load, ${seconds} s each)"
    export BENCH_API_KEY="${keys[$index]}"
    for mode in idle load; do
        port=$(free_port)
        profile "${names[$index]}" "$mode" "$port" "${builds[$index]}" serve --data-dir "${stores[$index]}" \
            --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$(free_port)" --snapshot-interval-minutes 0 \
            "${cache_flags[@]}"
    done
done
echo "ceiling: the constant-body server, $profile_bytes bytes (idle, then under load, ${seconds} s each)"
for mode in idle load; do
    port=$(free_port)
    profile ceiling "$mode" "$port" "$ceiling" "127.0.0.1:$port" "$profile_bytes"
done

python3 - "$work_directory" "${names[@]:0:${#builds[@]}}" <<'PY'
import re, sys
sys.path.insert(0, "scripts/bench")
from callgrind_costs import largest_changes, self_costs, total
directory, names = sys.argv[1], sys.argv[2:]

def requests(name):
    return int(re.search(r"(\d+) requests in", open(f"{directory}/{name}.wrk").read()).group(1))

def self_cost_per_request(name, served, per_lookup):
    # Frames that were running when the counters were zeroed (the threads'
    # entry points) are charged with everything beneath them, as if it were
    # their own cost: no function's own cost comes near half of a lookup, so
    # those are left out.
    costs = {function: cost / served for function, cost in self_costs(f"{directory}/{name}.load").items()}
    return {function: cost for function, cost in costs.items() if cost < per_lookup / 2}

def per_request(name):
    served = requests(name)
    return (total(f"{directory}/{name}.load") - total(f"{directory}/{name}.idle")) / served, served

ceiling, ceiling_served = per_request("ceiling")
print(f"ceiling: {ceiling:>9,.0f} instructions per request ({ceiling_served:,} requests of the constant body)")
costs, totals = {}, {}
for name in names:
    per_lookup, served = per_request(name)
    totals[name] = per_lookup
    print(f"{name}: {per_lookup:>9,.0f} instructions per lookup ({served:,} lookups), {per_lookup / ceiling:.2f} times the ceiling's")
    costs[name] = self_cost_per_request(name, served, per_lookup)
if len(names) == 2:
    print(f"B / A: {totals['B'] / totals['A']:.3f}; functions whose self cost per lookup changed most (B - A):")
    for change, function in largest_changes(costs["A"], costs["B"], 25):
        print(f"  {change:+8,.0f}  {function[:110]}")
PY
