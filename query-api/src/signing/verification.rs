//! Checking a saved signed document (an evidence package or a snapshot
//! manifest) against a key set, offline, with a plain reason when it fails:
//! what `query-api evidence verify` runs.
//!
//! The payload is rebuilt the way it was signed: the document without its
//! `signature` member, as RFC 8785 canonical JSON. So the check holds for a
//! document re-indented or with its members reordered, and fails for any
//! change of a value.

use read_model::calendar::Timestamp;
use read_model::canonical_json::canonical_json;
use serde_json::Value;

use super::jws::{DetachedJws, MalformedJws};
use super::key_set::KeySet;
use super::keyring::KeyStatus;

/// The member that carries a document's signature.
pub const SIGNATURE_MEMBER: &str = "signature";

/// A document whose signature holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub kid: String,
    pub status: Option<KeyStatus>,
    /// The instant the document states it was issued (`generatedAt`, or a
    /// manifest's `createdAt`), when it states one.
    pub dated: Option<Timestamp>,
}

/// Why a document does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("the document is not JSON ({0})")]
    NotJson(String),
    #[error("the document is not a JSON object")]
    NotAnObject,
    #[error("the document carries no signature (a `signature` member holding a detached JWS)")]
    Unsigned,
    #[error("the signature is malformed: {0}")]
    Malformed(MalformedJws),
    #[error(
        "the key set has no key {0}: the document was signed by another registry, for the sandbox (sandbox \
         documents never verify against the production keys), or by a key this key set does not publish"
    )]
    UnknownKey(String),
    #[error("key {0} of the key set is not an Ed25519 public key")]
    UnusableKey(String),
    #[error("the signature does not match the content: the document was changed after key {0} signed it")]
    ContentChanged(String),
    #[error("key {kid} was retired at {retired_at}, before the document's date {dated}")]
    SignedAfterRetirement { kid: String, retired_at: Timestamp, dated: Timestamp },
}

/// Checks `document` (JSON bytes) against `key_set`.
pub fn verify_document(document: &[u8], key_set: &KeySet) -> Result<Verified, Rejection> {
    let value: Value = serde_json::from_slice(document).map_err(|error| Rejection::NotJson(error.to_string()))?;
    let Value::Object(mut members) = value else { return Err(Rejection::NotAnObject) };
    let signature = match members.remove(SIGNATURE_MEMBER) {
        Some(Value::String(signature)) => signature,
        _ => return Err(Rejection::Unsigned),
    };
    let jws = DetachedJws::parse(&signature).map_err(Rejection::Malformed)?;
    let key = key_set.find(&jws.kid).ok_or_else(|| Rejection::UnknownKey(jws.kid.clone()))?;
    let verifying_key = key.verifying_key().ok_or_else(|| Rejection::UnusableKey(jws.kid.clone()))?;
    let dated = ["generatedAt", "createdAt"]
        .into_iter()
        .find_map(|name| members.get(name).and_then(Value::as_str).and_then(Timestamp::parse));
    if !jws.verifies(&verifying_key, canonical_json(&Value::Object(members)).as_bytes()) {
        return Err(Rejection::ContentChanged(jws.kid));
    }
    if let (Some(retired_at), Some(dated)) = (key.retired_at, dated)
        && dated > retired_at
    {
        return Err(Rejection::SignedAfterRetirement { kid: jws.kid, retired_at, dated });
    }
    Ok(Verified { kid: jws.kid, status: key.status, dated })
}

#[cfg(test)]
mod tests {
    use read_model::Audience;
    use serde_json::json;

    use super::*;
    use crate::signing::keyring::Keyring;
    use crate::signing::signer::Signer;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("instant")
    }

    fn signed(signer: &Signer, audience: Audience, mut document: Value) -> Vec<u8> {
        let signature = signer.sign(audience, &document).expect("sign");
        document[SIGNATURE_MEMBER] = Value::String(signature);
        serde_json::to_vec_pretty(&document).expect("json")
    }

    #[test]
    fn a_signed_document_verifies_and_each_kind_of_tampering_says_why_not() {
        let mut keyring = Keyring::first(at("2026-01-01T00:00:00.000Z"), [[1; 32], [2; 32]]);
        let signer = Signer::of(&keyring);
        let document = json!({ "lccId": "LCC-1", "generatedAt": "2026-06-01T00:00:00.000Z", "n": 1.5 });
        let package = signed(&signer, Audience::Production, document.clone());
        let production = KeySet::of(&keyring, Audience::Production);
        let verified = verify_document(&package, &production).expect("verifies");
        assert_eq!(verified.kid, keyring.keys[0].kid);
        assert_eq!(verified.dated, Some(at("2026-06-01T00:00:00.000Z")));

        let mut reordered: Value = serde_json::from_slice(&package).expect("json");
        reordered["n"] = json!(1.50);
        assert!(verify_document(reordered.to_string().as_bytes(), &production).is_ok(), "the same value");

        let tampered = String::from_utf8(package.clone()).expect("utf-8").replace("LCC-1", "LCC-2");
        assert!(matches!(verify_document(tampered.as_bytes(), &production), Err(Rejection::ContentChanged(_))));

        let sandbox_package = signed(&signer, Audience::Sandbox, document.clone());
        assert!(matches!(verify_document(&sandbox_package, &production), Err(Rejection::UnknownKey(_))));
        assert!(verify_document(&sandbox_package, &KeySet::of(&keyring, Audience::Sandbox)).is_ok());

        assert_eq!(verify_document(b"[1]", &production), Err(Rejection::NotAnObject));
        assert_eq!(verify_document(document.to_string().as_bytes(), &production), Err(Rejection::Unsigned));
        assert!(matches!(verify_document(b"{", &production), Err(Rejection::NotJson(_))));

        let old = keyring.keys[0].kid.clone();
        let new = keyring.generate(Audience::Production, [3; 32], at("2026-07-01T00:00:00.000Z")).kid.clone();
        keyring.activate(&new).expect("activate");
        keyring.retire(&old, at("2026-07-02T00:00:00.000Z")).expect("retire");
        let rotated = KeySet::of(&keyring, Audience::Production);
        assert_eq!(verify_document(&package, &rotated).expect("still verifies").status, Some(KeyStatus::Retired));
        let mut late = document;
        late["generatedAt"] = json!("2026-08-01T00:00:00.000Z");
        let late = signed(&signer, Audience::Production, late);
        assert!(matches!(verify_document(&late, &rotated), Err(Rejection::SignedAfterRetirement { .. })));
    }
}
