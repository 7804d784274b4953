//! Production keys: issued by the operator, shown once, stored as SHA-256
//! hashes in `api-keys.sqlite` in the data directory (DDL:
//! `schemas/sqlite/api-keys.sql`).
//!
//! The API keeps every key in memory and reloads the file every few seconds,
//! so a key issued or revoked by the operator command reaches running
//! replicas on the same store within that interval.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use super::{KeyKind, Principal, Scopes, hex, random_bytes, sha256_hex};

const DDL: &str = include_str!("../../../schemas/sqlite/api-keys.sql");
const RELOAD_INTERVAL: Duration = Duration::from_secs(5);

/// A stored production key (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    pub key_id: String,
    pub partner: String,
    pub scopes: Scopes,
    pub rate_limit: u32,
    pub created_at_ms: i64,
    pub revoked: bool,
}

/// Why the key store failed.
#[derive(Debug, thiserror::Error)]
pub enum KeyStoreError {
    #[error("the key store is unavailable: {0}")]
    Unavailable(#[from] rusqlite::Error),
    #[error("cannot generate a key: {0}")]
    Randomness(#[from] std::io::Error),
    #[error("the key store holds an invalid row: {0}")]
    Corrupt(String),
}

/// The production keys of one data directory.
#[derive(Debug)]
pub struct KeyStore {
    path: PathBuf,
    loaded: RwLock<Option<(HashMap<String, StoredKey>, Instant)>>,
}

impl KeyStore {
    /// Opens (creating) the key file in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<KeyStore, KeyStoreError> {
        std::fs::create_dir_all(data_dir)?;
        let store = KeyStore { path: data_dir.join("api-keys.sqlite"), loaded: RwLock::new(None) };
        store.connection()?.execute_batch(DDL)?;
        Ok(store)
    }

    fn connection(&self) -> Result<Connection, KeyStoreError> {
        let connection = Connection::open(&self.path)?;
        connection.busy_timeout(Duration::from_secs(5))?;
        Ok(connection)
    }

    /// Issues a key and returns it with its record. The key is not stored.
    pub fn issue(&self, partner: &str, scopes: Scopes, rate_limit: u32) -> Result<(String, StoredKey), KeyStoreError> {
        let key = format!("lcc_live_{}", hex(&random_bytes::<24>()?));
        let hash = sha256_hex(&key);
        let record = StoredKey {
            key_id: format!("live_{}", &hash[..12]),
            partner: partner.to_owned(),
            scopes,
            rate_limit,
            created_at_ms: read_model::calendar::Timestamp::now().0,
            revoked: false,
        };
        self.connection()?.execute(
            "INSERT INTO api_keys (key_hash, key_id, partner, scopes, rate_limit_per_minute, created_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![hash, record.key_id, record.partner, scopes.to_list(), rate_limit, record.created_at_ms],
        )?;
        self.loaded.write().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        Ok((key, record))
    }

    /// Every key record, oldest first.
    pub fn list(&self) -> Result<Vec<StoredKey>, KeyStoreError> {
        let mut keys: Vec<StoredKey> = self.load_by_hash()?.into_values().collect();
        keys.sort_by(|left, right| (left.created_at_ms, &left.key_id).cmp(&(right.created_at_ms, &right.key_id)));
        Ok(keys)
    }

    /// Revokes a key by id; false when there is no such key.
    pub fn revoke(&self, key_id: &str) -> Result<bool, KeyStoreError> {
        let connection = self.connection()?;
        connection.execute(
            "UPDATE api_keys SET revoked_at_ms = ?2 WHERE key_id = ?1 AND revoked_at_ms IS NULL",
            params![key_id, read_model::calendar::Timestamp::now().0],
        )?;
        let exists = connection
            .query_row("SELECT 1 FROM api_keys WHERE key_id = ?1", [key_id], |_| Ok(()))
            .optional()?
            .is_some();
        self.loaded.write().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        Ok(exists)
    }

    /// The principal of a presented production key, if it is known and not revoked.
    pub fn authenticate(&self, key: &str) -> Result<Option<Principal>, KeyStoreError> {
        let hash = sha256_hex(key);
        {
            let loaded = self.loaded.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((keys, at)) = loaded.as_ref()
                && at.elapsed() < RELOAD_INTERVAL
            {
                return Ok(keys.get(&hash).and_then(principal_of));
            }
        }
        Ok(self.load_by_hash()?.get(&hash).and_then(principal_of))
    }

    fn load_by_hash(&self) -> Result<HashMap<String, StoredKey>, KeyStoreError> {
        let keys = self.read_all()?;
        *self.loaded.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((keys.clone(), Instant::now()));
        Ok(keys)
    }

    fn read_all(&self) -> Result<HashMap<String, StoredKey>, KeyStoreError> {
        let connection = self.connection()?;
        let mut statement = connection.prepare(
            "SELECT key_hash, key_id, partner, scopes, rate_limit_per_minute, created_at_ms, revoked_at_ms FROM api_keys",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, u32>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, Option<i64>>(6)?,
            ))
        })?;
        let mut keys = HashMap::new();
        for row in rows {
            let (hash, key_id, partner, scopes, rate_limit, created_at_ms, revoked_at) = row?;
            let scopes = Scopes::parse_list(&scopes).map_err(KeyStoreError::Corrupt)?;
            keys.insert(
                hash,
                StoredKey { key_id, partner, scopes, rate_limit, created_at_ms, revoked: revoked_at.is_some() },
            );
        }
        Ok(keys)
    }
}

fn principal_of(key: &StoredKey) -> Option<Principal> {
    (!key.revoked).then(|| Principal {
        kind: KeyKind::Production,
        key_id: key.key_id.clone(),
        scopes: key.scopes,
        rate_limit: key.rate_limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Scope;

    #[test]
    fn issued_keys_authenticate_until_revoked_and_only_hashes_are_stored() {
        let directory = tempfile::tempdir().expect("tempdir");
        let store = KeyStore::open(directory.path()).expect("open");
        let scopes: Scopes = [Scope::RightsRead].into_iter().collect();
        let (key, record) = store.issue("Acme Music", scopes, 120).expect("issue");
        assert!(key.starts_with("lcc_live_"));
        let principal = store.authenticate(&key).expect("read").expect("known key");
        assert_eq!((principal.scopes, principal.rate_limit, principal.kind), (scopes, 120, KeyKind::Production));
        assert_eq!(store.authenticate("lcc_live_unknown").expect("read"), None);

        let file = std::fs::read(directory.path().join("api-keys.sqlite")).expect("file");
        assert!(!file.windows(key.len()).any(|window| window == key.as_bytes()), "the key itself is never stored");

        assert!(store.revoke(&record.key_id).expect("revoke"));
        assert_eq!(store.authenticate(&key).expect("read"), None);
        assert!(!store.revoke("live_nope").expect("revoke"));
        assert!(store.list().expect("list")[0].revoked);
    }
}
