//! The keyring: every signing key the service has had, with its private
//! half while it may still sign, and the rules of rotation.
//!
//! A key is `published` when generated (it appears in the key set, so that
//! verifiers and caches hold it before anything is signed with it), `active`
//! once made the signing key of its audience (one per audience; the one it
//! replaces goes back to `published`), and `retired` for good: it never
//! signs again, its private half is erased, and it stays in the key set with
//! its retirement date, so that what it signed still verifies.
//!
//! The keyring is JSON, kept in a file with owner-only permissions or given
//! whole by the environment; this module parses, checks and changes it but
//! never logs it, and its `Debug` leaves private keys out.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use ed25519_dalek::{SigningKey, VerifyingKey};
use read_model::Audience;
use read_model::base64url;
use read_model::calendar::{Date, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where a key is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyStatus {
    Published,
    Active,
    Retired,
}

impl KeyStatus {
    pub fn name(self) -> &'static str {
        match self {
            KeyStatus::Published => "published",
            KeyStatus::Active => "active",
            KeyStatus::Retired => "retired",
        }
    }
}

/// One key of the keyring.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyringEntry {
    pub kid: String,
    pub audience: Audience,
    pub status: KeyStatus,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<Timestamp>,
    /// The public key, base64url (the JWK's `x`).
    pub public_key: String,
    /// The private key, base64url (the JWK's `d`); erased on retirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key: Option<String>,
}

impl std::fmt::Debug for KeyringEntry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("KeyringEntry")
            .field("kid", &self.kid)
            .field("audience", &self.audience)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl KeyringEntry {
    pub fn verifying_key(&self) -> Option<VerifyingKey> {
        let bytes: [u8; 32] = base64url::decode(&self.public_key)?.try_into().ok()?;
        VerifyingKey::from_bytes(&bytes).ok()
    }

    fn signing_key(&self) -> Option<SigningKey> {
        let bytes: [u8; 32] = base64url::decode(self.private_key.as_deref()?)?.try_into().ok()?;
        Some(SigningKey::from_bytes(&bytes))
    }
}

/// The file's whole content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keyring {
    pub keys: Vec<KeyringEntry>,
}

