//! The signer every replica holds: the keyring as last read, the key that
//! signs for each audience, and each audience's key set ready to serve.
//!
//! A keyring in a file is read again when the file changes (checked every
//! [`RELOAD_INTERVAL`]), so a rotation by `query-api signing-keys` reaches
//! running replicas without a restart; a keyring given by the environment
//! changes with a restart. A file that no longer parses is logged and the
//! keys last read stay in use. This module never logs a private key.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use ed25519_dalek::SigningKey;
use read_model::Audience;
use read_model::calendar::Timestamp;
use read_model::canonical_json::canonical_json;
use serde::Serialize;

use super::jws::sign_detached;
use super::key_set::KeySet;
use super::keyring::{Keyring, KeyringError};

/// How often a keyring file is checked for changes.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(2);

/// Where the keyring comes from.
#[derive(Clone)]
pub enum KeyringSource {
    /// A file, read again when it changes.
    File(PathBuf),
    /// The keyring's JSON itself, from the environment or a flag.
    Given(String),
}

impl std::fmt::Debug for KeyringSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyringSource::File(path) => formatter.debug_tuple("File").field(path).finish(),
            KeyringSource::Given(_) => formatter.write_str("Given(..)"),
        }
    }
}

/// Why a document could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error("the keyring has no active {0} key")]
    NoActiveKey(&'static str),
    #[error("the document does not serialize: {0}")]
    Unserializable(#[from] serde_json::Error),
}

struct ActiveKey {
    kid: String,
    key: SigningKey,
}

/// One reading of the keyring, with what is derived from it.
struct Loaded {
    /// The file's modification time and length when it was read.
    file_state: Option<(SystemTime, u64)>,
    production: Option<ActiveKey>,
    sandbox: Option<ActiveKey>,
    production_key_set: Bytes,
    sandbox_key_set: Bytes,
    newest_change: Timestamp,
}

impl Loaded {
    fn of(keyring: &Keyring, file_state: Option<(SystemTime, u64)>) -> Loaded {
        let active = |audience| keyring.signing_key(audience).map(|(kid, key)| ActiveKey { kid: kid.to_owned(), key });
        let key_set = |audience| Bytes::from(serde_json::to_vec(&KeySet::of(keyring, audience)).unwrap_or_default());
        let newest_change = keyring
            .keys
            .iter()
            .map(|key| key.retired_at.unwrap_or(key.created_at).max(key.created_at))
            .max()
            .unwrap_or(Timestamp(0));
        Loaded {
            file_state,
            production: active(Audience::Production),
            sandbox: active(Audience::Sandbox),
            production_key_set: key_set(Audience::Production),
            sandbox_key_set: key_set(Audience::Sandbox),
            newest_change,
        }
    }
}

/// Signs documents with the active key of their audience.
pub struct Signer {
    source: KeyringSource,
    loaded: RwLock<Arc<Loaded>>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Signer").field("source", &self.source).finish_non_exhaustive()
    }
}

fn file_state(path: &Path) -> std::io::Result<(SystemTime, u64)> {
    let metadata = std::fs::metadata(path)?;
    Ok((metadata.modified()?, metadata.len()))
}

impl Signer {
    /// Reads the keyring from `source`; it must have an active key for
    /// every audience.
    pub fn open(source: KeyringSource) -> Result<Arc<Signer>, KeyringError> {
        let loaded = match &source {
            KeyringSource::File(path) => {
                let state = file_state(path)?;
                Loaded::of(&usable(Keyring::read(path)?)?, Some(state))
            }
            KeyringSource::Given(text) => Loaded::of(&usable(Keyring::parse(text)?)?, None),
        };
        Ok(Arc::new(Signer { source, loaded: RwLock::new(Arc::new(loaded)) }))
    }

    /// A signer over a keyring held in memory (tests, and one-off commands).
    pub fn of(keyring: &Keyring) -> Arc<Signer> {
        Arc::new(Signer {
            source: KeyringSource::Given(keyring.to_json()),
            loaded: RwLock::new(Arc::new(Loaded::of(keyring, None))),
        })
    }

