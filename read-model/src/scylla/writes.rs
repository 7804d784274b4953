//! The batch write, in the order that makes a replay converge.
//!
//! ScyllaDB has no transaction across partitions, so a batch is written in
//! four phases, each finished before the next starts:
//! 1. what readers see: documents, provenance, index entries, fixtures, bulk
//!    rows and their changes in the feed (after removing the changes they
//!    supersede that retention has passed);
//! 2. the row counts of the bulk buckets those rows may have changed;
//! 3. the projector's own state: aggregate states and party references;
//! 4. the checkpoints.
//!
//! A crash in any phase leaves the checkpoints behind the documents. The
//! restarted projector reads the events again; their aggregate states were
//! not stored yet (or were, in which case phases 1 and 2 had completed), so it
//! renders the same documents with the same versions, and rewriting them
//! with the same timestamps changes nothing. Every write is stamped with its
//! version (see `timestamps`), so a late or duplicated write never replaces a
//! newer one.

use std::collections::BTreeSet;

use futures_util::FutureExt;
use scylla::client::session::Session;

use super::bulk_pages::may_change_count;
use super::change_feed::VersionFeed;
use super::execution::{Prepared, Request, execute, read_concurrently, run_concurrently, select, write_request};
use super::statements::{FIXTURES_PARTITION, ModelStatement};
use super::timestamps;
use crate::bulk::bulk_bucket;
use crate::change_feed::{SEQUENCE_INDEX_BITS, sequence_of_millisecond};
use crate::identifiers::Audience;
use crate::store::{KeyedWrite, StoreError, WriteBatch};

/// How often a bucket is counted again when its count changed under the write.
const RECOUNT_ATTEMPTS: usize = 5;

#[derive(Debug, Clone, Copy)]
pub(super) struct VersionWrites<'a> {
    pub session: &'a Session,
    pub statements: &'a Prepared<ModelStatement>,
}

/// Where a batch's changes go in the feed, and what retention removes.
#[derive(Debug, Clone, Copy)]
pub(super) struct FeedPlacement {
    /// The sequence of the batch's first change.
    pub first_sequence: i64,
    /// Changes committed before this sequence are past retention.
    pub retention_cutoff: Option<i64>,
}

impl FeedPlacement {
    /// The placement of a batch of `rows` changes committed at `now_ms`,
    /// after a process's newest batch, whose millisecond `newest` holds (and
    /// is moved past this batch): a later batch of one process never shares
    /// a sequence with an earlier one, even when the clock steps back.
    pub(super) fn next(
        newest: &mut i64,
        rows: usize,
        now_ms: i64,
        retention: Option<std::time::Duration>,
    ) -> FeedPlacement {
        let millisecond = now_ms.max(*newest + 1);
        *newest = millisecond + i64::try_from(rows >> SEQUENCE_INDEX_BITS).unwrap_or(0);
        let retention_cutoff = retention.map(|retention| {
            let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
            sequence_of_millisecond(now_ms.saturating_sub(retention_ms))
        });
        FeedPlacement { first_sequence: sequence_of_millisecond(millisecond), retention_cutoff }
    }
}

impl<'a> VersionWrites<'a> {
    /// Writes the batch in its phases; returns the newest change retention removed.
    pub(super) async fn apply_batch(
        &self,
        batch: &'a WriteBatch,
        feed_placement: FeedPlacement,
    ) -> Result<Option<i64>, StoreError> {
        let buckets = self.buckets_to_recount(&batch.bulk_rows).await?;
        let feed = VersionFeed { session: self.session, statements: self.statements };
        let removed = match feed_placement.retention_cutoff {
            Some(cutoff) => feed.remove_superseded(&batch.bulk_rows, cutoff).await?,
            None => None,
        };
        let mut visible = self.visible_writes(batch)?;
        visible.extend(feed.append(&batch.bulk_rows, feed_placement.first_sequence)?);
        run_concurrently(visible).await?;
        let recounts = buckets.into_iter().map(|(audience, bucket)| self.recount(audience, bucket).boxed()).collect();
        run_concurrently(recounts).await?;
        run_concurrently(self.state_writes(batch)?).await?;
        run_concurrently(self.checkpoint_writes(batch)?).await?;
        Ok(removed)
    }

