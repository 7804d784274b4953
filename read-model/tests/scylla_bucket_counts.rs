//! The bulk bucket counts of the ScyllaDB write protocol, on the model of
//! ScyllaDB's semantics (`read_model::scylla::model`): a count equals its
//! bucket's rows once the projector settles, whatever crashed, raced or
//! landed late, and counting stays off the batch path.

use std::sync::Arc;

use read_model::scylla::model::{ClusterModel, Faults, ModelWriter};
use read_model::scylla::write_protocol::Cluster;
use read_model::scylla::write_protocol::mutation::BulkBucket;
use read_model::{Checkpoint, KeyedWrite, ModelVersion, ProjectionWrites, WriteBatch, WriteVersion};

const VERSION: ModelVersion = ModelVersion(1);
const CLOCK_MICROS: i64 = 1_700_000_000_000_000;

/// `count` work ids that share one bulk bucket.
fn ids_in_one_bucket(count: usize) -> Vec<String> {
    let first = BulkBucket::of("LCC-0000000000");
    (0..).map(|index| format!("LCC-{index:010}")).filter(|id| BulkBucket::of(id) == first).take(count).collect()
}

/// A batch that publishes (or, without a body, withdraws) the given works, checkpointed at `offset`.
fn batch(rows: &[(&str, bool)], offset: i64) -> Arc<WriteBatch> {
    let bulk_rows = rows
        .iter()
        .map(|(id, published)| KeyedWrite {
            key: (*id).to_owned(),
            body: published.then(|| format!("{{\"lccId\":\"{id}\"}}").into_bytes()),
            version: WriteVersion(u64::try_from(offset).unwrap_or(0) + 1),
        })
        .collect();
    let checkpoint = Checkpoint { source: "test".into(), stream: "s".into(), partition: 0, next_offset: offset };
    Arc::new(WriteBatch { bulk_rows, checkpoints: vec![checkpoint], ..WriteBatch::default() })
}

/// The stored count of a bucket and the rows it holds.
async fn count_and_rows(writer: &ModelWriter, bucket: BulkBucket) -> (i64, i64) {
    let stored = writer.bucket_count(bucket).await.expect("count").map_or(0, |(count, _)| count);
    (stored, writer.bucket_rows(bucket).await.expect("rows"))
}

/// Two works published, then one withdrawn and a third published.
async fn write_batches(writer: &ModelWriter, ids: &[String]) -> Result<(), read_model::StoreError> {
    writer.apply_batch(VERSION, batch(&[(&ids[0], true), (&ids[1], true)], 1)).await?;
    writer.apply_batch(VERSION, batch(&[(&ids[0], false), (&ids[2], true)], 2)).await?;
    Ok(())
}

#[tokio::test]
async fn a_crash_at_any_point_leaves_a_count_that_the_next_projectors_settle_repairs() {
    let ids = ids_in_one_bucket(3);
    let bucket = BulkBucket::of(&ids[0]);
    let reference = ModelWriter::new(&ClusterModel::default(), Faults::default(), CLOCK_MICROS, 0);
    write_batches(&reference, &ids).await.expect("write");
    assert_eq!(count_and_rows(&reference, bucket).await, (2, 2));
    for crash_after in 0..reference.statements_applied() {
        let cluster = ClusterModel::default();
        let faults = Faults { crash_after: Some(crash_after), seed: crash_after as u64, ..Faults::default() };
        let crashed = ModelWriter::new(&cluster, faults, CLOCK_MICROS, 0);
        assert!(write_batches(&crashed, &ids).await.is_err(), "a crash after {crash_after} statements");
        // Another projector, already running (its full recount an hour away), settles.
        let other = ModelWriter::new(&cluster, Faults::default(), CLOCK_MICROS + 1_000_000, 0);
        other.settle(VERSION).await.expect("settle");
        let (count, rows) = count_and_rows(&other, bucket).await;
        assert_eq!(count, rows, "crash after {crash_after}: the count does not match the rows");
        assert!(other.marked_buckets().await.expect("marks").is_empty(), "crash after {crash_after}: a mark is left");
    }
}

