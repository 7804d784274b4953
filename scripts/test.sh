#!/usr/bin/env bash
# The whole test suite, as written on a fresh machine: installs what the
# tests need and is missing (scripts/install-test-tools.sh), then checks
# formatting and lints and runs every test of every crate, including the
# end-to-end tests that start the real binaries and a real broker.
#
# The ScyllaDB conformance cases run when SCYLLA_NODES names a cluster
# (`SCYLLA_NODES=127.0.0.1:9042 scripts/test.sh`); otherwise the test runner
# reports them as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install-test-tools.sh

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# End-to-end tests start the real binaries; build them first so the tests
# find them up to date (they also build on demand when run alone).
cargo build --workspace --bins --locked
run_ignored=default
[ -n "${SCYLLA_NODES:-}" ] && run_ignored=all
cargo nextest run --workspace --all-targets --locked --no-fail-fast --run-ignored "$run_ignored"
