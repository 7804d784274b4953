//! One projector process on the model: the write protocol's [`Cluster`]
//! and the projector's [`ProjectionWrites`], with the faults a test asks
//! for (a crash after N statements, late retries, interleaving).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::*;

/// What may go wrong for one writer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// The writer dies after this many statements have applied.
    pub crash_after: Option<usize>,
    /// Seeds the order of each phase's statements and the yields.
    pub seed: u64,
    /// Every statement lands again after the next phase.
    pub late_retries: bool,
    /// Yield up to this many times before each statement and read.
    pub yields: u8,
}

/// One projector process writing to a [`ClusterModel`]: the write
/// protocol's [`Cluster`] and the projector's [`ProjectionWrites`].
#[derive(Debug)]
pub struct ModelWriter {
    cluster: ClusterModel,
    faults: Faults,
    random: Mutex<u64>,
    applied: AtomicUsize,
    crashed: AtomicBool,
    /// This process's clock in microseconds; each reading advances it by a millisecond.
    clock: AtomicI64,
    next_feed_millisecond: AtomicI64,
    recounts: BucketRecounts,
    /// The previous phase, landing again before the next one when `late_retries`.
    retries: Mutex<Vec<RowWrite>>,
    /// Bucket row counts read, each a scan of a bucket on a real cluster.
    buckets_counted: AtomicUsize,
}

/// The error of every call a crashed writer makes.
pub const CRASHED: &str = "the writer crashed";

