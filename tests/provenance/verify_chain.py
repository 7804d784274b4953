"""Checks the provenance chains of the works named on the command line with
independent tools: the `rfc8785` package canonicalizes each entry (without
its `chainHash`) and hashlib hashes it after the predecessor's hash. Every
`chainHash` must match, and the evidence package must name the head.

    verify_chain.py BASE_URL KEY LCC_ID...

Prints one JSON line (works and entries checked); exits 1 on a mismatch.
"""

import hashlib
import json
import sys
import urllib.request

import rfc8785

GENESIS = "0" * 64


def get(base_url, key, path):
    request = urllib.request.Request(base_url + path, headers={"x-api-key": key})
    return json.load(urllib.request.urlopen(request))


def main():
    base_url, key, lcc_ids = sys.argv[1], sys.argv[2], sys.argv[3:]
    entries_checked = 0
    for lcc_id in lcc_ids:
        provenance = get(base_url, key, f"/rights/{lcc_id}/provenance")
        previous = GENESIS
        for entry in provenance["entries"]:
            claimed = entry.pop("chainHash")
            previous = hashlib.sha256(previous.encode() + rfc8785.dumps(entry)).hexdigest()
            if claimed != previous:
                print(f"{lcc_id}: chainHash {claimed} where {previous} was expected", file=sys.stderr)
                sys.exit(1)
            entries_checked += 1
        head = {"hash": previous, "length": len(provenance["entries"])}
        if provenance["chain"] != head:
            print(f"{lcc_id}: chain {provenance['chain']} where {head} was expected", file=sys.stderr)
            sys.exit(1)
        evidence = get(base_url, key, f"/rights/{lcc_id}/evidence")
        if evidence["provenanceChain"] != head:
            print(f"{lcc_id}: the evidence names {evidence['provenanceChain']}, the chain ends at {head}", file=sys.stderr)
            sys.exit(1)
    print(json.dumps({"works": len(lcc_ids), "entries": entries_checked}))


if __name__ == "__main__":
    main()
