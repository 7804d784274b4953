//! The statements on the catalog keyspace (model versions, the active
//! version, the schema revision, production keys, the catalog clock), and
//! the partition key values of its single-partition tables.

use super::{Access, write_or_read};

/// A statement on the catalog keyspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatalogStatement {
    SelectVersions,
    InsertVersion,
    DeleteVersion,
    SelectActiveVersion,
    UpsertActiveVersion,
    SelectSchemaRevision,
    UpsertSchemaRevision,
    SelectApiKeys,
    SelectApiKey,
    InsertApiKey,
    RevokeApiKey,
    SelectNotificationFilters,
    SelectNotificationFilter,
    InsertNotificationFilter,
    SelectCatalogClock,
    AdvanceCatalogClock,
    InsertWebhook,
    SelectWebhooks,
    UpdateWebhook,
    DeleteWebhook,
    InsertWebhookDelivery,
    SelectWebhookDelivery,
    DeleteWebhookDelivery,
    TakeWebhookLease,
    KeepWebhookLease,
    SaveWebhookState,
    InsertWebhookAttempt,
    SelectWebhookAttempts,
    DeleteWebhookAttempts,
}

impl CatalogStatement {
    pub const ALL: [CatalogStatement; 29] = [
        CatalogStatement::SelectVersions,
        CatalogStatement::InsertVersion,
        CatalogStatement::DeleteVersion,
        CatalogStatement::SelectActiveVersion,
        CatalogStatement::UpsertActiveVersion,
        CatalogStatement::SelectSchemaRevision,
        CatalogStatement::UpsertSchemaRevision,
        CatalogStatement::SelectApiKeys,
        CatalogStatement::SelectApiKey,
        CatalogStatement::InsertApiKey,
        CatalogStatement::RevokeApiKey,
        CatalogStatement::SelectNotificationFilters,
        CatalogStatement::SelectNotificationFilter,
        CatalogStatement::InsertNotificationFilter,
        CatalogStatement::SelectCatalogClock,
        CatalogStatement::AdvanceCatalogClock,
        CatalogStatement::InsertWebhook,
        CatalogStatement::SelectWebhooks,
        CatalogStatement::UpdateWebhook,
        CatalogStatement::DeleteWebhook,
        CatalogStatement::InsertWebhookDelivery,
        CatalogStatement::SelectWebhookDelivery,
        CatalogStatement::DeleteWebhookDelivery,
        CatalogStatement::TakeWebhookLease,
        CatalogStatement::KeepWebhookLease,
        CatalogStatement::SaveWebhookState,
        CatalogStatement::InsertWebhookAttempt,
        CatalogStatement::SelectWebhookAttempts,
        CatalogStatement::DeleteWebhookAttempts,
    ];

    /// Reads of a whole partition that can grow without bound are read in pages.
    pub fn access(self) -> Access {
        match self {
            CatalogStatement::SelectVersions
            | CatalogStatement::SelectApiKeys
            | CatalogStatement::SelectNotificationFilters
            | CatalogStatement::SelectWebhooks => Access::ReadInPages,
            _ => write_or_read(&self.text("k")),
        }
    }

