//! The one write: a whole projector batch in one transaction.
//!
//! Write versions are not consulted: batches commit in one serial order, and
//! a batch whose read set another projector has changed since it was read
//! is refused before anything is written (see [`crate::read_set`]), so a
//! later batch is always rendered from newer inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use rusqlite::{Connection, OptionalExtension, Statement, TransactionBehavior, params};

use super::change_feed::{self, RecordedChange};
use super::errors::from_sqlite;
use super::index_entries;
use super::key_order::in_key_order;
use super::notifications;
use super::provenance_groups;
use super::version_files::Writer;
use super::work_rows::WorkRowWriter;
use super::{reads, schema, state_reads};
use crate::bulk::bulk_bucket;
use crate::identifiers::Audience;
use crate::read_set::{CommitMark, ReadSet};
use crate::store::{
    AggregateKey, BatchWritten, DocumentWrite, KeyedWrite, ProvenanceRow, StoreError, StoredAggregate, WriteBatch,
};
use crate::stored_bodies::{self, BodyKind};

/// `batch` with its bodies as the store keeps them (see
/// [`crate::stored_bodies`]), a work's provenance entries as one row (see
/// [`provenance_groups`]): compressed before the write transaction, so
/// the compression does not hold the write lock. Sandbox fixtures, a few
/// dozen, stay as they are. Only keys, the short bodies stored as they are
/// and provenance entries (into their rows) get copied, never a body that
/// compression replaces: the batch is shared with the next one's overlay.
pub(super) fn with_stored_bodies(batch: &WriteBatch) -> Result<WriteBatch, StoreError> {
    let compress =
        |kind, body: &Option<Vec<u8>>| body.as_deref().map(|body| stored_bodies::compress(kind, body)).transpose();
    Ok(WriteBatch {
        documents: batch
            .documents
            .iter()
            .map(|write| {
                Ok(DocumentWrite {
                    kind: write.kind,
                    key: write.key.clone(),
                    body: compress(BodyKind::of_document(write.kind), &write.body)?,
                    version: write.version,
                })
            })
            .collect::<Result<_, StoreError>>()?,
        provenance: provenance_groups::group(&batch.provenance)
            .into_iter()
            .map(|row| Ok(ProvenanceRow { body: stored_bodies::compress(BodyKind::Provenance, &row.body)?, ..row }))
            .collect::<Result<_, StoreError>>()?,
        bulk_rows: batch
            .bulk_rows
            .iter()
            .map(|write| {
                Ok(KeyedWrite {
                    key: write.key.clone(),
                    body: compress(BodyKind::BulkRow, &write.body)?,
                    version: write.version,
                })
            })
            .collect::<Result<_, StoreError>>()?,
        aggregates: batch
            .aggregates
            .iter()
            .map(|(key, stored)| {
                let state = stored_bodies::compress(BodyKind::AggregateState, &stored.state)?;
                Ok((key.clone(), StoredAggregate { state, version: stored.version }))
            })
            .collect::<Result<_, StoreError>>()?,
        identifiers: batch.identifiers.clone(),
        fixtures: batch.fixtures.clone(),
        party_references: batch.party_references.clone(),
        checkpoints: batch.checkpoints.clone(),
        read_set: batch.read_set.clone(),
        notifications: batch.notifications.clone(),
        change_feed_retention: batch.change_feed_retention,
        defer_index_entries: batch.defer_index_entries,
    })
}

