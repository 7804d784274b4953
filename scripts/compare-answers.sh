#!/usr/bin/env bash
# Compares every answer of two builds of the service over the same events:
# the sandbox fixtures and a generated registry, each build projecting into
# a store of its own and serving it. A change to how the store keeps
# things must not change a byte of what a partner receives.
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

python3 - "${urls[0]}" "${keys[0]}" "${urls[1]}" "${keys[1]}" "$works" <<'PY'
import json, sys, urllib.error, urllib.request

old_url, old_key, new_url, new_key, works = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
servers = {"old": (old_url, old_key), "new": (new_url, new_key)}

def fetch(build, path, key=None, method="GET", body=None):
    url, default_key = servers[build]
    headers = {"x-api-key": key if key is not None else default_key}
    if body is not None:
        headers["content-type"] = "application/json"
    request = urllib.request.Request(url + path, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()

def without(body, *fields):
    document = json.loads(body)
    for field in fields:
        document.pop(field, None)
    return json.dumps(document, sort_keys=True).encode()

compared, differences = {}, []
def compare(kind, path, normalize=None, keys=(None, None)):
    old, new = fetch("old", path, keys[0]), fetch("new", path, keys[1])
    if normalize and old[0] == 200 and new[0] == 200:
        old, new = (old[0], normalize(old[1])), (new[0], normalize(new[1]))
    compared[kind] = compared.get(kind, 0) + 1
    if old != new:
        differences.append(f"{path}: {old[0]} {old[1][:200]!r}\n   against {new[0]} {new[1][:200]!r}")
    return new

iswcs, isrcs, licenses = set(), set(), set()
for index in range(works):
    lcc_id = f"LCC-{index:010d}"
    status, body = compare("rights profile", f"/rights/{lcc_id}")
    if status == 200:
        profile = json.loads(body)
        if profile.get("iswc"):
            iswcs.add(profile["iswc"])
        isrcs.update(profile.get("isrcs") or [])
    compare("verification", f"/rights/{lcc_id}/verify")
    compare("metadata", f"/rights/{lcc_id}/metadata")
    compare("provenance", f"/rights/{lcc_id}/provenance")
    compare("evidence", f"/rights/{lcc_id}/evidence", lambda body: without(body, "generatedAt", "signature"))
for iswc in sorted(iswcs):
    compare("profiles by ISWC", f"/rights?iswc={iswc}")
for isrc in sorted(isrcs):
    compare("profiles by ISRC", f"/rights?isrc={isrc}")
for index in range(works):
    compare("license status", f"/licenses/LIC-{index:08d}/status")

page = 1
while True:
    status, body = compare("bulk page", f"/bulk/works?page={page}&limit=100")
    if status != 200 or not json.loads(body).get("items"):
        break
    page += 1

def feed(build):
    items, since = [], ""
    while True:
        status, body = fetch(build, f"/bulk/changes?limit=100{since}")
        if status != 200:
            return status, items
        page = json.loads(body)
        for item in page["items"]:
            items.append({key: value for key, value in item.items() if key not in ("changedAt", "cursor", "version")})
        if page["caughtUp"] or not page["items"]:
            return status, items
        since = "&since=" + page["next"]
old_feed, new_feed = feed("old"), feed("new")
compared["change feed items"] = len(new_feed[1])
if old_feed != new_feed:
    differences.append(f"/bulk/changes: {len(old_feed[1])} items against {len(new_feed[1])}, or their contents")

compare("sandbox fixtures", "/sandbox/fixtures")
sandbox_keys = []
for build in ("old", "new"):
    status, body = fetch(build, "/sandbox/register", method="POST", body=b'{"email":"compare@example.org"}')
    sandbox_keys.append(json.loads(body)["apiKey"])
for fixture in json.loads(fetch("new", "/sandbox/fixtures")[1])["fixtures"]:
    if fixture["resource"] == "work":
        for suffix in ("", "/verify", "/metadata", "/provenance"):
            compare("sandbox record", f"/rights/{fixture['id']}{suffix}", keys=tuple(sandbox_keys))
    else:
        compare("sandbox record", f"/licenses/{fixture['id']}/status", keys=tuple(sandbox_keys))

for kind, count in compared.items():
    print(f"{kind:>20}: {count:,} answers")
for difference in differences[:20]:
    print("DIFFERENT", difference)
print(f"{len(differences)} differences")
sys.exit(1 if differences else 0)
PY
