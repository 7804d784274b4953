#!/usr/bin/env bash
# The production path's speed on real engines: the projector from Apache
# Kafka (one KRaft broker) into Apache Cassandra (NODES nodes, replication
# factor min(NODES, 3), LOCAL_QUORUM), beside a bare rdkafka consumer
# draining the same topics in the same run; then rights-by-id lookups served
# from Cassandra with the query API's document cache and without it
# (`--document-cache-mib 0`: every lookup reads the node), beside the
# constant-body ceiling, in alternating rounds.
#
#   scripts/bench-cql.sh [NODES] [WORKS] [SECONDS] [CONNECTIONS]
#
# Defaults: 1 node, 50,000 works (about 260,000 events), 3 rounds of 20 s per
# server, 64 connections. The Cassandra nodes listen on 127.0.0.11 and the
# addresses after it, so a run's test node on 127.0.0.1 may keep running;
# each has a 4 GiB heap (CASSANDRA_HEAP_MB, see scripts/cassandra.sh).
# The engines, wrk, the service and the ceiling share the machine's cores.
# Nothing asserts on the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

nodes="${1:-1}"
works="${2:-50000}"
seconds="${3:-20}"
connections="${4:-64}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/cql-bench.XXXXXX")"
# shellcheck source=scripts/bench/helpers.sh
source scripts/bench/helpers.sh
stop_engines() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    scripts/kafka.sh stop "$work_directory/broker" >/dev/null 2>&1 || true
    scripts/cassandra.sh stop "$work_directory/cassandra" >/dev/null 2>&1 || true
    rm -rf "$work_directory"
}
trap stop_engines EXIT

cargo build --release --quiet -p projector -p query-api --bins --example bare_consumer --example constant_body_server
projector=target/release/projector
query_api=target/release/query-api
bare=target/release/examples/bare_consumer

echo "starting $nodes Cassandra node(s) and a Kafka broker" >&2
cassandra=$(CASSANDRA_HEAP_MB="${CASSANDRA_HEAP_MB:-4096}" scripts/cassandra.sh start "$work_directory/cassandra" "$nodes" 11)
bootstrap=$(scripts/kafka.sh start "$work_directory/broker")
store=(--store scylla --scylla-nodes "$cassandra" --scylla-keyspace bench
    --scylla-replication-factor "$((nodes < 3 ? nodes : 3))" --data-dir "$work_directory/data")

# shellcheck source=scripts/bench/kafka_stream.sh
source scripts/bench/kafka_stream.sh
produce_and_drain
echo "projecting from Kafka into Cassandra..." >&2
"$projector" run --source "kafka://$bootstrap" "${store[@]}" --admin-listen 127.0.0.1:0 \
    --dead-letter-topic dead-letters --writer-schema-dir "$work_directory/schemas" \
    --exit-when-caught-up >"$work_directory/summary.json" 2> >(sed 's/\x1b\[[0-9;]*m//g' >"$work_directory/projector.log")
wait_until_idle "$work_directory"/cassandra/node-*/pid

export BENCH_API_KEY BENCH_WORKS="$works"
BENCH_API_KEY=$("$query_api" keys "${store[@]}" issue --partner "Load benchmark" \
    --scopes rights:read --rate-limit 1000000000 2>/dev/null)
api_port=$(free_port) uncached_port=$(free_port)
RUST_LOG=warn "$query_api" serve "${store[@]}" --listen "127.0.0.1:$api_port" \
    --admin-listen "127.0.0.1:$(free_port)" --snapshot-interval-minutes 0 &
pids+=($!)
RUST_LOG=warn "$query_api" serve "${store[@]}" --listen "127.0.0.1:$uncached_port" \
    --admin-listen "127.0.0.1:$(free_port)" --snapshot-interval-minutes 0 --document-cache-mib 0 &
pids+=($!)
wait_for "http://127.0.0.1:$api_port/api/v1/public/v1/openapi.json"
wait_for "http://127.0.0.1:$uncached_port/api/v1/public/v1/openapi.json"
start_ceiling "$api_port" "$works"
warm "$api_port" "$uncached_port" "$ceiling_port"
for round in 1 2 3; do
    echo "round $round: query API over Cassandra cached and uncached, ceiling, ${seconds} s each ($connections connections)" >&2
    load "http://127.0.0.1:$api_port" "$work_directory/api-$round.txt"
    load "http://127.0.0.1:$uncached_port" "$work_directory/uncached-$round.txt"
    load "http://127.0.0.1:$ceiling_port" "$work_directory/ceiling-$round.txt"
done

python3 - "$work_directory" "$nodes" "$profile_bytes" <<'PY'
import json, re, sys
directory, nodes, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, "scripts/bench")
from wrk_rounds import median_round
bare = json.load(open(f"{directory}/bare.json"))
summary = json.loads(open(f"{directory}/summary.json").read().strip().splitlines()[-1])
seconds = float(re.search(r"seconds_from_first_event=([0-9.]+)", open(f"{directory}/projector.log").read()).group(1))
rate = summary["events"] / seconds
print(f"bare consumer drain: {bare['messages']} messages in {bare['seconds']:.2f} s = {bare['messagesPerSecond']:.0f} messages/s")
print(f"projector into Cassandra ({nodes} node(s)): {summary['events']} events in {seconds:.2f} s "
      f"(from the first event to the last commit) = {rate:.0f} events/s (applied {summary['applied']}, "
      f"parked {summary['parked']}, batches {summary['batches']}); ratio to the bare drain {rate / bare['messagesPerSecond']:.2f}")
api, uncached = median_round(directory, "api"), median_round(directory, "uncached")
ceiling = median_round(directory, "ceiling")
print(f"lookups, ceiling body {size} bytes; median round of each:")
for name, (rate, p50, p99, failed, requests) in (("cached", api), ("uncached", uncached), ("ceiling", ceiling)):
    print(f"{name:>15}: {rate:>10,.0f} requests/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   non-2xx {failed} of {requests}")
print(f"         ratios: cached {api[0] / ceiling[0]:.2f}, uncached {uncached[0] / ceiling[0]:.2f} (query API over Cassandra / ceiling)")
PY
