//! Rendering the documents that batches deferred while the projector was
//! behind: once each, in batches of their own, rendered two at a time while
//! the one before them is written, the last carrying the checkpoints the
//! deferred batches held back ([`crate::render_deferral`] keeps what waits
//! and says when to stop deferring).
//!
//! These batches change no state, so none needs another's overlay, and
//! their order matters only for the last one. This module must not read
//! events: it only renders from the states stored.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use super::retry::{while_sink_unavailable, while_store_unavailable};
use super::writing::{Committed, InFlight, Progress, Reprojection, Writing};
use crate::dead_letter::DeadLetterSink;
use crate::projection::batch::{BatchOutcome, DocumentsToRender, render_documents};
use crate::render_deferral::DeferredRenders;

/// Batches of deferred documents rendered at once: rendering is the costly
/// part of this phase, and the writer and the log's checkpoints leave part
/// of the other core free. Each holds `batch_size / CONCURRENT_RENDERS`
/// documents, at most [`crate::render_deferral::RenderDeferral::max_documents_per_write`].
pub(super) const CONCURRENT_RENDERS: usize = 2;

/// Renders every deferred document, [`CONCURRENT_RENDERS`] batches at a time
/// while the batch before them is written, and writes them in order; the
/// last write carries the checkpoints the deferred batches held back.
/// Returns the write in flight.
pub(super) async fn render_deferred(
    writing: &Writing<'_>,
    dead_letters: &mut dyn DeadLetterSink,
    deferred: &mut DeferredRenders,
    in_flight: Option<InFlight>,
    committed: &mut Committed,
    documents_per_write: usize,
) -> anyhow::Result<Option<InFlight>> {
    // A deferred batch projected again after a write conflict may have found more to render.
    committed.finish(in_flight, writing.observer).await?;
    deferred.add(std::mem::take(&mut committed.late_renders));
    let started = Instant::now();
    let read_after = committed.last_mark;
    // Slices are taken as they are rendered, so that only the slices being
    // rendered and written leave the compact form the documents wait in.
    let render = |documents: DocumentsToRender| {
        let (store, version, give_up) = (Arc::clone(writing.store), writing.version, writing.give_up.clone());
        let task = async move {
            let write =
                while_store_unavailable(&give_up, || render_documents(store.as_ref(), version, documents.clone()))
                    .await;
            (documents, write)
        };
        tokio::spawn(tracing::Instrument::instrument(task, tracing::Span::current()))
    };
    // Only checkpoints may wait: then one empty batch carries them.
    let first = deferred.next_documents(documents_per_write);
    // Exact now: taking the first slice merged every key.
    let mut awaiting = first.len() + deferred.document_count();
    let mut rendering = VecDeque::from([render(first)]);
    let mut in_flight: Option<InFlight> = None;
    while let Some(task) = rendering.pop_front() {
        while rendering.len() + 1 < CONCURRENT_RENDERS && deferred.has_documents() {
            rendering.push_back(render(deferred.next_documents(documents_per_write)));
        }
        let (documents, write) = task.await.context("a render task failed")?;
        let mut write = write.context("failed to render deferred documents")?;
        write.read_set.read_after = read_after;
        awaiting -= documents.len();
        let (last_recorded_at, since) = if rendering.is_empty() && !deferred.has_documents() {
            let released = deferred.release();
            write.checkpoints = released.checkpoints;
            while_sink_unavailable(writing.give_up, || dead_letters.flush()).await?;
            (released.last_recorded_at, released.since.unwrap_or(started))
        } else {
            (Vec::new(), started)
        };
        committed.finish(in_flight.take(), writing.observer).await?;
        let outcome = BatchOutcome { write, ..BatchOutcome::default() };
        let reprojection = Reprojection::Documents(documents);
        in_flight = Some(writing.start(
            reprojection,
            outcome,
            Progress { last_recorded_at, started: since, awaiting, held_back: Vec::new() },
        ));
    }
    Ok(in_flight)
}