impl ModelWriter {
    /// A writer whose clock starts at `clock_micros`, counting each bucket
    /// at most once per `recount_interval_micros` while batches arrive.
    pub fn new(cluster: &ClusterModel, faults: Faults, clock_micros: i64, recount_interval_micros: i64) -> ModelWriter {
        ModelWriter {
            cluster: cluster.clone(),
            faults,
            random: Mutex::new(faults.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            applied: AtomicUsize::new(0),
            crashed: AtomicBool::new(false),
            clock: AtomicI64::new(clock_micros),
            next_feed_millisecond: AtomicI64::new(clock_micros / 1_000),
            recounts: BucketRecounts::with_interval(recount_interval_micros),
            retries: Mutex::new(Vec::new()),
            buckets_counted: AtomicUsize::new(0),
        }
    }

    /// Statements applied so far.
    pub fn statements_applied(&self) -> usize {
        self.applied.load(Ordering::SeqCst)
    }

    /// How many times the writer counted a bucket's rows.
    pub fn buckets_counted(&self) -> usize {
        self.buckets_counted.load(Ordering::SeqCst)
    }

    /// Whether the writer has crashed.
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    fn next_random(&self) -> u64 {
        let mut state = self.random.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // xorshift64: enough to vary orders reproducibly.
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Yields as the faults say, then fails if the writer has crashed.
    async fn step(&self) -> Result<(), StoreError> {
        if self.faults.yields > 0 {
            for _ in 0..self.next_random() % (u64::from(self.faults.yields) + 1) {
                tokio::task::yield_now().await;
            }
        }
        if self.crashed() { Err(StoreError::Corrupt(CRASHED.into())) } else { Ok(()) }
    }

    /// Applies one statement unless the writer crashes first.
    pub(super) fn land(&self, mutation: &Mutation<'_>) -> Result<(), StoreError> {
        if self.faults.crash_after == Some(self.statements_applied()) {
            self.crashed.store(true, Ordering::SeqCst);
            return Err(StoreError::Corrupt(CRASHED.into()));
        }
        self.cluster.write(row_write(mutation));
        self.applied.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait]
impl Cluster for ModelWriter {
    async fn apply(&self, mut phase: Vec<Mutation<'_>>) -> Result<(), StoreError> {
        let retries = std::mem::take(&mut *self.retries.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for retry in retries {
            self.cluster.write(retry);
        }
        for index in (1..phase.len()).rev() {
            let other = usize::try_from(self.next_random() % (index as u64 + 1)).unwrap_or(0);
            phase.swap(index, other);
        }
        for mutation in &phase {
            self.step().await?;
            self.land(mutation)?;
            if self.faults.late_retries {
                self.retries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(row_write(mutation));
            }
        }
        Ok(())
    }

    async fn aggregates(&self, keys: &[AggregateKey]) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        self.step().await?;
        Ok(keys
            .iter()
            .map(|key| {
                let row = [key.topic.as_str().into(), key.id.as_str().into()];
                let version = self.cluster.cell("aggregates", &row, "version")?;
                let state = self.cluster.cell("aggregates", &row, "state")?;
                Some(StoredAggregate { version: u64::try_from(decode_bigint(&version.1)).ok()?, state: state.1 })
            })
            .collect())
    }

    async fn party_referrers(&self, party_ids: &[String]) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        self.step().await?;
        let mut referrers = Vec::new();
        for party_id in party_ids {
            let rows = self.cluster.live_rows("party_references", &[party_id.as_str().into()], |key, _| key.to_vec());
            for key in rows {
                if let [_, KeyPart::Text(kind), KeyPart::Text(id)] = key.as_slice() {
                    referrers.push((party_id.clone(), PartyReferrer::from_columns(kind, id.clone())?));
                }
            }
        }
        Ok(referrers)
    }

    async fn bulk_row_write_times(&self, lcc_ids: &[&str]) -> Result<Vec<Option<i64>>, StoreError> {
        self.step().await?;
        Ok(lcc_ids
            .iter()
            .map(|lcc_id| {
                let mut key = bucket_key(BulkBucket::of(lcc_id));
                key.push((*lcc_id).into());
                self.cluster.cell("bulk_rows", &key, "body").map(|(timestamp, _)| timestamp)
            })
            .collect())
    }

    async fn have_feed_heads(&self, lcc_ids: &[&str]) -> Result<Vec<bool>, StoreError> {
        self.step().await?;
        Ok(lcc_ids
            .iter()
            .map(|lcc_id| self.cluster.cell("change_feed_heads", &[(*lcc_id).into()], "sequence").is_some())
            .collect())
    }

    async fn bucket_rows(&self, bucket: BulkBucket) -> Result<i64, StoreError> {
        self.step().await?;
        self.buckets_counted.fetch_add(1, Ordering::SeqCst);
        Ok(self.cluster.live_rows("bulk_rows", &bucket_key(bucket), |_, _| ()).len() as i64)
    }

    async fn bucket_count(&self, bucket: BulkBucket) -> Result<Option<(i64, i64)>, StoreError> {
        self.step().await?;
        let cell = self.cluster.cell("bulk_bucket_counts", &bucket_key(bucket), "row_count");
        Ok(cell.map(|(timestamp, value)| (decode_bigint(&value), timestamp)))
    }

    async fn bucket_mark(&self, bucket: BulkBucket) -> Result<Option<i64>, StoreError> {
        self.step().await?;
        Ok(self.cluster.cell("bulk_bucket_marks", &bucket_key(bucket), "marked_at").map(|(timestamp, _)| timestamp))
    }

    async fn marked_buckets(&self) -> Result<Vec<BulkBucket>, StoreError> {
        self.step().await?;
        let mut marked = Vec::new();
        for audience in [Audience::Production, Audience::Sandbox] {
            marked.extend(self.cluster.live_rows("bulk_bucket_marks", &[audience.code().into()], |key, _| {
                let bucket = match key.get(1) {
                    Some(KeyPart::Int(bucket)) => i32::try_from(*bucket).unwrap_or(i32::MAX),
                    _ => i32::MAX,
                };
                BulkBucket { audience, bucket }
            }));
        }
        Ok(marked)
    }

    fn now_micros(&self) -> i64 {
        self.clock.fetch_add(1_000, Ordering::SeqCst)
    }
}

#[async_trait]
impl ProjectionWrites for ModelWriter {
    async fn aggregates(
        &self,
        _version: ModelVersion,
        keys: &[AggregateKey],
    ) -> Result<Vec<Option<StoredAggregate>>, StoreError> {
        Cluster::aggregates(self, keys).await
    }

    async fn party_referrers(
        &self,
        _version: ModelVersion,
        party_ids: &[String],
    ) -> Result<Vec<(String, PartyReferrer)>, StoreError> {
        Cluster::party_referrers(self, party_ids).await
    }

    async fn checkpoints(&self, _version: ModelVersion, source: &str) -> Result<Vec<Checkpoint>, StoreError> {
        self.step().await?;
        Ok(self.cluster.live_rows("checkpoints", &[source.into()], |key, row| {
            let (stream, partition) = match key {
                [_, KeyPart::Text(stream), KeyPart::Int(partition)] => {
                    (stream.clone(), i32::try_from(*partition).unwrap_or(i32::MAX))
                }
                _ => (String::new(), i32::MAX),
            };
            let next_offset = row.cell("next_offset").map_or(0, |(_, value)| decode_bigint(value));
            Checkpoint { source: source.to_owned(), stream, partition, next_offset }
        }))
    }

    fn orders_writes_by_version(&self) -> bool {
        true
    }

    async fn apply_batch(&self, _version: ModelVersion, batch: Arc<WriteBatch>) -> Result<BatchWritten, StoreError> {
        self.step().await?;
        let millisecond = self.next_feed_millisecond.fetch_add(1, Ordering::SeqCst);
        write_batch(self, &self.recounts, &batch, sequence_of_millisecond(millisecond)).await
    }

    async fn settle(&self, _version: ModelVersion) -> Result<(), StoreError> {
        self.recounts.settle(self).await
    }
}
