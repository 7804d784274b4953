//! Production keys on the embedded backend: the file `api-keys.sqlite` in
//! the store's directory (DDL: `schemas/sqlite/api-keys.sql`), beside the
//! catalog, so that every process on the directory sees the same keys. The
//! webhook subscriptions live in the same file (`webhooks`).
//!
//! One connection, opened on first use and kept: the operator's commands
//! write a row now and then, and the API reads the table four times a second.
//! It must not touch the catalog or any model version. [`SqliteStore`]
//! implements [`ApiKeys`] over it.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use super::errors::from_sqlite;
use crate::api_keys::{ApiKeyRecord, ApiKeys};
use crate::store::StoreError;

const DDL: &str = include_str!("../../../schemas/sqlite/api-keys.sql");

const COLUMNS: &str = "key_hash, key_id, partner, scopes, rate_limit_per_minute, created_at_ms, revoked_at_ms";

/// A key's columns and its notification filter, if it has one.
const SELECT: &str = "SELECT key_hash, api_keys.key_id, partner, scopes, rate_limit_per_minute, created_at_ms, \
                      revoked_at_ms, filter FROM api_keys LEFT JOIN notification_filters USING (key_id)";

/// The key file of one store directory.
#[derive(Debug)]
pub(super) struct ApiKeyFile {
    path: PathBuf,
    connection: Mutex<Option<Connection>>,
}

impl ApiKeyFile {
    pub(super) fn new(path: PathBuf) -> ApiKeyFile {
        ApiKeyFile { path, connection: Mutex::new(None) }
    }

    /// Runs `work` on the connection, opening it (and creating the table) first when needed.
    pub(super) fn with_connection<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut slot = self.connection.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            let connection = Connection::open(&self.path).map_err(from_sqlite)?;
            connection.busy_timeout(Duration::from_secs(5)).map_err(from_sqlite)?;
            connection.execute_batch(DDL).map_err(from_sqlite)?;
            *slot = Some(connection);
        }
        let connection = slot.as_ref().ok_or_else(|| StoreError::Unavailable("key store connection lost".into()))?;
        let result = work(connection).map_err(from_sqlite);
        if matches!(result, Err(StoreError::Unavailable(_))) {
            // Reopen on next use: the failure may have left the connection unusable.
            *slot = None;
        }
        result
    }

    pub(super) fn insert(&self, key: &ApiKeyRecord) -> Result<(), StoreError> {
        self.with_connection(|connection| {
            let transaction = connection.unchecked_transaction()?;
            if let Some(filter) = &key.notification_filter {
                transaction.execute(
                    "INSERT INTO notification_filters (key_id, filter) VALUES (?1, ?2)",
                    params![key.key_id, filter],
                )?;
            }
            transaction.execute(
                &format!("INSERT INTO api_keys ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                params![
                    key.key_hash,
                    key.key_id,
                    key.partner,
                    key.scopes,
                    key.rate_limit_per_minute,
                    key.created_at_ms,
                    key.revoked_at_ms
                ],
            )?;
            transaction.commit()
        })
    }

    pub(super) fn all(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        self.with_connection(|connection| {
            let mut statement =
                connection.prepare_cached(&format!("{SELECT} ORDER BY created_at_ms, api_keys.key_id"))?;
            statement.query_map([], record)?.collect()
        })
    }

    pub(super) fn by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(&format!("{SELECT} WHERE key_hash = ?1"))?;
            statement.query_row([key_hash], record).optional()
        })
    }

    pub(super) fn revoke(&self, key_id: &str, at_ms: i64) -> Result<bool, StoreError> {
        self.with_connection(|connection| {
            connection.execute(
                "UPDATE api_keys SET revoked_at_ms = ?2 WHERE key_id = ?1 AND revoked_at_ms IS NULL",
                params![key_id, at_ms],
            )?;
            let exists = connection.query_row("SELECT 1 FROM api_keys WHERE key_id = ?1", [key_id], |_| Ok(()));
            Ok(exists.optional()?.is_some())
        })
    }
}

fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<ApiKeyRecord> {
    Ok(ApiKeyRecord {
        key_hash: row.get(0)?,
        key_id: row.get(1)?,
        partner: row.get(2)?,
        scopes: row.get(3)?,
        rate_limit_per_minute: row.get(4)?,
        created_at_ms: row.get(5)?,
        revoked_at_ms: row.get(6)?,
        notification_filter: row.get(7)?,
    })
}

/// Key reads and writes are single-row statements on a small file; they run inline.
#[async_trait]
impl ApiKeys for SqliteStore {
    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<(), StoreError> {
        self.inner.api_keys.insert(key)
    }

    async fn api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        self.inner.api_keys.all()
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        self.inner.api_keys.by_hash(key_hash)
    }

    async fn revoke_api_key(&self, key_id: &str, at_ms: i64) -> Result<bool, StoreError> {
        self.inner.api_keys.revoke(key_id, at_ms)
    }
}
