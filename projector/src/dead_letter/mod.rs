//! Dead letters: where the events the projector cannot use are parked, with
//! their position and the reason, so that the stream goes on.
//!
//! [`DeadLetterSink`] is the interface the loop parks through; [`mod@file`]
//! is the file source's sink (one JSON line per event), [`topic`] the Kafka
//! source's (the dead-letter topic, with the original message). A sink
//! must not decide what is poison: the loop hands it what was rejected.

pub mod file;
pub mod topic;

use std::sync::Arc;

pub use self::file::DeadLetterFile;
use crate::source::{OriginalMessage, Position, Rejection};

/// One parked event, with the original message when the source keeps it.
#[derive(Debug, Clone)]
pub struct ParkedEvent {
    pub position: Position,
    pub rejection: Rejection,
    pub original: Option<Arc<OriginalMessage>>,
}

/// Where parked events go: a file or a dead-letter topic.
///
/// Parking is split in two so that waiting for durability (a file sync, a
/// broker's acknowledgement) stays off the path of every batch: the loop
/// parks a batch's poison events as soon as it is projected, and flushes
/// only before a write that carries checkpoints. A crash before that write
/// reads the events again from the older checkpoints and parks them again.
pub trait DeadLetterSink: Send {
    /// Hands the events over to be parked. Returns how many were new.
    fn park(&mut self, source: &str, events: &[ParkedEvent]) -> anyhow::Result<usize>;

    /// Returns once every event handed over so far is parked durably.
    fn flush(&mut self) -> anyhow::Result<()>;
}
