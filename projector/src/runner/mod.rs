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
//! commit in order. A batch of many works renders them on two threads
//! (`projection::batch`).
//!
//! While batches fill up, rendering is deferred and done once per document
//! when the loop stops deferring ([`crate::render_deferral`]); the write that
//! renders the last of them carries the checkpoints the deferred batches held.
//!
//! Where it starts: the store's checkpoints. A restart after a crash at any
//! point reads again exactly the events whose effects did not commit. When
//! the store has none for the source and the run asks for it, the loop
//! first takes in everything the source holds and writes it sorted by
//! aggregate (`catch_up_sort`), then goes on batch by batch.
//!
//! Idle for 30 seconds, and at the end of a run, the loop lets the store
//! finish what it keeps off the batch path (`ProjectionWrites::settle`:
//! ScyllaDB's bulk bucket counts).
//!
//! Stopping: a shutdown request is seen at every wait of the loop, not only
//! between batches (`stop_request`). The reader stops, what it sent is
//! written while the store takes it, and a wait for an unavailable store or
//! sink gives up at once instead of retrying, so the loop ends within one
//! store call; what was not written is read again after a restart.
//!
//! It must not decode events or know a source's transport: sources hand it
//! [`crate::source::SourceMessage`]s (and learn their starting checkpoints
//! from its answer to their first barrier), and sinks park what it rejects.

mod batch_loop;
mod catch_up_sort;
mod deferred_rendering;
mod observer;
mod retry;
mod spill_directory;
mod stop_request;
mod writing;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use read_model::{ModelVersion, Store};
use tokio::sync::watch;

use self::batch_loop::BatchLoop;
pub use self::catch_up_sort::RUN_EVENTS;
pub use self::observer::{BatchObserver, CommittedBatch, NoObserver, Observers};
use self::stop_request::StopRequest;
use self::writing::Writing;
use crate::dead_letter::DeadLetterSink;
use crate::render_deferral::RenderDeferral;
use crate::source::SourceFeed;

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Events per batch (one store transaction).
    pub batch_size: usize,
    /// The longest a started batch waits for more events before it is written.
    pub linger: Duration,
    /// Stop once the source has caught up, instead of following it.
    pub exit_when_caught_up: bool,
    /// How far rendering may be deferred while batches fill up.
    pub render_deferral: RenderDeferral,
    /// How long the change feed keeps superseded changes and withdrawals.
    pub change_feed_retention: Duration,
    /// On a store that holds nothing of the source, take in everything the
    /// source holds and write it sorted by aggregate (`catch_up_sort`).
    pub sorted_catch_up: bool,
    /// Events a sorted catch-up holds in memory before it spills them.
    pub catch_up_run_events: usize,
    /// Where sorted catch-ups keep their spill files, each in a directory
    /// of its own; a run removes those that killed runs left
    /// (`spill_directory`).
    pub spill_directory: PathBuf,
}

impl Default for RunOptions {
    /// The projector's defaults: batches of 30,000 events, 100 ms of
    /// linger, following the source, each batch written as it fills (the
    /// command line turns the sorted catch-up on), spilling under the
    /// system's temporary directory.
    fn default() -> RunOptions {
        RunOptions {
            batch_size: 30_000,
            linger: Duration::from_millis(100),
            exit_when_caught_up: false,
            render_deferral: RenderDeferral::DEFAULT,
            change_feed_retention: read_model::change_feed::DEFAULT_RETENTION,
            sorted_catch_up: false,
            catch_up_run_events: RUN_EVENTS,
            spill_directory: std::env::temp_dir().join("lcc-projector-spill"),
        }
    }
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

/// Projects what `feed` sends into `version` until the feed ends, it caught
/// up (when asked), or `shutdown` resolves. On shutdown the reader is asked
/// to stop, and everything it sent before stopping is written.
pub async fn run(
    store: Arc<dyn Store>,
    version: ModelVersion,
    feed: SourceFeed,
    dead_letters: Box<dyn DeadLetterSink>,
    observer: Arc<dyn BatchObserver>,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<RunTotals> {
    let started = Instant::now();
    // Before any catch-up of this run spills: what runs killed during theirs left.
    match spill_directory::sweep(&options.spill_directory) {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "removed the spill files of catch-ups that were killed"),
        Err(error) => {
            tracing::warn!(%error, directory = %options.spill_directory.display(), "failed to remove the spill files of killed catch-ups")
        }
    }
    let SourceFeed { source_id, receiver, stop, reader, .. } = feed;
    tokio::pin!(shutdown);
    let (tell_waits, give_up) = watch::channel(false);
    let stop_request = StopRequest { shutdown, requested: false, reader: stop, waits: tell_waits };
    let writing = Writing {
        store: &store,
        version,
        source_id: &source_id,
        observer: observer.as_ref(),
        change_feed_retention: options.change_feed_retention,
        give_up: &give_up,
    };
    let mut batches = BatchLoop::new(writing, &options, receiver, dead_letters, stop_request);
    loop {
        let cut = batches.next_cut().await?;
        let end = cut.end;
        batches.write_cut(cut).await?;
        if end {
            break;
        }
    }
    batches.finish().await?;
    let (totals, first_event_at) = (batches.committed.totals, batches.first_event_at);
    drop(batches);
    let _ = reader.join();
    report_totals(totals, started, first_event_at);
    Ok(totals)
}

/// Logs what a run did and how fast.
fn report_totals(totals: RunTotals, started: Instant, first_event_at: Option<Instant>) {
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
}
