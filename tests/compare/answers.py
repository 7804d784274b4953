"""Compares every answer of two running services over the same events, byte
for byte: each work's profile, verification, metadata, provenance and
evidence; the profiles found by each ISWC and ISRC; every license status;
every bulk page; the change feed; the sandbox fixtures, and the sandbox
records through a sandbox key of each service.

    answers.py URL_A KEY_A URL_B KEY_B WORKS [--feed in-order|newest-per-work]

Parts that differ between two projections by design are left out: an
evidence package's `generatedAt` and `signature` (each service signs with
a key of its own, at its own moment), and the change feed's cursors,
versions and times. The feed is compared item by item in order (two builds
of one backend, one commit order), or, across backends and sources whose
commit orders differ, as the copy a client that applies every item ends
with (each work's newest row; a work whose newest item is a withdrawal is
absent, as if never fed: in another commit order it may never have been
published in passing). Prints how many answers were compared and every
difference; exits 1 on any. Used by scripts/compare-answers.sh and by the
production-shape end-to-end test.
"""
import json, sys, time, urllib.error, urllib.request

old_url, old_key, new_url, new_key, works = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
feed_mode = sys.argv[7] if len(sys.argv) > 7 and sys.argv[6] == "--feed" else "in-order"
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
def newest_per_work(fed):
    status, items = fed
    copy = {}
    for item in items:
        if item["kind"] == "withdrawn":
            copy.pop(item["lccId"], None)
        else:
            copy[item["lccId"]] = item
    return status, copy

old_feed, new_feed = feed("old"), feed("new")
if feed_mode == "newest-per-work":
    # A CQL feed serves a change only once it has settled (10 s after it
    # landed), so the newest items are awaited, for 30 s at the most.
    deadline = time.monotonic() + 30
    old_feed, new_feed = newest_per_work(old_feed), newest_per_work(new_feed)
    while old_feed != new_feed and time.monotonic() < deadline:
        time.sleep(1)
        old_feed, new_feed = newest_per_work(feed("old")), newest_per_work(feed("new"))
compared["change feed items"] = len(new_feed[1])
if old_feed != new_feed:
    differences.append(f"/bulk/changes: {len(old_feed[1])} items against {len(new_feed[1])}, or their contents")
    if feed_mode == "newest-per-work":
        old_copy, new_copy = old_feed[1], new_feed[1]
        differing = sorted(lcc_id for lcc_id in old_copy.keys() | new_copy.keys() if old_copy.get(lcc_id) != new_copy.get(lcc_id))
        for lcc_id in differing[:5]:
            differences.append(f"/bulk/changes {lcc_id}: {old_copy.get(lcc_id)} against {new_copy.get(lcc_id)}")

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