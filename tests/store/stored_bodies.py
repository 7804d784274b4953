"""Reads every body a SQLite model file stores with libraries we did not
write: zstandard for zstd frames and python-lz4 (liblz4's binding) for LZ4
blocks, each with the committed dictionary the body names. The layout is
read-model/src/stored_bodies.rs's: an LZ4 block follows the byte 0xC1, its
dictionary's id (4 bytes, little-endian) and the body's size (LEB128); a
body that is neither was stored as it is.

    stored_bodies.py MODEL_FILE

Prints one JSON line: for each table and column, how many bodies each way
holds ("zstd", "lz4", "plain"), and "rightsProfiles", each work's rights
profile as decoded text. Every document, bulk row and provenance entry
kept alone must decode to JSON. `plain(body)` is importable (scripts/train-dictionaries.sh).
"""

import glob
import json
import os
import sqlite3
import sys

import lz4.block
import zstandard

DICTIONARIES = os.path.join(os.path.dirname(__file__), "..", "..", "schemas", "dictionaries")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\xc1"

KNOWN = {}
for path in glob.glob(os.path.join(DICTIONARIES, "*.zdict")):
    dictionary = zstandard.ZstdCompressionDict(open(path, "rb").read())
    KNOWN[dictionary.dict_id()] = dictionary


def codec(body):
    """How a stored body is kept: "lz4", "zstd" or "plain"."""
    if body[:1] == LZ4_MAGIC:
        return "lz4"
    return "zstd" if body[:4] == ZSTD_MAGIC else "plain"


def plain(body):
    """The bytes a stored body holds."""
    way = codec(body)
    if way == "lz4":
        dictionary = KNOWN[int.from_bytes(body[1:5], "little")]
        size, at, shift = 0, 5, 0
        while True:
            size |= (body[at] & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if body[at - 1] < 0x80:
                break
        return lz4.block.decompress(body[at:], uncompressed_size=size, dict=dictionary.as_bytes())
    if way == "zstd":
        dictionary = KNOWN[zstandard.get_frame_parameters(body).dict_id]
        return zstandard.ZstdDecompressor(dict_data=dictionary).decompress(body)
    return body


# (table, column, key column, whether each body is JSON)
BODIES = [
    ("work_documents", "rights_profile", "id", True),
    ("work_documents", "verification", "id", True),
    ("work_documents", "metadata", "id", True),
    ("work_documents", "evidence", "id", True),
    ("license_statuses", "body", "id", True),
    ("provenance_entries", "body", "lcc_id", True),
    ("bulk_rows", "body", "lcc_id", True),
    ("aggregates", "state", "id", False),
]


def main():
    connection = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    report = {"rightsProfiles": {}}
    for table, column, key, is_json in BODIES:
        counts = {"zstd": 0, "lz4": 0, "plain": 0}
        query = f"SELECT {key}, {column} FROM {table} WHERE {column} IS NOT NULL"
        for identifier, body in connection.execute(query):
            counts[codec(body)] += 1
            text = plain(body)
            # A provenance row may instead hold a group of a batch's entries
            # of a work (a zero byte, then each entry length-prefixed).
            if is_json and not (table == "provenance_entries" and text[:1] == b"\x00"):
                json.loads(text)
            if column == "rights_profile":
                report["rightsProfiles"][identifier] = text.decode()
        report[f"{table}.{column}"] = counts
    print(json.dumps(report))


if __name__ == "__main__":
    main()
