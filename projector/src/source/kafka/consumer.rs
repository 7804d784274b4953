//! The consumer thread: polls the six topics as a member of a consumer group,
//! decodes each message, and sends it to the projection loop.
//!
//! Rebalances (eager protocol) go through a barrier: the thread asks the loop
//! to write everything sent so far and to answer with the store's
//! checkpoints. On revocation that releases the partitions fully written; on
//! assignment each partition starts at its checkpoint (or at the earliest
//! offset when the store has none). Kafka's committed offsets are written
//! after batches commit, as a courtesy to tools that watch the group, and
//! are never read.
//!
//! The thread never applies events and never writes the store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::message::Message;
use rdkafka::statistics::Statistics;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, error::KafkaError};
use read_model::Checkpoint;
use tokio::sync::mpsc;

use super::wire::{SchemaIds, WireDecoder, WireError};
use super::{KafkaSettings, is_transport_error};
use crate::backoff::Backoff;
use crate::contract::{Contract, Topic};
use crate::progress::PartitionBoard;
use crate::runner::{BatchObserver, CommittedBatch};
use crate::source::{
    Backlog, OriginalMessage, Partition, Position, RETRY_CEILING, SourceFeed, SourceMessage, SourcedEvent,
    resume_from_loop,
};

/// What the consumer needs besides the connection settings.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub schema_ids: SchemaIds,
    pub writer_schema_dir: Option<std::path::PathBuf>,
    /// Events the channel to the loop holds (about one batch).
    pub channel_capacity: usize,
}

/// State shared by the consumer thread, its callbacks and the rest of the projector.
#[derive(Debug)]
pub struct ConsumerShared {
    pub board: Arc<PartitionBoard>,
    /// Whether the broker answers: false from start until the first assignment
    /// or message, and after transport errors until the next message.
    pub broker_reachable: AtomicBool,
    pub rebalances: AtomicU64,
    /// Offsets the loop has committed to the store, waiting to be committed to Kafka.
    pending_kafka_commit: Mutex<HashMap<Partition, i64>>,
}

impl ConsumerShared {
    pub fn new(board: Arc<PartitionBoard>) -> ConsumerShared {
        ConsumerShared {
            board,
            broker_reachable: AtomicBool::new(false),
            rebalances: AtomicU64::new(0),
            pending_kafka_commit: Mutex::new(HashMap::new()),
        }
    }
}

/// After each committed batch: progress for the metrics, offsets for Kafka's advisory commit.
impl BatchObserver for ConsumerShared {
    fn batch_committed(&self, committed: &CommittedBatch<'_>) {
        self.board.applied(committed.checkpoints, committed.last_recorded_at);
        self.board.applied_held_back(committed.held_back);
        let mut pending = self.pending_kafka_commit.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for checkpoint in committed.checkpoints {
            pending.insert(Partition::of_checkpoint(checkpoint), checkpoint.next_offset);
        }
    }
}

/// Callbacks librdkafka runs on the consumer thread, inside `poll`.
struct ProjectorContext {
    settings: KafkaSettings,
    sender: mpsc::Sender<SourceMessage>,
    shared: Arc<ConsumerShared>,
}

impl ClientContext for ProjectorContext {
    fn stats(&self, statistics: Statistics) {
        for (name, topic) in &statistics.topics {
            for (partition, stats) in &topic.partitions {
                // librdkafka reports -1 until it knows, and a pseudo-partition -1 of its own.
                if *partition >= 0 && stats.hi_offset >= 0 {
                    self.shared.board.high_watermark(&Partition::new(name.as_str(), *partition), stats.hi_offset);
                }
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_transport_error(&error) {
            self.shared.broker_reachable.store(false, Ordering::Relaxed);
            tracing::debug!(%error, %reason, "kafka transport error");
        } else {
            tracing::warn!(%error, %reason, "kafka client error");
        }
    }
}

impl ConsumerContext for ProjectorContext {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, error: RDKafkaRespErr, partitions: &mut TopicPartitionList) {
        self.shared.rebalances.fetch_add(1, Ordering::Relaxed);
        match error {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let checkpoints = self.barrier().unwrap_or_default();
                let next: HashMap<Partition, i64> = checkpoints
                    .iter()
                    .map(|checkpoint| (Partition::of_checkpoint(checkpoint), checkpoint.next_offset))
                    .collect();
                let mut assignment = Vec::new();
                for element in partitions.elements() {
                    let partition = Partition::new(element.topic(), element.partition());
                    let start = next.get(&partition).copied();
                    assignment.push((partition, start.unwrap_or(0)));
                }
                for (partition, start) in &assignment {
                    let (topic, number) = (partition.stream.as_str(), partition.number);
                    tracing::debug!(topic, partition = number, start, "partition assigned");
                    let offset = if next.contains_key(partition) { Offset::Offset(*start) } else { Offset::Beginning };
                    if let Err(error) = partitions.set_partition_offset(topic, number, offset) {
                        tracing::error!(%error, topic, partition = number, "cannot set the start offset");
                    }
                }
                self.shared.board.assigned(&assignment);
                tracing::info!(
                    partitions = assignment.len(),
                    "partitions assigned; resuming from the store's checkpoints"
                );
                if let Err(error) = consumer.assign(partitions) {
                    tracing::error!(%error, "assignment failed");
                }
                self.shared.broker_reachable.store(true, Ordering::Relaxed);
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                // Everything read from the revoked partitions is written before they are released.
                let _ = self.barrier();
                tracing::info!(partitions = partitions.count(), "partitions revoked after their events were written");
                self.shared.board.assigned(&[]);
                if let Err(error) = consumer.unassign() {
                    tracing::error!(%error, "unassignment failed");
                }
            }
            other => {
                tracing::error!(error = ?other, "rebalance error; releasing every partition");
                let _ = self.barrier();
                self.shared.board.assigned(&[]);
                let _ = consumer.unassign();
            }
        }
    }
}

