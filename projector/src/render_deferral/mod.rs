//! Rendering deferred while the projector is behind its source.
//!
//! A work changes in several batches of a backlog (its registration, its
//! rights, its certificate, later amendments), and each batch that renders it
//! rewrites all its documents. While batches fill up, so that more events are
//! waiting, the loop defers rendering: each batch writes states, provenance,
//! index entries and party references, and the documents it changed wait
//! here, with its checkpoints. They are rendered together, once per document,
//! when the source has caught up, a batch is cut by its linger time, a
//! rebalance or a stop, or a bound below is reached; the last write of that
//! rendering carries the checkpoints held back, so a crash before it replays
//! the deferred events, and their skipped duplicates mark the documents to
//! render again (see [`crate::projection::batch`]).
//!
//! This module owns the bookkeeping and the rule of when to stop deferring;
//! it reads and writes nothing. The documents wait as compact sorted keys
//! ([`waiting_documents`]), so that a backlog of millions of works can be
//! rendered once within the projector's memory.

mod waiting_documents;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use read_model::Checkpoint;
use read_model::calendar::Timestamp;

use self::waiting_documents::WaitingDocuments;
use crate::projection::batch::{BatchOutcome, DocumentsToRender};
use crate::source::Partition;

/// How far rendering may be deferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderDeferral {
    /// Documents that may wait; 0 renders each batch's documents in the batch.
    pub max_documents: usize,
    /// The longest the first waiting document waits.
    pub max_wait: Duration,
    /// The most waiting documents one write renders. A rendered work weighs
    /// many times its events (its states, and its documents as JSON), so
    /// these writes, not the event batches, set the projector's peak memory:
    /// with 10,000 documents a write, batches of 20,000 events peaked at
    /// 455–513 MiB, with 5,000 at 346–352 MiB, at the same speed.
    pub max_documents_per_write: usize,
}

impl RenderDeferral {
    /// The projector's defaults: five million documents (their keys take
    /// about 7 bytes each while they wait), or two minutes, the longest that
    /// documents of the version being served go stale while the projector
    /// catches up; rendered 5,000 to a write. One round renders the backlog
    /// of a registry of 1,000,000 works on two cores.
    pub const DEFAULT: RenderDeferral =
        RenderDeferral { max_documents: 5_000_000, max_wait: Duration::from_secs(120), max_documents_per_write: 5_000 };

    /// A rebuild's: nobody reads the version until it is activated, so the
    /// wait only bounds what a restart repeats (the events since the
    /// checkpoints held back), ten minutes, in which two otherwise idle
    /// cores apply the events of a registry of 3,000,000 works.
    pub const REBUILD: RenderDeferral =
        RenderDeferral { max_wait: Duration::from_secs(600), ..RenderDeferral::DEFAULT };
}

/// What deferred batches left: documents to render, and the checkpoints and
/// last recorded-at times that may be written only once they are rendered.
#[derive(Debug, Default)]
pub struct DeferredRenders {
    documents: WaitingDocuments,
    checkpoints: BTreeMap<Partition, Checkpoint>,
    last_recorded_at: BTreeMap<Partition, Timestamp>,
    /// When the first batch deferred its rendering.
    since: Option<Instant>,
}

impl DeferredRenders {
    /// Whether a batch cut because it filled up may defer its rendering.
    pub fn may_defer(&self, deferral: RenderDeferral, now: Instant) -> bool {
        deferral.max_documents > 0
            && self.documents.len() < deferral.max_documents
            && self.since.is_none_or(|since| now.duration_since(since) < deferral.max_wait)
    }

    /// Whether anything waits: documents, or checkpoints held back.
    pub fn is_waiting(&self) -> bool {
        self.since.is_some()
    }

    /// When waiting documents must be rendered even if no batch is cut.
    pub fn deadline(&self, deferral: RenderDeferral) -> Option<Instant> {
        self.since.map(|since| since + deferral.max_wait)
    }

    /// Takes over what a deferred batch left.
    pub fn hold(&mut self, outcome: &mut BatchOutcome, last_recorded_at: &[(Partition, Timestamp)], started: Instant) {
        self.since.get_or_insert(started);
        self.documents.add(std::mem::take(&mut outcome.deferred));
        for checkpoint in outcome.held_checkpoints.drain(..) {
            let key = Partition::of_checkpoint(&checkpoint);
            match self.checkpoints.get(&key) {
                Some(held) if held.next_offset >= checkpoint.next_offset => {}
                _ => {
                    self.checkpoints.insert(key, checkpoint);
                }
            }
        }
        for (partition, at) in last_recorded_at {
            self.last_recorded_at.insert(partition.clone(), *at);
        }
    }

