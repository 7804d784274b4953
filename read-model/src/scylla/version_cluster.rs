//! The write protocol's [`Cluster`] on a real cluster: each [`Mutation`]
//! becomes its prepared statement, a phase runs concurrently (the writes of
//! one phase to one shared partition as one unlogged batch), and the
//! protocol's reads are the version's prepared reads.
//!
//! It must not decide what is written or when: `write_protocol` does.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use futures_util::FutureExt;
use scylla::client::session::Session;
use scylla::serialize::row::SerializeRow;

use super::execution::{BoundValues, Prepared, read_listed, run_concurrently, select, write_requests};
use super::reads::VersionReads;
use super::statements::{FIXTURES_PARTITION, ModelStatement};
use super::write_protocol::mutation::BulkBucket;
use super::write_protocol::{Cluster, Mutation};
use crate::clock::Clock;
use crate::identifiers::Audience;
use crate::records::{AggregateKey, PartyReferrer, StoreError, StoredAggregate};
use crate::stored_bodies::{self, BodyKind};

/// One model version's statements on a session, with the process's clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct VersionCluster<'a> {
    pub session: &'a Session,
    pub statements: &'a Prepared<ModelStatement>,
    pub clock: &'a Clock,
}

impl<'a> VersionCluster<'a> {
    fn reads(&self) -> VersionReads<'a> {
        VersionReads { session: self.session, statements: self.statements }
    }

    /// The values that `mutation`'s statement binds.
    fn values<'m>(mutation: Mutation<'m>) -> Result<BoundValues<'m>, StoreError> {
        match mutation {
            Mutation::Document { kind, key, body: Some(body), timestamp } => {
                let body = stored_bodies::compress(BodyKind::of_document(kind), body)?;
                bind((key, body, timestamp))
            }
            Mutation::Document { key, body: None, timestamp, .. } => bind((timestamp, key)),
            Mutation::Provenance { row, timestamp } => {
                let version = i64::try_from(row.aggregate_version).unwrap_or(i64::MAX);
                let body = stored_bodies::compress(BodyKind::Provenance, &row.body)?;
                let values = (&row.lcc_id, row.recorded_at, &row.topic, version, body, timestamp);
                bind(values)
            }
            Mutation::Identifier { kind, code, lcc_id, present, timestamp } => {
                let key = (kind.code(), code, Audience::of(lcc_id).code(), lcc_id);
                if present {
                    bind((key.0, key.1, key.2, key.3, timestamp))
                } else {
                    bind((timestamp, key.0, key.1, key.2, key.3))
                }
            }
            Mutation::Fixture { key, body: Some(body), timestamp } => bind((FIXTURES_PARTITION, key, body, timestamp)),
            Mutation::Fixture { key, body: None, timestamp } => bind((timestamp, FIXTURES_PARTITION, key)),
            Mutation::BulkRow { bucket, lcc_id, body: Some(body), timestamp } => {
                let body = stored_bodies::compress(BodyKind::BulkRow, body)?;
                let values = (bucket.audience.code(), bucket.bucket, lcc_id, body, timestamp);
                bind(values)
            }
            Mutation::BulkRow { bucket, lcc_id, body: None, timestamp } => {
                let values = (timestamp, bucket.audience.code(), bucket.bucket, lcc_id);
                bind(values)
            }
            Mutation::Change { lcc_id, day, sequence, body, timestamp } => {
                // A change's version is the row's write version, its timestamp.
                let body = body.map(|body| stored_bodies::compress(BodyKind::BulkRow, body)).transpose()?;
                let values = (Audience::of(lcc_id).code(), day, sequence, lcc_id, timestamp, body, timestamp);
                bind(values)
            }
            Mutation::ChangeHead { lcc_id, sequence, timestamp } => {
                let values = (lcc_id, Audience::of(lcc_id).code(), sequence, timestamp);
                bind(values)
            }
            Mutation::ChangeDay { audience, day, timestamp } => bind((audience.code(), day, timestamp)),
            Mutation::Notification { id, day, sequence, body, timestamp } => {
                bind((Audience::of(id).code(), day, sequence, id, body, timestamp))
            }
            Mutation::NotificationDay { audience, day, timestamp } => bind((audience.code(), day, timestamp)),
            Mutation::PartyReference { party_id, referrer, present, timestamp } => {
                let (kind, id) = referrer.columns();
                if present { bind((party_id, kind, id, timestamp)) } else { bind((timestamp, party_id, kind, id)) }
            }
            Mutation::Aggregate { key, version, state, timestamp } => {
                let state = stored_bodies::compress(BodyKind::AggregateState, state)?;
                let values = (&key.topic, &key.id, version, state, timestamp);
                bind(values)
            }
            Mutation::Checkpoint { checkpoint, timestamp } => {
                let values =
                    (&checkpoint.source, &checkpoint.stream, checkpoint.partition, checkpoint.next_offset, timestamp);
                bind(values)
            }
            Mutation::BucketMark { bucket, timestamp } => {
                let values = (bucket.audience.code(), bucket.bucket, timestamp / 1_000, timestamp);
                bind(values)
            }
            Mutation::ClearBucketMark { bucket, timestamp } => bind((timestamp, bucket.audience.code(), bucket.bucket)),
            Mutation::BucketCount { bucket, rows, timestamp } => {
                let values = (bucket.audience.code(), bucket.bucket, rows, timestamp);
                bind(values)
            }
        }
    }
}