    fn current(&self) -> Arc<Loaded> {
        Arc::clone(&self.loaded.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The detached JWS over the RFC 8785 canonical JSON of `document`,
    /// by the active key of `audience`.
    pub fn sign(&self, audience: Audience, document: &impl Serialize) -> Result<String, SigningError> {
        let payload = canonical_json(&serde_json::to_value(document)?);
        self.with_active(audience, |active| sign_detached(&active.key, &active.kid, payload.as_bytes()))
    }

    /// The Ed25519 signature of `payload` by the active key of `audience`,
    /// with that key's id: for signatures that are not JWS (webhooks').
    pub fn sign_bytes(&self, audience: Audience, payload: &[u8]) -> Result<(String, [u8; 64]), SigningError> {
        use ed25519_dalek::Signer as _;
        self.with_active(audience, |active| (active.kid.clone(), active.key.sign(payload).to_bytes()))
    }

    fn with_active<T>(&self, audience: Audience, sign: impl FnOnce(&ActiveKey) -> T) -> Result<T, SigningError> {
        let loaded = self.current();
        let active = match audience {
            Audience::Production => loaded.production.as_ref(),
            Audience::Sandbox => loaded.sandbox.as_ref(),
        }
        .ok_or(SigningError::NoActiveKey(audience.code()))?;
        Ok(sign(active))
    }

    /// The JWK Set of `audience`, serialized.
    pub fn key_set(&self, audience: Audience) -> Bytes {
        let loaded = self.current();
        match audience {
            Audience::Production => loaded.production_key_set.clone(),
            Audience::Sandbox => loaded.sandbox_key_set.clone(),
        }
    }

    /// When a key was last created or retired: the key sets' `Last-Modified`.
    pub fn key_sets_changed_at(&self) -> Timestamp {
        self.current().newest_change
    }

    /// Reads a keyring file again if it changed; `Ok(true)` when it did.
    pub fn reload_if_changed(&self) -> Result<bool, KeyringError> {
        let KeyringSource::File(path) = &self.source else { return Ok(false) };
        let state = file_state(path)?;
        if self.current().file_state == Some(state) {
            return Ok(false);
        }
        let loaded = Loaded::of(&usable(Keyring::read(path)?)?, Some(state));
        *self.loaded.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(loaded);
        Ok(true)
    }

    /// Spawns the task that keeps a file keyring current; it ends with the
    /// last holder of the signer.
    pub fn keep_reloaded(self: &Arc<Self>) {
        if matches!(self.source, KeyringSource::File(_)) {
            tokio::spawn(keep_reloaded(Arc::downgrade(self)));
        }
    }
}

fn usable(keyring: Keyring) -> Result<Keyring, KeyringError> {
    keyring.check_signs_for_every_audience()?;
    Ok(keyring)
}

async fn keep_reloaded(signer: Weak<Signer>) {
    let mut interval = tokio::time::interval(RELOAD_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        interval.tick().await;
        let Some(signer) = signer.upgrade() else { return };
        match signer.reload_if_changed() {
            Ok(true) => {
                failing = false;
                tracing::info!("the signing keyring changed; signing with its active keys");
            }
            Ok(false) => failing = false,
            Err(error) => {
                // Logged once per failing spell, not every interval.
                if !failing {
                    tracing::error!(%error, "the signing keyring cannot be read; the keys last read stay in use");
                }
                failing = true;
            }
        }
    }
}

/// The keyring in `path`, created with one active key per audience if there
/// is none yet. Concurrent first starts agree: the file is created by a
/// link that fails if another process created it first, whose keyring is
/// then read.
pub fn keyring_kept_in(path: &Path, now: Timestamp) -> Result<Keyring, KeyringError> {
    if path.exists() {
        return Keyring::read(path);
    }
    let seeds = [crate::keys::random_bytes::<32>()?, crate::keys::random_bytes::<32>()?];
    let keyring = Keyring::first(now, seeds);
    let partial = path.with_extension(format!("{}.new", std::process::id()));
    keyring.write(&partial)?;
    let linked = std::fs::hard_link(&partial, path);
    std::fs::remove_file(&partial)?;
    match linked {
        Ok(()) => Ok(keyring),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Keyring::read(path),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::jws::DetachedJws;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-24T10:00:00.000Z").expect("instant")
    }

    #[test]
    fn each_audience_signs_with_its_own_key_over_canonical_json() {
        let keyring = Keyring::first(now(), [[1; 32], [2; 32]]);
        let signer = Signer::of(&keyring);
        let document = serde_json::json!({ "b": 1, "a": [true, null] });
        let production = DetachedJws::parse(&signer.sign(Audience::Production, &document).expect("sign")).expect("jws");
        let sandbox = DetachedJws::parse(&signer.sign(Audience::Sandbox, &document).expect("sign")).expect("jws");
        assert_ne!(production.kid, sandbox.kid);
        let key = |kid: &str| keyring.keys.iter().find(|key| key.kid == kid).and_then(|key| key.verifying_key());
        let canonical = br#"{"a":[true,null],"b":1}"#;
        assert!(production.verifies(&key(&production.kid).expect("key"), canonical));
        assert!(!sandbox.verifies(&key(&production.kid).expect("key"), canonical));
    }

    #[test]
    fn a_changed_keyring_file_is_read_again_and_a_broken_one_keeps_the_old_keys() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("signing-keys.json");
        let mut keyring = keyring_kept_in(&path, now()).expect("created");
        assert_eq!(keyring_kept_in(&path, now()).expect("kept"), keyring, "a second start reads the first keyring");
        let signer = Signer::open(KeyringSource::File(path.clone())).expect("open");
        let kid_of = |signer: &Signer| {
            DetachedJws::parse(&signer.sign(Audience::Production, &1).expect("sign")).expect("jws").kid
        };
        let first = kid_of(&signer);
        assert!(!signer.reload_if_changed().expect("unchanged"));

        let second = keyring.generate(Audience::Production, [9; 32], now()).kid.clone();
        keyring.activate(&second).expect("activate");
        keyring.write(&path).expect("write");
        assert!(signer.reload_if_changed().expect("changed"));
        assert_eq!(kid_of(&signer), second);
        let key_set: KeySet = serde_json::from_slice(&signer.key_set(Audience::Production)).expect("key set");
        assert!(key_set.find(&first).is_some() && key_set.find(&second).is_some());

        std::fs::write(&path, "{ not json").expect("break");
        assert!(signer.reload_if_changed().is_err());
        assert_eq!(kid_of(&signer), second, "the keys last read stay in use");

        let mut without_sandbox = keyring.clone();
        without_sandbox.keys.retain(|key| key.audience == Audience::Production);
        without_sandbox.write(&path).expect("write");
        assert!(matches!(signer.reload_if_changed(), Err(KeyringError::NoActiveKey("sandbox"))));
        assert!(signer.sign(Audience::Sandbox, &1).is_ok(), "still signs with the keys last read");
        assert!(matches!(Signer::open(KeyringSource::File(path)), Err(KeyringError::NoActiveKey("sandbox"))));
    }
}