/// Applies `batch`, committed at `now_ms` (milliseconds since the epoch, for
/// the change feed), its bodies as stored ([`with_stored_bodies`]).
pub(super) fn apply_batch(writer: &mut Writer, batch: &WriteBatch, now_ms: i64) -> Result<BatchWritten, StoreError> {
    let transaction =
        writer.connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(from_sqlite)?;
    // The data version changes only when another connection commits, so an
    // unchanged mark proves that nobody else has written since it was taken.
    let data_version: i64 = transaction.query_row("PRAGMA data_version", [], |row| row.get(0)).map_err(from_sqlite)?;
    let mark = CommitMark { writer: writer.id, sequence: data_version as u64 };
    if !batch.read_set.is_empty() && batch.read_set.read_after != Some(mark) {
        refuse_stale(&transaction, &batch.read_set)?;
    }
    write_documents(&transaction, batch)?;
    record_document_changes(&transaction, batch)?;
    let changes = write_bulk_rows(&transaction, batch)?;
    change_feed::record(&transaction, &changes, now_ms, batch.change_feed_retention)?;
    notifications::record(&transaction, &batch.notifications, now_ms, batch.change_feed_retention)?;
    write_state(&transaction, batch)?;
    index_entries::write(&transaction, batch)?;
    transaction.commit().map_err(from_sqlite)?;
    Ok(BatchWritten { mark: Some(mark), stale: Vec::new() })
}

/// Fails with a write conflict when another projector has changed the
/// batch's inputs since they were read. The transaction holds the write
/// lock, so nobody can change them between this check and the commit.
fn refuse_stale(connection: &Connection, read_set: &ReadSet) -> Result<(), StoreError> {
    let current = state_reads::aggregates(connection, &read_set.input_keys())?;
    let referrers = reads::party_referrers(connection, &read_set.changed_parties)?;
    match read_set.conflict(&current, &referrers) {
        None => Ok(()),
        Some(conflict) => Err(StoreError::WriteConflict(conflict)),
    }
}

