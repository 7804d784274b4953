//! The row counts of the bulk buckets: absolute values counted from the
//! rows (counters would double under a replay), kept right without a
//! transaction, and counted off the batch path.
//!
//! - A batch marks every bucket whose count its bulk-row writes may change
//!   before it writes them; a mark is cleared only by a recount whose count
//!   is read back equal to the rows, counted again. A crash between the rows
//!   and their recount leaves the mark, and the next [`BucketRecounts::settle`]
//!   of any projector counts the bucket.
//! - A count is stamped after the count it replaces (the later of this
//!   process's clock and the stored count's write time), so a late retry of
//!   an older count write never replaces a newer count, whatever the clocks.
//! - A projector counts each bucket it marked at most once per interval
//!   while batches arrive, and every marked bucket when it has caught up;
//!   counting every bucket on every batch would read each row once per batch
//!   that touches its bucket, which grows with the square of the catalogue.
//! - Two writers of one bucket (a rebalance) each count after their own
//!   rows; a recount that finds the rows still changing leaves the mark for
//!   the next. Once an hour, when caught up, a projector counts every
//!   bucket, which repairs what no mark records (a writer that lost its
//!   partition and wrote rows after another's recount cleared the mark).
//!
//! Between a row change and its recount, `total` and page boundaries of the
//! bulk export lag (a page reads short where a count is too high).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use super::Cluster;
use super::mutation::{BulkBucket, Mutation};
use crate::records::StoreError;
use crate::store::KeyedWrite;

/// How often a projector counts a bucket it keeps marking, at most, while batches arrive.
pub const RECOUNT_INTERVAL_MICROS: i64 = 30 * 1_000_000;

/// How often a projector that has caught up counts every bucket.
pub const FULL_RECOUNT_INTERVAL_MICROS: i64 = 60 * 60 * 1_000_000;

/// How often one recount counts again when the rows keep changing under it.
const RECOUNT_ATTEMPTS: usize = 3;

/// One projector process's recounts: the buckets it marked and has not
/// counted since, and when it last counted each. Kept in memory only: what
/// a crash loses, the marks keep.
#[derive(Debug)]
pub struct BucketRecounts {
    interval_micros: i64,
    state: Mutex<RecountState>,
}

#[derive(Debug, Default)]
struct RecountState {
    /// Marked by this process and not counted since.
    pending: BTreeSet<BulkBucket>,
    /// When this process last counted each bucket.
    counted_at: BTreeMap<BulkBucket, i64>,
    /// When this process last counted every bucket, or first settled.
    all_counted_at: Option<i64>,
}

impl Default for BucketRecounts {
    fn default() -> BucketRecounts {
        BucketRecounts::with_interval(RECOUNT_INTERVAL_MICROS)
    }
}

