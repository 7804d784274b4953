//! The one write: a whole projector batch in one transaction.
//!
//! Write versions are not consulted: batches commit in one serial order, and
//! a batch whose read set another projector has changed since it was read
//! is refused before anything is written (see [`crate::read_set`]), so a
//! later batch is always rendered from newer inputs.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{Connection, TransactionBehavior, params};

use super::errors::from_sqlite;
use super::{Writer, reads};
use crate::bulk::bulk_bucket;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::read_set::{CommitMark, ReadSet};
use crate::store::{BatchWritten, KeyedWrite, PartyReferenceWrite, StoreError, WriteBatch};

pub(super) fn apply_batch(writer: &mut Writer, batch: &WriteBatch) -> Result<BatchWritten, StoreError> {
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
    write_bulk_rows(&transaction, batch)?;
    write_state(&transaction, batch)?;
    transaction.commit().map_err(from_sqlite)?;
    Ok(BatchWritten { mark: Some(mark), stale: Vec::new() })
}

/// Fails with a write conflict when another projector has changed the
/// batch's inputs since they were read. The transaction holds the write
/// lock, so nobody can change them between this check and the commit.
fn refuse_stale(connection: &Connection, read_set: &ReadSet) -> Result<(), StoreError> {
    let current = reads::aggregates(connection, &read_set.input_keys())?;
    let referrers = reads::party_referrers(connection, &read_set.changed_parties)?;
    match read_set.conflict(&current, &referrers) {
        None => Ok(()),
        Some(conflict) => Err(StoreError::WriteConflict(conflict)),
    }
}

fn write_documents(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    // Statements are looked up once per batch, not once per row.
    let mut upserts = DocumentKind::ALL
        .iter()
        .map(|kind| {
            connection.prepare_cached(&format!(
                "INSERT INTO {} (id, body) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET body = excluded.body",
                kind.table()
            ))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(from_sqlite)?;
    for write in &batch.documents {
        match &write.body {
            Some(body) => upserts[write.kind as usize].execute(params![write.key, body]),
            None => connection
                .prepare_cached(&format!("DELETE FROM {} WHERE id = ?1", write.kind.table()))
                .and_then(|mut statement| statement.execute([&write.key])),
        }
        .map_err(from_sqlite)?;
    }
    let mut provenance = connection
        .prepare_cached(
            "INSERT INTO provenance_entries (lcc_id, recorded_at, topic, aggregate_version, body) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (lcc_id, recorded_at, topic, aggregate_version) DO UPDATE SET body = excluded.body",
        )
        .map_err(from_sqlite)?;
    for row in &batch.provenance {
        provenance
            .execute(params![row.lcc_id, row.recorded_at, row.topic, row.aggregate_version as i64, row.body])
            .map_err(from_sqlite)?;
    }
    for write in &batch.identifiers {
        let sql = if write.present {
            "INSERT OR IGNORE INTO identifier_index (kind, code, audience, lcc_id) VALUES (?1, ?2, ?3, ?4)"
        } else {
            "DELETE FROM identifier_index WHERE kind = ?1 AND code = ?2 AND audience = ?3 AND lcc_id = ?4"
        };
        connection
            .prepare_cached(sql)
            .and_then(|mut statement| {
                statement.execute(params![
                    write.kind.code(),
                    write.code,
                    Audience::of(&write.lcc_id).code(),
                    write.lcc_id
                ])
            })
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

/// Upserts and removes bulk rows, keeping the per-bucket counts exact.
fn write_bulk_rows(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    let mut count_changes: BTreeMap<(&'static str, u32), i64> = BTreeMap::new();
    let prepare = |sql: &str| connection.prepare_cached(sql).map_err(from_sqlite);
    let mut exists = prepare("SELECT 1 FROM bulk_rows WHERE audience = ?1 AND bucket = ?2 AND lcc_id = ?3")?;
    let mut update = prepare("UPDATE bulk_rows SET body = ?4 WHERE audience = ?1 AND bucket = ?2 AND lcc_id = ?3")?;
    let mut insert = prepare("INSERT INTO bulk_rows (audience, bucket, lcc_id, body) VALUES (?1, ?2, ?3, ?4)")?;
    let mut delete = prepare("DELETE FROM bulk_rows WHERE audience = ?1 AND bucket = ?2 AND lcc_id = ?3")?;
    for KeyedWrite { key: lcc_id, body, .. } in &batch.bulk_rows {
        let audience = Audience::of(lcc_id).code();
        let bucket = bulk_bucket(lcc_id);
        let existed = exists.exists(params![audience, bucket, lcc_id]).map_err(from_sqlite)?;
        match (body, existed) {
            (Some(body), true) => update.execute(params![audience, bucket, lcc_id, body]).map(drop),
            (Some(body), false) => {
                *count_changes.entry((audience, bucket)).or_default() += 1;
                insert.execute(params![audience, bucket, lcc_id, body]).map(drop)
            }
            (None, true) => {
                *count_changes.entry((audience, bucket)).or_default() -= 1;
                delete.execute(params![audience, bucket, lcc_id]).map(drop)
            }
            (None, false) => Ok(()),
        }
        .map_err(from_sqlite)?;
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
    Ok(())
}

/// The projector's state and the checkpoints, written last in the transaction.
fn write_state(connection: &Connection, batch: &WriteBatch) -> Result<(), StoreError> {
    let mut aggregates = connection
        .prepare_cached(
            "INSERT INTO aggregates (topic, id, version, state) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (topic, id) DO UPDATE SET version = excluded.version, state = excluded.state",
        )
        .map_err(from_sqlite)?;
    for (key, stored) in &batch.aggregates {
        aggregates.execute(params![key.topic, key.id, stored.version as i64, stored.state]).map_err(from_sqlite)?;
    }
    for PartyReferenceWrite { party_id, referrer, present, .. } in &batch.party_references {
        let (kind, id) = referrer.columns();
        let sql = if *present {
            "INSERT OR IGNORE INTO party_references (party_id, referrer_kind, referrer_id) VALUES (?1, ?2, ?3)"
        } else {
            "DELETE FROM party_references WHERE party_id = ?1 AND referrer_kind = ?2 AND referrer_id = ?3"
        };
        connection
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute(params![party_id, kind, id]))
            .map_err(from_sqlite)?;
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
