//! Progress per partition: what is assigned, what the broker holds, what the
//! store has applied. From these come the lag (in messages and in seconds)
//! and the stall rule, which the metrics and readiness report.
//!
//! The consumer tells it about assignments and high watermarks; the
//! projection loop tells it about committed batches. It decides nothing
//! about consumption itself.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use read_model::Checkpoint;
use read_model::calendar::Timestamp;

use crate::source::{Backlog, Partition};

/// The progress of every partition this instance has held.
#[derive(Debug)]
pub struct PartitionBoard {
    partitions: Mutex<HashMap<Partition, PartitionProgress>>,
    /// A partition with lag and no progress for this long is stalled.
    stall_after: Duration,
}

#[derive(Debug, Clone)]
struct PartitionProgress {
    assigned: bool,
    /// The broker's next offset (the high watermark), when known.
    high_watermark: Option<i64>,
    /// The next offset the store has not applied.
    next_offset: i64,
    /// The next offset not applied to the states: past `next_offset` while
    /// batches that deferred their documents hold their checkpoints back.
    applied_offset: i64,
    /// The recorded-at time of the last applied event.
    last_recorded_at: Option<Timestamp>,
    /// When `applied_offset` last moved, or the partition was assigned.
    last_progress: Instant,
}

impl PartitionProgress {
    /// Events up to `next_offset` are applied: progress, if that is further than before.
    fn applied_up_to(&mut self, next_offset: i64, now: Instant) {
        if next_offset > self.applied_offset {
            self.applied_offset = next_offset;
            self.last_progress = now;
        }
    }
}

/// What the metrics show of one assigned partition.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionReport {
    pub topic: String,
    pub partition: i32,
    /// Messages on the broker not yet applied; `None` until the broker's
    /// high watermark of the partition is known.
    pub lag_messages: Option<i64>,
    /// Now minus the recorded-at time of the last applied event, while
    /// messages are pending; zero when none are.
    pub lag_seconds: f64,
    /// Lag, and no progress for the stall time.
    pub stalled: bool,
}

impl PartitionBoard {
    pub fn new(stall_after: Duration) -> PartitionBoard {
        PartitionBoard { partitions: Mutex::new(HashMap::new()), stall_after }
    }