    /// Adds documents that a deferred batch found to render when it was projected again.
    pub fn add(&mut self, documents: DocumentsToRender) {
        self.documents.add(documents);
    }

    /// The next documents to render, in key order.
    pub fn next_documents(&mut self, count: usize) -> DocumentsToRender {
        self.documents.take_first(count)
    }

    pub fn has_documents(&self) -> bool {
        !self.documents.is_empty()
    }

    /// Works and licenses waiting, a document deferred by batches far apart
    /// counted once for each until their keys are merged (see [`waiting_documents`]).
    pub fn document_count(&self) -> usize {
        self.documents.len()
    }

    /// Once every document is rendered: the checkpoints, the last
    /// recorded-at times and the time the wait began, for the last write.
    pub fn release(&mut self) -> Released {
        let released = Released {
            checkpoints: std::mem::take(&mut self.checkpoints).into_values().collect(),
            last_recorded_at: std::mem::take(&mut self.last_recorded_at).into_iter().collect(),
            since: self.since.take(),
        };
        self.documents = WaitingDocuments::default();
        released
    }
}

/// What deferred batches held back, released with the write that renders their last documents.
#[derive(Debug)]
pub struct Released {
    pub checkpoints: Vec<Checkpoint>,
    pub last_recorded_at: Vec<(Partition, Timestamp)>,
    pub since: Option<Instant>,
}

#[cfg(test)]
mod tests {
    use read_model::PartyReferrer;

    use super::*;

    const DEFERRAL: RenderDeferral =
        RenderDeferral { max_documents: 3, max_wait: Duration::from_secs(30), max_documents_per_write: 5_000 };

    fn checkpoint(partition: i32, next_offset: i64) -> Checkpoint {
        Checkpoint { source: "kafka".into(), stream: "works".into(), partition, next_offset }
    }

    fn deferred_batch(works: &[&str], checkpoints: Vec<Checkpoint>) -> BatchOutcome {
        let referrers: Vec<PartyReferrer> = works.iter().map(|id| PartyReferrer::Work((*id).to_owned())).collect();
        BatchOutcome {
            deferred: DocumentsToRender::of(&referrers),
            held_checkpoints: checkpoints,
            ..BatchOutcome::default()
        }
    }

    #[test]
    fn deferral_stops_at_either_bound_and_never_when_turned_off() {
        let start = Instant::now();
        let mut deferred = DeferredRenders::default();
        assert!(deferred.may_defer(DEFERRAL, start));
        let turned_off = RenderDeferral { max_documents: 0, ..DEFERRAL };
        assert!(!deferred.may_defer(turned_off, start));
        deferred.hold(&mut deferred_batch(&["LCC-1", "LCC-2"], vec![]), &[], start);
        assert!(deferred.may_defer(DEFERRAL, start + Duration::from_secs(29)));
        assert!(!deferred.may_defer(DEFERRAL, start + Duration::from_secs(30)), "waited too long");
        assert_eq!(deferred.deadline(DEFERRAL), Some(start + Duration::from_secs(30)));
        deferred.hold(&mut deferred_batch(&["LCC-2", "LCC-3"], vec![]), &[], start + Duration::from_secs(1));
        assert!(!deferred.may_defer(DEFERRAL, start), "three documents wait");
    }

    #[test]
    fn documents_are_released_in_order_and_the_furthest_checkpoints_last() {
        let start = Instant::now();
        let mut deferred = DeferredRenders::default();
        let mut first = deferred_batch(&["LCC-3", "LCC-1"], vec![checkpoint(0, 10), checkpoint(1, 5)]);
        deferred.hold(&mut first, &[], start);
        let mut second = deferred_batch(&["LCC-2"], vec![checkpoint(0, 20)]);
        deferred.hold(&mut second, &[], start);
        assert!(first.deferred.is_empty() && first.held_checkpoints.is_empty(), "taken over");

        assert_eq!(deferred.next_documents(2), DocumentsToRender::of(&[work("LCC-1"), work("LCC-2")]));
        assert!(deferred.has_documents());
        assert_eq!(deferred.next_documents(2), DocumentsToRender::of(&[work("LCC-3")]));
        assert!(!deferred.has_documents() && deferred.is_waiting(), "the checkpoints still wait");
        let released = deferred.release();
        assert_eq!(released.checkpoints, [checkpoint(0, 20), checkpoint(1, 5)]);
        assert_eq!(released.since, Some(start));
        assert!(!deferred.is_waiting());
    }

    fn work(id: &str) -> PartyReferrer {
        PartyReferrer::Work(id.to_owned())
    }
}
