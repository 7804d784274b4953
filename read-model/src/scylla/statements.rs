//! The text of every CQL statement the backend prepares, in one place.
//!
//! Each statement names one table of `schemas/cql/` and restricts its whole
//! partition key with bound values, so the driver routes it to a replica
//! that owns the partition (token awareness) and to the shard that owns it
//! (shard awareness), and each lookup is one partition read. Writes to a
//! model version carry `USING TIMESTAMP ?`, bound to the version of what
//! they write (see `timestamps`). The unit tests below check all of this
//! against the committed DDL.

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
    SelectBulkRowWriteTime,
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
    SelectAggregate,
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
    WriteChangeHorizon,
    SelectChangeHorizon,
);

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
            SelectProvenance | SelectIdentifiers | SelectBucketCounts | SelectBucketMarks | SelectFixtures
            | SelectPartyReferrers | SelectCheckpoints | SelectChangeDays => Access::ReadInPages,
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
            SelectBulkRowWriteTime => format!(
                "SELECT WRITETIME(body) FROM {keyspace}.bulk_rows WHERE audience = ? AND bucket = ? AND lcc_id = ?"
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
            SelectAggregate => {
                format!("SELECT version, state FROM {keyspace}.aggregates WHERE topic = ? AND id = ?")
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
            WriteChangeHorizon => format!(
                "INSERT INTO {keyspace}.change_feed_horizon (singleton, horizon) VALUES (?, ?) USING TIMESTAMP ?"
            ),
            SelectChangeHorizon => {
                format!("SELECT horizon FROM {keyspace}.change_feed_horizon WHERE singleton = ?")
            }
        }
    }
}

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
    SelectCatalogClock,
    AdvanceCatalogClock,
}

impl CatalogStatement {
    pub const ALL: [CatalogStatement; 13] = [
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
        CatalogStatement::SelectCatalogClock,
        CatalogStatement::AdvanceCatalogClock,
    ];

