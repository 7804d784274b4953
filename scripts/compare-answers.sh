#!/usr/bin/env bash
# Compares every answer of two builds of the service over the same events:
# the sandbox fixtures and a generated registry, each build projecting into
# a store of its own and serving it (tests/compare/answers.py compares). A
# change to how the store keeps things must not change a byte of what a
# partner receives.
#
#   scripts/compare-answers.sh OLD_BIN_DIR NEW_BIN_DIR [WORKS]
#
# Each BIN_DIR holds a `projector` and a `query-api` binary (copy a build out
# of target/release before building the other). Default 3,000 works (seed 5).
# Compared, status and body byte for byte: every work's profile,
# verification, metadata, provenance and evidence; the profiles found by
# each ISWC and ISRC; every license status; every bulk page; the change
# feed walked to its end; the sandbox fixtures, and the sandbox records
# through a sandbox key. Three parts of an answer differ between two
# projections by design and are left out: an evidence package's
# `generatedAt` and `signature` (each build signs with a key of its own, at
# its own moment), and the change feed's cursors, versions and times
# (commit times).
# Prints how many answers were compared and every difference; exits 1 on any.
set -euo pipefail
cd "$(dirname "$0")/.."

old_bin="$(realpath "$1")"
new_bin="$(realpath "$2")"
works="${3:-3000}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/compare-answers.XXXXXX")"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work_directory"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$new_bin/projector" generate --works "$works" --seed 5 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
urls=()
keys=()
for build in old new; do
    bin="$old_bin"
    [ "$build" = new ] && bin="$new_bin"
    data="$work_directory/$build"
    for events in "$work_directory/events" "$PWD/schemas/fixtures/sandbox"; do
        "$bin/projector" run --source "file://$events" --data-dir "$data" --admin-listen 127.0.0.1:0 \
            --exit-when-caught-up >/dev/null 2>&1
    done
    keys+=("$("$bin/query-api" keys --data-dir "$data" issue --partner "Answer comparison" \
        --scopes rights:read,rights:verify,licenses:read,metadata:read,bulk:read,evidence:read \
        --rate-limit 1000000000 2>/dev/null)")
    port=$(free_port)
    RUST_LOG=warn "$bin/query-api" serve --data-dir "$data" --listen "127.0.0.1:$port" \
        --admin-listen 127.0.0.1:0 >/dev/null 2>&1 &
    pids+=($!)
    urls+=("http://127.0.0.1:$port/api/v1/public/v1")
    for _ in $(seq 1 300); do curl -s -o /dev/null "${urls[-1]}/openapi.json" && break; sleep 0.1; done
done

python3 tests/compare/answers.py "${urls[0]}" "${keys[0]}" "${urls[1]}" "${keys[1]}" "$works"
