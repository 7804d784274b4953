//! A model of ScyllaDB's write semantics, for testing the write protocol
//! (`write_protocol`) without a node: what a real cluster does to the
//! protocol's statements, and what it may do to them in the worst case.
//!
//! - Per-cell last-write-wins by write timestamp; between two values of one
//!   timestamp the larger wins, and a deletion wins over a write of its own
//!   timestamp. A row deletion shadows every cell of the row stamped at or
//!   before it. An `INSERT` writes a row marker, so a row without other
//!   columns exists.
//! - No transactions: each statement applies on its own.
//! - The statements of one phase apply in any order (a seeded shuffle).
//! - A crash between any two statements ([`Faults::crash_after`]): the
//!   writer's next statement and every call after it fail, and the process
//!   is gone; a new [`ModelWriter`] on the same [`ClusterModel`] is the
//!   restarted projector.
//! - Late retries ([`Faults::late_retries`]): every statement of a phase
//!   lands a second time after the next phase has, as a retried write whose
//!   first attempt did land.
//! - Interleaving ([`Faults::yields`]): before each statement and read, a
//!   writer yields to the runtime a seeded number of times, so that two
//!   writers on one current-thread runtime interleave statement by statement.
//!
//! What it does not model: replication and consistency levels (a read sees
//! every write applied before it, as a quorum read after quorum writes
//! does), and the change feed's reads (its writes are applied and kept, but
//! no test compares them: a replay appends its changes again by design).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

mod writer;

pub use self::writer::{CRASHED, Faults, ModelWriter};
use super::statements::FIXTURES_PARTITION;
use super::write_protocol::mutation::BulkBucket;
use super::write_protocol::{BucketRecounts, Cluster, Mutation, write_batch};
use crate::change_feed::sequence_of_millisecond;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::records::{AggregateKey, Checkpoint, ModelVersion, PartyReferrer, StoreError, StoredAggregate};
use crate::store::{BatchWritten, ProjectionWrites, WriteBatch};

/// One component of a primary key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyPart {
    Text(String),
    Int(i64),
}

impl From<&str> for KeyPart {
    fn from(text: &str) -> KeyPart {
        KeyPart::Text(text.to_owned())
    }
}

impl From<i64> for KeyPart {
    fn from(number: i64) -> KeyPart {
        KeyPart::Int(number)
    }
}

/// A row's cells, as the cluster keeps them.
#[derive(Debug, Clone, Default)]
struct Row {
    /// The newest `INSERT`'s timestamp.
    marker: Option<i64>,
    /// The newest row deletion's timestamp.
    deleted_at: Option<i64>,
    /// Per column: the newest write's timestamp and value (`None`: a null written).
    cells: BTreeMap<&'static str, (i64, Option<Vec<u8>>)>,
}

impl Row {
    fn shadowed(&self, timestamp: i64) -> bool {
        self.deleted_at.is_some_and(|deleted_at| timestamp <= deleted_at)
    }

    fn live(&self) -> bool {
        self.marker.is_some_and(|marker| !self.shadowed(marker))
            || self.cells.values().any(|(timestamp, value)| value.is_some() && !self.shadowed(*timestamp))
    }

    /// A column's value and write time, unless deleted.
    fn cell(&self, column: &str) -> Option<(i64, &[u8])> {
        let (timestamp, value) = self.cells.get(column)?;
        let value = value.as_deref()?;
        (!self.shadowed(*timestamp)).then_some((*timestamp, value))
    }

    fn insert(&mut self, timestamp: i64, columns: Columns) {
        self.marker = self.marker.max(Some(timestamp));
        for (column, value) in columns {
            let cell = self.cells.entry(column).or_insert((i64::MIN, None));
            // A null is a deletion of the cell: it wins a tie, as a deletion does.
            let wins = match (timestamp.cmp(&cell.0), &value, &cell.1) {
                (std::cmp::Ordering::Greater, _, _) => true,
                (std::cmp::Ordering::Equal, None, _) => true,
                (std::cmp::Ordering::Equal, Some(new), Some(old)) => new > old,
                _ => false,
            };
            if wins {
                *cell = (timestamp, value);
            }
        }
    }

    fn delete(&mut self, timestamp: i64) {
        self.deleted_at = self.deleted_at.max(Some(timestamp));
    }
}

