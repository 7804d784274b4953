//! The SQL of every read: documents, provenance, indexes, bulk pages, and the
//! projector's own state. Each function runs inside the read transaction of
//! its pooled connection (see `reader_pool`), so all its statements see one
//! snapshot.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use super::errors::from_sqlite;
use super::provenance_groups;
use crate::bulk::plan_page;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::store::{Body, BulkKey, BulkPage, Checkpoint, IdentifierKind, PartyReferrer, StoreError};
use crate::stored_bodies;

/// The point read of each document kind (written out, so no lookup formats SQL).
fn select_document(kind: DocumentKind) -> &'static str {
    match kind {
        DocumentKind::RightsProfile => "SELECT rights_profile FROM work_documents WHERE id = ?1",
        DocumentKind::Verification => "SELECT verification FROM work_documents WHERE id = ?1",
        DocumentKind::Metadata => "SELECT metadata FROM work_documents WHERE id = ?1",
        DocumentKind::Evidence => "SELECT evidence FROM work_documents WHERE id = ?1",
        DocumentKind::LicenseStatus => "SELECT body FROM license_statuses WHERE id = ?1",
    }
}

pub(super) fn document(connection: &Connection, kind: DocumentKind, key: &str) -> Result<Option<Body>, StoreError> {
    read_stored_document(connection, kind, key, stored_bodies::decompress_borrowed)?.transpose()
}

/// A document as stored (see `stored_bodies`), for a cache that holds it so.
pub(super) fn stored_document(
    connection: &Connection,
    kind: DocumentKind,
    key: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    read_stored_document(connection, kind, key, <[u8]>::to_vec)
}

/// What `read` makes of the stored document of `kind` and `key`, given the
/// value where SQLite holds it (the mapped page), so that a caller that
/// decompresses it copies nothing first.
fn read_stored_document<T>(
    connection: &Connection,
    kind: DocumentKind,
    key: &str,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<Option<T>, StoreError> {
    // A work's row holds NULL for a kind it has no document of.
    let read: Option<Option<T>> = connection
        .prepare_cached(select_document(kind))
        .and_then(|mut statement| {
            statement.query_row([key], |row| Ok(row.get_ref(0)?.as_blob_or_null()?.map(read))).optional()
        })
        .map_err(from_sqlite)?;
    Ok(read.flatten())
}

/// A work's provenance entries, oldest first, from its rows (see [`provenance_groups`]).
pub(super) fn provenance(connection: &Connection, lcc_id: &str) -> Result<Vec<Body>, StoreError> {
    let mut statement = connection
        .prepare_cached("SELECT recorded_at, topic, aggregate_version, body FROM provenance_entries WHERE lcc_id = ?1")
        .map_err(from_sqlite)?;
    let rows = statement
        .query_map([lcc_id], |row| Ok(((row.get(0)?, row.get(1)?, row.get::<_, i64>(2)? as u64), row.get(3)?)))
        .map_err(from_sqlite)?;
    provenance_groups::provenance_entries(rows.collect::<Result<Vec<_>, _>>().map_err(from_sqlite)?)
}

pub(super) fn works_by_identifier(
    connection: &Connection,
    kind: IdentifierKind,
    code: &str,
    audience: Audience,
) -> Result<Vec<String>, StoreError> {
    let mut statement = connection
        .prepare_cached(
            "SELECT lcc_id FROM identifier_index WHERE kind = ?1 AND code = ?2 AND audience = ?3 ORDER BY lcc_id",
        )
        .map_err(from_sqlite)?;
    let rows =
        statement.query_map(params![kind.code(), code, audience.code()], |row| row.get(0)).map_err(from_sqlite)?;
    rows.collect::<Result<_, _>>().map_err(from_sqlite)
}

pub(super) fn bulk_page(
    connection: &Connection,
    audience: Audience,
    offset: u64,
    limit: u32,
) -> Result<BulkPage, StoreError> {
    let counts: Vec<(u32, u64)> = {
        let mut statement = connection
            .prepare_cached(
                "SELECT bucket, row_count FROM bulk_bucket_counts WHERE audience = ?1 AND row_count > 0 ORDER BY bucket",
            )
            .map_err(from_sqlite)?;
        let rows = statement.query_map([audience.code()], |row| Ok((row.get(0)?, row.get(1)?))).map_err(from_sqlite)?;
        rows.collect::<Result<_, _>>().map_err(from_sqlite)?
    };
    let plan = plan_page(&counts, offset, u64::from(limit));
    let mut page = BulkPage { rows: Vec::with_capacity(limit as usize), total: plan.total };
    let mut statement = connection
        .prepare_cached(
            "SELECT body FROM bulk_rows WHERE audience = ?1 AND bucket = ?2 ORDER BY lcc_id LIMIT ?3 OFFSET ?4",
        )
        .map_err(from_sqlite)?;
    for read in plan.reads {
        let take = i64::try_from(read.take).unwrap_or(i64::MAX);
        let skip = i64::try_from(read.skip).unwrap_or(i64::MAX);
        let rows = statement
            .query_map(params![audience.code(), read.bucket, take, skip], |row| row.get(0))
            .map_err(from_sqlite)?;
        for row in rows {
            page.rows.push(stored_bodies::decompress(row.map_err(from_sqlite)?)?);
        }
    }
    Ok(page)
}

/// Up to `limit` bulk rows after `after`, in (bucket, lccId) order.
pub(super) fn bulk_rows_after(
    connection: &Connection,
    audience: Audience,
    after: Option<&BulkKey>,
    limit: u32,
) -> Result<Vec<(BulkKey, Body)>, StoreError> {
    let (bucket, lcc_id) = after.map_or((-1, ""), |key| (i64::from(key.bucket), key.lcc_id.as_str()));
    let mut statement = connection
        .prepare_cached(
            "SELECT bucket, lcc_id, body FROM bulk_rows WHERE audience = ?1 AND (bucket, lcc_id) > (?2, ?3) \
             ORDER BY bucket, lcc_id LIMIT ?4",
        )
        .map_err(from_sqlite)?;
    let rows = statement
        .query_map(params![audience.code(), bucket, lcc_id, limit], |row| {
            Ok((BulkKey { bucket: row.get(0)?, lcc_id: row.get(1)? }, row.get(2)?))
        })
        .map_err(from_sqlite)?;
    rows.map(|row| {
        let (key, body) = row.map_err(from_sqlite)?;
        Ok((key, stored_bodies::decompress(body)?))
    })
    .collect()
}

pub(super) fn sandbox_fixtures(connection: &Connection) -> Result<Vec<Body>, StoreError> {
    let mut statement =
        connection.prepare_cached("SELECT body FROM sandbox_fixtures ORDER BY id").map_err(from_sqlite)?;
    let rows = statement.query_map([], |row| row.get(0)).map_err(from_sqlite)?;
    rows.collect::<Result<_, _>>().map_err(from_sqlite)
}

/// The documents naming each of `party_ids`, counting the references a
/// sorted catch-up deferred (see `index_entries`), which wait only until
/// its last batch, and are read here only while they wait.
pub(super) fn party_referrers(
    connection: &Connection,
    party_ids: &[String],
) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
    // Most batches change no party; a scan of the deferred references is for those that do.
    if party_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut statement = connection
        .prepare_cached("SELECT referrer_kind, referrer_id FROM party_references WHERE party_id = ?1")
        .map_err(from_sqlite)?;
    let mut referrers = BTreeSet::new();
    for party_id in party_ids {
        let rows = statement
            .query_map([party_id], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
            .map_err(from_sqlite)?;
        for row in rows {
            let (kind, id) = row.map_err(from_sqlite)?;
            referrers.insert((party_id.clone(), kind, id));
        }
    }
    let deferred: bool = connection
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM deferred_party_references)")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(from_sqlite)?;
    if deferred {
        let wanted: BTreeSet<&str> = party_ids.iter().map(String::as_str).collect();
        let mut statement = connection
            .prepare_cached(
                "SELECT party_id, referrer_kind, referrer_id, present FROM deferred_party_references ORDER BY rowid",
            )
            .map_err(from_sqlite)?;
        let rows = statement
            .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get(2)?, row.get(3)?)))
            .map_err(from_sqlite)?;
        for row in rows {
            let (party_id, kind, id, present): (String, String, String, bool) = row.map_err(from_sqlite)?;
            if wanted.contains(party_id.as_str()) {
                if present {
                    referrers.insert((party_id, kind, id));
                } else {
                    referrers.remove(&(party_id, kind, id));
                }
            }
        }
    }
    referrers.into_iter().map(|(party_id, kind, id)| Ok((party_id, PartyReferrer::from_columns(&kind, id)?))).collect()
}

