//! The projection loop, the same for every source: read events, cut them
//! into batches, project each batch, park what cannot be used, and write
//! the batch atomically (`writing`); render what batches deferred
//! (`deferred_rendering`); tell observers what committed ([`BatchObserver`]);
//! wait while the store or a sink is unavailable (`retry`).
//!
//! A batch is written when it is full, when it has waited its linger time,
//! when the source has caught up, or at a barrier (a Kafka rebalance), after
//! which the loop answers with the store's checkpoints.
//!
//! Three things overlap: a source decodes on a thread of its own and
//! hands events over through a bounded channel; batch N is written to the
//! store while batch N+1 is projected, with batch N's changes overlaid on the
//! store's last committed state; at most one batch is in flight, and batches
//! commit in order.
//!
//! While batches fill up, rendering is deferred and done once per document
//! when the loop stops deferring ([`crate::render_deferral`]); the write that
//! renders the last of them carries the checkpoints the deferred batches held.
//!
//! Where it starts: the store's checkpoints. A restart after a crash at any
//! point reads again exactly the events whose effects did not commit.
//!
//! Idle for 30 seconds, and at the end of a run, the loop lets the store
//! finish what it keeps off the batch path (`ProjectionWrites::settle`:
//! ScyllaDB's bulk bucket counts).
//!
//! Stopping: a shutdown request is seen at every wait of the loop, not only
//! between batches ([`StopRequest`]). The reader stops, what it sent is
//! written while the store takes it, and a wait for an unavailable store or
//! sink gives up at once instead of retrying, so the loop ends within one
//! store call; what was not written is read again after a restart.
//!
//! It must not decode events or know a source's transport: sources hand it
//! [`SourceMessage`]s, and sinks park what it rejects.

mod deferred_rendering;
mod observer;
mod retry;
mod writing;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use read_model::calendar::Timestamp;
use read_model::{ModelVersion, Store};
use tokio::sync::watch;
use tracing::Instrument;

use self::deferred_rendering::{CONCURRENT_RENDERS, render_deferred};
pub use self::observer::{BatchObserver, CommittedBatch, NoObserver};
use self::retry::{while_sink_unavailable, while_store_unavailable};
use self::writing::{Committed, InFlight, Progress, Reprojection, Writing};
use crate::dead_letter::{DeadLetterFile, DeadLetterSink, ParkedEvent};
use crate::projection::batch::{Rendering, project_batch};
use crate::render_deferral::{DeferredRenders, RenderDeferral};
use crate::source::file::{FileSource, start_file_feed};
use crate::source::{OriginalMessage, Partition, Position, Rejection, SourceFeed, SourceMessage, SourcedEvent};

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Events per batch (one store transaction).
    pub batch_size: usize,
    /// The longest a started batch waits for more events before it is written.
    pub linger: Duration,
    /// Stop once the source has caught up, instead of following it.
    pub exit_when_caught_up: bool,
    /// How often the file source looks for new files when following.
    pub poll_interval: Duration,
    /// How far rendering may be deferred while batches fill up.
    pub render_deferral: RenderDeferral,
    /// How long the change feed keeps superseded changes and withdrawals.
    pub change_feed_retention: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTotals {
    pub events: u64,
    pub applied: u64,
    pub skipped_as_duplicates: u64,
    pub parked: u64,
    pub batches: u64,
    /// Batch writes repeated because another projector sharing the store
    /// changed what they were rendered from.
    pub write_conflicts: u64,
}

impl RunTotals {
    /// Adds a committed batch's counts.
    pub fn add(&mut self, batch: RunTotals) {
        self.events += batch.events;
        self.applied += batch.applied;
        self.skipped_as_duplicates += batch.skipped_as_duplicates;
        self.parked += batch.parked;
        self.batches += batch.batches;
        self.write_conflicts += batch.write_conflicts;
    }
}