/// Tables by name, rows by primary key (partition key, then clustering key).
type Tables = BTreeMap<&'static str, BTreeMap<Vec<KeyPart>, Row>>;

/// The tables whose contents a replay may leave different by design: the
/// change feed and the notifications append a replayed batch's changes and
/// notifications again at new positions.
pub const FEED_TABLES: [&str; 5] =
    ["change_feed", "change_feed_days", "change_feed_heads", "notifications", "notification_days"];

/// Whether a row is a state of what was last notified, which follows the
/// renderings a run made (its batches, its races) as the notifications do.
fn is_notified_state(table: &str, key: &[KeyPart]) -> bool {
    table == "aggregates" && matches!(key.first(), Some(KeyPart::Text(topic)) if topic.starts_with("notified-"))
}

/// The cluster: one model version keyspace's cells, shared by its writers.
#[derive(Debug, Clone, Default)]
pub struct ClusterModel {
    tables: Arc<Mutex<Tables>>,
}

/// What a test compares: every live row of every table but the feed's, with
/// its non-null column values and without timestamps.
pub type Contents = BTreeMap<&'static str, BTreeMap<Vec<KeyPart>, BTreeMap<&'static str, Vec<u8>>>>;

impl ClusterModel {
    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every live row outside [`FEED_TABLES`], but the states of what was last notified.
    pub fn contents(&self) -> Contents {
        let tables = self.tables();
        let mut contents = Contents::new();
        for (table, rows) in tables.iter().filter(|(table, _)| !FEED_TABLES.contains(table)) {
            let kept = rows.iter().filter(|(key, row)| row.live() && !is_notified_state(table, key));
            let live = kept.map(|(key, row)| {
                let columns = row.cells.keys().filter_map(|column| Some((*column, row.cell(column)?.1.to_vec())));
                (key.clone(), columns.collect())
            });
            let live: BTreeMap<_, _> = live.collect();
            if !live.is_empty() {
                contents.insert(*table, live);
            }
        }
        contents
    }

    /// A document's body.
    pub fn document(&self, kind: DocumentKind, key: &str) -> Option<Vec<u8>> {
        let tables = self.tables();
        let row = tables.get(kind.table())?.get(&vec![KeyPart::from(key)])?;
        row.cell("body").map(|(_, body)| body.to_vec())
    }

    /// Every notification that has landed: its id and its stored body.
    pub fn notifications(&self) -> Vec<(String, Vec<u8>)> {
        self.live_rows("notifications", &[], |key, row| {
            let id = match key.last() {
                Some(KeyPart::Text(id)) => id.clone(),
                _ => String::new(),
            };
            (id, row.cell("body").map(|(_, body)| body.to_vec()).unwrap_or_default())
        })
    }

    /// The rows of a table whose key starts with `prefix`, live ones only.
    fn live_rows<T>(&self, table: &str, prefix: &[KeyPart], read: impl Fn(&[KeyPart], &Row) -> T) -> Vec<T> {
        let tables = self.tables();
        let Some(rows) = tables.get(table) else { return Vec::new() };
        rows.range(prefix.to_vec()..)
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(_, row)| row.live())
            .map(|(key, row)| read(key, row))
            .collect()
    }

    /// A row's column: its write time and value.
    fn cell(&self, table: &str, key: &[KeyPart], column: &str) -> Option<(i64, Vec<u8>)> {
        let tables = self.tables();
        let (timestamp, value) = tables.get(table)?.get(key)?.cell(column)?;
        Some((timestamp, value.to_vec()))
    }

    fn write(&self, write: RowWrite) {
        let mut tables = self.tables();
        let row = tables.entry(write.table).or_default().entry(write.key).or_default();
        match write.columns {
            Some(columns) => row.insert(write.timestamp, columns),
            None => row.delete(write.timestamp),
        }
    }
}

