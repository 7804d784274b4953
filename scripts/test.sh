#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test of every crate,
# including the end-to-end tests that start the real binaries.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# End-to-end tests start the real binaries; build them first so the tests
# find them up to date (they also build on demand when run alone).
cargo build --workspace --bins --locked
cargo nextest run --workspace --all-targets --locked --no-fail-fast
if [ -z "${SCYLLA_NODES:-}" ]; then
    echo "NOTE: SCYLLA_NODES is not set, so the ScyllaDB conformance suite was SKIPPED (its cases passed without running)."
fi