/// `values` as a statement's bound values.
fn bind<'m>(values: impl SerializeRow + Send + Sync + 'm) -> Result<BoundValues<'m>, StoreError> {
    Ok(Box::new(values))
}

impl<'m> Mutation<'m> {
    /// The partition key of the mutation's row when it is one text column
    /// that other mutations' rows may share: a work's documents, provenance
    /// and feed head are keyed by its lccId alone (the same key in every
    /// table, so the same replicas, and for Cassandra one mutation of the
    /// keyspace), and a party's references by its id. Such writes of one
    /// phase go to the cluster together, as one unlogged batch.
    fn shared_partition(&self) -> Option<&'m str> {
        match self {
            Mutation::Document { key, .. } => Some(key),
            Mutation::Provenance { row, .. } => Some(&row.lcc_id),
            Mutation::ChangeHead { lcc_id, .. } => Some(lcc_id),
            Mutation::PartyReference { party_id, .. } => Some(party_id),
            _ => None,
        }
    }
}

/// The prepared statement that applies a mutation.
fn statement(mutation: &Mutation<'_>) -> ModelStatement {
    use ModelStatement as S;
    match mutation {
        Mutation::Document { kind, body: Some(_), .. } => S::UpsertDocument(*kind),
        Mutation::Document { kind, body: None, .. } => S::DeleteDocument(*kind),
        Mutation::Provenance { .. } => S::UpsertProvenance,
        Mutation::Identifier { present: true, .. } => S::InsertIdentifier,
        Mutation::Identifier { present: false, .. } => S::DeleteIdentifier,
        Mutation::Fixture { body: Some(_), .. } => S::UpsertFixture,
        Mutation::Fixture { body: None, .. } => S::DeleteFixture,
        Mutation::BulkRow { body: Some(_), .. } => S::UpsertBulkRow,
        Mutation::BulkRow { body: None, .. } => S::DeleteBulkRow,
        Mutation::Change { .. } => S::InsertChange,
        Mutation::ChangeHead { .. } => S::UpsertChangeHead,
        Mutation::ChangeDay { .. } => S::InsertChangeDay,
        Mutation::Notification { .. } => S::InsertNotification,
        Mutation::NotificationDay { .. } => S::InsertNotificationDay,
        Mutation::PartyReference { present: true, .. } => S::InsertPartyReference,
        Mutation::PartyReference { present: false, .. } => S::DeletePartyReference,
        Mutation::Aggregate { .. } => S::UpsertAggregate,
        Mutation::Checkpoint { .. } => S::UpsertCheckpoint,
        Mutation::BucketMark { .. } => S::MarkBucket,
        Mutation::ClearBucketMark { .. } => S::ClearBucketMark,
        Mutation::BucketCount { .. } => S::WriteBucketCount,
    }
}

