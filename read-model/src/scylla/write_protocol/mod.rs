//! The batch write on ScyllaDB as a protocol over a [`Cluster`]: which
//! writes go in which phase, in which order the phases run, what is read
//! between them, and what a replay after a crash between any two statements
//! derives again.
//!
//! ScyllaDB has no transaction across partitions. A phase's statements run
//! concurrently and land in any order, each stamped with the version of what
//! it writes (see `timestamps`), so that a late, retried or replayed write
//! never replaces a newer one. The phases, each finished before the next
//! starts:
//! 1. marks on the bulk buckets whose row count the batch may change
//!    (`bucket_counts`);
//! 2. what readers see: documents, provenance, index entries, fixtures, bulk
//!    rows, and their changes in the feed;
//! 3. the notifications of the answers that changed, once what they
//!    announce can be read;
//! 4. party references;
//! 5. aggregate states;
//! 6. after the read-set check (see [`crate::read_set`]) finds nothing
//!    stale, the checkpoints; a batch with stale documents leaves its
//!    checkpoints to the batch that renders them again.
//!
//! Why this order converges: a replay skips an event whose aggregate state
//! is stored (phase 5), so everything derived from that state (phases 1 to
//! 4) must have landed before it; a skipped event still marks its documents
//! to render, so a replay renders anew whatever another projector's change
//! made stale, as long as the checkpoints stayed behind the events (phase 6).
//! References land before the states the check reads, so of two projectors
//! racing on a party and a work that names it, at least one sees the other.
//! Bucket counts are recounted after the rows, off the batch path, and a
//! mark written before the rows keeps a count that a crash left wrong in
//! view until a recount is read back equal.
//!
//! The same code drives the cluster through the driver (`VersionCluster`) and,
//! in tests, a model of ScyllaDB's semantics (`model`) that applies a
//! phase's statements in any order and can crash between any two.
//!
//! It must not know CQL or the driver.

pub mod bucket_counts;
pub mod mutation;

use async_trait::async_trait;

pub use self::bucket_counts::BucketRecounts;
use self::mutation::BulkBucket;
pub use self::mutation::Mutation;
use crate::records::{AggregateKey, PartyReferrer, StoreError, StoredAggregate};
use crate::store::{BatchWritten, WriteBatch};

/// What the protocol asks of a cluster: apply a phase, and a few reads.
#[async_trait]
pub trait Cluster: Sync {
    /// Applies one phase's statements, concurrently and in any order;
    /// returns once every one has applied, or with the first failure.
    async fn apply(&self, phase: Vec<Mutation<'_>>) -> Result<(), StoreError>;

    /// Stored states of the given aggregates, in the order of `keys`.
    async fn aggregates(&self, keys: &[AggregateKey]) -> Result<Vec<Option<StoredAggregate>>, StoreError>;

    /// The documents that name any of the given parties.
    async fn party_referrers(&self, party_ids: &[String]) -> Result<Vec<(String, PartyReferrer)>, StoreError>;

    /// The write time of each bulk row (by lccId), `None` where there is no row.
    async fn bulk_row_write_times(&self, lcc_ids: &[&str]) -> Result<Vec<Option<i64>>, StoreError>;

    /// Whether each work (by lccId) has a head in the change feed: whether
    /// any change of it ever entered the feed.
    async fn have_feed_heads(&self, lcc_ids: &[&str]) -> Result<Vec<bool>, StoreError>;

    /// The rows a bulk bucket holds, counted.
    async fn bucket_rows(&self, bucket: BulkBucket) -> Result<i64, StoreError>;

    /// A bucket's stored count and its write time.
    async fn bucket_count(&self, bucket: BulkBucket) -> Result<Option<(i64, i64)>, StoreError>;

    /// The write time of a bucket's mark, if it is marked.
    async fn bucket_mark(&self, bucket: BulkBucket) -> Result<Option<i64>, StoreError>;

    /// Every marked bucket.
    async fn marked_buckets(&self) -> Result<Vec<BulkBucket>, StoreError>;

    /// This process's clock, in microseconds since 1970.
    fn now_micros(&self) -> i64;
}

/// Writes a batch in its phases and checks its read set; the batch's
/// changes enter the feed from `first_sequence` on. Counts the buckets the
/// batch marked when `recounts` says they are due.
pub async fn write_batch<C: Cluster + ?Sized>(
    cluster: &C,
    recounts: &BucketRecounts,
    batch: &WriteBatch,
    first_sequence: i64,
) -> Result<BatchWritten, StoreError> {
    let marked = bucket_counts::buckets_to_mark(cluster, &batch.bulk_rows).await?;
    let now = cluster.now_micros();
    cluster.apply(marked.iter().map(|&bucket| Mutation::BucketMark { bucket, timestamp: now }).collect()).await?;
    let unseen = removals_never_in_the_feed(cluster, batch).await?;
    cluster.apply(mutation::visible(batch, first_sequence, &unseen)).await?;
    cluster.apply(mutation::notified(batch, first_sequence)).await?;
    cluster.apply(mutation::references(batch)).await?;
    cluster.apply(mutation::states(batch)).await?;
    let stale = stale_documents(cluster, batch).await?;
    if stale.is_empty() {
        cluster.apply(mutation::checkpoints(batch)).await?;
    }
    recounts.after_batch(cluster, marked).await?;
    Ok(BatchWritten { mark: None, stale })
}

/// The works whose bulk row the batch removes although no change of theirs
/// ever entered the feed: a publication deferred and withdrawn before it was
/// rendered. The heads decide, not the rows: a replay after a crash that
/// left the removal and lost its change still finds the head of the
/// publication, and appends the withdrawal again.
async fn removals_never_in_the_feed<'a, C: Cluster + ?Sized>(
    cluster: &C,
    batch: &'a WriteBatch,
) -> Result<Vec<&'a str>, StoreError> {
    let removed: Vec<&str> =
        batch.bulk_rows.iter().filter(|write| write.body.is_none()).map(|write| write.key.as_str()).collect();
    if removed.is_empty() {
        return Ok(Vec::new());
    }
    let heads = cluster.have_feed_heads(&removed).await?;
    Ok(removed.into_iter().zip(heads).filter(|(_, head)| !head).map(|(lcc_id, _)| lcc_id).collect())
}

/// The documents of the batch that another projector's writes made stale,
/// read after the batch's own states and references landed: of two racing
/// projectors, at least one sees the other's write.
async fn stale_documents<C: Cluster + ?Sized>(
    cluster: &C,
    batch: &WriteBatch,
) -> Result<Vec<PartyReferrer>, StoreError> {
    let read_set = &batch.read_set;
    if read_set.is_empty() {
        return Ok(Vec::new());
    }
    let current = cluster.aggregates(&read_set.input_keys()).await?;
    let referrers = cluster.party_referrers(&read_set.changed_parties).await?;
    Ok(read_set.stale_documents(&current, &referrers).into_iter().collect())
}
