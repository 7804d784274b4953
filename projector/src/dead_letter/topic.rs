//! The dead-letter topic: poison events, parked with their origin and the
//! reason, listed and re-driven by an operator.
//!
//! A parked record keeps the original key and value, so it can be re-driven
//! once the cause is fixed (a schema registered, a producer corrected), and
//! carries headers: `origin-topic`, `origin-partition`, `origin-offset`,
//! `error`, `parked-at`, and `event-id`, `event-type`, `aggregate-id` when the
//! event decoded far enough to know them. The topic therefore holds what the
//! upstream topics hold, personal data of party events included, and needs
//! the same access control.
//!
//! Parking is at least once: records are sent as their batch is projected
//! and flushed before a write whose checkpoints pass them commits; a crash
//! in between parks them again on restart, and records whose flush failed
//! are sent again. Listing shows each origin position once; re-driving the
//! same event twice is harmless, since the projector skips an aggregate
//! version it has applied.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::{ClientConfig, ClientContext};
use read_model::calendar::Timestamp;
use serde::Serialize;

use super::{DeadLetterSink, ParkedEvent};
use crate::source::kafka::{KafkaSettings, is_transport_error};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Counts deliveries that failed, so a flush can tell whether all arrived.
#[derive(Debug, Default)]
struct DeliveryFailures(Arc<AtomicU64>);

impl ClientContext for DeliveryFailures {}

impl ProducerContext for DeliveryFailures {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, (): ()) {
        if let Err((error, _)) = result {
            tracing::warn!(%error, "a record was not delivered");
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A producer whose `flush` says whether every record sent since the last flush arrived.
struct CheckedProducer {
    producer: BaseProducer<DeliveryFailures>,
    failures: Arc<AtomicU64>,
}

impl CheckedProducer {
    fn new(config: &ClientConfig) -> anyhow::Result<CheckedProducer> {
        let failures = Arc::new(AtomicU64::new(0));
        let producer = config
            .clone()
            .set("enable.idempotence", "true")
            .set("message.timeout.ms", "30000")
            .create_with_context(DeliveryFailures(Arc::clone(&failures)))
            .context("failed to create the Kafka producer")?;
        Ok(CheckedProducer { producer, failures })
    }

    fn send(&self, mut record: BaseRecord<'_, [u8], [u8]>) -> anyhow::Result<()> {
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    self.producer.poll(Duration::from_millis(100));
                }
                Err((error, _)) => return Err(error).context("failed to send a record"),
            }
        }
    }

    fn flush(&self) -> anyhow::Result<()> {
        self.producer.flush(TIMEOUT).context("failed to flush records to Kafka")?;
        let failed = self.failures.swap(0, Ordering::Relaxed);
        if failed > 0 {
            bail!("{failed} records were not delivered");
        }
        Ok(())
    }
}

/// Parks poison events on the dead-letter topic.
pub struct DeadLetterTopic {
    producer: CheckedProducer,
    topic: String,
    /// Records sent since the last successful flush, with their parking time.
    unflushed: Vec<(ParkedEvent, String)>,
    /// Whether the last flush failed, so that its records are sent again.
    flush_failed: bool,
}

impl std::fmt::Debug for DeadLetterTopic {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("DeadLetterTopic").field("topic", &self.topic).finish_non_exhaustive()
    }
}

impl DeadLetterTopic {
    pub fn new(settings: &KafkaSettings) -> anyhow::Result<DeadLetterTopic> {
        Ok(DeadLetterTopic {
            producer: CheckedProducer::new(&settings.client_config())?,
            topic: settings.dead_letter_topic.clone(),
            unflushed: Vec::new(),
            flush_failed: false,
        })
    }

