# Shared by the Kafka benchmarks (sourced, not run): the generated stream on
# the broker, and the bare consumer's drain of it, the ceiling beside which
# the projector is measured. The sourcing script sets `projector`, `bare`,
# `works`, `work_directory` and `bootstrap`.

# produce_and_drain: generates WORKS works (seed 7), produces them to the six
# topics with the independent producer (writer schemas in
# $work_directory/schemas), and drains them once with the bare consumer
# ($work_directory/bare.json).
produce_and_drain() {
    "$projector" generate --works "$works" --seed 7 --out "$work_directory/events" >"$work_directory/manifest.json"
    python3 tests/kafka/produce.py topics --bootstrap "$bootstrap" --partitions 6 --extra-topic dead-letters >/dev/null
    echo "producing $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events'])" "$work_directory/manifest.json") events..." >&2
    python3 tests/kafka/produce.py produce --bootstrap "$bootstrap" --events "$work_directory/events" \
        --format single-object --schemas "$work_directory/schemas" >"$work_directory/produced.json"
    "$bare" "$bootstrap" >"$work_directory/bare.json"
}
