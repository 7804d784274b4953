#!/usr/bin/env bash
# Webhook delivery figures (query-api/examples/webhook_delivery.rs): the real
# deliverer over a real SQLite store, posting signed messages over loopback
# HTTP to a receiver in the same process.
#   - throughput: one subscription catching up with the whole notification
#     feed of a generated registry of WORKS works (200,000 by default), in
#     messages of up to 100 notifications;
#   - fan-out: SUBSCRIPTIONS subscriptions (1,000 by default) and one
#     projector batch (one generated segment of 100 events): the time from
#     its commit until every subscription has acknowledged its notifications,
#     with the replica looking at the feed once a second (the default).
#
#   scripts/bench-webhooks.sh [WORKS] [SUBSCRIPTIONS]
#
# Prints one JSON line. Wall-clock figures vary with the machine; nothing
# asserts on them.
set -euo pipefail
cd "$(dirname "$0")/.."

works="${1:-200000}"
subscriptions="${2:-1000}"
cargo build --release --quiet -p query-api --example webhook_delivery
RUST_LOG=warn target/release/examples/webhook_delivery "$works" "$subscriptions"
