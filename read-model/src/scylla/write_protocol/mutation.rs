//! The writes of a batch as values: one [`Mutation`] per CQL write, with its
//! timestamp, grouped into the phases the protocol applies in order.
//!
//! The driver turns each into a prepared statement; the model of ScyllaDB's
//! semantics (`model`, for tests) applies each to its cells. Neither decides
//! what is written or in which phase: that is here and in the protocol.
//!
//! It must not execute anything.

use super::super::change_feed::day_of;
use super::super::timestamps;
use crate::bulk::bulk_bucket;
use crate::documents::DocumentKind;
use crate::identifiers::Audience;
use crate::records::{AggregateKey, Checkpoint, IdentifierKind, PartyReferrer};
use crate::store::{KeyedWrite, ProvenanceRow, WriteBatch};

/// One write statement of a model version keyspace. A `None` body, or a
/// `present` of `false`, deletes the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation<'a> {
    Document {
        kind: DocumentKind,
        key: &'a str,
        body: Option<&'a [u8]>,
        timestamp: i64,
    },
    Provenance {
        row: &'a ProvenanceRow,
        timestamp: i64,
    },
    Identifier {
        kind: IdentifierKind,
        code: &'a str,
        lcc_id: &'a str,
        present: bool,
        timestamp: i64,
    },
    Fixture {
        key: &'a str,
        body: Option<&'a [u8]>,
        timestamp: i64,
    },
    BulkRow {
        bucket: BulkBucket,
        lcc_id: &'a str,
        body: Option<&'a [u8]>,
        timestamp: i64,
    },
    /// A change appended to the feed; `body` is `None` for a withdrawal.
    Change {
        lcc_id: &'a str,
        day: i64,
        sequence: i64,
        body: Option<&'a [u8]>,
        timestamp: i64,
    },
    /// A work's newest change.
    ChangeHead {
        lcc_id: &'a str,
        sequence: i64,
        timestamp: i64,
    },
    /// A day that holds changes of an audience.
    ChangeDay {
        audience: Audience,
        day: i64,
        timestamp: i64,
    },
    /// A notification appended to its feed.
    Notification {
        id: &'a str,
        day: i64,
        sequence: i64,
        body: &'a [u8],
        timestamp: i64,
    },
    /// A day that holds notifications of an audience.
    NotificationDay {
        audience: Audience,
        day: i64,
        timestamp: i64,
    },
    PartyReference {
        party_id: &'a str,
        referrer: &'a PartyReferrer,
        present: bool,
        timestamp: i64,
    },
    Aggregate {
        key: &'a AggregateKey,
        version: i64,
        state: &'a [u8],
        timestamp: i64,
    },
    Checkpoint {
        checkpoint: &'a Checkpoint,
        timestamp: i64,
    },
    /// Marks a bucket whose rows are about to change, stamped with the
    /// writer's clock; a recount read back equal clears it.
    BucketMark {
        bucket: BulkBucket,
        timestamp: i64,
    },
    /// Clears a mark, and only marks stamped at or before `timestamp`: a
    /// bucket marked again after the recount read its mark stays marked.
    ClearBucketMark {
        bucket: BulkBucket,
        timestamp: i64,
    },
    /// A bucket's row count as counted, stamped after every count before it.
    BucketCount {
        bucket: BulkBucket,
        rows: i64,
        timestamp: i64,
    },
}

/// One partition of the bulk export: an audience and a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BulkBucket {
    pub audience: Audience,
    /// Below [`crate::bulk::BULK_BUCKETS`] (1024), so it fits CQL's `int`.
    pub bucket: i32,
}

impl BulkBucket {
    /// The bucket of a work's bulk row.
    pub fn of(lcc_id: &str) -> BulkBucket {
        BulkBucket { audience: Audience::of(lcc_id), bucket: i32::try_from(bulk_bucket(lcc_id)).unwrap_or(i32::MAX) }
    }

    /// Every bucket of both audiences.
    pub fn all() -> impl Iterator<Item = BulkBucket> {
        let buckets = 0..i32::try_from(crate::bulk::BULK_BUCKETS).unwrap_or(i32::MAX);
        [Audience::Production, Audience::Sandbox]
            .into_iter()
            .flat_map(move |audience| buckets.clone().map(move |bucket| BulkBucket { audience, bucket }))
    }
}

/// Phase "visible": what readers see: documents, provenance, index entries,
/// fixtures, bulk rows, and their changes appended to the feed from
/// `first_sequence` on.
/// `unseen` names the works the batch removes a bulk row of that have never
/// had a change in the feed: their removal withdraws nothing a client saw.
pub fn visible<'a>(batch: &'a WriteBatch, first_sequence: i64, unseen: &[&str]) -> Vec<Mutation<'a>> {
    let mut mutations = Vec::new();
    for write in &batch.documents {
        let (key, body) = (write.key.as_str(), write.body.as_deref());
        mutations.push(Mutation::Document {
            kind: write.kind,
            key,
            body,
            timestamp: timestamps::of_write_version(write.version),
        });
    }
    for row in &batch.provenance {
        mutations
            .push(Mutation::Provenance { row, timestamp: timestamps::of_aggregate_version(row.aggregate_version) });
    }
    for write in &batch.identifiers {
        mutations.push(Mutation::Identifier {
            kind: write.kind,
            code: &write.code,
            lcc_id: &write.lcc_id,
            present: write.present,
            timestamp: timestamps::of_write_version(write.version),
        });
    }
    for write in &batch.fixtures {
        let timestamp = timestamps::of_write_version(write.version);
        mutations.push(Mutation::Fixture { key: &write.key, body: write.body.as_deref(), timestamp });
    }
    for write in &batch.bulk_rows {
        let timestamp = timestamps::of_write_version(write.version);
        let (bucket, lcc_id, body) = (BulkBucket::of(&write.key), write.key.as_str(), write.body.as_deref());
        mutations.push(Mutation::BulkRow { bucket, lcc_id, body, timestamp });
    }
    mutations.extend(changes(&batch.bulk_rows, first_sequence, unseen));
    mutations
}

