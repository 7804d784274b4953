//! Sandbox keys: self-contained tokens, `lcc_sandbox_v1.EXPIRES.NONCE.SIGNATURE`,
//! signed with HMAC-SHA256 under a secret every replica shares.
//!
//! Nothing is stored when a sandbox key is issued, not even the e-mail
//! address: any replica checks a key by its signature and expiry alone.
//! Outside production the secret may be generated once and kept in the data
//! directory ([`secret_kept_in`]), so that keys survive a restart.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use read_model::hex::lower_hex;
use sha2::Sha256;

use super::{KeyKind, Principal, Scopes, random_bytes};
use crate::rate_limit::Client;

const PREFIX: &str = "lcc_sandbox_v1";

/// The file in the data directory that keeps a generated secret.
pub const SECRET_FILE: &str = "sandbox-key-secret";

/// The secret kept in `directory`, generated (32 random bytes, as hex) and
/// written with owner-only permissions the first time. Two processes that
/// start at once agree: only one creates the file, the other reads it.
pub fn secret_kept_in(directory: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::create_dir_all(directory)?;
    let path = directory.join(SECRET_FILE);
    let created = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path);
    match created {
        Ok(mut file) => {
            let secret = lower_hex(&random_bytes::<32>()?);
            file.write_all(secret.as_bytes())?;
            file.sync_all()?;
            Ok(secret.into_bytes())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            let mode = std::fs::metadata(&path)?.permissions().mode();
            if mode & 0o077 != 0 {
                tracing::warn!(path = %path.display(), mode = format!("{mode:o}"), "the sandbox key secret is readable by others");
            }
            let secret = std::fs::read_to_string(&path)?;
            let secret = secret.trim();
            if secret.is_empty() {
                return Err(std::io::Error::other(format!("{} is empty", path.display())));
            }
            Ok(secret.as_bytes().to_vec())
        }
        Err(error) => Err(error),
    }
}

/// Issues and checks sandbox keys.
#[derive(Clone)]
pub struct SandboxKeys {
    secret: Vec<u8>,
    /// Lifetime of a new key, in seconds.
    pub lifetime_seconds: u64,
    /// Requests per minute a sandbox key may make.
    pub rate_limit: u32,
}

impl std::fmt::Debug for SandboxKeys {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SandboxKeys")
            .field("secret", &"<redacted>")
            .field("lifetime_seconds", &self.lifetime_seconds)
            .field("rate_limit", &self.rate_limit)
            .finish()
    }
}

/// Why a presented sandbox key is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxKeyError {
    Malformed,
    BadSignature,
    Expired,
}

/// A newly issued sandbox key.
#[derive(Debug, Clone)]
pub struct IssuedSandboxKey {
    pub key: String,
    pub expires_at_unix: u64,
}

impl SandboxKeys {
    pub fn new(secret: &[u8], lifetime_seconds: u64, rate_limit: u32) -> SandboxKeys {
        SandboxKeys { secret: secret.to_vec(), lifetime_seconds, rate_limit }
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes keys of any length.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
    }

    /// Issues a key valid from `now_unix` for the configured lifetime.
    pub fn issue(&self, now_unix: u64) -> std::io::Result<IssuedSandboxKey> {
        let expires_at_unix = now_unix + self.lifetime_seconds;
        let nonce = lower_hex(&random_bytes::<12>()?);
        let unsigned = format!("{PREFIX}.{expires_at_unix}.{nonce}");
        let mut mac = self.mac();
        mac.update(unsigned.as_bytes());
        let signature = lower_hex(&mac.finalize().into_bytes());
        Ok(IssuedSandboxKey { key: format!("{unsigned}.{signature}"), expires_at_unix })
    }

    /// Whether `key` looks like a sandbox key at all.
    pub fn is_sandbox_key(key: &str) -> bool {
        key.starts_with("lcc_sandbox_")
    }

