//! What the loop tells the rest of the projector about each committed
//! batch: Kafka's advisory offset commits and the metrics observe it. An
//! observer must not block the loop, and it learns of a batch only once the
//! store has it.

use std::sync::Arc;
use std::time::Duration;

use read_model::Checkpoint;
use read_model::calendar::Timestamp;

use super::RunTotals;
use crate::source::Partition;

/// Told about every committed batch.
pub trait BatchObserver: Send + Sync + std::fmt::Debug {
    fn batch_committed(&self, committed: &CommittedBatch<'_>);
}

/// A batch that has been written, checkpoints included.
#[derive(Debug)]
pub struct CommittedBatch<'a> {
    pub checkpoints: &'a [Checkpoint],
    /// Where the batch's events end, for a batch that deferred rendering its
    /// documents: applied to the states, but its checkpoints wait for the
    /// deferred documents (and a restart repeats its events).
    pub held_back: &'a [Checkpoint],
    /// The recorded-at time of the last applied event per partition.
    pub last_recorded_at: &'a [(Partition, Timestamp)],
    pub totals: RunTotals,
    /// From the batch's first event to its commit.
    pub latency: Duration,
    /// Documents whose rendering was deferred and that still wait once this batch is written.
    pub documents_awaiting_render: usize,
}

/// Observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl BatchObserver for NoObserver {
    fn batch_committed(&self, _: &CommittedBatch<'_>) {}
}

/// Several observers of one run, told in order.
#[derive(Debug, Default)]
pub struct Observers(pub Vec<Arc<dyn BatchObserver>>);

impl BatchObserver for Observers {
    fn batch_committed(&self, committed: &CommittedBatch<'_>) {
        for observer in &self.0 {
            observer.batch_committed(committed);
        }
    }
}