    fn request(
        &self,
        statement: ModelStatement,
        values: impl scylla::serialize::row::SerializeRow + Send + 'a,
    ) -> Result<Request<'a>, StoreError> {
        write_request(self.session, self.statements, statement, values)
    }

    fn visible_writes(&self, batch: &'a WriteBatch) -> Result<Vec<Request<'a>>, StoreError> {
        let mut requests = Vec::new();
        for write in &batch.documents {
            let timestamp = timestamps::of_write_version(write.version);
            requests.push(match &write.body {
                Some(body) => {
                    self.request(ModelStatement::UpsertDocument(write.kind), (&write.key, body, timestamp))?
                }
                None => self.request(ModelStatement::DeleteDocument(write.kind), (timestamp, &write.key))?,
            });
        }
        for row in &batch.provenance {
            let version = i64::try_from(row.aggregate_version).unwrap_or(i64::MAX);
            let timestamp = timestamps::of_aggregate_version(row.aggregate_version);
            let values = (&row.lcc_id, row.recorded_at, &row.topic, version, &row.body, timestamp);
            requests.push(self.request(ModelStatement::UpsertProvenance, values)?);
        }
        for write in &batch.identifiers {
            let timestamp = timestamps::of_write_version(write.version);
            let key = (write.kind.code(), &write.code, Audience::of(&write.lcc_id).code(), &write.lcc_id);
            requests.push(if write.present {
                self.request(ModelStatement::InsertIdentifier, (key.0, key.1, key.2, key.3, timestamp))?
            } else {
                self.request(ModelStatement::DeleteIdentifier, (timestamp, key.0, key.1, key.2, key.3))?
            });
        }
        for write in &batch.fixtures {
            let timestamp = timestamps::of_write_version(write.version);
            requests.push(match &write.body {
                Some(body) => {
                    self.request(ModelStatement::UpsertFixture, (FIXTURES_PARTITION, &write.key, body, timestamp))?
                }
                None => self.request(ModelStatement::DeleteFixture, (timestamp, FIXTURES_PARTITION, &write.key))?,
            });
        }
        for write in &batch.bulk_rows {
            let (audience, bucket) = bulk_partition(&write.key);
            let timestamp = timestamps::of_write_version(write.version);
            requests.push(match &write.body {
                Some(body) => {
                    self.request(ModelStatement::UpsertBulkRow, (audience, bucket, &write.key, body, timestamp))?
                }
                None => self.request(ModelStatement::DeleteBulkRow, (timestamp, audience, bucket, &write.key))?,
            });
        }
        Ok(requests)
    }

    fn state_writes(&self, batch: &'a WriteBatch) -> Result<Vec<Request<'a>>, StoreError> {
        let mut requests = Vec::new();
        for (key, stored) in &batch.aggregates {
            let version = i64::try_from(stored.version).unwrap_or(i64::MAX);
            let timestamp = timestamps::of_aggregate_version(stored.version);
            let values = (&key.topic, &key.id, version, &stored.state, timestamp);
            requests.push(self.request(ModelStatement::UpsertAggregate, values)?);
        }
        for write in &batch.party_references {
            let (kind, id) = write.referrer.columns();
            let timestamp = timestamps::of_write_version(write.version);
            requests.push(if write.present {
                self.request(ModelStatement::InsertPartyReference, (&write.party_id, kind, id, timestamp))?
            } else {
                self.request(ModelStatement::DeletePartyReference, (timestamp, &write.party_id, kind, id))?
            });
        }
        Ok(requests)
    }

    fn checkpoint_writes(&self, batch: &'a WriteBatch) -> Result<Vec<Request<'a>>, StoreError> {
        batch
            .checkpoints
            .iter()
            .map(|checkpoint| {
                let timestamp = timestamps::of_checkpoint(checkpoint.next_offset);
                let values =
                    (&checkpoint.source, &checkpoint.stream, checkpoint.partition, checkpoint.next_offset, timestamp);
                self.request(ModelStatement::UpsertCheckpoint, values)
            })
            .collect()
    }

    /// The buckets whose row count the batch's bulk row writes may change,
    /// judged from the rows' write times before the batch.
    async fn buckets_to_recount(&self, writes: &[KeyedWrite]) -> Result<BTreeSet<(&'static str, i32)>, StoreError> {
        let statement = self.statements.get(ModelStatement::SelectBulkRowWriteTime)?;
        let requests = writes
            .iter()
            .map(|write| {
                async move {
                    let (audience, bucket) = bulk_partition(&write.key);
                    let stored: Vec<(Option<i64>,)> =
                        select(self.session, statement, (audience, bucket, write.key.as_str())).await?;
                    let stored_write_time = stored.into_iter().next().and_then(|(write_time,)| write_time);
                    let timestamp = timestamps::of_write_version(write.version);
                    let changes = may_change_count(write.body.is_some(), stored_write_time, timestamp);
                    Ok(changes.then_some((audience, bucket)))
                }
                .boxed()
            })
            .collect();
        Ok(read_concurrently(requests).await?.into_iter().flatten().collect())
    }

    /// Counts a bucket's rows and stores the count; counts again until the
    /// stored count matches the rows, so that two projectors changing one
    /// bucket at once cannot leave the count of the one that counted first.
    async fn recount(self, audience: &'static str, bucket: i32) -> Result<(), StoreError> {
        let count = self.statements.get(ModelStatement::CountBucketRows)?;
        let write = self.statements.get(ModelStatement::WriteBucketCount)?;
        let mut rows = count_of(select(self.session, count, (audience, bucket)).await?);
        for _ in 0..RECOUNT_ATTEMPTS {
            execute(self.session, write, (audience, bucket, rows)).await?;
            let again = count_of(select(self.session, count, (audience, bucket)).await?);
            if again == rows {
                return Ok(());
            }
            rows = again;
        }
        Err(StoreError::Unavailable(format!("the row count of bulk bucket {audience}/{bucket} keeps changing")))
    }
}

/// The bulk partition of a work: its audience and bucket.
fn bulk_partition(lcc_id: &str) -> (&'static str, i32) {
    // Buckets are below BULK_BUCKETS (1024), so the conversion cannot fail.
    (Audience::of(lcc_id).code(), i32::try_from(bulk_bucket(lcc_id)).unwrap_or(i32::MAX))
}

fn count_of(rows: Vec<(i64,)>) -> i64 {
    rows.into_iter().next().map_or(0, |(count,)| count)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_processs_batches_take_growing_sequences_even_when_the_clock_steps_back() {
        let mut newest = 0;
        let first = FeedPlacement::next(&mut newest, 10, 5_000, None);
        assert_eq!(first.first_sequence, sequence_of_millisecond(5_000));
        let same_moment = FeedPlacement::next(&mut newest, 10, 5_000, None);
        assert_eq!(same_moment.first_sequence, sequence_of_millisecond(5_001));
        let clock_back = FeedPlacement::next(&mut newest, 3 << SEQUENCE_INDEX_BITS, 4_000, None);
        assert_eq!(clock_back.first_sequence, sequence_of_millisecond(5_002));
        let after_a_big_batch = FeedPlacement::next(&mut newest, 1, 4_000, None);
        assert_eq!(after_a_big_batch.first_sequence, sequence_of_millisecond(5_006), "a batch past 2^20 rows spans");
        let kept = FeedPlacement::next(&mut newest, 1, 90_000, Some(Duration::from_secs(60)));
        assert_eq!(kept.retention_cutoff, Some(sequence_of_millisecond(30_000)));
    }
}
