//! Webhook subscriptions on the embedded backend ([`Webhooks`]), in the
//! operator's file beside the keys (`api-keys.sqlite`).
//!
//! Every process on the directory shares the file, so the lease is taken by
//! one conditional `UPDATE`, which SQLite applies atomically: of two
//! replicas claiming a free subscription at once, one changes the row.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use crate::store::StoreError;
use crate::webhooks::{ATTEMPTS_KEPT, WebhookAttempt, WebhookRecord, WebhookSubscription, Webhooks};

const SELECT: &str = "SELECT webhook_subscriptions.id, key_id, endpoint, created_at_ms, enabled, resumed_at_ms, \
                      state FROM webhook_subscriptions JOIN webhook_deliveries USING (id)";

fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<WebhookRecord> {
    Ok(WebhookRecord {
        subscription: WebhookSubscription {
            id: row.get(0)?,
            key_id: row.get(1)?,
            endpoint: row.get(2)?,
            created_at_ms: row.get(3)?,
            enabled: row.get(4)?,
            resumed_at_ms: row.get(5)?,
        },
        state: row.get(6)?,
    })
}

/// Single-row statements on a small file; they run inline, as the keys' do.
#[async_trait]
impl Webhooks for SqliteStore {
    async fn insert_webhook(&self, subscription: &WebhookSubscription) -> Result<(), StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let transaction = connection.unchecked_transaction()?;
            transaction.execute(
                "INSERT INTO webhook_subscriptions (id, key_id, endpoint, created_at_ms, enabled, resumed_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    subscription.id,
                    subscription.key_id,
                    subscription.endpoint,
                    subscription.created_at_ms,
                    subscription.enabled,
                    subscription.resumed_at_ms
                ],
            )?;
            transaction.execute(
                "INSERT INTO webhook_deliveries (id, state, lease_owner, lease_until_ms) VALUES (?1, '', '', 0)",
                [&subscription.id],
            )?;
            transaction.commit()
        })
    }

    async fn webhooks(&self) -> Result<Vec<WebhookRecord>, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let mut statement = connection.prepare_cached(&format!("{SELECT} ORDER BY created_at_ms, id"))?;
            statement.query_map([], record)?.collect()
        })
    }

    async fn webhook(&self, id: &str) -> Result<Option<WebhookRecord>, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let mut statement = connection.prepare_cached(&format!("{SELECT} WHERE id = ?1"))?;
            statement.query_row([id], record).optional()
        })
    }

    async fn set_webhook_enabled(&self, id: &str, enabled: bool, resumed_at_ms: i64) -> Result<bool, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let changed = connection.execute(
                "UPDATE webhook_subscriptions SET enabled = ?2, resumed_at_ms = ?3 WHERE id = ?1",
                params![id, enabled, resumed_at_ms],
            )?;
            Ok(changed == 1)
        })
    }

    async fn remove_webhook(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let transaction = connection.unchecked_transaction()?;
            let removed = transaction.execute("DELETE FROM webhook_subscriptions WHERE id = ?1", [id])?;
            transaction.execute("DELETE FROM webhook_deliveries WHERE id = ?1", [id])?;
            transaction.execute("DELETE FROM webhook_attempts WHERE id = ?1", [id])?;
            transaction.commit()?;
            Ok(removed == 1)
        })
    }

    async fn claim_webhook(&self, id: &str, owner: &str, now_ms: i64, until_ms: i64) -> Result<bool, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let changed = connection.execute(
                "UPDATE webhook_deliveries SET lease_owner = ?2, lease_until_ms = ?4 \
                 WHERE id = ?1 AND (lease_owner = ?2 OR lease_until_ms < ?3)",
                params![id, owner, now_ms, until_ms],
            )?;
            Ok(changed == 1)
        })
    }

    async fn release_webhook(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            connection.execute(
                "UPDATE webhook_deliveries SET lease_owner = '', lease_until_ms = 0 WHERE id = ?1 AND lease_owner = ?2",
                params![id, owner],
            )?;
            Ok(())
        })
    }

    async fn save_webhook_state(&self, id: &str, owner: &str, state: &str) -> Result<bool, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let changed = connection.execute(
                "UPDATE webhook_deliveries SET state = ?3 WHERE id = ?1 AND lease_owner = ?2",
                params![id, owner, state],
            )?;
            Ok(changed == 1)
        })
    }

    async fn record_webhook_attempt(&self, id: &str, attempt: &WebhookAttempt) -> Result<(), StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let transaction = connection.unchecked_transaction()?;
            transaction.execute(
                "INSERT INTO webhook_attempts (id, at_ms, record) VALUES (?1, ?2, ?3)",
                params![id, attempt.at_ms, attempt.record],
            )?;
            transaction.execute(
                "DELETE FROM webhook_attempts WHERE id = ?1 AND rowid NOT IN \
                 (SELECT rowid FROM webhook_attempts WHERE id = ?1 ORDER BY at_ms DESC, rowid DESC LIMIT ?2)",
                params![id, ATTEMPTS_KEPT],
            )?;
            transaction.commit()
        })
    }

    async fn webhook_attempts(&self, id: &str, limit: u32) -> Result<Vec<WebhookAttempt>, StoreError> {
        self.inner.api_keys.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT at_ms, record FROM webhook_attempts WHERE id = ?1 ORDER BY at_ms DESC, rowid DESC LIMIT ?2",
            )?;
            statement
                .query_map(params![id, limit], |row| Ok(WebhookAttempt { at_ms: row.get(0)?, record: row.get(1)? }))?
                .collect()
        })
    }
}