impl BucketRecounts {
    /// Recounts that count a bucket at most once per `interval_micros` while batches arrive.
    pub fn with_interval(interval_micros: i64) -> BucketRecounts {
        BucketRecounts { interval_micros, state: Mutex::new(RecountState::default()) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RecountState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// After a batch: remembers the buckets it marked, and counts those not
    /// counted within the interval.
    pub async fn after_batch<C: Cluster + ?Sized>(
        &self,
        cluster: &C,
        marked: BTreeSet<BulkBucket>,
    ) -> Result<(), StoreError> {
        let now = cluster.now_micros();
        let due: Vec<BulkBucket> = {
            let mut state = self.state();
            state.pending.extend(marked);
            let counted_lately = |bucket: &BulkBucket| {
                state.counted_at.get(bucket).is_some_and(|at| now.saturating_sub(*at) < self.interval_micros)
            };
            state.pending.iter().filter(|bucket| !counted_lately(bucket)).copied().collect()
        };
        self.count(cluster, due, now).await
    }

    /// When the projector has caught up: counts every bucket this process
    /// marked, every bucket anyone marked (a crashed projector's), and,
    /// once per [`FULL_RECOUNT_INTERVAL_MICROS`] from its first settle on,
    /// every bucket.
    pub async fn settle<C: Cluster + ?Sized>(&self, cluster: &C) -> Result<(), StoreError> {
        let now = cluster.now_micros();
        let all_due = {
            let mut state = self.state();
            let since = *state.all_counted_at.get_or_insert(now);
            now.saturating_sub(since) >= FULL_RECOUNT_INTERVAL_MICROS
        };
        let due: BTreeSet<BulkBucket> = if all_due {
            BulkBucket::all().collect()
        } else {
            let mut due = cluster.marked_buckets().await?.into_iter().collect::<BTreeSet<_>>();
            due.extend(self.state().pending.iter().copied());
            due
        };
        self.count(cluster, due.into_iter().collect(), now).await?;
        if all_due {
            self.state().all_counted_at = Some(now);
        }
        Ok(())
    }

    /// Counts `buckets`; a bucket whose count settles leaves the pending set.
    async fn count<C: Cluster + ?Sized>(
        &self,
        cluster: &C,
        buckets: Vec<BulkBucket>,
        now: i64,
    ) -> Result<(), StoreError> {
        for bucket in buckets {
            let settled = recount(cluster, bucket).await?;
            let mut state = self.state();
            state.counted_at.insert(bucket, now);
            if settled {
                state.pending.remove(&bucket);
            }
        }
        Ok(())
    }
}

/// The buckets whose row count the batch's bulk-row writes may change,
/// judged from the rows' write times before the batch.
pub(super) async fn buckets_to_mark<C: Cluster + ?Sized>(
    cluster: &C,
    writes: &[KeyedWrite],
) -> Result<BTreeSet<BulkBucket>, StoreError> {
    let lcc_ids: Vec<&str> = writes.iter().map(|write| write.key.as_str()).collect();
    let stored = cluster.bulk_row_write_times(&lcc_ids).await?;
    Ok(writes
        .iter()
        .zip(stored)
        .filter(|(write, stored)| {
            let timestamp = super::super::timestamps::of_write_version(write.version);
            may_change_count(write.body.is_some(), *stored, timestamp)
        })
        .map(|(write, _)| BulkBucket::of(&write.key))
        .collect())
}

/// Whether a bulk row write may change its bucket's row count, given the
/// write time of the row as stored before the write (`None`: no such row).
///
/// A deletion may remove a row; an upsert adds one when none was stored. An
/// upsert that finds a row stamped with its own timestamp is this very write
/// replayed after a crash, which may have stopped before the mark, so it
/// marks again. Any other upsert replaces a row in place.
pub fn may_change_count(upsert: bool, stored_write_time: Option<i64>, timestamp: i64) -> bool {
    !upsert || stored_write_time.is_none_or(|stored| stored == timestamp)
}

/// Counts a bucket's rows and stores the count, and clears the bucket's
/// mark once the stored count reads back equal to the rows counted again.
/// Returns whether it did; a bucket whose rows kept changing stays marked.
async fn recount<C: Cluster + ?Sized>(cluster: &C, bucket: BulkBucket) -> Result<bool, StoreError> {
    for _ in 0..RECOUNT_ATTEMPTS {
        let mark = cluster.bucket_mark(bucket).await?;
        let rows = cluster.bucket_rows(bucket).await?;
        let stored = cluster.bucket_count(bucket).await?;
        if stored.map_or(0, |(count, _)| count) != rows {
            let after_stored = stored.map_or(i64::MIN, |(_, written_at)| written_at.saturating_add(1));
            let timestamp = cluster.now_micros().max(after_stored);
            cluster.apply(vec![Mutation::BucketCount { bucket, rows, timestamp }]).await?;
        }
        let read_back = cluster.bucket_count(bucket).await?.map_or(0, |(count, _)| count);
        if read_back == rows && cluster.bucket_rows(bucket).await? == rows {
            if let Some(timestamp) = mark {
                cluster.apply(vec![Mutation::ClearBucketMark { bucket, timestamp }]).await?;
            }
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_writes_that_can_add_or_remove_a_row_mark_their_bucket() {
        assert!(may_change_count(true, None, 7), "a new row");
        assert!(may_change_count(true, Some(7), 7), "this write, replayed");
        assert!(!may_change_count(true, Some(5), 7), "an update in place");
        assert!(!may_change_count(true, Some(9), 7), "a stale write, which the newer row wins over");
        assert!(may_change_count(false, Some(5), 7), "a deletion");
        assert!(may_change_count(false, None, 7), "a deletion of a row that may have been counted");
    }
}