    /// Reads of a whole partition that can grow without bound are read in pages.
    pub fn access(self) -> Access {
        match self {
            CatalogStatement::SelectVersions | CatalogStatement::SelectApiKeys => Access::ReadInPages,
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
            SelectCatalogClock => format!("SELECT stamp FROM {keyspace}.catalog_clock WHERE singleton = ?"),
            AdvanceCatalogClock => {
                format!("INSERT INTO {keyspace}.catalog_clock (singleton, stamp) VALUES (?, ?) USING TIMESTAMP ?")
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
/// The columns of a production key, in the order of [`crate::api_keys::ApiKeyRecord`].
const API_KEY_COLUMNS: &str = "key_hash, key_id, partner, scopes, rate_limit_per_minute, created_at_ms, revoked_at_ms";
/// The partition key value of the change feed's horizon.
pub const HORIZON_ROW: &str = "horizon";
/// The partition key value of the sandbox fixture catalogue.
pub const FIXTURES_PARTITION: &str = "sandbox";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scylla::schema::{CATALOG_CQL, MODEL_CQL, TableShape, render, tables};

    const KEYWORDS: [&str; 17] = [
        "ORDER",
        "BY",
        "DESC",
        "SELECT",
        "FROM",
        "WHERE",
        "AND",
        "INSERT",
        "INTO",
        "VALUES",
        "USING",
        "TIMESTAMP",
        "DELETE",
        "LIMIT",
        "COUNT",
        "WRITETIME",
        "k",
    ];

    /// The table a statement names, and every other identifier in it.
    fn table_and_columns(text: &str) -> (String, Vec<String>) {
        let table = text
            .split_whitespace()
            .find_map(|word| word.strip_prefix("k."))
            .map(|name| name.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_').to_owned())
            .expect("a table of keyspace k");
        let columns = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .filter(|word| !word.is_empty() && !word.starts_with("k.") && !KEYWORDS.contains(word))
            .filter(|word| !word.bytes().all(|byte| byte.is_ascii_digit()))
            .map(str::to_owned)
            .collect();
        (table, columns)
    }

    fn restricted_by_equality(text: &str, column: &str) -> bool {
        text.split_once(" WHERE ").is_some_and(|(_, filter)| filter.contains(&format!("{column} = ?")))
    }

    fn check(text: &str, shapes: &[TableShape]) {
        let (table, columns) = table_and_columns(text);
        let shape = shapes.iter().find(|shape| shape.name == table).unwrap_or_else(|| panic!("{text}: no {table}"));
        for column in &columns {
            assert!(shape.columns.contains(column), "{text}: {table} has no column {column}");
        }
        if text.starts_with("INSERT ") {
            for column in shape.partition_key.iter().chain(&shape.clustering_key) {
                assert!(columns.contains(column), "{text}: the write leaves key column {column} out");
            }
        } else {
            for column in &shape.partition_key {
                assert!(restricted_by_equality(text, column), "{text}: not one partition ({column} unbound)");
            }
        }
        if text.starts_with("DELETE ") {
            for column in &shape.clustering_key {
                assert!(restricted_by_equality(text, column), "{text}: deletes more than one row");
            }
        }
        let writes = text.starts_with("INSERT ") || text.starts_with("DELETE ");
        if writes {
            assert!(text.contains("USING TIMESTAMP ?"), "{text}: a versioned write without its timestamp");
        }
    }

    #[test]
    fn every_model_statement_reads_or_writes_one_partition_of_a_committed_table() {
        let shapes = tables(&render(MODEL_CQL, "k", 1));
        let statements = ModelStatement::all();
        assert_eq!(statements.len(), 5 * 3 + 43);
        for statement in statements {
            check(&statement.text("k"), &shapes);
        }
    }

    #[test]
    fn every_catalog_statement_reads_or_writes_one_partition_of_a_committed_table() {
        let shapes = tables(&render(CATALOG_CQL, "k", 1));
        for statement in CatalogStatement::ALL {
            check(&statement.text("k"), &shapes);
        }
    }

    #[test]
    fn every_model_table_has_a_writer_and_a_reader() {
        let shapes = tables(&render(MODEL_CQL, "k", 1));
        let texts: Vec<String> = ModelStatement::all().into_iter().map(|statement| statement.text("k")).collect();
        for shape in shapes {
            let named = |prefix: &str| {
                texts.iter().any(|text| text.starts_with(prefix) && table_and_columns(text).0 == shape.name)
            };
            assert!(named("INSERT "), "nothing writes {}", shape.name);
            assert!(named("SELECT "), "nothing reads {}", shape.name);
        }
    }

    #[test]
    fn a_delete_binds_its_timestamp_first_and_an_insert_last() {
        let delete = ModelStatement::DeleteBulkRow.text("k");
        assert!(delete.find("USING TIMESTAMP ?") < delete.find("WHERE"));
        let insert = ModelStatement::UpsertBulkRow.text("k");
        assert!(insert.ends_with("USING TIMESTAMP ?"));
        assert_eq!(ModelStatement::SelectBulkRowIds.access(), Access::Read);
        assert_eq!(ModelStatement::UpsertBulkRow.access(), Access::Write);
    }

    /// Unpaged, the referrers of a party named by a million documents
    /// would exceed ScyllaDB's limit for unpaged results, and every batch
    /// touching the party would fail and be retried.
    #[test]
    fn every_read_that_can_return_many_rows_is_read_in_pages() {
        let model = tables(&render(MODEL_CQL, "k", 1));
        let catalog = tables(&render(CATALOG_CQL, "k", 1));
        let statements =
            ModelStatement::all().into_iter().map(|statement| (statement.text("k"), statement.access(), &model)).chain(
                CatalogStatement::ALL.into_iter().map(|statement| (statement.text("k"), statement.access(), &catalog)),
            );
        for (text, access, shapes) in statements {
            if !text.starts_with("SELECT ") {
                assert_eq!(access, Access::Write, "{text}");
                continue;
            }
            let (table, _) = table_and_columns(&text);
            let shape = shapes.iter().find(|shape| shape.name == table).expect("a committed table");
            let one_row = shape.clustering_key.iter().all(|column| restricted_by_equality(&text, column));
            let many_rows = !one_row && !text.contains("COUNT(") && !text.contains(" LIMIT ");
            assert_eq!(access, if many_rows { Access::ReadInPages } else { Access::Read }, "{text}");
        }
        assert_eq!(ModelStatement::SelectPartyReferrers.access(), Access::ReadInPages);
    }
}
