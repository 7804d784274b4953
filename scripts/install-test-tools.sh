#!/usr/bin/env bash
# Installs what the test suite needs and is missing.
# Sourced by scripts/test.sh, so the suite runs as written on a fresh machine;
# on a machine that has everything it only checks, in a few seconds.
#
#   cargo-nextest   the test runner
#   rustfmt, clippy the formatting and lint checks
#   promtool        (Debian: prometheus) the /metrics exposition, ops/ rules
#   docker-compose  `config` checks docker-compose.yml (needs no engine)
#   chromium        renders /api/docs headless; the public record page's checks run in it
#   wrk             drives the load benchmark's smoke test
#   valgrind        memcheck runs the tests of lz4-blocks, the FFI crate
#   nginx           the shipped balancer configuration in front of two replicas
#   java, maven     (Debian: openjdk-17-jdk-headless, maven) run and fetch the engines
#   script          (Debian: bsdutils) a pseudo-terminal for the rebuild's progress line
#   node, npm       (Debian: nodejs, npm) the generated TypeScript client's check, whose
#                   packages tests/clients/typescript/package-lock.json pins, and
#                   playwright-core, which drives Chromium (tests/browser/package-lock.json)
#   engines         Apache Cassandra and Apache Kafka, fetched with Maven into a
#                   per-machine cache (scripts/install-engines.sh)
#   Python tools    tests/python-requirements.txt: the OpenAPI checkers, the
#                   independent Kafka producer, hadolint
#
# Debian packages need root (as on CI) or sudo.
set -euo pipefail

command -v cargo >/dev/null || { echo "cargo is required" >&2; exit 1; }
rustup component add rustfmt clippy >/dev/null 2>&1 || true
command -v cargo-nextest >/dev/null || cargo install cargo-nextest --locked

missing_packages=()
command -v promtool >/dev/null || missing_packages+=(prometheus)
command -v docker-compose >/dev/null || missing_packages+=(docker-compose)
command -v chromium >/dev/null || missing_packages+=(chromium)
command -v wrk >/dev/null || missing_packages+=(wrk)
command -v valgrind >/dev/null || missing_packages+=(valgrind)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || missing_packages+=(nginx)
command -v java >/dev/null || missing_packages+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing_packages+=(maven)
command -v script >/dev/null || missing_packages+=(bsdutils)
command -v node >/dev/null || missing_packages+=(nodejs)
command -v npm >/dev/null || missing_packages+=(npm)
if ((${#missing_packages[@]})); then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null
fi

scripts/install-engines.sh >/dev/null

# Each lock file's packages, installed again only when the lock changed.
for node_project in tests/clients/typescript tests/browser; do
    if ! cmp -s "$node_project/package-lock.json" "$node_project/node_modules/.package-lock.json.installed"; then
        npm ci --prefix "$node_project" --no-audit --no-fund --loglevel=error >/dev/null
        cp "$node_project/package-lock.json" "$node_project/node_modules/.package-lock.json.installed"
    fi
done

python3 -m pip install --quiet --disable-pip-version-check -r tests/python-requirements.txt
