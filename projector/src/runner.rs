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
//! Where it starts: the store's checkpoints. A restart after a crash at any
//! point reads again exactly the events whose effects did not commit.

use std::collections::HashMap;
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
use crate::projection::batch::{BatchOutcome, project_batch, rerender};
use crate::source::file::FileSource;
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
pub trait DeadLetterSink: Send {
    /// Parks the events durably before their batch commits. Returns how many were new.
    fn park(&mut self, source: &str, events: &[ParkedEvent]) -> anyhow::Result<usize>;
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
    loop {
        let linger_deadline = tokio::time::Instant::from_std(batch_started + options.linger);
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
            // A batch that commits is reported at once, not when the next one starts:
            // the source's progress (Kafka commits, lag, caught up) follows the store.
            written = async { (&mut in_flight.as_mut().expect("guarded by is_some").task).await }, if in_flight.is_some() => {
                if let Some(written_batch) = in_flight.take() {
                    record(written_batch, written, &mut committed, observer.as_ref())?;
                }
                continue;
            }
        };
        let (flush, end, barrier) = match step {
            Step::LingerElapsed => (true, false, None),
            Step::Received(Some(SourceMessage::Event(event))) => {
                first_event_at.get_or_insert_with(Instant::now);
                if batch.is_empty() {
                    batch_started = Instant::now();
                }
                batch.push(event);
                (batch.len() >= options.batch_size, false, None)
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
        if flush && !batch.is_empty() {
            let pending = in_flight.as_ref().map(|write| Arc::clone(&write.batch));
            let read_after = committed.last_mark;
            let mut outcome =
                project_with_retry(store.as_ref(), version, &source_id, &batch, pending.as_deref()).await?;
            outcome.write.read_set.read_after = read_after;
            let parked = with_originals(&outcome.parked, &batch);
            park_with_retry(dead_letters.as_mut(), &source_id, &parked).await;
            finish(in_flight.take(), &mut committed, observer.as_ref()).await?;
            let last_recorded_at = last_recorded_at(&batch);
            let events = std::mem::replace(&mut batch, Vec::with_capacity(options.batch_size));
            let reprojection =
                Reprojection { store: Arc::clone(&store), version, source_id: source_id.clone(), events };
            in_flight = Some(InFlight::start(reprojection, outcome, last_recorded_at, batch_started));
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
) -> anyhow::Result<BatchOutcome> {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    loop {
        match project_batch(store, version, source_id, events, pending).await {
            Ok(outcome) => return Ok(outcome),
            Err(StoreError::Unavailable(reason)) => wait(&mut backoff, "store unavailable", &reason).await,
            Err(error) => return Err(error).context("failed to project a batch"),
        }
    }
}

/// Parks events; while the dead-letter sink fails (the dead-letter topic is
/// unreachable or missing), consumption pauses and parking is retried: the
/// batch cannot commit before its poison events are parked.
async fn park_with_retry(dead_letters: &mut dyn DeadLetterSink, source_id: &str, parked: &[ParkedEvent]) {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    while let Err(error) = dead_letters.park(source_id, parked) {
        wait(&mut backoff, "cannot park events", &format!("{} events: {error:#}", parked.len())).await;
    }
}

/// A batch being written, and what it counts once committed.
struct InFlight {
    batch: Arc<WriteBatch>,
    task: tokio::task::JoinHandle<Result<Written, StoreError>>,
    totals: RunTotals,
    last_recorded_at: Vec<(String, i32, Timestamp)>,
    started: Instant,
}

/// What writing a batch took.
#[derive(Debug, Clone, Copy)]
struct Written {
    mark: Option<CommitMark>,
    /// Writes that another projector's changes made the batch repeat.
    write_conflicts: u64,
}

/// What the write task needs to project a batch again after a write conflict.
struct Reprojection {
    store: Arc<dyn Store>,
    version: ModelVersion,
    source_id: String,
    events: Vec<SourcedEvent>,
}

impl InFlight {
    fn start(
        reprojection: Reprojection,
        outcome: BatchOutcome,
        last_recorded_at: Vec<(String, i32, Timestamp)>,
        started: Instant,
    ) -> InFlight {
        let batch = Arc::new(outcome.write);
        let totals = RunTotals {
            events: reprojection.events.len() as u64,
            applied: outcome.applied,
            skipped_as_duplicates: outcome.skipped_as_duplicates,
            parked: outcome.parked.len() as u64,
            batches: 1,
            write_conflicts: 0,
        };
        let task = tokio::spawn(write_until_fresh(reprojection, Arc::clone(&batch)));
        InFlight { batch, task, totals, last_recorded_at, started }
    }
}

/// Writes a batch; retries while the store is unavailable; and while other
/// projectors sharing the store have changed what it was rendered from,
/// projects it again (the store refused it) or renders the stale documents
/// again (the store wrote it and reported them). See [`read_model::read_set`].
async fn write_until_fresh(reprojection: Reprojection, first: Arc<WriteBatch>) -> Result<Written, StoreError> {
    let Reprojection { store, version, source_id, events } = reprojection;
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    let mut batch = first;
    let mut write_conflicts = 0;
    loop {
        let next = match store.apply_batch(version, Arc::clone(&batch)).await {
            Ok(written) if written.stale.is_empty() => return Ok(Written { mark: written.mark, write_conflicts }),
            Ok(written) => {
                tracing::info!(
                    documents = written.stale.len(),
                    "another projector changed their inputs; rendering again"
                );
                rerender(store.as_ref(), version, &written.stale).await
            }
            Err(StoreError::WriteConflict(what)) => {
                tracing::info!(%what, "another projector changed the batch's inputs; projecting it again");
                project_batch(store.as_ref(), version, &source_id, &events, None).await.map(|outcome| outcome.write)
            }
            Err(error) => Err(error),
        };
        match next {
            Ok(next) => {
                write_conflicts += 1;
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
    let batch_totals = RunTotals { write_conflicts: written.write_conflicts, ..in_flight.totals };
    observer.batch_committed(&CommittedBatch {
        checkpoints: &in_flight.batch.checkpoints,
        last_recorded_at: &in_flight.last_recorded_at,
        totals: batch_totals,
        latency: in_flight.started.elapsed(),
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
        .map(|checkpoint| (checkpoint.stream, checkpoint.next_offset))
        .collect();
    // One batch of decoded events waits while the current one is projected.
    let (sender, receiver) = mpsc::channel(options.batch_size.max(1));
    let stop = Arc::new(AtomicBool::new(false));
    let source_id = source.source_id().to_owned();
    let reader_stop = Arc::clone(&stop);
    let poll_interval = options.poll_interval;
    let reader = std::thread::Builder::new()
        .name("file-source".into())
        .spawn(move || read_files(&source, checkpoints, &sender, &reader_stop, poll_interval))
        .context("failed to start the file reader")?;
    Ok(SourceFeed { source_id, receiver, stop, reader })
}

fn read_files(
    source: &FileSource,
    mut next_offsets: HashMap<String, i64>,
    sender: &mpsc::Sender<SourceMessage>,
    stop: &AtomicBool,
    poll_interval: Duration,
) {
    let send = |message| !stop.load(Ordering::Relaxed) && sender.blocking_send(message).is_ok();
    loop {
        let files = match source.files() {
            Ok(files) => files,
            Err(error) => {
                let _ = sender.blocking_send(SourceMessage::Failed(error.to_string()));
                return;
            }
        };
        for name in files {
            let start = next_offsets.get(&name).copied().unwrap_or(0);
            let mut open = true;
            let next = source.read_file(&name, start, &mut |event| {
                open = send(SourceMessage::Event(event));
                open
            });
            if !open {
                return;
            }
            next_offsets.insert(name, next);
        }
        if !send(SourceMessage::CaughtUp) {
            return;
        }
        std::thread::sleep(poll_interval);
    }
}
