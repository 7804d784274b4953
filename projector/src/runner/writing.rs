//! Writing a projected batch while the loop projects the next one: at most
//! one write in flight, on a task of its own, committed in order; what it
//! counts once committed; and what happens when another projector sharing
//! the store changed what the batch was rendered from (see
//! [`read_model::read_set`]): the batch is projected again (the store
//! refused it) or its stale documents are rendered again (the store wrote it
//! and reported them).
//!
//! It must not read from the source or park events: the loop does both.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use read_model::calendar::Timestamp;
use read_model::{Checkpoint, CommitMark, ModelVersion, Store, StoreError, WriteBatch};
use tracing::Instrument;

use super::RunTotals;
use super::observer::{BatchObserver, CommittedBatch};
use super::retry::{GiveUp, while_store_unavailable};
use crate::projection::batch::{
    BatchOutcome, DocumentsToRender, Rendering, project_batch, render_documents, render_stale_again,
};
use crate::source::{Partition, SourcedEvent};

/// What every write of the loop goes to.
pub(super) struct Writing<'a> {
    pub(super) store: &'a Arc<dyn Store>,
    pub(super) version: ModelVersion,
    pub(super) source_id: &'a str,
    pub(super) observer: &'a dyn BatchObserver,
    pub(super) change_feed_retention: std::time::Duration,
    /// Set when the projector is asked to stop: writes stop waiting for the store.
    pub(super) give_up: &'a GiveUp,
}

impl Writing<'_> {
    /// Starts writing a projected batch on a task of its own, inside the batch's span.
    pub(super) fn start(&self, reprojection: Reprojection, outcome: BatchOutcome, progress: Progress) -> InFlight {
        let batch = Arc::new(WriteBatch { change_feed_retention: Some(self.change_feed_retention), ..outcome.write });
        let totals = RunTotals {
            events: reprojection.event_count(),
            applied: outcome.applied,
            skipped_as_duplicates: outcome.skipped_as_duplicates,
            parked: outcome.parked.len() as u64,
            batches: 1,
            write_conflicts: 0,
        };
        let target = WriteTarget {
            store: Arc::clone(self.store),
            version: self.version,
            source_id: self.source_id.to_owned(),
            give_up: self.give_up.clone(),
        };
        let write = write_until_fresh(target, reprojection, Arc::clone(&batch));
        let task = tokio::spawn(write.instrument(tracing::Span::current()));
        InFlight { batch, task, totals, progress }
    }
}

/// What a committed batch reports of the loop's progress.
pub(super) struct Progress {
    /// The recorded-at time of the last event per partition that the batch makes visible.
    pub(super) last_recorded_at: Vec<(Partition, Timestamp)>,
    /// When the oldest event the batch makes visible was taken in.
    pub(super) started: Instant,
    /// Documents still deferred once the batch is written.
    pub(super) awaiting: usize,
    /// The checkpoints a deferred batch holds back.
    pub(super) held_back: Vec<Checkpoint>,
}

/// A batch being written, and what it counts once committed.
pub(super) struct InFlight {
    pub(super) batch: Arc<WriteBatch>,
    pub(super) task: tokio::task::JoinHandle<Result<Written, StoreError>>,
    totals: RunTotals,
    progress: Progress,
}

/// What writing a batch took.
#[derive(Debug, Default)]
pub(super) struct Written {
    mark: Option<CommitMark>,
    /// Writes that another projector's changes made the batch repeat.
    write_conflicts: u64,
    /// Documents that a deferred batch, projected again, found to render.
    late_renders: DocumentsToRender,
    /// The batch's events, given back so that the loop frees them: a sorted
    /// catch-up makes them on the loop's thread, and mimalloc frees a block
    /// on the thread that allocated it without the atomic hand-over a block
    /// freed elsewhere takes.
    given_back: Option<Reprojection>,
}

/// Where the write task writes.
struct WriteTarget {
    store: Arc<dyn Store>,
    version: ModelVersion,
    source_id: String,
    give_up: GiveUp,
}

/// What the write task needs to project a batch again after a write conflict.
#[derive(Debug)]
pub(super) enum Reprojection {
    Events {
        events: Vec<SourcedEvent>,
        rendering: Rendering,
    },
    /// Deferred documents, rendered again from the states stored now.
    Documents(DocumentsToRender),
}

