#!/usr/bin/env bash
# Kafka benchmark: events per second from an Apache Kafka broker (KRaft,
# scripts/kafka.sh) into the SQLite
# store, beside the rate at which a bare rdkafka consumer (doing nothing with
# the messages) drains the same topics in the same run.
#
#   scripts/bench-kafka.sh [WORKS]     (default 185000 works, about 1,000,000 events)
#
# PROJECTOR=path runs another projector build (copied out of target/) against
# the same kind of stream, to compare builds in alternating runs;
# BATCH_SIZE=N sets the projector's batch (default 30000, as the projector's).
#
# Needs Java 17 and Maven (the broker's jars, scripts/install-engines.sh) and
# the Python producer's packages (tests/python-requirements.txt). Prints both
# rates and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
works="${1:-185000}"
work_directory="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; scripts/kafka.sh stop "$work_directory/broker"; rm -rf "$work_directory"' EXIT

cargo build --release --quiet -p projector --bin projector --example bare_consumer
projector="${PROJECTOR:-target/release/projector}"
bare=target/release/examples/bare_consumer
bootstrap=$(scripts/kafka.sh start "$work_directory/broker")

# shellcheck source=scripts/bench/kafka_stream.sh
source scripts/bench/kafka_stream.sh
produce_and_drain
start=$(date +%s.%N)
"$projector" run --source "kafka://$bootstrap" --data-dir "$work_directory/data" --admin-listen 127.0.0.1:0 \
    --dead-letter-topic dead-letters --writer-schema-dir "$work_directory/schemas" --batch-size "${BATCH_SIZE:-30000}" \
    --exit-when-caught-up >"$work_directory/summary.json" 2> >(sed 's/\x1b\[[0-9;]*m//g' >"$work_directory/projector.log")
end=$(date +%s.%N)

sleep 0.5
python3 - "$work_directory" "$start" "$end" <<'PY'
import json, re, sys
directory, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
bare = json.load(open(f"{directory}/bare.json"))
summary = json.loads(open(f"{directory}/summary.json").read().strip().splitlines()[-1])
log = open(f"{directory}/projector.log").read()
seconds = float(re.search(r"seconds_from_first_event=([0-9.]+)", log).group(1))
rate = summary["events"] / seconds
print(f"bare consumer drain: {bare['messages']} messages in {bare['seconds']:.2f} s (from the first message) = {bare['messagesPerSecond']:.0f} messages/s")
print(f"projector into SQLite: {summary['events']} events in {seconds:.2f} s (from the first event to the last commit) = {rate:.0f} events/s"
      f" (applied {summary['applied']}, parked {summary['parked']}, batches {summary['batches']}; process start to exit {end - start:.2f} s)")
print(f"ratio projector / bare drain: {rate / bare['messagesPerSecond']:.2f} (target 0.5)")
PY
