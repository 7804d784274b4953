#!/usr/bin/env bash
# The whole test suite, as written on a fresh machine: installs what the
# tests need and is missing (scripts/install-test-tools.sh), then checks
# formatting and lints and runs every test of every crate, including the
# end-to-end tests that start the real binaries and real engines.
#
# The store conformance suite runs on a CQL node this script starts once for
# the run (Apache Cassandra on 127.0.0.1:9042, scripts/cassandra.sh), or on
# the cluster SCYLLA_NODES names (`SCYLLA_NODES=10.0.0.5:9042 scripts/test.sh`
# runs it on one's own ScyllaDB). Its log is printed if a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install-test-tools.sh

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# End-to-end tests start the real binaries; build them first so the tests
# find them up to date (they also build on demand when run alone).
cargo build --workspace --bins --locked
engines="$(mktemp -d "${TMPDIR:-/tmp}/rights-engines.XXXXXX")"
stop_engines() {
    scripts/cassandra.sh stop "$engines/cassandra" >/dev/null 2>&1 || true
    rm -rf "$engines"
}
trap stop_engines EXIT
if [ -z "${SCYLLA_NODES:-}" ]; then
    SCYLLA_NODES=$(scripts/cassandra.sh start "$engines/cassandra")
    echo "the CQL conformance cases run on Apache Cassandra at $SCYLLA_NODES"
fi
export SCYLLA_NODES
if ! cargo nextest run --workspace --all-targets --locked --no-fail-fast; then
    if [ -f "$engines/cassandra/node-1/system.log" ]; then
        echo "the Cassandra node's warnings and errors:"
        grep -E '^(WARN|ERROR)' "$engines/cassandra/node-1/system.log" | tail -n 40 || true
    fi
    exit 1
fi
