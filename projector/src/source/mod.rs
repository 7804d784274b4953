//! Event sources: where events come from, and the position of each event in
//! its source, which becomes the checkpoint.
//!
//! A source reads, decodes and validates on a thread of its own and hands
//! events to the projection loop through a [`SourceFeed`]; it never applies
//! anything, and it must not know the loop or the store's write path. Every
//! source learns where to start the same way: it asks the loop for the
//! store's checkpoints through a barrier ([`resume_from_loop`]), whose
//! answer also says whether the loop takes events in any order.

pub mod container;
pub mod file;
pub mod kafka;
pub mod record_count;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use apache_avro::types::Value;
use read_model::Checkpoint;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::backoff::Backoff;
use crate::contract::{Contract, Topic};
use crate::events::Event;
use crate::events::decode::{RecordError, decode_datum};
use crate::events::validate::validate;
use crate::resolution::Resolver;

/// One partition of one stream: a topic's partition, or a file (partition 0).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    /// A topic, or for the file source a file name.
    pub stream: String,
    pub number: i32,
}

impl Partition {
    pub fn new(stream: impl Into<String>, number: i32) -> Partition {
        Partition { stream: stream.into(), number }
    }

    /// The partition a checkpoint is for.
    pub fn of_checkpoint(checkpoint: &Checkpoint) -> Partition {
        Partition::new(checkpoint.stream.clone(), checkpoint.partition)
    }
}

/// What a source hands to the projection loop, in order.
// Events cross the channel by value: boxing each would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum SourceMessage {
    Event(SourcedEvent),
    /// Events in order, as [`SourceMessage::Event`] each: a source that
    /// reads many at a time sends them in one message, so the channel's
    /// cost (a wait and a wake-up on each side) is paid once for all.
    Events(Vec<SourcedEvent>),
    /// Everything the source holds now has been sent.
    CaughtUp,
    Failed(String),
    /// Write everything sent before this message, then answer with the
    /// store's checkpoints of this source. Sent when partitions are revoked
    /// (so they are released fully written) and when partitions are assigned
    /// (so they resume from the store, not from Kafka's committed offsets).
    Barrier(std::sync::mpsc::SyncSender<Result<Resume, String>>),
}

/// The loop's answer to a barrier.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resume {
    /// The store's checkpoints of this source.
    pub checkpoints: Vec<Checkpoint>,
    /// The loop takes in everything up to the next barrier or catch-up
    /// before it writes any of it, sorted (a sorted catch-up), so the
    /// source may send its partitions in any order until then.
    pub any_order: bool,
}

/// A running source: its reader thread, the channel it sends on, and how to stop it.
#[derive(Debug)]
pub struct SourceFeed {
    /// The id under which the source's checkpoints are stored.
    pub source_id: String,
    pub receiver: mpsc::Receiver<SourceMessage>,
    /// Set to ask the reader to stop; it then ends and closes the channel.
    pub stop: Arc<AtomicBool>,
    pub reader: std::thread::JoinHandle<()>,
    /// What the source can tell of the events it holds that the run has not committed.
    pub backlog: Arc<dyn Backlog>,
}

/// What a source can tell of the events it holds beyond what a run commits.
///
/// The file source counts the records its files hold beyond the checkpoints
/// the run started from ([`file::RecordsFound`]); the Kafka consumer reports
/// its partitions' lag ([`crate::progress::PartitionBoard`]).
pub trait Backlog: Send + Sync + std::fmt::Debug {
    /// Events not committed yet, given the events `committed` since the run
    /// started; `None` while that is unknown.
    fn left(&self, committed: u64) -> Option<u64>;
}

/// A source thread's retries wait at most this long between attempts.
pub const RETRY_CEILING: Duration = Duration::from_secs(10);

/// Has the loop write what it was sent and answer with the store's
/// checkpoints of this source, through a [`SourceMessage::Barrier`]; retries
/// while the store cannot answer. `None` once the loop is gone, or once
/// `give_up` says so between attempts. Called by a source's thread.
pub fn resume_from_loop(sender: &mpsc::Sender<SourceMessage>, give_up: &dyn Fn() -> bool) -> Option<Resume> {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    loop {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        sender.blocking_send(SourceMessage::Barrier(reply)).ok()?;
        match answer.recv().ok()? {
            Ok(resume) => return Some(resume),
            Err(error) => {
                let delay = backoff.next_delay();
                tracing::warn!(%error, retry_in_ms = delay.as_millis() as u64, "cannot read the store's checkpoints");
                if give_up() {
                    return None;
                }
                std::thread::sleep(delay);
            }
        }
    }
}

