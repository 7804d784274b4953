//! Event sources: where events come from, and the position of each event in
//! its source, which becomes the checkpoint.
//!
//! A source only reads, decodes and validates; it never applies anything.

pub mod file;
pub mod kafka;

pub mod wire;

use std::sync::Arc;

use apache_avro::types::Value;

use crate::contract::{Contract, Topic};
use crate::events::Event;
use crate::events::decode::decode_event;
use crate::events::validate::validate;
use crate::resolution::Resolver;

/// Where an event sits in its source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginalMessage {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

/// Why an event cannot be used, with what is known of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub topic: Option<Topic>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub aggregate_id: Option<String>,
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

/// Resolves a value written on `topic` to the contract, decodes it and validates it.
pub fn event_from_value(
    contract: &Contract,
    topic: Topic,
    resolver: &Resolver,
    value: Value,
) -> Result<Event, Rejection> {
    let value = resolver.resolve(value).map_err(|error| Rejection::unidentified(error, Some(topic)))?;
    let event = decode_event(contract, topic, &value)
        .map_err(|error| Rejection::unidentified(format!("undecodable: {error}"), Some(topic)))?;
    let snapshot = Rejection::of(&event, String::new());
    validate(event).map_err(|reason| Rejection { reason: format!("invalid: {reason}"), ..snapshot })
}
