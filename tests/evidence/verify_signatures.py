"""Checks signed documents (evidence packages, snapshot manifests) with
tools we did not write: `rfc8785` canonicalizes the document without its
`signature` member, and `jwcrypto` verifies the detached JWS against a JWK
Set saved from `/keys`.

    verify_signatures.py < SPEC

SPEC is JSON: {"cases": [{"name", "document", "keys"}], "flips": [{"name",
"document", "keys"}]}, with file paths. Each case gets a verdict; each flip
document is changed one byte at a time, at every position, and each
changed copy must fail. Prints one JSON object:
{"verdicts": {name: {"valid", "kid", "reason"}}, "flips": {name: {"tried", "verified"}}}.
"""

import json
import sys

import rfc8785
from jwcrypto import jwk, jws


def verdict(document_bytes, key_set, published_keys):
    """The verdict on one document; `published_keys` are the key set's
    members by kid, with the members jwcrypto does not keep (`status`,
    `retiredAt`)."""
    try:
        document = json.loads(document_bytes)
    except ValueError as error:
        return {"valid": False, "reason": f"not JSON: {error}"}
    if not isinstance(document, dict) or not isinstance(document.get("signature"), str):
        return {"valid": False, "reason": "unsigned"}
    signature = document.pop("signature")
    token = jws.JWS()
    try:
        token.deserialize(signature)
        kid = token.jose_header.get("kid")
        if token.jose_header.get("alg") != "EdDSA":
            return {"valid": False, "reason": "not EdDSA"}
    except Exception as error:  # jwcrypto raises several kinds for a malformed token
        return {"valid": False, "reason": f"malformed: {error}"}
    key = key_set.get_key(kid)
    if key is None:
        return {"valid": False, "kid": kid, "reason": "unknown key"}
    try:
        token.verify(key, alg="EdDSA", detached_payload=rfc8785.dumps(document))
    except Exception as error:
        return {"valid": False, "kid": kid, "reason": f"bad signature: {error}"}
    published = published_keys.get(kid, {})
    dated = document.get("generatedAt") or document.get("createdAt")
    retired = published.get("retiredAt")
    # Both are ISO 8601 UTC with milliseconds, so they order as text.
    if retired and dated and dated > retired:
        return {"valid": False, "kid": kid, "reason": "signed after its key was retired"}
    return {"valid": True, "kid": kid, "status": published.get("status")}


def key_set_of(path):
    """The key set as jwcrypto reads it, and its keys' members by kid."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    return jwk.JWKSet.from_json(text), {key["kid"]: key for key in json.loads(text)["keys"]}


def main():
    spec = json.load(sys.stdin)
    report = {"verdicts": {}, "flips": {}}
    for case in spec.get("cases", []):
        with open(case["document"], "rb") as file:
            report["verdicts"][case["name"]] = verdict(file.read(), *key_set_of(case["keys"]))
    for case in spec.get("flips", []):
        with open(case["document"], "rb") as file:
            original = file.read()
        key_set = key_set_of(case["keys"])
        if not verdict(original, *key_set)["valid"]:
            raise SystemExit(f"{case['name']}: the unchanged document does not verify")
        verified = 0
        for position in range(len(original)):
            changed = bytearray(original)
            changed[position] ^= 0x01
            if verdict(bytes(changed), *key_set)["valid"]:
                verified += 1
                print(f"{case['name']}: still verifies with byte {position} changed", file=sys.stderr)
        report["flips"][case["name"]] = {"tried": len(original), "verified": verified}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