impl ProjectorContext {
    /// The store's checkpoints of this source, asked of the loop at a rebalance.
    /// `None` once the loop is gone (the projector is stopping).
    fn barrier(&self) -> Option<Vec<Checkpoint>> {
        // A revocation while stopping must still pass: it releases the partitions fully written.
        resume_from_loop(&self.sender, &|| false).map(|resume| resume.checkpoints)
    }
}

/// Starts the consumer thread and returns the feed of the projection loop.
pub fn start_consumer(
    settings: KafkaSettings,
    contract: Arc<Contract>,
    options: ConsumerOptions,
    shared: Arc<ConsumerShared>,
) -> anyhow::Result<SourceFeed> {
    let (sender, receiver) = mpsc::channel(options.channel_capacity.max(1));
    let stop = Arc::new(AtomicBool::new(false));
    let source_id = settings.source_id();
    let context = ProjectorContext { settings: settings.clone(), sender: sender.clone(), shared: Arc::clone(&shared) };
    let consumer: BaseConsumer<ProjectorContext> = settings
        .client_config()
        .set("group.id", &settings.group_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("statistics.interval.ms", "1000")
        // Topics created after the projector started are found within seconds.
        .set("topic.metadata.refresh.interval.ms", "5000")
        .set("partition.assignment.strategy", "range")
        // A member that died (SIGKILL, a lost host) loses its partitions to the others after 10 s.
        .set("session.timeout.ms", "10000")
        .set("heartbeat.interval.ms", "2000")
        .create_with_context(context)
        .context("failed to create the Kafka consumer")?;
    let topics: Vec<String> = Topic::ALL.iter().map(|topic| settings.topic_name(*topic)).collect();
    let topic_names: Vec<&str> = topics.iter().map(String::as_str).collect();
    consumer.subscribe(&topic_names).context("failed to subscribe to the topics")?;
    let thread_stop = Arc::clone(&stop);
    let backlog: Arc<dyn Backlog> = Arc::clone(&shared.board) as Arc<dyn Backlog>;
    let reader = std::thread::Builder::new()
        .name("kafka-source".into())
        .spawn(move || {
            let decoder = WireDecoder::new(contract, options.schema_ids, options.writer_schema_dir);
            consume(&consumer, decoder, &sender, &thread_stop, &shared);
            // Dropping the consumer leaves the group; its revocation passes the barrier first.
            drop(consumer);
            tracing::info!("left the consumer group");
        })
        .context("failed to start the Kafka consumer thread")?;
    Ok(SourceFeed { source_id, receiver, stop, reader, backlog })
}

/// The poll loop: until asked to stop, or until the loop is gone.
fn consume(
    consumer: &BaseConsumer<ProjectorContext>,
    mut decoder: WireDecoder,
    sender: &mpsc::Sender<SourceMessage>,
    stop: &AtomicBool,
    shared: &ConsumerShared,
) {
    let settings = &consumer.context().settings;
    let mut reported_caught_up = false;
    // The next offset handed to the loop, per partition.
    let mut handed_over: HashMap<Partition, i64> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        commit_to_kafka(consumer, shared);
        let message = match consumer.poll(Duration::from_millis(100)) {
            None => {
                // Idle: tell the loop once per stretch of idleness that it holds
                // everything, whether or not it has written it yet (a loop that
                // defers rendering writes no checkpoint until told).
                let caught_up = shared.board.caught_up_with(&handed_over);
                if caught_up && !reported_caught_up && sender.blocking_send(SourceMessage::CaughtUp).is_err() {
                    return;
                }
                reported_caught_up = caught_up;
                continue;
            }
            Some(Err(error)) => {
                // Logged when the broker is lost, not at every poll while it stays away.
                if is_transport_error(&error) && shared.broker_reachable.swap(false, Ordering::Relaxed) {
                    tracing::warn!(%error, "the Kafka broker is unreachable; retrying");
                } else if !is_transport_error(&error) {
                    tracing::warn!(%error, "kafka poll error; retrying");
                }
                continue;
            }
            Some(Ok(message)) => message,
        };
        reported_caught_up = false;
        shared.broker_reachable.store(true, Ordering::Relaxed);
        let position =
            Position { stream: message.topic().to_owned(), partition: message.partition(), offset: message.offset() };
        let original = Arc::new(OriginalMessage {
            key: message.key().map(<[u8]>::to_vec),
            value: message.payload().map(<[u8]>::to_vec),
        });
        let Some(topic) = settings.topic_of(message.topic()) else { continue };
        let outcome = decode_with_retry(&mut decoder, topic, message.payload(), stop);
        let Some(outcome) = outcome else { return };
        handed_over.insert(position.partition(), position.offset + 1);
        let event = SourcedEvent { position, outcome, original: Some(original) };
        if sender.blocking_send(SourceMessage::Event(event)).is_err() {
            return;
        }
    }
}