fn write_documents(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    let mut work_rows = WorkRowWriter::new(connection);
    for write in &batch.documents {
        match schema::work_document_column(write.kind) {
            Some(column) => work_rows.set(&write.key, column, write.body.as_deref())?,
            None => write_license_status(connection, &write.key, write.body.as_deref())?,
        }
    }
    work_rows.flush()?;
    let mut provenance = connection
        .prepare_cached(
            "INSERT INTO provenance_entries (lcc_id, recorded_at, topic, aggregate_version, body) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (lcc_id, recorded_at, topic, aggregate_version) DO UPDATE SET body = excluded.body",
        )
        .map_err(from_sqlite)?;
    for row in in_key_order(&batch.provenance, |row| (&row.lcc_id, row.recorded_at, &row.topic, row.aggregate_version))
    {
        provenance
            .execute(params![row.lcc_id, row.recorded_at, row.topic, row.aggregate_version as i64, row.body])
            .map_err(from_sqlite)?;
    }
    for write in &batch.fixtures {
        match &write.body {
            Some(body) => connection
                .prepare_cached(
                    "INSERT INTO sandbox_fixtures (id, body) VALUES (?1, ?2) \
                     ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                )
                .and_then(|mut statement| statement.execute(params![write.key, body])),
            None => connection
                .prepare_cached("DELETE FROM sandbox_fixtures WHERE id = ?1")
                .and_then(|mut statement| statement.execute([&write.key])),
        }
        .map_err(from_sqlite)?;
    }
    Ok(())
}

/// How many batches' change records are kept for document caches to catch up with.
const DOCUMENT_CHANGES_KEPT: i64 = 1_000;

/// Records which document keys the batch wrote, for the document caches of
/// readers (see `document_cache`), and forgets the oldest records.
fn record_document_changes(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    if batch.documents.is_empty() {
        return Ok(());
    }
    let keys: BTreeSet<&str> = batch.documents.iter().map(|write| write.key.as_str()).collect();
    let keys = serde_json::to_string(&keys)
        .map_err(|error| StoreError::Corrupt(format!("cannot encode document keys: {error}")))?;
    connection
        // The key is the rowid: SQLite numbers the row one past the newest.
        .prepare_cached("INSERT INTO document_changes (keys) VALUES (?1)")
        .and_then(|mut statement| statement.execute([keys]))
        .map_err(from_sqlite)?;
    connection
        .prepare_cached(
            "DELETE FROM document_changes WHERE sequence <= (SELECT max(sequence) FROM document_changes) - ?1",
        )
        .and_then(|mut statement| statement.execute([DOCUMENT_CHANGES_KEPT]))
        .map_err(from_sqlite)?;
    Ok(())
}

/// Upserts and removes bulk rows, keeping the per-bucket counts exact, and
/// returns the changes for the feed: a row that is new or differs from the
/// one it replaces, and a row removed. Rewriting a row with its own bytes
/// (a rendering that a change of something the row does not show caused)
/// is no change.
fn write_bulk_rows<'a>(connection: &Connection, batch: &'a WriteBatch) -> Result<Vec<RecordedChange<'a>>, StoreError> {
    let mut count_changes: BTreeMap<(&'static str, u32), i64> = BTreeMap::new();
    let mut changes = Vec::new();
    let prepare = |sql: &str| connection.prepare_cached(sql).map_err(from_sqlite);
    let mut current = prepare("SELECT body FROM bulk_rows WHERE audience = ?1 AND bucket = ?2 AND lcc_id = ?3")?;
    let mut update = prepare("UPDATE bulk_rows SET body = ?4 WHERE audience = ?1 AND bucket = ?2 AND lcc_id = ?3")?;
    let mut insert = prepare("INSERT INTO bulk_rows (audience, bucket, lcc_id, body) VALUES (?1, ?2, ?3, ?4)")?;
    let mut delete = prepare("DELETE FROM bulk_rows WHERE audience = ?1 AND bucket = ?2 AND lcc_id = ?3")?;
    // In the batch's order, not the key's: the feed records the changes in that order.
    for KeyedWrite { key: lcc_id, body, .. } in &batch.bulk_rows {
        let audience = Audience::of(lcc_id).code();
        let bucket = bulk_bucket(lcc_id);
        let existing: Option<Vec<u8>> =
            current.query_row(params![audience, bucket, lcc_id], |row| row.get(0)).optional().map_err(from_sqlite)?;
        let replaces_a_row = existing.is_some();
        match (body, existing) {
            (Some(body), Some(existing)) if *body == existing => continue,
            (Some(body), Some(_)) => update.execute(params![audience, bucket, lcc_id, body]).map(drop),
            (Some(body), None) => {
                *count_changes.entry((audience, bucket)).or_default() += 1;
                insert.execute(params![audience, bucket, lcc_id, body]).map(drop)
            }
            (None, Some(_)) => {
                *count_changes.entry((audience, bucket)).or_default() -= 1;
                delete.execute(params![audience, bucket, lcc_id]).map(drop)
            }
            (None, None) => continue,
        }
        .map_err(from_sqlite)?;
        let mut replaces_a_row = replaces_a_row;
        if changes.last().is_some_and(|last: &RecordedChange<'_>| last.lcc_id == lcc_id.as_str()) {
            // A batch that writes one row twice records its last state once.
            replaces_a_row = changes.pop().is_some_and(|first| first.replaces_a_row);
        }
        changes.push(RecordedChange { audience, lcc_id, body: body.as_deref(), replaces_a_row });
    }
    let mut counts = connection
        .prepare_cached(
            "INSERT INTO bulk_bucket_counts (audience, bucket, row_count) VALUES (?1, ?2, ?3) \
             ON CONFLICT (audience, bucket) DO UPDATE SET row_count = row_count + excluded.row_count",
        )
        .map_err(from_sqlite)?;
    // Empty buckets have no row, so equal contents give equal tables whatever the history.
    let mut drop_empty = connection
        .prepare_cached("DELETE FROM bulk_bucket_counts WHERE audience = ?1 AND bucket = ?2 AND row_count = 0")
        .map_err(from_sqlite)?;
    for ((audience, bucket), change) in count_changes {
        if change != 0 {
            counts.execute(params![audience, bucket, change]).map_err(from_sqlite)?;
            drop_empty.execute(params![audience, bucket]).map_err(from_sqlite)?;
        }
    }
    Ok(changes)
}

/// The projector's state and the checkpoints, written last in the transaction.
/// Aggregate states are upserted this many to a statement, so that the
/// statement's own cost (starting and resetting it) is paid once for them
/// all rather than once a state: a sorted catch-up writes a state for nearly
/// every event.
const STATES_PER_STATEMENT: usize = 64;