    /// The CQL of this statement on the catalog keyspace `keyspace`.
    pub fn text(self, keyspace: &str) -> String {
        use CatalogStatement::*;
        match self {
            SelectVersions => format!("SELECT version FROM {keyspace}.model_versions WHERE catalog = ?"),
            InsertVersion => {
                format!("INSERT INTO {keyspace}.model_versions (catalog, version) VALUES (?, ?) USING TIMESTAMP ?")
            }
            DeleteVersion => {
                format!("DELETE FROM {keyspace}.model_versions USING TIMESTAMP ? WHERE catalog = ? AND version = ?")
            }
            SelectActiveVersion => format!("SELECT version FROM {keyspace}.active_model_version WHERE singleton = ?"),
            UpsertActiveVersion => format!(
                "INSERT INTO {keyspace}.active_model_version (singleton, version) VALUES (?, ?) USING TIMESTAMP ?"
            ),
            SelectSchemaRevision => format!("SELECT revision FROM {keyspace}.schema_revision WHERE singleton = ?"),
            UpsertSchemaRevision => {
                format!("INSERT INTO {keyspace}.schema_revision (singleton, revision) VALUES (?, ?) USING TIMESTAMP ?")
            }
            SelectApiKeys => format!("SELECT {API_KEY_COLUMNS} FROM {keyspace}.api_keys WHERE catalog = ?"),
            SelectApiKey => {
                format!("SELECT {API_KEY_COLUMNS} FROM {keyspace}.api_keys WHERE catalog = ? AND key_hash = ?")
            }
            InsertApiKey => format!(
                "INSERT INTO {keyspace}.api_keys (catalog, {API_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            RevokeApiKey => format!(
                "INSERT INTO {keyspace}.api_keys (catalog, key_hash, revoked_at_ms) VALUES (?, ?, ?) USING TIMESTAMP ?"
            ),
            SelectNotificationFilters => {
                format!("SELECT key_id, filter FROM {keyspace}.notification_filters WHERE catalog = ?")
            }
            SelectNotificationFilter => {
                format!("SELECT filter FROM {keyspace}.notification_filters WHERE catalog = ? AND key_id = ?")
            }
            InsertNotificationFilter => format!(
                "INSERT INTO {keyspace}.notification_filters (catalog, key_id, filter) VALUES (?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            SelectCatalogClock => format!("SELECT stamp FROM {keyspace}.catalog_clock WHERE singleton = ?"),
            AdvanceCatalogClock => {
                format!("INSERT INTO {keyspace}.catalog_clock (singleton, stamp) VALUES (?, ?) USING TIMESTAMP ?")
            }
            InsertWebhook => format!(
                "INSERT INTO {keyspace}.webhook_subscriptions (catalog, {WEBHOOK_COLUMNS}) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
            ),
            SelectWebhooks => {
                format!("SELECT {WEBHOOK_COLUMNS} FROM {keyspace}.webhook_subscriptions WHERE catalog = ?")
            }
            UpdateWebhook => format!(
                "UPDATE {keyspace}.webhook_subscriptions USING TIMESTAMP ? SET enabled = ?, resumed_at_ms = ? \
                 WHERE catalog = ? AND id = ?"
            ),
            DeleteWebhook => {
                format!("DELETE FROM {keyspace}.webhook_subscriptions USING TIMESTAMP ? WHERE catalog = ? AND id = ?")
            }
            // The delivery rows are written by lightweight transactions only,
            // which take no `USING TIMESTAMP`: mixing them with plain writes
            // of one row would let a plain write's timestamp undo a transaction.
            InsertWebhookDelivery => format!(
                "INSERT INTO {keyspace}.webhook_deliveries (id, state, lease_owner, lease_until_ms) \
                 VALUES (?, '', '', 0) IF NOT EXISTS"
            ),
            SelectWebhookDelivery => format!("SELECT state FROM {keyspace}.webhook_deliveries WHERE id = ?"),
            DeleteWebhookDelivery => format!("DELETE FROM {keyspace}.webhook_deliveries WHERE id = ? IF EXISTS"),
            TakeWebhookLease => format!(
                "UPDATE {keyspace}.webhook_deliveries SET lease_owner = ?, lease_until_ms = ? \
                 WHERE id = ? IF lease_until_ms < ?"
            ),
            KeepWebhookLease => {
                format!("UPDATE {keyspace}.webhook_deliveries SET lease_until_ms = ? WHERE id = ? IF lease_owner = ?")
            }
            SaveWebhookState => {
                format!("UPDATE {keyspace}.webhook_deliveries SET state = ? WHERE id = ? IF lease_owner = ?")
            }
            InsertWebhookAttempt => format!(
                "INSERT INTO {keyspace}.webhook_attempts (id, at_ms, attempt_id, record) VALUES (?, ?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            SelectWebhookAttempts => {
                format!("SELECT at_ms, record FROM {keyspace}.webhook_attempts WHERE id = ? LIMIT ?")
            }
            DeleteWebhookAttempts => {
                format!("DELETE FROM {keyspace}.webhook_attempts USING TIMESTAMP ? WHERE id = ?")
            }
        }
    }
}

/// The partition key value of the one partition holding all model versions.
pub const VERSIONS_PARTITION: &str = "read-model";
/// The partition key value of the active version's row.
pub const ACTIVE_ROW: &str = "active";
/// The partition key value of the catalog clock's row.
pub const CLOCK_ROW: &str = "clock";
/// The partition key value of the schema revision's row.
pub const REVISION_ROW: &str = "schema";
/// The partition key value of the one partition holding all production keys.
pub const API_KEYS_PARTITION: &str = "api-keys";
/// The partition key value of the one partition holding all webhook subscriptions.
pub const WEBHOOKS_PARTITION: &str = "webhooks";
/// The columns of a webhook subscription, in the order of [`crate::webhooks::WebhookSubscription`].
const WEBHOOK_COLUMNS: &str = "id, key_id, endpoint, created_at_ms, enabled, resumed_at_ms";
/// The columns of a production key, in the order of [`crate::api_keys::ApiKeyRecord`].
const API_KEY_COLUMNS: &str = "key_hash, key_id, partner, scopes, rate_limit_per_minute, created_at_ms, revoked_at_ms";
