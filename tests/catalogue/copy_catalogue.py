"""A partner keeping a copy of the catalogue, as the README shows it, with
independent tools only: the standard library for HTTP, gzip and NDJSON, and
pyarrow for the Parquet files.

1. Download the newest snapshot: every file checked against the manifest
   (bytes, rows, SHA-256); the first file's download is cut off halfway and
   resumed with Range and If-Range.
2. Load the NDJSON rows (each line kept as its exact bytes) and the Parquet
   rows, and check they hold the same works with the same values.
3. Follow /bulk/changes from the manifest's cursor, applying each item
   (upsert: keep the row; withdrawn: drop it), keeping per work the item
   with the highest version, until the stop file exists and the feed is
   caught up.
4. Compare the copy with /bulk/works, row for row and byte for byte.

Prints a JSON report on its last line; exits non-zero on any mismatch.
"""

import argparse
import datetime
import gzip
import hashlib
import http.client
import json
import os
import sys
import time
import urllib.parse

import pyarrow.parquet as parquet


def canonical(row):
    """The compact JSON the service writes, keys in their order."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode()


class Api:
    def __init__(self, base_url, key):
        parsed = urllib.parse.urlsplit(base_url)
        self.host, self.port, self.base = parsed.hostname, parsed.port, parsed.path
        self.key = key

    def request(self, path, headers=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        url = path if path.startswith(self.base) else self.base + path
        connection.request("GET", url, headers={"x-api-key": self.key, **(headers or {})})
        return connection, connection.getresponse()

    def json(self, path):
        connection, response = self.request(path)
        body = response.read()
        connection.close()
        if response.status != 200:
            raise AssertionError(f"GET {path}: {response.status} {body[:300]!r}")
        return json.loads(body)


def path_of(url):
    return urllib.parse.urlsplit(url).path + ("?" + urllib.parse.urlsplit(url).query if "?" in url else "")


def download(api, snapshot_id, entry, directory, interrupt):
    path = f"/bulk/snapshots/{snapshot_id}/files/{entry['name']}"
    target = os.path.join(directory, entry["name"])
    connection, response = api.request(path)
    assert response.status == 200, response.status
    etag = response.getheader("ETag")
    assert etag == f"\"{entry['sha256']}\"", etag
    assert response.getheader("Accept-Ranges") == "bytes"
    assert int(response.getheader("Content-Length")) == entry["bytes"]
    with open(target, "wb") as file:
        if interrupt:
            # The transfer breaks off halfway: the connection is dropped.
            file.write(response.read(entry["bytes"] // 2))
            connection.close()
        else:
            file.write(response.read())
            connection.close()
    resumed = False
    have = os.path.getsize(target)
    if have < entry["bytes"]:
        connection, response = api.request(path, {"Range": f"bytes={have}-", "If-Range": etag})
        assert response.status == 206, response.status
        assert response.getheader("Content-Range") == f"bytes {have}-{entry['bytes'] - 1}/{entry['bytes']}"
        with open(target, "ab") as file:
            file.write(response.read())
        connection.close()
        resumed = True
    with open(target, "rb") as file:
        content = file.read()
    assert len(content) == entry["bytes"], (entry["name"], len(content))
    assert hashlib.sha256(content).hexdigest() == entry["sha256"], entry["name"]
    return target, resumed


def parquet_value(name, value):
    """A Parquet value in the form the JSON row has it."""
    if name == "createdOn" and value is not None:
        return value.isoformat()
    if name == "publishedAt":
        utc = value.astimezone(datetime.timezone.utc)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    return value


def main():
    arguments = argparse.ArgumentParser()
    arguments.add_argument("--base-url", required=True)
    arguments.add_argument("--key", required=True)
    arguments.add_argument("--workdir", required=True)
    arguments.add_argument("--stop-file", required=True)
    arguments.add_argument("--ready-file", required=True)
    options = arguments.parse_args()
    api = Api(options.base_url, options.key)

    snapshots = api.json("/bulk/snapshots")["snapshots"]
    assert snapshots, "no snapshot to start from"
    manifest = api.json(path_of(snapshots[0]["manifest"]))
    assert manifest["audience"] == "production", manifest

    ndjson_rows, parquet_rows, resumed = {}, {}, False
    for index, entry in enumerate(manifest["files"]):
        target, was_resumed = download(api, manifest["snapshotId"], entry, options.workdir, interrupt=index == 0)
        resumed |= was_resumed
        if entry["format"] == "ndjson.gz":
            with gzip.open(target, "rb") as file:
                lines = file.read().splitlines()
            assert len(lines) == entry["rows"], (entry["name"], len(lines))
            for line in lines:
                row = json.loads(line)
                assert canonical(row) == line, "the client's serialization is the service's, byte for byte"
                ndjson_rows[row["lccId"]] = row
        elif entry["format"] == "parquet":
            table = parquet.read_table(target)
            assert table.num_rows == entry["rows"], (entry["name"], table.num_rows)
            types = {field.name: str(field.type) for field in table.schema}
            assert types["createdOn"] == "date32[day]", types
            assert types["publishedAt"] == "timestamp[ms, tz=UTC]", types
            assert types["isrcs"].startswith("list<"), types
            assert types["openForLicensing"] == "bool", types
            for row in table.to_pylist():
                parquet_rows[row["lccId"]] = {name: parquet_value(name, value) for name, value in row.items()}
        else:
            raise AssertionError(f"unknown format {entry['format']}")
    assert len(ndjson_rows) == manifest["rowCount"], (len(ndjson_rows), manifest["rowCount"])
    assert set(parquet_rows) == set(ndjson_rows), "both formats hold the same works"
    for lcc_id, row in ndjson_rows.items():
        assert parquet_rows[lcc_id] == row, (lcc_id, parquet_rows[lcc_id], row)

    copy = {lcc_id: canonical(row) for lcc_id, row in ndjson_rows.items()}
    versions, last_kind = {}, {}
    counts = {"items": 0, "upserts": 0, "withdrawals": 0, "pages": 0, "skippedAsOlder": 0}
    cursor = manifest["changesCursor"]
    with open(options.ready_file, "w") as ready:
        ready.write("following\n")
    stop_seen = False
    while True:
        stop_was_seen = stop_seen
        stop_seen = os.path.exists(options.stop_file)
        page = api.json(f"/bulk/changes?since={urllib.parse.quote(cursor)}&limit=1000")
        counts["pages"] += 1
        for item in page["items"]:
            counts["items"] += 1
            lcc_id = item["lccId"]
            if versions.get(lcc_id, -1) >= item["version"]:
                counts["skippedAsOlder"] += 1
                continue
            versions[lcc_id] = item["version"]
            last_kind[lcc_id] = item["kind"]
            if item["kind"] == "upsert":
                counts["upserts"] += 1
                copy[lcc_id] = canonical(item["row"])
            else:
                assert "row" not in item, item
                counts["withdrawals"] += 1
                copy.pop(lcc_id, None)
        assert page["next"], "a page always returns its cursor"
        cursor = page["next"]
        if page["caughtUp"] and stop_was_seen:
            break
        if page["caughtUp"] or not page["items"]:
            # Nothing new yet, or newer changes still settling: poll again in a moment.
            time.sleep(0.05)

    export, page_number = {}, 1
    while True:
        answer = api.json(f"/bulk/works?page={page_number}&limit=1000")
        for row in answer["items"]:
            export[row["lccId"]] = canonical(row)
        if not answer["links"]["next"]:
            break
        page_number += 1
    assert len(export) == answer["total"], (len(export), answer["total"])
    missing = sorted(set(export) - set(copy))
    extra = sorted(set(copy) - set(export))
    differing = sorted(lcc_id for lcc_id in set(copy) & set(export) if copy[lcc_id] != export[lcc_id])
    assert not (missing or extra or differing), {"missing": missing[:5], "extra": extra[:5], "differing": differing[:5]}
    withdrawn = sorted(lcc_id for lcc_id, kind in last_kind.items() if kind == "withdrawn")
    assert not set(withdrawn) & set(copy), "no withdrawn work is kept"
    changed = sum(1 for lcc_id in copy if lcc_id in ndjson_rows and copy[lcc_id] != canonical(ndjson_rows[lcc_id]))
    report = {
        **counts,
        "snapshotRows": len(ndjson_rows),
        "parquetRows": len(parquet_rows),
        "files": len(manifest["files"]),
        "resumedDownload": resumed,
        "exportRows": len(export),
        "rowsChangedSinceSnapshot": changed,
        "withdrawn": withdrawn,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print(f"copy_catalogue: {error!r}", file=sys.stderr)
        sys.exit(1)
