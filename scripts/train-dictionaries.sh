#!/usr/bin/env bash
# Trains the dictionaries the stores compress bodies with, as zstd frames
# or LZ4 blocks (`schemas/dictionaries/`, see read-model/src/stored_bodies.rs), from a
# generated registry of 20,000 works (seed 1, which no benchmark uses, so
# the benchmarks measure the dictionaries on data they were not trained on).
#
#   scripts/train-dictionaries.sh [REVISION]
#
# The files are replaced. A new REVISION gives every dictionary a new id;
# stores written with the old ones can then be read only by a program that
# still has those (read-model/src/stored_bodies.rs) or after a rebuild.
# Needs Python's `zstandard` and `lz4` (tests/python-requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

revision="${1:-1}"
work_directory="$(mktemp -d "${TMPDIR:-/tmp}/train-dictionaries.XXXXXX")"
trap 'rm -rf "$work_directory"' EXIT

cargo build --release --quiet --bin projector
projector=target/release/projector
"$projector" generate --works 20000 --seed 1 --events-per-segment 50000 --out "$work_directory/events" >/dev/null
"$projector" run --source "file://$work_directory/events" --data-dir "$work_directory/data" \
    --admin-listen 127.0.0.1:0 --exit-when-caught-up >/dev/null

python3 - "$work_directory/data/model-v1.sqlite" "$revision" <<'PY'
import random, sqlite3, sys
import zstandard

store, revision = sys.argv[1], int(sys.argv[2])
# The order of the families is their number in the dictionary id; keep it.
families = [
    ("rights_profile", "SELECT rights_profile FROM work_documents WHERE rights_profile IS NOT NULL"),
    ("verification", "SELECT verification FROM work_documents WHERE verification IS NOT NULL"),
    ("metadata", "SELECT metadata FROM work_documents WHERE metadata IS NOT NULL"),
    ("evidence", "SELECT evidence FROM work_documents WHERE evidence IS NOT NULL"),
    ("license_status", "SELECT body FROM license_statuses"),
    ("provenance", "SELECT body FROM provenance_entries"),
    ("bulk_row", "SELECT body FROM bulk_rows"),
    ("aggregate_state", "SELECT state FROM aggregates"),
]
# Bodies already stored compressed are read back with the dictionaries that
# wrote them, as the store's independent check reads them.
sys.path.insert(0, "tests/store")
from stored_bodies import plain

connection = sqlite3.connect(store)
for number, (family, query) in enumerate(families, start=1):
    samples = [plain(row[0]) for row in connection.execute(query)]
    random.Random(1).shuffle(samples)
    dict_id = 0x4C430000 + (revision << 8) + number
    dictionary = zstandard.train_dictionary(16 * 1024, samples[:20000], dict_id=dict_id, level=3)
    open(f"schemas/dictionaries/{family}.zdict", "wb").write(dictionary.as_bytes())
    print(f"{family}: {len(samples)} samples, dictionary {dict_id:#x}, {len(dictionary.as_bytes())} bytes")
PY