pub(super) fn checkpoints(connection: &Connection, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
    let mut statement = connection
        .prepare_cached(
            "SELECT stream, partition, next_offset FROM checkpoints WHERE source = ?1 ORDER BY stream, partition",
        )
        .map_err(from_sqlite)?;
    let rows = statement
        .query_map([source], |row| {
            Ok(Checkpoint {
                source: source.to_owned(),
                stream: row.get(0)?,
                partition: row.get(1)?,
                next_offset: row.get(2)?,
            })
        })
        .map_err(from_sqlite)?;
    rows.collect::<Result<_, _>>().map_err(from_sqlite)
}

/// The number of the newest batch change record (see `document_cache`);
/// 0 in a file that has none.
pub(super) fn latest_document_change(connection: &Connection) -> Result<i64, StoreError> {
    connection
        .prepare_cached("SELECT coalesce(max(sequence), 0) FROM document_changes")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(from_sqlite)
}

/// The batch change records numbered `after + 1 ..= through`, in order, each
/// with the document keys its batch wrote.
pub(super) fn document_changes(
    connection: &Connection,
    after: i64,
    through: i64,
) -> Result<Vec<(i64, Vec<String>)>, StoreError> {
    let mut statement = connection
        .prepare_cached(
            "SELECT sequence, keys FROM document_changes WHERE sequence > ?1 AND sequence <= ?2 ORDER BY sequence",
        )
        .map_err(from_sqlite)?;
    let rows = statement
        .query_map([after, through], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)))
        .map_err(from_sqlite)?;
    let mut changes = Vec::new();
    for row in rows {
        let (sequence, keys) = row.map_err(from_sqlite)?;
        let keys = serde_json::from_str(&keys)
            .map_err(|error| StoreError::Corrupt(format!("document change {sequence} is unreadable: {error}")))?;
        changes.push((sequence, keys));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::schema;

    #[test]
    fn each_document_read_names_the_column_its_kind_is_written_to() {
        for kind in DocumentKind::ALL {
            let expected = match schema::work_document_column(kind) {
                Some(position) => {
                    format!("SELECT {} FROM work_documents WHERE id = ?1", schema::WORK_DOCUMENT_COLUMNS[position].1)
                }
                None => format!("SELECT body FROM {} WHERE id = ?1", kind.table()),
            };
            assert_eq!(select_document(kind), expected);
        }
    }
}