    fn with<T>(&self, change: impl FnOnce(&mut HashMap<Partition, PartitionProgress>) -> T) -> T {
        let mut partitions = self.partitions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut partitions)
    }

    /// The partitions now assigned, with the offsets they start from; every other partition is released.
    pub fn assigned(&self, assignment: &[(Partition, i64)]) {
        let now = Instant::now();
        self.with(|partitions| {
            for progress in partitions.values_mut() {
                progress.assigned = false;
            }
            for (partition, next_offset) in assignment {
                let progress = partitions.entry(partition.clone()).or_insert(PartitionProgress {
                    assigned: true,
                    high_watermark: None,
                    next_offset: *next_offset,
                    applied_offset: *next_offset,
                    last_recorded_at: None,
                    last_progress: now,
                });
                progress.assigned = true;
                progress.next_offset = *next_offset;
                progress.applied_offset = *next_offset;
                progress.last_progress = now;
                // A watermark seen before this assignment may predate what the
                // broker took since (a broker restart, another member's time
                // with the partition): lag is unknown until the broker says.
                progress.high_watermark = None;
            }
        });
    }

    /// The broker's high watermark of a partition.
    pub fn high_watermark(&self, partition: &Partition, high_watermark: i64) {
        self.with(|partitions| {
            if let Some(progress) = partitions.get_mut(partition) {
                progress.high_watermark = Some(high_watermark);
            }
        });
    }

    /// A batch committed: its checkpoints and the recorded-at times of its last events.
    pub fn applied(&self, checkpoints: &[Checkpoint], last_recorded_at: &[(Partition, Timestamp)]) {
        let now = Instant::now();
        self.with(|partitions| {
            for checkpoint in checkpoints {
                if let Some(progress) = partitions.get_mut(&Partition::of_checkpoint(checkpoint))
                    && checkpoint.next_offset > progress.next_offset
                {
                    progress.next_offset = checkpoint.next_offset;
                    progress.applied_up_to(checkpoint.next_offset, now);
                    // A high watermark read before this batch may lag behind it.
                    progress.high_watermark = progress.high_watermark.map(|high| high.max(checkpoint.next_offset));
                }
            }
            for (partition, at) in last_recorded_at {
                if let Some(progress) = partitions.get_mut(partition) {
                    progress.last_recorded_at = Some(*at);
                }
            }
        });
    }

    /// A batch that deferred its documents committed: its events are applied
    /// and count as progress for the stall rule, but not against the lag,
    /// which is what the store's checkpoints have yet to pass.
    pub fn applied_held_back(&self, held_back: &[Checkpoint]) {
        let now = Instant::now();
        self.with(|partitions| {
            for checkpoint in held_back {
                if let Some(progress) = partitions.get_mut(&Partition::of_checkpoint(checkpoint)) {
                    progress.applied_up_to(checkpoint.next_offset, now);
                }
            }
        });
    }

    /// The assigned partitions, in (topic, partition) order.
    pub fn report(&self) -> Vec<PartitionReport> {
        self.report_at(Instant::now())
    }

    fn report_at(&self, now: Instant) -> Vec<PartitionReport> {
        let now_millis = Timestamp::now().0;
        let mut reports: Vec<PartitionReport> = self.with(|partitions| {
            partitions
                .iter()
                .filter(|(_, progress)| progress.assigned)
                .map(|(partition, progress)| {
                    let lag_messages = progress.high_watermark.map(|high| (high - progress.next_offset).max(0));
                    let lag_seconds = match (lag_messages, progress.last_recorded_at) {
                        (Some(pending), Some(at)) if pending > 0 => ((now_millis - at.0) as f64 / 1_000.0).max(0.0),
                        _ => 0.0,
                    };
                    PartitionReport {
                        topic: partition.stream.clone(),
                        partition: partition.number,
                        lag_messages,
                        lag_seconds,
                        stalled: lag_messages.is_some_and(|pending| pending > 0)
                            && now.duration_since(progress.last_progress) >= self.stall_after,
                    }
                })
                .collect()
        });
        reports.sort_by(|left, right| (&left.topic, left.partition).cmp(&(&right.topic, right.partition)));
        reports
    }

    /// Whether partitions are assigned and every one has applied all the
    /// broker holds (as last seen). An instance holding no partition is not
    /// caught up: it may be waiting for a rebalance to give it some.
    pub fn caught_up(&self) -> bool {
        self.caught_up_with(&HashMap::new())
    }

    /// Whether partitions are assigned and every one has applied, or handed
    /// to the projection loop (`handed_over`: the next offset per partition),
    /// all the broker holds (as last seen). The loop may still be writing
    /// what it was handed, or holding it back while rendering is deferred.
    pub fn caught_up_with(&self, handed_over: &HashMap<Partition, i64>) -> bool {
        self.with(|partitions| {
            let mut assigned = partitions.iter().filter(|(_, progress)| progress.assigned).peekable();
            assigned.peek().is_some()
                && assigned.all(|(key, progress)| {
                    let next =
                        handed_over.get(key).map_or(progress.next_offset, |handed| (*handed).max(progress.next_offset));
                    progress.high_watermark.is_some_and(|high| next >= high)
                })
        })
    }
}