fn write_state(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    static UPSERT_FULL_CHUNK: LazyLock<String> = LazyLock::new(|| upsert_states_sql(STATES_PER_STATEMENT));
    for chunk in batch.aggregates.chunks(STATES_PER_STATEMENT) {
        if chunk.len() == STATES_PER_STATEMENT {
            upsert_states(&mut *connection.prepare_cached(&UPSERT_FULL_CHUNK).map_err(from_sqlite)?, chunk)?;
        } else {
            // A batch's last, shorter chunk is prepared for it alone, not
            // cached: its length varies from batch to batch.
            upsert_states(&mut connection.prepare(&upsert_states_sql(chunk.len())).map_err(from_sqlite)?, chunk)?;
        }
    }
    let mut checkpoints = connection
        .prepare_cached(
            "INSERT INTO checkpoints (source, stream, partition, next_offset) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (source, stream, partition) DO UPDATE SET next_offset = excluded.next_offset",
        )
        .map_err(from_sqlite)?;
    for checkpoint in &batch.checkpoints {
        checkpoints
            .execute(params![checkpoint.source, checkpoint.stream, checkpoint.partition, checkpoint.next_offset])
            .map_err(from_sqlite)?;
    }
    Ok(())
}

/// The upsert of `states` aggregate states, four parameters each.
fn upsert_states_sql(states: usize) -> String {
    let rows = vec!["(?, ?, ?, ?)"; states].join(", ");
    format!(
        "INSERT INTO aggregates (topic, id, version, state) VALUES {rows} \
         ON CONFLICT (topic, id) DO UPDATE SET version = excluded.version, state = excluded.state"
    )
}

/// Runs `statement`, the upsert of as many states as `states` holds.
fn upsert_states(statement: &mut Statement<'_>, states: &[(AggregateKey, StoredAggregate)]) -> Result<(), StoreError> {
    for (index, (key, stored)) in states.iter().enumerate() {
        let first = index * 4 + 1;
        statement.raw_bind_parameter(first, &key.topic).map_err(from_sqlite)?;
        statement.raw_bind_parameter(first + 1, &key.id).map_err(from_sqlite)?;
        statement.raw_bind_parameter(first + 2, stored.version as i64).map_err(from_sqlite)?;
        statement.raw_bind_parameter(first + 3, &stored.state).map_err(from_sqlite)?;
    }
    statement.raw_execute().map(drop).map_err(from_sqlite)
}