/// Decodes a value; while the schema registry is unreachable, waits and
/// retries (consumption pauses; nothing is parked). `None` when asked to stop.
fn decode_with_retry(
    decoder: &mut WireDecoder,
    topic: Topic,
    value: Option<&[u8]>,
    stop: &AtomicBool,
) -> Option<Result<crate::events::Event, crate::source::Rejection>> {
    let Some(value) = value else {
        return Some(Err(crate::source::Rejection::unidentified("a message without a value".into(), Some(topic))));
    };
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    loop {
        match decoder.decode(topic, value) {
            Ok(event) => return Some(Ok(event)),
            Err(WireError::Poison(rejection)) => return Some(Err(rejection)),
            Err(WireError::Unavailable(reason)) => {
                let delay = backoff.next_delay();
                tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "schema registry unavailable");
                std::thread::sleep(delay);
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
            }
        }
    }
}

/// Commits, asynchronously and advisorily, the offsets the store has committed.
fn commit_to_kafka(consumer: &BaseConsumer<ProjectorContext>, shared: &ConsumerShared) {
    let pending =
        std::mem::take(&mut *shared.pending_kafka_commit.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    if pending.is_empty() {
        return;
    }
    let mut offsets = TopicPartitionList::new();
    for (partition, next_offset) in pending {
        if let Err(error) =
            offsets.add_partition_offset(&partition.stream, partition.number, Offset::Offset(next_offset))
        {
            tracing::debug!(%error, "offset not committed to Kafka");
        }
    }
    if let Err(error) = consumer.commit(&offsets, CommitMode::Async) {
        // Advisory only: the store's checkpoints are what a restart reads.
        tracing::debug!(%error, "advisory Kafka commit failed");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::runner::RunTotals;
    use crate::source::Backlog;

    #[test]
    fn a_committed_batch_moves_the_board_and_only_its_checkpoints_go_to_kafka() {
        let board = Arc::new(PartitionBoard::new(Duration::from_secs(60)));
        let works = Partition::new("works", 0);
        board.assigned(&[(works.clone(), 0)]);
        board.high_watermark(&works, 100);
        let shared = ConsumerShared::new(Arc::clone(&board));
        let checkpoint =
            |next_offset| Checkpoint { source: "kafka:".into(), stream: "works".into(), partition: 0, next_offset };
        let committed = |checkpoints, held_back| CommittedBatch {
            checkpoints,
            held_back,
            last_recorded_at: &[],
            totals: RunTotals::default(),
            latency: Duration::ZERO,
            documents_awaiting_render: 0,
        };
        let seventy = [checkpoint(70)];
        shared.batch_committed(&committed(&[], &seventy));
        assert_eq!(board.left(0), Some(30), "held back, applied");
        assert!(shared.pending_kafka_commit.lock().expect("lock").is_empty(), "not stored, not committed");
        shared.batch_committed(&committed(&seventy, &[]));
        assert_eq!(board.report()[0].lag_messages, Some(30));
        assert_eq!(shared.pending_kafka_commit.lock().expect("lock").get(&works), Some(&70));
    }
}
