//! The port for production API keys: what the operator's key commands write
//! and what the query API looks up, kept in the configured store so that
//! every replica on that store sees the same keys.
//!
//! Only a key's SHA-256 is stored, never the key. Scopes travel as their
//! names: this crate does not know what a scope grants, the query API does.
//! Keys are not documents and belong to no model version: a rebuild keeps
//! them.

use async_trait::async_trait;

use crate::records::StoreError;

/// A stored production key (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The SHA-256 of the key, as lower-case hexadecimal.
    pub key_hash: String,
    /// A stable, non-secret id, for operators, logs and rate limits.
    pub key_id: String,
    pub partner: String,
    /// Scope names, comma-separated (`rights:read,bulk:read`).
    pub scopes: String,
    pub rate_limit_per_minute: u32,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    /// What the key's notifications are limited to, as the query API spells
    /// it (`works:…` or `parties:…`); `None` for every notification of its
    /// audience. Stored beside the key, and set with it.
    pub notification_filter: Option<String>,
}

/// Production keys in a store.
#[async_trait]
pub trait ApiKeys: Send + Sync {
    /// Stores a new key. A key whose hash or id is already stored is refused
    /// with [`StoreError::Corrupt`], which a random key never meets.
    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<(), StoreError>;

    /// Every stored key, revoked ones included, oldest first.
    async fn api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError>;

    /// The key with this hash, if one is stored.
    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>, StoreError>;

    /// Marks the key with this id revoked at `at_ms`; a key revoked before
    /// keeps its first revocation time. False when there is no such key.
    async fn revoke_api_key(&self, key_id: &str, at_ms: i64) -> Result<bool, StoreError>;
}