/// Column values an insert writes (`None`: a null).
type Columns = Vec<(&'static str, Option<Vec<u8>>)>;

/// A statement as it lands on one row: an insert of columns, or (`None`) a row deletion.
#[derive(Debug)]
struct RowWrite {
    table: &'static str,
    key: Vec<KeyPart>,
    columns: Option<Columns>,
    timestamp: i64,
}

fn bigint(value: i64) -> Option<Vec<u8>> {
    Some(value.to_be_bytes().to_vec())
}

fn text(value: &str) -> Option<Vec<u8>> {
    Some(value.as_bytes().to_vec())
}

fn decode_bigint(bytes: &[u8]) -> i64 {
    bytes.try_into().map_or(0, i64::from_be_bytes)
}

fn bucket_key(bucket: BulkBucket) -> Vec<KeyPart> {
    vec![bucket.audience.code().into(), i64::from(bucket.bucket).into()]
}

/// The table a statement writes, and whether it deletes the row.
#[cfg(test)]
pub(crate) fn landing(mutation: &Mutation<'_>) -> (&'static str, bool) {
    let write = row_write(mutation);
    (write.table, write.columns.is_none())
}

/// The table, primary key and columns a statement writes, as the CQL of
/// `statements` writes them.
fn row_write(mutation: &Mutation<'_>) -> RowWrite {
    let upsert_or_delete = |body: Option<&[u8]>| body.map(|body| vec![("body", Some(body.to_vec()))]);
    let present_or_delete = |present: bool| present.then(Vec::new);
    let (table, key, columns) = match *mutation {
        Mutation::Document { kind, key, body, .. } => (kind.table(), vec![key.into()], upsert_or_delete(body)),
        Mutation::Provenance { row, .. } => {
            let version = i64::try_from(row.aggregate_version).unwrap_or(i64::MAX);
            let key =
                vec![row.lcc_id.as_str().into(), row.recorded_at.into(), row.topic.as_str().into(), version.into()];
            ("provenance_entries", key, upsert_or_delete(Some(&row.body)))
        }
        Mutation::Identifier { kind, code, lcc_id, present, .. } => {
            let key = vec![kind.code().into(), code.into(), Audience::of(lcc_id).code().into(), lcc_id.into()];
            ("identifier_index", key, present_or_delete(present))
        }
        Mutation::Fixture { key, body, .. } => {
            ("sandbox_fixtures", vec![FIXTURES_PARTITION.into(), key.into()], upsert_or_delete(body))
        }
        Mutation::BulkRow { bucket, lcc_id, body, .. } => {
            let mut key = bucket_key(bucket);
            key.push(lcc_id.into());
            ("bulk_rows", key, upsert_or_delete(body))
        }
        Mutation::Change { lcc_id, day, sequence, body, timestamp } => {
            let key = vec![Audience::of(lcc_id).code().into(), day.into(), sequence.into(), lcc_id.into()];
            let columns = vec![("version", bigint(timestamp)), ("body", body.map(<[u8]>::to_vec))];
            ("change_feed", key, Some(columns))
        }
        Mutation::ChangeHead { lcc_id, sequence, .. } => {
            let columns = vec![("audience", text(Audience::of(lcc_id).code())), ("sequence", bigint(sequence))];
            ("change_feed_heads", vec![lcc_id.into()], Some(columns))
        }
        Mutation::ChangeDay { audience, day, .. } => {
            ("change_feed_days", vec![audience.code().into(), day.into()], Some(Vec::new()))
        }
        Mutation::Notification { id, day, sequence, body, .. } => {
            let key = vec![Audience::of(id).code().into(), day.into(), sequence.into(), id.into()];
            ("notifications", key, Some(vec![("body", Some(body.to_vec()))]))
        }
        Mutation::NotificationDay { audience, day, .. } => {
            ("notification_days", vec![audience.code().into(), day.into()], Some(Vec::new()))
        }
        Mutation::PartyReference { party_id, referrer, present, .. } => {
            let (kind, id) = referrer.columns();
            ("party_references", vec![party_id.into(), kind.into(), id.into()], present_or_delete(present))
        }
        Mutation::Aggregate { key, version, state, .. } => {
            let columns = vec![("version", bigint(version)), ("state", Some(state.to_vec()))];
            ("aggregates", vec![key.topic.as_str().into(), key.id.as_str().into()], Some(columns))
        }
        Mutation::Checkpoint { checkpoint, .. } => {
            let key = vec![
                checkpoint.source.as_str().into(),
                checkpoint.stream.as_str().into(),
                i64::from(checkpoint.partition).into(),
            ];
            ("checkpoints", key, Some(vec![("next_offset", bigint(checkpoint.next_offset))]))
        }
        Mutation::BucketMark { bucket, timestamp } => {
            ("bulk_bucket_marks", bucket_key(bucket), Some(vec![("marked_at", bigint(timestamp / 1_000))]))
        }
        Mutation::ClearBucketMark { bucket, .. } => ("bulk_bucket_marks", bucket_key(bucket), None),
        Mutation::BucketCount { bucket, rows, .. } => {
            ("bulk_bucket_counts", bucket_key(bucket), Some(vec![("row_count", bigint(rows))]))
        }
    };
    RowWrite { table, key, columns, timestamp: mutation.timestamp() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> Vec<KeyPart> {
        vec![id.into()]
    }

    #[test]
    fn the_newest_write_wins_whatever_the_arrival_order() {
        let mut row = Row::default();
        row.insert(5, vec![("body", Some(b"new".to_vec()))]);
        row.insert(3, vec![("body", Some(b"old".to_vec()))]);
        assert_eq!(row.cell("body"), Some((5, &b"new"[..])));
    }

    #[test]
    fn a_tie_keeps_the_larger_value_and_a_deletion_wins_a_tie() {
        let mut row = Row::default();
        row.insert(5, vec![("body", Some(b"b".to_vec()))]);
        row.insert(5, vec![("body", Some(b"a".to_vec()))]);
        assert_eq!(row.cell("body"), Some((5, &b"b"[..])));
        row.delete(5);
        assert!(!row.live(), "a deletion shadows what is stamped at or before it");
        row.insert(6, Vec::new());
        assert!(row.live(), "an insert after the deletion brings the row back through its marker");
        assert_eq!(row.cell("body"), None, "without the shadowed cell");
    }

    /// The feed's items of `lcc_id`: each change's body, `None` for a withdrawal.
    fn feed_of(cluster: &ClusterModel, lcc_id: &str) -> Vec<Option<Vec<u8>>> {
        let tables = cluster.tables();
        let Some(feed) = tables.get("change_feed") else { return Vec::new() };
        feed.iter()
            .filter(|(key, row)| key.last() == Some(&lcc_id.into()) && row.live())
            .map(|(_, row)| row.cell("body").map(|(_, body)| body.to_vec()))
            .collect()
    }

    #[tokio::test]
    async fn a_removal_withdraws_only_a_row_that_reached_the_feed() {
        use crate::store::{KeyedWrite, WriteBatch, WriteVersion};
        let cluster = ClusterModel::default();
        let writer = ModelWriter::new(&cluster, Faults::default(), 1_000_000, 0);
        let row = |key: &str, body: Option<&[u8]>, version: u64| KeyedWrite {
            key: key.into(),
            body: body.map(<[u8]>::to_vec),
            version: WriteVersion(version),
        };
        // LCC-1 was published and its row written; LCC-2's publication was
        // rendered away (withdrawn while its rendering was deferred).
        let published = WriteBatch { bulk_rows: vec![row("LCC-1", Some(b"row 1"), 1)], ..WriteBatch::default() };
        writer.apply_batch(ModelVersion(1), Arc::new(published)).await.expect("publication");
        let removals =
            WriteBatch { bulk_rows: vec![row("LCC-1", None, 2), row("LCC-2", None, 2)], ..WriteBatch::default() };
        writer.apply_batch(ModelVersion(1), Arc::new(removals)).await.expect("removals");
        assert_eq!(feed_of(&cluster, "LCC-1"), [Some(b"row 1".to_vec()), None], "published, then withdrawn");
        assert_eq!(feed_of(&cluster, "LCC-2"), Vec::<Option<Vec<u8>>>::new(), "never in the feed, nothing to withdraw");
    }

    #[test]
    fn a_crashed_writer_applies_nothing_more() {
        let cluster = ClusterModel::default();
        let writer = ModelWriter::new(&cluster, Faults { crash_after: Some(1), ..Faults::default() }, 0, 0);
        let body = b"{}".to_vec();
        let first =
            Mutation::Document { kind: DocumentKind::RightsProfile, key: "LCC-1", body: Some(&body), timestamp: 1 };
        let second =
            Mutation::Document { kind: DocumentKind::RightsProfile, key: "LCC-2", body: Some(&body), timestamp: 1 };
        assert!(writer.land(&first).is_ok());
        assert!(writer.land(&second).is_err());
        assert!(writer.crashed());
        assert!(cluster.tables()["rights_profiles"].contains_key(&key("LCC-1")));
        assert!(!cluster.tables()["rights_profiles"].contains_key(&key("LCC-2")));
    }
}