/// Projects a file source into `version` until caught up (when asked) or until `shutdown` resolves.
pub async fn run_file_source(
    store: Arc<dyn Store>,
    version: ModelVersion,
    source: FileSource,
    dead_letters: DeadLetterFile,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<RunTotals> {
    // One batch of decoded events waits while the current one is projected.
    let feed = start_file_feed(store.as_ref(), version, source, options.batch_size, options.poll_interval).await?;
    run(store, version, feed, Box::new(dead_letters), Arc::new(NoObserver), options, shutdown).await
}

/// Projects what `feed` sends into `version` until the feed ends, it caught
/// up (when asked), or `shutdown` resolves. On shutdown the reader is asked
/// to stop, and everything it sent before stopping is written.
pub async fn run(
    store: Arc<dyn Store>,
    version: ModelVersion,
    feed: SourceFeed,
    mut dead_letters: Box<dyn DeadLetterSink>,
    observer: Arc<dyn BatchObserver>,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<RunTotals> {
    let SourceFeed { source_id, mut receiver, stop, reader } = feed;
    tokio::pin!(shutdown);
    let (tell_waits, give_up) = watch::channel(false);
    let mut stop_request = StopRequest { shutdown, requested: false, reader: Arc::clone(&stop), waits: tell_waits };
    let mut stopping = false;
    let mut committed = Committed::default();
    let started = Instant::now();
    // Throughput is also reported from the first event on, without the time spent joining a group.
    let mut first_event_at: Option<Instant> = None;
    let mut batch = Vec::with_capacity(options.batch_size);
    let mut batch_started = Instant::now();
    let mut in_flight: Option<InFlight> = None;
    let mut deferred = DeferredRenders::default();
    let mut batches_started: u64 = 0;
    let writing = Writing {
        store: &store,
        version,
        source_id: &source_id,
        observer: observer.as_ref(),
        change_feed_retention: options.change_feed_retention,
        give_up: &give_up,
    };
    let mut settle_deadline = tokio::time::Instant::now() + SETTLE_INTERVAL;
    loop {
        let linger_deadline = tokio::time::Instant::from_std(batch_started + options.linger);
        let idle = batch.is_empty() && in_flight.is_none() && !deferred.is_waiting();
        let render_deadline = deferred.deadline(options.render_deferral).map(tokio::time::Instant::from_std);
        let step = tokio::select! {
            biased;
            () = stop_request.shutdown.as_mut(), if !stop_request.requested => {
                stop_request.request();
                stopping = true;
                continue;
            }
            message = receiver.recv() => Step::Received(message),
            () = tokio::time::sleep_until(linger_deadline), if !batch.is_empty() => Step::LingerElapsed,
            () = sleep_until_some(render_deadline), if render_deadline.is_some() => Step::RenderDeadline,
            () = tokio::time::sleep_until(settle_deadline), if idle => {
                stop_request.minding(while_store_unavailable(&give_up, || store.settle(version))).await?;
                settle_deadline = tokio::time::Instant::now() + SETTLE_INTERVAL;
                continue;
            }
            // A batch that commits is reported at once, not when the next one starts:
            // the source's progress (Kafka commits, lag, caught up) follows the store.
            written = async { (&mut in_flight.as_mut().expect("guarded by is_some").task).await }, if in_flight.is_some() => {
                if let Some(written_batch) = in_flight.take() {
                    committed.record(written_batch, written, observer.as_ref())?;
                }
                continue;
            }
        };
        let mut filled = false;
        let lingered = matches!(step, Step::LingerElapsed);
        let (flush, end, barrier) = match step {
            Step::LingerElapsed | Step::RenderDeadline => (true, false, None),
            Step::Received(Some(SourceMessage::Event(event))) => {
                first_event_at.get_or_insert_with(Instant::now);
                if batch.is_empty() {
                    batch_started = Instant::now();
                }
                batch.push(event);
                filled = batch.len() >= options.batch_size;
                (filled, false, None)
            }
            Step::Received(Some(SourceMessage::CaughtUp)) => {
                if options.exit_when_caught_up && !stopping {
                    stopping = true;
                    stop.store(true, Ordering::Relaxed);
                }
                (true, false, None)
            }
            Step::Received(Some(SourceMessage::Failed(error))) => anyhow::bail!("the source failed: {error}"),
            Step::Received(Some(SourceMessage::Barrier(reply))) => (true, false, Some(reply)),
            // The reader ended: after a stop, or on its own.
            Step::Received(None) => (true, true, None),
        };
        // A batch cut because it filled up says that more events wait. So does
        // a linger cut while documents wait: the source was briefly slower,
        // and says itself when it has caught up. Any other cut (caught up,
        // barrier, end, deadline) renders what waits.
        let behind = filled || (lingered && deferred.is_waiting());
        let keep_deferring = behind && deferred.may_defer(options.render_deferral, Instant::now());
        if flush && !batch.is_empty() {
            batches_started += 1;
            let span = tracing::info_span!("batch", number = batches_started, events = batch.len());
            let rendering =
                if keep_deferring || deferred.is_waiting() { Rendering::Deferred } else { Rendering::InBatch };
            let pending = in_flight.as_ref().map(|write| Arc::clone(&write.batch));
            let read_after = committed.last_mark;
            let mut outcome = stop_request
                .minding(
                    while_store_unavailable(&give_up, || {
                        project_batch(store.as_ref(), version, &source_id, &batch, pending.as_deref(), rendering)
                    })
                    .instrument(span.clone()),
                )
                .await?;
            outcome.write.read_set.read_after = read_after;
            let parked = with_originals(&outcome.parked, &batch);
            stop_request.minding(while_sink_unavailable(&give_up, || dead_letters.park(&source_id, &parked))).await?;
            stop_request.minding(committed.finish(in_flight.take(), observer.as_ref())).await?;
            let mut last_recorded_at = last_recorded_at(&batch);
            if rendering == Rendering::Deferred {
                deferred.hold(&mut outcome, &last_recorded_at, batch_started);
                last_recorded_at.clear();
            }
            let events = std::mem::replace(&mut batch, Vec::with_capacity(options.batch_size));
            let reprojection = Reprojection::Events { events, rendering };
            let progress = Progress { last_recorded_at, started: batch_started, awaiting: deferred.document_count() };
            if !outcome.write.checkpoints.is_empty() {
                stop_request.minding(while_sink_unavailable(&give_up, || dead_letters.flush())).await?;
            }
            in_flight = Some(span.in_scope(|| writing.start(reprojection, outcome, progress)));
        }
        if flush && !keep_deferring && deferred.is_waiting() {
            let span = tracing::info_span!("deferred documents", documents = deferred.document_count());
            in_flight = stop_request
                .minding(
                    render_deferred(
                        &writing,
                        dead_letters.as_mut(),
                        &mut deferred,
                        in_flight,
                        &mut committed,
                        (options.batch_size / CONCURRENT_RENDERS)
                            .clamp(1, options.render_deferral.max_documents_per_write.max(1)),
                    )
                    .instrument(span),
                )
                .await?;
        }
        if let Some(reply) = barrier {
            stop_request.minding(committed.finish(in_flight.take(), observer.as_ref())).await?;
            let checkpoints = store.checkpoints(version, &source_id).await.map_err(|error| error.to_string());
            // The source may have gone away meanwhile; then nobody waits for the answer.
            let _ = reply.send(checkpoints);
        }
        if end {
            break;
        }
    }
    stop_request.minding(committed.finish(in_flight.take(), observer.as_ref())).await?;
    if !stop_request.requested {
        stop_request.minding(while_store_unavailable(&give_up, || store.settle(version))).await?;
    }
    drop(receiver);
    let _ = reader.join();
    let totals = committed.totals;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        events = totals.events,
        applied = totals.applied,
        skipped_as_duplicates = totals.skipped_as_duplicates,
        parked = totals.parked,
        batches = totals.batches,
        write_conflicts = totals.write_conflicts,
        seconds,
        events_per_second = (totals.events as f64 / seconds.max(1e-9)).round(),
        seconds_from_first_event = first_event_at.map_or(0.0, |at| at.elapsed().as_secs_f64()),
        "projection finished"
    );
    Ok(totals)
}

/// The shutdown request as the loop sees it: the shutdown future until it
/// resolves, then a stop the reader and every wait are told of.
struct StopRequest<'a, Shutdown: Future<Output = ()>> {
    shutdown: Pin<&'a mut Shutdown>,
    requested: bool,
    /// The reader's stop flag.
    reader: Arc<AtomicBool>,
    /// What the waits of `retry` watch.
    waits: watch::Sender<bool>,
}