    /// Checks a sandbox key and returns its principal.
    ///
    /// The signature covers the key's text as presented, and is read as
    /// lowercase hex only, so a key verifies in the one spelling it was
    /// issued in: `01100` for `1100`, or an uppercase signature, is another
    /// text for the same principal, and is refused.
    pub fn verify(&self, key: &str, now_unix: u64) -> Result<Principal, SandboxKeyError> {
        let (unsigned, signature) = key.rsplit_once('.').ok_or(SandboxKeyError::Malformed)?;
        let mut parts = unsigned.split('.');
        let (Some(PREFIX), Some(expires), Some(nonce), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(SandboxKeyError::Malformed);
        };
        let expires: u64 = expires.parse().map_err(|_| SandboxKeyError::Malformed)?;
        let signature = decode_lowercase_hex(signature).ok_or(SandboxKeyError::Malformed)?;
        let mut mac = self.mac();
        mac.update(unsigned.as_bytes());
        mac.verify_slice(&signature).map_err(|_| SandboxKeyError::BadSignature)?;
        if expires <= now_unix {
            return Err(SandboxKeyError::Expired);
        }
        let key_id = format!("sandbox_{nonce}");
        Ok(Principal {
            kind: KeyKind::Sandbox,
            rate_client: Client::named(&key_id),
            key_id: key_id.into(),
            scopes: Scopes::all(),
            rate_limit: self.rate_limit,
            notification_filter: None,
        })
    }
}

/// The bytes of `text` written as lowercase hex digits, as [`hex`] writes them.
fn decode_lowercase_hex(text: &str) -> Option<Vec<u8>> {
    let digit = |byte: u8| match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes.chunks_exact(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_key_verifies_until_it_expires() {
        let keys = SandboxKeys::new(b"secret", 100, 60);
        let issued = keys.issue(1_000).expect("issue");
        assert!(SandboxKeys::is_sandbox_key(&issued.key));
        let principal = keys.verify(&issued.key, 1_050).expect("valid");
        assert_eq!(principal.kind, KeyKind::Sandbox);
        assert_eq!(principal.scopes, Scopes::all());
        assert_eq!(keys.verify(&issued.key, 1_100), Err(SandboxKeyError::Expired));
    }

    #[test]
    fn a_generated_secret_is_kept_owner_only_and_reused() {
        let directory = tempfile::tempdir().expect("tempdir");
        let first = secret_kept_in(directory.path()).expect("generate");
        assert_eq!(first.len(), 64, "32 random bytes as hex");
        let mode = std::fs::metadata(directory.path().join(SECRET_FILE)).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(secret_kept_in(directory.path()).expect("read again"), first);
        let issued = SandboxKeys::new(&first, 100, 60).issue(1_000).expect("issue");
        let restarted = SandboxKeys::new(&secret_kept_in(directory.path()).expect("read"), 100, 60);
        assert!(restarted.verify(&issued.key, 1_000).is_ok(), "a key survives a restart");
        let other = tempfile::tempdir().expect("tempdir");
        assert_ne!(secret_kept_in(other.path()).expect("generate"), first);
    }

    #[test]
    fn a_key_signed_with_another_secret_altered_or_respelled_is_rejected() {
        let issued = SandboxKeys::new(b"secret", 100, 60).issue(1_000).expect("issue");
        assert_eq!(SandboxKeys::new(b"other", 100, 60).verify(&issued.key, 1_000), Err(SandboxKeyError::BadSignature));
        let extended = issued.key.replacen(".1100.", ".9999.", 1);
        assert_eq!(SandboxKeys::new(b"secret", 100, 60).verify(&extended, 1_000), Err(SandboxKeyError::BadSignature));
        let (unsigned, signature) = issued.key.rsplit_once('.').expect("a signed key");
        let other_spellings = [
            issued.key.replacen(".1100.", ".01100.", 1),
            issued.key.replacen(".1100.", ".+1100.", 1),
            format!("{unsigned}.{}", signature.to_uppercase()),
        ];
        for spelling in other_spellings {
            assert!(SandboxKeys::new(b"secret", 100, 60).verify(&spelling, 1_000).is_err(), "{spelling}");
        }
        for malformed in ["lcc_sandbox_v1", "lcc_sandbox_v1.x.y.z", "lcc_sandbox_v1.1.a.zz", "lcc_sandbox_v1.1.a.b.c"] {
            assert_eq!(
                SandboxKeys::new(b"secret", 100, 60).verify(malformed, 0),
                Err(SandboxKeyError::Malformed),
                "{malformed}"
            );
        }
    }
}
