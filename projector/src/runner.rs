//! The projection loop: read events, cut them into batches, project each
//! batch, park what cannot be used, and write the batch atomically.
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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use read_model::calendar::Timestamp;
use read_model::{Checkpoint, CommitMark, ModelVersion, Store, StoreError, WriteBatch};
use tokio::sync::mpsc;

use crate::backoff::Backoff;
use crate::dead_letter::DeadLetterFile;
use crate::projection::batch::{BatchOutcome, DocumentsToRender, Rendering, project_batch, render_documents};
use crate::render_deferral::{DeferredRenders, RenderDeferral};
use crate::source::file::{FileProgress, FileSource};
use crate::source::{OriginalMessage, Position, Rejection, SourcedEvent};

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
}

/// The loop's retries (store, dead-letter sink) wait at most this long between attempts.
const RETRY_CEILING: Duration = Duration::from_secs(30);

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

/// What a source hands to the loop, in order.
// Events cross the channel by value: boxing each would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum SourceMessage {
    Event(SourcedEvent),
    /// Everything the source holds now has been sent.
    CaughtUp,
    Failed(String),
    /// Write everything sent before this message, then answer with the
    /// store's checkpoints of this source. Sent when partitions are revoked
    /// (so they are released fully written) and when partitions are assigned
    /// (so they resume from the store, not from Kafka's committed offsets).
    Barrier(std::sync::mpsc::SyncSender<Result<Vec<Checkpoint>, String>>),
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
}

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