impl<Shutdown: Future<Output = ()>> StopRequest<'_, Shutdown> {
    fn request(&mut self) {
        tracing::info!(
            "shutdown requested: writing what the source has sent, without waiting for an unavailable store"
        );
        self.requested = true;
        self.reader.store(true, Ordering::Relaxed);
        let _ = self.waits.send(true);
    }

    /// Awaits `work`; a shutdown that arrives meanwhile is requested at once,
    /// so that the waits inside `work` give up.
    async fn minding<T>(&mut self, work: impl Future<Output = T>) -> T {
        if self.requested {
            return work.await;
        }
        tokio::pin!(work);
        tokio::select! {
            biased;
            value = &mut work => value,
            () = self.shutdown.as_mut() => {
                self.request();
                work.await
            }
        }
    }
}

/// What woke the loop.
// Lives for one iteration; boxing the message would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Step {
    Received(Option<SourceMessage>),
    LingerElapsed,
    /// Deferred documents have waited as long as they may.
    RenderDeadline,
}

/// How long the loop waits, idle, before it asks the store to finish what
/// it keeps off the batch path ([`read_model::ProjectionWrites::settle`]).
const SETTLE_INTERVAL: Duration = Duration::from_secs(30);

/// Sleeps until `deadline`; the loop polls it only when there is one.
async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline).await;
    }
}

/// The parked events of a batch with the original messages the source kept.
fn with_originals(parked: &[(Position, Rejection)], batch: &[SourcedEvent]) -> Vec<ParkedEvent> {
    if parked.is_empty() {
        return Vec::new();
    }
    let originals: HashMap<&Position, &Arc<OriginalMessage>> =
        batch.iter().filter_map(|event| event.original.as_ref().map(|original| (&event.position, original))).collect();
    parked
        .iter()
        .map(|(position, rejection)| ParkedEvent {
            position: position.clone(),
            rejection: rejection.clone(),
            original: originals.get(position).map(|original| Arc::clone(original)),
        })
        .collect()
}

/// The recorded-at time of the last usable event of each partition in a batch.
fn last_recorded_at(batch: &[SourcedEvent]) -> Vec<(Partition, Timestamp)> {
    let mut last: Vec<(Partition, Timestamp)> = Vec::new();
    for event in batch {
        let Ok(decoded) = &event.outcome else { continue };
        let at = decoded.envelope.recorded_at;
        let position = &event.position;
        match last
            .iter_mut()
            .find(|(partition, _)| partition.stream == position.stream && partition.number == position.partition)
        {
            Some(entry) => entry.1 = at,
            None => last.push((position.partition(), at)),
        }
    }
    last
}