/// The offset after the last event read of each partition: the checkpoints
/// of everything read.
#[derive(Debug, Default)]
pub struct NextOffsets(BTreeMap<Partition, i64>);

impl NextOffsets {
    /// Notes an event read at `position`.
    pub fn advance(&mut self, position: &Position) {
        let next = self.0.entry(position.partition()).or_insert(0);
        *next = (*next).max(position.offset + 1);
    }

    /// The checkpoints of `source` that everything read so far passes.
    pub fn checkpoints(&self, source: &str) -> Vec<Checkpoint> {
        self.0
            .iter()
            .map(|(partition, next_offset)| Checkpoint {
                source: source.to_owned(),
                stream: partition.stream.clone(),
                partition: partition.number,
                next_offset: *next_offset,
            })
            .collect()
    }
}

/// Where an event sits in its source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    /// A topic, or for the file source a file name.
    pub stream: String,
    pub partition: i32,
    pub offset: i64,
}

/// One event read from a source: usable, or rejected with the reason.
#[derive(Debug, Clone)]
pub struct SourcedEvent {
    pub position: Position,
    pub outcome: Result<Event, Rejection>,
    /// The message as read, kept by sources whose dead letters carry it (Kafka).
    pub original: Option<Arc<OriginalMessage>>,
}

/// A message as the source delivered it, for a dead-letter topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginalMessage {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

/// Why an event cannot be used, with what is known of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub reason: String,
    pub topic: Option<Topic>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub aggregate_id: Option<String>,
}

impl Position {
    /// The partition the event sits in.
    pub fn partition(&self) -> Partition {
        Partition::new(self.stream.clone(), self.partition)
    }
}

impl Rejection {
    /// A rejection of an event known only by its position.
    pub fn unidentified(reason: String, topic: Option<Topic>) -> Rejection {
        Rejection { reason, topic, event_id: None, event_type: None, aggregate_id: None }
    }

    /// A rejection of a decoded event.
    pub fn of(event: &Event, reason: String) -> Rejection {
        Rejection {
            reason,
            topic: Some(event.topic),
            event_id: Some(event.envelope.event_id.clone()),
            event_type: Some(event.envelope.event_type.clone()),
            aggregate_id: Some(event.envelope.aggregate_id.clone()),
        }
    }
}

/// Resolves a value written on `topic` to the contract, decodes it and
/// validates it. The resolved value is written again with the contract's
/// schema and decoded from those bytes, as an event written with it is.
pub fn event_from_value(
    contract: &Contract,
    topic: Topic,
    resolver: &Resolver,
    value: Value,
) -> Result<Event, Rejection> {
    let unidentified = |reason| Rejection::unidentified(reason, Some(topic));
    let value = resolver.resolve(value).map_err(unidentified)?;
    let codec = contract.datum_codec(topic);
    let datum = codec.write_value(value).map_err(|error| unidentified(format!("undecodable: {error}")))?;
    let decoded = decode_datum(topic, codec, &mut datum.as_slice())
        .map_err(|error| unidentified(format!("undecodable: {error}")))?;
    accept(topic, resolver, decoded)
}

/// The event decoded on `topic` from bytes of the writer `resolver`
/// resolves, if it validates.
pub fn accept(topic: Topic, resolver: &Resolver, decoded: Result<Event, RecordError>) -> Result<Event, Rejection> {
    let mut event = decoded.map_err(|error| {
        let reason = match error {
            RecordError::OutsideContract(index) => resolver.outside_contract(index),
            RecordError::Shape(reason) => format!("undecodable: {reason}"),
        };
        Rejection::unidentified(reason, Some(topic))
    })?;
    match validate(&mut event) {
        Ok(()) => Ok(event),
        Err(reason) => Err(Rejection::of(&event, format!("invalid: {reason}"))),
    }
}
