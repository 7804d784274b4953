#!/usr/bin/env bash
# Builds the Kafka-protocol broker of the Kafka end-to-end tests into ROOT:
# tansu 0.6.0 with its memory engine (feature dynostore) and its SQLite
# engine (feature libsql, for the broker-restart test), and with one patch to
# its group coordinator (tests/kafka/tansu-broker-0.6.0-group-rebalance.patch).
#
#   scripts/install-tansu.sh ROOT
#
# The patch: when a member misses its heartbeats, tansu 0.6.0 drops it but
# keeps the group formed, so the members that remain rejoin into the same
# generation and are handed their old assignments; the dead member's
# partitions are never consumed again. Patched, the group starts a new
# generation instead, the remaining members are told to rejoin, and the
# leader assigns every partition among them, as Apache Kafka does.
set -euo pipefail
root="${1:?usage: scripts/install-tansu.sh ROOT}"
repository="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/tansu-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The published source of tansu-broker 0.6.0, fetched through a throwaway package.
cargo new --quiet --vcs none --lib "$work/fetch"
printf 'tansu-broker = "=0.6.0"\n' >>"$work/fetch/Cargo.toml"
cargo fetch --quiet --manifest-path "$work/fetch/Cargo.toml"
source_directory=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -mindepth 2 -maxdepth 2 -type d -name tansu-broker-0.6.0 | head -1)
[ -n "$source_directory" ] || { echo "tansu-broker 0.6.0 was not fetched" >&2; exit 1; }
cp -r "$source_directory" "$work/tansu-broker"
(cd "$work/tansu-broker" && git apply -p1 "$repository/tests/kafka/tansu-broker-0.6.0-group-rebalance.patch")
cargo install tansu --version 0.6.0 --locked --features dynostore,libsql --root "$root" \
    --config "patch.crates-io.tansu-broker.path='$work/tansu-broker'"