    /// Sends one record: the original message, with headers naming its origin and the error.
    fn send(&self, event: &ParkedEvent, parked_at: &str) -> anyhow::Result<()> {
        let rejection = &event.rejection;
        let partition = event.position.partition.to_string();
        let offset = event.position.offset.to_string();
        let mut headers = OwnedHeaders::new()
            .insert(Header { key: "origin-topic", value: Some(event.position.stream.as_str()) })
            .insert(Header { key: "origin-partition", value: Some(partition.as_str()) })
            .insert(Header { key: "origin-offset", value: Some(offset.as_str()) })
            .insert(Header { key: "error", value: Some(rejection.reason.as_str()) })
            .insert(Header { key: "parked-at", value: Some(parked_at) });
        for (key, value) in [
            ("event-id", &rejection.event_id),
            ("event-type", &rejection.event_type),
            ("aggregate-id", &rejection.aggregate_id),
        ] {
            if let Some(value) = value {
                headers = headers.insert(Header { key, value: Some(value.as_str()) });
            }
        }
        let original = event.original.as_deref();
        let mut record = BaseRecord::to(&self.topic).headers(headers);
        if let Some(key) = original.and_then(|original| original.key.as_deref()) {
            record = record.key(key);
        }
        if let Some(value) = original.and_then(|original| original.value.as_deref()) {
            record = record.payload(value);
        }
        self.producer.send(record)
    }
}

impl DeadLetterSink for DeadLetterTopic {
    /// A record that cannot be sent now is sent again by the next flush,
    /// which fails until every record has arrived.
    fn park(&mut self, _source: &str, events: &[ParkedEvent]) -> anyhow::Result<usize> {
        let parked_at = Timestamp::now().to_string();
        for event in events {
            if !self.flush_failed
                && let Err(error) = self.send(event, &parked_at)
            {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "a parked record was not sent; the next flush sends it again"
                );
                self.flush_failed = true;
            }
            self.unflushed.push((event.clone(), parked_at.clone()));
        }
        Ok(events.len())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        if self.flush_failed {
            for (event, parked_at) in &self.unflushed {
                self.send(event, parked_at)?;
            }
        }
        // Until the flush succeeds, its records count as failed (a delivery may fail after the send).
        self.flush_failed = true;
        self.producer.flush()?;
        self.flush_failed = false;
        self.unflushed.clear();
        Ok(())
    }
}

/// One record of the dead-letter topic, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParkedRecord {
    pub origin_topic: String,
    pub origin_partition: i32,
    pub origin_offset: i64,
    pub error: String,
    pub parked_at: String,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub aggregate_id: Option<String>,
    /// Where the record sits on the dead-letter topic.
    pub dead_letter_partition: i32,
    pub dead_letter_offset: i64,
    #[serde(skip)]
    pub key: Option<Vec<u8>>,
    #[serde(skip)]
    pub value: Option<Vec<u8>>,
}

impl ParkedRecord {
    fn of(message: &rdkafka::message::BorrowedMessage<'_>) -> ParkedRecord {
        let header = |name: &str| -> Option<String> {
            message.headers().and_then(|headers| {
                headers
                    .iter()
                    .find(|header| header.key == name)
                    .and_then(|header| header.value)
                    .map(|value| String::from_utf8_lossy(value).into_owned())
            })
        };
        ParkedRecord {
            origin_topic: header("origin-topic").unwrap_or_default(),
            origin_partition: header("origin-partition").and_then(|value| value.parse().ok()).unwrap_or(-1),
            origin_offset: header("origin-offset").and_then(|value| value.parse().ok()).unwrap_or(-1),
            error: header("error").unwrap_or_default(),
            parked_at: header("parked-at").unwrap_or_default(),
            event_id: header("event-id"),
            event_type: header("event-type"),
            aggregate_id: header("aggregate-id"),
            dead_letter_partition: message.partition(),
            dead_letter_offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            value: message.payload().map(<[u8]>::to_vec),
        }
    }
}

/// Reads `partitions` of the dead-letter topic from `start` (per partition) to its current
/// end, told by the end-of-partition events of fetching (which follow the
/// fetch responses' high watermarks). Returns the records and the next
/// offset of each partition.
fn read_to_end(
    consumer: &BaseConsumer,
    topic: &str,
    partitions: &[i32],
    start: impl Fn(i32) -> Offset,
) -> anyhow::Result<(Vec<ParkedRecord>, BTreeMap<i32, i64>)> {
    let mut assignment = TopicPartitionList::new();
    let mut next = BTreeMap::new();
    for partition in partitions {
        let offset = start(*partition);
        if let Offset::Offset(at) = offset {
            next.insert(*partition, at);
        }
        assignment.add_partition_offset(topic, *partition, offset).context("bad start offset")?;
    }
    consumer.assign(&assignment).context("failed to assign the dead-letter topic")?;
    let mut records = Vec::new();
    let mut at_end = HashSet::new();
    let mut idle_polls = 0;
    while at_end.len() < partitions.len() {
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(message)) => {
                idle_polls = 0;
                at_end.remove(&message.partition());
                next.insert(message.partition(), message.offset() + 1);
                records.push(ParkedRecord::of(&message));
            }
            Some(Err(KafkaError::PartitionEOF(partition))) => {
                at_end.insert(partition);
            }
            // A broker of several gone: the client reaches the partitions' new leaders by itself.
            Some(Err(error)) if is_transport_error(&error) => {
                tracing::debug!(%error, "a broker cannot be reached; reading on");
                idle_polls += 1;
            }
            Some(Err(error)) => return Err(error).context("failed to read the dead-letter topic"),
            None => {
                idle_polls += 1;
                // Sixty idle polls (30 s) without reaching the end: the broker stopped answering.
                if idle_polls > 60 {
                    bail!("timed out reading the dead-letter topic");
                }
            }
        }
    }
    Ok((records, next))
}

