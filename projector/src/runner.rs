//! The projection loop: read events, cut them into batches, project each
//! batch, park what cannot be used, and write the batch atomically.
//!
//! Three things overlap: the file source decodes on a thread of its own and
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
use std::time::{Duration, Instant};

use anyhow::Context;
use read_model::{ModelVersion, Store, StoreError, WriteBatch};
use tokio::sync::mpsc;

use crate::dead_letter::DeadLetterFile;
use crate::projection::batch::{BatchOutcome, project_batch};
use crate::source::SourcedEvent;
use crate::source::file::FileSource;

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Events per batch (one store transaction).
    pub batch_size: usize,
    /// Stop once every file has been read, instead of watching for new ones.
    pub exit_when_caught_up: bool,
    /// How often to look for new files when following.
    pub poll_interval: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTotals {
    pub events: u64,
    pub applied: u64,
    pub skipped_as_duplicates: u64,
    pub parked: u64,
    pub batches: u64,
}

// Events cross the channel by value: boxing each would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Message {
    Event(SourcedEvent),
    /// Every file present has been read.
    CaughtUp,
    Failed(String),
}

/// Projects a file source into `version` until caught up (when asked) or until `shutdown` resolves.
pub async fn run_file_source(
    store: Arc<dyn Store>,
    version: ModelVersion,
    source: FileSource,
    mut dead_letters: DeadLetterFile,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<RunTotals> {
    let checkpoints: HashMap<String, i64> = store
        .checkpoints(version, source.source_id())
        .await
        .context("failed to read checkpoints")?
        .into_iter()
        .map(|checkpoint| (checkpoint.stream, checkpoint.next_offset))
        .collect();
    let source_id = source.source_id().to_owned();
    // One batch of decoded events waits while the current one is projected.
    let (sender, mut receiver) = mpsc::channel(options.batch_size.max(1));
    let reader_options = options.clone();
    let reader = std::thread::Builder::new()
        .name("file-source".into())
        .spawn(move || read_files(&source, checkpoints, &sender, &reader_options))
        .context("failed to start the file reader")?;

    tokio::pin!(shutdown);
    let mut totals = RunTotals::default();
    let started = Instant::now();
    let mut batch = Vec::with_capacity(options.batch_size);
    let mut in_flight: Option<InFlight> = None;
    loop {
        let message = tokio::select! {
            biased;
            () = &mut shutdown => {
                tracing::info!("shutdown requested: writing the current batch");
                None
            }
            message = receiver.recv() => message,
        };
        let (flush, stop) = match message {
            Some(Message::Event(event)) => {
                batch.push(event);
                (batch.len() >= options.batch_size, false)
            }
            Some(Message::CaughtUp) => (true, options.exit_when_caught_up),
            Some(Message::Failed(error)) => anyhow::bail!("the file source failed: {error}"),
            // Shutdown was requested, or the reader ended.
            None => (true, true),
        };
        if flush && !batch.is_empty() {
            let pending = in_flight.as_ref().map(|write| Arc::clone(&write.batch));
            let outcome = project_with_retry(store.as_ref(), version, &source_id, &batch, pending.as_deref()).await?;
            dead_letters.park(&source_id, &outcome.parked).context("failed to write dead letters")?;
            finish(in_flight.take(), &mut totals).await?;
            in_flight = Some(InFlight::start(Arc::clone(&store), version, outcome, batch.len() as u64));
            batch.clear();
        }
        if stop {
            break;
        }
    }
    finish(in_flight.take(), &mut totals).await?;
    drop(receiver);
    let _ = reader.join();
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        events = totals.events,
        applied = totals.applied,
        skipped_as_duplicates = totals.skipped_as_duplicates,
        parked = totals.parked,
        batches = totals.batches,
        seconds,
        events_per_second = (totals.events as f64 / seconds.max(1e-9)).round(),
        "projection finished"
    );
    Ok(totals)
}

/// Projects a batch; retries while the store is unavailable.
async fn project_with_retry(
    store: &dyn Store,
    version: ModelVersion,
    source_id: &str,
    events: &[SourcedEvent],
    pending: Option<&WriteBatch>,
) -> anyhow::Result<BatchOutcome> {
    let mut backoff = Backoff::new();
    loop {
        match project_batch(store, version, source_id, events, pending).await {
            Ok(outcome) => return Ok(outcome),
            Err(StoreError::Unavailable(reason)) => backoff.wait(&reason).await,
            Err(error) => return Err(error).context("failed to project a batch"),
        }
    }
}

/// A batch being written, and what it counts once committed.
struct InFlight {
    batch: Arc<WriteBatch>,
    task: tokio::task::JoinHandle<Result<(), StoreError>>,
    totals: RunTotals,
}

impl InFlight {
    fn start(store: Arc<dyn Store>, version: ModelVersion, outcome: BatchOutcome, events: u64) -> InFlight {
        let batch = Arc::new(outcome.write);
        let totals = RunTotals {
            events,
            applied: outcome.applied,
            skipped_as_duplicates: outcome.skipped_as_duplicates,
            parked: outcome.parked.len() as u64,
            batches: 1,
        };
        let to_write = Arc::clone(&batch);
        let task = tokio::spawn(async move {
            let mut backoff = Backoff::new();
            loop {
                match store.apply_batch(version, Arc::clone(&to_write)).await {
                    Err(StoreError::Unavailable(reason)) => backoff.wait(&reason).await,
                    result => return result,
                }
            }
        });
        InFlight { batch, task, totals }
    }
}

/// Waits for the batch in flight to commit and counts it.
async fn finish(in_flight: Option<InFlight>, totals: &mut RunTotals) -> anyhow::Result<()> {
    let Some(in_flight) = in_flight else { return Ok(()) };
    in_flight.task.await.context("the batch write task failed")?.context("failed to write a batch")?;
    totals.events += in_flight.totals.events;
    totals.applied += in_flight.totals.applied;
    totals.skipped_as_duplicates += in_flight.totals.skipped_as_duplicates;
    totals.parked += in_flight.totals.parked;
    totals.batches += 1;
    Ok(())
}

/// Exponential backoff while the store is unavailable: consumption pauses, nothing is lost.
struct Backoff {
    delay: Duration,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff { delay: Duration::from_millis(200) }
    }

    async fn wait(&mut self, reason: &str) {
        tracing::warn!(%reason, retry_in_ms = self.delay.as_millis() as u64, "store unavailable; retrying");
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(30));
    }
}

/// The reader thread: every file from its checkpoint on, then (when following) new files as they appear.
fn read_files(
    source: &FileSource,
    mut next_offsets: HashMap<String, i64>,
    sender: &mpsc::Sender<Message>,
    options: &RunOptions,
) {
    loop {
        let files = match source.files() {
            Ok(files) => files,
            Err(error) => {
                let _ = sender.blocking_send(Message::Failed(error.to_string()));
                return;
            }
        };
        for name in files {
            let start = next_offsets.get(&name).copied().unwrap_or(0);
            let mut open = true;
            let next = source.read_file(&name, start, &mut |event| {
                open = sender.blocking_send(Message::Event(event)).is_ok();
                open
            });
            if !open {
                return;
            }
            next_offsets.insert(name, next);
        }
        if sender.blocking_send(Message::CaughtUp).is_err() || options.exit_when_caught_up {
            return;
        }
        std::thread::sleep(options.poll_interval);
    }
}
