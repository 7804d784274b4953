//! Event sources: where events come from, and the position of each event in
//! its source, which becomes the checkpoint.
//!
//! A source only reads, decodes and validates; it never applies anything.

pub mod file;

use crate::contract::Topic;
use crate::events::Event;

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