/// The events left to apply: unlike the lag, these fall as batches that
/// defer their documents are written, so a rebuild's estimate follows the
/// events; the documents still to render are reported beside it.
impl Backlog for PartitionBoard {
    fn left(&self, _committed: u64) -> Option<u64> {
        self.with(|partitions| {
            partitions
                .values()
                .filter(|progress| progress.assigned)
                .map(|progress| {
                    progress.high_watermark.map(|high| u64::try_from(high - progress.applied_offset).unwrap_or(0))
                })
                .sum()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn works(number: i32) -> Partition {
        Partition::new("works", number)
    }

    fn checkpoint(partition: i32, next_offset: i64) -> Checkpoint {
        Checkpoint { source: "kafka:".into(), stream: "works".into(), partition, next_offset }
    }

    #[test]
    fn lag_is_the_high_watermark_minus_the_applied_offset_and_seconds_follow_the_last_event() {
        let board = PartitionBoard::new(Duration::from_secs(60));
        board.assigned(&[(works(0), 10), (works(1), 0)]);
        board.high_watermark(&works(0), 25);
        board.high_watermark(&works(1), 0);
        let ten_seconds_ago = Timestamp(Timestamp::now().0 - 10_000);
        board.applied(&[checkpoint(0, 20)], &[(works(0), ten_seconds_ago)]);
        let reports = board.report();
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].lag_messages, Some(5));
        assert!((9.0..20.0).contains(&reports[0].lag_seconds), "{}", reports[0].lag_seconds);
        assert_eq!((reports[1].lag_messages, reports[1].lag_seconds), (Some(0), 0.0));
        assert!(!board.caught_up());
        board.applied(&[checkpoint(0, 25)], &[]);
        assert!(board.caught_up());
        assert_eq!(board.report()[0].lag_seconds, 0.0);
    }

    #[test]
    fn a_partition_with_lag_and_no_progress_is_stalled_and_a_released_one_is_not_reported() {
        let board = PartitionBoard::new(Duration::ZERO);
        board.assigned(&[(works(0), 0), (works(1), 0)]);
        board.high_watermark(&works(0), 3);
        assert!(board.report()[0].stalled);
        assert!(!board.report()[1].stalled, "no lag, no stall");
        board.assigned(&[(works(1), 0)]);
        assert_eq!(board.report().iter().map(|report| report.partition).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn events_applied_with_their_checkpoints_held_back_are_progress_but_still_lag() {
        let stall_after = Duration::from_secs(60);
        let board = PartitionBoard::new(stall_after);
        let assigned_at = Instant::now();
        board.assigned(&[(works(0), 0)]);
        board.high_watermark(&works(0), 10);
        assert!(board.report_at(assigned_at + stall_after + Duration::from_secs(1))[0].stalled);
        let held_at = Instant::now();
        board.applied_held_back(&[checkpoint(0, 6)]);
        let report = &board.report_at(held_at + stall_after - Duration::from_secs(1))[0];
        assert!(!report.stalled, "the states moved on");
        assert_eq!(report.lag_messages, Some(10), "no checkpoint moved");
        assert_eq!(board.left(0), Some(4), "left to apply");
        board.applied(&[checkpoint(0, 6)], &[]);
        assert_eq!(board.report()[0].lag_messages, Some(4));
        board.applied_held_back(&[checkpoint(0, 5)]);
        assert!(board.report_at(held_at + stall_after + Duration::from_secs(1))[0].stalled, "nothing new applied");
    }

    #[test]
    fn offsets_handed_to_the_loop_count_as_caught_up_before_the_store_has_them() {
        let board = PartitionBoard::new(Duration::from_secs(60));
        board.assigned(&[(works(0), 0), (works(1), 4)]);
        board.high_watermark(&works(0), 10);
        board.high_watermark(&works(1), 4);
        let mut handed = HashMap::from([(works(0), 9)]);
        assert!(!board.caught_up_with(&handed), "one message not handed over yet");
        handed.insert(works(0), 10);
        assert!(board.caught_up_with(&handed), "partition 1 has applied all it holds");
        assert!(!board.caught_up(), "the store has not applied partition 0");
        board.assigned(&[]);
        assert!(!board.caught_up_with(&handed), "nothing assigned");
    }

    #[test]
    fn a_reassigned_partition_forgets_its_watermark_until_the_broker_reports_one_again() {
        let board = PartitionBoard::new(Duration::from_secs(60));
        board.assigned(&[(works(0), 0)]);
        board.high_watermark(&works(0), 10);
        board.applied(&[checkpoint(0, 10)], &[]);
        assert!(board.caught_up());
        board.assigned(&[]);
        board.assigned(&[(works(0), 10)]);
        assert_eq!(board.report()[0].lag_messages, None, "the old watermark may predate what the broker took since");
        assert!(!board.caught_up_with(&HashMap::from([(works(0), 10)])));
        board.high_watermark(&works(0), 14);
        assert_eq!(board.report()[0].lag_messages, Some(4));
    }

    #[test]
    fn neither_nothing_assigned_nor_an_unknown_watermark_is_caught_up() {
        let board = PartitionBoard::new(Duration::from_secs(60));
        assert!(!board.caught_up());
        board.assigned(&[(works(0), 0)]);
        assert!(!board.caught_up());
        assert_eq!(board.report()[0].lag_messages, None, "unknown, not zero");
    }
}