/// Phase "notified": the batch's notifications, in the sequences after its
/// changes (`first_sequence` is the batch's first). They land once every
/// document they announce has: a reader that sees a notification and then
/// reads the document reads the change it announces, which the query API's
/// document cache relies on (`scylla::document_cache`). A row is stamped
/// with its millisecond: it is never rewritten (a replay appends its
/// notifications again, at new sequences, with the versions they had), and
/// a day's partition deletion stamped with the next day covers every row
/// of the day.
pub fn notified(batch: &WriteBatch, first_sequence: i64) -> Vec<Mutation<'_>> {
    let first_sequence = first_sequence + batch.bulk_rows.len() as i64;
    let mut mutations = Vec::with_capacity(batch.notifications.len() + 2);
    let mut days = std::collections::BTreeSet::new();
    for (index, notification) in batch.notifications.iter().enumerate() {
        let sequence = first_sequence + index as i64;
        let (id, day) = (notification.id.as_str(), day_of(sequence));
        let timestamp = timestamps::of_feed_sequence(sequence);
        mutations.push(Mutation::Notification { id, day, sequence, body: &notification.body, timestamp });
        days.insert((Audience::of(id), day));
    }
    for (audience, day) in days {
        let timestamp = timestamps::of_feed_day(day * super::super::change_feed::DAY_MS);
        mutations.push(Mutation::NotificationDay { audience, day, timestamp });
    }
    mutations
}

/// The feed's share of phase "visible": every bulk-row write appends a
/// change (without reading the row first the backend cannot tell an
/// unchanged rewrite, and a change applied again is harmless by the version
/// rule), moves the work's head, and lists its day; but the removal of a
/// row that never reached the feed (`unseen`: its publication was rendered
/// away before it was written) is no change of what a client holds.
fn changes<'a>(rows: &'a [KeyedWrite], first_sequence: i64, unseen: &[&str]) -> Vec<Mutation<'a>> {
    let mut mutations = Vec::with_capacity(rows.len() * 2 + 2);
    let mut days = std::collections::BTreeSet::new();
    for (index, write) in rows.iter().enumerate() {
        if write.body.is_none() && unseen.contains(&write.key.as_str()) {
            continue;
        }
        let sequence = first_sequence + index as i64;
        let timestamp = timestamps::of_write_version(write.version);
        let (lcc_id, day) = (write.key.as_str(), day_of(sequence));
        mutations.push(Mutation::Change { lcc_id, day, sequence, body: write.body.as_deref(), timestamp });
        mutations.push(Mutation::ChangeHead { lcc_id, sequence, timestamp });
        days.insert((Audience::of(lcc_id), day));
    }
    // A day is listed once per batch; the listing has no version of its
    // own, so it carries the day's first millisecond, which never changes.
    for (audience, day) in days {
        let timestamp = timestamps::of_feed_day(day * super::super::change_feed::DAY_MS);
        mutations.push(Mutation::ChangeDay { audience, day, timestamp });
    }
    mutations
}

/// Phase "references": which documents name which party.
pub fn references(batch: &WriteBatch) -> Vec<Mutation<'_>> {
    batch
        .party_references
        .iter()
        .map(|write| Mutation::PartyReference {
            party_id: &write.party_id,
            referrer: &write.referrer,
            present: write.present,
            timestamp: timestamps::of_write_version(write.version),
        })
        .collect()
}

/// Phase "states": the aggregate states, which make a replay skip the events
/// they reflect, so nothing derived from them may come after.
pub fn states(batch: &WriteBatch) -> Vec<Mutation<'_>> {
    batch
        .aggregates
        .iter()
        .map(|(key, stored)| Mutation::Aggregate {
            key,
            version: i64::try_from(stored.version).unwrap_or(i64::MAX),
            state: &stored.state,
            timestamp: timestamps::of_aggregate_version(stored.version),
        })
        .collect()
}

/// Phase "checkpoints": where a restart resumes.
pub fn checkpoints(batch: &WriteBatch) -> Vec<Mutation<'_>> {
    batch
        .checkpoints
        .iter()
        .map(|checkpoint| Mutation::Checkpoint {
            checkpoint,
            timestamp: timestamps::of_checkpoint(checkpoint.next_offset),
        })
        .collect()
}

impl Mutation<'_> {
    /// The write's timestamp.
    pub fn timestamp(&self) -> i64 {
        match self {
            Mutation::Document { timestamp, .. }
            | Mutation::Provenance { timestamp, .. }
            | Mutation::Identifier { timestamp, .. }
            | Mutation::Fixture { timestamp, .. }
            | Mutation::BulkRow { timestamp, .. }
            | Mutation::Change { timestamp, .. }
            | Mutation::ChangeHead { timestamp, .. }
            | Mutation::ChangeDay { timestamp, .. }
            | Mutation::Notification { timestamp, .. }
            | Mutation::NotificationDay { timestamp, .. }
            | Mutation::PartyReference { timestamp, .. }
            | Mutation::Aggregate { timestamp, .. }
            | Mutation::Checkpoint { timestamp, .. }
            | Mutation::BucketMark { timestamp, .. }
            | Mutation::ClearBucketMark { timestamp, .. }
            | Mutation::BucketCount { timestamp, .. } => *timestamp,
        }
    }
}
