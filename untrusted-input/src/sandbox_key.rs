//! Sandbox API keys (`SandboxKeys::verify`), as `x-api-key` carries them.

use std::sync::OnceLock;

use query_api::keys::sandbox::{SandboxKeyError, SandboxKeys};

const SECRET: &[u8] = b"the secret the fuzzed keys are signed with";
/// The instant keys are checked at: seeds are issued a day before it.
const NOW_UNIX: u64 = 1_790_000_000;

fn keys() -> &'static SandboxKeys {
    static KEYS: OnceLock<SandboxKeys> = OnceLock::new();
    KEYS.get_or_init(|| SandboxKeys::new(SECRET, 30 * 86_400, 60))
}

/// Checking never panics, and a key verifies only in the one form it was
/// issued in: `lcc_sandbox_v1`, its expiry in plain decimal, its nonce,
/// and its signature in lowercase hex. Another spelling of the same
/// values would be another key string for one principal. A verified key
/// names its nonce, and is refused as expired from its expiry on.
pub fn check(input: &[u8]) {
    let key = String::from_utf8_lossy(input);
    let Ok(principal) = keys().verify(&key, NOW_UNIX) else { return };
    let parts: Vec<&str> = key.split('.').collect();
    let [_, expires, nonce, signature] = parts[..] else { panic!("a verified key has other parts: {key:?}") };
    let expires_at: u64 = expires.parse().expect("a verified key's expiry is a number");
    assert_eq!(expires, expires_at.to_string(), "a verified key's expiry is not in plain decimal: {key:?}");
    assert!(
        signature.len() == 64 && signature.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)),
        "a verified key's signature is not lowercase hex: {key:?}"
    );
    assert_eq!(*principal.key_id, format!("sandbox_{nonce}"));
    assert_eq!(keys().verify(&key, expires_at), Err(SandboxKeyError::Expired), "a key outlives its expiry");
}

/// Keys issued the day before the instant they are checked at.
pub fn seeds() -> Vec<Vec<u8>> {
    (0..8).map(|_| keys().issue(NOW_UNIX - 86_400).expect("a sandbox key").key.into_bytes()).collect()
}
