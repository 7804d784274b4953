//! The public half of the keyring as a JWK Set (RFC 7517, with RFC 8037's
//! `OKP` keys): what `GET /keys` serves and what a verifier checks against.
//!
//! Each audience has its own set (`/keys` for production evidence,
//! `/keys?audience=sandbox` for the sandbox), so a sandbox package never
//! verifies against the production keys. Besides the standard members, a
//! key says its `status` and, once retired, `retiredAt`: JOSE libraries
//! ignore members they do not know.

use ed25519_dalek::VerifyingKey;
use read_model::Audience;
use read_model::calendar::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::keyring::{KeyStatus, Keyring};

/// A JWK Set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KeySet {
    pub keys: Vec<PublicKey>,
}

/// One public key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicKey {
    /// `OKP`.
    pub kty: String,
    /// `Ed25519`.
    pub crv: String,
    /// The public key, base64url.
    pub x: String,
    pub kid: String,
    /// `EdDSA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    /// `sig`.
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
    /// `production` or `sandbox`: whose documents the key signs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "production")]
    pub audience: Option<Audience>,
    /// `active` (signs now), `published` (announced, or replaced; what it
    /// signed verifies), or `retired` (signs nothing after `retiredAt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<KeyStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<Timestamp>,
}

impl PublicKey {
    /// The Ed25519 key, when this is one.
    pub fn verifying_key(&self) -> Option<VerifyingKey> {
        if self.kty != "OKP" || self.crv != "Ed25519" {
            return None;
        }
        let bytes: [u8; 32] = read_model::base64url::decode(&self.x)?.try_into().ok()?;
        VerifyingKey::from_bytes(&bytes).ok()
    }
}

impl KeySet {
    /// The published keys of `audience`, oldest first.
    pub fn of(keyring: &Keyring, audience: Audience) -> KeySet {
        let keys = keyring
            .keys
            .iter()
            .filter(|entry| entry.audience == audience)
            .map(|entry| PublicKey {
                kty: "OKP".into(),
                crv: "Ed25519".into(),
                x: entry.public_key.clone(),
                kid: entry.kid.clone(),
                alg: Some(super::jws::ALGORITHM.into()),
                use_: Some("sig".into()),
                audience: Some(entry.audience),
                status: Some(entry.status),
                created_at: Some(entry.created_at),
                retired_at: entry.retired_at,
            })
            .collect();
        KeySet { keys }
    }

    pub fn find(&self, kid: &str) -> Option<&PublicKey> {
        self.keys.iter().find(|key| key.kid == kid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_audience_publishes_its_own_keys_without_private_halves() {
        let now = Timestamp::parse("2026-11-24T10:00:00.000Z").expect("instant");
        let keyring = Keyring::first(now, [[1; 32], [2; 32]]);
        let production = KeySet::of(&keyring, Audience::Production);
        let sandbox = KeySet::of(&keyring, Audience::Sandbox);
        assert_eq!((production.keys.len(), sandbox.keys.len()), (1, 1));
        assert_ne!(production.keys[0].kid, sandbox.keys[0].kid);
        let text = serde_json::to_string(&production).expect("json");
        for private in keyring.keys.iter().filter_map(|key| key.private_key.as_deref()) {
            assert!(!text.contains(private), "{text}");
        }
        assert!(text.contains("\"use\":\"sig\""), "{text}");
        let parsed: KeySet = serde_json::from_str(&text).expect("parses back");
        assert_eq!(parsed, production);
        assert!(parsed.keys[0].verifying_key().is_some());
    }
}
