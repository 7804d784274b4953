// Checks a signed document (an evidence package or a snapshot manifest)
// against a JWK Set, in the browser, as `query-api evidence verify` does on
// the command line (query-api/src/signing/verification.rs): the same steps
// in the same order, and the same sentence for each failure, so the page
// and the command give one verdict in one wording. The signature is checked
// with WebCrypto's Ed25519; nothing here touches the page.

import { NotCanonicalizable, canonicalJson } from "./canonical-json.js";

const ALPHABET = /^[A-Za-z0-9_-]*$/;

// Unpadded base64url to bytes, or null; like the service's decoder it
// refuses padding, other alphabets and bits past the last whole byte.
export function base64urlDecode(text) {
  if (!ALPHABET.test(text) || text.length % 4 === 1) {
    return null;
  }
  const padded = text.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((text.length + 3) % 4);
  let binary;
  try {
    binary = atob(padded);
  } catch {
    return null;
  }
  const bytes = Uint8Array.from(binary, (character) => character.charCodeAt(0));
  const reencoded = btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  return reencoded === text ? bytes : null;
}

function base64urlEncode(bytes) {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function malformed(reason) {
  return { valid: false, rejection: "malformed", reason: `the signature is malformed: ${reason}` };
}

// The detached JWS taken apart, or a rejection.
function parseJws(text) {
  const parts = text.split(".");
  if (parts.length !== 3 || parts[1] !== "") {
    return malformed("it is not a detached JWS (`header..signature`)");
  }
  const [encodedHeader, , encodedSignature] = parts;
  const unreadable = malformed("its header is not base64url-encoded JSON");
  const headerBytes = base64urlDecode(encodedHeader);
  if (headerBytes === null) {
    return unreadable;
  }
  let header;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(headerBytes));
  } catch {
    return unreadable;
  }
  // Any JSON is a header so far; one that is not an object names nothing.
  const members = header !== null && typeof header === "object" && !Array.isArray(header) ? header : {};
  if (members.alg !== "EdDSA") {
    return malformed(`its algorithm is ${JSON.stringify(typeof members.alg === "string" ? members.alg : "")}, not EdDSA`);
  }
  if ("crit" in members) {
    return malformed("its header marks extensions critical (`crit`), which this verifier does not know");
  }
  if (typeof members.kid !== "string") {
    return malformed("its header names no key (`kid`)");
  }
  const signature = base64urlDecode(encodedSignature);
  if (signature === null || signature.length !== 64) {
    return malformed("its signature is not 64 base64url-encoded bytes");
  }
  return { kid: members.kid, encodedHeader, signature };
}

// The instant a document states it was issued, as the service prints it.
function datedOf(members) {
  for (const name of ["generatedAt", "createdAt"]) {
    const milliseconds = typeof members[name] === "string" ? Date.parse(members[name]) : NaN;
    if (!Number.isNaN(milliseconds)) {
      return new Date(milliseconds).toISOString();
    }
  }
  return null;
}

// The verdict on `text` (a document as pasted) against `keySet` (a JWK Set):
// {valid: true, kid, status, dated} or {valid: false, kid?, rejection, reason},
// where `rejection` names the kind of failure and `reason` is the command's.
export async function verifyDocument(text, keySet) {
  let members;
  try {
    members = JSON.parse(text);
  } catch (error) {
    return { valid: false, rejection: "not-json", reason: `the document is not JSON (${error.message})` };
  }
  if (members === null || typeof members !== "object" || Array.isArray(members)) {
    return { valid: false, rejection: "not-an-object", reason: "the document is not a JSON object" };
  }
  const signature = members.signature;
  delete members.signature;
  if (typeof signature !== "string") {
    return {
      valid: false,
      rejection: "unsigned",
      reason: "the document carries no signature (a `signature` member holding a detached JWS)",
    };
  }
  const jws = parseJws(signature);
  if (jws.reason !== undefined) {
    return jws;
  }
  const { kid } = jws;
  const key = (keySet.keys ?? []).find((candidate) => candidate.kid === kid);
  if (key === undefined) {
    return {
      valid: false,
      kid,
      rejection: "unknown-key",
      reason:
        `the key set has no key ${kid}: the document was signed by another registry, for the sandbox (sandbox ` +
        "documents never verify against the production keys), or by a key this key set does not publish",
    };
  }
  const unusable = {
    valid: false,
    kid,
    rejection: "unusable-key",
    reason: `key ${kid} of the key set is not an Ed25519 public key`,
  };
  const publicKey = key.kty === "OKP" && key.crv === "Ed25519" ? base64urlDecode(key.x ?? "") : null;
  if (publicKey === null || publicKey.length !== 32) {
    return unusable;
  }
  let cryptoKey;
  try {
    cryptoKey = await crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return unusable;
  }
  const dated = datedOf(members);
  let payload;
  try {
    payload = new TextEncoder().encode(canonicalJson(members));
  } catch (error) {
    if (error instanceof NotCanonicalizable) {
      return {
        valid: false,
        kid,
        rejection: "not-checkable",
        reason: `the document cannot be checked in a browser: it holds ${error.message}`,
      };
    }
    throw error;
  }
  const signingInput = new TextEncoder().encode(`${jws.encodedHeader}.${base64urlEncode(payload)}`);
  const holds = await crypto.subtle.verify({ name: "Ed25519" }, cryptoKey, jws.signature, signingInput);
  if (!holds) {
    return {
      valid: false,
      kid,
      rejection: "content-changed",
      reason: `the signature does not match the content: the document was changed after key ${kid} signed it`,
    };
  }
  if (typeof key.retiredAt === "string" && dated !== null && Date.parse(dated) > Date.parse(key.retiredAt)) {
    return {
      valid: false,
      kid,
      rejection: "signed-after-retirement",
      reason: `key ${kid} was retired at ${new Date(Date.parse(key.retiredAt)).toISOString()}, before the document's date ${dated}`,
    };
  }
  return { valid: true, kid, status: key.status ?? null, dated };
}

// The sentence the command prints for a verdict, without the file's name.
export function verdictSentence(verdict) {
  if (!verdict.valid) {
    return `invalid: ${verdict.reason}`;
  }
  const status = verdict.status ? ` (${verdict.status})` : "";
  const dated = verdict.dated ? `, dated ${verdict.dated}` : "";
  return `valid: signed by key ${verdict.kid}${status}${dated}`;
}