#[async_trait]
impl Cluster for VersionCluster<'_> {
    async fn apply(&self, phase: Vec<Mutation<'_>>) -> Result<(), StoreError> {
        let mut by_partition: HashMap<Option<&str>, Vec<(ModelStatement, BoundValues<'_>)>> = HashMap::new();
        for mutation in phase {
            let (statement, partition) = (statement(&mutation), mutation.shared_partition());
            by_partition.entry(partition).or_default().push((statement, Self::values(mutation)?));
        }
        let mut requests = Vec::new();
        for (partition, writes) in by_partition {
            write_requests(self.session, self.statements, writes, partition.is_some(), &mut requests)?;
        }
        run_concurrently(requests).await
    }

    async fn aggregates(&self, keys: &[AggregateKey]) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        self.reads().aggregates(keys).await
    }

    async fn party_referrers(&self, party_ids: &[String]) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        self.reads().party_referrers(party_ids).await
    }

    async fn bulk_row_write_times(&self, lcc_ids: &[&str]) -> Result<Vec<Option<i64>>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectBulkRowWriteTimes)?;
        let listed = lcc_ids.iter().map(|&lcc_id| (BulkBucket::of(lcc_id), lcc_id));
        let rows = read_listed(listed, |bucket, ids| {
            async move {
                let values = (bucket.audience.code(), bucket.bucket, ids);
                let stored: Vec<(String, Option<i64>)> = select(self.session, statement, values).await?;
                Ok(stored)
            }
            .boxed()
        })
        .await?;
        let found: HashMap<String, Option<i64>> = rows.into_iter().collect();
        Ok(lcc_ids.iter().map(|lcc_id| found.get(*lcc_id).copied().flatten()).collect())
    }

    async fn have_feed_heads(&self, lcc_ids: &[&str]) -> Result<Vec<bool>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectChangeHeads)?;
        let rows = read_listed(lcc_ids.iter().map(|&lcc_id| ((), lcc_id)), |(), ids| {
            async move {
                let heads: Vec<(String,)> = select(self.session, statement, (ids,)).await?;
                Ok(heads)
            }
            .boxed()
        })
        .await?;
        let found: HashSet<String> = rows.into_iter().map(|(lcc_id,)| lcc_id).collect();
        Ok(lcc_ids.iter().map(|lcc_id| found.contains(*lcc_id)).collect())
    }

    async fn bucket_rows(&self, bucket: BulkBucket) -> Result<i64, StoreError> {
        let statement = self.statements.get(ModelStatement::CountBucketRows)?;
        let rows: Vec<(i64,)> = select(self.session, statement, (bucket.audience.code(), bucket.bucket)).await?;
        Ok(rows.into_iter().next().map_or(0, |(count,)| count))
    }

    async fn bucket_count(&self, bucket: BulkBucket) -> Result<Option<(i64, i64)>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectBucketCount)?;
        let rows: Vec<(Option<i64>, Option<i64>)> =
            select(self.session, statement, (bucket.audience.code(), bucket.bucket)).await?;
        Ok(rows.into_iter().next().and_then(|(count, written_at)| count.zip(written_at)))
    }

    async fn bucket_mark(&self, bucket: BulkBucket) -> Result<Option<i64>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectBucketMark)?;
        let rows: Vec<(Option<i64>,)> =
            select(self.session, statement, (bucket.audience.code(), bucket.bucket)).await?;
        Ok(rows.into_iter().next().and_then(|(written_at,)| written_at))
    }

    async fn marked_buckets(&self) -> Result<Vec<BulkBucket>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectBucketMarks)?;
        let mut marked = Vec::new();
        for audience in [Audience::Production, Audience::Sandbox] {
            let rows: Vec<(i32,)> = select(self.session, statement, (audience.code(),)).await?;
            marked.extend(rows.into_iter().map(|(bucket,)| BulkBucket { audience, bucket }));
        }
        Ok(marked)
    }

    fn now_micros(&self) -> i64 {
        self.clock.unix_ms().saturating_mul(1_000)
    }
}

