#!/usr/bin/env bash
# Runs every coverage-guided fuzz target (fuzz/, cargo-fuzz with libFuzzer)
# for a fixed time each and prints, per target, the executions, the edges
# and features covered, the corpus it grew and the crashes it found.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    default: 600 s, every target
#
# Needs the nightly toolchain (`rustup toolchain list`); installs cargo-fuzz
# from crates.io when it is missing. Targets run two at a time (FUZZ_JOBS).
# Each starts from the seeds `write-fuzz-seeds` makes from the fixtures and
# from the corpus earlier runs grew (fuzz/corpus/, kept between runs). A
# crash leaves its input in fuzz/artifacts/TARGET/; replay it with
# `cargo +nightly fuzz run TARGET FILE`, and make it a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
shift || true
rustup toolchain list | grep -q '^nightly' || { echo "the nightly toolchain is required" >&2; exit 1; }
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

cd fuzz
targets=("$@")
((${#targets[@]})) || mapfile -t targets < <(cargo +nightly fuzz list)
mkdir -p logs
rm -rf seeds
cargo run --quiet --manifest-path ../Cargo.toml -p untrusted-input --bin write-fuzz-seeds -- seeds "${targets[@]}"
cargo +nightly fuzz build -O

run_target() {
    local target=$1
    rm -rf "artifacts/$target"
    mkdir -p "corpus/$target" "artifacts/$target"
    cargo +nightly fuzz run -O "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        >"logs/$target.log" 2>&1 || true
}

jobs=${FUZZ_JOBS:-2}
for target in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
    echo "fuzzing $target for $seconds s" >&2
    run_target "$target" &
done
wait

# One row per target from libFuzzer's final statistics and its last status
# line; the exit status says whether any target crashed, ran out of memory
# or timed out.
python3 - "$seconds" "${targets[@]}" <<'REPORT'
import os, re, sys
seconds, targets = sys.argv[1], sys.argv[2:]
print(f"| target | seconds | executions | executions/s | edges | features | corpus | peak RSS MiB | crashes |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
failed = False
for target in targets:
    log = open(f"logs/{target}.log", errors="replace").read()
    stat = lambda name: (re.findall(rf"stat::{name}:\s+(\d+)", log) or ["?"])[-1]
    status = re.findall(r"^#\d+\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)", log, re.M)
    edges, features, corpus = status[-1] if status else ("?", "?", "?")
    crashes = [name for name in os.listdir(f"artifacts/{target}") if name.split("-")[0] in ("crash", "oom", "timeout", "leak")]
    failed |= bool(crashes) or stat("number_of_executed_units") == "?"
    print(f"| {target} | {seconds} | {stat('number_of_executed_units')} | {stat('average_exec_per_sec')} | {edges} | {features} | {corpus} | {stat('peak_rss_mb')} | {len(crashes)} |")
    for name in crashes:
        print(f"  {target}: fuzz/artifacts/{target}/{name}")
sys.exit(1 if failed else 0)
REPORT