impl Reprojection {
    fn event_count(&self) -> u64 {
        match self {
            Reprojection::Events { events, .. } => events.len() as u64,
            Reprojection::Documents(_) => 0,
        }
    }
}

/// Writes a batch until the store holds it rendered from fresh inputs; every
/// step waits while the store is unavailable.
async fn write_until_fresh(
    target: WriteTarget,
    reprojection: Reprojection,
    first: Arc<WriteBatch>,
) -> Result<Written, StoreError> {
    let WriteTarget { store, version, source_id, give_up } = target;
    let store = store.as_ref();
    let mut batch = first;
    let mut written = Written::default();
    loop {
        let applied = while_store_unavailable(&give_up, || store.apply_batch(version, Arc::clone(&batch))).await;
        let next = match applied {
            Ok(applied) if applied.stale.is_empty() => {
                return Ok(Written { mark: applied.mark, given_back: Some(reprojection), ..written });
            }
            Ok(applied) => {
                tracing::info!(
                    documents = applied.stale.len(),
                    "another projector changed their inputs; rendering again"
                );
                while_store_unavailable(&give_up, || render_stale_again(store, version, &applied.stale, &batch)).await?
            }
            Err(StoreError::WriteConflict(what)) => {
                tracing::info!(%what, "another projector changed the batch's inputs; projecting it again");
                match &reprojection {
                    // The checkpoints and the deferral of index entries
                    // stay what the loop gave the first write: the same
                    // events give the same checkpoints, except in a sorted
                    // catch-up, where the loop decides both.
                    Reprojection::Events { events, rendering } => {
                        let checkpoints = batch.checkpoints.clone();
                        let outcome = while_store_unavailable(&give_up, || {
                            project_batch(store, version, &source_id, events, None, *rendering)
                        })
                        .await?;
                        written.late_renders.merge(outcome.deferred);
                        WriteBatch { checkpoints, defer_index_entries: batch.defer_index_entries, ..outcome.write }
                    }
                    Reprojection::Documents(documents) => {
                        let checkpoints = batch.checkpoints.clone();
                        let write =
                            while_store_unavailable(&give_up, || render_documents(store, version, documents.clone()))
                                .await?;
                        WriteBatch { checkpoints, ..write }
                    }
                }
            }
            Err(error) => return Err(error),
        };
        written.write_conflicts += 1;
        batch = Arc::new(WriteBatch { change_feed_retention: batch.change_feed_retention, ..next });
    }
}

/// What the committed batches add up to, and where the last one stands in the store's commit order.
#[derive(Debug, Default)]
pub(super) struct Committed {
    pub(super) totals: RunTotals,
    /// Every read of the next batch to be projected comes after this commit.
    pub(super) last_mark: Option<CommitMark>,
    /// Documents that deferred batches, projected again after a write conflict, found to render.
    pub(super) late_renders: DocumentsToRender,
}

impl Committed {
    /// Waits for the batch in flight to commit, counts it and reports it.
    pub(super) async fn finish(
        &mut self,
        in_flight: Option<InFlight>,
        observer: &dyn BatchObserver,
    ) -> anyhow::Result<()> {
        let Some(mut in_flight) = in_flight else { return Ok(()) };
        let written = (&mut in_flight.task).await;
        self.record(in_flight, written, observer)
    }

    /// Counts and reports a batch whose write task ended with `written`.
    pub(super) fn record(
        &mut self,
        in_flight: InFlight,
        written: Result<Result<Written, StoreError>, tokio::task::JoinError>,
        observer: &dyn BatchObserver,
    ) -> anyhow::Result<()> {
        let written = written.context("the batch write task failed")?.context("failed to write a batch")?;
        self.late_renders.merge(written.late_renders);
        // Freed here, on the loop's thread.
        drop(written.given_back);
        let batch_totals = RunTotals { write_conflicts: written.write_conflicts, ..in_flight.totals };
        observer.batch_committed(&CommittedBatch {
            checkpoints: &in_flight.batch.checkpoints,
            held_back: &in_flight.progress.held_back,
            last_recorded_at: &in_flight.progress.last_recorded_at,
            totals: batch_totals,
            latency: in_flight.progress.started.elapsed(),
            documents_awaiting_render: in_flight.progress.awaiting,
        });
        self.totals.add(batch_totals);
        self.last_mark = written.mark;
        Ok(())
    }
}
