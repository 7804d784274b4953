//! Detached JSON Web Signatures (RFC 7515, appendix F) with EdDSA over
//! Ed25519 (RFC 8037).
//!
//! The serialized signature is the compact form with its payload left out:
//! `BASE64URL(header)..BASE64URL(signature)`. The signed input is still
//! `BASE64URL(header).BASE64URL(payload)`, so any JOSE library verifies it
//! when given the payload as the detached content. The header is written as
//! RFC 8785 canonical JSON, so one key and one payload give one signature
//! (Ed25519 is deterministic): an unchanged document keeps its bytes and its
//! entity tag. This module signs and checks bytes; it does not know what a
//! package or a key set is.

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use read_model::base64url;
use read_model::canonical_json::canonical_json;
use serde_json::{Value, json};

/// The only algorithm this service signs with or accepts.
pub const ALGORITHM: &str = "EdDSA";

/// The detached JWS of `payload` by `key`, whose key id is `kid`.
pub fn sign_detached(key: &SigningKey, kid: &str, payload: &[u8]) -> String {
    let header = base64url::encode(canonical_json(&json!({ "alg": ALGORITHM, "kid": kid })).as_bytes());
    let signing_input = format!("{header}.{}", base64url::encode(payload));
    let signature = key.sign(signing_input.as_bytes());
    format!("{header}..{}", base64url::encode(&signature.to_bytes()))
}

/// A detached JWS taken apart, before its signature is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachedJws {
    /// The key id its protected header names.
    pub kid: String,
    encoded_header: String,
    signature: Signature,
}

/// Why a text is not a detached JWS this service could have made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MalformedJws {
    #[error("it is not a detached JWS (`header..signature`)")]
    NotDetachedCompact,
    #[error("its header is not base64url-encoded JSON")]
    UnreadableHeader,
    #[error("its algorithm is {0:?}, not EdDSA")]
    UnsupportedAlgorithm(String),
    #[error("its header names no key (`kid`)")]
    NoKeyId,
    #[error("its header marks extensions critical (`crit`), which this verifier does not know")]
    CriticalExtension,
    #[error("its signature is not 64 base64url-encoded bytes")]
    UnreadableSignature,
}

impl DetachedJws {
    pub fn parse(text: &str) -> Result<DetachedJws, MalformedJws> {
        let mut parts = text.split('.');
        let (Some(encoded_header), Some(""), Some(encoded_signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(MalformedJws::NotDetachedCompact);
        };
        let header: Value = base64url::decode(encoded_header)
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(MalformedJws::UnreadableHeader)?;
        match header.get("alg").and_then(Value::as_str) {
            Some(ALGORITHM) => {}
            other => return Err(MalformedJws::UnsupportedAlgorithm(other.unwrap_or_default().to_owned())),
        }
        if header.get("crit").is_some() {
            return Err(MalformedJws::CriticalExtension);
        }
        let kid = header.get("kid").and_then(Value::as_str).ok_or(MalformedJws::NoKeyId)?.to_owned();
        let signature = base64url::decode(encoded_signature)
            .and_then(|bytes| Signature::from_slice(&bytes).ok())
            .ok_or(MalformedJws::UnreadableSignature)?;
        Ok(DetachedJws { kid, encoded_header: encoded_header.to_owned(), signature })
    }

    /// Whether `key` signed `payload` with this signature. Strict: a
    /// signature a lax verifier would also accept for another input is refused.
    pub fn verifies(&self, key: &VerifyingKey, payload: &[u8]) -> bool {
        let signing_input = format!("{}.{}", self.encoded_header, base64url::encode(payload));
        key.verify_strict(signing_input.as_bytes(), &self.signature).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn a_signature_verifies_its_payload_only_and_is_deterministic() {
        let signed = sign_detached(&key(1), "k1", b"{\"a\":1}");
        assert_eq!(signed, sign_detached(&key(1), "k1", b"{\"a\":1}"), "Ed25519 is deterministic");
        let jws = DetachedJws::parse(&signed).expect("parses");
        assert_eq!(jws.kid, "k1");
        assert!(jws.verifies(&key(1).verifying_key(), b"{\"a\":1}"));
        assert!(!jws.verifies(&key(1).verifying_key(), b"{\"a\":2}"), "another payload");
        assert!(!jws.verifies(&key(2).verifying_key(), b"{\"a\":1}"), "another key");
    }

    #[test]
    fn the_header_is_canonical_json_naming_the_algorithm_and_key() {
        let signed = sign_detached(&key(1), "k1", b"{}");
        let header = signed.split('.').next().expect("header");
        assert_eq!(base64url::decode(header).as_deref(), Some(&b"{\"alg\":\"EdDSA\",\"kid\":\"k1\"}"[..]));
    }

    #[test]
    fn anything_but_a_detached_eddsa_jws_is_refused_with_its_reason() {
        let signed = sign_detached(&key(1), "k1", b"{}");
        let (header, signature) = signed.split_once("..").expect("detached");
        let header_of = |value: Value| base64url::encode(value.to_string().as_bytes());
        for (text, reason) in [
            (format!("{header}.e30.{signature}"), MalformedJws::NotDetachedCompact),
            (format!("{header}..{signature}.x"), MalformedJws::NotDetachedCompact),
            (format!("%%..{signature}"), MalformedJws::UnreadableHeader),
            (
                format!("{}..{signature}", header_of(json!({"alg": "HS256", "kid": "k1"}))),
                MalformedJws::UnsupportedAlgorithm("HS256".into()),
            ),
            (format!("{}..{signature}", header_of(json!({"alg": "EdDSA"}))), MalformedJws::NoKeyId),
            (
                format!("{}..{signature}", header_of(json!({"alg": "EdDSA", "kid": "k1", "crit": ["b64"]}))),
                MalformedJws::CriticalExtension,
            ),
            (format!("{header}..AAAA"), MalformedJws::UnreadableSignature),
        ] {
            assert_eq!(DetachedJws::parse(&text), Err(reason), "{text}");
        }
    }
}
