#!/usr/bin/env bash
# The whole test suite, as written on a fresh machine: installs what the
# tests need and is missing (scripts/install-test-tools.sh), then checks
# formatting and lints and runs every test of every crate, including the
# end-to-end tests that start the real binaries and real engines.
#
# The store conformance suite runs on a CQL node this script starts once for
# the run (Apache Cassandra on 127.0.0.1:9042, scripts/cassandra.sh), or on
# the cluster SCYLLA_NODES names (`SCYLLA_NODES=10.0.0.5:9042 scripts/test.sh`
# runs it on one's own ScyllaDB). Its log is printed if a test fails. The
# node audits every statement it executes, and the run ends by checking
# that each statement the CQL backend can send was executed by some test.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install-test-tools.sh

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The FFI crate's tests under valgrind's memcheck too: its unsafe calls into
# liblz4 must not touch memory they do not own, nor leak what they allocate.
host_runner="CARGO_TARGET_$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')_RUNNER"
env "$host_runner=valgrind --quiet --error-exitcode=1 --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite" \
    cargo test -p lz4-blocks --lib --locked --quiet
# End-to-end tests start the real binaries; build them first so the tests
# find them up to date (they also build on demand when run alone).
cargo build --workspace --bins --locked
engines="$(mktemp -d "${TMPDIR:-/tmp}/rights-engines.XXXXXX")"
stop_engines() {
    scripts/cassandra.sh stop "$engines/cassandra" >/dev/null 2>&1 || true
    rm -rf "$engines"
}
trap stop_engines EXIT
audit_log=""
if [ -z "${SCYLLA_NODES:-}" ]; then
    SCYLLA_NODES=$(CASSANDRA_AUDIT=yes scripts/cassandra.sh start "$engines/cassandra")
    audit_log="$engines/cassandra/node-1/audit.log"
    echo "the CQL conformance cases run on Apache Cassandra at $SCYLLA_NODES"
fi
export SCYLLA_NODES
cassandra_warnings() {
    if [ -f "$engines/cassandra/node-1/system.log" ]; then
        echo "the Cassandra node's warnings and errors:"
        grep -E '^(WARN|ERROR)' "$engines/cassandra/node-1/system.log" | tail -n 40 || true
    fi
}
# Two tests run apart from the rest: the cluster faults start three more
# Cassandra nodes and must not share two cores with other tests, and the
# statement coverage reads the audit log of everything the run executed.
cluster_faults='test(a_three_node_cassandra_cluster_losing_one_then_two_nodes)'
coverage='test(every_statement_the_cql_backend_can_send_was_executed_by_the_run)'
echo "the two tests nextest reports as skipped in this step run next, each alone"
if ! cargo nextest run --workspace --all-targets --locked --no-fail-fast -E "not ($cluster_faults | $coverage)"; then
    cassandra_warnings
    exit 1
fi
cargo nextest run -p end-to-end-tests --locked -E "$cluster_faults"
if [ -n "$audit_log" ]; then
    CQL_AUDIT_LOG="$audit_log" cargo nextest run -p end-to-end-tests --locked -E "$coverage"
else
    echo "statement coverage is checked on the Cassandra node this script starts, not on SCYLLA_NODES=$SCYLLA_NODES"
fi