/// The driver's statement for each mutation writes the table, and the kind
/// of write (an insert, or a row deletion), that the model of ScyllaDB's
/// semantics applies it as, so what the crash-point tests prove of the
/// model holds of the statements.
#[cfg(all(test, feature = "conformance"))]
mod tests {
    use super::*;
    use crate::documents::DocumentKind;
    use crate::records::{Checkpoint, IdentifierKind};
    use crate::scylla::model::landing;
    use crate::store::ProvenanceRow;

    #[test]
    fn every_mutation_is_the_statement_that_writes_what_the_model_applies() {
        let row = ProvenanceRow {
            lcc_id: "LCC-1".into(),
            recorded_at: 1,
            topic: "works".into(),
            aggregate_version: 1,
            body: b"{}".to_vec(),
        };
        let (key, referrer) =
            (AggregateKey { topic: "works".into(), id: "LCC-1".into() }, PartyReferrer::Work("LCC-1".into()));
        let checkpoint = Checkpoint { source: "s".into(), stream: "t".into(), partition: 0, next_offset: 1 };
        let bucket = BulkBucket::of("LCC-1");
        let body = Some(&b"{}"[..]);
        let mut mutations = vec![
            Mutation::Provenance { row: &row, timestamp: 1 },
            Mutation::Change { lcc_id: "LCC-1", day: 0, sequence: 0, body, timestamp: 1 },
            Mutation::ChangeHead { lcc_id: "LCC-1", sequence: 0, timestamp: 1 },
            Mutation::ChangeDay { audience: Audience::Production, day: 0, timestamp: 1 },
            Mutation::Aggregate { key: &key, version: 1, state: b"s", timestamp: 1 },
            Mutation::Checkpoint { checkpoint: &checkpoint, timestamp: 1 },
            Mutation::BucketMark { bucket, timestamp: 1 },
            Mutation::ClearBucketMark { bucket, timestamp: 1 },
            Mutation::BucketCount { bucket, rows: 1, timestamp: 1 },
        ];
        for body in [body, None] {
            mutations.extend(DocumentKind::ALL.map(|kind| Mutation::Document {
                kind,
                key: "LCC-1",
                body,
                timestamp: 1,
            }));
            mutations.push(Mutation::Fixture { key: "LCC-1", body, timestamp: 1 });
            mutations.push(Mutation::BulkRow { bucket, lcc_id: "LCC-1", body, timestamp: 1 });
        }
        for present in [true, false] {
            let (kind, code, lcc_id) = (IdentifierKind::Iswc, "T0345246801", "LCC-1");
            mutations.push(Mutation::Identifier { kind, code, lcc_id, present, timestamp: 1 });
            mutations.push(Mutation::PartyReference { party_id: "PTY-1", referrer: &referrer, present, timestamp: 1 });
        }
        for mutation in &mutations {
            let text = statement(mutation).text("k");
            let (table, deletes) = landing(mutation);
            assert!(text.contains(&format!(" k.{table} ")), "{mutation:?}: {text}");
            assert_eq!(text.starts_with("DELETE "), deletes, "{mutation:?}: {text}");
            assert!(text.starts_with("INSERT ") || text.starts_with("DELETE "), "{text}");
        }
    }
}
