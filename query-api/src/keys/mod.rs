//! API keys: who is calling, with which scopes and quota.
//!
//! Two kinds, told apart by prefix:
//! - production keys (`lcc_live_…`) are issued by an operator command, shown
//!   once, and stored only as SHA-256 hashes in the configured store
//!   ([`production`]);
//! - sandbox keys (`lcc_sandbox_…`) are self-contained tokens signed with a
//!   shared secret ([`sandbox`]), so any replica can check them without a
//!   shared write.

pub mod memo;
pub mod notification_filter;
pub mod production;
pub mod sandbox;

use std::fmt;
use std::sync::Arc;

use axum::http::HeaderName;
use serde::{Deserialize, Serialize};

use self::notification_filter::NotificationFilter;
use crate::rate_limit::Client;

/// The header a key travels in. A name made once: finding a header by a
/// string parses the string on every request.
pub const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");

/// The scopes of the specification, one per endpoint family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "rights:read")]
    RightsRead,
    #[serde(rename = "rights:verify")]
    RightsVerify,
    #[serde(rename = "licenses:read")]
    LicensesRead,
    #[serde(rename = "metadata:read")]
    MetadataRead,
    #[serde(rename = "bulk:read")]
    BulkRead,
    #[serde(rename = "evidence:read")]
    EvidenceRead,
    /// Not in the specification: the notification feed.
    #[serde(rename = "notifications:read")]
    NotificationsRead,
}

impl Scope {
    pub const ALL: [Scope; 7] = [
        Scope::RightsRead,
        Scope::RightsVerify,
        Scope::LicensesRead,
        Scope::MetadataRead,
        Scope::BulkRead,
        Scope::EvidenceRead,
        Scope::NotificationsRead,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scope::RightsRead => "rights:read",
            Scope::RightsVerify => "rights:verify",
            Scope::LicensesRead => "licenses:read",
            Scope::MetadataRead => "metadata:read",
            Scope::BulkRead => "bulk:read",
            Scope::EvidenceRead => "evidence:read",
            Scope::NotificationsRead => "notifications:read",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.name() == name.trim())
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub fn all() -> Scopes {
        Scope::ALL.into_iter().collect()
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |scope| self.contains(*scope))
    }

    /// Parses a comma-separated list; unknown names are an error.
    pub fn parse_list(list: &str) -> Result<Scopes, String> {
        list.split(',')
            .filter(|name| !name.trim().is_empty())
            .map(|name| Scope::parse(name).ok_or_else(|| format!("unknown scope {:?}", name.trim())))
            .collect()
    }

    pub fn to_list(self) -> String {
        self.iter().map(Scope::name).collect::<Vec<_>>().join(",")
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(scopes: I) -> Scopes {
        Scopes(scopes.into_iter().fold(0, |bits, scope| bits | scope.bit()))
    }
}

/// Which population a key may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Production,
    Sandbox,
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub kind: KeyKind,
    /// A stable, non-secret id of the key (for rate limits and logs),
    /// shared: a principal is cloned on every request.
    pub key_id: Arc<str>,
    /// The rate limits' client of `key_id`, hashed once where the principal is made.
    pub rate_client: Client,
    pub scopes: Scopes,
    /// Requests per minute.
    pub rate_limit: u32,
    /// What the key's notifications are limited to; `None` for every one of its audience.
    pub notification_filter: Option<Arc<NotificationFilter>>,
}

/// The SHA-256 of a secret, as lowercase hex.
pub fn sha256_hex(secret: &str) -> String {
    use sha2::Digest;
    read_model::hex::lower_hex(&sha2::Sha256::digest(secret.as_bytes()))
}

/// Random bytes from the operating system.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    use std::io::Read;
    let mut bytes = [0_u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_lists_round_trip_and_reject_unknown_names() {
        let scopes = Scopes::parse_list("rights:read, bulk:read").expect("valid");
        assert!(scopes.contains(Scope::RightsRead) && scopes.contains(Scope::BulkRead));
        assert!(!scopes.contains(Scope::EvidenceRead));
        assert_eq!(scopes.to_list(), "rights:read,bulk:read");
        assert!(Scopes::parse_list("rights:read,rights:write").is_err());
        assert_eq!(Scopes::all().iter().count(), 7);
    }

    #[test]
    fn key_hashes_are_lower_case_hexadecimal_sha256() {
        assert_eq!(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