/// A consumer of the dead-letter topic in the group `GROUP.SUFFIX`, with the topic's partitions.
fn dead_letter_reader(settings: &KafkaSettings, group_suffix: &str) -> anyhow::Result<(BaseConsumer, Vec<i32>)> {
    let consumer: BaseConsumer = settings
        .client_config()
        .set("group.id", format!("{}.{group_suffix}", settings.group_id))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .create()
        .context("failed to create the Kafka consumer")?;
    let topic = &settings.dead_letter_topic;
    let metadata = consumer.fetch_metadata(Some(topic), TIMEOUT).context("failed to read the topic's metadata")?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|candidate| candidate.name() == topic && candidate.error().is_none())
        .flat_map(|candidate| candidate.partitions().iter().map(|partition| partition.id()))
        .collect();
    if partitions.is_empty() {
        bail!("the dead-letter topic {topic} does not exist");
    }
    Ok((consumer, partitions))
}

/// Every parked event, one per origin position, in dead-letter order.
pub fn list_dead_letters(settings: &KafkaSettings) -> anyhow::Result<Vec<ParkedRecord>> {
    let (consumer, partitions) = dead_letter_reader(settings, "dead-letter-list")?;
    let (records, _) = read_to_end(&consumer, &settings.dead_letter_topic, &partitions, |_| Offset::Beginning)?;
    Ok(unique_by_origin(records))
}

fn unique_by_origin(records: Vec<ParkedRecord>) -> Vec<ParkedRecord> {
    let mut seen = HashSet::new();
    records
        .into_iter()
        .filter(|record| seen.insert((record.origin_topic.clone(), record.origin_partition, record.origin_offset)))
        .collect()
}

/// Produces every parked event not re-driven before back onto its origin
/// topic, with its key, then records (in the group `GROUP.redrive`) how far
/// the dead-letter topic has been re-driven. Returns the events re-driven.
pub fn redrive_dead_letters(settings: &KafkaSettings) -> anyhow::Result<Vec<ParkedRecord>> {
    let (consumer, partitions) = dead_letter_reader(settings, "redrive")?;
    let topic = &settings.dead_letter_topic;
    let mut list = TopicPartitionList::new();
    for partition in &partitions {
        list.add_partition(topic, *partition);
    }
    let committed = consumer.committed_offsets(list, TIMEOUT).context("failed to read re-driven offsets")?;
    let start = |partition: i32| match committed.find_partition(topic, partition).map(|element| element.offset()) {
        Some(Offset::Offset(offset)) => Offset::Offset(offset),
        _ => Offset::Beginning,
    };
    let (records, next) = read_to_end(&consumer, topic, &partitions, start)?;
    let records = unique_by_origin(records);
    let producer = CheckedProducer::new(&settings.client_config())?;
    for record in &records {
        let mut produced = BaseRecord::to(&record.origin_topic);
        if let Some(key) = record.key.as_deref() {
            produced = produced.key(key);
        }
        if let Some(value) = record.value.as_deref() {
            produced = produced.payload(value);
        }
        producer.send(produced)?;
    }
    producer.flush()?;
    let mut done = TopicPartitionList::new();
    for (partition, offset) in next {
        done.add_partition_offset(topic, partition, Offset::Offset(offset)).context("bad offset")?;
    }
    consumer.commit(&done, CommitMode::Sync).context("failed to record how far the dead letters were re-driven")?;
    Ok(records)
}
