"""Fetches one API answer in every coding the service offers and decodes
each with a library we did not write (Python's gzip, Google's brotli,
zstandard); each must equal the identity body, and sending a coded
answer's ETag back with the same Accept-Encoding must give 304.

    decode_codings.py URL KEY

Prints one JSON line: per coding, the bytes on the wire and the tag.
"""

import gzip
import json
import sys
import urllib.error
import urllib.request

import brotli
import zstandard

DECODERS = {
    "gzip": gzip.decompress,
    "br": brotli.decompress,
    "zstd": lambda body: zstandard.ZstdDecompressor().decompressobj().decompress(body),
}


def fetch(url, key, headers):
    """(status, headers, body); the headers are looked up in any case."""
    request = urllib.request.Request(url, headers={"x-api-key": key, **headers})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def main():
    url, key = sys.argv[1], sys.argv[2]
    status, headers, identity = fetch(url, key, {})
    assert status == 200 and headers.get("Content-Encoding") is None, (status, dict(headers))
    report = {"identity": {"bytes": len(identity), "etag": headers.get("ETag")}}
    for coding, decode in DECODERS.items():
        status, headers, body = fetch(url, key, {"Accept-Encoding": coding})
        assert status == 200, status
        assert headers.get("Content-Encoding") == coding, dict(headers)
        decoded = decode(body)
        if decoded != identity:
            sys.exit(f"{coding}: the decoded body differs from the identity body")
        tag = headers.get("ETag")
        status, _, empty = fetch(url, key, {"Accept-Encoding": coding, "If-None-Match": tag})
        if status != 304 or empty:
            sys.exit(f"{coding}: If-None-Match with its tag answered {status}")
        report[coding] = {"bytes": len(body), "etag": tag}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