/// Why a keyring cannot be used or changed as asked.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error("the keyring is not valid JSON of the expected shape: {0}")]
    Unreadable(#[from] serde_json::Error),
    #[error("key {0}: its public key is not 32 base64url-encoded bytes of an Ed25519 point")]
    BadPublicKey(String),
    #[error("key {0}: its private key is not 32 base64url-encoded bytes, or does not match its public key")]
    BadPrivateKey(String),
    #[error("key {0}: an active key needs its private key")]
    ActiveWithoutPrivateKey(String),
    #[error("key {0} appears twice")]
    DuplicateKid(String),
    #[error("{0} has more than one active key")]
    SeveralActive(&'static str),
    #[error("no key {0}")]
    UnknownKey(String),
    #[error("the keyring has no active {0} key: activate one with `query-api signing-keys activate`")]
    NoActiveKey(&'static str),
    #[error("key {0} is retired and can never sign again")]
    Retired(String),
    #[error("key {0} is the active {1} key: activate another one before retiring it")]
    RetiringActive(String, &'static str),
    #[error("failed to read or write the keyring file: {0}")]
    Io(#[from] std::io::Error),
}

impl Keyring {
    /// Parses and checks a keyring: keys well-formed, private halves
    /// matching public ones, at most one active key per audience.
    pub fn parse(text: &str) -> Result<Keyring, KeyringError> {
        let keyring: Keyring = serde_json::from_str(text)?;
        keyring.check()?;
        Ok(keyring)
    }

    fn check(&self) -> Result<(), KeyringError> {
        let mut seen = std::collections::HashSet::new();
        for entry in &self.keys {
            if !seen.insert(entry.kid.as_str()) {
                return Err(KeyringError::DuplicateKid(entry.kid.clone()));
            }
            let public = entry.verifying_key().ok_or_else(|| KeyringError::BadPublicKey(entry.kid.clone()))?;
            if entry.private_key.is_some()
                && entry.signing_key().is_none_or(|private| private.verifying_key() != public)
            {
                return Err(KeyringError::BadPrivateKey(entry.kid.clone()));
            }
            if entry.status == KeyStatus::Active && entry.private_key.is_none() {
                return Err(KeyringError::ActiveWithoutPrivateKey(entry.kid.clone()));
            }
        }
        for audience in [Audience::Production, Audience::Sandbox] {
            if self.keys.iter().filter(|key| key.audience == audience && key.status == KeyStatus::Active).count() > 1 {
                return Err(KeyringError::SeveralActive(audience.code()));
            }
        }
        Ok(())
    }

    /// The keyring as its file holds it.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Adds a new `published` key for `audience`, from `seed` (32 random bytes).
    pub fn generate(&mut self, audience: Audience, seed: [u8; 32], now: Timestamp) -> &KeyringEntry {
        let key = SigningKey::from_bytes(&seed);
        let public = key.verifying_key().to_bytes();
        let fingerprint = Sha256::digest(public);
        let date = Date::of(now).to_string().replace('-', "");
        let kid = format!(
            "{}-{date}-{:02x}{:02x}{:02x}{:02x}",
            audience.code(),
            fingerprint[0],
            fingerprint[1],
            fingerprint[2],
            fingerprint[3]
        );
        self.keys.push(KeyringEntry {
            kid,
            audience,
            status: KeyStatus::Published,
            created_at: now,
            retired_at: None,
            public_key: base64url::encode(&public),
            private_key: Some(base64url::encode(&seed)),
        });
        let last = self.keys.len() - 1;
        &self.keys[last]
    }

    fn position(&self, kid: &str) -> Result<usize, KeyringError> {
        self.keys.iter().position(|key| key.kid == kid).ok_or_else(|| KeyringError::UnknownKey(kid.to_owned()))
    }

    /// Makes `kid` the signing key of its audience; the one it replaces
    /// stays published, so what it signed still verifies.
    pub fn activate(&mut self, kid: &str) -> Result<(), KeyringError> {
        let index = self.position(kid)?;
        let audience = self.keys[index].audience;
        if self.keys[index].status == KeyStatus::Retired {
            return Err(KeyringError::Retired(kid.to_owned()));
        }
        for key in &mut self.keys {
            if key.audience == audience && key.status == KeyStatus::Active {
                key.status = KeyStatus::Published;
            }
        }
        self.keys[index].status = KeyStatus::Active;
        Ok(())
    }

    /// Retires `kid`: it stays published with the date, and its private
    /// half is erased. The active key cannot be retired.
    pub fn retire(&mut self, kid: &str, now: Timestamp) -> Result<(), KeyringError> {
        let index = self.position(kid)?;
        let key = &mut self.keys[index];
        match key.status {
            KeyStatus::Active => Err(KeyringError::RetiringActive(kid.to_owned(), key.audience.code())),
            KeyStatus::Retired => Ok(()),
            KeyStatus::Published => {
                key.status = KeyStatus::Retired;
                key.retired_at = Some(now);
                key.private_key = None;
                Ok(())
            }
        }
    }

    /// The key that signs for `audience`, with its id.
    pub fn signing_key(&self, audience: Audience) -> Option<(&str, SigningKey)> {
        let entry = self.keys.iter().find(|key| key.audience == audience && key.status == KeyStatus::Active)?;
        Some((entry.kid.as_str(), entry.signing_key()?))
    }

    /// Checks that every audience has a key that signs: what a service needs
    /// of its keyring (an operator's keyring may lack one while it is built).
    pub fn check_signs_for_every_audience(&self) -> Result<(), KeyringError> {
        for audience in [Audience::Production, Audience::Sandbox] {
            if self.signing_key(audience).is_none() {
                return Err(KeyringError::NoActiveKey(audience.code()));
            }
        }
        Ok(())
    }

    /// Reads the keyring file.
    pub fn read(path: &Path) -> Result<Keyring, KeyringError> {
        Keyring::parse(&std::fs::read_to_string(path)?)
    }

    /// Replaces the keyring file whole (a new file renamed over the old one,
    /// owner-only from its creation), so that a reader sees the old or the
    /// new keyring, never a part.
    pub fn write(&self, path: &Path) -> Result<(), KeyringError> {
        self.check()?;
        let directory = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(directory)?;
        let partial = directory
            .join(format!(".{}.partial", path.file_name().and_then(|name| name.to_str()).unwrap_or("keyring")));
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&partial)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.write_all(self.to_json().as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&partial, path)?;
        Ok(())
    }

    /// A keyring with one active key per audience, as the embedded default
    /// creates on first start.
    pub fn first(now: Timestamp, seeds: [[u8; 32]; 2]) -> Keyring {
        let mut keyring = Keyring::default();
        let [production, sandbox] = seeds;
        for (audience, seed) in [(Audience::Production, production), (Audience::Sandbox, sandbox)] {
            let kid = keyring.generate(audience, seed, now).kid.clone();
            keyring.activate(&kid).unwrap_or_else(|_| unreachable!("a key just generated is not retired"));
        }
        keyring
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-24T10:00:00.000Z").expect("instant")
    }

    #[test]
    fn rotation_moves_the_signing_key_and_keeps_old_keys_published() {
        let mut keyring = Keyring::first(now(), [[1; 32], [2; 32]]);
        let (first, _) = keyring.signing_key(Audience::Production).expect("signing key");
        let first = first.to_owned();
        assert!(first.starts_with("production-20261124-"), "{first}");
        let sandbox = keyring.signing_key(Audience::Sandbox).expect("sandbox key").0.to_owned();
        assert_ne!(first, sandbox);

        let second = keyring.generate(Audience::Production, [3; 32], now()).kid.clone();
        assert_eq!(keyring.signing_key(Audience::Production).expect("still").0, first, "generated keys wait");
        keyring.activate(&second).expect("activate");
        assert_eq!(keyring.signing_key(Audience::Production).expect("new").0, second);
        assert_eq!(keyring.signing_key(Audience::Sandbox).expect("untouched").0, sandbox);

        assert!(matches!(keyring.retire(&second, now()), Err(KeyringError::RetiringActive(..))));
        keyring.retire(&first, now()).expect("retire");
        let retired = keyring.keys.iter().find(|key| key.kid == first).expect("kept");
        assert_eq!(
            (retired.status, retired.retired_at, retired.private_key.as_deref()),
            (KeyStatus::Retired, Some(now()), None)
        );
        assert!(matches!(keyring.activate(&first), Err(KeyringError::Retired(_))));
        assert_eq!(Keyring::parse(&keyring.to_json()).expect("round trip"), keyring);
    }

    #[test]
    fn a_keyring_that_contradicts_itself_is_refused() {
        let keyring = Keyring::first(now(), [[1; 32], [2; 32]]);
        let mut two_active = keyring.clone();
        two_active.keys[1].audience = Audience::Production;
        assert!(matches!(Keyring::parse(&two_active.to_json()), Err(KeyringError::SeveralActive("production"))));
        let mut mismatched = keyring.clone();
        mismatched.keys[0].private_key = keyring.keys[1].private_key.clone();
        assert!(matches!(Keyring::parse(&mismatched.to_json()), Err(KeyringError::BadPrivateKey(_))));
        let mut no_private = keyring.clone();
        no_private.keys[0].private_key = None;
        assert!(matches!(Keyring::parse(&no_private.to_json()), Err(KeyringError::ActiveWithoutPrivateKey(_))));
        assert!(matches!(Keyring::parse("{\"keys\": 1}"), Err(KeyringError::Unreadable(_))));
    }

    #[test]
    fn the_file_is_owner_only_and_debug_never_shows_a_private_key() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("signing-keys.json");
        let keyring = Keyring::first(now(), [[7; 32], [8; 32]]);
        keyring.write(&path).expect("write");
        assert_eq!(std::fs::metadata(&path).expect("file").permissions().mode() & 0o777, 0o600);
        assert_eq!(Keyring::read(&path).expect("read"), keyring);
        let private = keyring.keys[0].private_key.clone().expect("private");
        assert!(!format!("{keyring:?}").contains(&private));
    }
}
