// The JSON Canonicalization Scheme (RFC 8785) for values from JSON.parse:
// what the registry signs is the canonical text of a document without its
// `signature` member, so the page rebuilds that text to check a signature.
//
// RFC 8785 defines its number and string forms as ECMAScript's own
// (Number.prototype.toString and JSON.stringify), so those are used as they
// are; object members are sorted by the UTF-16 code units of their names,
// which is the order of Array.prototype.sort on strings. Integers beyond
// 2^53 lose precision in JSON.parse and are refused, as are lone surrogates,
// which RFC 8785 forbids: a document holding either cannot be checked here.

export class NotCanonicalizable extends Error {}

export function canonicalJson(value) {
  if (value === null || typeof value === "boolean") {
    return String(value);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) {
      throw new NotCanonicalizable("a number that is not finite");
    }
    if (Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21) {
      throw new NotCanonicalizable(`the integer ${value} is beyond the precision of this browser's numbers`);
    }
    return JSON.stringify(value);
  }
  if (typeof value === "string") {
    if (!value.isWellFormed()) {
      throw new NotCanonicalizable("a string with a lone surrogate");
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map(canonicalJson).join(",")}]`;
  }
  const names = Object.keys(value).sort();
  return `{${names.map((name) => `${canonicalJson(name)}:${canonicalJson(value[name])}`).join(",")}}`;
}
