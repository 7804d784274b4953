//! The text of every CQL statement the backend prepares, in one place.
//!
//! Each statement names one table of `schemas/cql/` and restricts its whole
//! partition key with bound values, so the driver routes it to a replica
//! that owns the partition (token awareness) and to the shard that owns it
//! (shard awareness), and each lookup is one partition read. Writes to a
//! model version carry `USING TIMESTAMP ?`, bound to the version of what
//! they write (see `timestamps`). The unit tests below check all of this
//! against the committed DDL.

mod catalog;

pub use self::catalog::{
    ACTIVE_ROW, API_KEYS_PARTITION, CLOCK_ROW, CatalogStatement, REVISION_ROW, VERSIONS_PARTITION, WEBHOOKS_PARTITION,
};
use super::schema::{CATALOG_CQL, MODEL_CQL, drop_keyspace, render};
use crate::documents::DocumentKind;

/// Declares the statements without a document kind once, so that the enum
/// and [`ModelStatement::all`], which prepares them, cannot drift apart.
macro_rules! model_statements {
    ($($statement:ident),* $(,)?) => {
        /// A statement on the tables of one model version keyspace.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ModelStatement {
            SelectDocument(DocumentKind),
            UpsertDocument(DocumentKind),
            DeleteDocument(DocumentKind),
            $($statement,)*
        }

        impl ModelStatement {
            /// Every statement, each document kind's included.
            pub fn all() -> Vec<ModelStatement> {
                let per_kind = DocumentKind::ALL.into_iter().flat_map(|kind| {
                    [ModelStatement::SelectDocument(kind), ModelStatement::UpsertDocument(kind), ModelStatement::DeleteDocument(kind)]
                });
                per_kind.chain([$(ModelStatement::$statement),*]).collect()
            }
        }
    };
}

model_statements!(
    SelectProvenance,
    UpsertProvenance,
    SelectIdentifiers,
    InsertIdentifier,
    DeleteIdentifier,
    SelectBucketCounts,
    SelectBulkRowIds,
    SelectBulkBodies,
    SelectBulkBodiesFrom,
    SelectBulkRowWriteTimes,
    SelectBulkRowsAfter,
    UpsertBulkRow,
    DeleteBulkRow,
    CountBucketRows,
    SelectBucketCount,
    WriteBucketCount,
    MarkBucket,
    SelectBucketMark,
    SelectBucketMarks,
    ClearBucketMark,
    SelectFixtures,
    UpsertFixture,
    DeleteFixture,
    SelectAggregates,
    UpsertAggregate,
    SelectPartyReferrers,
    InsertPartyReference,
    DeletePartyReference,
    SelectCheckpoints,
    UpsertCheckpoint,
    InsertChange,
    SelectChangesAfter,
    SelectChange,
    SelectFirstChange,
    SelectLastChange,
    DeleteChange,
    InsertChangeDay,
    SelectChangeDays,
    DeleteChangeDay,
    UpsertChangeHead,
    SelectChangeHead,
    SelectChangeHeads,
    WriteChangeHorizon,
    SelectChangeHorizon,
    InsertNotification,
    SelectNotificationsAfter,
    SelectLastNotification,
    DeleteNotificationDayRows,
    InsertNotificationDay,
    SelectNotificationDays,
    DeleteNotificationDay,
);

/// The text of every statement the backend can send: the committed DDL of
/// the catalog keyspace `catalog` and of the model version keyspace `model`
/// (rendered with `replication_factor`), the drop of a model version
/// keyspace, and every prepared statement on both. The end-to-end suite
/// checks with it that a real node executed each one in the run.
pub fn every_statement_text(catalog: &str, model: &str, replication_factor: u32) -> Vec<String> {
    let ddl = render(CATALOG_CQL, catalog, replication_factor)
        .into_iter()
        .chain(render(MODEL_CQL, model, replication_factor))
        .chain([drop_keyspace(model)]);
    let prepared = CatalogStatement::ALL
        .into_iter()
        .map(|statement| statement.text(catalog))
        .chain(ModelStatement::all().into_iter().map(|statement| statement.text(model)));
    ddl.chain(prepared).collect()
}

/// How a statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Write,
    /// A read of at most a page of rows (one row, or a `LIMIT`), in one
    /// request; reads may be executed speculatively.
    Read,
    /// A read that can return any number of rows (a whole partition: a
    /// party's referrers, a work's provenance), in pages, since ScyllaDB
    /// refuses an unpaged result past its size limit.
    ReadInPages,
}

/// A write, or a read in one request.
fn write_or_read(text: &str) -> Access {
    if text.starts_with("SELECT ") { Access::Read } else { Access::Write }
}

impl ModelStatement {
    /// Reads of a whole partition that can grow without bound are read in pages.
    pub fn access(self) -> Access {
        use ModelStatement::*;
        match self {
            SelectProvenance
            | SelectIdentifiers
            | SelectBucketCounts
            | SelectBucketMarks
            | SelectFixtures
            | SelectPartyReferrers
            | SelectCheckpoints
            | SelectChangeDays
            | SelectNotificationDays => Access::ReadInPages,
            _ => write_or_read(&self.text("k")),
        }
    }