fn write_license_status(connection: &Connection, id: &str, body: Option<&[u8]>) -> Result<(), StoreError> {
    match body {
        Some(body) => connection
            .prepare_cached(
                "INSERT INTO license_statuses (id, body) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET body = excluded.body",
            )
            .and_then(|mut statement| statement.execute(params![id, body])),
        None => connection
            .prepare_cached("DELETE FROM license_statuses WHERE id = ?1")
            .and_then(|mut statement| statement.execute([id])),
    }
    .map(drop)
    .map_err(from_sqlite)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::DocumentKind;
    use crate::store::{DocumentWrite, WriteVersion};

    fn write(kind: DocumentKind, key: &str, body: Option<&str>) -> DocumentWrite {
        DocumentWrite {
            kind,
            key: key.into(),
            body: body.map(|text| text.as_bytes().to_vec()),
            version: WriteVersion(1),
        }
    }

    fn read(connection: &Connection, kind: DocumentKind, key: &str) -> Option<String> {
        reads::document(connection, kind, key).expect("read").map(|body| String::from_utf8(body).expect("text"))
    }

    fn write_all(connection: &Connection, documents: Vec<DocumentWrite>) {
        write_documents(connection, &WriteBatch { documents, ..WriteBatch::default() }).expect("write");
    }

    fn work_rows(connection: &Connection) -> i64 {
        connection.query_row("SELECT count(*) FROM work_documents", [], |row| row.get(0)).expect("count")
    }

    #[test]
    fn a_works_documents_share_one_row_whatever_order_they_come_in() {
        let connection = schema::in_memory_model();
        write_all(
            &connection,
            vec![
                write(DocumentKind::RightsProfile, "LCC-1", Some("profile 1")),
                write(DocumentKind::RightsProfile, "LCC-2", Some("profile 2")),
                write(DocumentKind::Evidence, "LCC-1", Some("evidence 1")),
                write(DocumentKind::LicenseStatus, "LIC-1", Some("license 1")),
                write(DocumentKind::Metadata, "LCC-2", Some("metadata 2")),
                write(DocumentKind::Metadata, "LCC-2", Some("metadata 2, later")),
            ],
        );
        assert_eq!(work_rows(&connection), 2);
        assert_eq!(read(&connection, DocumentKind::RightsProfile, "LCC-1").as_deref(), Some("profile 1"));
        assert_eq!(read(&connection, DocumentKind::Evidence, "LCC-1").as_deref(), Some("evidence 1"));
        assert_eq!(read(&connection, DocumentKind::Verification, "LCC-1"), None, "never written");
        assert_eq!(read(&connection, DocumentKind::RightsProfile, "LCC-2").as_deref(), Some("profile 2"));
        assert_eq!(read(&connection, DocumentKind::Metadata, "LCC-2").as_deref(), Some("metadata 2, later"));
        assert_eq!(read(&connection, DocumentKind::LicenseStatus, "LIC-1").as_deref(), Some("license 1"));
    }

    #[test]
    fn a_works_row_goes_once_its_last_document_is_removed() {
        let connection = schema::in_memory_model();
        write_all(
            &connection,
            vec![
                write(DocumentKind::RightsProfile, "LCC-1", Some("profile")),
                write(DocumentKind::Verification, "LCC-1", Some("verification")),
            ],
        );
        write_all(&connection, vec![write(DocumentKind::RightsProfile, "LCC-1", None)]);
        assert_eq!(work_rows(&connection), 1);
        assert_eq!(read(&connection, DocumentKind::Verification, "LCC-1").as_deref(), Some("verification"));
        write_all(
            &connection,
            vec![write(DocumentKind::Verification, "LCC-1", None), write(DocumentKind::Evidence, "LCC-9", None)],
        );
        assert_eq!(work_rows(&connection), 0, "no empty rows, not even for a work that never had documents");
    }

    /// States go in whole statements of 64 and one of the rest; a state
    /// written again replaces the one before, in a later batch or later in
    /// the same one.
    #[test]
    fn every_state_of_a_batch_is_written_whatever_its_place_among_the_statements() {
        let connection = schema::in_memory_model();
        let key = |number: usize| AggregateKey { topic: "works".into(), id: format!("LCC-{number:03}") };
        let state = |number: usize, version: u64| StoredAggregate {
            version,
            state: format!("{number}@{version}").into_bytes(),
        };
        let write_states = |aggregates: Vec<(AggregateKey, StoredAggregate)>| {
            write_state(&connection, &WriteBatch { aggregates, ..WriteBatch::default() }).expect("write");
        };
        let first: Vec<_> = (0..2 * STATES_PER_STATEMENT + 5).map(|number| (key(number), state(number, 1))).collect();
        write_states(first);
        let mut second: Vec<_> =
            (0..STATES_PER_STATEMENT + 1).map(|number| (key(number * 2), state(number * 2, 2))).collect();
        // The same statement as the state it replaces: the batch's last, of two.
        second.push((key(2 * STATES_PER_STATEMENT), state(2 * STATES_PER_STATEMENT, 3)));
        write_states(second);
        let keys: Vec<_> = (0..2 * STATES_PER_STATEMENT + 5).map(key).collect();
        let stored = state_reads::aggregates(&connection, &keys).expect("read");
        for (number, stored) in stored.into_iter().enumerate() {
            let version = match number {
                last if last == 2 * STATES_PER_STATEMENT => 3,
                even if even % 2 == 0 && even < 2 * STATES_PER_STATEMENT => 2,
                _ => 1,
            };
            assert_eq!(stored, Some(state(number, version)), "state {number}");
        }
    }
}