/// Told about every committed batch: Kafka's advisory commit, metrics.
pub trait BatchObserver: Send + Sync + std::fmt::Debug {
    fn batch_committed(&self, committed: &CommittedBatch<'_>);
}

/// A batch that has been written, checkpoints included.
#[derive(Debug)]
pub struct CommittedBatch<'a> {
    pub checkpoints: &'a [Checkpoint],
    /// The recorded-at time of the last applied event per (stream, partition).
    pub last_recorded_at: &'a [(String, i32, Timestamp)],
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

/// Projects a file source into `version` until caught up (when asked) or until `shutdown` resolves.
pub async fn run_file_source(
    store: Arc<dyn Store>,
    version: ModelVersion,
    source: FileSource,
    dead_letters: DeadLetterFile,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<RunTotals> {
    let feed = start_file_feed(store.as_ref(), version, source, &options).await?;
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
    let mut stopping = false;
    let mut committed = Committed::default();
    let started = Instant::now();
    // Throughput is also reported from the first event on, without the time spent joining a group.
    let mut first_event_at: Option<Instant> = None;
    let mut batch = Vec::with_capacity(options.batch_size);
    let mut batch_started = Instant::now();
    let mut in_flight: Option<InFlight> = None;
    let mut deferred = DeferredRenders::default();
    let writing = Writing { store: &store, version, source_id: &source_id, observer: observer.as_ref() };
    loop {
        let linger_deadline = tokio::time::Instant::from_std(batch_started + options.linger);
        let render_deadline = deferred.deadline(options.render_deferral).map(tokio::time::Instant::from_std);
        let step = tokio::select! {
            biased;
            () = &mut shutdown, if !stopping => {
                tracing::info!("shutdown requested: writing what the source has sent");
                stopping = true;
                stop.store(true, Ordering::Relaxed);
                continue;
            }
            message = receiver.recv() => Step::Received(message),
            () = tokio::time::sleep_until(linger_deadline), if !batch.is_empty() => Step::LingerElapsed,
            () = sleep_until_some(render_deadline), if render_deadline.is_some() => Step::RenderDeadline,
            // A batch that commits is reported at once, not when the next one starts:
            // the source's progress (Kafka commits, lag, caught up) follows the store.
            written = async { (&mut in_flight.as_mut().expect("guarded by is_some").task).await }, if in_flight.is_some() => {
                if let Some(written_batch) = in_flight.take() {
                    record(written_batch, written, &mut committed, observer.as_ref())?;
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
            let rendering =
                if keep_deferring || deferred.is_waiting() { Rendering::Deferred } else { Rendering::InBatch };
            let pending = in_flight.as_ref().map(|write| Arc::clone(&write.batch));
            let read_after = committed.last_mark;
            let mut outcome =
                project_with_retry(store.as_ref(), version, &source_id, &batch, pending.as_deref(), rendering).await?;
            outcome.write.read_set.read_after = read_after;
            let parked = with_originals(&outcome.parked, &batch);
            park_with_retry(dead_letters.as_mut(), &source_id, &parked).await;
            finish(in_flight.take(), &mut committed, observer.as_ref()).await?;
            let mut last_recorded_at = last_recorded_at(&batch);
            if rendering == Rendering::Deferred {
                deferred.hold(&mut outcome, &last_recorded_at, batch_started);
                last_recorded_at.clear();
            }
            let events = std::mem::replace(&mut batch, Vec::with_capacity(options.batch_size));
            let reprojection = Reprojection::Events { events, rendering };
            let progress = Progress { last_recorded_at, started: batch_started, awaiting: deferred.document_count() };
            if !outcome.write.checkpoints.is_empty() {
                flush_with_retry(dead_letters.as_mut()).await;
            }
            in_flight = Some(writing.start(reprojection, outcome, progress));
        }
        if flush && !keep_deferring && deferred.is_waiting() {
            in_flight = render_deferred(
                &writing,
                dead_letters.as_mut(),
                &mut deferred,
                in_flight,
                &mut committed,
                (options.batch_size / CONCURRENT_RENDERS)
                    .clamp(1, options.render_deferral.max_documents_per_write.max(1)),
            )
            .await?;
        }
        if let Some(reply) = barrier {
            finish(in_flight.take(), &mut committed, observer.as_ref()).await?;
            let checkpoints = store.checkpoints(version, &source_id).await.map_err(|error| error.to_string());
            // The source may have gone away meanwhile; then nobody waits for the answer.
            let _ = reply.send(checkpoints);
        }
        if end {
            break;
        }
    }
    finish(in_flight.take(), &mut committed, observer.as_ref()).await?;
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

/// What woke the loop.
// Lives for one iteration; boxing the message would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Step {
    Received(Option<SourceMessage>),
    LingerElapsed,
    /// Deferred documents have waited as long as they may.
    RenderDeadline,
}

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

/// The recorded-at time of the last usable event of each (stream, partition) in a batch.
fn last_recorded_at(batch: &[SourcedEvent]) -> Vec<(String, i32, Timestamp)> {
    let mut last: Vec<(String, i32, Timestamp)> = Vec::new();
    for event in batch {
        let Ok(decoded) = &event.outcome else { continue };
        let at = decoded.envelope.recorded_at;
        match last
            .iter_mut()
            .find(|(stream, partition, _)| *stream == event.position.stream && *partition == event.position.partition)
        {
            Some(entry) => entry.2 = at,
            None => last.push((event.position.stream.clone(), event.position.partition, at)),
        }
    }
    last
}

/// Projects a batch; retries while the store is unavailable.
async fn project_with_retry(
    store: &dyn Store,
    version: ModelVersion,
    source_id: &str,
    events: &[SourcedEvent],
    pending: Option<&WriteBatch>,
    rendering: Rendering,
) -> anyhow::Result<BatchOutcome> {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    loop {
        match project_batch(store, version, source_id, events, pending, rendering).await {
            Ok(outcome) => return Ok(outcome),
            Err(StoreError::Unavailable(reason)) => wait(&mut backoff, "store unavailable", &reason).await,
            Err(error) => return Err(error).context("failed to project a batch"),
        }
    }
}

/// Renders documents; retries while the store is unavailable.
async fn render_with_retry(
    store: &dyn Store,
    version: ModelVersion,
    documents: &DocumentsToRender,
) -> anyhow::Result<WriteBatch> {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    loop {
        match render_documents(store, version, documents.clone()).await {
            Ok(write) => return Ok(write),
            Err(StoreError::Unavailable(reason)) => wait(&mut backoff, "store unavailable", &reason).await,
            Err(error) => return Err(error).context("failed to render deferred documents"),
        }
    }
}

/// Batches of deferred documents rendered at once: rendering is the costly
/// part of this phase, and the writer and the log's checkpoints leave part
/// of the other core free. Each holds `batch_size / CONCURRENT_RENDERS`
/// documents, at most [`RenderDeferral::max_documents_per_write`].
const CONCURRENT_RENDERS: usize = 2;

/// Renders every deferred document, [`CONCURRENT_RENDERS`] batches at a time
/// while the batch before them is written, and writes them in order; the
/// last write carries the checkpoints the deferred batches held back.
/// Returns the write in flight.
///
/// These batches change no state, so none needs another's overlay, and
/// their order matters only for the last one.
async fn render_deferred(
    writing: &Writing<'_>,
    dead_letters: &mut dyn DeadLetterSink,
    deferred: &mut DeferredRenders,
    in_flight: Option<InFlight>,
    committed: &mut Committed,
    documents_per_write: usize,
) -> anyhow::Result<Option<InFlight>> {
    // A deferred batch projected again after a write conflict may have found more to render.
    finish(in_flight, committed, writing.observer).await?;
    deferred.add(std::mem::take(&mut committed.late_renders));
    let started = Instant::now();
    let read_after = committed.last_mark;
    let mut awaiting = deferred.document_count();
    let mut chunks = VecDeque::new();
    while deferred.has_documents() {
        chunks.push_back(deferred.next_documents(documents_per_write));
    }
    let render = |documents: DocumentsToRender| {
        let (store, version) = (Arc::clone(writing.store), writing.version);
        tokio::spawn(async move {
            let write = render_with_retry(store.as_ref(), version, &documents).await;
            (documents, write)
        })
    };
    // Only checkpoints may wait: then one empty batch carries them.
    let mut rendering = VecDeque::from([render(chunks.pop_front().unwrap_or_default())]);
    let mut in_flight: Option<InFlight> = None;
    while let Some(task) = rendering.pop_front() {
        while rendering.len() + 1 < CONCURRENT_RENDERS
            && let Some(documents) = chunks.pop_front()
        {
            rendering.push_back(render(documents));
        }
        let (documents, write) = task.await.context("a render task failed")?;
        let mut write = write?;
        write.read_set.read_after = read_after;
        awaiting -= documents.len();
        let (last_recorded_at, since) = if rendering.is_empty() && chunks.is_empty() {
            let released = deferred.release();
            write.checkpoints = released.checkpoints;
            flush_with_retry(dead_letters).await;
            (released.last_recorded_at, released.since.unwrap_or(started))
        } else {
            (Vec::new(), started)
        };
        finish(in_flight.take(), committed, writing.observer).await?;
        let outcome = BatchOutcome { write, ..BatchOutcome::default() };
        let reprojection = Reprojection::Documents(documents);
        in_flight = Some(writing.start(reprojection, outcome, Progress { last_recorded_at, started: since, awaiting }));
    }
    Ok(in_flight)
}

/// Parks events; while the dead-letter sink fails (the dead-letter topic is
/// unreachable or missing), consumption pauses and parking is retried.
async fn park_with_retry(dead_letters: &mut dyn DeadLetterSink, source_id: &str, parked: &[ParkedEvent]) {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    while let Err(error) = dead_letters.park(source_id, parked) {
        wait(&mut backoff, "cannot park events", &format!("{} events: {error:#}", parked.len())).await;
    }
}

/// Makes the parked events durable before a write that carries checkpoints:
/// no checkpoint passes a poison event that is not parked. While the sink
/// fails, consumption pauses and the flush is retried.
async fn flush_with_retry(dead_letters: &mut dyn DeadLetterSink) {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    while let Err(error) = dead_letters.flush() {
        wait(&mut backoff, "cannot park events", &format!("{error:#}")).await;
    }
}

/// What every write of the loop goes to.
struct Writing<'a> {
    store: &'a Arc<dyn Store>,
    version: ModelVersion,
    source_id: &'a str,
    observer: &'a dyn BatchObserver,
}

impl Writing<'_> {
    /// Starts writing a projected batch on a task of its own.
    fn start(&self, reprojection: Reprojection, outcome: BatchOutcome, progress: Progress) -> InFlight {
        let batch = Arc::new(outcome.write);
        let totals = RunTotals {
            events: reprojection.event_count(),
            applied: outcome.applied,
            skipped_as_duplicates: outcome.skipped_as_duplicates,
            parked: outcome.parked.len() as u64,
            batches: 1,
            write_conflicts: 0,
        };
        let target =
            WriteTarget { store: Arc::clone(self.store), version: self.version, source_id: self.source_id.to_owned() };
        let task = tokio::spawn(write_until_fresh(target, reprojection, Arc::clone(&batch)));
        InFlight { batch, task, totals, progress }
    }
}

/// What a committed batch reports of the loop's progress.
struct Progress {
    /// The recorded-at time of the last event per (stream, partition) that the batch makes visible.
    last_recorded_at: Vec<(String, i32, Timestamp)>,
    /// When the oldest event the batch makes visible was taken in.
    started: Instant,
    /// Documents still deferred once the batch is written.
    awaiting: usize,
}

/// A batch being written, and what it counts once committed.
struct InFlight {
    batch: Arc<WriteBatch>,
    task: tokio::task::JoinHandle<Result<Written, StoreError>>,
    totals: RunTotals,
    progress: Progress,
}

/// What writing a batch took.
#[derive(Debug, Default)]
struct Written {
    mark: Option<CommitMark>,
    /// Writes that another projector's changes made the batch repeat.
    write_conflicts: u64,
    /// Documents that a deferred batch, projected again, found to render.
    late_renders: DocumentsToRender,
}

/// Where the write task writes.
struct WriteTarget {
    store: Arc<dyn Store>,
    version: ModelVersion,
    source_id: String,
}

/// What the write task needs to project a batch again after a write conflict.
enum Reprojection {
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

/// Writes a batch; retries while the store is unavailable; and while other
/// projectors sharing the store have changed what it was rendered from,
/// projects it again (the store refused it) or renders the stale documents
/// again (the store wrote it and reported them). See [`read_model::read_set`].
async fn write_until_fresh(
    target: WriteTarget,
    reprojection: Reprojection,
    first: Arc<WriteBatch>,
) -> Result<Written, StoreError> {
    let WriteTarget { store, version, source_id } = target;
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    let mut batch = first;
    let mut written = Written::default();
    loop {
        let next = match store.apply_batch(version, Arc::clone(&batch)).await {
            Ok(applied) if applied.stale.is_empty() => return Ok(Written { mark: applied.mark, ..written }),
            Ok(applied) => {
                tracing::info!(
                    documents = applied.stale.len(),
                    "another projector changed their inputs; rendering again"
                );
                render_documents(store.as_ref(), version, DocumentsToRender::of(&applied.stale)).await
            }
            Err(StoreError::WriteConflict(what)) => {
                tracing::info!(%what, "another projector changed the batch's inputs; projecting it again");
                match &reprojection {
                    Reprojection::Events { events, rendering } => {
                        project_batch(store.as_ref(), version, &source_id, events, None, *rendering).await.map(
                            |outcome| {
                                written.late_renders.merge(outcome.deferred);
                                outcome.write
                            },
                        )
                    }
                    Reprojection::Documents(documents) => {
                        let checkpoints = batch.checkpoints.clone();
                        render_documents(store.as_ref(), version, documents.clone())
                            .await
                            .map(|write| WriteBatch { checkpoints, ..write })
                    }
                }
            }
            Err(error) => Err(error),
        };
        match next {
            Ok(next) => {
                written.write_conflicts += 1;
                batch = Arc::new(next);
            }
            Err(StoreError::Unavailable(reason)) => wait(&mut backoff, "store unavailable", &reason).await,
            Err(error) => return Err(error),
        }
    }
}

/// Waits for the batch in flight to commit, counts it and reports it.
async fn finish(
    in_flight: Option<InFlight>,
    committed: &mut Committed,
    observer: &dyn BatchObserver,
) -> anyhow::Result<()> {
    let Some(mut in_flight) = in_flight else { return Ok(()) };
    let written = (&mut in_flight.task).await;
    record(in_flight, written, committed, observer)
}

/// Counts and reports a batch whose write task ended with `written`.
fn record(
    in_flight: InFlight,
    written: Result<Result<Written, StoreError>, tokio::task::JoinError>,
    committed: &mut Committed,
    observer: &dyn BatchObserver,
) -> anyhow::Result<()> {
    let written = written.context("the batch write task failed")?.context("failed to write a batch")?;
    committed.late_renders.merge(written.late_renders);
    let batch_totals = RunTotals { write_conflicts: written.write_conflicts, ..in_flight.totals };
    observer.batch_committed(&CommittedBatch {
        checkpoints: &in_flight.batch.checkpoints,
        last_recorded_at: &in_flight.progress.last_recorded_at,
        totals: batch_totals,
        latency: in_flight.progress.started.elapsed(),
        documents_awaiting_render: in_flight.progress.awaiting,
    });
    let totals = &mut committed.totals;
    totals.events += batch_totals.events;
    totals.applied += batch_totals.applied;
    totals.skipped_as_duplicates += batch_totals.skipped_as_duplicates;
    totals.parked += batch_totals.parked;
    totals.batches += 1;
    totals.write_conflicts += batch_totals.write_conflicts;
    committed.last_mark = written.mark;
    Ok(())
}

/// What the committed batches add up to, and where the last one stands in the store's commit order.
#[derive(Debug, Default)]
struct Committed {
    totals: RunTotals,
    /// Every read of the next batch to be projected comes after this commit.
    last_mark: Option<CommitMark>,
    /// Documents that deferred batches, projected again after a write conflict, found to render.
    late_renders: DocumentsToRender,
}

/// Waits out the next delay of `backoff`, saying what is retried and why.
async fn wait(backoff: &mut Backoff, what: &str, reason: &str) {
    let delay = backoff.next_delay();
    tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "{what}; retrying");
    tokio::time::sleep(delay).await;
}

/// Starts the file reader thread: every file from its checkpoint in the
/// store on, then (when following) new files as they appear.
pub async fn start_file_feed(
    store: &dyn Store,
    version: ModelVersion,
    source: FileSource,
    options: &RunOptions,
) -> anyhow::Result<SourceFeed> {
    let checkpoints = store
        .checkpoints(version, source.source_id())
        .await
        .context("failed to read checkpoints")?
        .into_iter()
        .map(|checkpoint| (checkpoint.stream, checkpoint.next_offset));
    let progress = FileProgress::from_checkpoints(checkpoints);
    // One batch of decoded events waits while the current one is projected.
    let (sender, receiver) = mpsc::channel(options.batch_size.max(1));
    let stop = Arc::new(AtomicBool::new(false));
    let source_id = source.source_id().to_owned();
    let reader_stop = Arc::clone(&stop);
    let poll_interval = options.poll_interval;
    let reader = std::thread::Builder::new()
        .name("file-source".into())
        .spawn(move || read_files(&source, progress, &sender, &reader_stop, poll_interval))
        .context("failed to start the file reader")?;
    Ok(SourceFeed { source_id, receiver, stop, reader })
}

fn read_files(
    source: &FileSource,
    mut progress: FileProgress,
    sender: &mpsc::Sender<SourceMessage>,
    stop: &AtomicBool,
    poll_interval: Duration,
) {
    let stopped = || stop.load(Ordering::Relaxed);
    let send = |message| !stopped() && sender.blocking_send(message).is_ok();
    loop {
        let files = match source.files() {
            Ok(files) => files,
            Err(error) => {
                let _ = sender.blocking_send(SourceMessage::Failed(error.to_string()));
                return;
            }
        };
        for name in files {
            let length = source.file_length(&name);
            if !progress.may_have_more(&name, length) {
                continue;
            }
            if stopped() {
                return;
            }
            let mut open = true;
            let next = source.read_file(&name, progress.next_offset(&name), &mut |event| {
                open = send(SourceMessage::Event(event));
                open
            });
            if !open {
                return;
            }
            progress.read_to_end(name, length, next);
        }
        if !send(SourceMessage::CaughtUp) {
            return;
        }
        std::thread::sleep(poll_interval);
    }
}