    /// The CQL of this statement on the model version keyspace `keyspace`.
    pub fn text(self, keyspace: &str) -> String {
        use ModelStatement::*;
        match self {
            SelectDocument(kind) => format!("SELECT body FROM {keyspace}.{} WHERE id = ?", kind.table()),
            UpsertDocument(kind) => {
                format!("INSERT INTO {keyspace}.{} (id, body) VALUES (?, ?) USING TIMESTAMP ?", kind.table())
            }
            DeleteDocument(kind) => format!("DELETE FROM {keyspace}.{} USING TIMESTAMP ? WHERE id = ?", kind.table()),
            SelectProvenance => format!("SELECT body FROM {keyspace}.provenance_entries WHERE lcc_id = ?"),
            UpsertProvenance => format!(
                "INSERT INTO {keyspace}.provenance_entries (lcc_id, recorded_at, topic, aggregate_version, body) \
                 VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?"
            ),
            SelectIdentifiers => {
                format!("SELECT lcc_id FROM {keyspace}.identifier_index WHERE kind = ? AND code = ? AND audience = ?")
            }
            InsertIdentifier => format!(
                "INSERT INTO {keyspace}.identifier_index (kind, code, audience, lcc_id) VALUES (?, ?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            DeleteIdentifier => format!(
                "DELETE FROM {keyspace}.identifier_index USING TIMESTAMP ? \
                 WHERE kind = ? AND code = ? AND audience = ? AND lcc_id = ?"
            ),
            SelectBucketCounts => {
                format!("SELECT bucket, row_count FROM {keyspace}.bulk_bucket_counts WHERE audience = ?")
            }
            SelectBulkRowIds => {
                format!("SELECT lcc_id FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ? LIMIT ?")
            }
            SelectBulkBodies => {
                format!("SELECT body FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ? LIMIT ?")
            }
            SelectBulkBodiesFrom => format!(
                "SELECT body FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ? AND lcc_id >= ? LIMIT ?"
            ),
            SelectBulkRowWriteTimes => format!(
                "SELECT lcc_id, WRITETIME(body) FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ? AND lcc_id IN ?"
            ),
            SelectBulkRowsAfter => format!(
                "SELECT lcc_id, body FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ? AND lcc_id > ? LIMIT ?"
            ),
            UpsertBulkRow => format!(
                "INSERT INTO {keyspace}.bulk_rows (audience, bucket, lcc_id, body) VALUES (?, ?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            DeleteBulkRow => format!(
                "DELETE FROM {keyspace}.bulk_rows USING TIMESTAMP ? WHERE audience = ? AND bucket = ? AND lcc_id = ?"
            ),
            CountBucketRows => {
                format!("SELECT COUNT(*) FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ?")
            }
            SelectBucketCount => format!(
                "SELECT row_count, WRITETIME(row_count) FROM {keyspace}.bulk_bucket_counts \
                 WHERE audience = ? AND bucket = ?"
            ),
            WriteBucketCount => format!(
                "INSERT INTO {keyspace}.bulk_bucket_counts (audience, bucket, row_count) VALUES (?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            MarkBucket => format!(
                "INSERT INTO {keyspace}.bulk_bucket_marks (audience, bucket, marked_at) VALUES (?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            SelectBucketMark => format!(
                "SELECT WRITETIME(marked_at) FROM {keyspace}.bulk_bucket_marks WHERE audience = ? AND bucket = ?"
            ),
            SelectBucketMarks => format!("SELECT bucket FROM {keyspace}.bulk_bucket_marks WHERE audience = ?"),
            ClearBucketMark => {
                format!("DELETE FROM {keyspace}.bulk_bucket_marks USING TIMESTAMP ? WHERE audience = ? AND bucket = ?")
            }
            SelectFixtures => format!("SELECT body FROM {keyspace}.sandbox_fixtures WHERE catalogue = ?"),
            UpsertFixture => format!(
                "INSERT INTO {keyspace}.sandbox_fixtures (catalogue, id, body) VALUES (?, ?, ?) USING TIMESTAMP ?"
            ),
            DeleteFixture => {
                format!("DELETE FROM {keyspace}.sandbox_fixtures USING TIMESTAMP ? WHERE catalogue = ? AND id = ?")
            }
            SelectAggregates => {
                format!("SELECT id, version, state FROM {keyspace}.aggregates WHERE topic = ? AND id IN ?")
            }
            UpsertAggregate => format!(
                "INSERT INTO {keyspace}.aggregates (topic, id, version, state) VALUES (?, ?, ?, ?) USING TIMESTAMP ?"
            ),
            SelectPartyReferrers => {
                format!("SELECT referrer_kind, referrer_id FROM {keyspace}.party_references WHERE party_id = ?")
            }
            InsertPartyReference => format!(
                "INSERT INTO {keyspace}.party_references (party_id, referrer_kind, referrer_id) VALUES (?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            DeletePartyReference => format!(
                "DELETE FROM {keyspace}.party_references USING TIMESTAMP ? \
                 WHERE party_id = ? AND referrer_kind = ? AND referrer_id = ?"
            ),
            SelectCheckpoints => {
                format!("SELECT stream, partition, next_offset FROM {keyspace}.checkpoints WHERE source = ?")
            }
            UpsertCheckpoint => format!(
                "INSERT INTO {keyspace}.checkpoints (source, stream, partition, next_offset) VALUES (?, ?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            InsertChange => format!(
                "INSERT INTO {keyspace}.change_feed (audience, day, sequence, lcc_id, version, body) \
                 VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
            ),
            SelectChangesAfter => format!(
                "SELECT sequence, lcc_id, version, body FROM {keyspace}.change_feed \
                 WHERE audience = ? AND day = ? AND (sequence, lcc_id) > (?, ?) AND sequence <= ? LIMIT ?"
            ),
            SelectChange => format!(
                "SELECT sequence, lcc_id, version, body FROM {keyspace}.change_feed \
                 WHERE audience = ? AND day = ? AND sequence = ? AND lcc_id = ?"
            ),
            SelectFirstChange => {
                format!("SELECT sequence, lcc_id FROM {keyspace}.change_feed WHERE audience = ? AND day = ? LIMIT 1")
            }
            SelectLastChange => format!(
                "SELECT sequence, lcc_id FROM {keyspace}.change_feed WHERE audience = ? AND day = ? \
                 ORDER BY sequence DESC, lcc_id DESC LIMIT 1"
            ),
            DeleteChange => format!(
                "DELETE FROM {keyspace}.change_feed USING TIMESTAMP ? \
                 WHERE audience = ? AND day = ? AND sequence = ? AND lcc_id = ?"
            ),
            InsertChangeDay => {
                format!("INSERT INTO {keyspace}.change_feed_days (audience, day) VALUES (?, ?) USING TIMESTAMP ?")
            }
            SelectChangeDays => format!("SELECT day FROM {keyspace}.change_feed_days WHERE audience = ?"),
            DeleteChangeDay => {
                format!("DELETE FROM {keyspace}.change_feed_days USING TIMESTAMP ? WHERE audience = ? AND day = ?")
            }
            UpsertChangeHead => format!(
                "INSERT INTO {keyspace}.change_feed_heads (lcc_id, audience, sequence) VALUES (?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            SelectChangeHead => format!("SELECT sequence FROM {keyspace}.change_feed_heads WHERE lcc_id = ?"),
            SelectChangeHeads => format!("SELECT lcc_id FROM {keyspace}.change_feed_heads WHERE lcc_id IN ?"),
            WriteChangeHorizon => format!(
                "INSERT INTO {keyspace}.change_feed_horizon (singleton, horizon) VALUES (?, ?) USING TIMESTAMP ?"
            ),
            SelectChangeHorizon => {
                format!("SELECT horizon FROM {keyspace}.change_feed_horizon WHERE singleton = ?")
            }
            InsertNotification => format!(
                "INSERT INTO {keyspace}.notifications (audience, day, sequence, id, body) VALUES (?, ?, ?, ?, ?) \
                 USING TIMESTAMP ?"
            ),
            SelectNotificationsAfter => format!(
                "SELECT sequence, id, body FROM {keyspace}.notifications \
                 WHERE audience = ? AND day = ? AND (sequence, id) > (?, ?) AND sequence <= ? LIMIT ?"
            ),
            SelectLastNotification => format!(
                "SELECT sequence, id FROM {keyspace}.notifications WHERE audience = ? AND day = ? \
                 ORDER BY sequence DESC, id DESC LIMIT 1"
            ),
            DeleteNotificationDayRows => {
                format!("DELETE FROM {keyspace}.notifications USING TIMESTAMP ? WHERE audience = ? AND day = ?")
            }
            InsertNotificationDay => {
                format!("INSERT INTO {keyspace}.notification_days (audience, day) VALUES (?, ?) USING TIMESTAMP ?")
            }
            SelectNotificationDays => format!("SELECT day FROM {keyspace}.notification_days WHERE audience = ?"),
            DeleteNotificationDay => {
                format!("DELETE FROM {keyspace}.notification_days USING TIMESTAMP ? WHERE audience = ? AND day = ?")
            }
        }
    }
}

/// The partition key value of the change feed's horizon.
pub const HORIZON_ROW: &str = "horizon";
/// The partition key value of the notification feed's horizon, kept beside the change feed's.
pub const NOTIFICATIONS_HORIZON_ROW: &str = "notifications";
/// The partition key value of the sandbox fixture catalogue.
pub const FIXTURES_PARTITION: &str = "sandbox";

#[cfg(test)]
mod checked_against_ddl;