#[tokio::test]
async fn a_late_retry_of_an_older_count_never_replaces_a_newer_count() {
    let ids = ids_in_one_bucket(3);
    let cluster = ClusterModel::default();
    let writer = ModelWriter::new(&cluster, Faults { late_retries: true, ..Faults::default() }, CLOCK_MICROS, 0);
    writer.apply_batch(VERSION, batch(&[(&ids[0], true)], 1)).await.expect("first");
    writer.apply_batch(VERSION, batch(&[(&ids[1], true), (&ids[2], true)], 2)).await.expect("second");
    // The retries of the second batch's statements land with the next batch.
    writer.apply_batch(VERSION, batch(&[], 3)).await.expect("third");
    assert_eq!(count_and_rows(&writer, BulkBucket::of(&ids[0])).await, (3, 3));
}

#[tokio::test]
async fn a_writer_whose_clock_is_behind_replaces_a_count_written_by_a_clock_ahead() {
    let ids = ids_in_one_bucket(3);
    let cluster = ClusterModel::default();
    let ahead = ModelWriter::new(&cluster, Faults::default(), CLOCK_MICROS + 60_000_000, 0);
    let behind = ModelWriter::new(&cluster, Faults::default(), CLOCK_MICROS, 0);
    ahead.apply_batch(VERSION, batch(&[(&ids[0], true), (&ids[1], true)], 1)).await.expect("ahead");
    behind.apply_batch(VERSION, batch(&[(&ids[2], true)], 2)).await.expect("behind");
    behind.settle(VERSION).await.expect("settle");
    assert_eq!(count_and_rows(&behind, BulkBucket::of(&ids[0])).await, (3, 3));
    assert!(behind.marked_buckets().await.expect("marks").is_empty());
}

#[tokio::test]
async fn a_bucket_is_counted_at_most_once_per_interval_while_batches_arrive_and_when_settling() {
    let ids = ids_in_one_bucket(30);
    let bucket = BulkBucket::of(&ids[0]);
    let each_batch = ModelWriter::new(&ClusterModel::default(), Faults::default(), CLOCK_MICROS, 0);
    let once_per_second = ModelWriter::new(&ClusterModel::default(), Faults::default(), CLOCK_MICROS, 1_000_000);
    for writer in [&each_batch, &once_per_second] {
        for (offset, id) in (1..).zip(&ids) {
            writer.apply_batch(VERSION, batch(&[(id, true)], offset)).await.expect("write");
        }
    }
    assert!(each_batch.buckets_counted() >= 2 * ids.len(), "counted {}", each_batch.buckets_counted());
    assert_eq!(once_per_second.buckets_counted(), 2, "one recount: the rows, then the rows again");
    assert_eq!(count_and_rows(&once_per_second, bucket).await, (1, 30), "the count waits for the interval");
    once_per_second.settle(VERSION).await.expect("settle");
    assert_eq!(count_and_rows(&once_per_second, bucket).await, (30, 30));
}

#[tokio::test(flavor = "current_thread")]
async fn two_writers_of_one_bucket_leave_its_count_right_whatever_the_interleaving() {
    let ids = ids_in_one_bucket(6);
    let bucket = BulkBucket::of(&ids[0]);
    for seed in 0..50 {
        let cluster = ClusterModel::default();
        let faults = |seed| Faults { seed, yields: 3, late_retries: seed % 2 == 0, ..Faults::default() };
        let first = ModelWriter::new(&cluster, faults(seed * 2), CLOCK_MICROS, 0);
        // The second writer's clock is behind the first's.
        let second = ModelWriter::new(&cluster, faults(seed * 2 + 1), CLOCK_MICROS - 10_000_000, 0);
        let (one, two) = tokio::join!(
            async {
                first.apply_batch(VERSION, batch(&[(&ids[0], true), (&ids[1], true)], 1)).await?;
                first.apply_batch(VERSION, batch(&[(&ids[0], false), (&ids[2], true)], 2)).await
            },
            async {
                second.apply_batch(VERSION, batch(&[(&ids[3], true), (&ids[4], true)], 1)).await?;
                second.apply_batch(VERSION, batch(&[(&ids[5], true), (&ids[3], false)], 2)).await
            },
        );
        one.expect("first writer");
        two.expect("second writer");
        let (settled_one, settled_two) = tokio::join!(first.settle(VERSION), second.settle(VERSION));
        settled_one.expect("settle");
        settled_two.expect("settle");
        assert_eq!(count_and_rows(&first, bucket).await, (4, 4), "seed {seed}");
    }
}
